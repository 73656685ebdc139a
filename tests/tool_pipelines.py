"""The tools users run on converted models, each as a function model -> model (or a run): optimizers and runtimes.

Each is imported where it is used, so that a test whose tool is not installed skips with the reason.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

CPU = ["CPUExecutionProvider"]
ORT_LEVELS = {
    "ort_disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "ort_basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "ort_extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "ort_all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], level: str = "ort_all",
            options: ort.SessionOptions | None = None) -> list[np.ndarray]:
    """Plain ONNX Runtime at one optimization level; raises when the session or the run fails."""
    options = options or ort.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = ORT_LEVELS[level]
    session = ort.InferenceSession(model.SerializeToString(), options, providers=CPU)
    return session.run(None, feeds)


def quiet(optimize: Callable[[], onnx.ModelProto]) -> onnx.ModelProto:
    """onnxsim prints its progress and the ops it failed to fold; logging from onnxscript too."""
    logging.disable(logging.WARNING)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return optimize()
    finally:
        logging.disable(logging.NOTSET)


def onnxscript_optimize(model: onnx.ModelProto) -> onnx.ModelProto:
    import onnxscript.optimizer

    return quiet(lambda: onnxscript.optimizer.optimize(model))


def onnx_ir_passes(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnx-ir's common passes that change a graph (those its version has): identities and common subexpressions
    merged, unused nodes removed."""
    import onnx_ir as ir
    import onnx_ir.passes.common as common

    names = ["IdentityEliminationPass", "CommonSubexpressionEliminationPass", "RemoveUnusedNodesPass"]
    passes = ir.passes.PassManager([getattr(common, name)() for name in names if hasattr(common, name)])
    return ir.serde.serialize_model(passes(ir.serde.deserialize_model(model)).model)


def onnxsim_simplify(model: onnx.ModelProto, input_shapes: dict[str, list[int]] | None = None) -> onnx.ModelProto:
    """onnxsim's default simplification; with ``input_shapes``, the inputs fixed to those shapes first."""
    import onnxsim

    def run() -> onnx.ModelProto:
        simplified, _ = onnxsim.simplify(model, overwrite_input_shapes=input_shapes)
        return simplified

    return quiet(run)


def onnxslim_slim(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnxslim's default: its copy of ONNX Runtime's symbolic shape inference (``auto_merge`` on), whose values it
    writes into the model as constants, and its folding and fusions."""
    import onnxslim

    return quiet(lambda: onnxslim.slim(model))


def onnxoptimizer_optimize(model: onnx.ModelProto) -> onnx.ModelProto:
    import onnxoptimizer

    return quiet(lambda: onnxoptimizer.optimize(model))


def graphsurgeon_fold(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnx-graphsurgeon's constant folding (it runs ONNX Runtime on what it can evaluate), then its cleanup."""
    import onnx_graphsurgeon as gs

    def run() -> onnx.ModelProto:
        graph = gs.import_onnx(model)
        graph.fold_constants().cleanup()
        return gs.export_onnx(graph)

    return quiet(run)


def openvino_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """OpenVINO's ONNX reader, compiled for its CPU plugin, run once; raises where any step fails."""
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(model.SerializeToString(), b""), "CPU")
    results = compiled(feeds)
    return [np.asarray(results[out]) for out in compiled.outputs]


def with_output_shapes(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """A copy whose graph outputs carry onnx's inferred shapes (onnxsim needs one); None where none is inferred."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type for v in inferred.graph.output}
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for output in copy.graph.output:
        tensor = types[output.name].tensor_type
        if not tensor.HasField("shape"):
            return None
        output.type.tensor_type.shape.CopyFrom(tensor.shape)
    return copy


def symbolic_shape_infer(model: onnx.ModelProto, auto_merge: bool, folder: Path) -> onnx.ModelProto:
    """ONNX Runtime's ``SymbolicShapeInference.infer_shapes`` (``onnxruntime.tools.symbolic_shape_infer``); it
    raises where it stops, after writing the model so far to its working folder, here ``folder``."""
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    with contextlib.chdir(folder):
        return quiet(lambda: SymbolicShapeInference.infer_shapes(model, auto_merge=auto_merge))


def quantized(model: onnx.ModelProto, folder: Path, auto_merge: bool = False) -> onnx.ModelProto:
    """ONNX Runtime's quantization as its documentation runs it: ``quant_pre_process`` (symbolic shape inference,
    with ``auto_merge`` as given; ORT's basic optimizations; onnx's shape inference), then ``quantize_dynamic``
    with its default settings."""
    from onnxruntime.quantization import quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    def run() -> onnx.ModelProto:
        with contextlib.chdir(folder):
            quant_pre_process(model, "pre.onnx", auto_merge=auto_merge)
            quantize_dynamic("pre.onnx", "quantized.onnx")
            return onnx.load("quantized.onnx")

    return quiet(run)
