"""Broadcast/Expand in numpy, bidirectional and pdpd modes: ``Expand(data, target_shape)``.

For valid inputs all three equal ONNX's bidirectional ``Expand``: numpy's output is the target itself; pdpd's
data must reach the target's last axis, so aligning it at ``axis`` is the same right alignment.
"""

from __future__ import annotations

from onnx_bcast.converters.mode_guards import checked_target
from onnx_bcast.converters.shape_inputs import int64_input
from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.ops.broadcast_modes import BROADCAST_MODES


class ExpandToTarget:
    """``Broadcast<mode=numpy|bidirectional|pdpd>(x, s) -> Expand(x, s)``, or ``Identity(x)`` when it is a no-op.

    With guards and an output shape not known statically, ``s`` passes the mode's run-time checks first.
    """

    def __init__(self, op: str, mode: str, guards: bool = True) -> None:
        self.op = op
        self.mode = mode
        self.guards = guards

    def check(self, bound: Bound) -> str | None:
        return None

    def rewrite(self, emit: Emitter, bound: Bound) -> None:
        out_shape = bound.out_shape
        if out_shape is not None and bound.static_shape(0) == out_shape:
            emit.identity(bound.inputs[0], bound.output)
            return
        data, target = bound.inputs[0], int64_input(emit, bound, 1, "target_shape")
        if self.guards and out_shape is None:
            data, target, zero_ends = checked_target(emit, bound, data, target)
            # (bidirectional: the Expand checks its own rule, so it must see the target's 0s: ``Guard.tie_expand``)
            emit.expand(data, target, bound.output, out_shape,
                        shape_values=None if self.mode == "bidirectional" else bound.ints(1), zero_ends=zero_ends)
        else:
            emit.expand(data, target, bound.output, out_shape, shape_values=bound.ints(1))


def rules(guards: bool) -> list[ExpandToTarget]:
    return [ExpandToTarget(op, mode.name, guards) for op in ("Broadcast", "Expand")
            for mode in BROADCAST_MODES if not mode.uses_axes_mapping]
