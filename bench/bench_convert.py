"""Benchmark onnx_bcast.convert as a ratio to a same-run floor, and converted vs hand-written run time in ORT."""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

try:
    import onnx_bcast
except ImportError:  # a checkout that is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import onnx_bcast

DOMAIN = "onnx_bcast"
MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
GOAL_FLOOR_RATIO = 2.5  # (load + convert + save) / (load + infer_shapes + save) at most this, per model (README)
GOAL_GROWTH = 2.3  # conv-bias: time(2N pairs) / time(N pairs) at most this (linear growth is 2.0)
GOAL_RUN_RATIO = 1.05  # converted bundled model / hand-written standard-ONNX model, per-call time at most this
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]
IR_VERSION = 10


def load_average() -> str:
    """The 1-minute load average (the machine is shared), or 'n/a'."""
    return f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "n/a"


def goal_line(text: str, value: float, limit: float, digits: int = 2, extra: str = "") -> bool:
    """Prints '- goal: text <= limit: value -> HOLDS/FAILS' and says whether it holds."""
    holds = value <= limit
    print(f"- goal: {text} <= {limit:g}x: {value:.{digits}f}x{extra} -> {'HOLDS' if holds else 'FAILS'}")
    return holds


def table(header: list[str], rows: list[list[str]]) -> None:
    """Prints a Markdown table."""
    for cells in [header, ["---"] * len(header), *rows]:
        print("| " + " | ".join(cells) + " |")


def spread(values: list[float], digits: int) -> str:
    """'**median x** (min-max)'."""
    return f"**{statistics.median(values):.{digits}f}x** ({min(values):.{digits}f}-{max(values):.{digits}f})"


# -- part 1: conversion time against a floor -----------------------------------------------------------------------


def _i64(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def _ours(op: str, inputs: list[str], output: str, **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op, inputs, [output], domain=DOMAIN, **attrs)


def _model(name: str, nodes: list[onnx.NodeProto], x: tuple[str, list[int]], y: tuple[str, list[int]],
           inits: list[onnx.TensorProto]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(x[0], TensorProto.FLOAT, x[1])],
                              [helper.make_tensor_value_info(y[0], TensorProto.FLOAT, y[1])], initializer=inits)
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=IR_VERSION)


def wide_model(n_nodes: int) -> onnx.ModelProto:
    """Groups of 5 nodes on x [3,1], each with its own constant initializers: Broadcast numpy, bidirectional,
    explicit (axes_mapping [0,1,2]), pdpd (axis=1), and BroadcastV0; the last group's explicit one is the output."""
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    groups = n_nodes // 5
    for g in range(groups):
        a, b, c, d, e = (f"{k}{g}" for k in "abcde")
        inits += [_i64(f"ta{g}", [3, 4]), _i64(f"tb{g}", [2, 1, 4]), _i64(f"tc{g}", [2, 3, 4, 2]),
                  _i64(f"mc{g}", [0, 1, 2]), _i64(f"td{g}", [2, 3, 4])]
        nodes += [_ours("Broadcast", ["x", f"ta{g}"], a, mode="numpy"),
                  _ours("Broadcast", [a, f"tb{g}"], b, mode="bidirectional"),
                  _ours("Broadcast", [b, f"tc{g}", f"mc{g}"], c, mode="explicit"),
                  _ours("Broadcast", [a, f"td{g}"], d, mode="pdpd", axis=1),
                  _ours("BroadcastV0", [a], e, shape=[3, 2, 4], broadcast_axes=[1])]
    return _model(f"wide_{n_nodes}", nodes, ("x", [3, 1]), (f"c{groups - 1}", [2, 3, 4, 2]), inits)


def chain_model(n_pairs: int) -> onnx.ModelProto:
    """x [16] -> (Broadcast explicit to [4,16], axes_mapping [1] -> ReduceMax axis 0 -> [16]) x n_pairs."""
    nodes: list[onnx.NodeProto] = []
    prev = "x"
    for i in range(n_pairs):
        nodes += [_ours("Broadcast", [prev, "target", "axes"], f"b{i}", mode="explicit"),
                  helper.make_node("ReduceMax", [f"b{i}"], [f"r{i}"], axes=[0], keepdims=0)]
        prev = f"r{i}"
    return _model(f"chain_{n_pairs}", nodes, ("x", [16]), (prev, [16]), [_i64("target", [4, 16]), _i64("axes", [1])])


