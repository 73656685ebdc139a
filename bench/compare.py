"""Benchmark two commits in one run, interleaved, and print new/old ratios (over 1.1x is a regression).

``--base REV`` is checked out into a temporary git worktree (``git worktree add --detach``); the new side is this
checkout as it is on disk (uncommitted changes included) or ``--new REV``. Every round runs, for each suite, one
child process per tree, old and new alternating first; each child imports its tree's onnx_bcast
(``tree_import``) and runs this checkout's benchmark code (``bench_broadcast.py``, ``bench_convert.py``), so both
sides are measured the same way. A child reports ratios to a baseline measured in the same process (ONNX Runtime's
``Expand``; the conversion floor), which takes the machine's load out of each figure; the table gives, per case,
the median over rounds of new/old, with the range of the rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
REGRESSION = 1.1  # a case more than this many times slower than its base is a regression
SUITES = ("broadcast", "convert")
# the environment a child must not inherit: importing onnxruntime-extensions sets the first (pure-Python protobuf)
CLEARED_ENV = ("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "PYTHONPATH")
# what a broadcast case reports: column of bench_broadcast -> metric name
BROADCAST_METRICS = {"ours": "numpy backend / Expand", "native backend": "native backend / Expand"}


# -- child: one tree, one suite, one round -------------------------------------------------------------------------

def _bench_module(name: str) -> ModuleType:
    """This checkout's bench/<name>.py, imported after the tree's finder is in place."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _selected(name: str, only: list[str]) -> bool:
    return not only or any(part.lower() in name.lower() for part in only)


