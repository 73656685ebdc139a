"""The IR route on the real-model corpus (``bench/real_models.py check``): per model, ``ir_to_onnx``'s result against
ONNX Runtime on the original ONNX model, with and without ``keep_ops``, its interface against the IR's, OpenVINO on
the written model, and ``onnx-bcast from-ir --verify``.

Verdicts: ``equal`` (every output within ``TOLERANCE`` of ORT on the original, same shapes), ``refused`` (an
exception, named, before a model exists), ``wrong`` (a model that runs and gives other values or shapes: silently
wrong), ``invalid`` (a model returned that onnx.checker (full) or ORT refuses, or whose run fails).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import onnx
from real_models import CorpusModel, child_env, ir_path, onnx_path

log = logging.getLogger(__name__)

TOLERANCE = {"float32": 1e-4, "float64": 1e-6, "float16": 1e-2}  # max abs diff; other dtypes must be equal
# OpenVINO's CPU plugin against ORT, also on the IR itself: nudenet's box coordinates (up to ~320) differ by 1.2e-4,
# 4 float32 ulps. Where OpenVINO runs, a float output may also differ by OPENVINO_RTOL times the expected value.
OPENVINO_RTOL = 1e-5
_NOISE = ("Exception from ", "Check '", "FrontEnd API failed", "Model wasn't fully converted",
          "Failed operations detailed log", "Summary:")
VERDICTS = ("equal", "refused", "wrong", "invalid")


@dataclass
class Outcome:
    """One way of running the converted model, against ORT on the original."""

    verdict: str  # one of VERDICTS, or "n/a" where the route could not be tried
    detail: str = ""
    diffs: list[float | None] = field(default_factory=list)  # per output: max abs diff (None: shapes differ)

    @property
    def worst(self) -> float | None:
        known = [d for d in self.diffs if d is not None]
        return max(known) if known else None


@dataclass
class Report:
    """Everything measured for one corpus model."""

    name: str
    ir_ops: dict[str, int]
    interface: list[str]  # where the written model's inputs/outputs differ from the IR's (names, dtypes, order)
    plain: Outcome
    keep_numpy: Outcome
    keep_native: Outcome
    openvino_written: Outcome  # OpenVINO reading the plain written model, on the CPU plugin
    openvino_ir: Outcome  # OpenVINO's CPU plugin on the IR itself: how close OpenVINO gets at all
    cli_exit: int | None
    cli_message: str
    seconds: dict[str, float]


def first_line(err: BaseException) -> str:
    """The exception's type and first line; OpenVINO's messages without their source-location lines."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(_NOISE)] or lines[:1]
    text = " | ".join(useful[:3]) if len(lines) > 1 and lines[0].startswith(_NOISE) else (lines[:1] or [""])[0]
    return f"{type(err).__name__}: {text[:240]}"


def ir_op_types(xml: Path) -> dict[str, int]:
    """How many layers of each ``type-version`` the IR holds (including those inside If/Loop bodies)."""
    counts: Counter[str] = Counter()
    for layer in ElementTree.parse(xml).iter("layer"):
        counts[f"{layer.get('type')}-{layer.get('version')}"] += 1
    return dict(sorted(counts.items()))


def ir_interface(xml: Path) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, int]]]:
    """The IR's inputs and outputs, in order: (name, numpy dtype name, rank or -1)."""
    import openvino as ov

    model = ov.Core().read_model(str(xml))

    def describe(ports: list) -> list[tuple[str, str, int]]:
        shape = [port.get_partial_shape() for port in ports]
        return [(port.get_any_name(), np.dtype(port.get_element_type().to_dtype()).name,
                 s.rank.get_length() if s.rank.is_static else -1) for port, s in zip(ports, shape, strict=True)]

    return describe(model.inputs), describe(model.outputs)


def onnx_interface(model: onnx.ModelProto) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, int]]]:
    """The ONNX model's graph inputs (not initializers) and outputs, in order: (name, numpy dtype name, rank)."""
    initializers = {init.name for init in model.graph.initializer}

    def describe(values: list) -> list[tuple[str, str, int]]:
        found = []
        for value in values:
            tensor = value.type.tensor_type
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)).name if tensor.elem_type else "?"
            found.append((value.name, dtype, len(tensor.shape.dim) if tensor.HasField("shape") else -1))
        return found

    return describe([v for v in model.graph.input if v.name not in initializers]), describe(model.graph.output)