def conv_bias_model(n_pairs: int) -> onnx.ModelProto:
    """features [1,16,8,8] -> (Add(features, Broadcast explicit(bias_i [16] to [1,16,8,8], axes [1])) -> Relu) x n."""
    rng = np.random.default_rng(n_pairs)
    nodes: list[onnx.NodeProto] = []
    inits = [_i64("target", [1, 16, 8, 8]), _i64("axes", [1])]
    prev = "features"
    for i in range(n_pairs):
        inits.append(numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), f"bias{i}"))
        nodes += [_ours("Broadcast", [f"bias{i}", "target", "axes"], f"bb{i}", mode="explicit"),
                  helper.make_node("Add", [prev, f"bb{i}"], [f"s{i}"]), helper.make_node("Relu", [f"s{i}"], [f"f{i}"])]
        prev = f"f{i}"
    return _model(f"conv_bias_{n_pairs}", nodes, ("features", [1, 16, 8, 8]), (prev, [1, 16, 8, 8]), inits)


def op_mix(model: onnx.ModelProto) -> str:
    """'Broadcast/numpy 4,000, Relu 2,000, ...': nodes by op (and mode)."""
    counts = Counter("/".join([n.op_type, *(a.s.decode() for a in n.attribute if a.name == "mode")])
                     for n in model.graph.node)
    return ", ".join(f"{key} {count:,}" for key, count in sorted(counts.items()))


@dataclass
class ConvertCase:
    """One model on disk, its converted form (for the floor), and per-round phase seconds of floor and ours."""

    name: str
    path: Path
    source: onnx.ModelProto
    converted: onnx.ModelProto
    times: dict[str, list[list[float]]] = field(default_factory=lambda: {kind: [] for kind in KINDS})

    def totals(self, kind: str) -> list[float]:
        return [sum(phases) for phases in self.times[kind]]

    def ratios(self, kind: str = "ours") -> list[float]:
        """Same-round ratios of ``kind`` (ours: convert; prepare: the ONNX Runtime form) to the floor."""
        return [a / b for a, b in zip(self.totals(kind), self.totals("floor"), strict=True)]


KINDS = ("floor", "ours", "prepare")


def prepare_case(name: str, model: onnx.ModelProto, directory: Path) -> ConvertCase:
    """Writes the model, converts it once (untimed) and checks that no onnx_bcast node or import is left."""
    path = directory / f"{model.graph.name}.onnx"
    onnx.save(model, path)
    converted = onnx_bcast.convert(model)
    left = sum(1 for node in converted.graph.node if node.domain == DOMAIN)
    if left or any(o.domain == DOMAIN for o in converted.opset_import):
        raise SystemExit(f"{name}: the converted model still has {left} onnx_bcast node(s) or the import")
    return ConvertCase(name, path, model, converted)


def time_phases(case: ConvertCase, kind: str, out: Path) -> list[float]:
    """Seconds of: onnx.load of the input; infer_shapes of the converted model (floor) or onnx_bcast.convert of the
    loaded one (ours); onnx.save of the converted model. Results are dropped after the clock stops."""
    t0 = time.perf_counter()
    loaded = onnx.load(case.path)
    t1 = time.perf_counter()
    if kind == "floor":
        inferred, converted = onnx.shape_inference.infer_shapes(case.converted), case.converted
    elif kind == "prepare":
        inferred, converted = None, onnx_bcast.prepare(loaded)
    else:
        inferred, converted = None, onnx_bcast.convert(loaded)
    t2 = time.perf_counter()
    onnx.save(converted, out)
    t3 = time.perf_counter()
    del loaded, inferred, converted
    return [t1 - t0, t2 - t1, t3 - t2]


