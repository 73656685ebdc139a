"""Walking an ONNX model: every graph (subgraphs included) and function, and a generator of fresh names."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import onnx
from onnx import AttributeProto, FunctionProto, GraphProto, ModelProto


class NodeList(NamedTuple):
    """One node container with the opsets it sees; ``in_function``: inside a model-local function."""

    container: GraphProto | FunctionProto
    opsets: list[onnx.OperatorSetIdProto]
    in_function: bool


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


def node_lists(model: ModelProto) -> Iterator[NodeList]:
    """Every node container (graphs, subgraphs, functions and their subgraphs), parents before children."""
    for graph in all_graphs(model):
        yield NodeList(graph, list(model.opset_import), False)
    for function in model.functions:
        opsets = list(function.opset_import)
        yield NodeList(function, opsets, True)
        for node in function.node:
            for attr in node.attribute:
                graphs = [attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)
                for g in graphs:
                    yield NodeList(g, opsets, True)
                    for sub in subgraphs(g):
                        yield NodeList(sub, opsets, True)


def all_node_lists(model: ModelProto) -> Iterator[tuple[GraphProto | FunctionProto, list[onnx.OperatorSetIdProto]]]:
    """Every node container with the opsets it sees (``node_lists`` without the function flag)."""
    for entry in node_lists(model):
        yield entry.container, entry.opsets


class NameGenerator:
    """Fresh names that collide with nothing in the model (values, nodes, functions)."""

    def __init__(self, model: ModelProto | None = None) -> None:
        self._used: set[str] = set()
        self._next: dict[str, int] = {}
        for entry in node_lists(model) if model is not None else ():
            self.reserve(entry.container)

    def reserve(self, container: GraphProto | FunctionProto) -> None:
        """Every name one container uses (its nodes, values and, for graphs, initializers) is taken."""
        used = self._used
        for node in container.node:
            used.add(node.name)
            used.update(node.input)
            used.update(node.output)
        self.reserve_values(container)

    def take(self, names: set[str]) -> None:
        """``names`` are taken (a caller that walks the nodes itself gives their names so)."""
        self._used |= names
        self._used.discard("")

    def reserve_values(self, container: GraphProto | FunctionProto) -> None:
        """The names of a container's values (inputs, outputs, value infos, initializers) are taken; not its nodes'."""
        used = self._used
        if isinstance(container, GraphProto):
            used.update(v.name for v in container.input)
            used.update(v.name for v in container.output)
            used.update(v.name for v in container.value_info)
            used.update(t.name for t in container.initializer)
            used.update(t.values.name for t in container.sparse_initializer)
        else:
            used.update(container.input)
            used.update(container.output)
        used.discard("")

    def __call__(self, hint: str) -> str:
        """A fresh name: ``hint``, else ``hint_1``, ``hint_2``, ... (counting on from the last one given)."""
        name = hint
        k = self._next.get(hint, 1)
        while name in self._used:
            name = f"{hint}_{k}"
            k += 1
        self._next[hint] = k
        self._used.add(name)
        return name


def opset_version(opsets: list[onnx.OperatorSetIdProto], domain: str) -> int | None:
    """The version a model or function imports for ``domain`` (``ai.onnx`` is the default domain)."""
    wanted = "" if domain == "ai.onnx" else domain
    for opset in opsets:
        if (opset.domain or "") == wanted or (wanted == "" and opset.domain == "ai.onnx"):
            return opset.version
    return None
