"""``onnx-bcast demo``: every bundled model run with our ORT ops, converted, and the conversion verified."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from onnx.reference import ReferenceEvaluator

from onnx_bcast.convert import convert_with_report
from onnx_bcast.model.files import load_model
from onnx_bcast.model.walk import all_node_lists
from onnx_bcast.models import bundled_models
from onnx_bcast.onnx_defs.schemas import DOMAIN
from onnx_bcast.ort.session import InferenceSession, ort
from onnx_bcast.random_inputs import random_feeds
from onnx_bcast.verify import matches, sums_floats, sums_gradients


def _median_ms(fn: Callable[[], object], repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e3)


def run_demo(emit: Callable[[str], None]) -> bool:
    """Print the table; True when, for every model, all runners give identical outputs."""
    header = (f"{'model':<20} {'our nodes':>9} {'rewritten':>9} {'outputs identical':>17} "
              f"{'custom-op run (ms)':>18} {'converted run (ms)':>18}")
    emit(header)
    emit("-" * len(header))
    all_ok = True
    for path in bundled_models():
        model = load_model(path)
        ours = sum(1 for c, _ in all_node_lists(model) for n in c.node if n.domain == DOMAIN)
        converted, report = convert_with_report(model)
        custom = InferenceSession(model)
        plain = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
        feeds = random_feeds(custom, seed=0)
        expected = custom.run(None, feeds)
        # plain ORT adds a standard op's floats as our session does; onnx.reference (numpy) may not
        others = [(plain.run(None, feeds), sums_gradients(model)),
                  (ReferenceEvaluator(converted).run(None, feeds), sums_floats(model))]
        same = all(matches(a, b, sums) for other, sums in others for a, b in zip(expected, other, strict=True))
        all_ok &= same
        custom_ms = _median_ms(lambda s=custom, f=feeds: s.run(None, f))
        plain_ms = _median_ms(lambda s=plain, f=feeds: s.run(None, f))
        emit(f"{path.stem:<20} {ours:>9} {sum(report.rewritten.values()):>9} {'yes' if same else 'NO':>17} "
             f"{custom_ms:>18.3f} {plain_ms:>18.3f}")
    emit("outputs identical: onnx-bcast's ORT ops = converted model in plain ORT = converted model in "
         "onnx.reference, bit for bit (float sums: up to summation-order rounding)")
    return all_ok
