"""The backprop ops in standard ONNX: ``ReduceSum`` over the summed axes, then ``Reshape`` to the gradient's shape.

The summed axes are those where the forward op aligned the data (or A, or B) with a 1: new axes and stretched
size-1 axes. They are constants where the shapes are known when converting, else computed in the graph
(``NonZero(aligned == 1)``, ``ReduceSum`` with axes as an input: opset 13). Types are summed as the kernel sums
them (``gradient_sums``): narrow floats in float32, integers exactly and wrapping, cast back once.
"""

from __future__ import annotations

from onnx_bcast.converters.backprop_guards import (
    broadcast_backprop_conditions,
    checked_delta,
    explicit_aligned,
    pdpd_aligned,
    right_aligned,
    summed_axes,
    unbroadcast_conditions,
)
from onnx_bcast.converters.gradient_sums import sum_to
from onnx_bcast.converters.guards import Guard
from onnx_bcast.converters.mode_guards import pdpd_start
from onnx_bcast.converters.shape_inputs import int64_input
from onnx_bcast.errors import BroadcastError
from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.ops.backprop import backprop_plan, unbroadcast_plan, v0_plan
from onnx_bcast.ops.broadcast import MODES
from onnx_bcast.ops.broadcast_modes import MODE_BY_NAME
from onnx_bcast.ops.elementwise import RULES


class BroadcastBackpropRule:
    """``BroadcastBackprop<mode>(Δ, s, a) -> Reshape(ReduceSum(Δ, axes where the aligned data dim is 1), s)``.

    The aligned data shape is ``s`` right-aligned to Δ's rank (numpy, bidirectional, pdpd, whose data reaches the
    last axis) or placed on ``a`` (explicit). With guards, what is not proven when converting is checked at run
    time: Δ's shape must be the forward output for ``s`` (``s`` the data, Δ the target, as in the forward rule).
    """

    def __init__(self, mode: str, guards: bool = True) -> None:
        self.op, self.mode, self.guards = "BroadcastBackprop", mode, guards

    def check(self, bound: Bound) -> str | None:
        return None

    def rewrite(self, emit: Emitter, bound: Bound) -> None:
        delta, dims, axes = bound.inputs[0], bound.ints(1), bound.ints(2)
        uses_axes = MODE_BY_NAME[self.mode].uses_axes_mapping
        static_axes = not uses_axes or axes is not None
        if dims is not None and bound.shapes[0] is not None and static_axes:
            try:  # known dims are judged now; unknown ones at run time
                mapping = axes if uses_axes else axes or None  # the ORT form's empty one: absent
                _, aligned, summed, _ = backprop_plan(dims, bound.shapes[0], mapping, mode=self.mode,
                                                      axis=int(bound.attrs["axis"]))
            except BroadcastError as err:
                raise emit.fail(err.detail) from None
            if bound.out_shape is None and self.guards:
                delta = self._checked(emit, bound, delta)
            shape = None if aligned == dims else emit.const_i64(dims, "data_shape")
            sum_to(emit, bound, delta, summed, True, shape, bound.output, len(bound.shapes[0]))
            return
        data_shape = int64_input(emit, bound, 1, "data_shape")
        if self.guards:
            delta = self._checked(emit, bound, delta)
        guard = Guard(emit, bound)
        rank = guard.rank(delta)
        if uses_axes:
            axes_in = int64_input(emit, bound, 2, "axes_mapping")
            aligned = explicit_aligned(guard, data_shape, axes_in, rank, bound.length(1))
        else:
            aligned = right_aligned(guard, data_shape, rank)
        sum_to(emit, bound, delta, summed_axes(guard, aligned), True, data_shape, bound.output)

    def _checked(self, emit: Emitter, bound: Bound, delta: str) -> str:
        guard = Guard(emit, bound)
        axes = int64_input(emit, bound, 2, "axes_mapping") if MODE_BY_NAME[self.mode].uses_axes_mapping else None
        broadcast_backprop_conditions(guard, bound, int64_input(emit, bound, 1, "data_shape"), emit.shape(delta),
                                      axes)
        return checked_delta(emit, guard, delta)


class BroadcastV0BackpropRule:
    """``BroadcastV0Backprop(Δ, axes) -> ReduceSum(Δ, axes, keepdims=0)`` (nGraph's ``Sum(Δ, broadcast_axes)``).

    With guards and Δ's rank not known when converting, every axis must be below it: checked at run time.
    """

    op, mode = "BroadcastV0Backprop", ""

    def __init__(self, guards: bool = True) -> None:
        self.guards = guards

    def check(self, bound: Bound) -> str | None:
        axes = [int(a) for a in bound.attrs["broadcast_axes"]]
        given = bound.ints(1) if len(bound.inputs) > 1 and bound.inputs[1] else None
        if len(bound.inputs) > 1 and bound.inputs[1] and (given is None or sorted(given) != sorted(axes)):
            reason = "broadcast_axes_input must be a constant equal to the broadcast_axes attribute to be converted"
            if given is None:  # known only at run time: a limit of the conversion, not of the inputs
                raise bound.limit(reason)
            return reason
        rank = bound.rank(0)
        try:
            v0_plan(bound.shapes[0] if rank is not None else (None,) * (max(axes, default=-1) + 1), axes)
        except BroadcastError as err:
            return err.detail
        return None

    def rewrite(self, emit: Emitter, bound: Bound) -> None:
        axes = sorted(int(a) for a in bound.attrs["broadcast_axes"])
        delta = bound.inputs[0]
        if self.guards and bound.rank(0) is None and axes:
            delta = self._checked(emit, bound, delta, axes[-1])
        sum_to(emit, bound, delta, axes, False, None, bound.output, bound.rank(0))

    @staticmethod
    def _checked(emit: Emitter, bound: Bound, delta: str, highest: int) -> str:
        guard = Guard(emit, bound)
        guard.require(guard.op("Greater", guard.rank(delta), guard.i64(highest)),
                      "broadcast_axes must lie within delta's rank")
        return checked_delta(emit, guard, delta)


