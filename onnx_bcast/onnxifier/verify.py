"""``from-ir --verify``: the converted model against OpenVINO on the IR itself, on random inputs."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx

from onnx_bcast.random_inputs import random_feeds

log = logging.getLogger(__name__)


def _openvino(xml: Path, feeds: dict[str, np.ndarray], pythondiv: str) -> list[np.ndarray] | str:
    """The IR's outputs in OpenVINO, or why it refused the inputs: its reference kernels (the inputs as constants,
    ConstantFolding) for ``pythondiv="reference"``, its CPU plugin for ``"cpu"``."""
    try:
        import openvino as ov
        import openvino.opset13 as ops
        from openvino import passes
    except ImportError as err:
        raise ImportError(f"--verify runs the IR in OpenVINO ({err}); install it with: pip install "
                          "'onnx-bcast[openvino]'") from None
    model = ov.Core().read_model(str(xml))
    by_name = {param.get_friendly_name(): param for param in model.get_parameters()}
    try:
        if pythondiv == "cpu":
            compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
            results = compiled({by_name[name].output(0): value for name, value in feeds.items() if name in by_name})
            return [np.asarray(results[out]) for out in compiled.outputs]
        for name, param in by_name.items():
            const = ops.constant(np.ascontiguousarray(feeds[name]))
            for target in list(param.output(0).get_target_inputs()):
                target.replace_source_output(const.output(0))
        model.validate_nodes_and_infer_types()
        manager = passes.Manager()
        manager.register_pass(passes.ConstantFolding())
        manager.run_passes(model)
    except RuntimeError as err:
        return str(err).strip().splitlines()[-1]
    outputs = []
    for result in model.get_results():
        node = result.input_value(0).get_node()
        if node.get_type_name() != "Constant":
            return f"OpenVINO's reference did not compute {node.get_type_name()} {node.get_friendly_name()!r}"
        outputs.append(np.array(node.get_data()).reshape(tuple(node.get_output_shape(0))))
    return outputs


def _equal(got: np.ndarray, want: np.ndarray) -> bool:
    if got.shape != want.shape:
        return False
    if got.dtype.kind == "f":
        return bool(np.allclose(got, want.astype(got.dtype), rtol=1e-5, atol=1e-6, equal_nan=True))
    return bool(np.array_equal(got, want))


def verify_ir(xml: str | Path, model: onnx.ModelProto, *, keep_ops: bool, pythondiv: str = "reference",
              seed: int = 0) -> str:
    """Run ``model`` (the IR converted) and the IR on the same random inputs; the summary, or ``ValueError`` naming
    the first output that differs (integers and data movement bit for bit, floats within 1e-5)."""
    import onnxruntime as ort

    from onnx_bcast.ort.session import InferenceSession

    session = (InferenceSession(model) if keep_ops else ort.InferenceSession(model.SerializeToString()))
    feeds = random_feeds(session, seed)
    try:
        ours: list[np.ndarray] | str = session.run(None, feeds)
    except Exception as err:  # noqa: BLE001 - a refusal, compared with OpenVINO's below
        ours = str(err).strip().splitlines()[0]
    theirs = _openvino(Path(xml), feeds, pythondiv)
    if isinstance(ours, str) or isinstance(theirs, str):
        if isinstance(ours, str) and isinstance(theirs, str):
            return f"both refuse the random inputs (seed {seed})"
        who, what = ("the converted model", ours) if isinstance(ours, str) else ("OpenVINO", theirs)
        raise ValueError(f"--verify: only {who} refuses the random inputs (seed {seed}): {what}")
    names = [output.name for output in model.graph.output]
    for name, got, want in zip(names, ours, theirs, strict=True):
        if not _equal(np.asarray(got), want):
            raise ValueError(f"--verify: output {name!r} differs from OpenVINO's (seed {seed}): "
                             f"{np.asarray(got).ravel()[:6]} vs {want.ravel()[:6]}")
    oracle = "its CPU plugin" if pythondiv == "cpu" else "its reference kernels"
    return f"equal to OpenVINO ({oracle}) on random inputs (seed {seed}, {len(names)} outputs)"
