"""MVN-1 and MVN-6 as ONNX: mean and variance over exactly the IR's axes, eps inside or outside the square root."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto, helper

from onnx_bcast.onnxifier.owned.node import Builder, IrNode


def _axes(node: IrNode) -> list[int]:
    rank = node.rank(node.inputs[0])
    if node.version == "opset1" or len(node.inputs) == 1:  # MVN-1: attributes; across_channels means from axis 1
        if node.flag("across_channels"):
            axes = list(range(1, rank))
        else:
            axes = node.ints("reduction_axes") or list(range(2, rank))
    else:
        axes = [int(a) for a in np.asarray(node.const_or_refuse(1, "axes")).ravel()]
    normal = sorted({a + rank if a < 0 else a for a in axes})
    if any(not 0 <= a < rank for a in normal) or len(normal) != len(axes):
        raise node.refuse(f"axes {axes} do not name distinct axes of a rank-{rank} input")
    return normal


def mvn(node: IrNode) -> list[NodeProto]:
    """``(x - mean) / sqrt(var + eps)`` (eps_mode inside_sqrt) or ``/ (sqrt(var) + eps)`` (outside_sqrt, and MVN-1,
    as OpenVINO's reference computes it); ``x - mean`` without normalize_variance. Means over the IR's axes."""
    b = Builder(node)
    x = node.inputs[0]
    axes = b.i64(_axes(node), "axes")
    mean = b.one("ReduceMean", [x, axes], "mean", keepdims=1)
    if not node.flag("normalize_variance"):
        return b.finish("Sub", [x, mean])
    centred = b.one("Sub", [x, mean], "centred")
    variance = b.one("ReduceMean", [b.one("Mul", [centred, centred], "square"), axes], "variance", keepdims=1)
    dtype = helper.tensor_dtype_to_np_dtype(node.elem(x) or 1)
    eps = b.const(np.array(float(node.attr("eps", "1e-9")), dtype), "eps")
    inside = node.version != "opset1" and node.attr("eps_mode", "inside_sqrt").lower() == "inside_sqrt"
    if inside:
        deviation = b.one("Sqrt", [b.one("Add", [variance, eps], "variance_eps")], "deviation")
    else:
        deviation = b.one("Add", [b.one("Sqrt", [variance], "root"), eps], "deviation")
    return b.finish("Div", [centred, deviation])


TRANSLATIONS = {"MVN": mvn}
