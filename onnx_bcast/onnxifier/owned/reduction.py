"""ReduceSum/Mean/Max/Min/Prod/L1/L2 and ReduceLogicalAnd/Or as ONNX (opset 18: the axes an input, so axes computed
at run time work; an empty axes list reduces nothing, as in OpenVINO)."""

from __future__ import annotations

from onnx import NodeProto, TensorProto

from onnx_bcast.onnxifier.owned.node import Builder, IrNode

_SAME = {"ReduceSum": "ReduceSum", "ReduceMean": "ReduceMean", "ReduceMax": "ReduceMax", "ReduceMin": "ReduceMin",
         "ReduceProd": "ReduceProd", "ReduceL1": "ReduceL1", "ReduceL2": "ReduceL2"}
_LOGICAL = {"ReduceLogicalAnd": "ReduceMin", "ReduceLogicalOr": "ReduceMax"}


def reduce(node: IrNode) -> list[NodeProto]:
    """``keep_dims`` as ``keepdims``; int32 axes cast to int64; the logical reductions as Min/Max over int32."""
    b = Builder(node)
    data, axes = node.inputs[0], node.inputs[1]
    if node.elem(axes) != TensorProto.INT64:
        axes = b.one("Cast", [axes], "axes_int64", to=TensorProto.INT64)
    if node.shape(node.inputs[1]) != [node.shape(node.inputs[1]) and node.shape(node.inputs[1])[0]]:  # not 1-D
        axes = b.one("Reshape", [axes, b.i64([-1], "flat")], "axes_1d")
    attrs = {"keepdims": int(node.flag("keep_dims")), "noop_with_empty_axes": 1}
    if node.op_type in _LOGICAL:
        wide = b.one("Cast", [data], "as_int32", to=TensorProto.INT32)
        reduced = b.one(_LOGICAL[node.op_type], [wide, axes], "reduced", **attrs)
        return b.finish("Cast", [reduced], to=TensorProto.BOOL)
    return b.finish(_SAME[node.op_type], [data, axes], **attrs)


TRANSLATIONS = dict.fromkeys((*_SAME, *_LOGICAL), reduce)
