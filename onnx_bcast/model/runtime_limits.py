"""What the installed onnxruntime accepts: the newest IR version and default-domain opset, probed once."""

from __future__ import annotations

import functools
import logging

import onnx
from onnx import helper

from onnx_bcast.model.ort_import import MissingRuntime, onnxruntime

logger = logging.getLogger("onnx_bcast.model.runtime_limits")
# without onnxruntime (a converting-only install): what the oldest supported onnxruntime loads (pyproject.toml's
# minimum; tests/test_without_ort.py compares these with the installed onnxruntime when it is that version)
OLDEST_ORT, OLDEST_ORT_IR_VERSION, OLDEST_ORT_OPSET = "1.20", 10, 21


def ort_accepts(model: onnx.ModelProto) -> bool:
    """Whether onnxruntime (CPU) makes a session of ``model``: a probe, quiet when it refuses."""
    ort = onnxruntime("probing what ONNX Runtime loads")
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception:  # a refusal is the answer we are probing for
        return False
    return True


def _loads(ir_version: int, opset: int) -> bool:
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])])
    return ort_accepts(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version))


@functools.cache
def max_ir_version() -> int:
    """The newest IR version onnxruntime loads (at most the one onnx writes); without onnxruntime, the oldest
    supported one's."""
    if not _ort_installed():
        return min(onnx.IR_VERSION, OLDEST_ORT_IR_VERSION)
    for ir_version in range(onnx.IR_VERSION, 3, -1):
        if _loads(ir_version, 13):
            return ir_version
    return 7


@functools.cache
def max_opset() -> int:
    """The newest default-domain opset both onnx and onnxruntime know; without onnxruntime, the oldest supported
    one's."""
    if not _ort_installed():
        return min(onnx.defs.onnx_opset_version(), OLDEST_ORT_OPSET)
    for opset in range(onnx.defs.onnx_opset_version(), 7, -1):
        if _loads(min(max_ir_version(), 8), opset):
            return opset
    return 13


@functools.cache
def _ort_installed() -> bool:
    try:
        onnxruntime()
    except MissingRuntime:
        logger.info("onnxruntime is not installed: assuming what onnxruntime %s loads", OLDEST_ORT)
        return False
    return True
