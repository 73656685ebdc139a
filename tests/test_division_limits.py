"""``INT_MIN / -1`` and ``INT_MIN % -1`` (int32, int64) on every path: no process dies, every path wraps (issue 33).

Each path runs in a child process (tests/division_limits_child.py), so that a SIGFPE fails the test instead of
killing pytest. Expected values come from Python's integers here: C's truncating division (or the floor with
``pythondiv``) and remainders, wrapped into the type.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast
from tests.division_limits_child import operands

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # a child process per test: 235 s for the 78 (docs/testing.md)
DTYPES = ["int32", "int64"]
FORMS = [("Div", "-"), ("Div", "pythondiv=1"), ("Mod", "-"), ("Mod", "fmod=1")]
PATHS = ["numpy", "native", "ort_disabled", "ort_all", "cli_native"]
TOOLS = ["ort_basic", "ort_extended", "onnxscript", "onnxsim", "onnxoptimizer", "openvino_reader"]
TOOL_MODULES = {"onnxscript": "onnxscript", "onnxsim": "onnxsim", "onnxoptimizer": "onnxoptimizer",
                "openvino_reader": "openvino"}


def _wrap(value: int, dtype: str) -> int:
    bits = np.iinfo(dtype).bits
    return (value + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)


def _expected_one(op: str, attr: str, x: int, y: int) -> int:
    """C's ``x / y`` (toward zero) or Python's ``x // y`` (``pythondiv``); ``Mod``: the remainder taking the
    divisor's sign (fmod=0) or the dividend's (fmod=1)."""
    if op == "Div":
        if attr == "pythondiv=1":
            return x // y
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q
    if attr == "fmod=1":
        r = abs(x) % abs(y)
        return -r if x < 0 else r
    return x % y


def expected(op: str, attr: str, dtype: str, rule: str) -> np.ndarray:
    a, b = operands(dtype, rule)
    b = np.broadcast_to(b, a.shape)
    return np.array([[_wrap(_expected_one(op, attr, int(x), int(y)), dtype) for x, y in zip(ra, rb, strict=True)]
                     for ra, rb in zip(a.tolist(), b.tolist(), strict=True)], dtype)


def _child(path: str, op: str, dtype: str, rule: str, attr: str) -> np.ndarray:
    done = subprocess.run([sys.executable, "-m", "tests.division_limits_child", path, op, dtype, rule, attr],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{path}: the child ended with status {done.returncode}: {done.stderr[-2000:]}"
    return np.array(json.loads(done.stdout.strip().splitlines()[-1])[0], dtype)


def test_expected_values_are_the_wrapped_ones() -> None:
    """The oracle itself: the minimum over -1 wraps to the minimum, its remainder is 0, other cells as in C."""
    div = expected("Div", "-", "int32", "numpy")
    assert div[0, 0] == div[1, 3] == -2 ** 31 and div[0, 2] == -3 and div[1, 2] == -1073741823
    assert expected("Div", "pythondiv=1", "int32", "numpy")[0, 2] == -4
    assert (expected("Mod", "-", "int64", "numpy")[:, [0, 3]] == 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("op", "attr"), FORMS)
@pytest.mark.parametrize("path", PATHS)
def test_minimum_over_minus_one_wraps_on_every_path(path: str, op: str, attr: str, dtype: str) -> None:
    for rule in ("numpy", "pdpd") if path in ("numpy", "native") else ("numpy",):
        np.testing.assert_array_equal(_child(path, op, dtype, rule, attr), expected(op, attr, dtype, rule),
                                      err_msg=f"{path} {rule}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tool", TOOLS)
def test_converted_division_survives_the_tools(tool: str, dtype: str) -> None:
    """The converted model after each optimizer and runtime: the same wrapped quotient, no signal. (OpenVINO's CPU
    plugin computes int64 as int32: its int64 values are not compared.)"""
    module = TOOL_MODULES.get(tool)
    if module is not None:
        pytest.importorskip(module, reason=f"{module} is not installed (pip install -e '.[tools]')")
    got, want = _child(tool, "Div", dtype, "numpy", "-"), expected("Div", "-", dtype, "numpy")
    cells = _openvino_exact(dtype, "numpy") if tool == "openvino_reader" else np.ones(want.shape, bool)
    np.testing.assert_array_equal(got[cells], want[cells])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("op", "attr"), FORMS)
@pytest.mark.parametrize("rule", ["numpy", "pdpd", "none"])
def test_openvino_extensions_do_not_trap(rule: str, op: str, attr: str, dtype: str) -> None:
    """OpenVINO's extensions run every form; the values are compared where its CPU plugin is exact."""
    got, want = _child("openvino", op, dtype, rule, attr), expected(op, attr, dtype, rule)
    cells = _openvino_exact(dtype, rule)
    assert cells.sum() >= 3
    np.testing.assert_array_equal(got[cells], want[cells])


