"""The IR ops whose translation onnx-bcast owns (onnx_bcast/onnxifier/owned), whole from IR to ONNX Runtime, against
OpenVINO's CPU plugin running the same IR; the written model's interface is the IR's; what cannot be expressed is
refused by name, with nothing invalid returned."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino", reason="the IR route's oracle is OpenVINO's CPU plugin (onnx-bcast[openvino])")
pytest.importorskip("onnxifier", reason="the IR route needs onnxifier (onnx-bcast[onnxifier], Python >= 3.11)")
ort = pytest.importorskip("onnxruntime", reason="the written models run in ONNX Runtime")

import openvino.opset2 as opset2  # noqa: E402
import openvino.opset13 as ops  # noqa: E402
from openvino.utils.node_factory import NodeFactory  # noqa: E402

import onnx_bcast  # noqa: E402
from onnx_bcast.onnxifier import IRNotConvertible, ir_to_onnx  # noqa: E402
from tests.ir_oracle import assert_close, openvino_cpu  # noqa: E402

RNG = np.random.default_rng(31)
B, T, IN, H = 2, 5, 3, 4


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _p(name: str, shape: list[int], dtype: type = np.float32) -> ov.Node:
    return ops.parameter(shape, dtype, name=name)


def _c(value: np.ndarray) -> ov.Output:
    return ops.constant(value).output(0)


Case = Callable[[], tuple[list, list, dict[str, np.ndarray]]]


def _lstm(direction: str, dirs: int) -> Case:
    def build() -> tuple[list, list, dict[str, np.ndarray]]:
        x, h, c = _p("x", [B, T, IN]), _p("h", [B, dirs, H]), _p("c", [B, dirs, H])
        node = ops.lstm_sequence(x, h, c, _c(np.array([5, 3], np.int32)), _c(_f(dirs, 4 * H, IN)),
                                 _c(_f(dirs, 4 * H, H)), _c(_f(dirs, 4 * H)), H, direction)
        return list(node.outputs()), [x, h, c], {"x": _f(B, T, IN), "h": _f(B, dirs, H), "c": _f(B, dirs, H)}
    return build


def _gru(direction: str, dirs: int, lbr: bool) -> Case:
    def build() -> tuple[list, list, dict[str, np.ndarray]]:
        x, h = _p("x", [B, T, IN]), _p("h", [B, dirs, H])
        node = ops.gru_sequence(x, h, _c(np.array([5, 4], np.int64)), _c(_f(dirs, 3 * H, IN)), _c(_f(dirs, 3 * H, H)),
                                _c(_f(dirs, (4 if lbr else 3) * H)), H, direction, linear_before_reset=lbr)
        return list(node.outputs()), [x, h], {"x": _f(B, T, IN), "h": _f(B, dirs, H)}
    return build


def _rnn(direction: str, dirs: int) -> Case:
    def build() -> tuple[list, list, dict[str, np.ndarray]]:
        x, h = _p("x", [B, T, IN]), _p("h", [B, dirs, H])
        node = ops.rnn_sequence(x, h, _c(np.array([5, 2], np.int32)), _c(_f(dirs, H, IN)), _c(_f(dirs, H, H)),
                                _c(_f(dirs, H)), H, direction)
        return list(node.outputs()), [x, h], {"x": _f(B, T, IN), "h": _f(B, dirs, H)}
    return build


def _cells() -> tuple[list, list, dict[str, np.ndarray]]:
    x, h, c = _p("x", [B, IN]), _p("h", [B, H]), _p("c", [B, H])
    lstm = ops.lstm_cell(x, h, c, _c(_f(4 * H, IN)), _c(_f(4 * H, H)), _c(_f(4 * H)), H)
    gru = ops.gru_cell(x, h, _c(_f(3 * H, IN)), _c(_f(3 * H, H)), _c(_f(4 * H)), H, linear_before_reset=True)
    rnn = ops.rnn_cell(x, h, _c(_f(H, IN)), _c(_f(H, H)), _c(_f(H)), H, ["tanh"], [], [])
    return [*lstm.outputs(), gru.output(0), rnn.output(0)], [x, h, c], {"x": _f(B, IN), "h": _f(B, H), "c": _f(B, H)}


def _mvn6(axes: list[int], variance: bool, mode: str) -> Case:
    def build() -> tuple[list, list, dict[str, np.ndarray]]:
        x = _p("x", [2, 3, 4, 5])
        return [ops.mvn(x, _c(np.array(axes, np.int64)), variance, 1e-2, mode).output(0)], [x], {"x": _f(2, 3, 4, 5)}
    return build


def _mvn1(across: bool) -> tuple[list, list, dict[str, np.ndarray]]:
    x = _p("x", [2, 3, 4, 5])
    return [opset2.mvn(x, across, True, 1e-2).output(0)], [x], {"x": _f(2, 3, 4, 5)}


def _gather(axis: np.ndarray, batch_dims: int) -> Case:
    def build() -> tuple[list, list, dict[str, np.ndarray]]:
        data, indices = _p("data", [2, 3, 4]), _p("indices", [2, 5], np.int32)
        node = NodeFactory("opset8").create("Gather", [data.output(0), indices.output(0), _c(axis)],
                                            {"batch_dims": batch_dims})
        return [node.output(0)], [data, indices], {"data": _f(2, 3, 4),
                                                   "indices": RNG.integers(-3, 3, (2, 5)).astype(np.int32)}
    return build


def _unary(make: Callable[[ov.Node], ov.Node], feed: np.ndarray) -> Case:
    def build() -> tuple[list, list, dict[str, np.ndarray]]:
        x = _p("x", list(feed.shape), feed.dtype.type)
        return [make(x).output(0)], [x], {"x": feed}
    return build


def _power(dtype: type) -> Case:
    """Results past the type's range (and past float32's 24 bits: 7**9, 7**11): 8/16-bit as OpenVINO's CPU plugin
    computes them; wider ones exactly (``EXACT``), as ONNX and Paddle mean them (the CPU plugin rounds to float32)."""
    def build() -> tuple[list, list, dict[str, np.ndarray]]:
        x, y = _p("x", [8], dtype), _p("y", [8], dtype)
        feeds = {"x": np.array([3, 3, 2, 1, 9, 5, 7, 7], dtype), "y": np.array([4, 5, 7, 7, 3, 4, 9, 11], dtype)}
        return [ops.power(x, y).output(0)], [x, y], feeds
    return build


def _reductions() -> tuple[list, list, dict[str, np.ndarray]]:
    """Axes fed at run time (onnxifier folds them or fails), a scalar int32 axis, the logical reductions."""
    x, axes, flags = _p("x", [2, 3, 4]), _p("axes", [1], np.int64), _p("flags", [2, 3], np.bool_)
    outputs = [ops.reduce_sum(x, axes, True), ops.reduce_mean(x, axes, False),
               ops.reduce_max(x, _c(np.array(1, np.int32)), False),
               ops.reduce_logical_and(flags, _c(np.array([1], np.int64)), False),
               ops.reduce_logical_or(flags, _c(np.array([0], np.int64)), True)]
    return [o.output(0) for o in outputs], [x, axes, flags], {"x": _f(2, 3, 4), "axes": np.array([2], np.int64),
                                                               "flags": RNG.random((2, 3)) > 0.3}


HALVES = np.array([[0.5, 1.5, -0.5, -2.5, 2.4, -3.6]], np.float32)
CASES: dict[str, Case] = {
    **{f"lstm_{d}": _lstm(d, n) for d, n in (("forward", 1), ("reverse", 1), ("bidirectional", 2))},
    **{f"gru_{d}_lbr{int(lbr)}": _gru(d, n, lbr) for d, n in (("forward", 1), ("bidirectional", 2))
       for lbr in (False, True)},
    **{f"rnn_{d}": _rnn(d, n) for d, n in (("reverse", 1), ("bidirectional", 2))},
    "cells": _cells,
    "mvn6_last_axis": _mvn6([-1], True, "inside_sqrt"),  # LayerNorm as OpenVINO writes it
    "mvn6_outside_sqrt": _mvn6([1, 2, 3], True, "outside_sqrt"),
    "mvn6_gapped_axes": _mvn6([0, 2], True, "inside_sqrt"),
    "mvn6_mean_only": _mvn6([-1], False, "inside_sqrt"),
    "mvn1_across": lambda: _mvn1(True), "mvn1_per_channel": lambda: _mvn1(False),
    "gather_axis_1_element": _gather(np.array([1], np.int64), 0),
    "gather_batch_dims": _gather(np.array(1, np.int64), 1),
    "logical_not": _unary(ops.logical_not, RNG.random((2, 3)) > 0.5),
    "gelu_tanh": _unary(lambda x: ops.gelu(x, "tanh"), _f(2, 6)),
    "gelu_erf": _unary(lambda x: ops.gelu(x, "erf"), _f(2, 6)),
    "round_half_away": _unary(lambda x: ops.round(x, "half_away_from_zero"), HALVES),
    "round_half_even": _unary(lambda x: ops.round(x, "half_to_even"), HALVES),
    "elu": _unary(lambda x: ops.elu(x, 0.3), _f(2, 6)),
    "softplus": _unary(ops.softplus, _f(2, 6)),
    **{f"power_{np.dtype(t).name}": _power(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64,
                                                        np.uint32)},
    "reductions": _reductions,
    "add_float16": _unary(lambda x: ops.add(x, _c(np.array([1.5], np.float16))), _f(2, 3).astype(np.float16)),
}


def _save(name: str, folder: Path) -> tuple[Path, ov.Model, dict[str, np.ndarray]]:
    outputs, params, feeds = CASES[name]()
    model = ov.Model(outputs, params, name)
    path = folder / f"{name}.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path, model, feeds


#: cases whose oracle is numpy's exact formula instead of the CPU plugin (which computes int32/int64 powers in float32)
EXACT = {f"power_{t}": lambda f: [f["x"] ** f["y"]] for t in ("int32", "int64", "uint32")}


@pytest.mark.parametrize("name", list(CASES))
def test_owned_translation_equalsopenvino_cpu(name: str, tmp_path: Path) -> None:
    path, model, feeds = _save(name, tmp_path)
    want = EXACT[name](feeds) if name in EXACT else openvino_cpu(model, feeds)
    written = ir_to_onnx(path)
    session = ort.InferenceSession(written.SerializeToString(), providers=["CPUExecutionProvider"])
    assert_close(session.run(None, feeds), want, atol=1e-5)
    kept = ir_to_onnx(path, keep_ops=True)
    for backend in ("numpy", "native"):
        assert_close(onnx_bcast.InferenceSession(kept, backend=backend).run(None, feeds), want, atol=1e-5)


def test_interface_is_the_irs(tmp_path: Path) -> None:
    """Names, element types and order of inputs and outputs are the IR's (onnxifier names outputs after the
    Result layers, and its default passes make float16 float32)."""
    a, b = _p("tokens", [2, 3], np.int32), _p("scale", [2, 3], np.float16)
    total = ops.add(ops.convert(a, np.float16), b)
    total.output(0).set_names({"logits"})
    doubled = ops.multiply(a, _c(np.array(2, np.int32)))
    doubled.output(0).set_names({"ids_twice"})
    model = ov.Model([doubled.output(0), total.output(0)], [a, b], "interface")
    path = tmp_path / "interface.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    written = ir_to_onnx(path)
    f16, i32 = 10, 6  # onnx.TensorProto.FLOAT16, INT32
    assert [(i.name, i.type.tensor_type.elem_type) for i in written.graph.input] == [("tokens", i32), ("scale", f16)]
    assert [(o.name, o.type.tensor_type.elem_type) for o in written.graph.output] == [("ids_twice", i32),
                                                                                       ("logits", f16)]
    feeds = {"tokens": RNG.integers(0, 9, (2, 3)).astype(np.int32), "scale": _f(2, 3).astype(np.float16)}
    session = ort.InferenceSession(written.SerializeToString(), providers=["CPUExecutionProvider"])
    assert_close(session.run(None, feeds), openvino_cpu(model, feeds), atol=1e-5)


def test_what_cannot_be_expressed_is_refused_by_name(tmp_path: Path) -> None:
    """An op with no translation (attributes onnxifier would drop) and an owned op in a form not expressed: one line
    each, with the op's type, version and name, and nothing returned."""
    x = _p("x", [2, 3, 4])
    reversed_ = ops.reverse_sequence(x, _c(np.array([3, 1], np.int32)), 0, 1)
    reversed_.set_friendly_name("reverse_me")
    gathered = NodeFactory("opset8").create("Gather", [x.output(0), _c(np.array([[0, 1], [1, 0]], np.int64)),
                                                       _c(np.array(2, np.int64))], {"batch_dims": 1})
    gathered.set_friendly_name("batched_gather")
    model = ov.Model([reversed_.output(0), gathered.output(0)], [x], "refused")
    path = tmp_path / "refused.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    with pytest.raises(IRNotConvertible) as caught:
        ir_to_onnx(path)
    lines = caught.value.lines
    assert any(line.startswith("ReverseSequence-") and "'reverse_me'" in line for line in lines), lines
    assert any(line.startswith("Gather-8 'batched_gather'") and "batch_dims" in line for line in lines), lines


