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
import importlib.util
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import onnx
from onnx import helper

from onnx_bcast.onnxifier.mapping import BINARY, DOMAIN, binary, broadcast
from onnx_bcast.onnxifier.mending import MENDED_FIRST
from onnx_bcast.onnxifier.owned import TRANSLATIONS, IrNode, Unsupported
from onnx_bcast.onnxifier.refusals import NotExpressible, ir_attributes, op_label, record, refuse

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
              "MVN": "mvn", "Gather": "gather", "Gelu": "gelu", "Selu": "selu", "Convert": "convert",
              "AvgPool": "avg_pool", "TopK": "topk", "ScatterNDUpdate": "scatter_nd_update", "Swish": "swish",
              "Squeeze": "squeeze", "Unsqueeze": "unsqueeze", "Reshape": "reshape",
              **{f"Reduce{kind}": f"reduce_{kind.lower()}" for kind in ("L1", "L2", "Max", "Mean", "Min", "Prod",
                                                                         "Sum")}}
TRIVIAL = "z__trivial"
#: What this module needs of onnxifier (the test checks each): names, and methods of its classes.
REQUIRED = {"registry": ("register", "get_type", "__contains__", "__iter__"),
            "BaseNodeConversion": ("replace", "rewrite", "register_post_hook", "__iadd__"),
            "OnnxGraph": ("model", "tensor_info"), "passes": (TRIVIAL, *PASS_OF_OP.values())}

#: onnxifier's default passes that are left out: half_to_float makes float16 models float32; eliminate_identity, where
#: one tensor feeds two IR outputs, leaves a graph output no node writes (onnxoptimizer then dies of SIGSEGV)
LOSSY_PASSES = ("half_to_float", "eliminate_identity")
_LOGGER = "O2O"  # onnxifier's logger: its pass-by-pass DEBUG lines only with ours at DEBUG (-vv)
_LOCK = threading.Lock()  # the registry is global: one conversion at a time


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
    """An IR node's replacement (the last node takes its name), else None; a refusal goes to ``options``."""
    attrs = ir_attributes(node)
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
        return [record(options, node, str(err))]


def _power_of_two(graph: Any, rewriter: Any) -> Callable[[str], tuple[str, tuple[int, ...]] | None]:
    """``(s, the base's shape)`` of a tensor written by ``Power(2, s)`` (one-element base: OpenVINO's BitShift)."""
    def check(name: str) -> tuple[str, tuple[int, ...]] | None:
        producer = graph._out_to_node.get(name)  # noqa: SLF001 - onnxifier's tensor -> node index
        node = graph.nodes[producer]["pb"] if producer else None
        if node is None or node.op_type not in ("Power", "Pow") or rewriter is None:
            return None
        try:
            base = rewriter.get_value(node.input[0])
        except Exception:  # noqa: BLE001 - not a constant
            return None
        if base is None or base.size != 1 or not bool((base == 2).all()):
            return None
        return node.input[1], tuple(int(d) for d in base.shape)
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


def _named_failures(original: type, pass_name: str) -> type:
    """onnxifier's pass ``original`` (its class name kept: onnxifier matches by it), its node mended first
    (``MENDED_FIRST``), a failure on it a refusal naming that IR op."""
    mend = MENDED_FIRST.get(pass_name)

    def replace(self: Any, graph: Any, ori_node: onnx.NodeProto) -> onnx.NodeProto:
        why = mend(ori_node) if mend is not None else None
        if why is not None:
            return refuse(_Ours.options, ori_node, why)
        try:
            return original.replace(self, graph, ori_node)
        except Exception as err:  # noqa: BLE001 - any failure of its pass is a refusal of this op
            first = " ".join(str(err).split())[:160] or type(err).__name__
            return refuse(_Ours.options, ori_node, f"onnxifier's {pass_name} pass fails ({type(err).__name__}: "
                                                    f"{first})")
    return type(original.__name__, (original,), {"replace": replace, "__doc__": original.__doc__})


