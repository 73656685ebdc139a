"""``prepare``: the form our ONNX Runtime kernels run: the lowering pass with the ONNX Runtime rule set."""

from __future__ import annotations

import os

from onnx import ModelProto

from onnx_bcast.lowering.engine import lower
from onnx_bcast.model.files import load_model
from onnx_bcast.ort.graph_outputs import write_outputs_directly
from onnx_bcast.ort.rule_set import ort_rule_set


def prepare(model: str | os.PathLike | bytes | ModelProto, *, quiet: bool = False,
            max_output_bytes: int | None = None, direct_outputs: bool = False) -> ModelProto:
    """A copy of ``model`` (a ModelProto, a path or serialized bytes, as ``convert`` takes) whose onnx_bcast nodes
    run in ONNX Runtime with ``session_options()``.

    A kernel error fails the run with an ORT error and is logged (logger ``onnx_bcast.ort``); with ``quiet``
    it is only recorded, for a caller that raises it (``InferenceSession``). ``max_output_bytes`` limits every
    broadcast output (default: ``ONNX_BCAST_MAX_OUTPUT_BYTES``, else half of the machine's memory).
    ``direct_outputs`` (``InferenceSession``'s form): kernels write unread graph outputs themselves.
    """
    prepared = lower(load_model(model), ort_rule_set(bool(quiet), max_output_bytes)).model
    if direct_outputs:  # a kernel writes a graph output itself (no copy after it): only for a model no optimizer sees,
        write_outputs_directly(prepared)  # since its check then is a dead end they delete (tests/test_sound_guards.py)
    return prepared