def child_broadcast(only: list[str], full: bool, case_rounds: int | None) -> dict[str, dict[str, float]]:
    """bench_broadcast's cases, each with its own interleaved rounds: median ratios to ORT's Expand per column."""
    bench = _bench_module("bench_broadcast")
    import numpy as np

    onnx_bcast = bench.import_onnx_bcast()
    rng = np.random.default_rng(0)
    results: dict[str, dict[str, float]] = {}
    for case in bench.make_cases(quick=not full):
        if not _selected(case.name, only):
            continue
        case.rounds = case_rounds or case.rounds
        runners = bench.build_runners(case, onnx_bcast, rng)
        bench.measure(case, runners, max(2, min(200, case.calls // 5)))
        results[case.name] = {metric: bench.ratio(case, column) for column, metric in BROADCAST_METRICS.items()}
        results[case.name]["Expand µs/call"] = bench.median_us(case, "native")
        del runners
        gc.collect()
    return results


def child_convert(only: list[str], full: bool, case_rounds: int | None) -> dict[str, dict[str, float]]:
    """bench_convert's models (its --quick sizes unless ``full``): median of same-round convert / floor ratios."""
    bench = _bench_module("bench_convert")
    wide, chain, conv = (20_000, 20_000, 4_000) if full else (2_000, 1_000, 400)
    models = [(f"convert wide {wide:,}", bench.wide_model, wide), (f"convert chain {chain:,} pairs", bench.chain_model,
              chain), (f"convert conv-bias {conv:,}", bench.conv_bias_model, conv)]
    bench.onnx_bcast.convert(bench.wide_model(5))  # imports and schema registration, outside the clock
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="compare_convert_") as tmp:
        cases = [bench.prepare_case(name, build(size), Path(tmp)) for name, build, size in models
                 if _selected(name, only)]
        for _ in range(case_rounds or 3):
            for case in cases:
                for kind in ("floor", "ours"):
                    gc.collect()
                    case.times[kind].append(bench.time_phases(case, kind, Path(tmp) / f"{kind}.onnx"))
        for case in cases:
            results[case.name] = {"convert / floor": statistics.median(case.ratios()),
                                  "floor s": statistics.median(case.totals("floor"))}
    return results


def child_main(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(HERE))
    import tree_import

    tree_import.install(Path(args.tree))
    run = child_broadcast if args.child == "broadcast" else child_convert
    results = run(args.only, args.full, args.case_rounds)
    import onnx_bcast  # the tree's, as the finder put it: say which files were measured
    import onnx_bcast.converters

    modules = [onnx_bcast.__file__, onnx_bcast.converters.__file__]
    print(json.dumps({"modules": modules, "results": results}))
    return 0


# -- parent: worktrees, interleaved children, the table -------------------------------------------------------------

def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(CHECKOUT), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@contextlib.contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """``rev`` checked out (detached) in a temporary git worktree, removed afterwards."""
    commit = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    folder = Path(tempfile.mkdtemp(prefix=f"compare_{commit[:7]}_"))
    _git("worktree", "add", "--detach", str(folder), commit)
    try:
        yield folder
    finally:
        _git("worktree", "remove", "--force", str(folder))


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ left in the trees
    return env


def run_child(tree: Path, suite: str, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """One child process: ``suite`` on ``tree``'s code; its results, or SystemExit with the child's error."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", suite, "--tree", str(tree)]
    command += [f"--only={part}" for part in args.only] + (["--full"] if args.full else [])
    command += [f"--case-rounds={args.case_rounds}"] if args.case_rounds else []
    done = subprocess.run(command, capture_output=True, text=True, env=child_env(), cwd=str(tree))
    if done.returncode:
        raise SystemExit(f"{suite} on {tree} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    strays = [m for m in payload["modules"] if not Path(m).resolve().is_relative_to(tree.resolve())]
    if strays:
        raise SystemExit(f"{suite}: the child measured {', '.join(strays)}, not the code of {tree}")
    return payload["results"]


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def compare(old: Path, new: Path, args: argparse.Namespace) -> dict[tuple[str, str], dict[str, list[float]]]:
    """Rounds of (old, new) children per suite, first side alternating: per (case, metric) the values of each side."""
    values: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in range(args.rounds):
        sides = [("old", old), ("new", new)] if r % 2 == 0 else [("new", new), ("old", old)]
        for suite in args.suites:
            for side, tree in sides:
                started = time.perf_counter()
                for case, metrics in run_child(tree, suite, args).items():
                    for metric, value in metrics.items():
                        values.setdefault((case, metric), {"old": [], "new": []})[side].append(value)
                print(f"round {r + 1}/{args.rounds}: {suite} {side} {time.perf_counter() - started:.1f} s "
                      f"(load {load_average()})", file=sys.stderr, flush=True)
    return values


def print_table(values: dict[tuple[str, str], dict[str, list[float]]], old_rev: str, new_rev: str) -> list[str]:
    """The Markdown table of new/old per case and metric; returns the regressions' lines."""
    regressions = []
    print(f"| case | metric | old {old_rev} (median) | new {new_rev} (median) | new / old (rounds' range) | |")
    print("|---|---|---|---|---|---|")
    for (case, metric), sides in values.items():
        if metric.endswith(("µs/call", " s")):
            continue  # the baselines' own times: context, not a comparison
        pairs = list(zip(sides["new"], sides["old"], strict=True))
        per_round = [n / o for n, o in pairs]
        median = statistics.median(per_round)
        flag = f"**regression** (> {REGRESSION:g}x)" if median > REGRESSION else ""
        if flag:
            regressions.append(f"{case}: {metric} {median:.2f}x")
        print(f"| {case} | {metric} | {statistics.median(sides['old']):.2f}x | {statistics.median(sides['new']):.2f}x "
              f"| {median:.2f}x ({min(per_round):.2f}-{max(per_round):.2f}) | {flag} |")
    return regressions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run bench_broadcast.py's cases and bench_convert.py's models on two commits in one run, "
                    "interleaved (one child process per tree, suite and round, old and new alternating first), and "
                    "print new/old ratios of each case's same-process ratio to its baseline (ORT's Expand; the "
                    f"conversion floor). A median over {REGRESSION:g}x is flagged as a regression.",
        epilog="Exit status: 0 when no case regresses, 1 when one does, 2 on bad usage.")
    parser.add_argument("--base", help="the old side: any git revision (checked out in a temporary worktree)")
    parser.add_argument("--new", default=None, help="the new side (default: this checkout as it is on disk)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of old+new children per suite (default: 5)")
    parser.add_argument("--only", action="append", default=[],
                        help="run only cases whose name contains this text (repeatable; e.g. 'tiny', '64 MiB')")
    parser.add_argument("--suites", default=",".join(SUITES), help="comma-separated: broadcast,convert (default: both)")
    parser.add_argument("--full", action="store_true",
                        help="each child runs the full-size benchmark (bench_broadcast's default rounds and calls, "
                             "bench_convert's 20,000-node models) instead of its --quick sizes")
    parser.add_argument("--case-rounds", type=int, default=None,
                        help="rounds each child times a case (default: bench_broadcast's --quick rounds; convert 3)")
    parser.add_argument("--child", choices=SUITES, help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args)
    args.suites = [s for s in args.suites.split(",") if s]
    bad_rounds = args.rounds < 1 or (args.case_rounds is not None and args.case_rounds < 1)
    if not args.base or bad_rounds or any(s not in SUITES for s in args.suites):
        parser.error(f"--base is required, --rounds at least 1, --suites among {', '.join(SUITES)}")
    print(f"compare: base {args.base}, new {args.new or 'this checkout'}, {args.rounds} round(s), suites "
          f"{', '.join(args.suites)}, load average {load_average()}", flush=True)
    with contextlib.ExitStack() as stack:
        old = stack.enter_context(worktree(args.base))
        new = stack.enter_context(worktree(args.new)) if args.new else CHECKOUT
        values = compare(old, new, args)
    print()
    regressions = print_table(values, _git("rev-parse", "--short", args.base),
                              _git("rev-parse", "--short", args.new) if args.new else "(this checkout)")
    print(f"\nEach cell: a child's own ratio to its same-process baseline; new / old is the median over {args.rounds} "
          f"round(s) of the rounds' new/old. Load average at the end: {load_average()}.")
    if regressions:
        print("Regressions: " + "; ".join(regressions))
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