def interface_differences(ir: tuple, written: tuple) -> list[str]:
    """Where the written model's inputs/outputs differ from the IR's: names, order, dtypes, ranks."""
    found = []
    for kind, want, got in (("inputs", ir[0], written[0]), ("outputs", ir[1], written[1])):
        if [w[0] for w in want] != [g[0] for g in got]:
            found.append(f"{kind} named {[g[0] for g in got]}, the IR's {[w[0] for w in want]}")
        for w, g in zip(want, got, strict=False):
            if w[1] != g[1]:
                found.append(f"{kind[:-1]} {w[0]}: dtype {g[1]}, the IR's {w[1]}")
            if w[2] >= 0 and g[2] >= 0 and w[2] != g[2]:
                found.append(f"{kind[:-1]} {w[0]}: rank {g[2]}, the IR's {w[2]}")
    return found


def compare(got: list[np.ndarray], want: list[np.ndarray], rtol: float = 0.0) -> Outcome:
    """Outputs by position against the original's: per output the max abs diff, the verdict by ``TOLERANCE``
    (plus ``rtol`` times the expected value)."""
    if len(got) != len(want):
        return Outcome("wrong", f"{len(got)} outputs, the original has {len(want)}")
    diffs: list[float | None] = []
    problems = []
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g)
        if g.shape != w.shape:
            diffs.append(None)
            problems.append(f"output {index}: shape {g.shape}, the original's {w.shape}")
            continue
        tolerance = TOLERANCE.get(w.dtype.name, 0.0)
        if w.dtype.kind in "fc" or g.dtype.kind in "fc":
            a, b = g.astype(np.float64), w.astype(np.float64)
            same_nan = np.isnan(a) == np.isnan(b)
            error = np.where(np.isnan(a) & np.isnan(b), 0.0, np.abs(a - b))
            diff = float(np.max(error, initial=0.0)) if same_nan.all() else float("inf")
            within = bool(same_nan.all() and np.all(error <= tolerance + rtol * np.abs(np.nan_to_num(b))))
        else:
            diff = float(np.max(np.abs(g.astype(np.int64) - w.astype(np.int64)), initial=0))
            within = diff <= tolerance
        diffs.append(diff)
        if not within:
            problems.append(f"output {index}: max abs diff {diff:.3g}")
    return Outcome("wrong" if problems else "equal", "; ".join(problems), diffs)


def feeds_for(names: list[tuple[str, str, int]], feeds: dict[str, np.ndarray], order: list[str]) -> dict:
    """The inputs for a model whose inputs are ``names``: by name, or else by position in the original's ``order``,
    cast to the declared dtype (a different dtype is reported as an interface difference, not here)."""
    chosen = {}
    for index, (name, dtype, _rank) in enumerate(names):
        value = feeds[name] if name in feeds else feeds[order[index]] if index < len(order) else None
        if value is None:
            raise ValueError(f"no value for input {name}")
        chosen[name] = value.astype(dtype) if dtype != "?" and value.dtype.name != dtype else value
    return chosen


def run_session(session: object, feeds: dict[str, np.ndarray], order: list[str]) -> list[np.ndarray]:
    inputs = [(i.name, _ort_dtype(i.type), len(i.shape or [])) for i in session.get_inputs()]
    return session.run(None, feeds_for(inputs, feeds, order))


def _ort_dtype(text: str) -> str:
    names = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
             "tensor(bool)": "bool"}
    return names.get(text, text[len("tensor("):-1] if text.startswith("tensor(") else "?")


