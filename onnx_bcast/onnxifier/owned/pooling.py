"""AvgPool-1/14/16 as ONNX's AveragePool: ``exclude-pad`` as ``count_include_pad``, ceil rounding, auto_pad."""

from __future__ import annotations

from onnx import NodeProto

from onnx_bcast.onnxifier.owned.node import Builder, IrNode

_AUTO_PAD = {"explicit": "NOTSET", "notset": "NOTSET", "valid": "VALID", "same_upper": "SAME_UPPER",
             "same_lower": "SAME_LOWER"}


def avg_pool(node: IrNode) -> list[NodeProto]:
    """Kernel, strides, pads (begin then end); ``rounding_type`` ceil and ceil_torch as ``ceil_mode`` (ONNX Runtime,
    like PyTorch, lets no window start in the end padding)."""
    kernel, strides = node.ints("kernel"), node.ints("strides")
    begin, end = node.ints("pads_begin"), node.ints("pads_end")
    auto_pad = _AUTO_PAD.get(node.attr("auto_pad", "explicit").lower())
    rounding = node.attr("rounding_type", "floor").lower()
    if auto_pad is None or rounding not in ("floor", "ceil", "ceil_torch") or not kernel:
        raise node.refuse(f"auto_pad {node.attr('auto_pad')!r} / rounding_type {rounding!r} are not expressed")
    if rounding == "ceil" and (any(begin) or any(end)) and auto_pad == "NOTSET":
        raise node.refuse("ceil rounding with padding: OpenVINO's last window may start in the padding, ONNX's "
                          "may not (the output shapes differ)")
    attrs: dict[str, object] = {"kernel_shape": kernel, "strides": strides or [1] * len(kernel),
                                "count_include_pad": int(not node.flag("exclude-pad")),
                                "ceil_mode": int(rounding != "floor"), "auto_pad": auto_pad}
    if auto_pad == "NOTSET":
        attrs["pads"] = (begin or [0] * len(kernel)) + (end or [0] * len(kernel))
    return Builder(node).finish("AveragePool", node.inputs[:1], **attrs)


TRANSLATIONS = {"AvgPool": avg_pool}
