"""One ONNX node test case through OpenVINO's ONNX frontend, IR, IR-to-ONNX routes and plain ONNX Runtime, with
its verdicts (``bench/onnx_node_cases.py`` runs them all): in a child process that may die without ending the run."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import re
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

log = logging.getLogger("node_case_run")

_GOT = "_outputs"  # a step's outputs, kept in the record until compared with OpenVINO's CPU plugin's
STATUSES = ("equal", "refused", "ort refuses", "wrong", "not compared", "crashed", "timeout")
TRIVIAL_IR_OPS = frozenset({"Parameter", "Result", "Constant"})
CASE_TIMEOUT = 300.0  # seconds for one case's steps together


@dataclass(frozen=True)
class NodeCase:
    """One ONNX node test case, as plain data a child process can receive."""

    name: str
    model: bytes
    inputs: list[Any]
    outputs: list[Any]
    rtol: float
    atol: float



def node_case(case: Any) -> NodeCase:
    """One of onnx's ``TestCase`` (kind ``node``: one data set) as a ``NodeCase``."""
    (inputs, outputs), = case.data_sets
    return NodeCase(case.name, case.model.SerializeToString(), [_as_array(v) for v in inputs],
                    [_as_array(v) for v in outputs], float(case.rtol), float(case.atol))


def _as_array(value: Any) -> Any:
    """A case's input or output as numpy (TensorProto and numpy scalars too; sequences as lists, None as None)."""
    import onnx

    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, list | tuple):
        return [_as_array(v) for v in value]
    return value if value is None or isinstance(value, np.ndarray) else np.asarray(value)


# ---- comparison with ONNX's expected outputs ---------------------------------------------------------------------

def tolerance(dtype: np.dtype, case: NodeCase) -> tuple[float, float]:
    """(rtol, atol) for a float output of ``dtype``."""
    if dtype.itemsize <= 2:  # float16, bfloat16 (ml_dtypes)
        return 1e-2, 1e-3
    return max(case.rtol, 1e-3), max(case.atol, 1e-5)


def _is_float(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.complexfloating) or dtype.kind == "V" \
        or "float" in dtype.name


def compare(got: list[Any], want: list[Any], case: NodeCase) -> str | None:
    """None when ``got`` equals ``want`` (ONNX's expected outputs), else what differs first."""
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        if isinstance(w, list) or not isinstance(g, np.ndarray):
            return f"output {index}: {type(g).__name__}, expected {type(w).__name__}"
        w = np.asarray(w)
        if g.dtype != w.dtype:
            return f"output {index}: dtype {g.dtype}, expected {w.dtype}"
        if g.shape != w.shape:
            return f"output {index}: shape {g.shape}, expected {w.shape}"
        if _is_float(w.dtype):
            rtol, atol = tolerance(w.dtype, case)
            g64, w64 = g.astype(np.complex128 if w.dtype.kind == "c" else np.float64), w.astype(g.dtype).astype(
                np.complex128 if w.dtype.kind == "c" else np.float64)
            if not np.allclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True):
                with np.errstate(invalid="ignore"):
                    diff = np.nanmax(np.abs(g64 - w64)) if g64.size else 0.0
                return f"output {index}: values differ (max abs diff {float(diff):.3g}, rtol {rtol}, atol {atol})"
        elif not np.array_equal(g, w):
            wrong = int(np.sum(g != w))
            return f"output {index}: values differ ({wrong} of {w.size} elements)"
    return None


# ---- one case's steps (run in the child) -------------------------------------------------------------------------

_BOILERPLATE = re.compile(r"^(Exception from \S+|Check '.*' failed at \S+|FrontEnd API failed with \w+:?|Summary:)$")


def _first_line(err: BaseException) -> str:
    """The error's type and message, OpenVINO's where-it-was-raised lines left out, on one line."""
    lines = [line.strip() for line in str(err).splitlines()]
    text = " | ".join(line for line in lines if line and not _BOILERPLATE.match(line))
    return f"{type(err).__name__}: {text[:1000]}"