def part1(quick: bool, rounds: int, profile: str | None) -> bool:
    """Builds, times and reports the conversion models; True when every conversion goal holds."""
    wide_nodes, chain_pairs, conv_pairs = (2_000, 1_000, 200) if quick else (20_000, 20_000, 2_000)
    onnx_bcast.convert(wide_model(5))  # warm-up: imports, schema registration
    setup_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_convert_") as tmp:
        cases = [prepare_case(name, model, Path(tmp)) for name, model in [
            (f"wide {wide_nodes:,}", wide_model(wide_nodes)),
            (f"chain {chain_pairs:,} pairs", chain_model(chain_pairs)),
            *((f"conv-bias {n:,}", conv_bias_model(n)) for n in (conv_pairs, 2 * conv_pairs))]]
        setup_seconds = time.perf_counter() - setup_start
        for r in range(rounds):  # floor then ours for every model; the model order alternates per round
            for case in cases if r % 2 == 0 else list(reversed(cases)):
                for kind in KINDS:
                    gc.collect()
                    case.times[kind].append(time_phases(case, kind, Path(tmp) / f"{kind}.onnx"))
    wide, chain, small, large = cases
    print("\n## Conversion time as a ratio to a floor measured in the same run\n")
    table(["model", "nodes in", "nodes after conversion", "rounds", "floor (median)", "ours (median)",
           "ours / floor (per-round range)", "prepare / floor (per-round range)"],
          [[case.name, op_mix(case.source), f"{len(case.converted.graph.node):,} ({op_mix(case.converted)})",
            str(len(case.ratios())), *(f"{statistics.median(case.totals(k)):.3f} s" for k in ("floor", "ours")),
            spread(case.ratios(), 2), spread(case.ratios("prepare"), 2)] for case in cases])
    print()
    table(["model", *(f"{kind}: {phase}" for kind, middle in (("floor", "infer_shapes"), ("ours", "convert"))
                      for phase in ("load", middle, "save"))],
          [[case.name, *(f"{statistics.median(p[i] for p in case.times[k]):.3f} s" for k in ("floor", "ours")
                         for i in range(3))] for case in cases])
    print(f"\nfloor = onnx.load(input) + onnx.shape_inference.infer_shapes(converted) + onnx.save(converted); ours = "
          f"onnx.load(input) + onnx_bcast.convert + onnx.save; prepare = the same with onnx_bcast.prepare (the ONNX "
          f"Runtime form sessions run). Files in a temp dir. {rounds} round(s), each timing floor, ours, prepare per "
          "model; times are medians, ratios are medians of same-round ratios. Building, writing "
          f"and converting the models once beforehand took {setup_seconds:.1f} s (not timed).\n")
    holds = [goal_line(f"{case.name} ours / floor", statistics.median(case.ratios()), GOAL_FLOOR_RATIO)
             for case in (wide, chain, large)]
    for case in (wide, chain, large):  # prepare writes more nodes than convert (a kernel and a Reshape per node)
        print(f"- prepare (the ONNX Runtime form): {case.name} prepare / floor: "
              f"{statistics.median(case.ratios('prepare')):.2f}x (reported, no goal)")
    per_round = [a / b for a, b in zip(large.totals("ours"), small.totals("ours"), strict=True)]
    growth = statistics.median(large.totals("ours")) / statistics.median(small.totals("ours"))
    holds.append(goal_line(f"{large.name} ours / {small.name} ours", growth, GOAL_GROWTH,
                           extra=f" (per round {min(per_round):.2f}-{max(per_round):.2f})"))
    if profile:
        case = {"wide": wide, "chain": chain, "conv-bias": large}[profile]
        print(f"\n### cProfile of one onnx_bcast.convert of {case.name}: top 10 by cumulative time\n")
        profiler = cProfile.Profile()
        profiler.runcall(onnx_bcast.convert, case.source)
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("cumulative").print_stats(10)
        print("```\n" + out.getvalue().strip() + "\n```")
    return all(holds)


# -- part 2: run time of the converted bundled models against hand-written standard ONNX ----------------------------

