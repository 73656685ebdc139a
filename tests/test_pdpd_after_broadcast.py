"""A pdpd elementwise op after one of our broadcasts to a run-time target whose length is known (``Shape(x)`` of a
ranked ``x``): the broadcast's output has that rank, so the pdpd op converts, and every path gives numpy's values on
valid input and fails on an invalid axis."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from onnx_bcast.cli.check import check_model

ort = pytest.importorskip("onnxruntime", reason="the converted model runs in ONNX Runtime")


def _model(axis: int) -> onnx.ModelProto:
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Broadcast", ["bias", "s", "axes"], ["b"], domain="onnx_bcast", mode="explicit"),
             helper.make_node("Add", ["x", "b"], ["y"], domain="onnx_bcast", auto_broadcast="pdpd", axis=axis)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 16, "h", "w"]),
                                           helper.make_tensor_value_info("bias", TensorProto.FLOAT, [16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("axes", TensorProto.INT64, [1], [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("onnx_bcast", 1)])


FEEDS = {"x": np.random.default_rng(5).random((2, 16, 3, 4), dtype=np.float32),
         "bias": np.arange(16, dtype=np.float32)}


def _paths(model: onnx.ModelProto) -> dict:
    converted = onnx_bcast.convert(model)
    return {"numpy": onnx_bcast.InferenceSession(model), "native": onnx_bcast.InferenceSession(model, backend="native"),
            "converted": ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])}


def test_converts_and_equals_numpy() -> None:
    """B = bias broadcast to x's shape (rank 4, from Shape(x)'s length): pdpd with axis -1 puts it at axis 0."""
    want = FEEDS["x"] + FEEDS["bias"][None, :, None, None]
    for name, session in _paths(_model(-1)).items():
        np.testing.assert_array_equal(session.run(None, FEEDS)[0], want, err_msg=name)
    report = check_model(_model(-1))
    assert not report.errors, report.errors  # check and convert agree


def test_an_axis_past_the_end_fails_on_every_path() -> None:
    """axis 1 with B of rank 4 and A of rank 4: B's last dims pass A's end (4 and 3 are not 1)."""
    for name, session in _paths(_model(1)).items():
        with pytest.raises(Exception):  # noqa: B017 - BroadcastError from our sessions, ORT's error from plain ORT
            session.run(None, FEEDS)
            pytest.fail(f"{name} returned a value")
