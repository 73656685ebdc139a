"""Benchmark onnx-bcast's ORT `Broadcast` op against ORT's native Expand, as same-run ratios."""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

MIB = 1024 * 1024
# goals (the README's), as ratios to native Expand in the same run: (column, kind of case) -> at most this
GOALS = {("ours", "tiny"): 3.0, ("ours", "large"): 2.0, ("native backend", "tiny static"): 1.1,
         ("native backend", "tiny"): 1.5, ("native backend", "large"): 1.05}
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]
COLUMNS = ("native", "ours", "native backend", "plain")


def import_onnx_bcast() -> ModuleType:
    """onnx_bcast from the environment, else from the checkout this script lives in."""
    try:
        import onnx_bcast
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        import onnx_bcast
    return onnx_bcast


@dataclass
class Case:
    """One benchmark shape: inputs, the two models, and how many rounds x calls to time."""

    name: str
    data_shape: tuple[int, ...]
    target: tuple[int, ...]
    axes: tuple[int, ...] | None  # explicit mode when given
    rounds: int
    calls: int
    tiny: bool = False
    large: bool = False
    static: bool = False  # the target is a constant (an initializer), not a graph input
    per_call_us: dict[str, list[float]] = field(default_factory=dict)

    @property
    def out_bytes(self) -> int:
        return int(np.prod(self.target)) * 4

    def feed(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        feed = {"x": rng.standard_normal(self.data_shape).astype(np.float32)}
        if not self.static:
            feed["s"] = np.array(self.target, dtype=np.int64)
        if self.axes is not None:
            feed["a"] = np.array(self.axes, dtype=np.int64)
        return feed


def _tensor(name: str, elem: int, shape: list[Any]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], rank: int,
           initializers: list[onnx.TensorProto] | None = None) -> onnx.ModelProto:
    out = _tensor("y", TensorProto.FLOAT, [f"o{i}" for i in range(rank)])
    graph = helper.make_graph(nodes, "bench", inputs, [out], initializer=initializers or [])
    model = helper.make_model(graph, opset_imports=OPSETS, ir_version=10)
    onnx.checker.check_model(model)
    return model


def _inputs(case: Case) -> tuple[list[onnx.ValueInfoProto], list[onnx.TensorProto]]:
    """The data input, and the target as a graph input (run time) or an initializer (static)."""
    inputs = [_tensor("x", TensorProto.FLOAT, list(case.data_shape))]
    if case.static:
        return inputs, [numpy_helper.from_array(np.array(case.target, dtype=np.int64), "s")]
    return inputs + [_tensor("s", TensorProto.INT64, [len(case.target)])], []


def ours_model(case: Case) -> onnx.ModelProto:
    """`Broadcast` of domain onnx_bcast with runtime target shape (and axes_mapping in explicit mode)."""
    inputs, inits = _inputs(case)
    if case.axes is None:
        node = helper.make_node("Broadcast", ["x", "s"], ["y"], domain="onnx_bcast", mode="numpy")
    else:
        inputs.append(_tensor("a", TensorProto.INT64, [len(case.axes)]))
        node = helper.make_node("Broadcast", ["x", "s", "a"], ["y"], domain="onnx_bcast", mode="explicit")
    return _model([node], inputs, len(case.target), inits)


def native_model(case: Case) -> onnx.ModelProto:
    """Standard ONNX: Expand (numpy mode), or Unsqueeze of the non-mapped axes + Expand (explicit mode)."""
    inputs, inits = _inputs(case)
    if case.axes is None:
        return _model([helper.make_node("Expand", ["x", "s"], ["y"])], inputs, len(case.target), inits)
    new_axes = [i for i in range(len(case.target)) if i not in case.axes]
    init = numpy_helper.from_array(np.array(new_axes, dtype=np.int64), "new_axes")
    nodes = [helper.make_node("Unsqueeze", ["x", "new_axes"], ["xu"]),
             helper.make_node("Expand", ["xu", "s"], ["y"])]
    return _model(nodes, inputs, len(case.target), [init, *inits])