def reference(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """ONNX Runtime on the original model: what every route is compared with."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def plain_route(model: onnx.ModelProto, feeds: dict, order: list[str], want: list[np.ndarray]) -> Outcome:
    """The lowered model in plain ONNX Runtime; onnx.checker (full) must accept it too."""
    import onnxruntime as ort

    checker = ""
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as err:  # noqa: BLE001 - reported
        checker = f"onnx.checker: {first_line(err)}"
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        got = run_session(session, feeds, order)
    except Exception as err:  # noqa: BLE001 - reported
        return Outcome("invalid", "; ".join(filter(None, [checker, f"ORT: {first_line(err)}"])))
    outcome = compare(got, want)
    if checker:
        return Outcome("invalid", "; ".join(filter(None, [checker, outcome.detail])), outcome.diffs)
    return outcome


def keep_ops_route(model: onnx.ModelProto | None, refusal: str, backend: str, feeds: dict, order: list[str],
                   want: list[np.ndarray]) -> Outcome:
    """The model with our ops kept, in ``onnx_bcast.InferenceSession`` with ``backend``."""
    if model is None:
        return Outcome("refused", refusal)
    import onnx_bcast

    try:
        session = onnx_bcast.InferenceSession(model.SerializeToString(), backend=backend)
        got = run_session(session, feeds, order)
    except Exception as err:  # noqa: BLE001 - reported
        return Outcome("invalid", first_line(err))
    return compare(got, want)


def openvino_run(path: Path, feeds: dict, order: list[str], want: list[np.ndarray]) -> Outcome:
    """OpenVINO's CPU plugin (float32 precision) on a model file (IR or ONNX), against ORT on the original."""
    import openvino as ov

    try:
        core = ov.Core()
        compiled = core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        inputs = [(port.get_any_name(), np.dtype(port.get_element_type().to_dtype()).name, -1)
                  for port in compiled.inputs]
        chosen = feeds_for(inputs, feeds, order)
        results = compiled({port: chosen[port.get_any_name()] for port in compiled.inputs})
        got = [np.asarray(results[port]) for port in compiled.outputs]
    except Exception as err:  # noqa: BLE001 - reported
        return Outcome("invalid", f"OpenVINO: {first_line(err)}")
    return compare(got, want, rtol=OPENVINO_RTOL)


def from_ir_cli(xml: Path, folder: Path, feeds: dict[str, np.ndarray] | None = None
                ) -> tuple[int | None, str, float, list[str]]:
    """``onnx-bcast from-ir XML -o OUT --verify`` in a new process, with ``feeds`` given as ``--input NAME=FILE.npy``
    (as a user gives the inputs a model takes): its exit, its last line, its wall time, and what it printed on
    stderr when it succeeded (nothing is expected there)."""
    command = [sys.executable, "-m", "onnx_bcast", "from-ir", str(xml), "-o", str(folder / "cli.onnx"), "--verify",
               "--force"]
    for name, value in (feeds or {}).items():
        path = folder / f"input_{len(command)}.npy"
        np.save(path, value)
        command += ["--input", f"{name}={path}"]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=child_env())
    except subprocess.TimeoutExpired:
        return None, "timed out after 900 s", time.perf_counter() - start, []
    lines = [line for line in (done.stderr if done.returncode else done.stdout).splitlines() if line.strip()]
    noise = [] if done.returncode else [line for line in done.stderr.splitlines() if line.strip()]
    return done.returncode, (lines[-1] if lines else "")[:200], time.perf_counter() - start, noise


def check_model(entry: CorpusModel, *, cli: bool = True, seed: int = 0) -> Report:
    """Every measurement of the IR route on one corpus model."""
    from onnx_bcast.onnxifier import OnnxifierMissing, ir_to_onnx

    source, xml = onnx_path(entry), ir_path(entry)
    feeds = entry.feeds(seed)
    order = list(entry.inputs)
    want = reference(source, feeds)
    ir = ir_interface(xml)
    seconds: dict[str, float] = {}
    models: dict[str, onnx.ModelProto | None] = {}
    refusals: dict[str, str] = {}
    for label, keep in (("plain", False), ("keep_ops", True)):
        start = time.perf_counter()
        try:
            models[label] = ir_to_onnx(xml, keep_ops=keep)
        except OnnxifierMissing:
            raise
        except Exception as err:  # noqa: BLE001 - reported
            models[label], refusals[label] = None, first_line(err)
        seconds[f"ir_to_onnx_{label}"] = time.perf_counter() - start
    plain = models["plain"]
    with tempfile.TemporaryDirectory() as folder:
        if plain is None:
            outcome, written, interface = Outcome("refused", refusals["plain"]), Outcome("n/a", "no model"), []
        else:
            outcome = plain_route(plain, feeds, order, want)
            interface = interface_differences(ir, onnx_interface(plain))
            path = Path(folder) / "written.onnx"
            onnx.save_model(plain, str(path))
            written = openvino_run(path, feeds, order, want)
        keep = models["keep_ops"]
        numpy_outcome = keep_ops_route(keep, refusals.get("keep_ops", ""), "numpy", feeds, order, want)
        native_outcome = keep_ops_route(keep, refusals.get("keep_ops", ""), "native", feeds, order, want)
        on_ir = openvino_run(xml, feeds, order, want)
        exit_code, message = None, "not run"
        if cli:
            exit_code, message, seconds["from_ir_verify_cli"], _ = from_ir_cli(xml, Path(folder), feeds)
    return Report(entry.name, ir_op_types(xml), interface, outcome, numpy_outcome, native_outcome, written, on_ir,
                  exit_code, message, {k: round(v, 3) for k, v in seconds.items()})


