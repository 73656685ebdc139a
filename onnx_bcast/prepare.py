"""Rewrite a model's onnx_bcast nodes into the guarded form our ORT kernels run.

Broadcast family, per node: default attributes filled and checked, absent inputs added, list attributes moved
into constant inputs, shape inputs cast to int64, 16-bit floats cast to float32 around the (pure data-movement)
kernel, and a guard beside it (a ``Reshape`` of a one-element constant to the kernel's status) that turns a
kernel failure into a clean ORT error without touching the data.

Elementwise family: the standard op of the same name does the arithmetic (ORT's own, for every type ORT has).
With static shapes the rule is checked here and B aligned by ``Squeeze``/``Unsqueeze``; otherwise a shape-only
Python check gives the shape B takes, or a shape it cannot take (carrying the error id) so that the
``Reshape`` of B fails the run cleanly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnx.inliner
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, helper, numpy_helper

from onnx_bcast import schemas
from onnx_bcast.converters.elementwise import ElementwiseRule
from onnx_bcast.converters.emit import Emitter
from onnx_bcast.converters.facts import NodeFacts
from onnx_bcast.errors import BroadcastError
from onnx_bcast.memory_guard import check_output_size
from onnx_bcast.model_walk import NameGenerator, all_graphs, all_node_lists, opset_version
from onnx_bcast.ops import SPEC_BY_NAME
from onnx_bcast.ops.broadcast import canonical_mode
from onnx_bcast.ops.broadcast_v0 import LIKE_V0, V0
from onnx_bcast.ops.common import ATTR_PROTO_KIND, OpSpec
from onnx_bcast.ops.elementwise import canonical_rule, elementwise_shape
from onnx_bcast.ort_ops import DOMAIN, GUARDED_DOMAIN
from onnx_bcast.runtime_limits import max_ir_version
from onnx_bcast.static_facts import StaticFacts

DEFAULT_OPSET = 13
_CAST_TO_FLOAT = (TensorProto.FLOAT16, TensorProto.BFLOAT16)
_INTEGER_TYPES = (TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
                  TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64)


def node_label(node: NodeProto, index: int) -> str:
    """A node's name, or a stable stand-in for an unnamed node."""
    return node.name or f"{node.op_type}#{index}"


def read_attributes(node: NodeProto, spec: OpSpec, label: str) -> dict[str, Any]:
    """The node's attributes with defaults filled; wrong names, kinds and modes are BroadcastErrors."""
    known = {a.name: a for a in spec.attrs}
    attrs = spec.defaults()
    for attr in node.attribute:
        decl = known.get(attr.name)
        if decl is None:
            raise BroadcastError(node.op_type, "", f"unknown attribute {attr.name!r}", label)
        if attr.type != ATTR_PROTO_KIND[decl.kind]:
            kind = onnx.AttributeProto.AttributeType.Name(attr.type)
            raise BroadcastError(node.op_type, "", f"attribute {attr.name!r} must be {decl.kind}, got {kind}", label)
        attrs[attr.name] = schemas.attribute_value(attr)
    missing = [name for name, value in attrs.items() if value is None]
    if missing:
        raise BroadcastError(node.op_type, "", f"missing required attribute(s) {missing}", label)
    try:
        if "mode" in attrs:
            attrs["mode"] = canonical_mode(attrs["mode"], node.op_type)
        if "auto_broadcast" in attrs:
            attrs["auto_broadcast"] = canonical_rule(attrs["auto_broadcast"], node.op_type)
    except BroadcastError as err:
        raise err.with_node(label) from None
    return attrs


def check_shape_inputs(node: NodeProto, spec: OpSpec, label: str, types: dict[str, int],
                       shapes: dict[str, Any]) -> None:
    """Shape-like inputs (target_shape, axes, ...) whose type or rank is known must be 1-D integer tensors."""
    for formal, name in zip(spec.inputs, node.input, strict=False):
        if formal.type_param != "T_SHAPE" or not name:
            continue
        elem, dims = types.get(name), shapes.get(name)
        if elem is not None and elem not in _INTEGER_TYPES:
            raise BroadcastError(node.op_type, "", f"{formal.name} must be an integer tensor, got "
                                                   f"{TensorProto.DataType.Name(elem)}", label)
        if dims is not None and len(dims) != 1:
            raise BroadcastError(node.op_type, "", f"{formal.name} must be 1-D, got rank {len(dims)}", label)