def make_cases(quick: bool) -> list[Case]:
    """The benchmark cases; --quick shrinks rounds and calls, never the shapes."""
    def n(default: int, smoke: int) -> int:
        return smoke if quick else default

    return [
        Case("tiny [3] -> [2,3], static target", (3,), (2, 3), None, n(21, 5), n(1000, 500), tiny=True,
             static=True),
        Case("tiny [3] -> [2,3], run-time target", (3,), (2, 3), None, n(21, 5), n(1000, 500), tiny=True),
        Case("explicit [16] -> [1,16,50,50] axes [1]", (16,), (1, 16, 50, 50), (1,), n(21, 5), n(500, 200)),
        Case("mid [1,512] -> [512,512]", (1, 512), (512, 512), None, n(21, 5), n(200, 50)),
        Case("mid column [512,1] -> [512,512]", (512, 1), (512, 512), None, n(21, 5), n(200, 50)),
        Case("64 MiB row [1,4096] -> [4096,4096]", (1, 4096), (4096, 4096), None, n(25, 5), n(5, 3), large=True),
        Case("64 MiB column [4096,1] -> [4096,4096]", (4096, 1), (4096, 4096), None, n(25, 5), n(5, 3),
             large=True),
    ]


def time_block(run: Callable[[], Any], calls: int) -> float:
    """Mean microseconds per call over ``calls`` back-to-back calls."""
    start = time.perf_counter_ns()
    for _ in range(calls):
        run()
    return (time.perf_counter_ns() - start) / calls / 1000.0


