"""``onnx-bcast demo``: every bundled model through our ORT ops and the reference evaluator, as one table."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from onnx.reference import ReferenceEvaluator

from onnx_bcast.inputs import random_feeds
from onnx_bcast.models import bundled_models
from onnx_bcast.reference_ops import reference_ops
from onnx_bcast.schemas import DOMAIN
from onnx_bcast.session import InferenceSession, load_model


def _median_ms(fn: Callable[[], object], repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e3)


def run_demo(emit: Callable[[str], None]) -> bool:
    """Print the table; True when every model's outputs are identical across the runners."""
    header = f"{'model':<24} {'our nodes':>9} {'outputs identical':>17} {'ORT run (ms)':>12} {'reference (ms)':>14}"
    emit(header)
    emit("-" * len(header))
    all_ok = True
    for path in bundled_models():
        model = load_model(path)
        ours = sum(1 for n in model.graph.node if n.domain == DOMAIN)
        session = InferenceSession(model)
        reference = ReferenceEvaluator(model, new_ops=reference_ops())
        feeds = random_feeds(session, seed=0)
        got = session.run(None, feeds)
        expected = reference.run(None, feeds)
        identical = all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))
        all_ok &= identical
        ort_ms = _median_ms(lambda s=session, f=feeds: s.run(None, f))
        ref_ms = _median_ms(lambda r=reference, f=feeds: r.run(None, f), repeats=3)
        emit(f"{path.stem:<24} {ours:>9} {'yes' if identical else 'NO':>17} {ort_ms:>12.3f} {ref_ms:>14.3f}")
    return all_ok
