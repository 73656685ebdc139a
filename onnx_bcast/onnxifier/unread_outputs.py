"""Optional outputs that nothing reads left out (an IR's MaxPool-8 always has its indices; ONNX's may drop them)."""

from __future__ import annotations

import onnx
from onnx import ModelProto

from onnx_bcast.model.walk import all_graphs, opset_version


def drop_unread_optional_outputs(model: ModelProto) -> int:
    """Each default-domain node's optional outputs that no node (of any graph) and no graph output reads are left
    out: trailing ones removed, others named ``""``; returns how many.

    ONNX Runtime computes an output that is named even when nothing reads it, and its layout optimizer (NCHWc)
    takes no ``MaxPool`` with an ``Indices`` output: the SPP block of a real detector ran 1.4x slower so."""
    graphs = list(all_graphs(model))
    read = {name for g in graphs for node in g.node for name in node.input}
    read |= {value.name for g in graphs for value in g.output}
    opset = opset_version(list(model.opset_import), "") or 1
    dropped = 0
    for graph in graphs:
        for node in graph.node:
            if node.domain not in ("", "ai.onnx") or len(node.output) < 2 or all(o in read for o in node.output):
                continue
            try:
                schema = onnx.defs.get_schema(node.op_type, opset, "")
            except onnx.defs.SchemaError:
                continue
            optional = onnx.defs.OpSchema.FormalParameterOption.Optional
            outputs = list(node.output)
            for i in range(1, len(outputs)):
                if (i < len(schema.outputs) and schema.outputs[i].option == optional and outputs[i]
                        and outputs[i] not in read):
                    outputs[i] = ""
                    dropped += 1
            while len(outputs) > 1 and outputs[-1] == "":
                outputs.pop()
            gone = set(node.output) - set(outputs)
            del node.output[:]
            node.output.extend(outputs)
            if gone:
                kept = [v for v in graph.value_info if v.name not in gone]
                del graph.value_info[:]
                graph.value_info.extend(kept)
    return dropped
