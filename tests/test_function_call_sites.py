"""An error inside a model-local function that the ONNX Runtime path inlines names the call site and the function's
node (``<call site>.<node>``), on both backends, for each call site; onnx's inliner alone named ``<node>__<k>``,
a node that exists nowhere."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bcast

OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]


def _model() -> onnx.ModelProto:
    """Two calls of local.f (Broadcast<numpy>(x, t)): 'first' with t, 'second' with u."""
    function = helper.make_function("local", "f", ["x", "t"], ["y"], [helper.make_node(
        "Broadcast", ["x", "t"], ["y"], domain="onnx_bcast", name="inner_bc", mode="numpy")], opset_imports=OPSETS)
    graph = helper.make_graph([helper.make_node("f", ["x", "t"], ["y1"], domain="local", name="first"),
                               helper.make_node("f", ["x", "u"], ["y2"], domain="local", name="second")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a"]),
                               helper.make_tensor_value_info("t", TensorProto.INT64, [2]),
                               helper.make_tensor_value_info("u", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y1", "y2")])
    return helper.make_model(graph, functions=[function], ir_version=10,
                             opset_imports=[*OPSETS, helper.make_opsetid("local", 1)])


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize(("bad", "call"), [("t", "first"), ("u", "second")])
def test_the_error_names_the_call_site_and_the_functions_node(backend: str, bad: str, call: str) -> None:
    x = np.ones(3, np.float32)
    feeds = {"x": x, "t": np.array([2, 3]), "u": np.array([4, 3]), bad: np.array([2, 4])}
    session = onnx_bcast.InferenceSession(_model(), backend=backend)
    message = rf"^Broadcast\(mode=numpy\) node '{call}\.inner_bc': data dim 0"
    with pytest.raises(onnx_bcast.BroadcastError, match=message):
        session.run(None, feeds)
    y1, y2 = session.run(None, {"x": x, "t": np.array([2, 3]), "u": np.array([4, 3])})
    np.testing.assert_array_equal(y1, np.broadcast_to(x, (2, 3)))
    np.testing.assert_array_equal(y2, np.broadcast_to(x, (4, 3)))
