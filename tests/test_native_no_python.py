"""``backend="native"`` never runs our Python kernels for a value: a node the standard lowering cannot write is an
error at session creation naming the node and the reason; a session whose every run fails (the lowering proved it)
raises on each run, and never hands back a value the numpy backend computed. Expected values: numpy's formula."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from onnx_bcast.errors import NotLowerable

F32 = TensorProto.FLOAT


def _pdpd_add(a_shape: list | None, b_shape: list | None, axis: int = 1) -> onnx.ModelProto:
    node = helper.make_node("Add", ["a", "b"], ["y"], domain="onnx_bcast", name="bias_add", auto_broadcast="pdpd",
                            axis=axis)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", F32, a_shape),
                                            helper.make_tensor_value_info("b", F32, b_shape)],
                              [helper.make_tensor_value_info("y", F32, None)])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


def test_a_node_the_lowering_cannot_write_is_an_error_naming_it() -> None:
    """pdpd with unknown ranks: the numpy backend runs it; the native backend refuses it when made (it ran the
    numpy backend's Python kernels before, silently)."""
    model = _pdpd_add(None, None)
    a, b = np.arange(24, dtype=np.float32).reshape(2, 3, 4), np.array([1, 2, 3], np.float32)
    got = onnx_bcast.InferenceSession(model).run(None, {"a": a, "b": b})[0]
    np.testing.assert_array_equal(got, a + b.reshape(1, 3, 1))
    with pytest.raises(NotLowerable, match=r"Add\(auto_broadcast=pdpd\) node 'bias_add': converting pdpd needs the "
                                           r"ranks .*backend 'native' runs the model as standard ONNX only"):
        onnx_bcast.InferenceSession(model, backend="native")


def test_a_model_whose_every_input_fails_fails_each_native_run_with_the_numpy_message() -> None:
    """B of rank 3 cannot align with A of rank 2: proven from ranks; each run raises the numpy backend's error."""
    model = _pdpd_add([2, "n"], [2, 3, 4])
    feeds = {"a": np.ones((2, 3), np.float32), "b": np.ones((2, 3, 4), np.float32)}
    with pytest.raises(onnx_bcast.BroadcastError) as numpy_error:
        onnx_bcast.InferenceSession(model).run(None, feeds)
    session = onnx_bcast.InferenceSession(model, backend="native")
    for _ in range(2):
        with pytest.raises(onnx_bcast.BroadcastError) as native_error:
            session.run(None, feeds)
        assert str(native_error.value) == str(numpy_error.value)


def test_a_value_from_the_numpy_kernels_is_never_handed_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were the numpy backend to compute outputs where the lowering proved failure, the native run raises."""
    model = _pdpd_add([2, "n"], [2, 3, 4])
    session = onnx_bcast.InferenceSession(model, backend="native")
    monkeypatch.setattr(type(session), "_run_numpy", lambda self, *args: [np.zeros(1, np.float32)])
    with pytest.raises(RuntimeError, match="backend 'native' cannot run this model: the lowering proved that every "
                                           "input fails"):
        session.run(None, {"a": np.ones((2, 3), np.float32), "b": np.ones((2, 3, 4), np.float32)})
