"""``convert``: a standard-ONNX equivalent of a model: the lowering pass with the standard-ONNX rule set."""

from __future__ import annotations

import os

import numpy as np
from onnx import ModelProto

from onnx_bcast.converters import BARE, STANDARD
from onnx_bcast.lowering.engine import Lowered, Progress, lower
from onnx_bcast.model.files import load_model


def convert_with_report(model: str | os.PathLike | bytes | ModelProto, *, opset: int | None = None,
                        guards: bool = True, progress: Progress | None = None) -> tuple[ModelProto, Lowered]:
    """``convert`` that also says what it rewrote (``progress(done, total)`` every thousand nodes of ours)."""
    lowered = lower(load_model(model), STANDARD if guards else BARE, opset=opset, progress=progress)
    return lowered.model, lowered


def convert(model: str | os.PathLike | bytes | ModelProto, *, opset: int | None = None, verify: bool = False,
            feeds: dict[str, np.ndarray] | None = None, guards: bool = True) -> ModelProto:
    """A standard-ONNX equivalent with no onnx_bcast node left (subgraphs and functions included).

    With ``guards`` (the default), every error condition of the ops' rules (docs/ops.md) that is not proven
    statically is checked at run time in standard ONNX, so the converted model fails where the original fails;
    ``guards=False`` drops them.

    ``verify=True`` runs both models (ours through ``InferenceSession``, the result through plain ORT) on
    ``feeds`` or generated inputs and raises ``VerificationError`` unless every output is bit-identical and (with
    guards) the converted model also fails, in ORT and ``onnx.reference``, on variants of them the original rejects.
    """
    source = load_model(model)
    converted, _ = convert_with_report(source, opset=opset, guards=guards)
    if verify:
        from onnx_bcast.verify import verify_equal  # runs onnxruntime: imported only when asked to

        verify_equal(source, converted, feeds, check_failures=guards)
    return converted
