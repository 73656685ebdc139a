"""Declared output shapes are claims: ``convert`` makes a declared dim that contradicts inference unknown (a shape of
another rank becomes that rank, dims unknown), logs it, and keeps a ``dim_param``; tools that trust declarations
then see no stale zero-size dim. Expected values: ``np.broadcast_to``."""

from __future__ import annotations

import importlib.util
import logging

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast
from tests import tool_pipelines as tools


def _model(declared: list) -> onnx.ModelProto:
    """y = Broadcast<numpy>(x (2, 3), constant [4, 2, 3]), declared as ``declared``."""
    node = helper.make_node("Broadcast", ["x", "t"], ["y"], domain="onnx_bcast", name="bc", mode="numpy")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, declared)],
                              [numpy_helper.from_array(np.array([4, 2, 3], np.int64), "t")])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


def _declared(model: onnx.ModelProto) -> list | None:
    tensor = model.graph.output[0].type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim]


@pytest.mark.parametrize(("declared", "written"), [([4, 0, 3], [4, None, 3]), ([4, 3], [None, None, None]),
                                                   (["n", 2, 3], ["n", 2, 3]), ([4, 2, 3], [4, 2, 3])])
def test_a_contradicted_declaration_is_retracted(declared: list, written: list | None,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="onnx_bcast.model.claims"):
        converted = onnx_bcast.convert(_model(declared))
    assert _declared(converted) == written
    assert ("contradicts inference" in caplog.text) == (written != declared)


def test_tools_that_trust_the_declaration_compute_the_true_shape() -> None:
    """onnxscript's optimizer reads declared shapes; after convert the stale (4, 0, 3) is gone."""
    if importlib.util.find_spec("onnxscript") is None:
        pytest.skip("onnxscript is not installed (pip install -e '.[tools]')")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    converted = onnx_bcast.convert(_model([4, 0, 3]))
    for model in (converted, tools.onnxscript_optimize(converted)):
        (y,) = tools.ort_run(model, {"x": x})
        np.testing.assert_array_equal(y, np.broadcast_to(x, (4, 2, 3)))


def _v0_model(declared: list) -> onnx.ModelProto:
    """y = Identity(BroadcastV0(x [D0], shape [3, 0], broadcast_axes [0])), y declared as ``declared``: the output
    is (3, 0) whenever the node succeeds, whatever x's declared dims say."""
    nodes = [helper.make_node("BroadcastV0", ["x"], ["b"], domain="onnx_bcast", name="v0", shape=[3, 0],
                              broadcast_axes=[0]), helper.make_node("Identity", ["b"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.BOOL, ["D0"])],
                              [helper.make_tensor_value_info("y", TensorProto.BOOL, declared)])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


@pytest.mark.parametrize("declared", [[3, 0, 1], [0, 3]])
def test_an_empty_output_after_onnxsim_keeps_its_shape(declared: list) -> None:
    """onnxsim wrote a stale declared (3, 0, 1) or (0, 3) into the final Reshape of the empty output's form, and
    the converted model returned that shape (fuzz seed 15, case 5721): the contradicted declaration is now
    retracted (the node's output is (3, 0) whenever it succeeds), and an x of the wrong size still fails."""
    if importlib.util.find_spec("onnxsim") is None:
        pytest.skip("onnxsim is not installed (pip install -e '.[tools]')")
    converted = onnx_bcast.convert(_v0_model(declared))
    assert _declared(converted) == [None, None]
    x = np.zeros((0,), bool)
    for model in (converted, tools.onnxsim_simplify(converted)):
        (y,) = tools.ort_run(model, {"x": x})
        assert y.shape == np.broadcast_to(x[np.newaxis], (3, 0)).shape
        with pytest.raises(Exception, match="guard"):
            tools.ort_run(model, {"x": np.zeros((2,), bool)})