def _cell(outcome: Outcome) -> str:
    worst = outcome.worst
    return outcome.verdict + (f" {worst:.1e}" if worst is not None else "")


def print_table(reports: list[Report]) -> None:
    """One line per model, then the details of whatever is not equal, then the counts."""
    header = (f"{'model':20} {'plain ORT':17} {'keep numpy':17} {'keep native':17} {'names/dtypes':12} "
              f"{'OV written':17} {'OV on IR':17} {'--verify':8} {'s':>5}")
    print(header)
    for r in reports:
        names = "same" if not r.interface else f"{len(r.interface)} differ"
        exit_text = "-" if r.cli_exit is None else f"exit {r.cli_exit}"
        print(f"{r.name:20} {_cell(r.plain):17} {_cell(r.keep_numpy):17} {_cell(r.keep_native):17} {names:12} "
              f"{_cell(r.openvino_written):17} {_cell(r.openvino_ir):17} {exit_text:8} "
              f"{r.seconds.get('ir_to_onnx_plain', 0):5.1f}")
    print()
    for r in reports:
        lines = [f"{label}: {o.detail}" for label, o in (("plain", r.plain), ("keep numpy", r.keep_numpy),
                                                         ("keep native", r.keep_native),
                                                         ("OV written", r.openvino_written)) if o.detail]
        lines += [f"names/dtypes: {text}" for text in r.interface]
        if r.cli_exit is not None:
            lines.append(f"from-ir --verify: exit {r.cli_exit}: {r.cli_message}")
        if lines:
            print(f"{r.name}:\n  " + "\n  ".join(lines))
    print()
    print(summary(reports))


def summary(reports: list[Report]) -> str:
    """Counts per route: equal / refused / silently wrong / written-but-invalid; interface and --verify."""
    lines = []
    routes = (("plain ORT", lambda r: r.plain), ("keep-ops numpy", lambda r: r.keep_numpy),
              ("keep-ops native", lambda r: r.keep_native), ("OpenVINO on written", lambda r: r.openvino_written))
    for label, pick in routes:
        counts = Counter(pick(r).verdict for r in reports)
        lines.append(f"{label}: {counts['equal']} equal, {counts['refused']} refused, {counts['wrong']} silently "
                     f"wrong, {counts['invalid']} written-but-invalid" + (f", {counts['n/a']} n/a" if counts["n/a"]
                                                                           else ""))
    same = sum(1 for r in reports if r.plain.verdict != "refused" and not r.interface)
    lines.append(f"names/dtypes/order the IR's: {same} of {sum(1 for r in reports if r.plain.verdict != 'refused')}")
    ran = [r for r in reports if r.cli_exit is not None]
    if ran:
        lines.append(f"from-ir --verify exits 0: {sum(1 for r in ran if r.cli_exit == 0)} of {len(ran)}")
    return f"{len(reports)} models\n" + "\n".join(lines)


def check_all(models: list[CorpusModel], *, json_path: str | None = None, cli: bool = True) -> int:
    """``real_models.py check``: the table and the summary; exit 0 when every route is equal on every model."""
    import onnxifier
    import onnxruntime
    import openvino

    onnxruntime.set_default_logger_severity(3)
    print(f"onnxifier {onnxifier.__version__}, openvino {openvino.__version__.split('-')[0]}, "
          f"onnxruntime {onnxruntime.__version__}, numpy {np.__version__}; tolerance {TOLERANCE}")
    reports = []
    for entry in models:
        log.info("checking %s", entry.name)
        reports.append(check_model(entry, cli=cli))
    print_table(reports)
    if json_path:
        Path(json_path).write_text(json.dumps([asdict(r) for r in reports], indent=1))
    good = all(r.plain.verdict == r.keep_numpy.verdict == r.keep_native.verdict == "equal" and not r.interface
               for r in reports)
    return 0 if good else 1
