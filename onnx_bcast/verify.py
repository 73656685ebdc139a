"""Equivalence check of a conversion: equal outputs on valid inputs, and failures where the original fails."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import ModelProto
from onnx.reference import ReferenceEvaluator

from onnx_bcast.errors import BroadcastError, VerificationError
from onnx_bcast.model import external_data
from onnx_bcast.model.mapped_weights import mapped_weights
from onnx_bcast.model.walk import all_node_lists
from onnx_bcast.onnx_defs.schemas import DOMAIN
from onnx_bcast.ops import SPEC_BY_NAME
from onnx_bcast.ort.providers import Provider, check_used, choose
from onnx_bcast.ort.session import InferenceSession, ort
from onnx_bcast.random_inputs import random_feeds

logger = logging.getLogger("onnx_bcast.verify")
MAX_INVALID_FEEDS = 24


class InvalidInputs(VerificationError):
    """The original model rejects the inputs of the verification, so there is nothing to compare.

    ``random`` names the inputs that were generated (``seed``), ``cause`` is the original's ``BroadcastError``.
    """

    def __init__(self, cause: BroadcastError, random: list[str], seed: int) -> None:
        self.cause, self.random, self.seed = cause, random, seed
        which = (f"the random input{'s' if len(random) > 1 else ''} {', '.join(map(repr, random))} (seed {seed})"
                 if random else "the given inputs")
        super().__init__(f"the original model rejects {which}, so nothing can be compared: {cause}. Give valid "
                         "inputs as feeds.")


@dataclass
class Verification:
    """What was checked: valid runs compared, and invalid inputs that failed in both models."""

    outputs: int = 0
    invalid_inputs: int = 0
    rounded: int = 0  # outputs equal up to summation-order rounding only (a gradient's float sums)


SUM_ULPS = 64  # summation-order rounding allowed in a float output of a model that sums gradients


def sums_gradients(model: ModelProto) -> bool:
    """Whether ``model`` has a backprop op of ours: its float outputs are sums, whose last bits depend on the order
    in which a runtime adds (numpy's pairwise summation, ORT's ReduceSum)."""
    return any(n.domain == DOMAIN and getattr(SPEC_BY_NAME.get(n.op_type), "family", "") == "backprop"
               for container, _ in all_node_lists(model) for n in container.node)


# standard ops whose float outputs are sums: ONNX Runtime's kernels and numpy (``onnx.reference``) add in other orders
SUMMING_OPS = frozenset({"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "ReduceSum", "ReduceMean",
                         "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "Softmax",
                         "LogSoftmax", "LayerNormalization", "AveragePool", "GlobalAveragePool"})


def sums_floats(model: ModelProto) -> bool:
    """Whether ``model``'s float outputs may hold sums whose last bits depend on the runtime: a gradient of ours
    (``sums_gradients``), or a standard op that sums (``SUMMING_OPS``: ORT and ``onnx.reference`` differ there)."""
    return sums_gradients(model) or any(n.domain in ("", "ai.onnx") and n.op_type in SUMMING_OPS
                                        for container, _ in all_node_lists(model) for n in container.node)


def matches(a: Any, b: Any, sums: bool = False) -> bool:
    """``identical``; with ``sums``, float outputs may also differ by summation-order rounding (``SUM_ULPS`` units
    of the largest magnitude)."""
    if identical(a, b):
        return True
    a, b = np.asarray(a), np.asarray(b)
    if not sums or a.dtype != b.dtype or a.shape != b.shape or a.dtype.kind != "f":
        return False
    wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
    scale = float(np.max(np.abs(wide_a), initial=0.0))
    tolerance = SUM_ULPS * float(np.finfo(a.dtype).eps) * max(scale, 1.0)
    same_nan = np.array_equal(np.isnan(wide_a), np.isnan(wide_b))
    return same_nan and bool(np.all(np.abs(np.nan_to_num(wide_a - wide_b)) <= tolerance))


def identical(a: Any, b: Any) -> bool:
    """Same dtype, shape and bytes (strings compared as values)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.hasobject:
        return a.tolist() == b.tolist()
    return a.tobytes() == b.tobytes()


def verify_equal(original: ModelProto, converted: ModelProto, feeds: dict[str, np.ndarray] | None = None,
                 seed: int = 0, check_failures: bool = True, shapes: dict[str, list[int]] | None = None,
                 providers: Sequence[Provider] | None = None, ep_libraries: Sequence[str | os.PathLike] = ()
                 ) -> Verification:
    """Raise VerificationError unless both models give identical outputs on ``feeds`` (the inputs not in it
    generated from ``seed``, of ``shapes`` where given; a gradient's float sums may differ by summation-order
    rounding: ``matches``), and (with ``check_failures``) the converted model fails, in ORT and in
    ``onnx.reference``, on every variant of them that the original rejects. Inputs the original rejects raise
    ``InvalidInputs``. The converted model runs on ``providers`` (default: the CPU; ``ep_libraries``: plugin EP
    libraries, as ``InferenceSession`` takes them), the original on the CPU with our numpy kernels."""
    ours = InferenceSession(original)
    options = ort.SessionOptions()
    options.log_severity_level = 4  # runs on invalid inputs fail by design: no error log for them
    chosen = choose(providers, options, ep_libraries)
    plain = external_data.ort_session(
        lambda source, opts: ort.InferenceSession(source, opts, providers=chosen), converted, options)
    check_used(providers, plain.get_providers())
    given = feeds or {}
    feeds = random_feeds(ours, seed, given, shapes)
    generated = [name for name in feeds if name not in given]
    logger.info("verifying on inputs %s", ", ".join(
        f"{name} {list(np.shape(value))}{' (random)' if name in generated else ''}" for name, value in feeds.items()))
    try:
        expected = ours.run(None, feeds)
    except BroadcastError as err:
        raise InvalidInputs(err, generated, seed) from err
    got = plain.run(None, feeds)
    names = [o.name for o in ours.get_outputs()]
    sums, rounded = sums_gradients(original), 0
    for name, want, have in zip(names, expected, got, strict=True):
        if identical(want, have):
            continue
        if not matches(want, have, sums):
            want, have = np.asarray(want), np.asarray(have)
            raise VerificationError(f"output {name!r} differs: original {want.dtype} {list(want.shape)}, "
                                    f"converted {have.dtype} {list(have.shape)}")
        rounded += 1
    report = Verification(outputs=len(names), rounded=rounded)
    reference = None
    for variant, what in invalid_variants(ours, feeds) if check_failures else ():
        try:
            ours.run(None, variant)
            continue  # still valid: nothing to compare about failing
        except BroadcastError:
            pass
        except Exception:  # refused for another reason (e.g. ORT's input checks): not a broadcast to compare
            continue
        reference = reference or _reference_run(converted)
        for runner, run in (("onnxruntime", plain.run), ("onnx.reference", reference)):
            try:
                run(None, variant)
            except Exception:  # failing is what we check: any error, and no value
                continue
            raise VerificationError(f"the original rejects {what}, but the converted model returns a value in "
                                    f"{runner} (convert with guards)")
        report.invalid_inputs += 1
    return report


def _reference_run(model: ModelProto) -> Callable[[None, dict[str, np.ndarray]], list]:
    """``onnx.reference``'s run of ``model``, its external weights fed as memory maps (never read into memory)."""
    graph, weights = mapped_weights(model)
    evaluator = ReferenceEvaluator(graph)
    return lambda outputs, feeds: evaluator.run(outputs, {**feeds, **weights})


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
