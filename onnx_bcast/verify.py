"""Equivalence check of a conversion: equal outputs on valid inputs, and failures where the original fails."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import ModelProto
from onnx.reference import ReferenceEvaluator

from onnx_bcast.errors import BroadcastError
from onnx_bcast.inputs import random_feeds
from onnx_bcast.session import InferenceSession

logger = logging.getLogger("onnx_bcast.verify")
MAX_INVALID_FEEDS = 24


class VerificationError(ValueError):
    """The converted model does not reproduce the original's outputs bit for bit, or returns a value where the
    original fails."""


@dataclass
class Verification:
    """What was checked: valid runs compared, and invalid inputs that failed in both models."""

    outputs: int = 0
    invalid_inputs: int = 0


def identical(a: Any, b: Any) -> bool:
    """Same dtype, shape and bytes (strings compared as values)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.hasobject:
        return a.tolist() == b.tolist()
    return a.tobytes() == b.tobytes()


def verify_equal(original: ModelProto, converted: ModelProto, feeds: dict[str, np.ndarray] | None = None,
                 seed: int = 0, check_failures: bool = True) -> Verification:
    """Raise VerificationError unless both models give identical outputs on ``feeds`` (generated if None), and (with
    ``check_failures``) the converted model fails, in ORT and in ``onnx.reference``, on every variant of them that
    the original rejects."""
    ours = InferenceSession(original)
    options = ort.SessionOptions()
    options.log_severity_level = 4  # runs on invalid inputs fail by design: no error log for them
    plain = ort.InferenceSession(converted.SerializeToString(), options, providers=["CPUExecutionProvider"])
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
    report = Verification(outputs=len(names))
    reference = None
    for variant, what in invalid_variants(ours, feeds) if check_failures else ():
        try:
            ours.run(None, variant)
            continue  # still valid: nothing to compare about failing
        except BroadcastError:
            pass
        except Exception:  # refused for another reason (e.g. ORT's input checks): not a broadcast to compare
            continue
        reference = reference or ReferenceEvaluator(converted)
        for runner, run in (("onnxruntime", plain.run), ("onnx.reference", reference.run)):
            try:
                run(None, variant)
            except Exception:  # failing is what we check: any error, and no value
                continue
            raise VerificationError(f"the original rejects {what}, but the converted model returns a value in "
                                    f"{runner} (convert with guards)")
        report.invalid_inputs += 1
    return report


def invalid_variants(session: Any, feeds: dict[str, np.ndarray]) -> Iterator[tuple[dict[str, np.ndarray], str]]:
    """Variants of ``feeds`` likely to break a broadcast: shape-like integer inputs and dynamic dims changed."""
    count = 0
    for meta in session.get_inputs():
        value = feeds[meta.name]
        variants: list[tuple[np.ndarray, str]] = []
        if value.ndim == 1 and value.dtype.kind in "iu":
            for k in range(value.size):
                for new in (value[k] + 1, value[k] + 2, 1, -1):
                    changed = value.copy()
                    changed[k] = new
                    variants.append((changed, f"{meta.name}[{k}] = {new}"))
            if not isinstance(meta.shape[0], int):  # its length is free too
                if value.size:
                    variants.append((value[1:], f"{meta.name} without its first value"))
                variants.append((np.concatenate([np.array([2], value.dtype), value]), f"2 before {meta.name}"))
        else:
            for axis, dim in enumerate(meta.shape):
                if not isinstance(dim, int) or dim < 0:  # a dynamic dim: another size
                    shape = list(value.shape)
                    shape[axis] += 1
                    variants.append((np.resize(value, shape), f"{meta.name} with dim {axis} of size {shape[axis]}"))
        for changed, what in variants:
            if count >= MAX_INVALID_FEEDS:
                return
            count += 1
            yield dict(feeds, **{meta.name: changed}), what