def hand_model(stem: str, source: onnx.ModelProto) -> onnx.ModelProto | None:
    """Bundled model ``stem`` written by hand in standard ONNX, or None: per-channel vectors are stored as [1,C,1,1]
    so that ONNX's own broadcast does the rest; the explicit Expand's axes [1,2] are the right-aligned ones."""
    arrays = {t.name: numpy_helper.to_array(t) for t in source.graph.initializer}
    node = helper.make_node

    def nchw(name: str) -> onnx.TensorProto:
        return numpy_helper.from_array(arrays[name].reshape(1, -1, 1, 1), f"{name}_c")

    if stem == "nchw_bias_explicit":  # biased = features + bias
        nodes, inits = [node("Add", ["features", "bias_c"], ["biased"])], [nchw("bias")]
    elif stem == "batchnorm_v0":  # y = (x - mean) * inv_std + shift
        nodes = [node("Sub", ["x", "mean_c"], ["centered"]), node("Mul", ["centered", "inv_std_c"], ["scaled"]),
                 node("Add", ["scaled", "shift_c"], ["y"])]
        inits = [nchw(name) for name in ("mean", "inv_std", "shift")]
    elif stem == "expand_modes":  # four Expands of x [3,1]
        shapes = {"bidirectional": [2, 1, 4], "numpy": [2, 3, 4], "explicit": [4, 3, 2], "pdpd": [2, 3, 5]}
        nodes = [node("Expand", ["x", f"{mode}_shape"], [f"{mode}_out"]) for mode in shapes]
        inits = [_i64(f"{mode}_shape", shape) for mode, shape in shapes.items()]
    else:
        return None
    graph = helper.make_graph(nodes, f"{source.graph.name}_by_hand", list(source.graph.input),
                              list(source.graph.output), initializer=inits)
    opsets = [o for o in source.opset_import if o.domain in ("", "ai.onnx")]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)
    onnx.checker.check_model(model, full_check=True)
    return model


def measure(runners: dict[str, Callable[[], Any]], rounds: int, calls: int, warmup_seconds: float
            ) -> dict[str, list[float]]:
    """Warm-up with runners alternating, then interleaved rounds of a block per runner, order swapped each round:
    per-call microseconds per runner and round."""
    def time_block(run: Callable[[], Any], n: int) -> float:
        start = time.perf_counter_ns()
        for _ in range(n):
            run()
        return (time.perf_counter_ns() - start) / n / 1000.0

    names = list(runners)
    deadline = time.perf_counter() + warmup_seconds
    while time.perf_counter() < deadline:
        for name in names:
            time_block(runners[name], min(calls, 100))
    per_call_us: dict[str, list[float]] = {name: [] for name in names}
    gc.disable()
    try:
        for r in range(rounds):
            for name in names if r % 2 == 0 else list(reversed(names)):
                per_call_us[name].append(time_block(runners[name], calls))
    finally:
        gc.enable()
    return per_call_us


def build_runners(name: str, models: dict[str, onnx.ModelProto], rng: np.random.Generator,
                  intra_op_threads: int) -> dict[str, Callable[[], Any]]:
    """Plain ORT sessions (same options) for both models, after checking their outputs are identical."""
    options = ort.SessionOptions()
    if intra_op_threads:
        options.intra_op_num_threads = intra_op_threads
    sessions = {kind: ort.InferenceSession(model.SerializeToString(), sess_options=options,
                                           providers=["CPUExecutionProvider"]) for kind, model in models.items()}
    initializers = {t.name for t in models["converted"].graph.initializer}
    feed = {v.name: rng.standard_normal([d.dim_value for d in v.type.tensor_type.shape.dim]).astype(np.float32)
            for v in models["converted"].graph.input if v.name not in initializers}  # static float inputs
    outputs = [o.name for o in models["converted"].graph.output]
    got, want = (sessions[kind].run(outputs, feed) for kind in ("converted", "hand"))
    for output, a, b in zip(outputs, got, want, strict=True):
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
            raise SystemExit(f"{name}: output {output!r} of the converted model differs from the hand-written "
                             f"one ({a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)})")
    return {kind: (lambda s=session: s.run(outputs, feed)) for kind, session in sessions.items()}


