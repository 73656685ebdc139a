"""Benchmark the IR route on the real-model corpus (bench/real_models.py): per model, ``onnx-bcast from-ir``'s wall
time (a new process, as a user runs it) and the written model's per-call time in ONNX Runtime against the original
ONNX model's (ratio: median over interleaved rounds; goal of issue 31: at most 1.05x).

    .venv/bin/python bench/bench_from_ir.py [--models a,b] [--rounds 15] [--threads 1] [--json OUT] [--against-bare]

``--against-bare`` compares the written model with the same IR written without run-time checks
(``ir_to_onnx(xml, guards=False)``) instead of the original: what the checks cost per call (goal of issue 32: at
most 1.03x), with both models' node counts.

Each round times ``--calls`` single runs of each model, interleaved call by call (the order alternating), so that a
machine slowing down for a while weighs on both; a round's ratio is written/original of the median call, and the
result is the median of the rounds' ratios with their range. A second session of the original runs in the same
interleaving: its ratio to the first (``control``) is what the machine's noise alone makes of two equal models.
Sessions use ``--threads`` intra-op threads (1 by default: on a shared machine more threads measure the
neighbours). Both models get the same inputs.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_models import CorpusModel, by_name, child_env, ir_path, onnx_path  # noqa: E402

GOAL_RATIO = 1.05
GOAL_AGAINST_BARE = 1.03


def from_ir(xml: Path, output: Path) -> tuple[float, int, str]:
    """``onnx-bcast from-ir XML -o OUTPUT`` in a new process: wall time, exit, last line."""
    command = [sys.executable, "-m", "onnx_bcast", "from-ir", str(xml), "-o", str(output)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=child_env())
    seconds = time.perf_counter() - start
    lines = [line for line in (done.stderr if done.returncode else done.stdout).splitlines() if line.strip()]
    return seconds, done.returncode, (lines[-1] if lines else "")[:200]


def _session(path: Path, threads: int) -> object:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _per_call(session: object, feeds: dict, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        session.run(None, feeds)
    return (time.perf_counter() - start) / calls


def _feeds_for(session: object, feeds: dict, order: list[str]) -> dict:
    """The inputs by the session's names (by position where a name differs), as the original's."""
    names = [i.name for i in session.get_inputs()]
    return {name: feeds[name] if name in feeds else feeds[order[index]] for index, name in enumerate(names)}


def per_call_ratio(original: Path, written: Path, model: CorpusModel, rounds: int, threads: int,
                   calls: int | None) -> dict:
    """Per-call times of both models and their ratio, over rounds of single calls interleaved call by call, with a
    second session of the original in the same interleaving as the control (its ratio is the noise)."""
    base, control, ours = _session(original, threads), _session(original, threads), _session(written, threads)
    feeds = model.feeds()
    order = list(model.inputs)
    base_feeds, our_feeds = _feeds_for(base, feeds, order), _feeds_for(ours, feeds, order)
    runs = [(base, base_feeds), (control, base_feeds), (ours, our_feeds)]
    for session, session_feeds in runs * 2:  # warm-up, not counted
        session.run(None, session_feeds)
    if calls is None:
        calls = max(3, min(200, int(0.2 / max(_per_call(base, base_feeds, 3), 1e-6))))
    ratios, controls, base_times, our_times = [], [], [], []
    for _ in range(rounds):
        times: list[list[float]] = [[], [], []]
        for call in range(calls):
            for k in (0, 1, 2) if call % 2 else (2, 1, 0):
                session, session_feeds = runs[k]
                start = time.perf_counter()
                session.run(None, session_feeds)
                times[k].append(time.perf_counter() - start)
        base_time, control_time, our_time = (statistics.median(t) for t in times)
        base_times.append(base_time)
        our_times.append(our_time)
        ratios.append(our_time / base_time)
        controls.append(control_time / base_time)
    return {"calls_per_round": calls, "original_ms": 1e3 * statistics.median(base_times),
            "written_ms": 1e3 * statistics.median(our_times), "ratio": statistics.median(ratios),
            "ratio_min": min(ratios), "ratio_max": max(ratios), "control_ratio": statistics.median(controls)}


def _bare(xml: Path, written: Path, folder: Path, found: dict) -> Path:
    """The IR written without run-time checks, beside ``written``; both node counts into ``found``."""
    import onnx

    import onnx_bcast
    from onnx_bcast.onnxifier import ir_to_onnx

    bare = folder / f"{written.stem}.bare.onnx"
    onnx_bcast.save_model(ir_to_onnx(xml, guards=False), bare)
    found["nodes_guarded"] = len(onnx.load(written, load_external_data=False).graph.node)
    found["nodes_bare"] = len(onnx.load(bare, load_external_data=False).graph.node)
    return bare


def bench_model(model: CorpusModel, rounds: int, threads: int, calls: int | None, folder: Path,
                against_bare: bool = False) -> dict:
    source, xml = onnx_path(model), ir_path(model)
    written = folder / f"{model.name}.onnx"
    seconds, exit_code, message = from_ir(xml, written)
    found = {"model": model.name, "from_ir_s": seconds, "from_ir_exit": exit_code, "from_ir_message": message}
    if exit_code != 0:
        return found
    try:
        if against_bare:
            source = _bare(xml, written, folder, found)
        found.update(per_call_ratio(source, written, model, rounds, threads, calls))
    except Exception as err:  # noqa: BLE001 - reported: ORT refuses the written model or its run
        found["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated corpus names (default: all)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default: 15)")
    parser.add_argument("--calls", type=int, help="runs per round and model (default: about 0.2 s of the original)")
    parser.add_argument("--threads", type=int, default=1, help="ORT intra-op threads (default: 1)")
    parser.add_argument("--json", help="write every measurement to this file")
    parser.add_argument("--against-bare", action="store_true",
                        help="compare with the IR written without run-time checks instead of the original")
    args = parser.parse_args(argv)
    goal = GOAL_AGAINST_BARE if args.against_bare else GOAL_RATIO
    base = "bare" if args.against_bare else "original"
    logging.basicConfig(level=logging.WARNING)
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    print(f"onnxruntime {onnxruntime.__version__}, {args.rounds} rounds, {args.threads} thread(s); "
          f"goal: written/{base} per call <= {goal}")
    print(f"{'model':20} {'from-ir s':>9} {base + ' ms':>11} {'written ms':>10} {'ratio':>6} {'range':>13} "
          f"{'control':>7}"
          + ("  nodes written/bare" if args.against_bare else ""))
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for model in by_name(args.models):
            found = bench_model(model, args.rounds, args.threads, args.calls, Path(folder), args.against_bare)
            results.append(found)
            if "ratio" in found:
                nodes = f"  {found['nodes_guarded']}/{found['nodes_bare']}" if "nodes_bare" in found else ""
                print(f"{model.name:20} {found['from_ir_s']:9.2f} {found['original_ms']:11.3f} "
                      f"{found['written_ms']:10.3f} {found['ratio']:6.3f} "
                      f"{found['ratio_min']:6.3f}-{found['ratio_max']:<6.3f} {found['control_ratio']:7.3f}{nodes}",
                      flush=True)
            else:
                why = found.get("error") or f"exit {found['from_ir_exit']}: {found['from_ir_message']}"
                print(f"{model.name:20} {found['from_ir_s']:9.2f} {why}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    timed = [r for r in results if "ratio" in r]
    print(f"{len(timed)} of {len(results)} written models timed; within {goal}x: "
          f"{sum(1 for r in timed if r['ratio'] <= goal)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
