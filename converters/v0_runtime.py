"""nGraph v0 broadcasts whose shape or axes come at run time (the ONNX Runtime form's list inputs), in standard ONNX.

``Expand(Reshape(x, ScatterElements(shape, axes, 1s)), shape)``: the data takes a 1 on every new axis, then
replicates. With guards, the kernel's conditions are checked at run time: no negative dim, the axes distinct and
within the output rank, and ``x``'s shape equal to ``shape`` without the axes.
"""

from __future__ import annotations

from onnx import TensorProto, helper

from onnx_bcast.converters.guards import Guard
from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.ops.common import MAX_RANK

_ZERO = helper.make_tensor("zero", TensorProto.INT64, [1], [0])


def _zeros(emit: Emitter, like: str) -> str:
    """A 1-D int64 tensor of ``like``'s length, all 0."""
    return emit.standard("ConstantOfShape", [emit.shape(like)], None, value=_ZERO)


def runtime_v0(emit: Emitter, bound: Bound, x: str, shape: str, axes: str, guards: bool, rule: str) -> None:
    """``bound.output = BroadcastV0(x, shape, axes)`` with ``shape`` and ``axes`` int64 1-D tensors."""
    emit.require(14, "a run-time shape or broadcast_axes (Reshape with allowzero)")
    kept_mask = emit.scatter(emit.ones_like_shape(emit.shape(shape)), axes, _zeros(emit, axes))  # 1: an axis of x
    aligned = emit.scatter(shape, axes, emit.ones_like_shape(emit.shape(axes)))
    target = shape
    if guards:
        guard = Guard(emit, bound)
        rank = guard.length(shape)
        guard.require(guard.at_least(shape, guard.i64(0)), "no target dimension may be negative")
        guard.require(guard.at_most(rank, guard.i64(MAX_RANK)), f"ranks are at most {MAX_RANK}")
        guard.representable(shape)
        guard.require(guard.at_least(axes, guard.i64(0)), "broadcast axes must not be negative")
        guard.require(guard.op("Less", axes, rank), "broadcast axes must lie within the output rank")
        kept_count = guard.op("ReduceSum", kept_mask, keepdims=1)
        guard.require(guard.op("Equal", guard.op("Add", kept_count, guard.length(axes)), rank),
                      "broadcast axes must be distinct")
        where = emit.nonzero(kept_mask, guard.i64(-1))
        required, actual = guard.op("Gather", shape, where, axis=0), emit.shape(x)
        guard.require(guard.op("Equal", guard.length(actual), guard.length(required)), rule)
        guard.require(guard.op("Equal", actual, required), rule)
        # the data tied before the Reshape to a shape computed at run time: OpenVINO's CPU plugin computed a later
        # result's Shape wrong where the tie followed it (tests/test_openvino_explicit_runtime_axes.py)
        x, target, _ = guard.tie_expand(x, shape)
    emit.expand(emit.reshape(x, aligned), target, bound.output)


def deduced_or_given(emit: Emitter, arg: str, like_shape: str, given: str) -> str:
    """BroadcastLikeV0's axes from a run-time ``given`` (int64 1-D): itself, or where it is empty the axes nGraph
    deduces left-aligned (axis ``i`` is new when ``i >= rank(arg)``, or ``arg[i] == 1 < like[i]``)."""
    arg_shape = emit.shape(arg)
    rank = emit.shape(like_shape)
    ones = emit.ones_like_shape(emit.shape(like_shape))
    padded = emit.standard("Slice", [emit.standard("Concat", [arg_shape, ones], axis=0), emit.const_i64([0], "zero"),
                                     rank])  # arg's dims left-aligned, 1s after them, to like's rank
    index = emit.nonzero(ones)  # 0, 1, ..., rank - 1
    beyond = emit.standard("Not", [emit.standard("Less", [index, emit.shape(arg_shape)])])
    one = emit.const_i64([1], "one")
    stretched = emit.standard("And", [emit.standard("Equal", [padded, one]),
                                      emit.standard("Greater", [like_shape, one])])
    new = emit.nonzero(emit.standard("Or", [beyond, stretched]))
    empty = emit.standard("Equal", [emit.shape(given), emit.const_i64([0], "zero")])
    use_deduced = emit.standard("Expand", [empty, emit.shape(new)])
    return emit.standard("Concat", [given, emit.standard("Compress", [new, use_deduced], axis=0)], axis=0)
