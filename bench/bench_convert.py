"""Benchmark onnx_bcast.convert: conversion time at 20,000 and 40,000 nodes, and converted vs hand-written run time."""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib
import io
import os
import platform
import pstats
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

DOMAIN = "onnx_bcast"
SMALL_NODES = 20_000
LARGE_NODES = 40_000
GOAL_SMALL_SECONDS = 2.0  # converting the 20,000-node model takes at most this
GOAL_GROWTH = 2.2  # 40,000-node time / 20,000-node time at most this (linear growth is 2.0)
GOAL_RUN_RATIO = 1.05  # converted bundled model / hand-written standard-ONNX model, per-call time at most this
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]
IR_VERSION = 10


def import_onnx_bcast() -> ModuleType:
    """onnx_bcast from the environment, else from the checkout this script lives in."""
    try:
        import onnx_bcast
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        import onnx_bcast
    return onnx_bcast


def load_average() -> str:
    """The 1-minute load average (the machine is shared), or 'n/a'."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "n/a"


def verdict(holds: bool) -> str:
    return "HOLDS" if holds else "FAILS"


# -- part 1: conversion time ---------------------------------------------------------------------------------------

def _i64(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def _ours(op: str, inputs: list[str], output: str, name: str, **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op, inputs, [output], domain=DOMAIN, name=name, **attrs)


def synthetic_model(n_nodes: int) -> onnx.ModelProto:
    """A wide graph of 5-node groups on one small input x [3,1], every node of domain onnx_bcast.

    Per group g (each node with its own constant initializers, as exporters write them):
    ``a = Broadcast<numpy>(x, [3,4])``, ``b = Broadcast<bidirectional>(a, [2,1,4])``,
    ``c = Broadcast<explicit>(b, [2,3,4,2], axes_mapping [0,1,2])``, ``d = Broadcast<pdpd, axis=1>(a, [2,3,4])``,
    ``e = BroadcastV0<shape=[3,2,4], broadcast_axes=[1]>(a)``. The last group's c is the graph output.
    """
    if n_nodes % 5:
        raise ValueError(f"n_nodes must be a multiple of 5, got {n_nodes}")
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    groups = n_nodes // 5
    for g in range(groups):
        a, b, c, d, e = (f"{k}{g}" for k in "abcde")
        inits += [_i64(f"ta{g}", [3, 4]), _i64(f"tb{g}", [2, 1, 4]), _i64(f"tc{g}", [2, 3, 4, 2]),
                  _i64(f"mc{g}", [0, 1, 2]), _i64(f"td{g}", [2, 3, 4])]
        nodes += [
            _ours("Broadcast", ["x", f"ta{g}"], a, f"numpy{g}", mode="numpy"),
            _ours("Broadcast", [a, f"tb{g}"], b, f"bidirectional{g}", mode="bidirectional"),
            _ours("Broadcast", [b, f"tc{g}", f"mc{g}"], c, f"explicit{g}", mode="explicit"),
            _ours("Broadcast", [a, f"td{g}"], d, f"pdpd{g}", mode="pdpd", axis=1),
            _ours("BroadcastV0", [a], e, f"v0_{g}", shape=[3, 2, 4], broadcast_axes=[1]),
        ]
    graph = helper.make_graph(
        nodes, f"wide_{n_nodes}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 1])],
        [helper.make_tensor_value_info(f"c{groups - 1}", TensorProto.FLOAT, [2, 3, 4, 2])], initializer=inits)
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=IR_VERSION)


def node_mix(model: onnx.ModelProto) -> str:
    """'Broadcast/numpy 4000, ...': our nodes by op and mode."""
    counts: Counter[str] = Counter()
    for node in model.graph.node:
        mode = next((a.s.decode() for a in node.attribute if a.name == "mode"), "")
        counts[f"{node.op_type}/{mode}" if mode else node.op_type] += 1
    return ", ".join(f"{key} {count}" for key, count in counts.items())


@dataclass
class ConvertCase:
    """One synthetic model, its conversion times, and what the conversion produced."""

    n_nodes: int
    model: onnx.ModelProto
    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)
    nodes_after: int = 0
    op_types_after: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def check_converted(case: ConvertCase, converted: onnx.ModelProto) -> None:
    """The result has no onnx_bcast node or import left; records its size."""
    left = sum(1 for node in converted.graph.node if node.domain == DOMAIN)
    if left or any(o.domain == DOMAIN for o in converted.opset_import):
        raise SystemExit(f"{case.n_nodes} nodes: the converted model still has {left} onnx_bcast node(s) or import")
    case.nodes_after = len(converted.graph.node)
    case.op_types_after = ", ".join(f"{op} {n}" for op, n in sorted(Counter(n.op_type for n in
                                                                             converted.graph.node).items()))


def time_conversions(cases: list[ConvertCase], runs: int, convert: Callable[..., onnx.ModelProto]) -> None:
    """``runs`` rounds; each round converts every model once, in an order that alternates per round."""
    for r in range(runs):
        for case in cases if r % 2 == 0 else list(reversed(cases)):
            gc.collect()
            start, cpu_start = time.perf_counter(), time.process_time()
            converted = convert(case.model)
            case.seconds.append(time.perf_counter() - start)
            case.cpu_seconds.append(time.process_time() - cpu_start)
            if not case.nodes_after:
                check_converted(case, converted)
            del converted


def print_convert_table(cases: list[ConvertCase]) -> None:
    base = cases[0]
    print(f"| model | our nodes | nodes after | runs | convert (median) | min-max | CPU time (median) | per node | "
          f"time / {base.n_nodes:,}-node time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        per_round = [a / b for a, b in zip(case.seconds, base.seconds, strict=True)]
        growth = f"**{case.median / base.median:.2f}x** (per run {min(per_round):.2f}-{max(per_round):.2f})"
        cells = [f"wide, {case.n_nodes:,} nodes", node_mix(case.model), f"{case.nodes_after:,} ({case.op_types_after})",
                 str(len(case.seconds)), f"**{case.median:.3f} s**",
                 f"{min(case.seconds):.3f}-{max(case.seconds):.3f} s", f"{statistics.median(case.cpu_seconds):.3f} s",
                 f"{case.median / case.n_nodes * 1e6:.1f} µs", growth if case is not base else "1.00x (baseline)"]
        print("| " + " | ".join(cells) + " |")


def convert_goals(small: ConvertCase, large: ConvertCase) -> bool:
    """One line per conversion goal; True when both hold."""
    holds_time = small.median <= GOAL_SMALL_SECONDS
    print(f"- goal: {small.n_nodes:,} nodes convert in <= {GOAL_SMALL_SECONDS:g} s: {small.median:.3f} s -> "
          + verdict(holds_time) + ("" if holds_time else f" by {small.median - GOAL_SMALL_SECONDS:.3f} s"))
    growth = large.median / small.median
    holds_growth = growth <= GOAL_GROWTH
    print(f"- goal: {large.n_nodes:,}-node time <= {GOAL_GROWTH:g} x {small.n_nodes:,}-node time: {growth:.2f}x -> "
          + verdict(holds_growth))
    return holds_time and holds_growth


def profile_conversion(model: onnx.ModelProto, convert: Callable[..., onnx.ModelProto], top: int) -> None:
    """cProfile of one conversion: the ``top`` functions by cumulative time (profiling slows everything down)."""
    profiler = cProfile.Profile()
    gc.collect()
    profiler.enable()
    convert(model)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("cumulative").print_stats(top)
    print("```")
    print(out.getvalue().strip())
    print("```")


# -- part 2: run time of the converted bundled models against hand-written standard ONNX ----------------------------

def _init(model: onnx.ModelProto, name: str) -> np.ndarray:
    for tensor in model.graph.initializer:
        if tensor.name == name:
            return numpy_helper.to_array(tensor)
    raise KeyError(f"{model.graph.name}: no initializer {name!r}")


def _hand_model(source: onnx.ModelProto, nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto]) -> onnx.ModelProto:
    """Standard ONNX with the source's inputs, outputs and default-domain opset."""
    graph = helper.make_graph(nodes, f"{source.graph.name}_by_hand", list(source.graph.input),
                              list(source.graph.output), initializer=inits)
    opsets = [o for o in source.opset_import if o.domain in ("", "ai.onnx")]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)
    onnx.checker.check_model(model, full_check=True)
    return model


