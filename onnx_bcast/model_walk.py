"""Walking an ONNX model: every graph (subgraphs included) and function, and a generator of fresh names."""

from __future__ import annotations

from collections.abc import Iterator

import onnx
from onnx import AttributeProto, GraphProto, ModelProto


def subgraphs(graph: GraphProto) -> Iterator[GraphProto]:
    """The graphs held by the attributes of ``graph``'s nodes, recursively (not ``graph`` itself)."""
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                yield attr.g
                yield from subgraphs(attr.g)
            elif attr.type == AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield g
                    yield from subgraphs(g)


def all_graphs(model: ModelProto) -> Iterator[GraphProto]:
    """The main graph and every subgraph in it."""
    yield model.graph
    yield from subgraphs(model.graph)


def all_node_lists(model: ModelProto) -> Iterator[tuple[object, list[onnx.OperatorSetIdProto]]]:
    """Every node container (graphs, subgraphs, functions and their subgraphs) with the opsets it sees."""
    for graph in all_graphs(model):
        yield graph, list(model.opset_import)
    for function in model.functions:
        yield function, list(function.opset_import)
        for node in function.node:
            for attr in node.attribute:
                graphs = [attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)
                for g in graphs:
                    yield g, list(function.opset_import)
                    for sub in subgraphs(g):
                        yield sub, list(function.opset_import)


class NameGenerator:
    """Fresh names that collide with nothing in the model (values, nodes, functions)."""

    def __init__(self, model: ModelProto) -> None:
        self._used: set[str] = set()
        for container, _ in all_node_lists(model):
            for node in container.node:
                self._used.add(node.name)
                self._used.update(node.input)
                self._used.update(node.output)
            if isinstance(container, GraphProto):
                self._used.update(v.name for v in container.input)
                self._used.update(v.name for v in container.output)
                self._used.update(v.name for v in container.value_info)
                self._used.update(t.name for t in container.initializer)
                self._used.update(t.values.name for t in container.sparse_initializer)
            else:
                self._used.update(container.input)
                self._used.update(container.output)
        self._used.discard("")

    def __call__(self, hint: str) -> str:
        name = hint
        k = 1
        while name in self._used:
            name = f"{hint}_{k}"
            k += 1
        self._used.add(name)
        return name


def opset_version(opsets: list[onnx.OperatorSetIdProto], domain: str) -> int | None:
    """The version a model or function imports for ``domain`` (``ai.onnx`` is the default domain)."""
    wanted = "" if domain == "ai.onnx" else domain
    for opset in opsets:
        if (opset.domain or "") == wanted or (wanted == "" and opset.domain == "ai.onnx"):
            return opset.version
    return None
