"""``from-ir --verify``: the written model against OpenVINO's CPU plugin running the IR itself, on the same inputs
(the IR's Parameters: given arrays, given shapes, random data), output by output, exactly for integers and bools."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from onnx_bcast.random_inputs import random_feeds

log = logging.getLogger(__name__)

#: (rtol, atol) per float type: float32 and float64 as OpenVINO's CPU plugin (f32 inference precision) and ONNX
#: Runtime differ on whole models (other summation orders, fused kernels); float16 with its 11 bits
TOLERANCE = {np.dtype(np.float16): (1e-2, 1e-2), np.dtype(np.float32): (1e-4, 1e-4),
             np.dtype(np.float64): (1e-4, 1e-4)}


class VerificationFailed(ValueError):
    """The written model and OpenVINO disagree: the message has one line per output that differs."""


@dataclass(frozen=True)
class Comparison:
    name: str
    equal: bool
    detail: str


def _openvino_cpu(xml: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | str:
    """The IR's outputs on OpenVINO's CPU plugin (inference precision f32), or why it refused the inputs."""
    try:
        import openvino as ov
    except ImportError as err:
        raise ImportError(f"--verify runs the IR in OpenVINO ({err}); install it with: pip install "
                          "'onnx-bcast[openvino]'") from None
    core = ov.Core()
    model = core.read_model(str(xml))
    try:
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        request = compiled.create_infer_request()
        by_index = {}
        for index, port in enumerate(compiled.inputs):
            names = port.get_names() or {model.get_parameters()[index].get_friendly_name()}
            by_index[index] = next(feeds[name] for name in names if name in feeds)
        results = request.infer(by_index)
        return [np.asarray(results[port]) for port in compiled.outputs]
    except (RuntimeError, StopIteration) as err:
        return str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__


def compare(name: str, got: np.ndarray, want: np.ndarray) -> Comparison:
    """Exact for integers and bools, within ``TOLERANCE`` for floats; the detail gives the largest difference."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return Comparison(name, False, f"shape {list(got.shape)}, OpenVINO's {list(want.shape)}")
    if got.dtype != want.dtype:
        return Comparison(name, False, f"type {got.dtype}, OpenVINO's {want.dtype}")
    if got.size == 0:
        return Comparison(name, True, "empty")
    if got.dtype.kind != "f":
        differ = int(np.count_nonzero(got != want))
        return Comparison(name, differ == 0, f"{differ} of {got.size} values differ" if differ else "exact")
    rtol, atol = TOLERANCE.get(got.dtype, TOLERANCE[np.dtype(np.float32)])
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    diff = np.where(both_nan, 0.0, np.abs(g - w))
    worst = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff)))
    ok = bool(np.all(both_nan | (diff <= atol + rtol * np.abs(w))))
    return Comparison(name, ok, f"max abs diff {worst:.3g} (rtol {rtol:g}, atol {atol:g})")


def verify_ir(xml: str | Path, model: onnx.ModelProto, *, keep_ops: bool, pythondiv: str = "cpu", seed: int = 0,
              given: dict[str, np.ndarray] | None = None, shapes: dict[str, list[int]] | None = None) -> str:
    """Run ``model`` (the IR written as ONNX) and the IR on OpenVINO's CPU plugin on the same inputs; the summary,
    or ``VerificationFailed`` with the largest difference of each output."""
    import onnxruntime as ort

    from onnx_bcast.ort.session import InferenceSession

    if pythondiv != "cpu" and _floor_divisions(xml):
        raise VerificationFailed("--verify compares with OpenVINO's CPU plugin, which truncates the integer Divide "
                                 "m_pythondiv=true that --pythondiv reference floors; verify with --pythondiv cpu")
    options = ort.SessionOptions()
    options.log_severity_level = 4  # a refusal is reported below, once: not also on ORT's log
    session = (InferenceSession(model, sess_options=options) if keep_ops else
               ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]))
    try:
        feeds = random_feeds(session, seed, given, shapes, nonzero_integers=True)
    except ValueError as err:
        raise VerificationFailed(f"--verify: {err}") from err
    random = sorted(set(feeds) - set(given or {}))
    inputs = f"random inputs {random} (seed {seed})" if random else "the given inputs"
    theirs = _openvino_cpu(Path(xml), feeds)
    try:
        ours: list[np.ndarray] | str = session.run(None, feeds)
    except Exception as err:  # noqa: BLE001 - a refusal, compared with OpenVINO's below
        ours = " ".join(str(err).split())[:300]
    if isinstance(theirs, str) and isinstance(ours, str):  # they agree, but no value was compared
        raise VerificationFailed(f"--verify compared nothing: OpenVINO's CPU plugin and the written model both "
                                 f"refuse {inputs} ({theirs}); give inputs the model accepts with --input-shapes "
                                 "NAME:[DIMS] or --input NAME=FILE.npy")
    if isinstance(theirs, str) or isinstance(ours, str):
        who, what = ("OpenVINO's CPU plugin", theirs) if isinstance(theirs, str) else ("the written model", ours)
        raise VerificationFailed(f"--verify: only {who} refuses {inputs}: {what}")
    names = [output.name for output in model.graph.output]
    results = [compare(name, got, want) for name, got, want in zip(names, ours, theirs, strict=True)]
    failed = [r for r in results if not r.equal]
    if failed:
        raise VerificationFailed(f"--verify: {len(failed)} of {len(results)} outputs differ from OpenVINO's CPU "
                                 f"plugin on {inputs}:\n" + "\n".join(f"  {r.name}: {r.detail}" for r in failed))
    worst = "; ".join(f"{r.name}: {r.detail}" for r in results[:4]) + ("; ..." if len(results) > 4 else "")
    return f"equal to OpenVINO's CPU plugin on {inputs} ({worst})"


def _floor_divisions(xml: str | Path) -> bool:
    """Whether the IR holds a signed-integer Divide with m_pythondiv=true (the .xml alone is read)."""
    from xml.etree import ElementTree

    for layer in ElementTree.parse(xml).getroot().iterfind("layers/layer"):
        data, port = layer.find("data"), layer.find("output/port")
        integer = port is not None and port.get("precision", "").startswith("I")
        if layer.get("type") == "Divide" and integer and (data is None or data.get("m_pythondiv", "true") == "true"):
            return True
    return False