def hand_nchw_bias_explicit(source: onnx.ModelProto) -> onnx.ModelProto:
    """``biased = features + bias`` with the bias stored as [1,16,1,1]: ONNX's own broadcast does the rest."""
    bias = _init(source, "bias").reshape(1, -1, 1, 1)
    return _hand_model(source, [helper.make_node("Add", ["features", "bias_nchw"], ["biased"])],
                       [numpy_helper.from_array(bias, "bias_nchw")])


def hand_batchnorm_v0(source: onnx.ModelProto) -> onnx.ModelProto:
    """``y = (x - mean) * inv_std + shift`` with the per-channel vectors stored as [1,8,1,1]."""
    inits = [numpy_helper.from_array(_init(source, name).reshape(1, -1, 1, 1), f"{name}_c")
             for name in ("mean", "inv_std", "shift")]
    nodes = [helper.make_node("Sub", ["x", "mean_c"], ["centered"]),
             helper.make_node("Mul", ["centered", "inv_std_c"], ["scaled"]),
             helper.make_node("Add", ["scaled", "shift_c"], ["y"])]
    return _hand_model(source, nodes, inits)


def hand_expand_modes(source: onnx.ModelProto) -> onnx.ModelProto:
    """Four ONNX Expands of x [3,1] to the four output shapes (explicit axes [1,2] are the right-aligned ones)."""
    shapes = {"bidirectional": [2, 1, 4], "numpy": [2, 3, 4], "explicit": [4, 3, 2], "pdpd": [2, 3, 5]}
    nodes = [helper.make_node("Expand", ["x", f"{mode}_shape"], [f"{mode}_out"]) for mode in shapes]
    return _hand_model(source, nodes, [_i64(f"{mode}_shape", shape) for mode, shape in shapes.items()])