def measure(case: Case, runners: dict[str, Callable[[], Any]], warmup_calls: int) -> None:
    """Interleaved rounds: each round times a block per runner, in an order rotated every round."""
    for run in runners.values():
        for _ in range(warmup_calls):
            run()
    names = list(runners)
    case.per_call_us = {name: [] for name in names}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(case.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            if r % 2:
                order.reverse()
            for name in order:
                case.per_call_us[name].append(time_block(runners[name], case.calls))
    finally:
        if gc_was_enabled:
            gc.enable()


def ratios(case: Case, column: str) -> list[float]:
    """Per round: this column's per-call time over native's in the same round."""
    return [a / b for a, b in zip(case.per_call_us[column], case.per_call_us["native"], strict=True)]


def ratio(case: Case, column: str) -> float:
    """Median over rounds of this column's per-call time over native's in the same round."""
    return statistics.median(ratios(case, column))


def fmt_ratio(case: Case, column: str) -> str:
    """The median ratio with the range of the per-round ratios, which shows how noisy the run was."""
    values = ratios(case, column)
    return f"{ratio(case, column):.2f}x ({min(values):.2f}-{max(values):.2f})"


def added_us(case: Case, column: str) -> float:
    """Median over rounds of this column's per-call time minus native's in the same round."""
    return statistics.median(a - b for a, b in zip(case.per_call_us[column], case.per_call_us["native"], strict=True))


def median_us(case: Case, column: str) -> float:
    return statistics.median(case.per_call_us[column])


def load_average() -> str:
    """The 1-minute load average (the machine is shared), or 'n/a'."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "n/a"


def fmt_us(us: float) -> str:
    if us >= 10_000:
        return f"{us / 1000:.1f} ms"
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.1f} µs"


def fmt_size(nbytes: int) -> str:
    return f"{nbytes / MIB:.0f} MiB" if nbytes >= MIB else f"{nbytes / 1024:.1f} KiB" if nbytes >= 1024 else \
        f"{nbytes} B"


def print_table(cases: list[Case]) -> None:
    print("| case | output | rounds x calls | native Expand / call | ours (numpy backend) / native (range) | "
          "native backend / native (range) | plain ORT on prepare() / native (range) | ours added / call |")
    print("|---|---|---|---|---|---|---|---|")
    for case in cases:
        cells = [case.name, fmt_size(case.out_bytes), f"{case.rounds} x {case.calls}",
                 fmt_us(median_us(case, "native")), f"**{fmt_ratio(case, 'ours')}**",
                 f"**{fmt_ratio(case, 'native backend')}**", fmt_ratio(case, "plain"),
                 f"{added_us(case, 'ours'):+.1f} µs"]
        print("| " + " | ".join(cells) + " |")


def _kind(case: Case) -> str:
    return "large" if case.large else "tiny static" if case.tiny and case.static else "tiny" if case.tiny else ""


def print_goals(cases: list[Case]) -> bool:
    """One line per goal (a ratio to native Expand in the same run); True when all hold."""
    all_hold = True
    for case in cases:
        for column in ("ours", "native backend"):
            goal = GOALS.get((column, _kind(case)))
            if goal is None and column == "ours" and _kind(case) == "tiny static":
                goal = GOALS[("ours", "tiny")]
            if goal is None:
                continue
            value = ratio(case, column)
            holds = value <= goal
            print(f"- goal {column} / native <= {goal:g}x ({case.name}): {value:.2f}x -> "
                  + ("HOLDS" if holds else f"FAILS ({value / goal:.2f} times the goal)"))
            all_hold &= holds
    return all_hold


def build_runners(case: Case, onnx_bcast: ModuleType, rng: np.random.Generator) -> dict[str, Callable[[], Any]]:
    """One zero-argument call per column, after checking all three give the same output."""
    ours = ours_model(case)
    native_opts = ort.SessionOptions()
    sessions: dict[str, ort.InferenceSession] = {
        "native": ort.InferenceSession(native_model(case).SerializeToString(), sess_options=native_opts,
                                       providers=["CPUExecutionProvider"]),
        "ours": onnx_bcast.InferenceSession(ours),
        "native backend": onnx_bcast.InferenceSession(ours, backend="native"),
        "plain": ort.InferenceSession(onnx_bcast.prepare(ours).SerializeToString(),
                                      sess_options=onnx_bcast.session_options(),
                                      providers=["CPUExecutionProvider"]),
    }
    feed = case.feed(rng)
    native_feed = {k: v for k, v in feed.items() if k != "a"}
    feeds = {"native": native_feed, "ours": feed, "native backend": feed, "plain": feed}
    expected = sessions["native"].run(None, native_feed)[0]
    for name in ("ours", "native backend", "plain"):
        got = sessions[name].run(None, feed)[0]
        if got.shape != expected.shape or not np.array_equal(got, expected):
            raise SystemExit(f"{case.name}: {name} output differs from native ({got.shape} vs {expected.shape})")

    def runner(name: str) -> Callable[[], Any]:
        session, session_feed = sessions[name], feeds[name]
        return lambda: session.run(None, session_feed)

    return {name: runner(name) for name in COLUMNS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time onnx-bcast's custom op Broadcast (domain onnx_bcast) in ONNX Runtime against ORT's "
                    "native Expand (or Unsqueeze+Expand for explicit mode) on the same shapes, in the same run. "
                    "Three columns: native ORT; onnx_bcast.InferenceSession; a plain onnxruntime.InferenceSession "
                    "with onnx_bcast.session_options() on onnx_bcast.prepare(model) (the wrapper's own cost). "
                    "Measurements are interleaved in rounds after a warm-up; figures are medians over rounds and "
                    "ratios are taken per round against the native baseline. Prints a Markdown table and whether "
                    "the goals hold (" + "; ".join(f"{c} {k}: <= {g:g}x" for (c, k), g in GOALS.items()) + ").",
        epilog="Exit status: 0 when every goal holds, 1 when one fails.")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run with few rounds and calls (< 20 s); figures are rough")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input data (default: 0)")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    onnx_bcast = import_onnx_bcast()
    rng = np.random.default_rng(args.seed)
    cases = make_cases(args.quick)
    print(f"onnx-bcast {onnx_bcast.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs, mode {'quick' if args.quick else 'default'}, "
          f"load average {load_average()}")
    for case in cases:
        runners = build_runners(case, onnx_bcast, rng)
        warmup = max(2, min(200, case.calls // 5))
        measure(case, runners, warmup)
        del runners
        gc.collect()
    print()
    print_table(cases)
    print()
    print("Per-call times are medians over rounds; ratios and added costs are medians of same-round comparisons "
          "against native ORT (range: lowest-highest per-round ratio). 'ours' is onnx_bcast.InferenceSession; "
          "'plain' is onnxruntime.InferenceSession(prepare(model), sess_options=session_options()).")
    print()
    all_hold = print_goals(cases)
    print(f"\n(total {time.perf_counter() - started:.1f} s, load average at the end {load_average()})")
    return 0 if all_hold else 1


if __name__ == "__main__":
    sys.exit(main())
