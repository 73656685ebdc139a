"""Benchmark big models (weights in external data, sparse files): convert and sessions as ratios to same-run floors.

The model: x [1, C] through 10 layers of ``Add<pdpd>(h, Broadcast<explicit>(bias_i))``, ``MatMul(., W_i)``, ``Tanh``
(which keeps ONNX Runtime from fusing the MatMul with the next Add into a Gemm: a fusion that rounds differently),
every W_i [C, C] float32 in one external data file that is sparse (a few random rows, zeros elsewhere), so that
0.5-8 GiB of weights cost little disk. The hand-written standard equivalent reads the same file: ``Add(h, bias_i)``,
``MatMul``, ``Tanh``. Every measurement runs in its own process (peak memory is the process's ``ru_maxrss``), in
interleaved rounds: the first round warms the page cache and is not counted; the floor and the conversions (a few
milliseconds each) run in more rounds than the sessions (``--convert-rounds``).

- convert: ``onnx_bcast.save_model(onnx_bcast.convert(path), output)`` against the floor: load the graph without
  its data, save it, and place the data as convert does (the output is in another folder: a copy of the data
  regions of the sparse file, in the kernel). Time as the median of the rounds' ratios (each round's convert runs
  right after its floor: a machine that slows down for a while slows both); peak memory as MiB above the floor's.
  Also ``onnx-bcast convert`` (in-process: ``cli.main``), whose argument parser and report add a fixed ~20 ms.
- sessions: ``InferenceSession(path, backend=...)`` load + first run, against plain ORT on the hand-written
  standard model: time and peak memory as ratios. Also the converted model in plain ORT. Every output is compared
  with plain ORT's, bit for bit.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

LAYERS = 10
DOMAIN = "onnx_bcast"
GOAL_CONVERT_TIME = 3.0  # convert time / floor time at most this
GOAL_CONVERT_MIB = 400  # convert peak memory above the floor's at most this (MiB)
GOAL_SESSION_MEMORY = 1.3  # session peak memory / plain ORT's at most this
GOAL_SESSION_TIME = 2.0  # session load + first run / plain ORT's at most this
KINDS = ("floor", "convert", "cli", "plain", "converted", "numpy", "native")


def side(weight_bytes: int) -> int:
    """C such that LAYERS weights of [C, C] float32 hold about ``weight_bytes``."""
    return max(8, math.isqrt(weight_bytes // (LAYERS * 4)))


def build(folder: Path, weight_bytes: int, seed: int = 0) -> int:
    """``ours.onnx`` and ``standard.onnx`` in ``folder``, both reading ``weights.bin`` (sparse); returns C."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    c = side(weight_bytes)
    rng = np.random.default_rng(seed)
    data = folder / "weights.bin"
    weights, biases, offset = [], [], 0
    with open(data, "wb") as file:
        for i in range(LAYERS):
            tensor = TensorProto(name=f"W{i}", data_type=TensorProto.FLOAT, dims=[c, c])
            _refer(tensor, offset, c * c * 4)
            rows = rng.choice(c, size=min(c, 4), replace=False)  # a few rows of values, the rest a hole
            for row in rows:
                file.seek(offset + int(row) * c * 4)
                file.write((rng.standard_normal(c) * 0.1).astype(np.float32).tobytes())
            weights.append(tensor)
            offset += c * c * 4
        for i in range(LAYERS):  # the biases: real values, in the same file (as exporters write them)
            tensor = TensorProto(name=f"bias{i}", data_type=TensorProto.FLOAT, dims=[c])
            _refer(tensor, offset, c * 4)
            file.seek(offset)
            file.write(rng.standard_normal(c).astype(np.float32).tobytes())
            biases.append(tensor)
            offset += c * 4
    os.truncate(data, offset)
    target = numpy_helper.from_array(np.array([1, c], np.int64), "target")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c])
    ours, standard, h = [], [], "x"
    for i in range(LAYERS):
        ours += [helper.make_node("Broadcast", [f"bias{i}", "target", "axes"], [f"b{i}"], domain=DOMAIN,
                                  mode="explicit"),
                 helper.make_node("Add", [h, f"b{i}"], [f"a{i}"], domain=DOMAIN, auto_broadcast="pdpd"),
                 helper.make_node("MatMul", [f"a{i}", f"W{i}"], [f"m{i}"]),
                 helper.make_node("Tanh", [f"m{i}"], [f"h{i}"])]
        standard += [helper.make_node("Add", [h, f"bias{i}"], [f"a{i}"]),
                     helper.make_node("MatMul", [f"a{i}", f"W{i}"], [f"m{i}"]),
                     helper.make_node("Tanh", [f"m{i}"], [f"h{i}"])]
        h = f"h{i}"
    y = helper.make_tensor_value_info(h, TensorProto.FLOAT, [1, c])
    for name, nodes, extra, opsets in (
            ("ours", ours, [target, axes], [helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]),
            ("standard", standard, [], [helper.make_opsetid("", 17)])):
        graph = helper.make_graph(nodes, name, [x], [y], [*weights, *biases, *extra])
        onnx.save(helper.make_model(graph, opset_imports=opsets, ir_version=10), folder / f"{name}.onnx")
    return c


