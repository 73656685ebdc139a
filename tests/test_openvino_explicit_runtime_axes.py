"""An explicit broadcast whose target and ``axes_mapping`` are fed at run time (and a ``BroadcastV0`` whose shape and
axes are), followed by a none-rule op, runs in OpenVINO on valid input and fails there on invalid input.

OpenVINO's CPU plugin computed the ``Shape`` of the result wrong where the check's tie followed the ``Reshape`` that
aligns the data (its shape computed at run time): the none-rule op's check then failed on valid input (fuzz seed
44, cases 17627 and 29212). The expected values come from numpy here (the data reshaped onto the mapped axes, then
``np.broadcast_to``).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from tests import tool_pipelines as tools

pytest.importorskip("openvino", reason="OpenVINO is not installed (pip install openvino)")

# data shape, target, axes_mapping
CASES = [((1,), (2, 1), (1,)), ((3,), (3, 4), (0,)), ((2,), (4, 2), (1,)), ((1, 2), (3, 1, 2), (1, 2)),
         ((2, 1), (2, 3), (0, 1)), ((1,), (1, 2), (0,)), ((3,), (2, 3, 5), (1,))]


def _model(rank: int, out_rank: int, opset: int, second: str) -> onnx.ModelProto:
    nodes = [helper.make_node("Broadcast", ["x", "t", "a"], ["y1"], domain="onnx_bcast", name="first",
                              mode="explicit"),
             helper.make_node(second, ["y1"], ["y2"], name="middle"),
             helper.make_node("Less", ["y2", "c"], ["y"], domain="onnx_bcast", name="second",
                              auto_broadcast="none")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.INT32, [f"D{k}" for k in range(rank)]),
              helper.make_tensor_value_info("t", TensorProto.INT64, [out_rank]),
              helper.make_tensor_value_info("a", TensorProto.INT64, [rank]),
              helper.make_tensor_value_info("c", TensorProto.INT32, [f"E{k}" for k in range(out_rank)])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.BOOL, None)])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", opset),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


def _broadcast(x: np.ndarray, target: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    aligned = [1] * len(target)
    for dim, axis in zip(x.shape, axes, strict=True):
        aligned[axis] = dim
    return np.broadcast_to(x.reshape(aligned), target)


@pytest.mark.parametrize("second", ["Abs", "Identity"])
@pytest.mark.parametrize("opset", [11, 18])
@pytest.mark.parametrize(("shape", "target", "axes"), CASES, ids=str)
def test_valid_runs_and_invalid_fails_in_openvino(shape: tuple, target: tuple, axes: tuple, opset: int,
                                                  second: str) -> None:
    rng = np.random.default_rng(len(shape) * 100 + sum(target))
    x = rng.integers(0, 30, shape).astype(np.int32)
    c = rng.integers(0, 30, target).astype(np.int32)
    feeds = {"x": x, "t": np.array(target, np.int64), "a": np.array(axes, np.int64), "c": c}
    converted = onnx_bcast.convert(_model(len(shape), len(target), opset, second))
    want = _broadcast(x, target, axes) < c
    np.testing.assert_array_equal(tools.ort_run(converted, feeds)[0], want)
    np.testing.assert_array_equal(tools.openvino_run(converted, feeds)[0], want)
    wrong_c = {**feeds, "c": np.zeros((*target[:-1], target[-1] + 1), np.int32)}  # none: shapes must be equal
    with pytest.raises(Exception):  # noqa: B017 (any failure: no value may come back)
        got = tools.openvino_run(converted, wrong_c)
        pytest.fail(f"OpenVINO returned {got[0].shape} for c {wrong_c['c'].shape}")


# BroadcastV0 in the ONNX Runtime form (shape and broadcast_axes fed): data shape, shape, broadcast_axes
V0_CASES = [((2,), (3, 2), (0,)), ((3,), (3, 4), (1,)), ((2, 3), (2, 4, 3), (1,)), ((1,), (2, 1), (0,))]


def _v0_model(rank: int, out_rank: int) -> onnx.ModelProto:
    first = helper.make_node("BroadcastV0", ["x", "s", "b"], ["y1"], domain="onnx_bcast", name="first")
    first.attribute.extend([helper.make_attribute(name, [], attr_type=onnx.AttributeProto.INTS)
                            for name in ("shape", "broadcast_axes")])
    nodes = [first, helper.make_node("Abs", ["y1"], ["y2"], name="middle"),
             helper.make_node("Less", ["y2", "c"], ["y"], domain="onnx_bcast", name="second", auto_broadcast="none")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.INT32, [f"D{k}" for k in range(rank)]),
              helper.make_tensor_value_info("s", TensorProto.INT64, [out_rank]),
              helper.make_tensor_value_info("b", TensorProto.INT64, [out_rank - rank]),
              helper.make_tensor_value_info("c", TensorProto.INT32, [f"E{k}" for k in range(out_rank)])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.BOOL, None)])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 18),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


@pytest.mark.parametrize(("shape", "target", "new_axes"), V0_CASES, ids=str)
def test_broadcast_v0_fed_lists_runs_in_openvino(shape: tuple, target: tuple, new_axes: tuple) -> None:
    rng = np.random.default_rng(len(shape) * 100 + sum(target))
    x = rng.integers(0, 30, shape).astype(np.int32)
    c = rng.integers(0, 30, target).astype(np.int32)
    feeds = {"x": x, "s": np.array(target, np.int64), "b": np.array(new_axes, np.int64), "c": c}
    converted = onnx_bcast.convert(_v0_model(len(shape), len(target)))
    kept = tuple(k for k in range(len(target)) if k not in new_axes)  # the data's axes, in order
    want = _broadcast(x, target, kept) < c
    np.testing.assert_array_equal(tools.ort_run(converted, feeds)[0], want)
    np.testing.assert_array_equal(tools.openvino_run(converted, feeds)[0], want)
    with pytest.raises(Exception):  # noqa: B017 (any failure: no value may come back)
        got = tools.openvino_run(converted, {**feeds, "c": np.zeros((*target[:-1], target[-1] + 1), np.int32)})
        pytest.fail(f"OpenVINO returned {got[0].shape}")