def validate_nodes(model: ModelProto) -> None:
    """Every onnx_bcast node is a known op with valid attributes and input count (before shape inference)."""
    for container, _ in all_node_lists(model):
        for index, node in enumerate(container.node):
            if node.domain != DOMAIN:
                continue
            label = node_label(node, index)
            spec = SPEC_BY_NAME.get(node.op_type)
            if spec is None:
                raise BroadcastError(node.op_type, "", f"is not an op of domain {DOMAIN!r} "
                                                       f"(known: {', '.join(sorted(SPEC_BY_NAME))})", label)
            read_attributes(node, spec, label)
            check_inputs(node, spec, label)


def check_inputs(node: NodeProto, spec: OpSpec, label: str) -> list[str]:
    """The node's inputs padded to the spec's arity; a wrong count or a missing required input is an error."""

    inputs = list(node.input)
    while inputs and inputs[-1] == "":
        inputs.pop()
    required = sum(1 for i in spec.inputs if not i.optional)
    if not required <= len(inputs) <= len(spec.inputs) or any(name == "" for name in inputs[:required]):
        names = ", ".join(i.name + ("?" if i.optional else "") for i in spec.inputs)
        raise BroadcastError(node.op_type, "", f"takes inputs ({names}), got {len(node.input)}: {list(node.input)}",
                             label)
    if len(node.output) != 1 or node.output[0] == "":
        raise BroadcastError(node.op_type, "", f"has exactly one output, got {list(node.output)}", label)
    return inputs + [""] * (len(spec.inputs) - len(inputs))


