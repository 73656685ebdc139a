"""A node of ours bound to a validated view: attributes with defaults, padded inputs, static facts, output shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import NodeProto, TensorProto

from onnx_bcast import schemas
from onnx_bcast.errors import BroadcastError
from onnx_bcast.ops import SPEC_BY_NAME
from onnx_bcast.ops.broadcast import canonical_mode
from onnx_bcast.ops.common import ATTR_PROTO_KIND, OpSpec
from onnx_bcast.ops.elementwise import canonical_rule
from onnx_bcast.static_facts import Dims, StaticFacts

DOMAIN = schemas.DOMAIN
INTEGER_TYPES = (TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
                 TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64)


def node_label(node: NodeProto, index: int) -> str:
    """A node's name, or a stable stand-in for an unnamed node."""
    return node.name or f"{node.op_type}#{index}"


@dataclass
class Declared:
    """What a node says of itself, validated: its spec, label, attributes (defaults filled) and padded inputs."""

    node: NodeProto
    spec: OpSpec
    label: str
    attrs: dict[str, Any]
    inputs: list[str]  # padded to the spec's arity, "" for an absent input

    def __post_init__(self) -> None:
        self.attribute_key: tuple | None = None  # set by ``declare``
        self.signature: tuple | None = None  # equal signatures, equal static facts (``known_outputs.Decision``)
        self.op: str = self.spec.name  # the node's op_type (specs are found by it)
        # the broadcast rule: ``mode`` of the broadcasts, ``auto_broadcast`` of the elementwise ops, else ""
        self.mode: str = str(self.attrs.get(self.spec.mode_attr, ""))
        self.output: str = self.node.output[0]
        self.outputs: list[str] = list(self.node.output)

    def fail(self, detail: str) -> BroadcastError:
        """A BroadcastError naming this node, its op and its mode."""
        return BroadcastError(self.op, self.mode, detail, self.label, mode_attr=self.spec.mode_attr)


def declare(node: NodeProto, index: int, inputs: tuple[str, ...] | None = None) -> Declared:
    """Validate a node of ours on its own (op known, attributes, input and output count); no static facts.

    ``inputs``: the node's inputs, where the caller has read them already."""
    label = node_label(node, index)
    spec = SPEC_BY_NAME.get(node.op_type)
    if spec is None:
        raise BroadcastError(node.op_type, "", f"is not an op of domain {DOMAIN!r} "
                                               f"(known: {', '.join(sorted(SPEC_BY_NAME))})", label)
    key = attribute_key(node)
    declared = Declared(node, spec, label, read_attributes(node, spec, label, key),
                        padded_inputs(node, spec, label, inputs))
    declared.attribute_key = key
    names = _input_names(spec)
    if declared.mode == "explicit" and "axes_mapping" in names and not declared.inputs[names.index("axes_mapping")]:
        raise declared.fail("axes_mapping is required in explicit mode")  # the ORT form would read absent as []
    return declared


_READ: dict[tuple, dict[str, Any]] = {}  # (op, each attribute's bytes) -> attributes read (valid ones only)
_MAX_READ = 4096


def attribute_key(node: NodeProto) -> tuple:
    """The node's op type and each attribute's bytes: equal keys, equal attributes."""
    return (node.op_type, *[a.SerializeToString() for a in node.attribute])


def read_attributes(node: NodeProto, spec: OpSpec, label: str, key: tuple | None = None) -> dict[str, Any]:
    """The node's attributes with defaults filled; wrong names, kinds, references and modes are BroadcastErrors.

    Models repeat the same attributes node after node: a valid set is read once (a copy is returned).
    ``key``: ``attribute_key(node)``, where the caller has it.
    """
    key = attribute_key(node) if key is None else key
    attrs = _READ.get(key)
    if attrs is None:
        attrs = _read_attributes(node, spec, label)
        if len(_READ) < _MAX_READ:
            _READ[key] = attrs
    return dict(attrs)


def _read_attributes(node: NodeProto, spec: OpSpec, label: str) -> dict[str, Any]:
    known = {a.name: a for a in spec.attrs}
    attrs = spec.defaults()
    for attr in node.attribute:
        decl = known.get(attr.name)
        if decl is None:
            raise BroadcastError(node.op_type, "", f"unknown attribute {attr.name!r}", label)
        if attr.ref_attr_name:
            raise BroadcastError(node.op_type, "", f"attribute {attr.name!r} refers to function attribute "
                                                   f"{attr.ref_attr_name!r}; only literal attributes can be "
                                                   "converted", label)
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


_INPUT_NAMES = {spec.name: tuple(formal.name for formal in spec.inputs) for spec in SPEC_BY_NAME.values()}
_REQUIRED = {spec.name: sum(1 for i in spec.inputs if not i.optional) for spec in SPEC_BY_NAME.values()}


def _input_names(spec: OpSpec) -> tuple[str, ...]:
    names = _INPUT_NAMES.get(spec.name)
    return names if names is not None else tuple(formal.name for formal in spec.inputs)


def _required_inputs(spec: OpSpec) -> int:
    count = _REQUIRED.get(spec.name)
    return count if count is not None else sum(1 for i in spec.inputs if not i.optional)


