"""Run-time checks and aligned shapes of the backprop ops, in standard ONNX (the kernel's preconditions)."""

from __future__ import annotations

from onnx_bcast.converters.guards import Guard
from onnx_bcast.converters.mode_guards import mode_conditions, no_axes_mapping, pdpd_start
from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.ops.common import MAX_RANK

_END = 2**63 - 1  # Slice to the end


def checked_delta(emit: Emitter, guard: Guard, delta: str) -> str:
    """``delta`` itself, available only after every check passed (``Guard.tied``): both outputs of
    ``Unbroadcast`` read it, so no consumer can run without the checks."""
    return guard.tied(delta)


def broadcast_backprop_conditions(guard: Guard, bound: Bound, data_shape: str, delta_shape: str,
                                  axes: str | None) -> None:
    """``delta_shape`` must be the forward output for ``data_shape`` under the node's mode."""
    guard.require(guard.at_least(data_shape, guard.i64(0)), "data_shape dims must not be negative")
    no_axes_mapping(guard, bound)
    mode_conditions(guard, bound.mode, data_shape, delta_shape, axes, unidirectional=True)


def unbroadcast_conditions(guard: Guard, bound: Bound, a: str, b: str, delta_shape: str) -> None:
    """``delta_shape`` must be the output shape of A and B under the node's rule (A, B: int64 shape vectors)."""
    ra, rb, big_r = guard.length(a), guard.length(b), guard.length(delta_shape)
    limit, zero, one = guard.i64(MAX_RANK), guard.i64(0), guard.i64(1)
    guard.require(guard.op("And", guard.at_most(ra, limit), guard.at_most(rb, limit)), f"ranks are at most {MAX_RANK}")
    for shape, what in ((a, "a_shape"), (b, "b_shape")):
        guard.require(guard.at_least(shape, zero), f"{what} dims must not be negative")
    mode = bound.mode
    if mode == "none":
        for shape in (a, b):
            guard.require(guard.op("Equal", guard.length(shape), big_r), "none: A, B and delta must have one shape")
            guard.require(guard.op("Equal", shape, delta_shape), "none: A, B and delta must have one shape")
    elif mode == "numpy":
        larger = guard.op("Where", guard.op("Greater", ra, rb), ra, rb)  # Max of int64 is opset 12
        guard.require(guard.op("Equal", big_r, larger), "numpy: delta's rank must be the larger of A's and B's")
        al_a, al_b = right_aligned(guard, a, big_r), right_aligned(guard, b, big_r)
        for aligned in (al_a, al_b):
            fits = guard.op("Or", guard.op("Equal", aligned, one), guard.op("Equal", aligned, delta_shape))
            guard.require(fits, "numpy: each A and B dim must be 1 or equal delta's dim")
        made = guard.op("Or", guard.op("Equal", delta_shape, al_a), guard.op("Equal", delta_shape, al_b))
        guard.require(made, "numpy: each delta dim must be A's or B's")
    else:
        guard.require(guard.op("Equal", ra, big_r), "pdpd: delta must have A's shape")
        guard.require(guard.op("Equal", a, delta_shape), "pdpd: delta must have A's shape")
        start = pdpd_start(guard, bound, ra, rb)
        guard.require(guard.at_most(rb, ra), "pdpd: B's rank must not exceed A's")
        guard.require(guard.at_least(start, zero), "pdpd: the axis must not be negative")
        guard.require(guard.at_most(start, ra), "pdpd: the axis must lie within A's rank")
        past = guard.slice(b, guard.op("Sub", ra, start), guard.i64(_END))  # B's dims past A's end: 1s only
        guard.require(guard.op("Equal", guard.op("Concat", one, past, axis=0), one), "pdpd: B must fit in A from axis")
        al_b = pdpd_aligned(guard, b, start, ra)
        fits = guard.op("Or", guard.op("Equal", al_b, one), guard.op("Equal", al_b, a))
        guard.require(fits, "pdpd: each B dim must be 1 or equal the A dim it meets")


def right_aligned(guard: Guard, dims: str, rank: str) -> str:
    """``dims`` padded with leading 1s to ``rank`` (``rank >= len(dims)``): the last ``rank`` of ``1s + dims``."""
    ones = guard.emit.ones_like_shape(rank)
    return guard.slice(guard.op("Concat", ones, dims, axis=0), guard.op("Neg", rank), guard.i64(_END))


def pdpd_aligned(guard: Guard, b: str, start: str, rank: str) -> str:
    """B's dims placed at ``start`` among ``rank`` 1s (B's dims past the end, which must be 1s, dropped)."""
    emit = guard.emit
    padded = guard.op("Concat", emit.ones_like_shape(start), b, emit.ones_like_shape(rank), axis=0)
    return guard.slice(padded, guard.i64(0), rank)


def explicit_aligned(guard: Guard, data_shape: str, axes: str, rank: str, data_rank: int | None) -> str:
    """``data_shape``'s dims placed on ``axes`` among ``rank`` 1s (a scalar's one axis, if any, ignored)."""
    emit = guard.emit
    ones = emit.ones_like_shape(rank)
    if data_rank == 0:
        return ones
    if data_rank is None:
        axes = emit.prefix(axes, data_shape)
    return emit.scatter(ones, axes, data_shape)


def summed_axes(guard: Guard, aligned: str) -> str:
    """The axes where ``aligned`` is 1 (the new and the stretched ones), as a 1-D int64 tensor."""
    return guard.emit.nonzero(guard.op("Equal", aligned, guard.i64(1)), guard.i64(-1))
