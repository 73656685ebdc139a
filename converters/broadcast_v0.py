"""nGraph BroadcastV0 and BroadcastLikeV0: ``Unsqueeze`` on the new axes, then ``Expand``."""

from __future__ import annotations

import functools

from onnx_bcast.converters.guards import Guard, checked_against_shape
from onnx_bcast.converters.shape_inputs import int64_input
from onnx_bcast.converters.v0_runtime import deduced_or_given, runtime_v0
from onnx_bcast.errors import BroadcastError
from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.ops.broadcast_v0 import broadcast_v0_shape, like_axes


def _unsqueeze_expand(emit: Emitter, data: str, axes: list[int], shape: str | None, needs_expand: bool, output: str,
                      static_out: tuple[int, ...] | None, checked: tuple[str, str | None] | None = None) -> None:
    """``Expand(Unsqueeze(data, axes), shape)`` without the parts that change nothing. ``checked``: after the
    run-time checks, ``(data, shape)`` (``checked_against_shape``), one of them carrying the token."""
    if checked is not None:
        data, shape = checked
    if not axes and not needs_expand:
        emit.identity(data, output)
        return
    if not needs_expand:
        emit.unsqueeze(data, axes, output)
        return
    leading = axes == list(range(len(axes)))  # Expand right-aligns: leading new axes need no Unsqueeze
    aligned = emit.unsqueeze(data, axes) if axes and not leading else data
    emit.expand(aligned, shape, output, static_out, checked=checked is not None)


@functools.lru_cache(maxsize=1024)
def _attributes_problem(shape_attr: tuple, axes_attr: tuple) -> str | None:
    """What is wrong with a BroadcastV0's ``shape`` and ``broadcast_axes`` (None: nothing); once per pair."""
    shape = [int(v) for v in shape_attr]
    axes = [int(a) for a in axes_attr]
    required = [d for i, d in enumerate(shape) if i not in set(axes)]
    try:
        broadcast_v0_shape(required, shape, axes)
    except BroadcastError as err:
        return err.detail
    return None


def _list(bound: Bound, i: int, attr: str) -> tuple[int, ...] | None:
    """A list attribute as the kernels read it: input ``i`` of the ONNX Runtime form when present (None when it is
    known only at run time), else the attribute."""
    if len(bound.inputs) > i and bound.inputs[i]:
        return bound.ints(i)
    return tuple(int(v) for v in bound.attrs[attr])


class BroadcastV0Rule:
    """``BroadcastV0(x, shape, axes) -> Expand(Unsqueeze(x, axes), shape)``; ``Identity`` without axes.

    With guards and ``x``'s shape not known statically, ``Shape(x)`` must equal ``shape`` without ``axes``
    exactly: checked at run time, tied into ``Expand``'s shape (or a ``Reshape`` to ``shape`` where no axis
    replicates). The ONNX Runtime form's inputs ``shape_input``/``broadcast_axes_input`` win over the attributes,
    as in the kernel; known only at run time, they take ``v0_runtime``'s form.
    """

    op, mode = "BroadcastV0", ""

    def __init__(self, guards: bool = True) -> None:
        self.guards = guards

    def check(self, bound: Bound) -> str | None:
        """``shape`` and ``broadcast_axes``, where known, are checked here, whatever ``arg`` is."""
        shape, axes = _list(bound, 1, "shape"), _list(bound, 2, "broadcast_axes")
        if shape is None or axes is None:
            return None
        return _attributes_problem(shape, axes)

    def rewrite(self, emit: Emitter, bound: Bound) -> None:
        shape, given_axes = _list(bound, 1, "shape"), _list(bound, 2, "broadcast_axes")
        if shape is None or given_axes is None:
            target = int64_input(emit, bound, 1, "shape") if shape is None else emit.const_i64(shape, "shape")
            axes_in = (int64_input(emit, bound, 2, "broadcast_axes") if given_axes is None
                       else emit.const_i64(given_axes, "broadcast_axes"))
            runtime_v0(emit, bound, bound.inputs[0], target, axes_in, self.guards,
                       "arg's shape must equal shape without broadcast_axes")
            return
        axes = sorted(given_axes)
        needs_expand = any(shape[a] != 1 for a in axes)
        target = None
        if needs_expand:  # the ORT form carries the shape as input 1 too: reuse it when it says the same
            given = bound.ints(1) if len(bound.inputs) > 1 and bound.is_int64(1) else None
            target = bound.inputs[1] if given == shape else emit.const_i64(shape, "shape")
        checked = None
        if self.guards and bound.out_shape is None:
            required = emit.const_i64([d for i, d in enumerate(shape) if i not in set(axes)], "required_shape")
            checked = checked_against_shape(emit, bound, bound.inputs[0], required,
                                            "arg's shape must equal shape without broadcast_axes",
                                            target if needs_expand else None)
        _unsqueeze_expand(emit, bound.inputs[0], axes, target, needs_expand, bound.output, shape, checked)