def padded_inputs(node: NodeProto, spec: OpSpec, label: str, given: tuple[str, ...] | None = None) -> list[str]:
    """The node's inputs padded to the spec's arity; a wrong count or a missing required input is an error."""
    inputs = list(node.input if given is None else given)
    while inputs and inputs[-1] == "":
        inputs.pop()
    required = _required_inputs(spec)
    if not required <= len(inputs) <= len(spec.inputs) or "" in inputs[:required]:
        names = ", ".join(i.name + ("?" if i.optional else "") for i in spec.inputs)
        raise BroadcastError(node.op_type, "", f"takes inputs ({names}), got {len(node.input)}: {list(node.input)}",
                             label)
    count = len(spec.outputs)
    if len(node.output) != count or "" in node.output:
        what = "exactly one output" if count == 1 else f"exactly {count} outputs ({', '.join(spec.outputs)})"
        raise BroadcastError(node.op_type, "", f"has {what}, got {list(node.output)}", label)
    return inputs + [""] * (len(spec.inputs) - len(inputs))


_INTS: dict[int, tuple[Any, tuple[int, ...]]] = {}  # id(constant) -> (the constant, its values as ints)
_MAX_INTS = 4096


@dataclass
class Bound(Declared):
    """A declared node with what is statically known of its inputs (None: unknown) and its output shape."""

    shapes: list[Dims | None]  # per input: dims (None for an unknown dim), or None for an unknown rank
    types: list[int | None]  # per input: ONNX element type
    values: list[np.ndarray | None]  # per input: constant values
    out_shape: tuple[int, ...] | None  # the static output shape, validated
    in_function: bool

    def static_shape(self, i: int) -> tuple[int, ...] | None:
        """Input ``i``'s shape when every dim is known."""
        dims = self.shapes[i]
        if dims is None or None in dims:
            return None
        return tuple(int(d) for d in dims)

    def rank(self, i: int) -> int | None:
        dims = self.shapes[i]
        return None if dims is None else len(dims)

    def ints(self, i: int) -> tuple[int, ...] | None:
        """Input ``i``'s constant integer values."""
        value = self.values[i]
        if value is None:
            return None
        entry = _INTS.get(id(value))  # nodes share constants, and rules ask several times
        if entry is None or entry[0] is not value:
            if len(_INTS) >= _MAX_INTS:
                _INTS.clear()
            entry = _INTS[id(value)] = (value, tuple(int(v) for v in np.asarray(value).reshape(-1).tolist()))
        return entry[1]

    def length(self, i: int) -> int | None:
        """The length of 1-D input ``i`` (from its value or its shape)."""
        values = self.ints(i)
        if values is not None:
            return len(values)
        dims = self.shapes[i]
        return dims[0] if dims is not None and len(dims) == 1 else None

    def is_int64(self, i: int) -> bool:
        return self.types[i] == TensorProto.INT64


def bind(declared: Declared, facts: StaticFacts, in_function: bool = False) -> Bound:
    """Attach the static facts and validate them; inside a function only constants are known (values are typed
    per call site)."""
    names = declared.inputs
    signature = None if in_function else declared.signature
    if signature is not None:
        shared = facts.bound_by_signature.get(signature)
        if shared is not None:  # a node with equal attributes, constants and input types was bound: its facts
            return Bound(declared.node, declared.spec, declared.label, declared.attrs, names, *shared, in_function)
    reads = declared.spec.value_inputs  # only shape-like inputs' values matter: data values are never read
    if in_function:
        values = [facts.values.get(n) if n and r else None for n, r in zip(names, reads, strict=True)]
        shapes: list[Dims | None] = [None] * len(names)
        types: list[int | None] = [None] * len(names)
    else:
        shapes, types, values = facts.of_inputs(names, reads)
    _check_shape_inputs(declared, types, shapes)
    inferred = None if in_function else facts.shapes.get(declared.output)
    out_shape = _static_output(declared, shapes, values, inferred)
    if signature is not None:
        facts.bound_by_signature[signature] = (shapes, types, values, out_shape)
    return Bound(declared.node, declared.spec, declared.label, declared.attrs, names, shapes, types, values,
                 out_shape, in_function)


def _check_shape_inputs(declared: Declared, types: list[int | None], shapes: list[Dims | None]) -> None:
    """Shape-like inputs (target_shape, axes, ...) whose type or rank is known must be 1-D integer tensors."""
    for formal, name, elem, dims in zip(declared.spec.inputs, declared.inputs, types, shapes, strict=True):
        if not name or formal.type_param != "T_SHAPE":
            continue
        if elem is not None and elem not in INTEGER_TYPES:
            raise BroadcastError(declared.op, "", f"{formal.name} must be an integer tensor, got "
                                                  f"{TensorProto.DataType.Name(elem)}", declared.label)
        if dims is not None and len(dims) != 1:
            raise BroadcastError(declared.op, "", f"{formal.name} must be 1-D, got rank {len(dims)}", declared.label)


def _static_output(declared: Declared, shapes: list[Dims | None], values: list[np.ndarray | None],
                   inferred: Dims | None) -> tuple[int, ...] | None:
    """The validated output shape where statically known.

    A fully static inferred shape of a broadcast was computed and validated by our schema. Another family's is
    not proof: under none/pdpd the schema gives A's shape while B's may be unknown, a gradient's is ``data_shape``
    while ``delta``'s may be unknown, so only the spec's static rule on every input validates it.
    """
    if inferred is not None and None not in inferred and declared.spec.family == "broadcast":
        return tuple(int(d) for d in inferred)
    present = len(declared.inputs)
    while present and not declared.inputs[present - 1]:  # absent trailing optional inputs are not inputs
        present -= 1
    static = [None if s is None or None in s else tuple(int(d) for d in s) for s in shapes[:present]]
    try:
        return declared.spec.static_shape(static, list(values[:present]), declared.attrs)
    except BroadcastError as err:
        raise err.with_node(declared.label) from None