def test_a_failing_onnxifier_pass_is_refused_by_name(tmp_path: Path) -> None:
    """onnxifier's Pad pass needs constant pads: fed at run time, the refusal names the Pad and why."""
    x, pads = _p("x", [2, 3]), _p("pads", [2], np.int64)
    padded = ops.pad(x, pads, pads, "constant")
    padded.set_friendly_name("pad_me")
    path = tmp_path / "pad.xml"
    ov.save_model(ov.Model([padded.output(0)], [x, pads], "pad"), str(path), compress_to_fp16=False)
    with pytest.raises(IRNotConvertible) as caught:
        ir_to_onnx(path)
    assert [line.split(":")[0] for line in caught.value.lines] == ["Pad-12 'pad_me'"], caught.value.lines
    assert "onnxifier's pad pass fails" in caught.value.lines[0]


def test_an_input_read_only_for_its_static_shape_stays_an_input(tmp_path: Path) -> None:
    """``expand_as``: ``Broadcast(y, ShapeOf(x))`` with x static folds to a constant target; x stays an input (unread),
    so callers feed the IR's inputs (Paddle's expand_as through OpenVINO's Paddle frontend)."""
    x, y = _p("x", [2, 3]), _p("y", [3])
    model = ov.Model([ops.broadcast(y, ops.shape_of(x)).output(0)], [x, y], "expand_as")
    path = tmp_path / "expand_as.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    written = ir_to_onnx(path)
    assert [i.name for i in written.graph.input] == ["x", "y"]
    feeds = {"x": _f(2, 3), "y": _f(3)}
    session = ort.InferenceSession(written.SerializeToString(), providers=["CPUExecutionProvider"])
    assert_close(session.run(None, feeds), openvino_cpu(model, feeds), atol=1e-5)


def test_one_tensor_as_two_outputs_converts_in_a_surviving_process(tmp_path: Path) -> None:
    """onnxifier's eliminate_identity left a graph output no node writes, and onnxoptimizer then killed the process
    (SIGSEGV): converted in a child process, which must exit 0 with both outputs written and named."""
    import subprocess
    import sys

    x = _p("x", [2, 3])
    relu = ops.relu(x)
    path = tmp_path / "two_outputs.xml"
    ov.save_model(ov.Model([relu.output(0), relu.output(0)], [x], "two"), str(path), compress_to_fp16=False)
    code = ("import sys; from onnx_bcast.onnxifier import ir_to_onnx; m = ir_to_onnx(sys.argv[1]); "
            "print(','.join(o.name for o in m.graph.output))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-1000:]
    names = done.stdout.strip().splitlines()[-1].split(",")
    assert len(names) == 2 and len(set(names)) == 2, names