def _feeds(model: Any, case: NodeCase) -> dict[str, Any]:
    """The case's inputs for the written model's inputs: by name, else by position when the counts agree."""
    import onnx

    case_names = [i.name for i in onnx.load_model_from_string(case.model).graph.input]
    by_name = dict(zip(case_names, case.inputs, strict=False))
    names = [i.name for i in model.graph.input]
    if all(name in by_name for name in names):
        return {name: by_name[name] for name in names}
    if len(names) == len(case.inputs):
        return dict(zip(names, case.inputs, strict=True))
    missing = [name for name in names if name not in by_name]
    raise LookupError(f"written inputs {missing} are not the case's inputs {case_names}")


def _signature(model: Any, feeds: dict[str, Any]) -> list[str]:
    """Where the written model's declared input types differ from the case's inputs' dtypes."""
    import onnx

    notes = []
    for value in model.graph.input:
        if value.name in feeds and value.type.HasField("tensor_type"):
            declared = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
            given = np.asarray(feeds[value.name]).dtype
            if declared != given:
                notes.append(f"input {value.name} declared {declared}, case gives {given}")
    return notes


def _written_ops(model: Any) -> list[str]:
    return sorted({f"{node.domain + '::' if node.domain else ''}{node.op_type}" for node in model.graph.node})


def _nonstandard_ops(model: Any) -> list[str]:
    import onnx

    return sorted({node.op_type for node in model.graph.node
                   if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type)})


#: numpy dtypes ORT's Python API takes and returns (bfloat16 goes in as an OrtValue and comes out through a Cast)
_ORT_NUMPY = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                        "float32", "float64", "complex64", "complex128"})
_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def _carried(dtype: np.dtype) -> bool:
    """Whether ORT's Python API takes and returns ``dtype`` here (strings and objects too)."""
    return dtype.name in _ORT_NUMPY or dtype == _BFLOAT16 or dtype.kind in "OUS"


def _ort_value(value: Any) -> Any:
    """``value`` as ORT's ``run`` takes it: bfloat16 as an OrtValue of its bits, the rest as is."""
    import onnxruntime as ort
    from onnx import TensorProto

    if isinstance(value, np.ndarray) and value.dtype == _BFLOAT16:
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(value.view(np.uint16), TensorProto.BFLOAT16)
    return value


def _bfloat16_outputs_as_float(model: Any) -> tuple[Any, set[int]]:
    """``model`` with a Cast to float32 after each bfloat16 output (exact; ORT returns no bfloat16 to numpy)."""
    from onnx import TensorProto, helper

    widened = {k for k, o in enumerate(model.graph.output) if o.type.tensor_type.elem_type == TensorProto.BFLOAT16}
    if not widened:
        return model, widened
    copy = type(model)()
    copy.CopyFrom(model)
    for k in widened:
        output = copy.graph.output[k]
        cast = helper.make_node("Cast", [output.name], [f"{output.name}__as_float32"], to=TensorProto.FLOAT)
        copy.graph.node.append(cast)
        output.name = cast.output[0]
        output.type.tensor_type.elem_type = TensorProto.FLOAT
    return copy, widened


def _run_route(convert: Any, xml: Path, case: NodeCase, ir_ops: list[str]) -> dict[str, Any]:
    import onnxruntime as ort

    try:
        model = convert(str(xml))
    except Exception as err:  # noqa: BLE001 - a refusal is a verdict
        text = _first_line(err)
        named = any(re.search(rf"\b{re.escape(op.split('-')[0])}\b", text) for op in ir_ops) or bool(
            re.search(r"\b(Parameter|Result|Const)-\d+ '", text))  # the IR op behind an input, output or constant
        return {"status": "refused", "detail": text, "named": named}
    record: dict[str, Any] = {"written_ops": _written_ops(model), "nonstandard_ops": _nonstandard_ops(model)}
    try:
        feeds = _feeds(model, case)
    except LookupError as err:
        return {**record, "status": "ort refuses", "stage": "inputs", "detail": str(err)}
    record["signature"] = _signature(model, feeds)
    sequences = [i.name for i in model.graph.input if isinstance(feeds.get(i.name), list) and i.type.HasField(
        "tensor_type")]
    if sequences:  # e.g. optional(sequence(tensor)): OpenVINO's frontend declares the tensor alone
        return {**record, "status": "not compared",
                "detail": f"the case feeds a sequence to {', '.join(sequences)}, which the IR declares a tensor"}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    try:
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001
        return {**record, "status": "ort refuses", "stage": "load", "detail": _first_line(err)}
    uncarried = sorted({str(v.dtype) for v in [*feeds.values(), *case.outputs]
                        if isinstance(v, np.ndarray) and not _carried(v.dtype)})
    if uncarried:
        return {**record, "status": "not compared", "detail": f"ORT's Python API carries no {', '.join(uncarried)}"}
    model, widened = _bfloat16_outputs_as_float(model)
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - e.g. a Cast to=0 ORT loads only where it makes a graph output
        return {**record, "status": "ort refuses", "stage": "load (bfloat16 outputs cast to float32)",
                "detail": _first_line(err)}
    try:
        got = session.run(None, {name: _ort_value(value) for name, value in feeds.items()})
    except Exception as err:  # noqa: BLE001
        return {**record, "status": "ort refuses", "stage": "run", "detail": _first_line(err)}
    got = [g.astype(_BFLOAT16) if k in widened else g for k, g in enumerate(got)]
    diff = compare(got, case.outputs, case)
    return {**record, "status": "wrong" if diff else "equal", "detail": diff or "", _GOT: got}


