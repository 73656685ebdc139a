"""Shape-like inputs as int64 tensors: folded to a constant when known, cast at run time otherwise."""

from __future__ import annotations

from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter


def int64_input(emit: Emitter, bound: Bound, index: int, hint: str) -> str:
    """Input ``index`` as an int64 tensor name: itself when int64, else folded or cast."""
    if bound.is_int64(index):
        return bound.inputs[index]
    values = bound.ints(index)
    if values is not None:
        return emit.const_i64(values, hint)
    return emit.cast_i64(bound.inputs[index])