HAND_MADE: dict[str, Callable[[onnx.ModelProto], onnx.ModelProto]] = {
    "nchw_bias_explicit": hand_nchw_bias_explicit,
    "batchnorm_v0": hand_batchnorm_v0,
    "expand_modes": hand_expand_modes,
}


@dataclass
class RunCase:
    """One bundled model: per-call times of the converted and the hand-written model, per round."""

    name: str
    rounds: int
    calls: int
    converted_nodes: str = ""
    hand_nodes: str = ""
    per_call_us: dict[str, list[float]] = field(default_factory=dict)

    def ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.per_call_us["converted"], self.per_call_us["hand"], strict=True)]

    def ratio(self) -> float:
        return statistics.median(self.ratios())

    def median_us(self, column: str) -> float:
        return statistics.median(self.per_call_us[column])


def random_feed(model: onnx.ModelProto, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random float32 data for every graph input (the bundled models have static float inputs)."""
    initializers = {t.name for t in model.graph.initializer}
    feed = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        if tensor.elem_type != TensorProto.FLOAT or not all(d.HasField("dim_value") for d in tensor.shape.dim):
            raise SystemExit(f"{model.graph.name}: input {value.name!r} is not a static float tensor")
        feed[value.name] = rng.standard_normal([d.dim_value for d in tensor.shape.dim]).astype(np.float32)
    return feed


def node_summary(model: onnx.ModelProto) -> str:
    return " ".join(n.op_type for n in model.graph.node)


def time_block(run: Callable[[], Any], calls: int) -> float:
    """Mean microseconds per call over ``calls`` back-to-back calls."""
    start = time.perf_counter_ns()
    for _ in range(calls):
        run()
    return (time.perf_counter_ns() - start) / calls / 1000.0


def measure(case: RunCase, runners: dict[str, Callable[[], Any]], warmup_seconds: float) -> None:
    """Warm-up with runners alternating, then interleaved rounds: a block per runner, order swapped each round."""
    names = list(runners)
    deadline = time.perf_counter() + warmup_seconds
    while time.perf_counter() < deadline:
        for name in names:
            time_block(runners[name], min(case.calls, 100))
    case.per_call_us = {name: [] for name in names}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(case.rounds):
            for name in names if r % 2 == 0 else list(reversed(names)):
                case.per_call_us[name].append(time_block(runners[name], case.calls))
    finally:
        if gc_was_enabled:
            gc.enable()


def session_options(intra_op_threads: int) -> ort.SessionOptions:
    """Default ORT session options, with the intra-op thread count set when it is not 0 (ORT's default)."""
    options = ort.SessionOptions()
    if intra_op_threads:
        options.intra_op_num_threads = intra_op_threads
    return options


def build_runners(case: RunCase, converted: onnx.ModelProto, hand: onnx.ModelProto, rng: np.random.Generator,
                  intra_op_threads: int) -> dict[str, Callable[[], Any]]:
    """Plain ORT sessions (same options) for both models, after checking their outputs are identical."""
    sessions = {name: ort.InferenceSession(model.SerializeToString(), sess_options=session_options(intra_op_threads),
                                           providers=["CPUExecutionProvider"])
                for name, model in (("converted", converted), ("hand", hand))}
    feed = random_feed(converted, rng)
    outputs = [o.name for o in converted.graph.output]
    got = dict(zip(outputs, sessions["converted"].run(outputs, feed), strict=True))
    want = dict(zip(outputs, sessions["hand"].run(outputs, feed), strict=True))
    for name in outputs:
        a, b = got[name], want[name]
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
            raise SystemExit(f"{case.name}: output {name!r} of the converted model differs from the hand-written "
                             f"one ({a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)})")

    def runner(name: str) -> Callable[[], Any]:
        session = sessions[name]
        return lambda: session.run(outputs, feed)

    return {name: runner(name) for name in ("converted", "hand")}


def fmt_us(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} µs"


def print_run_table(cases: list[RunCase]) -> None:
    print("| bundled model | converted graph | hand-written graph | rounds x calls | hand / call | converted / call "
          "| converted / hand (per-round range) |")
    print("|---|---|---|---|---|---|---|")
    for case in cases:
        ratios = case.ratios()
        cells = [case.name, case.converted_nodes, case.hand_nodes, f"{case.rounds} x {case.calls}",
                 fmt_us(case.median_us("hand")), fmt_us(case.median_us("converted")),
                 f"**{case.ratio():.3f}x** ({min(ratios):.3f}-{max(ratios):.3f})"]
        print("| " + " | ".join(cells) + " |")


def run_goals(cases: list[RunCase], missing: list[str]) -> bool:
    """One line per bundled model; True when every ratio holds and none lacks a hand-written baseline."""
    all_hold = True
    for case in cases:
        value = case.ratio()
        holds = value <= GOAL_RUN_RATIO
        print(f"- goal: {case.name} converted / hand-written <= {GOAL_RUN_RATIO:g}: {value:.3f}x -> "
              + verdict(holds))
        all_hold &= holds
    for name in missing:
        print(f"- goal: {name} converted / hand-written <= {GOAL_RUN_RATIO:g}: not measured, no hand-written "
              "equivalent in bench_convert.py -> FAILS")
        all_hold = False
    return all_hold


# -- main -----------------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Part 1: time onnx_bcast.convert.convert on a synthetic wide graph of "
                    f"{SMALL_NODES:,} and of {LARGE_NODES:,} onnx_bcast nodes (Broadcast in numpy, bidirectional, "
                    "explicit and pdpd modes plus BroadcastV0, constant target shapes, tensors of a few dozen "
                    "floats); model construction is not timed, the median of several runs is reported and the "
                    f"{LARGE_NODES:,}-node time is compared with the {SMALL_NODES:,}-node time of the same run. "
                    "Part 2: convert each bundled model and time it in plain onnxruntime against the same model "
                    "written by hand with standard ops (outputs checked identical first), interleaved in rounds; "
                    "ratios are medians of per-round converted/hand. Prints a Markdown table per part and whether "
                    f"each goal holds ({SMALL_NODES:,} nodes in <= {GOAL_SMALL_SECONDS:g} s; growth <= "
                    f"{GOAL_GROWTH:g}x; converted/hand <= {GOAL_RUN_RATIO:g}).",
        epilog="Exit status: 0 when every goal holds, 1 when one fails.")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run (< 30 s): fewer conversion runs, rounds and calls; same model sizes")
    parser.add_argument("--runs", type=int, default=None,
                        help="conversion runs per model size (default: 5, or 2 with --quick)")
    parser.add_argument("--profile", action="store_true",
                        help=f"also print a cProfile of one {SMALL_NODES:,}-node conversion (top functions by "
                             "cumulative time)")
    parser.add_argument("--profile-top", type=int, default=35, help="functions listed by --profile (default: 35)")
    parser.add_argument("--intra-op-threads", type=int, default=0,
                        help="part 2: intra_op_num_threads of both sessions (default: 0, ORT's own default)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input data (default: 0)")
    args = parser.parse_args(argv)
    runs = args.runs if args.runs is not None else (2 if args.quick else 5)
    if runs < 1:
        parser.error("--runs must be at least 1")
    if args.intra_op_threads < 0:
        parser.error("--intra-op-threads must be 0 (ORT's default) or more")

    started = time.perf_counter()
    onnx_bcast = import_onnx_bcast()
    convert: Callable[..., onnx.ModelProto] = importlib.import_module("onnx_bcast.convert").convert
    bundled_models: Callable[[], list[Path]] = importlib.import_module("onnx_bcast.models").bundled_models

    print(f"onnx-bcast {onnx_bcast.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__}, "
          f"numpy {np.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"mode {'quick' if args.quick else 'default'}, load average {load_average()}")

    # part 1
    convert(synthetic_model(5))  # warm-up: imports, schema registration
    build_start = time.perf_counter()
    convert_cases = [ConvertCase(n, synthetic_model(n)) for n in (SMALL_NODES, LARGE_NODES)]
    build_seconds = time.perf_counter() - build_start
    time_conversions(convert_cases, runs, convert)
    print()
    print("## Conversion time (onnx_bcast.convert.convert, ModelProto in, model construction not timed)")
    print()
    print_convert_table(convert_cases)
    print()
    print(f"Medians over {runs} run(s) per size, the two sizes alternating; building both models took "
          f"{build_seconds:.2f} s (not timed). Growth is against the {SMALL_NODES:,}-node median of this run. "
          "Goals are on wall time; CPU time (process time, all threads) shows how much of it a busy machine added.")
    print()
    convert_ok = convert_goals(*convert_cases)
    if args.profile:
        print()
        print(f"### cProfile of one {SMALL_NODES:,}-node conversion")
        print()
        profile_conversion(convert_cases[0].model, convert, args.profile_top)
    del convert_cases
    gc.collect()

    # part 2
    rng = np.random.default_rng(args.seed)
    rounds, calls, warmup_seconds = (15, 200, 0.2) if args.quick else (61, 500, 1.0)
    run_cases: list[RunCase] = []
    missing: list[str] = []
    for path in bundled_models():
        source = onnx.load(path)
        builder = HAND_MADE.get(path.stem)
        if builder is None:
            missing.append(path.stem)
            continue
        converted, hand = convert(source), builder(source)
        case = RunCase(path.stem, rounds, calls, node_summary(converted), node_summary(hand))
        runners = build_runners(case, converted, hand, rng, args.intra_op_threads)
        measure(case, runners, warmup_seconds)
        run_cases.append(case)
        del runners
        gc.collect()
    print()
    print("## Run time in plain onnxruntime: converted bundled model vs the same model written by hand")
    print()
    print_run_table(run_cases)
    print()
    threads = f"intra_op_num_threads={args.intra_op_threads}" if args.intra_op_threads else "ORT's default threads"
    print(f"Both sessions: onnxruntime.InferenceSession on CPU with default SessionOptions ({threads}); outputs "
          f"checked bit-identical before timing; {warmup_seconds:g} s warm-up per model. Per-call times are medians "
          "over rounds; the ratio is the median of same-round converted/hand ratios.")
    print()
    run_ok = run_goals(run_cases, missing)
    print(f"\n(total {time.perf_counter() - started:.1f} s, load average at the end {load_average()})")
    return 0 if convert_ok and run_ok else 1


if __name__ == "__main__":
    sys.exit(main())
