"""Protobuf fields written as bytes (lowering/fast/proto_bytes.py) parse into the messages protobuf builds."""

from __future__ import annotations

import pytest
from onnx import GraphProto, NodeProto, helper

from onnx_bcast.lowering.fast import proto_bytes

LONG = "n" * 127, "m" * 128, "é" * 100, "x" * 20000  # one-byte length, two-byte lengths (UTF-8: 200 bytes), three


@pytest.mark.parametrize("inputs, outputs, name, doc", [
    (["a", "b"], ["y"], "node", "from here"),
    (["a", "", "c"], ["y"], None, ""),  # an absent input keeps its place; no name, no doc_string
    (["a"], ["y"], "", "d"),  # an empty name that is set (elision writes one)
    (list(LONG), [LONG[1]], LONG[2], LONG[3]),
    ([], ["y", "z"], "ü", ""),
])
def test_a_node_written_as_bytes_is_the_node(inputs: list[str], outputs: list[str], name: str | None,
                                              doc: str) -> None:
    attributes = [helper.make_attribute("axes", [0, 2]), helper.make_attribute("mode", "pdpd")]
    fixed = NodeProto(op_type="Unsqueeze", domain="custom", attribute=attributes)
    doc_field = proto_bytes.text(proto_bytes.NODE_DOC, doc) if doc else b""
    written = NodeProto.FromString(proto_bytes.node(fixed.SerializeToString(), inputs, outputs, name, doc_field))
    expected = NodeProto(op_type="Unsqueeze", domain="custom", attribute=attributes, input=inputs, output=outputs)
    if name is not None:
        expected.name = name
    if doc:
        expected.doc_string = doc
    assert written.SerializeToString() == expected.SerializeToString()
    assert written.HasField("name") == (name is not None)


def test_node_fields_spliced_into_a_graph_keep_their_order() -> None:
    nodes = [NodeProto(op_type="Relu", input=[f"x{i}"], output=[f"x{i + 1}"]) for i in range(300)]
    graph = GraphProto(name="g")
    graph.MergeFromString(b"".join(proto_bytes.field(proto_bytes.GRAPH_NODE, n.SerializeToString()) for n in nodes))
    assert list(graph.node) == nodes and graph.name == "g"