def _refer(tensor: object, offset: int, length: int) -> None:
    from onnx import TensorProto

    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", str(offset)), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


def child(kind: str, folder: Path, out: Path) -> None:
    """One measurement in this process: prints JSON {seconds, peak_mib}; saves the output in ``out`` (sessions)."""
    feeds = None
    if kind in ("plain", "converted", "numpy", "native"):
        c = json.loads((folder / "side.json").read_text())["c"]
        feeds = {"x": np.random.default_rng(1).standard_normal((1, c)).astype(np.float32)}
    if kind == "floor":
        import onnx
        start = time.perf_counter()
        model = onnx.load(str(folder / "ours.onnx"), load_external_data=False)
        target = folder / "out" / "floor.onnx"
        onnx.save(model, str(target))
        _copy_sparse(folder / "weights.bin", target.parent / "weights.bin")
    elif kind == "convert":
        import onnx_bcast
        start = time.perf_counter()
        onnx_bcast.save_model(onnx_bcast.convert(str(folder / "ours.onnx")), folder / "out" / "converted.onnx")
    elif kind == "cli":
        from onnx_bcast.cli import main as cli
        start = time.perf_counter()
        code = cli.main(["convert", str(folder / "ours.onnx"), "-o", str(folder / "out" / "cli.onnx"), "-q", "--force"])
        assert code == 0, code
    else:
        import onnxruntime as ort
        start = time.perf_counter()
        if kind in ("plain", "converted"):
            path = folder / ("standard.onnx" if kind == "plain" else "out/cli.onnx")  # the last one written
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        else:
            import onnx_bcast
            session = onnx_bcast.InferenceSession(str(folder / "ours.onnx"), backend=kind)
        np.save(out, session.run(None, feeds)[0])
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mib": peak}))


def _copy_sparse(source: Path, target: Path) -> None:
    """The data regions of ``source`` copied in the kernel to a new ``target`` of the same size (holes stay holes):
    the floor's way of placing the data beside an output in another folder, as convert does on this machine."""
    with open(source, "rb") as src, open(target, "wb") as dst:
        size, position = os.fstat(src.fileno()).st_size, 0
        while position < size:
            try:
                start = os.lseek(src.fileno(), position, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(src.fileno(), start, os.SEEK_HOLE)
            while start < end:
                start += os.copy_file_range(src.fileno(), dst.fileno(), end - start, start, start)
            position = end
        os.ftruncate(dst.fileno(), size)


def measure(kind: str, folder: Path) -> dict:
    out = folder / f"{kind}.npy"
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", kind, str(folder), str(out)],
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


CONVERT_KINDS = ("floor", "convert", "cli")


def run_size(gib: float, rounds: int, root: Path, convert_rounds: int = 15) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"big_{gib}_", dir=root))
    try:
        c = build(folder, int(gib * 1024**3))
        (folder / "side.json").write_text(json.dumps({"c": c}))
        (folder / "out").mkdir()
        results: dict[str, list[dict]] = {kind: [] for kind in KINDS}
        for round_index in range(max(rounds, convert_rounds) + 1):  # round 0 warms the page cache
            for kind in KINDS:
                if round_index > (convert_rounds if kind in CONVERT_KINDS else rounds):
                    continue  # conversions take milliseconds: more rounds of them, for a steadier median
                for name in ("converted.onnx", "cli.onnx", "floor.onnx", "weights.bin"):
                    if kind in CONVERT_KINDS and (folder / "out" / name).exists():
                        (folder / "out" / name).unlink()  # each conversion writes and places from scratch
                result = measure(kind, folder)
                if round_index:
                    results[kind].append(result)
                elif "error" in result:
                    results[kind].append(result)
        equal = {}
        want = np.load(folder / "plain.npy")
        for kind in ("converted", "numpy", "native"):
            path = folder / f"{kind}.npy"
            equal[kind] = path.exists() and np.array_equal(np.load(path), want) and np.load(path).dtype == want.dtype
        return {"gib": gib, "c": c, "results": results, "equal": equal,
                "data_bytes": (folder / "weights.bin").stat().st_size}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _median(results: list[dict], key: str) -> float | None:
    values = [r[key] for r in results if key in r]
    return statistics.median(values) if values else None


