"""Every use of onnxifier's internals (it has no plugin API): its op-conversion registry, the IR frontend's pass
order, its graph class. ``tests/test_onnxifier.py`` fails loudly when any name used here changes.

How onnxifier 2.0 turns IR into ONNX: ``ir_to_onnx`` reads the ``.xml`` into a graph of ``ai.intel.openvino``
nodes (attributes as strings); the frontend then runs one pass per op type, registered in ``OP_CONVERT``, in the
order of their names, the catch-all ``z__trivial`` last (it renames what no pass took and drops its attributes);
at its end it deletes every opset import outside standard ONNX. So we re-register the passes of the ops we map
(re-registering a name replaces its pass), take the other binary ops in our own ``z__trivial``, and lower our nodes
with ``onnx_bcast.convert`` in that pass's post-hook, inside the frontend. The originals are registered back after
each conversion.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import onnx
from onnx import helper

from onnx_bcast.onnxifier.mapping import BINARY, DOMAIN, binary, broadcast

log = logging.getLogger(__name__)

import onnxifier  # noqa: E402
import onnxifier.domain.intel.openvino  # noqa: E402,F401  (loads the IR op passes)
from onnxifier.domain.intel.openvino.passes.op import OP_CONVERT, BaseNodeConversion  # noqa: E402
from onnxifier.domain.intel.openvino.xml_frontend import openvino_xml_to_onnx_graph  # noqa: E402
from onnxifier.graph import OnnxGraph  # noqa: E402

VERSION = onnxifier.__version__
#: onnxifier's pass names for the op types we map (the others reach ``z__trivial``).
PASS_OF_OP = {"Broadcast": "broadcast", "Divide": "divide", "FloorMod": "floor_mod", "Multiply": "multiply",
              "Subtract": "subtract", "Power": "power", "Maximum": "maximum", "Minimum": "minimum",
              "GreaterEqual": "greater_equal", "LessEqual": "less_equal"}
TRIVIAL = "z__trivial"
#: What this module needs of onnxifier (the test checks each): names, and methods of its classes.
REQUIRED = {"registry": ("register", "get_type", "__contains__", "__iter__"),
            "BaseNodeConversion": ("replace", "rewrite", "register_post_hook", "__iadd__"),
            "OnnxGraph": ("model", "tensor_info"), "passes": (TRIVIAL, *PASS_OF_OP.values())}

_LOGGER = "O2O"  # onnxifier's logger: its pass-by-pass DEBUG lines only with ours at DEBUG (-vv)
_LOCK = threading.Lock()  # the registry is global: one conversion at a time


def _attributes(node: onnx.NodeProto) -> dict[str, str]:
    values = {}
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        values[attribute.name] = value.decode() if isinstance(value, bytes) else str(value)
    return values


def _elem_type(graph: Any) -> Callable[[str], int]:
    def lookup(name: str) -> int:
        try:
            return int(graph.tensor_info(name)[1])
        except (ValueError, TypeError, KeyError):
            return 0
    return lookup


def our_nodes(graph: Any, node: onnx.NodeProto, options: dict[str, Any]) -> list[onnx.NodeProto] | None:
    """The nodes that replace an IR node of a type we map (the last one takes its name), else None."""
    attrs = _attributes(node)
    version = attrs.pop("version", "")
    if node.op_type == "Broadcast":
        return broadcast(node.name, node.input, node.output, attrs, version)
    if node.op_type in BINARY:
        return binary(node.op_type, node.name, node.input, node.output, attrs, _elem_type(graph),
                      options["pythondiv"])
    return None


class _Ours(BaseNodeConversion):
    """Base of the passes we register: the IR node becomes our nodes (``options`` is set for one conversion)."""

    options: dict[str, Any] = {}

    def replace(self, graph: Any, ori_node: onnx.NodeProto) -> onnx.NodeProto:
        nodes = our_nodes(graph, ori_node, self.options)
        if nodes is None:
            return self.fallback(graph, ori_node)
        if len(nodes) > 1:
            self += nodes[:-1]
        return nodes[-1]

    def fallback(self, graph: Any, ori_node: onnx.NodeProto) -> onnx.NodeProto:
        raise AssertionError(f"no mapping for {ori_node.op_type}")


def _trivial_pass(original: type, lower: Callable[[onnx.ModelProto], onnx.ModelProto]) -> type:
    class Trivial(_Ours, original):  # type: ignore[valid-type,misc]
        """onnxifier's catch-all, which first maps the binary ops it would rename, then lowers our nodes."""

        def __init__(self) -> None:
            original.__init__(self)
            self.register_post_hook(self.lower)

        def fallback(self, graph: Any, ori_node: onnx.NodeProto) -> onnx.NodeProto:
            return original.replace(self, graph, ori_node)

        def lower(self, graph: Any) -> Any:
            model = graph.model
            if not any(node.domain == DOMAIN for node in model.graph.node):
                return graph
            model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
            return OnnxGraph(lower(model))
    return Trivial


@contextlib.contextmanager
def installed(options: dict[str, Any], lower: Callable[[onnx.ModelProto], onnx.ModelProto]) -> Iterator[None]:
    """Our passes registered in onnxifier for the duration (one conversion at a time), its own ones afterwards."""
    with _LOCK:
        originals = {name: OP_CONVERT.get_type(name) for name in (*PASS_OF_OP.values(), TRIVIAL)}
        missing = [name for name, kind in originals.items() if kind is None]
        if missing:
            raise RuntimeError(f"onnxifier {VERSION} has no pass named {', '.join(missing)}: onnx_bcast.onnxifier "
                               "supports onnxifier 2.0")
        _Ours.options = options
        onnxifier_log = logging.getLogger(_LOGGER)
        level = onnxifier_log.level
        onnxifier_log.setLevel(logging.DEBUG if log.isEnabledFor(logging.DEBUG) else logging.WARNING)
        try:
            for op_type, name in PASS_OF_OP.items():
                OP_CONVERT.register(name)(type(op_type, (_Ours,), {"__doc__": f"IR {op_type} to onnx_bcast"}))
            OP_CONVERT.register(TRIVIAL)(_trivial_pass(originals[TRIVIAL], lower))
            yield
        finally:
            for name, kind in originals.items():
                OP_CONVERT.register(name)(kind)
            _Ours.options = {}
            onnxifier_log.setLevel(level)


def read_ir(path: str, *, optimize: bool) -> onnx.ModelProto:
    """onnxifier's frontend on an IR ``.xml``, then (``optimize``) its default passes, as ``onnxifier.convert``."""
    if optimize:
        return onnxifier.convert(path, print_passes=False)
    return openvino_xml_to_onnx_graph(path)
