"""TopK-1/3/11 and ScatterNDUpdate-3/15 as ONNX: sorting as asked, index type, the scatter's reduction."""

from __future__ import annotations

from onnx import NodeProto, TensorProto, helper

from onnx_bcast.onnxifier.owned.node import Builder, IrNode

_INDEX_TYPES = {"i32": TensorProto.INT32, "i64": TensorProto.INT64}
_REDUCTIONS = {"none": "none", "sum": "add", "prod": "mul", "max": "max", "min": "min"}


def top_k(node: IrNode) -> list[NodeProto]:
    """``mode`` max/min as ``largest``; ``sort`` value (sorted) or none (any order: sorted too); by index refused."""
    sort = node.attr("sort", "value").lower()
    index_type = _INDEX_TYPES.get(node.attr("index_element_type", "i32").lower())
    if sort not in ("value", "none") or index_type is None:
        raise node.refuse(f"sort {sort!r} / index_element_type {node.attr('index_element_type')!r} are not expressed")
    b = Builder(node)
    k = node.inputs[1]
    if node.elem(k) != TensorProto.INT64:
        k = b.one("Cast", [k], "k_int64", to=TensorProto.INT64)
    k = b.one("Reshape", [k, b.i64([1], "one")], "k")
    attrs = {"axis": int(node.attr("axis", "-1")), "largest": int(node.attr("mode", "max").lower() == "max"),
             "sorted": 1}
    if index_type == TensorProto.INT64:
        return b.finish("TopK", [node.inputs[0], k], **attrs)
    values, wide = node.outputs[0], f"{node.name}/indices_int64"
    b.nodes.append(helper.make_node("TopK", [node.inputs[0], k], [values, wide], name=f"{node.name}/topk", **attrs))
    return b.finish("Cast", [wide], node.outputs[1:2], to=index_type)


def scatter_nd_update(node: IrNode) -> list[NodeProto]:
    reduction = _REDUCTIONS.get(node.attr("reduction", "none").lower())
    if reduction is None:
        raise node.refuse(f"reduction {node.attr('reduction')!r} has no ONNX ScatterND form")
    b = Builder(node)
    indices = node.inputs[1]
    if node.elem(indices) != TensorProto.INT64:
        indices = b.one("Cast", [indices], "indices_int64", to=TensorProto.INT64)
    return b.finish("ScatterND", [node.inputs[0], indices, node.inputs[2]], reduction=reduction)


TRANSLATIONS = {"TopK": top_k, "ScatterNDUpdate": scatter_nd_update}