def _trivial_pass(original: type, lower: Callable[[onnx.ModelProto], onnx.ModelProto]) -> type:
    class Trivial(_Ours, original):  # type: ignore[valid-type,misc]
        """onnxifier's catch-all, which first maps the binary ops it would rename, then lowers our nodes."""

        def __init__(self) -> None:
            original.__init__(self)
            self.register_post_hook(self.lower)

        def fallback(self, graph: Any, ori_node: onnx.NodeProto) -> onnx.NodeProto:
            """onnxifier's renaming, only where it loses nothing: an ONNX op of that name, no attribute dropped."""
            if ori_node.name in self.options.get("refused_nodes", ()):
                return ori_node  # an earlier pass refused it, with its reason
            attrs = ir_attributes(ori_node)
            attrs.pop("version", "")
            why = ("no ONNX op has this name" if not onnx.defs.has(ori_node.op_type) else
                   f"onnxifier would drop its attributes {sorted(attrs)}" if attrs else "")
            if why:
                return refuse(self.options, ori_node, why)
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
        originals = {name: OP_CONVERT.get_type(name) for name in OP_CONVERT}
        missing = [name for name in (*PASS_OF_OP.values(), TRIVIAL) if originals.get(name) is None]
        if missing:
            raise RuntimeError(f"onnxifier {VERSION} has no pass named {', '.join(missing)}: onnx_bcast.onnxifier "
                               "supports onnxifier 2.0")
        _Ours.options = options
        onnxifier_log = logging.getLogger(_LOGGER)
        level = onnxifier_log.level
        # its errors are raised to us (strict passes) and reported once, by name: not also on its log
        onnxifier_log.setLevel(logging.DEBUG if log.isEnabledFor(logging.DEBUG) else logging.CRITICAL)
        try:
            for name, kind in originals.items():  # onnxifier's other op passes: a failure names the op
                if name not in (*PASS_OF_OP.values(), TRIVIAL):
                    OP_CONVERT.register(name)(_named_failures(kind, name))
            for op_type, name in PASS_OF_OP.items():
                OP_CONVERT.register(name)(type(op_type, (_Ours,), {"__doc__": f"IR {op_type} to onnx_bcast"}))
            OP_CONVERT.register(TRIVIAL)(_trivial_pass(originals[TRIVIAL], lower))
            yield
        finally:
            for name, kind in originals.items():
                OP_CONVERT.register(name)(kind)
            _Ours.options = {}
            onnxifier_log.setLevel(level)


def unreadable(path: str) -> list[str]:
    """The IR's layers onnxifier's reader fails on, one line each (element types it has no name for, bfloat16
    constants without torch, Parameters of dynamic rank); only the .xml is read."""
    from xml.etree import ElementTree

    from onnxifier.domain.intel.openvino.ir.mapping import ETYPE2DTYPE, PREC2DTYPE

    torch = importlib.util.find_spec("torch") is not None
    lines = []
    for layer in ElementTree.parse(path).getroot().iterfind("layers/layer"):
        label = op_label(layer.get("type", ""), layer.get("version"), layer.get("name", ""))
        data = layer.find("data")
        element_type = data.get("element_type") if data is not None else None
        bad = {port.get("precision") for port in layer.iter("port")} - {None, *PREC2DTYPE}
        bad |= {element_type} - {None, *ETYPE2DTYPE}
        if bad:
            lines.append(f"{label}: element type {', '.join(sorted(bad))}, which onnxifier's IR reader cannot read")
        elif layer.get("type") == "Const" and element_type == "bf16" and not torch:
            lines.append(f"{label}: a bfloat16 constant: onnxifier reads those with torch, which is not installed")
        elif layer.get("type") == "Parameter" and data is not None and "..." in (data.get("shape") or ""):
            lines.append(f"{label}: a dynamic rank, which onnxifier's IR reader cannot read")
    return lines


def read_ir(path: str, *, optimize: bool, exclude: Sequence[str] = (), domains: Sequence[str] = ()) -> onnx.ModelProto:
    """onnxifier's frontend on an IR ``.xml``, then (``optimize``) its default passes but those in ``exclude``, as
    ``onnxifier.convert``. ``domains`` (the option of ``installed`` too): imported (version 1) where nodes use them,
    after our passes and again before the default passes (the frontend deletes every import outside standard ONNX at
    its end, and ONNX's shape inference in onnxifier's passes fails on a node of a domain not imported)."""
    model = openvino_xml_to_onnx_graph(path)
    used = {node.domain for node in model.graph.node}
    model.opset_import.extend(helper.make_opsetid(domain, 1) for domain in domains if domain in used)
    if optimize:  # its default passes but two that lose what the IR says
        return onnxifier.convert(model, exclude=[*LOSSY_PASSES, *exclude], print_passes=False)
    return model
