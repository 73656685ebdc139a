"""OpenVINO's forms of ONNX ``BitShift``, ``Divide(x, Power(2, s), m_pythondiv=true)`` (right) and
``Multiply(x, Power(2, s))`` (left), through the IR route.

The expected values are Python's shifts of unbounded integers, wrapped to the type, with ONNX's rule for a shift
out of range (below 0, or at least the bit width): 0 for a left shift, the sign fill (-1 for a negative ``x``, else
0) for a right one. In the IR such a shift multiplies or divides by a power that is 0 or has overflowed; before the
IR route computed shifts itself, ONNX Runtime stopped on an integer division by zero there, a right shift of 31 on
int32 or 7 on int8 gave a wrong quotient, and an int8 left shift of 7 or more gave OpenVINO's saturated power times x.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino", reason="the IR is built with OpenVINO's Python API (onnx-bcast[openvino])")
pytest.importorskip("onnxifier", reason="the IR route needs onnxifier (onnx-bcast[onnxifier], Python >= 3.11)")
ort = pytest.importorskip("onnxruntime", reason="the written models run in ONNX Runtime")

import openvino.opset13 as ops  # noqa: E402
from openvino.utils.node_factory import NodeFactory  # noqa: E402

import onnx_bcast  # noqa: E402
from onnx_bcast.onnxifier import ir_to_onnx  # noqa: E402

TYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32)


def onnx_shift(x: np.ndarray, s: np.ndarray, left: bool) -> np.ndarray:
    """ONNX's BitShift on Python integers, wrapped to x's type; out of range, 0 (left) or the sign fill (right)."""
    info = np.iinfo(x.dtype)
    x, s = np.broadcast_arrays(x, s)

    def one(value: int, shift: int) -> int:
        if not 0 <= shift < info.bits:
            return 0 if left or value >= 0 else -1
        shifted = value << shift if left else value >> shift
        wrapped = shifted % 2 ** info.bits
        return wrapped - 2 ** info.bits if wrapped > info.max else wrapped
    return np.array([one(int(v), int(k)) for v, k in zip(x.reshape(-1), s.reshape(-1), strict=True)],
                    x.dtype).reshape(x.shape)


def _operands(dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Every value of interest against every shift from below 0 to past the width."""
    info = np.iinfo(dtype)
    wanted = {info.min, info.min + 1, -9, -8, -1, 0, 1, 7, 8, info.max - 1, info.max}
    values = np.array(sorted(v for v in wanted if info.min <= v <= info.max), dtype)
    low = max(info.min, -3)
    shifts = np.array(list(range(low, info.bits + 4)) + ([info.min, -100] if info.min < 0 else [info.max]), dtype)
    return np.repeat(values, shifts.size), np.tile(shifts, values.size)


def _ir(folder: Path, dtype: type, x_shape: list[int], s_shape: list[int], left: bool) -> Path:
    x = ops.parameter(x_shape, dtype, name="x")
    s = ops.parameter(s_shape, dtype, name="s")
    power = ops.power(ops.constant(np.array([2], dtype)), s)
    shift = ops.multiply(x, power) if left else \
        NodeFactory("opset1").create("Divide", [x.output(0), power.output(0)], {"m_pythondiv": True})
    shift.output(0).set_names({"z"})
    path = folder / "shift.xml"
    ov.save_model(ov.Model([shift.output(0)], [x, s], "shift"), str(path), compress_to_fp16=False)
    return path


def _run_every_path(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The written model in plain ONNX Runtime, and the model with our ops in both backends."""
    written = ir_to_onnx(path)
    got = [ort.InferenceSession(written.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]]
    kept = ir_to_onnx(path, keep_ops=True)
    got += [onnx_bcast.InferenceSession(kept, backend=backend).run(None, feeds)[0] for backend in ("numpy", "native")]
    return got


@pytest.mark.parametrize("left", (False, True), ids=("right", "left"))
@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: np.dtype(t).name)
def test_shift_is_onnx_bitshift(dtype: type, left: bool, tmp_path: Path) -> None:
    x, s = _operands(dtype)
    want = onnx_shift(x, s, left)
    for got in _run_every_path(_ir(tmp_path, dtype, [x.size], [s.size], left), {"x": x, "s": s}):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("left", (False, True), ids=("right", "left"))
@pytest.mark.parametrize("dtype", (np.int8, np.int64), ids=lambda t: np.dtype(t).name)
def test_scalar_shift_takes_the_powers_shape(dtype: type, left: bool, tmp_path: Path) -> None:
    """``Power([2], s)`` with a scalar ``s`` is ``[1]``-shaped, so a scalar ``x`` shifted by it gives ``[1]``."""
    path = _ir(tmp_path, dtype, [], [], left)
    for value in (-8, 5):
        for shift in (-1, 2, np.iinfo(dtype).bits - 1, np.iinfo(dtype).bits):
            x, s = np.array(value, dtype), np.array(shift, dtype)
            want = onnx_shift(x.reshape(1), s.reshape(1), left)
            for got in _run_every_path(path, {"x": x, "s": s}):
                assert got.shape == want.shape == (1,)
                np.testing.assert_array_equal(got, want)
