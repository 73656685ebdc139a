"""The lowering's walks: one over every node (names, inputs, definitions, our nodes declared), and the node lists
without an attribute walk where the bytes show no subgraph."""

from __future__ import annotations

from dataclasses import dataclass

from onnx import ModelProto

from onnx_bcast.lowering.declaring import Declared, declare
from onnx_bcast.model.walk import NameGenerator, NodeList, node_lists
from onnx_bcast.onnx_defs.schemas import DOMAIN


@dataclass
class Survey:
    """What one walk over every node finds: per container, its nodes of ours declared and each node's inputs; the
    names read by the other nodes."""

    declared: list[list[tuple[int, Declared]]]
    inputs: list[list[list[str]]]
    read: set[str]
    produced: set[str]  # every value a node defines
    redefined: bool = False  # some value is defined by two nodes (or twice by one)


def survey_nodes(lists: list[NodeList], names: NameGenerator) -> Survey:
    """One walk: every name taken, and every node of ours declared (validated before shape inference)."""
    survey = Survey([], [], set(), set())
    produced, defined, read = survey.produced, 0, survey.read
    taken: set[str] = set()  # node names, and what our nodes read (the others' reads are in ``read``)
    add_name, add_read, add_produced, add_one = taken.add, read.update, produced.update, produced.add
    for entry in lists:
        names.reserve_values(entry.container)
        found: list[tuple[int, Declared]] = []
        inputs: list[list[str]] = []
        add_inputs = inputs.append
        for i, node in enumerate(entry.container.node):
            ins = node.input[:]  # (a slice of a protobuf list is twice as fast as tuple() of it)
            add_inputs(ins)
            add_name(node.name)
            outs = node.output
            if len(outs) == 1:
                add_one(outs[0])
                defined += 1
            else:
                add_produced(outs)
                defined += len(outs)
            if node.domain == DOMAIN:
                taken.update(ins)
                found.append((i, declare(node, i, ins)))
            else:
                add_read(ins)
        survey.declared.append(found)
        survey.inputs.append(inputs)
    names.take(taken)
    names.take(read)
    names.take(produced)
    survey.redefined = len(produced) != defined  # (also where two optional outputs are left out: that is fine)
    produced.discard("")
    return survey


def walked_node_lists(model: ModelProto) -> list[NodeList]:
    """``node_lists(model)``, without walking every node's attributes where the bytes show that no attribute holds
    a graph (an attribute of type GRAPH or GRAPHS is written with the bytes A0 01 05 or A0 01 0A)."""
    data = model.SerializeToString()
    if b"\xa0\x01\x05" in data or b"\xa0\x01\x0a" in data:
        return list(node_lists(model))
    return [NodeList(model.graph, list(model.opset_import), False),
            *(NodeList(f, list(f.opset_import), True) for f in model.functions)]
