"""Expand elision: an ``Expand`` is not emitted where every consumer broadcasts to the same shape anyway."""

from __future__ import annotations

from onnx import GraphProto, NodeProto

from onnx_bcast.lowering.static_facts import StaticFacts
from onnx_bcast.model.walk import subgraphs
from onnx_bcast.ops.elementwise import ELEMENTWISE_OPS

# standard ops that broadcast all their inputs multidirectionally (numpy style): the standard op of each elementwise
# op of ours (same name), and a few more
BROADCASTING = {*ELEMENTWISE_OPS, "Sum", "Mean", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}


class ExpandElision:
    """``Add(features[1,16,50,50], Expand(Unsqueeze(bias), ...))`` is written ``Add(features, Unsqueeze(bias))``.

    The same values, without materialising (or letting ORT constant-fold) the full-size bias. One per graph;
    the consumers of our nodes' outputs are indexed once, so the pass stays linear in the graph's size.
    """

    def __init__(self, graph: GraphProto, outputs: set[str], facts: StaticFacts,
                 inputs: list[tuple[str, ...]] | None = None, nested: bool = True) -> None:
        """``inputs``: each node's inputs, where the caller has read them already; ``nested=False``: the caller
        knows that the graph holds no subgraph."""
        self.graph = graph
        self.facts = facts
        self.consumers: dict[str, list[NodeProto]] = {}
        self._broadcasting: set[int] = set()  # id() of the consumers that are standard broadcasting ops
        if inputs is None:
            inputs = [node.input[:] for node in graph.node]
        disjoint = outputs.isdisjoint
        for index, names in enumerate(inputs):
            if disjoint(names):
                continue
            node = None
            for name in names:
                if name in outputs:
                    if node is None:
                        node = graph.node[index]
                        if node.op_type in BROADCASTING and node.domain in ("", "ai.onnx"):
                            self._broadcasting.add(id(node))
                    users = self.consumers.setdefault(name, [])
                    if not users or users[-1] is not node:
                        users.append(node)
        self._protected: set[str] | None = None if nested else {v.name for v in graph.output}
        self.dropped: set[str] = set()
        self.sources: set[str] = set()  # values that consumers read now instead of a dropped Expand's output

    @property
    def protected(self) -> set[str]:
        """Names that must keep their exact values: graph outputs, and values read by name inside subgraphs."""
        if self._protected is None:
            reads = {name for sub in subgraphs(self.graph) for node in sub.node for name in node.input}
            self._protected = {v.name for v in self.graph.output} | reads
        return self._protected

    def can_drop(self, output: str, out_shape: tuple[int, ...]) -> bool:
        """Whether the ``Expand`` that would produce ``output`` changes nothing its consumers compute."""
        users = self.consumers.get(output)
        if not users or output in self.protected:
            return False
        for user in users:
            if not self._keeps_shape(user, output, out_shape):
                return False
        return True

    def rewire(self, output: str, source: str) -> None:
        """The consumers of ``output`` read ``source`` instead (the Expand's input)."""
        for user in self.consumers[output]:
            for i, name in enumerate(user.input):
                if name == output:
                    user.input[i] = source
        self.dropped.add(output)
        self.sources.add(source)

    def finish(self) -> None:
        """Value infos of values that no longer exist (or no longer have the expanded shape) go."""
        if self.dropped:
            infos = [v for v in self.graph.value_info if v.name not in self.dropped]
            del self.graph.value_info[:]
            self.graph.value_info.extend(infos)

    def _keeps_shape(self, user: NodeProto, out: str, out_shape: tuple[int, ...]) -> bool:
        if id(user) not in self._broadcasting:  # (the consumers live as long as this: their ids are theirs)
            return False
        shape_of, others = self.facts.shapes.get, 0
        for name in user.input:
            if name == out:
                continue
            others += 1
            shape = shape_of(name)
            if shape is None or None in shape or not _broadcast_keeps(shape, out_shape):
                return False
        return others > 0


def _broadcast_keeps(shape: tuple[int, ...], other: tuple[int, ...]) -> bool:
    """Whether numpy's broadcast of ``shape`` with ``other`` is ``shape`` itself (False where they do not broadcast;
    ``np.broadcast_shapes(shape, other) == shape`` without its cost)."""
    if len(other) > len(shape):
        return False
    for a, b in zip(shape[len(shape) - len(other):], other, strict=True):
        if b != 1 and b != a:
            return False
    return True
