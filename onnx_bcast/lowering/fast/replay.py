"""Rewrites replayed: a node like one rewritten before gets the same nodes under its own names, the rule not rerun.

Models repeat a layer thousands of times. Two nodes of ours are alike when they have the same rule, the same
signature (attributes, constants' data, input types: hence the same static facts, ``known_outputs``), the same
pattern of equal names among their inputs and outputs, and the same opset. The first of them is rewritten once more
on placeholder names, by a recording emitter: the nodes it writes, the fresh names and constants it asks for (in
order) and what Expand elision answered and did are kept, with every placeholder as a slot. A later alike node is
rewritten by filling the slots with its own names: the same name requests in the same order give the names a rerun
would, and elision is asked the same questions first (another answer: the rule runs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from onnx import AttributeProto, NodeProto, helper

from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.lowering.fast import proto_bytes
from onnx_bcast.lowering.node_build import int64_tensor
from onnx_bcast.lowering.rules import Rule

if TYPE_CHECKING:
    from onnx_bcast.lowering.expand_elision import ExpandElision

_OPEN, _CLOSE = "\ue000", "\ue001"  # a slot is written _OPEN + its number + _CLOSE (private-use characters)
_MARK = _OPEN.encode()
Text = int | tuple[str | int, ...]  # a slot's number, or literal parts and slot numbers to join


def _slot(k: int) -> str:
    return f"{_OPEN}{k}{_CLOSE}"


def _text(value: str) -> Text:
    """A recorded string as slots and literals."""
    if _OPEN not in value:
        return (value,)
    parts: list[str | int] = []
    for piece in value.split(_OPEN):
        number, close, rest = piece.partition(_CLOSE)
        if close:
            parts.append(int(number))
            if rest:
                parts.append(rest)
        elif piece:
            parts.append(piece)
    return parts[0] if len(parts) == 1 and isinstance(parts[0], int) else tuple(parts)


def _fill(text: Text, values: list[str]) -> str:
    if type(text) is int:
        return values[text]
    return "".join(part if type(part) is str else values[part] for part in text)


class _Abandon(Exception):
    """The recording met something it cannot replay."""


@dataclass
class _Template:
    """One recorded rewrite: requests in order, elision's questions and effects, the nodes written."""

    requests: list[tuple[str, Text | tuple[int, ...], str]] = field(default_factory=list)  # name: hint; const
    questions: list[tuple[Text, tuple[int, ...], bool]] = field(default_factory=list)  # can_drop(out, shape)
    effects: list[tuple[str, Text, Text]] = field(default_factory=list)  # ("drop", out, _) or ("rewire", out, src)
    # op type and domain serialized, the attributes in order (serialized, or a string's name and text), inputs,
    # outputs, name (None: not set)
    nodes: list[tuple[bytes, list[bytes | tuple[str, Text]], list[Text], list[Text], Text | None]] = \
        field(default_factory=list)
    domains: set[str] = field(default_factory=set)  # of the nodes written, the default one left out


class _Names:
    """The recording's name generator: each request is a new slot."""

    def __init__(self, template: _Template, first_free: int) -> None:
        self.template, self.next = template, first_free

    def __call__(self, hint: str) -> str:
        self.template.requests.append(("name", _text(hint), ""))
        self.next += 1
        return _slot(self.next - 1)


class _Dropped:
    """Elision's set of dropped outputs, as the recording sees it: each addition is kept."""

    def __init__(self, template: _Template) -> None:
        self.template = template

    def add(self, output: str) -> None:
        self.template.effects.append(("drop", _text(output), ()))


