"""A check that facts prove is not emitted: a none-rule op after our broadcast to ``Shape(x)`` meets ``x``'s own dims
(in numpy and explicit mode the broadcast's output is its target, or the run fails), so its shape check goes; a
bidirectional ``Expand`` or a pdpd ``Broadcast`` may make more than its target, so there the check stays."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import onnx_bcast

F32 = TensorProto.FLOAT


def _model(op: str, mode: str | None) -> onnx.ModelProto:
    """y = Add<none>(x, op<mode>(b, Shape(x))), x [n, c], b of rank 2 with its own dims."""
    attrs = {"mode": mode} if mode is not None else {}
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node(op, ["b", "s"], ["bb"], domain="onnx_bcast", name="bc", **attrs),
             helper.make_node("Add", ["x", "bb"], ["y"], domain="onnx_bcast", name="add", auto_broadcast="none")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F32, ["n", "c"]),
                                           helper.make_tensor_value_info("b", F32, ["p", "q"])],
                              [helper.make_tensor_value_info("y", F32, None)])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


def _converted_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(onnx_bcast.convert(model).SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


@pytest.mark.parametrize(("op", "mode"), [("Broadcast", None), ("Expand", "numpy")])
def test_a_none_op_after_a_broadcast_to_shape_of_x_has_no_check(op: str, mode: str | None) -> None:
    model = _model(op, mode)
    names = [n.name for n in onnx_bcast.convert(model).graph.node]
    assert not any(name.startswith("add/guard") for name in names), names
    x, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([[10, 20, 30]], np.float32)
    np.testing.assert_array_equal(_converted_run(model, {"x": x, "b": b}), x + b)
    bad = {"x": x, "b": np.ones((1, 4), np.float32)}  # b cannot reach x's shape: the broadcast's own check fails
    for run in (lambda: _converted_run(model, bad), lambda: onnx_bcast.InferenceSession(model).run(None, bad)):
        with pytest.raises(Exception):  # noqa: B017 - any failure; no value may come back
            run()


@pytest.mark.parametrize(("op", "mode"), [("Expand", None), ("Broadcast", "pdpd")])
def test_a_broadcast_that_may_widen_keeps_the_check(op: str, mode: str | None) -> None:
    """Expand (bidirectional, ONNX's default) or Broadcast<pdpd> (a target dim of 1 takes the data's) of b (2, 3)
    to x's (1, 3) makes (2, 3): Add<none> must fail (the pdpd case was proven by mistake once: found by
    test_convert_generated's chains)."""
    model = _model(op, mode)
    assert any(n.name.startswith("add/guard") for n in onnx_bcast.convert(model).graph.node)
    feeds = {"x": np.ones((1, 3), np.float32), "b": np.ones((2, 3), np.float32)}
    for run in (lambda: _converted_run(model, feeds), lambda: onnx_bcast.InferenceSession(model).run(None, feeds)):
        with pytest.raises(Exception):  # noqa: B017 - any failure; no value may come back
            run()
