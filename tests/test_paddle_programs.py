"""PaddlePaddle programs through OpenVINO's Paddle frontend, IR and ``ir_to_onnx`` (default options) in plain ONNX
Runtime equal Paddle's own run of the saved program (issue 31, item 4): a representative slice of
``bench/paddle_programs.py`` (integer and float divide/floor_divide/remainder with and without the legacy ``axis``,
elementwise ops with ``axis``, pow beyond float32's integers, comparisons, expand/broadcast_to/expand_as).

The expected values are Paddle's executor on the program it saved; today's failures are strict xfails saying why.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.bench_modules import load_bench_script

NEEDED = {"paddle": "paddlepaddle", "openvino": "openvino",
          "onnxifier": "onnxifier (the 'tools' extra, Python >= 3.11)", "onnxruntime": "onnxruntime"}
MISSING = [package for module, package in NEEDED.items() if importlib.util.find_spec(module) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)} (Paddle programs are "
                                "saved by Paddle, read by OpenVINO's Paddle frontend, converted through onnxifier)")

#: program -> why the IR route does not give Paddle's answer today
KNOWN_FAILURES = {
    "floor_divide_float32_axis0_trailing1": "the IR itself differs from Paddle: OpenVINO's Paddle frontend writes "
                                            "float elementwise_floordiv as Divide(pdpd, m_pythondiv=true) with no "
                                            "Floor, an exact division (OpenVINO's CPU plugin computes the same); "
                                            "from-ir follows the IR",
}

SLICE = [
    "divide_int32_same", "divide_int64_bcast", "divide_int32_axis1", "divide_int64_axis0_trailing1",
    "divide_int32_stretch_x", "divide_int32_large", "divide_float32_bcast",
    "floor_divide_int32_bcast", "floor_divide_int64_axis1", "remainder_int32_stretch_x",
    "floor_divide_float32_axis0_trailing1",
    "remainder_int32_bcast", "remainder_int64_axis1", "remainder_float32_same",
    "add_int64_axis1", "subtract_float32_axis0", "multiply_int32_bcast", "maximum_int32_axis1",
    "minimum_float32_stretch_x", "pow_int32_exact_large", "pow_int64_exact_large", "pow_int64_negative_base",
    "less_than_int32_bcast", "greater_equal_int64_stretch_x", "not_equal_float32_trailing1",
    "expand_float32_minus1", "expand_int64_shape_tensor", "broadcast_to_bool", "expand_as_float32",
    "expand_as_int32_same_rank",
]


@pytest.fixture(scope="module")
def bench():
    return load_bench_script("paddle_programs.py")


@pytest.fixture(scope="module")
def programs(bench) -> dict:
    return {program.name: program for program in bench.all_programs()}


def test_slice_names_exist(programs) -> None:
    assert set(SLICE) <= set(programs), sorted(set(SLICE) - set(programs))
    assert set(KNOWN_FAILURES) <= set(SLICE)


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[name]))
                                  if name in KNOWN_FAILURES else name for name in SLICE])
def test_ir_route_equals_paddle(bench, programs, name: str, tmp_path: Path) -> None:
    outcome = bench.evaluate(programs[name], tmp_path, others=False)
    assert outcome.ir_route == "equal", f"{name}: {outcome.ir_route}; IR: {'; '.join(outcome.openvino_ops)}"


def test_frontend_writes_truncating_division_as_pythondiv(bench, programs, tmp_path: Path) -> None:
    """What the IR route's default reading rests on: OpenVINO's Paddle frontend writes Paddle's truncating integer
    ``elementwise_div`` as ``Divide m_pythondiv=true`` under numpy broadcasting, and ``elementwise_floordiv`` as
    ``Divide m_pythondiv=true`` under pdpd (so --pythondiv cpu truncates the first and floors the second)."""
    div = bench.evaluate(programs["divide_int32_bcast"], tmp_path, others=False).openvino_ops
    floordiv = bench.evaluate(programs["floor_divide_int32_bcast"], tmp_path, others=False).openvino_ops
    assert div == ["Divide(auto_broadcast=numpy, m_pythondiv=True)"], div
    assert floordiv == ["Divide(auto_broadcast=pdpd, axis=-1, m_pythondiv=True)"], floordiv
