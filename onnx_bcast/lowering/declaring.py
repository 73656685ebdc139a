"""A node of ours declared: validated on its own (op known, attributes with defaults, inputs padded to the arity)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import onnx
from onnx import NodeProto

from onnx_bcast.errors import BroadcastError, NotLowerable
from onnx_bcast.onnx_defs import schemas
from onnx_bcast.onnx_defs.inference import attribute_value
from onnx_bcast.ops import SPEC_BY_NAME
from onnx_bcast.ops.broadcast import canonical_mode
from onnx_bcast.ops.broadcast_modes import MODE_BY_NAME
from onnx_bcast.ops.common import ATTR_PROTO_KIND, OpSpec
from onnx_bcast.ops.elementwise import canonical_rule

DOMAIN = schemas.DOMAIN


def present_count(inputs: Sequence[str]) -> int:
    """How many of a node's inputs are inputs: absent ("") trailing ones are not."""
    count = len(inputs)
    while count and not inputs[count - 1]:
        count -= 1
    return count


def node_label(node: NodeProto, index: int) -> str:
    """A node's name, or a stable stand-in for an unnamed node."""
    return node.name or f"{node.op_type}#{index}"


@contextlib.contextmanager
def labelled(declared: list[list[tuple[int, Declared]]]) -> Iterator[None]:
    """Unnamed nodes of ours carry their label as a name meanwhile (onnx's inference then names them in our errors
    as every other path does), and are unnamed again afterwards, as they were."""
    unnamed = [(d.node, d.label, d.node.HasField("name")) for found in declared for _, d in found if not d.node.name]
    for node, label, _ in unnamed:
        node.name = label
    try:
        yield
    finally:
        for node, _, had_name in unnamed:
            if had_name:
                node.name = ""
            else:
                node.ClearField("name")


@dataclass(kw_only=True)
class Declared:
    """What a node says of itself, validated: its spec, label, attributes (defaults filled) and padded inputs."""

    node: NodeProto
    spec: OpSpec
    label: str
    attrs: dict[str, Any]
    inputs: list[str]  # padded to the spec's arity, "" for an absent input
    op: str  # the node's op_type (specs are found by it)
    mode: str  # the broadcast rule: ``mode`` of the broadcasts, ``auto_broadcast`` of the elementwise ops, else ""
    outputs: list[str]
    attribute_key: tuple  # the op type and each attribute's bytes (``attribute_key``)
    signature: tuple | None = None  # equal signatures, equal static facts (``known_outputs.Decision``)

    @property
    def output(self) -> str:
        return self.outputs[0]

    def fail(self, detail: str) -> BroadcastError:
        """A BroadcastError naming this node, its op and its mode."""
        return BroadcastError(self.op, self.mode, detail, self.label, mode_attr=self.spec.mode_attr)

    def limit(self, detail: str) -> NotLowerable:
        """A NotLowerable naming this node: the lowering cannot write it (its inputs may be valid)."""
        return NotLowerable(self.op, self.mode, detail, self.label, mode_attr=self.spec.mode_attr)


_DECLARED: dict[tuple, tuple[OpSpec, dict[str, Any], int, str]] = {}  # a valid form -> spec, attributes, kept
# inputs (absent trailing ones dropped), mode
_MAX_DECLARED = 4096


def declare(node: NodeProto, index: int, inputs: list[str] | None = None) -> Declared:
    """Validate a node of ours on its own (op known, attributes, input and output count); no static facts.

    ``inputs``: the node's inputs, where the caller has read them already. Models repeat a node's form (op,
    attributes, which inputs are absent, how many outputs): a valid form is validated once.
    """
    given = node.input[:] if inputs is None else inputs
    key = attribute_key(node)
    outputs = node.output
    form = (key, len(given) if "" not in given else tuple(name == "" for name in given), len(outputs), "" in outputs)
    known = _DECLARED.get(form)
    if known is None:
        declared = _declared(node, index, given, key)
        if len(_DECLARED) < _MAX_DECLARED:
            _DECLARED[form] = (declared.spec, dict(declared.attrs), present_count(given), declared.mode)
        return declared
    spec, attrs, kept, mode = known
    padded = given[:kept]
    if kept < len(spec.inputs):
        padded += [""] * (len(spec.inputs) - kept)
    return Declared(node=node, spec=spec, label=node_label(node, index), attrs=dict(attrs), inputs=padded,
                    op=spec.name, mode=mode, outputs=list(outputs), attribute_key=key)


def _declared(node: NodeProto, index: int, inputs: list[str], key: tuple) -> Declared:
    label = node_label(node, index)
    spec = SPEC_BY_NAME.get(node.op_type)
    if spec is None:
        raise BroadcastError(node.op_type, "", f"is not an op of domain {DOMAIN!r} "
                                               f"(known: {', '.join(sorted(SPEC_BY_NAME))})", label)
    attrs = read_attributes(node, spec, label)
    declared = Declared(node=node, spec=spec, label=label, attrs=attrs, inputs=padded_inputs(node, spec, label, inputs),
                        op=spec.name, mode=str(attrs.get(spec.mode_attr, "")), outputs=list(node.output),
                        attribute_key=key)
    names = [formal.name for formal in spec.inputs]
    if "axes_mapping" in names and MODE_BY_NAME[declared.mode].uses_axes_mapping and \
            not declared.inputs[names.index("axes_mapping")]:  # the ORT form would read absent as []
        raise declared.fail(f"axes_mapping is required in {declared.mode} mode")
    return declared


def attribute_key(node: NodeProto) -> tuple:
    """The node's op type and each attribute's bytes: equal keys, equal attributes."""
    return (node.op_type, *[a.SerializeToString() for a in node.attribute])


def read_attributes(node: NodeProto, spec: OpSpec, label: str) -> dict[str, Any]:
    """The node's attributes with defaults filled; wrong names, kinds, references and modes are BroadcastErrors."""
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
        attrs[attr.name] = attribute_value(attr)
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


def padded_inputs(node: NodeProto, spec: OpSpec, label: str, given: list[str] | None = None) -> list[str]:
    """The node's inputs padded to the spec's arity; a wrong count or a missing required input is an error."""
    inputs = list(node.input if given is None else given)
    del inputs[present_count(inputs):]
    required = sum(1 for formal in spec.inputs if not formal.optional)
    if not required <= len(inputs) <= len(spec.inputs) or "" in inputs[:required]:
        names = ", ".join(i.name + ("?" if i.optional else "") for i in spec.inputs)
        raise BroadcastError(node.op_type, "", f"takes inputs ({names}), got {len(node.input)}: {list(node.input)}",
                             label)
    count = len(spec.outputs)
    if len(node.output) != count or "" in node.output:
        what = "exactly one output" if count == 1 else f"exactly {count} outputs ({', '.join(spec.outputs)})"
        raise BroadcastError(node.op_type, "", f"has {what}, got {list(node.output)}", label)
    return inputs + [""] * (len(spec.inputs) - len(inputs))


