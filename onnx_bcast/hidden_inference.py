"""onnx's shape inference with the nodes of ours that ``known_outputs`` decided on hidden from it.

A hidden node is moved to a domain that has no schema, so onnx skips it, and its output type is given as
value_info, which onnx starts from: every later node sees what our callback would have set. Where the decision
assumed an input's type, the run is checked: every assumed type must be the one onnx inferred for that value,
else (or when the run raises one of our errors, which an assumption may have caused) onnx infers again with the
known types only. The facts are then those of a run with every callback.
"""

from __future__ import annotations

from onnx import ModelProto, NodeProto, TypeProto, helper

from onnx_bcast import schemas
from onnx_bcast.binding import Declared
from onnx_bcast.errors import BroadcastError
from onnx_bcast.known_outputs import Decision, decide
from onnx_bcast.static_facts import StaticFacts

HIDDEN_DOMAIN = "onnx_bcast.inferred_before_inference"  # no schema has it: onnx skips these nodes
_VALUE_INFO_FIELD = 13 << 3 | 2  # GraphProto.value_info
_GRAPH_FIELD = 7 << 3 | 2  # ModelProto.graph


def static_facts(model: ModelProto, ours: list[tuple[int, Declared]], inputs: list[tuple[str, ...]],
                 produced: set[str]) -> StaticFacts:
    """``StaticFacts(model, raise_broadcast_errors=True)`` of a model without subgraphs or values defined twice
    (``ours``: its main graph's nodes of ours; ``inputs``: each node's inputs; ``produced``: every value defined)."""
    decision = _decided(model, ours, inputs, produced, assume=True)
    facts = None
    if decision.assumed:
        try:
            facts = _run(model, decision)
        except BroadcastError:
            facts = None
        if facts is None or any(_type_bytes(facts, name) != expected for name, expected in decision.assumed.items()):
            decision = _decided(model, ours, inputs, produced, assume=False)
            facts = None
    if facts is None:
        facts = _run(model, decision)
    for declared, key in decision.signed:  # the facts now hold what the decision assumed: ``bind`` may share them
        declared.signature = key
    return facts


def _decided(model: ModelProto, ours: list[tuple[int, Declared]], inputs: list[tuple[str, ...]],
             produced: set[str], assume: bool) -> Decision:
    try:
        return decide(model, ours, inputs, produced, assume)
    except Exception:  # noqa: BLE001 - an optimisation only: onnx infers everything itself then
        return Decision()


def _type_bytes(facts: StaticFacts, name: str) -> bytes | None:
    type_proto = facts.declared_type(name)
    return None if type_proto is None else type_proto.SerializeToString()


def _run(model: ModelProto, decision: Decision) -> StaticFacts:
    return StaticFacts(model, raise_broadcast_errors=True, subgraphs=False,
                       serialized=serialized_for_inference(model, decision.hidden))


def serialized_for_inference(model: ModelProto, hidden: list[tuple[NodeProto, TypeProto]]) -> bytes:
    """``model`` serialized with the ``hidden`` nodes (of its main graph) moved to the hidden domain and their
    output types appended as value_info. The model itself is left as it was."""
    if not hidden:
        return model.SerializeToString()
    for node, _ in hidden:
        node.domain = HIDDEN_DOMAIN
    try:
        body = model.SerializeToString()
    finally:
        for node, _ in hidden:
            node.domain = schemas.DOMAIN
    return body + _appended(hidden)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (``tag`` is ``number << 3 | 2``)."""
    size = len(payload)
    return bytes((tag, size)) + payload if size < 0x80 else bytes((tag,)) + _varint(size) + payload


def _appended(hidden: list[tuple[NodeProto, TypeProto]]) -> bytes:
    """A serialized ModelProto with the hidden outputs' value_info and the hidden domain's import.

    Appended to a serialized model, protobuf merges it in: a repeated field's entries are added to the model's.
    Written byte by byte (ValueInfoProto: name = 1, type = 2): building 20,000 messages in Python costs more.
    """
    suffixes: dict[int, bytes] = {}
    entries = []
    for node, type_proto in hidden:
        suffix = suffixes.get(id(type_proto))
        if suffix is None:
            suffix = suffixes[id(type_proto)] = _field(2 << 3 | 2, type_proto.SerializeToString())
        entries.append(_field(_VALUE_INFO_FIELD, _field(1 << 3 | 2, node.output[0].encode()) + suffix))
    opset = ModelProto(opset_import=[helper.make_opsetid(HIDDEN_DOMAIN, 1)]).SerializeToString()
    return _field(_GRAPH_FIELD, b"".join(entries)) + opset
