"""Squeeze, Unsqueeze and Reshape as ONNX: axes and shapes as int64 vectors, Reshape's special_zero kept."""

from __future__ import annotations

from onnx import NodeProto, TensorProto

from onnx_bcast.onnxifier.owned.node import Builder, IrNode


def squeeze(node: IrNode) -> list[NodeProto]:
    """Squeeze/Unsqueeze with their axes as ONNX takes them: int64, one-dimensional (OpenVINO writes a scalar u64
    axis too); Squeeze without axes, or with an empty list, drops every size-1 dim in both."""
    b = Builder(node)
    shape = node.shape(node.inputs[1]) if len(node.inputs) > 1 else None
    if len(node.inputs) < 2 or shape == [0]:
        if node.op_type == "Unsqueeze":
            raise node.refuse("Unsqueeze without axes")
        return b.finish("Squeeze", node.inputs[:1])
    if node.flag("allow_axis_skip"):
        raise node.refuse("allow_axis_skip (a dynamic dim that may not be 1 is skipped) has no ONNX form")
    axes = node.inputs[1]
    if node.elem(axes) != TensorProto.INT64:
        axes = b.one("Cast", [axes], "axes_int64", to=TensorProto.INT64)
    if shape is None or len(shape) != 1:
        axes = b.one("Reshape", [axes, b.i64([-1], "flat")], "axes_1d")
    return b.finish(node.op_type, [node.inputs[0], axes])




def reshape(node: IrNode) -> list[NodeProto]:
    """Reshape-1: ``special_zero`` true is ONNX's default (a 0 copies the input's dim); false makes a 0 a dim of
    size 0, ONNX's ``allowzero=1`` (onnxifier dropped the attribute, so a literal 0 copied a dim instead)."""
    b = Builder(node)
    target = node.inputs[1]
    if node.elem(target) != TensorProto.INT64:
        target = b.one("Cast", [target], "shape_int64", to=TensorProto.INT64)
    value = node.const(node.inputs[1])
    literal_zero = not node.flag("special_zero") and (value is None or 0 in value.ravel().tolist())
    return b.finish("Reshape", [node.inputs[0], target], **({"allowzero": 1} if literal_zero else {}))


TRANSLATIONS = {"Squeeze": squeeze, "Unsqueeze": squeeze, "Reshape": reshape}