class _Elision:
    """Asks the real elision about the real node's outputs, and keeps the questions, answers and effects."""

    def __init__(self, template: _Template, real: ExpandElision, names: dict[str, str]) -> None:
        self.template, self.real, self.names = template, real, names
        self.dropped = _Dropped(template)

    def can_drop(self, output: str, out_shape: tuple[int, ...]) -> bool:
        if output not in self.names:
            raise _Abandon(output)
        answer = self.real.can_drop(self.names[output], out_shape)
        self.template.questions.append((_text(output), tuple(out_shape), answer))
        return answer

    def rewire(self, output: str, source: str) -> None:
        self.template.effects.append(("rewire", _text(output), _text(source)))


class _RecordingEmitter(Emitter):
    """An emitter whose fresh names and shared constants are slots, and whose requests are kept in order."""

    def bind_template(self, template: _Template, names: _Names) -> None:
        self.template, self.slot_names, self.const_slots = template, names, {}

    def const_i64(self, values: Sequence[int], hint: str = "const") -> str:
        key = tuple(int(v) for v in values)
        slot = self.const_slots.get(key)
        if slot is None:  # as in a real run, the same values within one node are one constant
            self.template.requests.append(("const", key, hint))
            slot = self.const_slots[key] = _slot(self.slot_names.next)
            self.slot_names.next += 1
        self.known_constants[slot] = key
        return slot

    def const_f64(self, values: Sequence[float], hint: str = "const") -> str:
        self.template.requests.append(("f64", tuple(float(v) for v in values), hint))
        self.slot_names.next += 1
        return _slot(self.slot_names.next - 1)

    def fold_to_constant(self, node: NodeProto, values: Sequence[int]) -> None:
        key = tuple(int(v) for v in values)
        self.nodes.remove(node)
        self.known_constants[node.output[0]] = key
        self.template.requests.append(("fold", _text(node.output[0]), key))  # an initializer of that name
        self.slot_names.next += 1  # (a slot of its own, unused: every request takes one)


class Replays:
    """The recorded rewrites of one lowering pass, by (rule, signature, name pattern, opset)."""

    def __init__(self) -> None:
        self._templates: dict[tuple, _Template | None] = {}

    def rewrite(self, rule: Rule, bound: Bound, emit: Emitter) -> bool:
        """Rewrite ``bound`` into ``emit`` from a recording (made now if there is none): False where it cannot be,
        and the caller runs the rule."""
        if bound.signature is None or not emit.allow_initializers:
            return False
        names = [*bound.inputs, *bound.outputs]
        pattern = None if len(set(names)) == len(names) else tuple(names.index(n) for n in names)
        # rule sets outlive a pass; an unnamed node's final name is "", which the emitter does not set
        key = (id(rule), bound.signature, pattern, emit.opset, emit.elision is None, not emit.final_name)
        if any(v is not None for v in (*bound.computed, *bound.derived_dims)):  # facts from the graph upstream,
            key += (tuple(bound.computed), tuple(bound.derived_dims), tuple(bound.fact_names))  # not in the signature
        if bound.division_proven_safe:  # from constants' data, which the signature leaves out
            key += ("division_proven_safe",)
        template = self._templates.get(key, False)
        if template is False:
            template = self._templates[key] = _record(rule, bound, emit, names)
        return template is not None and _replay(template, bound, emit, names)