def _round_ratios(results: list[dict], baselines: list[dict]) -> list[float]:
    """Per counted round: the measurement's time over the baseline's of the same round."""
    return [r["seconds"] / b["seconds"] for r, b in zip(results, baselines, strict=True)]


def report(sizes: list[dict]) -> bool:
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, python "
          f"{platform.python_version()}, load average {os.getloadavg()[0]:.2f}")
    print("\n| weights | convert time / floor (median of the rounds' ratios, their range; median times) | "
          "convert peak above floor | `onnx-bcast convert` time / floor | "
          "numpy backend time / plain ORT | numpy memory / plain ORT | native time / plain ORT | "
          "native memory / plain ORT | outputs equal |")
    print("|---|---|---|---|---|---|---|---|---|")
    holds = True
    for size in sizes:
        res = size["results"]
        errors = {k: v[0]["error"] for k, v in res.items() if v and "error" in v[0]}
        if errors:
            print(f"| {size['gib']} GiB | " + "; ".join(f"{k} failed: {e}" for k, e in errors.items()) + " |")
            holds = False
            continue
        t = {k: _median(v, "seconds") for k, v in res.items()}
        m = {k: _median(v, "peak_mib") for k, v in res.items()}
        ratios = _round_ratios(res["convert"], res["floor"])  # each round's convert and floor ran one after the
        convert_time, above = statistics.median(ratios), m["convert"] - m["floor"]  # other: the drift cancels
        cells = [f"{size['gib']} GiB (C={size['c']})",
                 f"{convert_time:.2f}x ({min(ratios):.2f}-{max(ratios):.2f}x; {t['convert'] * 1e3:.2f} ms vs "
                 f"{t['floor'] * 1e3:.2f} ms)",
                 f"{above:.0f} MiB ({m['convert']:.0f} MiB)", f"{t['cli'] / t['floor']:.2f}x ({t['cli'] * 1e3:.1f} ms)"]
        ok = convert_time <= GOAL_CONVERT_TIME and above <= GOAL_CONVERT_MIB
        for kind in ("numpy", "native"):
            time_ratio, memory_ratio = t[kind] / t["plain"], m[kind] / m["plain"]
            cells += [f"{time_ratio:.2f}x ({t[kind]:.2f} s vs {t['plain']:.2f} s)",
                      f"{memory_ratio:.2f}x ({m[kind]:.0f} vs {m['plain']:.0f} MiB)"]
            ok = ok and time_ratio <= GOAL_SESSION_TIME and memory_ratio <= GOAL_SESSION_MEMORY
        equal = all(size["equal"].values())
        cells.append("yes" if equal else f"NO: {size['equal']}")
        print("| " + " | ".join(cells) + " |")
        holds = holds and ok and equal
    print(f"\n- goals: convert time <= {GOAL_CONVERT_TIME:g}x the floor and peak <= {GOAL_CONVERT_MIB} MiB above it; "
          f"each backend's load + first run <= {GOAL_SESSION_TIME:g}x and peak memory <= {GOAL_SESSION_MEMORY:g}x "
          f"plain ORT's; outputs equal -> {'HOLD' if holds else 'FAIL'}")
    return holds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[0.5, 2.5, 8.0], help="GiB of weights")
    parser.add_argument("--rounds", type=int, default=3, help="counted rounds per size (after one warm-up)")
    parser.add_argument("--convert-rounds", type=int, default=15,
                        help="counted rounds of the floor and the conversions (each a few milliseconds)")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()),
                        help="where the sparse files go (a disk, not tmpfs: read holes would take memory)")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "FOLDER", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return 0
    sizes = []
    for gib in args.sizes:
        sizes.append(run_size(gib, args.rounds, args.dir, args.convert_rounds))
        print(f"[{gib} GiB done]", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(sizes, indent=1))
    return 0 if report(sizes) else 1


if __name__ == "__main__":
    sys.exit(main())
