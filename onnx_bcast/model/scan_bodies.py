"""Scan bodies' outputs given the ranks shape inference found: ONNX Runtime's Scan runs no body output without one."""

from __future__ import annotations

from collections.abc import Iterator

from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, ValueInfoProto

_GRAPH_KINDS = (AttributeProto.GRAPH, AttributeProto.GRAPHS)


def rank_scan_outputs(model: ModelProto, inferred: ModelProto) -> int:
    """Each ``Scan`` body output of ``model`` without a shape gets the rank that ``inferred`` (shape inference of
    the same model before the lowering rewrote our nodes) gives it, every dim unknown; returns how many.

    ONNX Runtime's Scan sizes its outputs from its body's declared outputs and fails a run whose body output has no
    shape ("Subgraph must have the shape set for all outputs"). The lowering set the declared shapes aside (claims),
    and ORT infers none through a Python kernel's output, so a body whose output is one of ours could not run in
    the numpy backend. Only the rank is written: known dims would let an optimizer write the status ``Reshape``'s
    shape as a constant, and drop the check. Bodies are paired by position, the nodes that hold graphs being the
    same in both (the lowering writes none); a pair that differs ends the walk there.
    """
    return _rank(model.graph, inferred.graph)


def _rank(graph: GraphProto, inferred: GraphProto) -> int:
    given = 0
    for node, twin in _holders(graph, inferred):
        scan = node.op_type == "Scan" and node.domain in ("", "ai.onnx")
        for attr, twin_attr in zip(node.attribute, twin.attribute, strict=False):
            if attr.name != twin_attr.name or attr.type not in _GRAPH_KINDS:
                continue
            bodies = [attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)
            twins = [twin_attr.g] if twin_attr.type == AttributeProto.GRAPH else list(twin_attr.graphs)
            for body, body_twin in zip(bodies, twins, strict=False):
                if scan and attr.name == "body":
                    given += sum(_give_rank(out, known) for out, known in zip(body.output, body_twin.output,
                                                                               strict=False))
                given += _rank(body, body_twin)
    return given


def _holders(graph: GraphProto, inferred: GraphProto) -> Iterator[tuple[NodeProto, NodeProto]]:
    """The nodes that hold graphs, each with its twin in ``inferred``, while the two agree."""
    def holders(g: GraphProto) -> list[NodeProto]:
        return [n for n in g.node if any(a.type in _GRAPH_KINDS for a in n.attribute)]

    for node, twin in zip(holders(graph), holders(inferred), strict=False):
        if (node.op_type, node.domain, list(node.output)) != (twin.op_type, twin.domain, list(twin.output)):
            return
        yield node, twin


def _give_rank(output: ValueInfoProto, known: ValueInfoProto) -> bool:
    """``output``, a tensor without a shape, given ``known``'s rank (dims unknown); whether it was."""
    if (output.name != known.name or not output.type.HasField("tensor_type")
            or output.type.tensor_type.HasField("shape") or not known.type.HasField("tensor_type")
            or not known.type.tensor_type.HasField("shape")):
        return False
    shape = output.type.tensor_type.shape
    shape.SetInParent()  # rank 0 too: an empty shape is a scalar's
    for _ in known.type.tensor_type.shape.dim:
        shape.dim.add()
    return True
