"""Shape-like inputs as int64 tensors: folded to a constant when known, cast at run time otherwise."""

from __future__ import annotations

from onnx_bcast.converters.emit import Emitter
from onnx_bcast.converters.facts import NodeFacts


def int64_input(emit: Emitter, facts: NodeFacts, index: int, hint: str) -> str:
    """Input ``index`` as an int64 tensor name: itself when int64, else folded or cast."""
    if facts.is_int64(index):
        return facts.inputs[index]
    values = facts.ints(index)
    if values is not None:
        return emit.const_i64(values, hint)
    return emit.cast_i64(facts.inputs[index])