class BroadcastLikeV0Rule:
    """``BroadcastLikeV0(x, like) -> Expand(Unsqueeze(x, axes), Shape(like))`` with axes given or deduced.

    The ONNX Runtime form's ``initial_broadcast_axes_input`` wins over the attribute, as in the kernel; known only
    at run time it takes ``v0_runtime``'s form (axes deduced in the graph where it is empty).

    With guards and shapes known only at run time, ``Shape(x)`` must equal ``Shape(like)`` without the axes:
    checked at run time and tied into ``Expand``'s shape. Where like_arg's rank is known the axes are checked
    against it here; where it is not, the axes must lie within it at run time too, and the kept dims are
    ``Gather(Shape(like), NonZero(ScatterElements(ones, axes, zeros)))``.
    """

    op, mode = "BroadcastLikeV0", ""

    def __init__(self, guards: bool = True) -> None:
        self.guards = guards

    def check(self, bound: Bound) -> str | None:
        given = _list(bound, 2, "initial_broadcast_axes")
        if given is None:
            return None  # the ONNX Runtime form's axes, fed at run time: v0_runtime checks them there
        if not given and (bound.static_shape(0) is None or bound.static_shape(1) is None):
            raise bound.limit("cannot convert: broadcast axes are deduced from the shapes of arg and like_arg, "
                              "which are not statically known; set initial_broadcast_axes")
        if any(a < 0 for a in given) or len(set(given)) != len(given):
            return f"initial_broadcast_axes {given} must be distinct and not negative"
        rank = bound.rank(1)
        if self.guards and bound.out_shape is None and rank is not None:
            try:
                broadcast_v0_shape([1] * (rank - len(set(given))), [1] * rank, given, "BroadcastLikeV0")
            except BroadcastError as err:
                return err.detail
        return None

    def rewrite(self, emit: Emitter, bound: Bound) -> None:
        given = _list(bound, 2, "initial_broadcast_axes")
        if given is None:
            like = emit.shape(bound.inputs[1])
            axes_in = deduced_or_given(emit, bound.inputs[0], like, int64_input(emit, bound, 2, "axes"))
            runtime_v0(emit, bound, bound.inputs[0], like, axes_in, self.guards,
                       "arg's shape must equal like_arg's shape without the broadcast axes")
            return
        arg_shape, like_shape = bound.static_shape(0), bound.static_shape(1)
        axes = sorted(like_axes(arg_shape or (), like_shape or (), given))
        if like_shape is not None:
            needs_expand = any(like_shape[a] != 1 for a in axes)
            target = emit.const_i64(like_shape, "like_shape") if needs_expand else None
        else:
            needs_expand = True
            target = emit.shape(bound.inputs[1])
        checked = None
        if self.guards and bound.out_shape is None:
            like = emit.shape(bound.inputs[1])
            if bound.rank(1) is not None:
                kept = emit.const_i64([i for i in range(bound.rank(1)) if i not in set(axes)], "kept_axes")
                required = emit.standard("Gather", [like, kept], None, axis=0)
            else:
                required = emit.standard("Gather", [like, _kept_axes(emit, bound, like, axes)], None, axis=0) \
                    if axes else like
            checked = checked_against_shape(emit, bound, bound.inputs[0], required,
                                            "arg's shape must equal like_arg's shape without the broadcast axes",
                                            target if needs_expand else None)
        _unsqueeze_expand(emit, bound.inputs[0], axes, target, needs_expand, bound.output, like_shape, checked)


def _kept_axes(emit: Emitter, bound: Bound, like: str, axes: list[int]) -> str:
    """The axes of ``like`` (its shape; rank known at run time only) not in ``axes``, after a check that every axis
    lies within that rank."""
    guard = Guard(emit, bound)
    rank = guard.length(like)
    guard.require(guard.op("Greater", rank, guard.i64(max(axes))), "the broadcast axes must lie within like_arg's rank")
    zeros = emit.const_i64([0] * len(axes), "zeros")
    mask = emit.scatter(emit.ones_like_shape(guard.tie(rank)), emit.const_i64(axes, "new_axes"), zeros)
    return emit.nonzero(mask)


def rules(guards: bool) -> list[BroadcastV0Rule | BroadcastLikeV0Rule]:
    return [BroadcastV0Rule(guards), BroadcastLikeV0Rule(guards)]
