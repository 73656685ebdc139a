"""The numpy backend's Broadcast/Expand of the types ORT's ``Expand`` takes: a Python check on shapes only
(``BroadcastCheck``), then ``Reshape`` + ``Expand`` move the data, so no data passes through Python. Expected values
are ``tests.case_table.oracle_broadcast`` (gathers on numpy indices); expected errors are the rule's words."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from tests.case_table import oracle_broadcast

CASES = [  # mode, data shape, target, axes_mapping (explicit), axis (pdpd)
    ("numpy", (3,), (2, 3), None, -1), ("numpy", (2, 1), (2, 4), None, -1),
    ("bidirectional", (2, 1), (1, 3), None, -1), ("explicit", (3,), (2, 3, 4), (1,), -1),
    ("pdpd", (3, 1), (2, 3, 4), None, 1), ("numpy", (0, 1), (0, 3), None, -1),
    ("explicit", (0,), (2, 0), (1,), -1), ("numpy", (), (2, 2), None, -1)]
TYPES = (np.float32, np.float16, np.float64, np.bool_, np.int8, np.uint16, np.int64, np.uint64)


def _model(mode: str, dtype: type, axes: bool, axis: int, opset: int) -> onnx.ModelProto:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inputs = [helper.make_tensor_value_info("x", elem, None), helper.make_tensor_value_info("s", TensorProto.INT64,
                                                                                              [None])]
    names = ["x", "s"]
    if axes:
        inputs.append(helper.make_tensor_value_info("a", TensorProto.INT64, [None]))
        names.append("a")
    attrs = {"axis": axis} if mode == "pdpd" else {}
    node = helper.make_node("Broadcast", names, ["y"], domain="onnx_bcast", name="bc", mode=mode, **attrs)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", opset),
                                                                helper.make_opsetid("onnx_bcast", 1)])


@pytest.mark.parametrize("opset", (13, 17))  # before 14, Reshape reads a 0 as "copy"
@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: np.dtype(t).name)
def test_expand_moves_the_data_with_the_rules_values(dtype: type, opset: int) -> None:
    rng = np.random.default_rng(5)
    for mode, shape, target, axes, axis in CASES:
        session = onnx_bcast.InferenceSession(_model(mode, dtype, axes is not None, axis, opset))
        python_ops = [n.op_type for n in session.prepared_model.graph.node if n.domain == "onnx_bcast.ort"]
        assert python_ops == ["BroadcastCheck"]
        x = np.asarray(rng.standard_normal(shape) * 9).astype(dtype)
        feed = {"x": x, "s": np.array(target, np.int64)} | ({"a": np.array(axes, np.int64)} if axes else {})
        (got,) = session.run(None, feed)
        want = oracle_broadcast(x, np.array(target), None if axes is None else np.array(axes), mode=mode, axis=axis)
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape, (mode, shape, target)
        np.testing.assert_array_equal(got, want)


def test_invalid_targets_fail_naming_the_node_and_the_session_survives() -> None:
    session = onnx_bcast.InferenceSession(_model("numpy", np.float32, False, -1, 17))
    x = np.arange(3, dtype=np.float32)
    for target, words in (([2, 4], "cannot be broadcast"), ([3, -1], "negative"), ([1], "target dim 0 .size 1.")):
        with pytest.raises(onnx_bcast.BroadcastError, match=rf"Broadcast\(mode=numpy\) node 'bc'.*{words}"):
            session.run(None, {"x": x, "s": np.array(target, np.int64)})
        np.testing.assert_array_equal(session.run(None, {"x": x, "s": np.array([2, 3], np.int64)})[0],
                                      np.broadcast_to(x, (2, 3)))


def test_the_output_limit_counts_the_datas_own_bytes() -> None:
    """float16 data: 2 bytes per element (the check's stand-in has the data's dtype)."""
    session = onnx_bcast.InferenceSession(_model("numpy", np.float16, False, -1, 17), max_output_bytes=23)
    x = np.ones(3, np.float16)
    with pytest.raises(onnx_bcast.BroadcastError, match="over the limit of 23 bytes"):
        session.run(None, {"x": x, "s": np.array([4, 3], np.int64)})  # 24 bytes
    assert session.run(None, {"x": x, "s": np.array([3, 3], np.int64)})[0].shape == (3, 3)  # 18 bytes


def test_each_input_signature_is_checked_on_its_own() -> None:
    """The check remembers the shapes it proved, per node and signature: data shapes of one rank, targets of one
    length, valid and invalid, alternate on one session."""
    session = onnx_bcast.InferenceSession(_model("numpy", np.float32, False, -1, 17))
    calls = [((2, 1), (2, 3)), ((3, 1), (2, 3)), ((1, 3), (2, 3)), ((2, 1), (2, 4)), ((1, 4), (2, 3)),
             ((2, 1), (3, 3))]
    for _ in range(2):
        for shape, target in calls:
            x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
            feed = {"x": x, "s": np.array(target, np.int64)}
            try:
                want = oracle_broadcast(x, np.array(target), None, mode="numpy", axis=-1)
            except Exception:  # noqa: BLE001 - the oracle refuses: so must the session
                with pytest.raises(onnx_bcast.BroadcastError, match="node 'bc'"):
                    session.run(None, feed)
                continue
            np.testing.assert_array_equal(session.run(None, feed)[0], want)

