"""Soak test: one onnx_bcast.InferenceSession, 8 threads x 2,000 runs mixing valid and invalid run-time shapes.

The model is the bundled ``nchw_bias_explicit`` with its target_shape made a graph input, so a run can be invalid:
``biased = features + Broadcast<explicit>(bias, target_shape, axes_mapping=[1])``. Reports wrong results, leaked
errors (raised in a valid call, or missing or someone else's in an invalid one), resident memory growth after a
warm-up, and the time; exits 1 on any failure.

    python bench/soak.py [--threads 8] [--runs 2000] [--invalid-share 0.25] [--max-rss-growth 0.05]
"""

from __future__ import annotations

import argparse
import gc
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast
from onnx_bcast.models import MODELS_DIR
from onnx_bcast.ort.process_state import state

CHANNELS = 16
SIZES = ((50, 50), (32, 40), (7, 9), (1, 1), (0, 5))


def build_model() -> onnx.ModelProto:
    """The bundled nchw_bias_explicit with its target_shape initializer made a graph input (dims H, W free)."""
    model = onnx.load(str(MODELS_DIR / "nchw_bias_explicit.onnx"))
    graph = model.graph
    kept = [t for t in graph.initializer if t.name != "target_shape"]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    graph.input.append(helper.make_tensor_value_info("target_shape", TensorProto.INT64, [4]))
    for value in (graph.input[0], graph.output[0]):
        value.CopyFrom(helper.make_tensor_value_info(value.name, TensorProto.FLOAT, [1, CHANNELS, None, None]))
    return model


def rss_bytes() -> int:
    """Resident set size of this process (VmRSS in /proc/self/status)."""
    with open("/proc/self/status", encoding="ascii") as file:
        for line in file:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


@dataclass
class Tally:
    """What the threads saw."""

    valid: int = 0
    invalid: int = 0
    wrong_results: list[str] = field(default_factory=list)
    leaked_errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, count: int = 1) -> None:
        with self.lock:
            setattr(self, kind, getattr(self, kind) + count)


INVALID_TARGETS = (  # (target for features of (h, w), a fragment its error must contain)
    (lambda h, w: [1, CHANNELS + 1, h, w], lambda h, w: f"target ({1}, {CHANNELS + 1}, {h}, {w})"),
    (lambda h, w: [1, CHANNELS, -h - 1, w], lambda h, w: f"negative ({-h - 1})"),
)


def worker(session: onnx_bcast.InferenceSession, bias: np.ndarray, thread: int, runs: int, invalid_share: float,
           tally: Tally) -> None:
    rng = np.random.default_rng(thread)
    for run in range(runs):
        h, w = SIZES[(thread + run) % len(SIZES)]
        features = rng.standard_normal((1, CHANNELS, h, w)).astype(np.float32)
        invalid = rng.random() < invalid_share
        if invalid:
            make_target, fragment = INVALID_TARGETS[run % len(INVALID_TARGETS)]
            target, expected_text = make_target(h, w), fragment(h, w)
        else:
            target, expected_text = [1, CHANNELS, h, w], ""
        feeds = {"features": features, "target_shape": np.array(target, np.int64)}
        try:
            out = session.run(None, feeds)[0]
        except onnx_bcast.BroadcastError as err:
            if not invalid:
                tally.leaked_errors.append(f"thread {thread} run {run}: valid call raised {err}")
            elif expected_text not in str(err) or "bias_broadcast" not in str(err):
                tally.leaked_errors.append(f"thread {thread} run {run}: wrong error {err} (wanted {expected_text})")
            tally.add("invalid")
            continue
        if invalid:
            tally.leaked_errors.append(f"thread {thread} run {run}: invalid target {target} gave no error")
            continue
        tally.add("valid")
        if not np.array_equal(out, features + bias.reshape(1, CHANNELS, 1, 1)):
            tally.wrong_results.append(f"thread {thread} run {run}: wrong values for {features.shape}")


def run_threads(session: onnx_bcast.InferenceSession, bias: np.ndarray, threads: int, runs: int,
                invalid_share: float, tally: Tally) -> None:
    pool = [threading.Thread(target=worker, args=(session, bias, i, runs, invalid_share, tally))
            for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--runs", type=int, default=2000, help="runs per thread")
    parser.add_argument("--warmup", type=int, default=200, help="warm-up runs per thread before the RSS baseline")
    parser.add_argument("--invalid-share", type=float, default=0.25)
    parser.add_argument("--max-rss-growth", type=float, default=0.05)
    args = parser.parse_args(argv)
    model = build_model()
    bias = next(numpy_helper.to_array(t) for t in model.graph.initializer if t.name == "bias")
    session = onnx_bcast.InferenceSession(model)
    run_threads(session, bias, args.threads, args.warmup, args.invalid_share, Tally())
    gc.collect()  # exceptions hold reference cycles (traceback <-> frame): count live memory, not garbage
    rss_before = rss_bytes()
    tally = Tally()
    start = time.perf_counter()
    run_threads(session, bias, args.threads, args.runs, args.invalid_share, tally)
    elapsed = time.perf_counter() - start
    gc.collect()
    rss_after = rss_bytes()
    growth = (rss_after - rss_before) / rss_before
    left = len(state().errors)
    for line in (tally.wrong_results + tally.leaked_errors)[:20]:
        print(line)
    kinds = Counter(line.split(":")[1].strip().split()[0] for line in tally.leaked_errors)
    print(f"threads {args.threads} x runs {args.runs}: valid {tally.valid}, invalid {tally.invalid}; "
          f"wrong results {len(tally.wrong_results)}; leaked errors {len(tally.leaked_errors)} {dict(kinds)}; "
          f"errors left recorded {left}; RSS {rss_before / 2**20:.1f} MiB -> {rss_after / 2**20:.1f} MiB "
          f"({growth:+.2%}); elapsed {elapsed:.1f} s ({elapsed / (args.threads * args.runs) * 1e6:.0f} µs/run)")
    ok = not tally.wrong_results and not tally.leaked_errors and left == 0 and growth < args.max_rss_growth
    ok = ok and tally.valid + tally.invalid == args.threads * args.runs
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
