"""onnx's shape inference without the nodes of ours that ``known_outputs`` decided on (hidden from it).

onnx infers a model of the other nodes, with the initializers they read; a hidden output that they read is given
as typed value_info, which onnx starts from, so every later node sees what our callback would have set. The
facts take every hidden output's type, and the initializers, from the model itself. Where the decision
assumed an input's type, the run is checked: every assumed type must be the one onnx inferred for that value,
else (or when the run raises one of our errors, which an assumption may have caused) onnx infers again with the
known types only. The facts are then those of a run with every callback.
"""

from __future__ import annotations

from onnx import ModelProto, TypeProto

from onnx_bcast.errors import BroadcastError
from onnx_bcast.lowering.declaring import Declared, labelled
from onnx_bcast.lowering.fast.known_outputs import Decision, decide
from onnx_bcast.lowering.fast.proto_bytes import field
from onnx_bcast.lowering.static_facts import StaticFacts

_VALUE_INFO_FIELD = 13 << 3 | 2  # GraphProto.value_info
_GRAPH_FIELD = 7 << 3 | 2  # ModelProto.graph


def static_facts(model: ModelProto, ours: list[tuple[int, Declared]], inputs: list[list[str]],
                 produced: set[str], read: set[str]) -> StaticFacts:
    """``StaticFacts(model, raise_broadcast_errors=True)`` of a model without subgraphs or values defined twice
    (``ours``: its main graph's nodes of ours; ``inputs``: each node's inputs; ``produced``: every value defined;
    ``read``: every value the other nodes read: ``survey_nodes`` gives all four)."""
    decision = _decided(model, ours, inputs, produced, assume=True)
    facts = None
    if decision.assumed:
        try:
            facts = _run(model, decision, ours, inputs, read)
        except BroadcastError:
            facts = None
        if facts is None or any(_type_bytes(facts, name) != expected for name, expected in decision.assumed.items()):
            decision = _decided(model, ours, inputs, produced, assume=False)
            facts = None
    if facts is None:
        facts = _run(model, decision, ours, inputs, read)
    for declared, key in decision.signed:  # the facts now hold what the decision assumed: ``bind`` may share them
        declared.signature = key
    return facts


def _decided(model: ModelProto, ours: list[tuple[int, Declared]], inputs: list[list[str]],
             produced: set[str], assume: bool) -> Decision:
    try:
        return decide(model, ours, inputs, produced, assume)
    except Exception:  # noqa: BLE001 - an optimisation only: onnx infers everything itself then
        return Decision()


def _type_bytes(facts: StaticFacts, name: str) -> bytes | None:
    type_proto = facts.declared_type(name)
    return None if type_proto is None else type_proto.SerializeToString()


def _run(model: ModelProto, decision: Decision, ours: list[tuple[int, Declared]], inputs: list[list[str]],
         read: set[str]) -> StaticFacts:
    left_out = {index for index, _, _ in decision.hidden}
    with labelled([[(index, d) for index, d in ours if index not in left_out]]):  # those onnx sees
        if not decision.hidden:
            return StaticFacts(model, raise_broadcast_errors=True, subgraphs=False)
        serialized, known_types = without_hidden(model, decision.hidden, ours, inputs, read)
        return StaticFacts(model, raise_broadcast_errors=True, subgraphs=False, serialized=serialized,
                           known_types=known_types, initializers=decision.initializers)


def without_hidden(model: ModelProto, hidden: list[tuple[int, str, TypeProto]], ours: list[tuple[int, Declared]],
                   inputs: list[list[str]], read: set[str]) -> tuple[bytes, dict[str, TypeProto]]:
    """``model`` serialized without the ``hidden`` nodes (index in its main graph, output, output type) and without
    the initializers that only they read; the hidden outputs that the other nodes read are typed value_info.
    Also: every hidden output's type. ``ours``: the main graph's nodes of ours (the hidden ones among them);
    ``inputs``: each node's inputs; ``read``: what the nodes not of ours read. The model is left as it was."""
    graph = model.graph
    left_out = {index for index, _, _ in hidden}
    kept = [node for index, node in enumerate(graph.node) if index not in left_out]
    also_read = {name for index, _ in ours if index not in left_out for name in inputs[index]}
    known_types = {output: type_proto for _, output, type_proto in hidden}
    reduced = ModelProto(ir_version=model.ir_version, opset_import=model.opset_import, functions=model.functions)
    body = reduced.graph
    body.name = graph.name
    body.input.extend(graph.input)
    body.output.extend(graph.output)
    body.value_info.extend(graph.value_info)
    body.sparse_initializer.extend(graph.sparse_initializer)
    body.initializer.extend(t for t in graph.initializer if t.name in read or t.name in also_read)
    body.node.extend(kept)
    typed = [(name, type_proto) for name, type_proto in known_types.items() if name in read or name in also_read]
    return reduced.SerializeToString() + _value_infos(typed), known_types


def _value_infos(typed: list[tuple[str, TypeProto]]) -> bytes:
    """A serialized ModelProto whose graph holds a value_info per (name, type): appended to a serialized model,
    protobuf merges it in (a repeated field's entries are added to the model's).

    Written byte by byte (ValueInfoProto: name = 1, type = 2): building thousands of messages in Python costs more.
    """
    if not typed:
        return b""
    suffixes: dict[int, bytes] = {}
    entries = []
    for name, type_proto in typed:
        suffix = suffixes.get(id(type_proto))
        if suffix is None:
            suffix = suffixes[id(type_proto)] = field(2 << 3 | 2, type_proto.SerializeToString())
        entries.append(field(_VALUE_INFO_FIELD, field(1 << 3 | 2, name.encode()) + suffix))
    return field(_GRAPH_FIELD, b"".join(entries))
