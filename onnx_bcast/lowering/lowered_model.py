"""What the lowering pass writes into its working copy: the replacements in place of our nodes, then the model
finished (unused initializers dropped, opset imports fitted to the nodes, an IR version runtimes load)."""

from __future__ import annotations

from onnx import FunctionProto, GraphProto, ModelProto, NodeProto, helper

from onnx_bcast.lowering.fast import proto_bytes
from onnx_bcast.model.walk import node_lists, opset_version
from onnx_bcast.onnx_defs import schemas

DOMAIN = schemas.DOMAIN
SAFE_IR_VERSION = 10  # every supported onnxruntime (>= 1.18) loads it: no need to probe the installed one


def replace_nodes(container: GraphProto | FunctionProto, replacements: dict[int, list[NodeProto | bytes]]) -> None:
    """Each replaced node's place taken by its replacements: NodeProtos, or a replay's serialized nodes (graphs)."""
    nodes, start = container.node, 0
    if all(len(nodes_in) == 1 for nodes_in in replacements.values()):  # one for one: each in its place
        for index, (node,) in replacements.items():
            if type(node) is bytes:
                nodes[index].ParseFromString(node)
            else:
                nodes[index].CopyFrom(node)
        return
    new_nodes: list[NodeProto | bytes] = []
    for index in sorted(replacements):
        new_nodes.extend(nodes[start:index])
        new_nodes.extend(replacements[index])
        start = index + 1
    new_nodes.extend(nodes[start:])
    if isinstance(container, GraphProto) and any(type(node) is bytes for node in new_nodes):
        field, tag = proto_bytes.field, proto_bytes.GRAPH_NODE
        serialized = b"".join([field(tag, node if type(node) is bytes else node.SerializeToString())
                               for node in new_nodes])
        del container.node[:]
        container.MergeFromString(serialized)  # the nodes are its only field: they are appended, in order
        return
    del container.node[:]
    container.node.extend(new_nodes)


def finish_model(model: ModelProto, freed: set[str], domains: set[str], model_opset: int,
                  used: set[str] | None = None) -> None:
    """Unused initializers dropped, opset imports fitted to what the nodes now use, IR version loadable.

    ``used``: every name a node reads, where the caller knows them (a model without subgraphs), else walked here.
    """
    if used is None:
        lists = list(node_lists(model))
        used = {name for entry in lists for node in entry.container.node for name in node.input}
        graphs = [entry.container for entry in lists if isinstance(entry.container, GraphProto)]
    else:
        graphs = [model.graph]
    for graph in graphs:
        unused = freed.difference(used, (v.name for v in graph.input), (v.name for v in graph.output))
        if not unused:
            continue
        drop = [i for i, t in enumerate(graph.initializer) if t.name in unused]
        if len(drop) <= 64:  # a few: deleted where they are (rebuilding the list copies every tensor)
            for i in reversed(drop):
                del graph.initializer[i]
        else:
            dropped = set(drop)
            keep = [t for i, t in enumerate(graph.initializer) if i not in dropped]
            del graph.initializer[:]
            graph.initializer.extend(keep)
    for opsets in [model.opset_import, *(f.opset_import for f in model.functions)]:
        keep_ours = [o for o in opsets if o.domain != DOMAIN]
        del opsets[:]
        opsets.extend(keep_ours)
        if opset_version(list(opsets), "") is None:
            opsets.append(helper.make_opsetid("", model_opset))
        for domain in sorted(domains):
            if opset_version(list(opsets), domain) is None:
                opsets.append(helper.make_opsetid(domain, schemas.VERSION))
    if model.ir_version == 0 or model.ir_version > SAFE_IR_VERSION:
        from onnx_bcast.model.runtime_limits import max_ir_version  # probes onnxruntime: only when it can matter

        model.ir_version = min(model.ir_version or max_ir_version(), max_ir_version())