def _run_openvino_cpu(core: Any, xml: Path, case: NodeCase) -> dict[str, Any]:
    try:
        compiled = core.compile_model(str(xml), "CPU", {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"})
        names = [p.get_any_name() for p in compiled.inputs]
        import onnx

        by_name = dict(zip([i.name for i in onnx.load_model_from_string(case.model).graph.input], case.inputs,
                           strict=False))
        feeds = [by_name[name] if name in by_name else case.inputs[k] for k, name in enumerate(names)]
        result = compiled(feeds)
        got = [np.asarray(result[output]) for output in compiled.outputs]
    except Exception as err:  # noqa: BLE001
        return {"status": "refused", "detail": _first_line(err)}
    diff = compare(got, case.outputs, case)
    return {"status": "wrong" if diff else "equal", "detail": diff or "", _GOT: got}


def _agreement(route: dict[str, Any], got: list[np.ndarray] | None, reference: list[np.ndarray] | None,
               case: NodeCase) -> None:
    """A wrong route's outputs against OpenVINO's CPU plugin's on the same IR (``openvino cpu agrees``): a route
    that differs from ONNX's expected outputs as the plugin does follows the IR, one that differs from the plugin
    too translates it wrong."""
    if route.get("status") == "wrong" and got is not None and reference is not None:
        difference = compare(got, reference, case)
        route["openvino cpu agrees"] = not difference
        if difference:
            route["openvino cpu difference"] = difference


def default_routes() -> dict[str, Callable[[str], Any]]:
    """The two routes compared: ``ir_to_onnx`` and onnxifier alone, each from an IR path to an ONNX ModelProto."""
    import onnxifier

    from onnx_bcast.onnxifier import ir_to_onnx

    logging.getLogger("O2O").setLevel(logging.CRITICAL)
    return {"IR route": ir_to_onnx, "onnxifier alone": lambda xml: onnxifier.convert(xml, print_passes=False)}


def case_steps(case: NodeCase, folder: Path, routes: Callable[[], dict[str, Callable[[str], Any]]] = default_routes
               ) -> Iterator[dict[str, Any]]:
    """The case's record after each step (openvino, each route, openvino cpu): the last one is complete.

    ``record["steps"]`` lists the steps planned, ``record["done"]`` those done, ``record["seconds"]`` their times.
    """
    import openvino as ov

    converters = routes()
    record: dict[str, Any] = {"name": case.name, "steps": ["openvino", *converters, "openvino cpu"], "done": [],
                              "seconds": {}}

    def done(step: str, started: float) -> dict[str, Any]:
        record["done"].append(step)
        record["seconds"][step] = round(time.perf_counter() - started, 3)
        return record

    where = folder / case.name
    where.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        onnx_path, xml = where / "model.onnx", where / "model.xml"
        onnx_path.write_bytes(case.model)
        core = ov.Core()
        try:
            ov_model = core.read_model(str(onnx_path))
        except Exception as err:  # noqa: BLE001
            record.update(openvino="refuses", detail=_first_line(err))
            yield record
            return
        ops = [f"{op.get_type_name()}-{op.get_type_info().version_id.removeprefix('opset')}"
               for op in ov_model.get_ordered_ops()]
        record["ir_ops"] = sorted({op for op in ops if op.split("-")[0] not in TRIVIAL_IR_OPS})
        try:
            ov.save_model(ov_model, str(xml), compress_to_fp16=False)
        except Exception as err:  # noqa: BLE001
            record.update(openvino="refuses", detail=f"save_model: {_first_line(err)}")
            yield record
            return
        record["openvino"] = "reads"
        yield done("openvino", started)
        outputs = {}  # each step's outputs, out of the record (which goes to JSON)
        for route, convert in converters.items():
            started = time.perf_counter()
            record[route] = _run_route(convert, xml, case, record["ir_ops"])
            outputs[route] = record[route].pop(_GOT, None)
            yield done(route, started)
        started = time.perf_counter()
        record["openvino cpu"] = _run_openvino_cpu(core, xml, case)
        cpu = record["openvino cpu"].pop(_GOT, None)
        for route in converters:
            _agreement(record[route], outputs[route], cpu, case)
        yield done("openvino cpu", started)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _worker(connection: Any, folder: str, routes: Callable[[], dict[str, Callable[[str], Any]]]) -> None:
    """The child: receives cases, sends each one's record after every step, then ``None``."""
    warnings.simplefilter("ignore")
    with contextlib.redirect_stdout(sys.stderr):  # onnxifier prints about custom ops; this process's stdout is --list
        while True:
            case = connection.recv()
            if case is None:
                return
            for record in case_steps(case, Path(folder), routes):
                connection.send(record)
            connection.send(None)


# ---- the parent: one child for every case, restarted after a crash -----------------------------------------------

class Isolated:
    """A child process that runs cases' steps; a case that kills or hangs it is recorded, and a new child starts."""

    def __init__(self, folder: Path, routes: Callable[[], dict[str, Callable[[str], Any]]] = default_routes) -> None:
        self.folder = folder
        self.routes = routes  # a module-level function: the child imports it by name
        self.context = multiprocessing.get_context("spawn")
        self.process: Any = None
        self.connection: Any = None
        self.restarts = 0

    def _start(self) -> None:
        self.connection, child = self.context.Pipe()
        self.process = self.context.Process(target=_worker, args=(child, str(self.folder), self.routes),
                                            daemon=True)
        self.process.start()
        child.close()

    def close(self) -> None:
        if self.process is not None and self.process.is_alive():
            self.connection.send(None)
            self.process.join(10)
        self.process = None

    def run(self, case: NodeCase) -> dict[str, Any]:
        if self.process is None or not self.process.is_alive():
            self._start()
        self.connection.send(case)
        record: dict[str, Any] = {"name": case.name, "done": []}
        deadline = time.monotonic() + CASE_TIMEOUT
        while True:
            left = deadline - time.monotonic()
            try:
                ready = left > 0 and self.connection.poll(left)
                message = self.connection.recv() if ready else "timeout"
            except (EOFError, OSError):
                message = "crashed"
            if message is None:
                return record
            if isinstance(message, dict):
                record = message
                continue
            return self._lost(record, message)

    def _lost(self, record: dict[str, Any], how: str) -> dict[str, Any]:
        """The record of a case whose child died or hung: the step it was in gets ``how``."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        detail = f"child {how} (exit code {self.process.exitcode})"
        self.process = None
        self.restarts += 1
        pending = [step for step in record.get("steps", ["openvino"]) if step not in record["done"]]
        if pending:
            if pending[0] == "openvino":
                record.update(openvino=how, detail=detail)
            else:
                record[pending[0]] = {"status": how, "detail": detail}
        log.warning("%s: %s in step %s", record["name"], detail, pending[0] if pending else "-")
        return record


def run_cases(cases: list[NodeCase], folder: Path, *, isolate: bool = True,
              routes: Callable[[], dict[str, Callable[[str], Any]]] = default_routes) -> Iterator[dict[str, Any]]:
    """Every case's complete record; ``isolate``: in the child process (else in this one)."""
    if not isolate:
        for case in cases:
            *_, record = case_steps(case, folder, routes)
            yield record
        return
    runner = Isolated(folder, routes)
    try:
        for case in cases:
            yield runner.run(case)
    finally:
        runner.close()


def verdict(result: dict[str, Any] | None) -> str:
    """A route's result in a few words: its status, ``refused named``/``refused unnamed``, or ``not run``."""
    if result is None:
        return "not run"
    if result["status"] == "refused" and "named" in result:
        return "refused named" if result["named"] else "refused unnamed"
    return result["status"]
