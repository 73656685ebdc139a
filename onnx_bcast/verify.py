"""Equivalence check of a conversion: the original through our ORT ops, the converted model through plain ORT."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import ModelProto

from onnx_bcast.errors import BroadcastError
from onnx_bcast.inputs import random_feeds
from onnx_bcast.session import InferenceSession


class VerificationError(ValueError):
    """The converted model does not reproduce the original's outputs bit for bit."""


def identical(a: Any, b: Any) -> bool:
    """Same dtype, shape and bytes (strings compared as values)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.hasobject:
        return a.tolist() == b.tolist()
    return a.tobytes() == b.tobytes()


def verify_equal(original: ModelProto, converted: ModelProto, feeds: dict[str, np.ndarray] | None = None,
                 seed: int = 0) -> None:
    """Raise VerificationError unless both models give identical outputs on ``feeds`` (generated if None)."""
    ours = InferenceSession(original)
    plain = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
    if feeds is None:
        feeds = random_feeds(ours, seed)
    try:
        expected = ours.run(None, feeds)
    except BroadcastError as err:
        raise VerificationError(f"the generated inputs are not valid for the original model ({err}); "
                                "give inputs that are") from err
    got = plain.run(None, feeds)
    names = [o.name for o in ours.get_outputs()]
    for name, want, have in zip(names, expected, got, strict=True):
        if not identical(want, have):
            want, have = np.asarray(want), np.asarray(have)
            raise VerificationError(f"output {name!r} differs: original {want.dtype} {list(want.shape)}, "
                                    f"converted {have.dtype} {list(have.shape)}")
