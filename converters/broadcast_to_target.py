"""Broadcast/Expand in numpy, bidirectional and pdpd modes: ``Expand(data, target_shape)``.

For valid inputs all three equal ONNX's bidirectional ``Expand``: numpy's output is the target itself; pdpd's
data must reach the target's last axis, so aligning it at ``axis`` is the same right alignment.
"""

from __future__ import annotations

from onnx_bcast.converters.emit import Emitter
from onnx_bcast.converters.facts import NodeFacts
from onnx_bcast.converters.shape_inputs import int64_input


class ExpandToTarget:
    """``Broadcast<mode=numpy|bidirectional|pdpd>(x, s) -> Expand(x, s)``, or ``Identity(x)`` when it is a no-op."""

    def __init__(self, op: str, mode: str) -> None:
        self.op = op
        self.mode = mode

    def rewrite(self, emit: Emitter, facts: NodeFacts, out_shape: tuple[int, ...] | None) -> None:
        data_shape = facts.static_shape(0)
        if out_shape is not None and data_shape == out_shape:
            emit.identity(facts.inputs[0], facts.output)
            return
        emit.expand(facts.inputs[0], int64_input(emit, facts, 1, "target_shape"), facts.output, out_shape)


RULES = [ExpandToTarget(op, mode) for op in ("Broadcast", "Expand") for mode in ("numpy", "bidirectional", "pdpd")]
