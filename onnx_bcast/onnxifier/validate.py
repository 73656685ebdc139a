"""What ``from-ir`` checks of a written model before anyone gets it: ONNX's full checker, ONNX Runtime loads it, no
op outside ONNX and onnx_bcast, and the IR's interface; a failure names the IR ops behind it."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from xml.etree import ElementTree

import onnx

from onnx_bcast.model.walk import all_graphs
from onnx_bcast.onnxifier.mapping import DOMAIN
from onnx_bcast.onnxifier.refusals import op_label

log = logging.getLogger(__name__)

_STANDARD = ("", "ai.onnx", "ai.onnx.ml", DOMAIN)
#: how ONNX Runtime names the node it failed on: 'Node (NAME)', 'node (NAME)', 'In Node, ("NAME", ...'
_ORT_NODE = re.compile(r"""[Nn]ode \(([^)]+)\)|In Node, \("([^"]+)\"|node\. Name: (\S+) OpType"""
                       r"""|node name: ([^)\s]+)\)""")


class IRNotConvertible(ValueError):
    """The IR cannot be written as a valid, equal ONNX model: one line per IR op (type, version, name) or check."""

    def __init__(self, xml: str | Path, lines: list[str]) -> None:
        self.lines = list(dict.fromkeys(lines))
        super().__init__(f"{Path(xml).name}: cannot be written as ONNX; nothing was written:\n" + "\n".join(
            f"  {line}" for line in self.lines))


def ir_layers(xml: str | Path) -> dict[str, str]:
    """IR layer name -> its label, ``Type-version 'name'`` (the .xml alone is read)."""
    return {layer.get("name", ""): op_label(layer.get("type", ""), layer.get("version"), layer.get("name", ""))
            for layer in ElementTree.parse(xml).getroot().iterfind("layers/layer")}


def _ir_op(node_name: str, layers: dict[str, str]) -> str:
    layer = node_name
    while layer and layer not in layers:  # our helper nodes are named LAYER/part
        layer = layer.rpartition("/")[0]
    return layers[layer] if layer else f"node {node_name!r}"


def validate(model: onnx.ModelProto, xml: str | Path, *, keep_ops: bool) -> list[str]:
    """Lines naming what makes ``model`` unfit (empty when it passes every check)."""
    layers = ir_layers(xml)
    lines = [f"{_ir_op(node.name, layers)}: written as {node.domain or 'ai.onnx'}.{node.op_type}, which is not ONNX"
             for graph in all_graphs(model) for node in graph.node if node.domain not in _STANDARD or (
                 not node.domain and not onnx.defs.has(node.op_type))]
    if lines:
        return lines
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError, ValueError) as err:  # ValueError:
        # the checker's own, e.g. "Invalid tensor data type 0." for a Cast to nothing
        return [_named(str(err), layers, "onnx.checker")]
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        log.warning("ONNX Runtime is not installed: the written model was not loaded in it")
        return []
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # ORT's warnings while it optimizes are not the user's business here
    try:
        if keep_ops:
            from onnx_bcast.ort.session import InferenceSession

            InferenceSession(model, sess_options=options)
        else:
            ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - ORT's refusal, whatever its type
        return [_named(str(err), layers, "ONNX Runtime")]
    return []


def _named(message: str, layers: dict[str, str], who: str) -> str:
    first = " ".join(message.split())[:400]
    match = _ORT_NODE.search(message)
    node = next((group for group in match.groups() if group), "") if match else ""
    return f"{_ir_op(node, layers)}: {who} refuses it: {first}" if node else f"{who} refuses it: {first}"