def part2(quick: bool, seed: int, intra_op_threads: int) -> bool:
    """Times each converted bundled model against its hand-written twin; True when every run goal holds."""
    rng = np.random.default_rng(seed)
    rounds, calls, warmup_seconds = (15, 200, 0.2) if quick else (61, 500, 1.0)
    cases: list[tuple[str, list[str], list[float], dict[str, list[float]]]] = []  # name, graphs, ratios, times
    missing: list[str] = []
    for path in sorted(MODELS_DIR.glob("*.onnx")):
        source = onnx.load(path)
        hand = hand_model(path.stem, source)
        if hand is None:
            missing.append(path.stem)
            continue
        models = {"converted": onnx_bcast.convert(source), "hand": hand}
        us = measure(build_runners(path.stem, models, rng, intra_op_threads), rounds, calls, warmup_seconds)
        cases.append((path.stem, [" ".join(n.op_type for n in m.graph.node) for m in models.values()],
                      [a / b for a, b in zip(us["converted"], us["hand"], strict=True)], us))
        gc.collect()
    print("\n## Run time in plain onnxruntime: converted bundled model vs the same model written by hand\n")
    table(["bundled model", "converted graph", "hand-written graph", "rounds x calls", "hand / call",
           "converted / call", "converted / hand (per-round range)"],
          [[name, *graphs, f"{rounds} x {calls}",
            *(f"{statistics.median(us[k]):.1f} µs" for k in ("hand", "converted")), spread(ratios, 3)]
           for name, graphs, ratios, us in cases])
    threads = f"intra_op_num_threads={intra_op_threads}" if intra_op_threads else "ORT's default threads"
    print(f"\nBoth sessions: onnxruntime.InferenceSession on CPU with default SessionOptions ({threads}); outputs "
          f"checked bit-identical before timing; {warmup_seconds:g} s warm-up per model. Per-call times are medians "
          "over rounds; the ratio is the median of same-round converted/hand ratios.\n")
    holds = [goal_line(f"{name} converted / hand-written", statistics.median(ratios), GOAL_RUN_RATIO, 3)
             for name, _, ratios, _ in cases]
    for name in missing:  # dynamic models: their converted form carries run-time checks a hand-written one lacks
        print(f"- {name}: not measured (no hand-written equivalent in bench_convert.py)")
    return all(holds)


# -- main -----------------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Part 1: onnx.load + onnx_bcast.convert + onnx.save of synthetic models, as a ratio to a floor "
                    "(onnx.load + infer_shapes + onnx.save of the converted model) timed in interleaved rounds. "
                    "Part 2: converted bundled models vs hand-written ones in plain onnxruntime.",
        epilog="Exit status: 1 when a goal fails in a full run; --quick (smaller models) exits 0.")
    parser.add_argument("--quick", action="store_true", help="a smoke run: small models, 2 rounds, short part 2")
    parser.add_argument("--rounds", type=int, default=None, help="part 1 rounds (default: 7, or 2 with --quick)")
    parser.add_argument("--profile", choices=("wide", "chain", "conv-bias"), default=None,
                        help="also print a cProfile of one conversion of this model (conv-bias: the larger one)")
    parser.add_argument("--intra-op-threads", type=int, default=0,
                        help="part 2: intra_op_num_threads of both sessions (default: 0, ORT's own default)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input data (default: 0)")
    args = parser.parse_args(argv)
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 7)
    if rounds < 1 or args.intra_op_threads < 0:
        parser.error("--rounds must be at least 1 and --intra-op-threads at least 0")
    started = time.perf_counter()
    print(f"onnx-bcast {onnx_bcast.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__}, "
          f"numpy {np.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"mode {'quick' if args.quick else 'default'}, load average {load_average()}")
    convert_ok = part1(args.quick, rounds, args.profile)
    gc.collect()
    run_ok = part2(args.quick, args.seed, args.intra_op_threads)
    print(f"\n(total {time.perf_counter() - started:.1f} s, load average at the end {load_average()})")
    if args.quick:
        print("(quick run: smaller models than the goals name, so the verdicts above are indicative; exit status 0)")
        return 0
    return 0 if convert_ok and run_ok else 1


if __name__ == "__main__":
    sys.exit(main())
