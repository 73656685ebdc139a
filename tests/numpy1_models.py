"""Models that make tensors of rank 33 or 64 inside the graph from small inputs (numpy 1 makes no array of more than
32 dims, so they cannot be fed), for tests/test_numpy1_ranks.py and its child process."""

from __future__ import annotations

import numpy as np
from onnx import ModelProto, TensorProto, helper

OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]


def high_shape(rank: int) -> list[int]:
    """[2, 1, ..., 1, 3] of ``rank`` dims: the six elements of a [2, 3] tensor."""
    return [2] + [1] * (rank - 2) + [3]


def wide_target(rank: int) -> list[int]:
    """[1, ..., 1, 2, 3] of ``rank`` dims: a target A [2, 3] broadcasts to in numpy mode."""
    return [1] * (rank - 2) + [2, 3]


def _model(nodes: list, inputs: list, initializers: list | None = None) -> ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                              initializers or [])
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)


def _a() -> object:
    return helper.make_tensor_value_info("A", TensorProto.FLOAT, [2, 3])


def _shape_input(rank: int, constant: bool) -> tuple[list, list]:
    """The shape ``s`` to reshape A to: a constant of ``rank`` values, or fed at run time (rank unknown)."""
    if constant:
        return [], [helper.make_tensor("s", TensorProto.INT64, [rank], high_shape(rank))]
    return [helper.make_tensor_value_info("s", TensorProto.INT64, [None])], []


def kernel_input(rank: int, constant: bool) -> ModelProto:
    """A reshaped to ``rank`` dims, our Broadcast (a numpy kernel) of it to [1], summed to a scalar: the kernel's
    input has ``rank`` dims."""
    fed, consts = _shape_input(rank, constant)
    nodes = [helper.make_node("Reshape", ["A", "s"], ["A_high"]),
             helper.make_node("Broadcast", ["A_high", "t"], ["S"], domain="onnx_bcast", name="n", mode="bidirectional"),
             helper.make_node("ReduceSum", ["S"], ["Y"], keepdims=0)]
    consts.append(helper.make_tensor("t", TensorProto.INT64, [1], [1]))
    return _model(nodes, [_a(), *fed], initializers=consts)


def kernel_output(mode: str = "numpy") -> ModelProto:
    """Our Broadcast of A [2, 3] to the fed target ``t``, summed to a scalar: the kernel's output has ``len(t)``
    dims."""
    nodes = [helper.make_node("Broadcast", ["A", "t"], ["S"], domain="onnx_bcast", name="n", mode=mode),
             helper.make_node("ReduceSum", ["S"], ["Y"], keepdims=0)]
    return _model(nodes, [_a(), helper.make_tensor_value_info("t", TensorProto.INT64, [None])])


def like_arg(rank: int) -> ModelProto:
    """BroadcastLikeV0 of B [3] like A reshaped to ``rank`` dims (fed shape), summed: the shape-only input."""
    nodes = [helper.make_node("Reshape", ["A", "s"], ["A_high"]),
             helper.make_node("BroadcastLikeV0", ["B", "A_high"], ["S"], domain="onnx_bcast", name="n",
                              initial_broadcast_axes=list(range(rank - 1))),
             helper.make_node("ReduceSum", ["S"], ["Y"], keepdims=0)]
    return _model(nodes, [_a(), helper.make_tensor_value_info("s", TensorProto.INT64, [None]),
                          helper.make_tensor_value_info("B", TensorProto.FLOAT, [3])])


def high_output(op: str) -> ModelProto:
    """A model output of ``len(s)`` dims, made in ORT: the standard ``Expand`` of A to ``s``, or our ``Add`` of A
    reshaped to ``s`` and B [3] (ORT's own Add in both backends)."""
    if op == "Expand":
        nodes = [helper.make_node("Expand", ["A", "s"], ["Y"], name="n")]
        extra = []
    else:
        nodes = [helper.make_node("Reshape", ["A", "s"], ["A_high"]),
                 helper.make_node("Add", ["A_high", "B"], ["Y"], domain="onnx_bcast", name="n",
                                  auto_broadcast="numpy")]
        extra = [helper.make_tensor_value_info("B", TensorProto.FLOAT, [3])]
    return _model(nodes, [_a(), helper.make_tensor_value_info("s", TensorProto.INT64, [None]), *extra])


def high_input(rank: int) -> ModelProto:
    """A graph input declared with ``rank`` dims, summed."""
    nodes = [helper.make_node("Broadcast", ["X", "t"], ["S"], domain="onnx_bcast", name="n", mode="bidirectional"),
             helper.make_node("ReduceSum", ["S"], ["Y"], keepdims=0)]
    return _model(nodes, [helper.make_tensor_value_info("X", TensorProto.FLOAT, high_shape(rank))],
                  initializers=[helper.make_tensor("t", TensorProto.INT64, [1], [1])])


def feeds(rank: int = 0, **extra: np.ndarray) -> dict[str, np.ndarray]:
    """A [2, 3] of 1s, the shape of ``rank`` dims when given, B [3] of 1s, and ``extra``."""
    out = {"A": np.ones((2, 3), np.float32)}
    if rank:
        out["s"] = np.asarray(high_shape(rank), np.int64)
    return {**out, **extra}
