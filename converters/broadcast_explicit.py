"""Broadcast/Expand in explicit mode: data axes moved onto ``axes_mapping``, the other axes replicated."""

from __future__ import annotations

from collections.abc import Callable

from onnx_bcast.converters.mode_guards import checked_target
from onnx_bcast.converters.shape_inputs import int64_input
from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter


class ExplicitAxes:
    """``Broadcast<mode=explicit>(x, s, a) -> Expand(Unsqueeze(x, complement(a)), s)``.

    When the target's length or ``axes_mapping`` is only known at run time, the aligned shape is built with
    ``ScatterElements(ConstantOfShape(Shape(s), 1), a, Shape(x))`` and applied with ``Reshape`` (before opset 14,
    which reads a 0 there as "copy", its zeros are made inferred: ``Emitter.zeros_inferred``). With guards and an
    output shape not known statically, ``s`` passes explicit mode's run-time checks first.
    """

    def __init__(self, op: str, guards: bool = True) -> None:
        self.op = op
        self.mode = "explicit"
        self.guards = guards

    def _expand(self, emit: Emitter, bound: Bound, align: Callable[[str], str], target: str,
                tie_data: bool = False) -> None:
        """``Expand(align(data), target)`` to the output, after the run-time checks where they are due, tied into
        the aligned data, or with ``tie_data`` into the data before ``align``: OpenVINO's CPU plugin computed the
        ``Shape`` of a later result wrong (a valid none-rule op after it failed its check: fuzz seed 44, cases 17627
        and 29212) where the tie followed a ``Reshape`` to a shape computed at run time."""
        data = bound.inputs[0]
        if not self.guards or bound.out_shape is not None:
            emit.expand(align(data), target, bound.output, bound.out_shape, shape_values=bound.ints(1))
            return
        if tie_data:
            tied, target, zero_ends = checked_target(emit, bound, data, target,
                                                     int64_input(emit, bound, 2, "axes_mapping"))
            aligned = align(tied)
        else:
            aligned, target, zero_ends = checked_target(emit, bound, data, target,
                                                        int64_input(emit, bound, 2, "axes_mapping"),
                                                        carrier=align(data))
        emit.expand(aligned, target, bound.output, bound.out_shape, shape_values=bound.ints(1), zero_ends=zero_ends)

    def check(self, bound: Bound) -> str | None:
        return None

    def rewrite(self, emit: Emitter, bound: Bound) -> None:
        data, rank, axes, data_rank = bound.inputs[0], bound.length(1), bound.ints(2), bound.rank(0)
        out_shape = bound.out_shape
        if rank is not None and axes is not None and data_rank is not None:
            mapped = set(axes) if data_rank > 0 else set()
            new_axes = [i for i in range(rank) if i not in mapped]
            data_shape = bound.static_shape(0)
            no_replication = (data_shape is not None and out_shape is not None
                              and _aligned(data_shape, axes, rank) == out_shape)
            if no_replication:
                emit.unsqueeze(data, new_axes, bound.output) if new_axes else emit.identity(data, bound.output)
                return
            leading = new_axes == list(range(len(new_axes)))  # Expand right-aligns: leading axes need no Unsqueeze

            def unsqueezed(x: str) -> str:
                return emit.unsqueeze(x, new_axes) if new_axes and not leading else x

            self._expand(emit, bound, unsqueezed, int64_input(emit, bound, 1, "target_shape"))
            return
        raw_target = int64_input(emit, bound, 1, "target_shape")
        ones = emit.ones_like_shape(emit.shape(raw_target))
        if data_rank == 0:
            aligned_shape = ones
        else:
            axes_in = int64_input(emit, bound, 2, "axes_mapping")
            data_shape = emit.shape(data)
            if data_rank is None:  # a scalar may carry one axis: scatter only as many axes as data has dims
                axes_in = emit.prefix(axes_in, data_shape)
            aligned_shape = emit.scatter(ones, axes_in, data_shape)
        if not emit.allowzero:  # a 0 in Reshape's shape means "copy" before opset 14; the Expand restores zeros
            pattern = emit.zeros_inferred(aligned_shape)

            def reshaped(x: str) -> str:
                return emit.reshape(x, pattern, may_hold_zero=False)
        else:
            def reshaped(x: str) -> str:
                return emit.reshape(x, aligned_shape)
        self._expand(emit, bound, reshaped, raw_target, tie_data=True)


def _aligned(data_shape: tuple[int, ...], axes: tuple[int, ...], rank: int) -> tuple[int, ...]:
    dims = [1] * rank
    for k, a in enumerate(axes[: len(data_shape)]):
        dims[a] = data_shape[k]
    return tuple(dims)


def rules(guards: bool) -> list[ExplicitAxes]:
    return [ExplicitAxes(op, guards) for op in ("Broadcast", "Expand")]
