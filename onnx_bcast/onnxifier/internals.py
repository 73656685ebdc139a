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
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import onnx
from onnx import helper

from onnx_bcast.onnxifier.mapping import BINARY, DOMAIN, binary, broadcast
from onnx_bcast.onnxifier.owned import TRANSLATIONS, IrNode, Unsupported

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
              "GreaterEqual": "greater_equal", "LessEqual": "less_equal",
              # owned translations of ops onnxifier has a pass for (onnx_bcast/onnxifier/owned; docs/ir-route.md)
              "MVN": "mvn", "Gather": "gather", "Gelu": "gelu", "Selu": "selu", "Convert": "convert"}
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


def _ir_node(graph: Any, rewriter: Any, node: onnx.NodeProto, attrs: dict[str, str], version: str,
             options: dict[str, Any]) -> IrNode:
    def shape(name: str) -> list[int | str] | None:
        try:
            return list(graph.tensor_shape(name))
        except (ValueError, KeyError):
            return None

    def const(name: str) -> Any:
        try:
            return rewriter.get_value(name)
        except Exception:  # noqa: BLE001 - onnxifier's folding of anything upstream: not a constant then
            return None

    return IrNode(node.name, node.op_type, version, list(node.input), list(node.output), attrs, const, shape,
                  _elem_type(graph), options)


def our_nodes(graph: Any, node: onnx.NodeProto, options: dict[str, Any], rewriter: Any = None
              ) -> list[onnx.NodeProto] | None:
    """The nodes that replace an IR node of a type we map (the last one takes its name), else None. An owned
    translation that cannot express the node records why in ``options["refused"]`` and keeps the IR node."""
    attrs = _attributes(node)
    version = attrs.pop("version", "")
    if node.op_type == "Broadcast":
        return broadcast(node.name, node.input, node.output, attrs, version)
    if node.op_type in BINARY:
        return binary(node.op_type, node.name, node.input, node.output, attrs, _elem_type(graph),
                      options["pythondiv"], power_of_two=_power_of_two(graph, rewriter))
    translation = TRANSLATIONS.get(node.op_type)
    if translation is None:
        return None
    try:
        return translation(_ir_node(graph, rewriter, node, attrs, version, options))
    except Unsupported as err:
        options.setdefault("refused", []).append(str(err))
        return [node]


def _power_of_two(graph: Any, rewriter: Any) -> Callable[[str], bool]:
    """Whether a tensor is written by ``Power(2, s)``: OpenVINO's form of ONNX ``BitShift`` right (a Divide by it)."""
    def check(name: str) -> bool:
        producer = graph._out_to_node.get(name)  # noqa: SLF001 - onnxifier's tensor -> node index
        node = graph.nodes[producer]["pb"] if producer else None
        if node is None or node.op_type not in ("Power", "Pow") or rewriter is None:
            return False
        try:
            base = rewriter.get_value(node.input[0])
        except Exception:  # noqa: BLE001 - not a constant
            return False
        return base is not None and base.size >= 1 and bool((base == 2).all())
    return check


class _Ours(BaseNodeConversion):
    """Base of the passes we register: the IR node becomes our nodes (``options`` is set for one conversion)."""

    options: dict[str, Any] = {}

    def replace(self, graph: Any, ori_node: onnx.NodeProto) -> onnx.NodeProto:
        nodes = our_nodes(graph, ori_node, self.options, self)
        if nodes is None:
            return self.fallback(graph, ori_node)
        if len(nodes) > 1:
            self += nodes[:-1]
        return nodes[-1]

    def fallback(self, graph: Any, ori_node: onnx.NodeProto) -> onnx.NodeProto:
        raise AssertionError(f"no mapping for {ori_node.op_type}")


class NotExpressible(ValueError):
    """IR ops that have no ONNX translation here: one line per op (its type, version and name)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = list(dict.fromkeys(lines))
        super().__init__("; ".join(self.lines))


def _trivial_pass(original: type, lower: Callable[[onnx.ModelProto], onnx.ModelProto]) -> type:
    class Trivial(_Ours, original):  # type: ignore[valid-type,misc]
        """onnxifier's catch-all, which first maps the binary ops it would rename, then lowers our nodes."""

        def __init__(self) -> None:
            original.__init__(self)
            self.register_post_hook(self.lower)

        def fallback(self, graph: Any, ori_node: onnx.NodeProto) -> onnx.NodeProto:
            """onnxifier's renaming, only where it loses nothing: an ONNX op of that name, no attribute dropped."""
            attrs = _attributes(ori_node)
            version = attrs.pop("version", "")
            why = ("no ONNX op has this name" if not onnx.defs.has(ori_node.op_type) else
                   f"onnxifier would drop its attributes {sorted(attrs)}" if attrs else "")
            if why:
                self.options.setdefault("refused", []).append(
                    f"{ori_node.op_type}-{version.removeprefix('opset') or '?'} {ori_node.name!r}: {why}")
                return ori_node
            return original.replace(self, graph, ori_node)

        def lower(self, graph: Any) -> Any:
            refused = self.options.get("refused")
            if refused:
                raise NotExpressible(refused)
            model = graph.model
            used = {node.domain for node in model.graph.node}
            placed = [domain for domain in self.options.get("domains", ()) if domain in used]
            if DOMAIN not in used and not placed:
                return graph
            model.opset_import.extend(helper.make_opsetid(domain, 1) for domain in placed)
            if DOMAIN not in used:
                return OnnxGraph(model)
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
        # its errors are raised to us (strict passes) and reported once, by name: not also on its log
        onnxifier_log.setLevel(logging.DEBUG if log.isEnabledFor(logging.DEBUG) else logging.CRITICAL)
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


def read_ir(path: str, *, optimize: bool, exclude: Sequence[str] = (), domains: Sequence[str] = ()) -> onnx.ModelProto:
    """onnxifier's frontend on an IR ``.xml``, then (``optimize``) its default passes but those in ``exclude``, as
    ``onnxifier.convert``. ``domains`` (the option of ``installed`` too): imported (version 1) where nodes use them,
    after our passes and again before the default passes (the frontend deletes every import outside standard ONNX at
    its end, and ONNX's shape inference in onnxifier's passes fails on a node of a domain not imported)."""
    model = openvino_xml_to_onnx_graph(path)
    used = {node.domain for node in model.graph.node}
    model.opset_import.extend(helper.make_opsetid(domain, 1) for domain in domains if domain in used)
    if optimize:  # its default passes but half_to_float, which makes float16 models float32
        return onnxifier.convert(model, exclude=["half_to_float", *exclude], print_passes=False)
    return model
