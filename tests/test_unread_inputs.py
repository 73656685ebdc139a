"""A graph input the converted graph no longer reads stays a graph input (the converted model takes the original's
feeds), in the converted model and in the model ONNX Runtime's optimizer saves at every level. Expected values:
``np.broadcast_to``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import onnx_bcast


def _model() -> onnx.ModelProto:
    """y = BroadcastLikeV0(x (3,), like (2, 3), axes [0]): only like's static shape is read, so not like itself."""
    node = helper.make_node("BroadcastLikeV0", ["x", "like"], ["y"], domain="onnx_bcast", name="bl",
                            initial_broadcast_axes=[0])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
                                            helper.make_tensor_value_info("like", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


@pytest.mark.parametrize("level", ["ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"])
def test_an_unread_input_stays_an_input(level: str, tmp_path: Path) -> None:
    converted = onnx_bcast.convert(_model())
    assert not any("like" in n.input for n in converted.graph.node)  # the case this test is about
    assert [i.name for i in converted.graph.input] == ["x", "like"]
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    feeds = {"x": np.arange(3, dtype=np.float32), "like": np.zeros((2, 3), np.float32)}
    session = ort.InferenceSession(converted.SerializeToString(), options, providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, feeds)[0], np.broadcast_to(feeds["x"], (2, 3)))
    saved = onnx.load(str(tmp_path / "optimized.onnx"))
    assert [i.name for i in saved.graph.input] == ["x", "like"]