def _record(rule: Rule, bound: Bound, emit: Emitter, names: list[str]) -> _Template | None:
    """The rule's rewrite of ``bound`` on slots: 0.. for its inputs and outputs (equal names, one slot; absent
    ones stay ""), then its label and final name (an unnamed node's stays ""); None where anything in it is not a
    slot or a literal of the rule's own."""
    slots = [name and _slot(names.index(name)) for name in names]
    label, final = len(names), len(names) + 1
    n_in = len(bound.inputs)
    placeholder = dataclasses.replace(bound, node=None, inputs=slots[:n_in], outputs=slots[n_in:], label=_slot(label))
    template = _Template()
    generated = _Names(template, final + 1)
    recorder = _RecordingEmitter(generated, emit.opset, _slot(label), emit.op, emit.mode, emit.allow_initializers,
                                 final_name=emit.final_name and _slot(final), mode_attr=emit.mode_attr, doc=emit.doc)
    recorder.bind_template(template, generated)
    recorder.constants = {}
    if emit.elision is not None:
        recorder.elision = _Elision(template, emit.elision, dict(zip(slots, names, strict=True)))
    try:
        rule.rewrite(recorder, placeholder)
        recorder.prune(placeholder.outputs)
    except Exception:  # noqa: BLE001 - the rule runs on the real node instead, and says what is wrong there
        return None
    for node in recorder.nodes:
        attributes = _attributes(node)
        if attributes is None:
            return None  # a name inside an attribute other than a string's value: not replayed
        if node.HasField("doc_string") != bool(emit.doc) or node.HasField("domain") != bool(node.domain):
            return None  # every node the emitter writes has its doc_string, and a domain only when not the default
        fixed = NodeProto(op_type=node.op_type)
        if node.domain:
            fixed.domain = node.domain
            template.domains.add(node.domain)
        template.nodes.append((fixed.SerializeToString(), attributes, [_text(n) for n in node.input],
                               [_text(n) for n in node.output], _text(node.name) if node.HasField("name") else None))
    return template


def _attributes(node: NodeProto) -> list[bytes | tuple[str, Text]] | None:
    """The node's attributes in order: each one serialized as a NodeProto field, or (name, text) for a string
    attribute whose value holds a slot (a label, such as ONNX Runtime kernels carry); None for a slot elsewhere."""
    out: list[bytes | tuple[str, Text]] = []
    for attribute in node.attribute:
        data = attribute.SerializeToString()
        if _MARK not in data:
            out.append(proto_bytes.field(proto_bytes.NODE_ATTRIBUTE, data))
        elif attribute.type == AttributeProto.STRING and _MARK not in attribute.name.encode() and \
                attribute == helper.make_attribute(attribute.name, attribute.s.decode()):
            out.append((attribute.name, _text(attribute.s.decode())))
        else:
            return None
    return out


def _replay(template: _Template, bound: Bound, emit: Emitter, names: list[str]) -> bool:
    values = [*names, bound.label, emit.final_name]
    elision = emit.elision
    for output, shape, answer in template.questions:
        if elision.can_drop(values[output] if type(output) is int else _fill(output, values), shape) != answer:
            return False
    names_of, const_i64, add_value = emit.names, emit.const_i64, values.append
    for kind, what, hint in template.requests:
        if kind == "name":
            add_value(names_of(_fill(what, values)))
        elif kind == "const":
            add_value(const_i64(what, hint))
        elif kind == "f64":
            add_value(emit.const_f64(what, hint))
        else:  # "fold": the folded node's output (``what``) as an initializer of its values (``hint``)
            emit.place_constant(int64_tensor(_fill(what, values), hint))
            add_value("")
    doc = proto_bytes.text(proto_bytes.NODE_DOC, emit.doc) if emit.doc else b""
    reads, add_node = emit.reads, emit.serialized.append
    for fixed, attributes, inputs, outputs, name in template.nodes:  # as bytes: the engine splices them in
        ins = [values[t] if type(t) is int else _fill(t, values) for t in inputs]
        outs = [values[t] if type(t) is int else _fill(t, values) for t in outputs]
        node_name = None if name is None else values[name] if type(name) is int else _fill(name, values)
        filled = b"".join(a if type(a) is bytes else proto_bytes.string_attribute(a[0], _fill(a[1], values))
                          for a in attributes)
        add_node(proto_bytes.node(fixed + filled, ins, outs, node_name, doc))
        reads.update(ins)
    emit.domains.update(template.domains)
    for kind, output, source in template.effects:
        if kind == "drop":
            elision.dropped.add(_fill(output, values))
        else:
            elision.rewire(_fill(output, values), _fill(source, values))
    emit.prune_initializers()  # the constants of checks proven statically (their nodes were never recorded)
    return True
