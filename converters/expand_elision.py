"""Expand elision: drop an emitted ``Expand`` whose every consumer broadcasts to the same shape anyway."""

from __future__ import annotations

import numpy as np
from onnx import FunctionProto, GraphProto, NodeProto

from onnx_bcast.model_walk import subgraphs
from onnx_bcast.static_facts import StaticFacts

# standard ops that broadcast all their inputs multidirectionally (numpy style)
BROADCASTING = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Equal", "Less", "LessOrEqual", "Greater",
                "GreaterOrEqual", "And", "Or", "Xor", "Sum", "Mean", "BitShift", "BitwiseAnd", "BitwiseOr",
                "BitwiseXor"}


def _subgraph_reads(graph: GraphProto) -> set[str]:
    """Every name read inside the subgraphs of ``graph``'s nodes (they may read outer values by name)."""
    return {name for sub in subgraphs(graph) for node in sub.node for name in node.input}


def elide_expands(container: GraphProto | FunctionProto, expands: list[tuple[NodeProto, tuple[int, ...]]],
                  facts: StaticFacts) -> None:
    """``Add(features[1,16,50,50], Expand(Unsqueeze(bias), ...))`` becomes ``Add(features, Unsqueeze(bias))``.

    The same values, without materialising (or letting ORT constant-fold) the full-size bias. Linear in the
    container's size: consumers and producers are indexed once.
    """
    if not expands or not isinstance(container, GraphProto):
        return
    protected = {v.name for v in container.output} | _subgraph_reads(container)
    consumers: dict[str, list[NodeProto]] = {}
    producers: dict[str, NodeProto] = {}
    for node in container.node:
        for name in set(node.input):
            consumers.setdefault(name, []).append(node)
        for name in node.output:
            producers[name] = node
    dropped: set[str] = set()  # outputs of the dropped Expands
    for emitted, out_shape in expands:
        out = emitted.output[0]
        expand = producers.get(out)  # the container holds copies of the emitted nodes: find them by output
        users = consumers.get(out, [])
        if expand is None or out in protected or not users or \
                not all(_keeps_shape(u, out, out_shape, facts) for u in users):
            continue
        source = expand.input[0]
        for user in users:
            for i, name in enumerate(user.input):
                if name == out:
                    user.input[i] = source
        producer = producers.get(source)  # the original node name moves to what now stands in its place
        if expand.name and producer is not None and producer.name.startswith(f"{expand.name}/"):
            producer.name = expand.name
        dropped.add(out)
    if dropped:
        keep = [n for n in container.node if not (n.op_type == "Expand" and n.output[0] in dropped)]
        del container.node[:]
        container.node.extend(keep)
        infos = [v for v in container.value_info if v.name not in dropped]
        del container.value_info[:]
        container.value_info.extend(infos)


def _keeps_shape(user: NodeProto, out: str, out_shape: tuple[int, ...], facts: StaticFacts) -> bool:
    if user.domain not in ("", "ai.onnx") or user.op_type not in BROADCASTING:
        return False
    others = [name for name in user.input if name != out]
    if not others:
        return False
    for name in others:
        shape = facts.shapes.get(name)
        if shape is None or any(d is None for d in shape):
            return False
        try:
            if np.broadcast_shapes(tuple(shape), out_shape) != tuple(shape):
                return False
        except ValueError:
            return False
    return True
