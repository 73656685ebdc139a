"""A guarded kernel whose output is a graph output writes it there itself; its status check reads it beside.

``GuardedKernel`` writes ``Reshape(raw, status) -> y``. ONNX Runtime aliases that ``Reshape`` inside a graph, but
where ``y`` is a graph output it copies the whole tensor once more (64 MiB: about one more write of the output).
Where nothing in the graph reads ``y`` (no node, no subgraph), the kernel writes ``y`` and the same ``Reshape``
reads it into a value nothing reads: ONNX Runtime runs every node (``tests/test_graph_output_kernels.py`` fails if
it ever drops this one), so a failed kernel's status still fails the run, and no node sees its empty stand-in.
"""

from __future__ import annotations

from collections import Counter

from onnx import ModelProto

from onnx_bcast.model.walk import subgraphs
from onnx_bcast.onnx_defs.schemas import GUARDED_DOMAIN


def write_outputs_directly(model: ModelProto) -> int:
    """Rewires, in place, every main-graph output made by ``Reshape(kernel raw, kernel status)`` that nothing
    reads; returns how many."""
    graph = model.graph
    outputs = {value.name for value in graph.output}
    if not outputs:
        return 0
    producers = {name: node for node in graph.node for name in node.output}
    readers = Counter(name for node in graph.node for name in node.input)
    nested = {name for sub in subgraphs(graph) for node in sub.node for name in node.input}
    rewired = 0
    for node in graph.node:
        if node.op_type != "Reshape" or node.domain not in ("", "ai.onnx") or len(node.input) != 2:
            continue
        (raw, status), y = node.input, node.output[0]
        kernel = producers.get(raw)
        if (kernel is None or kernel.domain != GUARDED_DOMAIN or producers.get(status) is not kernel
                or y not in outputs or readers[y] or y in nested
                or readers[raw] != 1 or raw in outputs or raw in nested):
            continue
        kernel.output[list(kernel.output).index(raw)] = y
        node.input[0], node.output[0] = y, raw  # the check's result keeps the raw name: nothing reads it
        rewired += 1
    return rewired
