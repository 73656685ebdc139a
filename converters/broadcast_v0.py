"""nGraph BroadcastV0 and BroadcastLikeV0: ``Unsqueeze`` on the new axes, then ``Expand``."""

from __future__ import annotations

from onnx_bcast.converters.emit import Emitter
from onnx_bcast.converters.facts import NodeFacts

from onnx_bcast.errors import BroadcastError
from onnx_bcast.ops.broadcast_v0 import like_axes


def _unsqueeze_expand(emit: Emitter, data: str, axes: list[int], shape: str | None,
                      needs_expand: bool, output: str, static_out: tuple[int, ...] | None) -> None:
    if not axes and not needs_expand:
        emit.identity(data, output)
        return
    if not needs_expand:
        emit.unsqueeze(data, axes, output)
        return
    leading = axes == list(range(len(axes)))  # Expand right-aligns: leading new axes need no Unsqueeze
    aligned = emit.unsqueeze(data, axes) if axes and not leading else data
    emit.expand(aligned, shape, output, static_out)


class BroadcastV0Rule:
    """``BroadcastV0(x, shape, axes) -> Expand(Unsqueeze(x, axes), shape)``; ``Identity`` without axes."""

    op, mode = "BroadcastV0", ""

    def rewrite(self, emit: Emitter, facts: NodeFacts, out_shape: tuple[int, ...] | None) -> None:
        shape = tuple(int(v) for v in facts.attrs["shape"])
        axes = sorted(int(a) for a in facts.attrs["broadcast_axes"])
        needs_expand = any(shape[a] != 1 for a in axes)
        target = None
        if needs_expand:  # the ORT form carries the shape as input 1 too: reuse it when it says the same
            given = facts.ints(1) if len(facts.inputs) > 1 and facts.is_int64(1) else None
            target = facts.inputs[1] if given == shape else emit.const_i64(shape, "shape")
        _unsqueeze_expand(emit, facts.inputs[0], axes, target, needs_expand, facts.output, shape)


class BroadcastLikeV0Rule:
    """``BroadcastLikeV0(x, like) -> Expand(Unsqueeze(x, axes), Shape(like))`` with axes given or deduced."""

    op, mode = "BroadcastLikeV0", ""

    def rewrite(self, emit: Emitter, facts: NodeFacts, out_shape: tuple[int, ...] | None) -> None:
        given = tuple(int(a) for a in facts.attrs["initial_broadcast_axes"])
        arg_shape, like_shape = facts.static_shape(0), facts.static_shape(1)
        if not given and (arg_shape is None or like_shape is None):
            raise BroadcastError(self.op, "", "cannot convert: broadcast axes are deduced from the shapes of arg and "
                                              "like_arg, which are not statically known; set initial_broadcast_axes",
                                 facts.name)
        axes = sorted(like_axes(arg_shape or (), like_shape or (), given))
        if like_shape is not None:
            needs_expand = any(like_shape[a] != 1 for a in axes)
            target = emit.const_i64(like_shape, "like_shape") if needs_expand else None
        else:
            needs_expand = True
            target = emit.shape(facts.inputs[1])
        _unsqueeze_expand(emit, facts.inputs[0], axes, target, needs_expand, facts.output, like_shape)


RULES = [BroadcastV0Rule(), BroadcastLikeV0Rule()]