def _openvino_exact(dtype: str, rule: str) -> np.ndarray:
    """The cells OpenVINO's CPU plugin computes exactly: it divides int32 in float32 under numpy and none
    broadcasting (exact for dividends below 2**24 and for the minimum over -1, which the conversion back wraps), and
    int64 as int32 (only int64 values inside int32's range, the minimum over -1 excepted)."""
    a, b = operands(dtype, rule)
    b = np.broadcast_to(b, a.shape)
    exact = (np.abs(a.astype(float)) < 2 ** 24) | (b == -1)
    return exact & (a > -2 ** 31) & (a < 2 ** 31) if dtype == "int64" else exact


def _constant_divisions(divisors: list[list[int]], dividend: list[int] | None = None) -> onnx.ModelProto:
    """``Div(a, c_k)`` of int32 for each constant divisor ``c_k`` (alike nodes: the rewrite of the first is
    replayed for the others), or of a constant dividend by a run-time ``b``."""
    a = helper.make_tensor_value_info("a", TensorProto.INT32, ["n", 2])
    inits = [numpy_helper.from_array(np.array(c, np.int32), f"c{k}") for k, c in enumerate(divisors)]
    nodes = [helper.make_node("Div", ["a", f"c{k}"], [f"y{k}"], domain="onnx_bcast", name=f"div{k}")
             for k in range(len(divisors))]
    inputs = [a]
    if dividend is not None:
        inits.append(numpy_helper.from_array(np.array(dividend, np.int32), "d"))
        nodes.append(helper.make_node("Div", ["d", "a"], ["yd"], domain="onnx_bcast", name="divd"))
    # each read by an Identity: a node whose output no other node reads is not replayed
    nodes += [helper.make_node("Identity", [n.output[0]], [f"out_{n.output[0]}"]) for n in nodes]
    outputs = [helper.make_tensor_value_info(n.output[0], TensorProto.INT32, None)
               for n in nodes if n.op_type == "Identity"]
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]
    return helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, inits), opset_imports=opsets, ir_version=10)


def test_a_constant_divisor_without_minus_one_is_the_plain_div() -> None:
    """Proven by the constants: a divisor without -1, or a dividend without the minimum, is one ``Div``; a
    constant divisor holding -1 keeps the wrapped form, also where its node is alike an earlier proven one (the
    replay key holds the proof)."""
    for guards in (True, False):
        converted = onnx_bcast.convert(_constant_divisions([[2, 3], [-1, 3], [5, -4]], dividend=[7, -2]),
                                       guards=guards)
        ops = Counter(node.op_type for node in converted.graph.node)
        assert ops["Div"] == 4 and ops["Where"] == 2 and ops["Neg"] == 1 and ops["Identity"] == 4, (guards, ops)
        wrapped = [n for n in converted.graph.node if n.op_type == "Neg"]
        assert [n.name.split("/")[0] for n in wrapped] == ["div1"], [n.name for n in wrapped]