class _Rewriter:
    """Rewrites one node container (graph or function) in place."""

    def __init__(self, names: NameGenerator, types: dict[str, int], opset: int, quiet: bool = False,
                 max_output_bytes: int | None = None) -> None:
        self.names = names
        self.quiet = int(quiet)
        self.max_output_bytes = max_output_bytes
        self.types = types
        self.shapes: dict[str, tuple[int | None, ...] | None] = {}
        self.opset = opset
        self.used_guarded = False
        self.used_standard = False

    def const(self, out: list[NodeProto], hint: str, values: Any) -> str:
        name = self.names(hint)
        tensor = numpy_helper.from_array(np.asarray(values, dtype=np.int64).reshape(-1), name)
        out.append(helper.make_node("Constant", [], [name], name=self.names(f"{hint}_const"), value=tensor))
        return name

    def as_int64(self, out: list[NodeProto], name: str, label: str, op: str = "", what: str = "") -> str:
        elem = self.types.get(name)
        if elem == TensorProto.INT64:
            return name
        if elem is not None and elem not in _INTEGER_TYPES:
            type_name = TensorProto.DataType.Name(elem)
            raise BroadcastError(op, "", f"{what or name} must be an integer tensor, got {type_name}", label)
        cast = self.names(f"{label}_{name}_int64")
        out.append(helper.make_node("Cast", [name], [cast], name=self.names(f"{cast}_cast"), to=TensorProto.INT64))
        return cast

    def rewrite(self, node: NodeProto, index: int) -> list[NodeProto]:
        spec = SPEC_BY_NAME.get(node.op_type)
        label = node_label(node, index)
        if spec is None:
            raise BroadcastError(node.op_type, "", f"is not an op of domain {DOMAIN!r} "
                                                   f"(known: {', '.join(sorted(SPEC_BY_NAME))})", label)
        attrs = read_attributes(node, spec, label)
        inputs = check_inputs(node, spec, label)
        check_shape_inputs(node, spec, label, self.types, self.shapes)
        out: list[NodeProto] = []
        if spec.family == "elementwise":
            self.rewrite_elementwise(out, node, attrs, inputs, label)
            return out
        data = inputs[0]
        second, third = self._shape_inputs(out, node.op_type, inputs, attrs, label)
        data_type = self.types.get(data)
        if data_type in _CAST_TO_FLOAT:
            data = self._cast(out, data, TensorProto.FLOAT, label)
        result = node.output[0]
        raw = self.names(f"{label}_f32") if data_type in _CAST_TO_FLOAT else result
        status = self.names(f"{label}_status")
        guard_attrs = {"op": node.op_type, "node": label, "quiet": self.quiet, "max_output_bytes": self.limit_attr}
        if node.op_type in ("Broadcast", "Expand"):
            guard_attrs.update(mode=attrs["mode"], axis=int(attrs["axis"]))
        op_type = "Broadcast" if node.op_type == "Expand" else node.op_type
        out.append(helper.make_node(op_type, [data, second, third], [raw, status], name=self.names(label),
                                    domain=GUARDED_DOMAIN, **guard_attrs))
        one = self.const(out, f"{label}_guard_one", [0])
        out.append(helper.make_node("Reshape", [one, status], [self.names(f"{label}_guard_out")],
                                    name=self.names(f"{label}_guard")))
        if raw != result:
            out.append(helper.make_node("Cast", [raw], [result], name=self.names(f"{label}_cast_back"), to=data_type))
        self.used_guarded = True
        return out

    @property
    def limit_attr(self) -> int:
        return -1 if self.max_output_bytes is None else int(self.max_output_bytes)

    def static_shape(self, name: str) -> tuple[int, ...] | None:
        dims = self.shapes.get(name)
        if dims is None or any(d is None for d in dims):
            return None
        return tuple(int(d) for d in dims)

    def rewrite_elementwise(self, out: list[NodeProto], node: NodeProto, attrs: dict[str, Any], inputs: list[str],
                            label: str) -> None:
        """The converter's rule, with the shapes checked here when static or by the guarded check at run time."""
        op, rule, axis = node.op_type, attrs["auto_broadcast"], int(attrs["axis"])
        a, b = inputs
        facts = NodeFacts(op=op, name=label, attrs=attrs, inputs=[a, b], output=node.output[0],
                          shapes=[self.shapes.get(a), self.shapes.get(b)], values=[None, None],
                          types=[self.types.get(a), self.types.get(b)])
        emitter = Emitter(self.names, self.opset, label, op, rule, allow_initializers=False,
                          final_name=self.names(label))
        standard = ElementwiseRule(op, rule)
        a_shape, b_shape = self.static_shape(a), self.static_shape(b)
        if a_shape is not None and b_shape is not None:
            try:
                out_shape = elementwise_shape(a_shape, b_shape, auto_broadcast=rule, axis=axis, op=op)
                if self.types.get(a):
                    check_output_size(op, rule, out_shape, helper.tensor_dtype_to_np_dtype(self.types[a]),
                                      self.max_output_bytes, mode_attr="auto_broadcast")
            except BroadcastError as err:
                raise err.with_node(label) from None
            standard.rewrite(emitter, facts, out_shape)
        else:
            form = standard.standard_form(emitter, facts)
            standard.emit_standard(emitter, facts, self._checked(out, op, a, b, rule, axis, label), form)
        out.extend(emitter.nodes)
        self.used_standard = True

    def _checked(self, out: list[NodeProto], op: str, a: str, b: str, rule: str, axis: int, label: str) -> str:
        shapes = []
        for operand in (a, b):
            shape = self.names(f"{label}_{operand}_shape")
            out.append(helper.make_node("Shape", [operand], [shape], name=self.names(f"{shape}_op")))
            shapes.append(shape)
        aligned = self.names(f"{label}_b_aligned_shape")
        allowzero = int(self.opset >= 14)
        out.append(helper.make_node(schemas.ELEMENTWISE_CHECK, shapes, [aligned], name=self.names(f"{label}_check"),
                                    domain=GUARDED_DOMAIN, op=op, node=label, quiet=self.quiet,
                                    auto_broadcast=rule, axis=axis, allowzero=allowzero,
                                    elem_type=self.types.get(a, 0), max_output_bytes=self.limit_attr))
        result = self.names(f"{label}_b_aligned")
        extra = {"allowzero": 1} if allowzero else {}
        out.append(helper.make_node("Reshape", [b, aligned], [result], name=self.names(f"{result}_op"), **extra))
        self.used_guarded = True
        return result

    def _cast(self, out: list[NodeProto], name: str, to: int, label: str) -> str:
        cast = self.names(f"{label}_{name}_f32")
        out.append(helper.make_node("Cast", [name], [cast], name=self.names(f"{cast}_cast"), to=to))
        return cast

    def _shape_inputs(self, out: list[NodeProto], op: str, inputs: list[str], attrs: dict[str, Any],
                      label: str) -> tuple[str, str]:
        if op in ("Broadcast", "Expand"):
            target = self.as_int64(out, inputs[1], label, op, "target_shape")
            axes = (self.as_int64(out, inputs[2], label, op, "axes_mapping") if inputs[2]
                    else self.const(out, f"{label}_no_axes", []))
            return target, axes
        if op == V0:
            shape = (self.as_int64(out, inputs[1], label, op, "shape input") if inputs[1]
                     else self.const(out, f"{label}_shape_in", attrs["shape"]))
            axes = (self.as_int64(out, inputs[2], label, op, "broadcast_axes input") if inputs[2]
                    else self.const(out, f"{label}_axes_in", attrs["broadcast_axes"]))
            return shape, axes
        if op == LIKE_V0:
            like_shape = self.names(f"{label}_like_shape")
            out.append(helper.make_node("Shape", [inputs[1]], [like_shape], name=self.names(f"{like_shape}_op")))
            axes = (self.as_int64(out, inputs[2], label, op, "initial_broadcast_axes input") if inputs[2]
                    else self.const(out, f"{label}_axes_in", attrs["initial_broadcast_axes"]))
            return like_shape, axes
        raise AssertionError(op)  # every op of SPEC_BY_NAME is handled above

    def rewrite_container(self, container: Any) -> None:
        new_nodes: list[NodeProto] = []
        for index, node in enumerate(container.node):
            if node.domain == DOMAIN:
                new_nodes.extend(self.rewrite(node, index))
            else:
                new_nodes.append(node)
        del container.node[:]
        container.node.extend(new_nodes)