class UnbroadcastRule:
    """``Unbroadcast<rule>(Δ, a, b) -> Reshape(ReduceSum(Δ, axes where aligned A is 1), a), and the same for B``.

    A and B are aligned to Δ's rank as the forward op aligns them (right-aligned; pdpd: B from ``axis``, its
    trailing 1s trimmed). With guards, what is not proven when converting is checked at run time: Δ's shape must
    be the output shape of A and B under the rule.
    """

    def __init__(self, mode: str, guards: bool = True) -> None:
        self.op, self.mode, self.guards = "Unbroadcast", mode, guards

    def check(self, bound: Bound) -> str | None:
        return None

    def rewrite(self, emit: Emitter, bound: Bound) -> None:
        delta, a, b = bound.inputs[0], bound.ints(1), bound.ints(2)
        axis = int(bound.attrs["axis"])
        if a is not None and b is not None and bound.shapes[0] is not None:
            try:
                _, _, out, aligned_a, aligned_b = unbroadcast_plan(bound.shapes[0], a, b, auto_broadcast=self.mode,
                                                                   axis=axis)
            except BroadcastError as err:
                raise emit.fail(err.detail) from None
            if bound.out_shape is None and self.guards:
                delta = self._checked(emit, bound, delta, emit.const_i64(a, "a_shape"), emit.const_i64(b, "b_shape"))
            for aligned, shape, output in ((aligned_a, a, bound.outputs[0]), (aligned_b, b, bound.outputs[1])):
                summed = [i for i, n in enumerate(aligned) if n == 1 and out[i] != 1]
                reshape = None if aligned == shape else emit.const_i64(shape, "grad_shape")
                sum_to(emit, bound, delta, summed, True, reshape, output, len(out))
            return
        a_in, b_in = int64_input(emit, bound, 1, "a_shape"), int64_input(emit, bound, 2, "b_shape")
        if self.guards:
            delta = self._checked(emit, bound, delta, a_in, b_in)
        guard = Guard(emit, bound)  # the shape arithmetic's helpers (no conditions)
        for aligned, shape, output in zip(self._aligned(emit, guard, bound, a_in, b_in), (a_in, b_in),
                                          bound.outputs, strict=True):
            if isinstance(aligned, str):  # known at run time only: the axes too (OpenVINO's reader refuses these)
                sum_to(emit, bound, delta, summed_axes(guard, aligned), True, shape, output)
            else:
                sum_to(emit, bound, delta, [i for i, n in enumerate(aligned) if n == 1], True, shape, output,
                       len(aligned))

    @staticmethod
    def _checked(emit: Emitter, bound: Bound, delta: str, a: str, b: str) -> str:
        """``delta`` after the run-time checks that it is the output shape of A and B (int64 shape vectors)."""
        guard = Guard(emit, bound)
        unbroadcast_conditions(guard, bound, a, b, emit.shape(delta))
        return checked_delta(emit, guard, delta)

    def _aligned(self, emit: Emitter, guard: Guard, bound: Bound, a_in: str, b_in: str
                 ) -> tuple[tuple[int, ...] | str, tuple[int, ...] | str]:
        """A's and B's aligned shapes: constants where the values and ranks they need are known (the summed axes
        are then constants), else int64 tensors. Under none and pdpd A is Δ's shape: nothing is summed for it."""
        a, b, la, lb = bound.ints(1), bound.ints(2), bound.length(1), bound.length(2)
        if self.mode == "none":
            return (), ()
        if self.mode == "pdpd":
            axis = int(bound.attrs["axis"])
            start = axis if axis != -1 else (la - lb if la is not None and lb is not None else None)
            if b is not None and la is not None and start is not None:
                trimmed = list(b)
                while trimmed and trimmed[-1] == 1:
                    trimmed.pop()
                if not 0 <= start <= la - len(trimmed):
                    raise emit.fail(f"B {tuple(b)} does not fit in A's rank {la} from axis {start}")
                return (), (1,) * start + tuple(trimmed) + (1,) * (la - start - len(trimmed))
            start_in = pdpd_start(guard, bound, guard.length(a_in), guard.length(b_in))
            return (), pdpd_aligned(guard, b_in, start_in, guard.rank(bound.inputs[0]))
        rank = bound.rank(0) if bound.rank(0) is not None else (max(la, lb) if la is not None and lb is not None
                                                                   else None)
        aligned: list[tuple[int, ...] | str] = []
        rank_in = None  # Shape(Shape(delta)), made only where an operand is aligned at run time
        for v, shape in ((a, a_in), (b, b_in)):
            if v is not None and rank is not None and rank >= len(v):
                aligned.append((1,) * (rank - len(v)) + v)
            else:
                rank_in = rank_in or guard.rank(bound.inputs[0])
                aligned.append(right_aligned(guard, shape, rank_in))
        return aligned[0], aligned[1]


def rules(guards: bool) -> list[BroadcastBackpropRule | BroadcastV0BackpropRule | UnbroadcastRule]:
    return ([BroadcastBackpropRule(mode, guards) for mode in MODES] + [BroadcastV0BackpropRule(guards)]
            + [UnbroadcastRule(mode, guards) for mode in RULES])