def _ensure_opset(opsets: Any, domain: str, version: int) -> None:
    if opset_version(list(opsets), domain) is None:
        opsets.append(helper.make_opsetid(domain, version))


def _check_our_opset(opsets: list[onnx.OperatorSetIdProto], where: str) -> None:
    version = opset_version(opsets, DOMAIN)
    if version is not None and version != schemas.VERSION:
        raise BroadcastError(DOMAIN, "", f"{where} imports opset version {version} of domain {DOMAIN!r}; "
                                         f"this onnx-bcast knows version {schemas.VERSION} only")


def _in_main_graph(model: ModelProto, container: Any) -> bool:
    return isinstance(container, GraphProto) and any(container is g for g in all_graphs(model))


def uses_our_ops(model: ModelProto) -> bool:
    """Whether any node of the model (subgraphs and functions included) is in the onnx_bcast domain."""
    return any(node.domain == DOMAIN for container, _ in all_node_lists(model) for node in container.node)


def check_our_opsets(model: ModelProto) -> None:
    """The model and its functions import a version of our domain that we know, or none."""
    _check_our_opset(list(model.opset_import), "the model")
    for function in model.functions:
        _check_our_opset(list(function.opset_import), f"function {function.name!r}")


def prepare(model: ModelProto, *, quiet: bool = False, max_output_bytes: int | None = None) -> ModelProto:
    """A copy of ``model`` whose onnx_bcast nodes run in ONNX Runtime with ``session_options()``.

    A kernel error fails the run with an ORT error and is logged (logger ``onnx_bcast.ort``); with ``quiet``
    it is only recorded, for a caller that raises it (``InferenceSession``). ``max_output_bytes`` limits every
    broadcast output (default: ``ONNX_BCAST_MAX_OUTPUT_BYTES``, else half of the machine's memory).
    """
    schemas.register()
    check_our_opsets(model)
    validate_nodes(model)
    prepared = ModelProto()
    prepared.CopyFrom(model)
    if any(n.domain == DOMAIN for f in prepared.functions for n in f.node):
        # a function's values are typed per call site; inlined (as ORT does anyway) our nodes get their types
        prepared = onnx.inliner.inline_local_functions(prepared)
    facts = StaticFacts(prepared, raise_broadcast_errors=True)
    opset = opset_version(list(prepared.opset_import), "") or DEFAULT_OPSET
    rewriter = _Rewriter(NameGenerator(prepared), facts.types, opset, quiet, max_output_bytes)
    # children first: rewriting a graph copies its nodes, and with them the subgraphs they hold
    for container, _ in reversed(list(all_node_lists(prepared))):
        # a function's values are typed per call site: nothing is known about them here
        in_graph = _in_main_graph(prepared, container)
        rewriter.types = facts.types if in_graph else {}
        rewriter.shapes = facts.shapes if in_graph else {}
        rewriter.rewrite_container(container)
    if rewriter.used_standard:
        _ensure_opset(prepared.opset_import, "", DEFAULT_OPSET)
    if rewriter.used_guarded:
        _ensure_opset(prepared.opset_import, GUARDED_DOMAIN, schemas.VERSION)
        _ensure_opset(prepared.opset_import, "", DEFAULT_OPSET)
        for function in prepared.functions:
            _ensure_opset(function.opset_import, GUARDED_DOMAIN, schemas.VERSION)
            _ensure_opset(function.opset_import, "", opset_version(list(prepared.opset_import), "") or DEFAULT_OPSET)
    if prepared.ir_version > max_ir_version() or prepared.ir_version == 0:
        prepared.ir_version = max_ir_version()
    return prepared
