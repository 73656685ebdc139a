"""OpenVINO Broadcast-1/-3 wrapped as an independent oracle for the onnx-bcast tests."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
import openvino as ov
from openvino.utils.node_factory import NodeFactory

#: Attribute that carries the pdpd start axis, per Broadcast version. Without it, the IR reader and the
#: NodeFactory (and so ``openvino.opset3.broadcast(..., broadcast_spec="pdpd")``) use axis 0, not -1.
PDPD_AXIS_ATTRIBUTE = {1: "mode.auto_broadcast_axis", 3: "mode.mode.axis"}

#: OpenVINO mode names per Broadcast version (Broadcast-1 has no bidirectional mode).
OV_MODES = {1: ("numpy", "explicit", "pdpd"), 3: ("numpy", "explicit", "bidirectional", "pdpd")}

#: Integer types accepted for target_shape / axes_mapping. 8-bit types make the CPU plugin over-read a buffer.
SHAPE_DTYPES = (np.int32, np.int64)


@cache
def _factory(opset: int) -> NodeFactory:
    return NodeFactory(f"opset{opset}")


@cache
def _core() -> ov.Core:
    return ov.Core()


def _constant(values: Sequence[int], dtype: type[np.integer]) -> ov.Node:
    return ov.op.Constant(np.asarray(values, dtype=dtype).reshape(-1))


def _broadcast_node(
    data: ov.Node,
    target_shape: Sequence[int],
    axes_mapping: Sequence[int] | None,
    *,
    opset: int,
    mode: str,
    axis: int,
    shape_dtype: type[np.integer],
    axes_dtype: type[np.integer],
) -> ov.Node:
    """Build Broadcast-``opset`` with constant shape inputs; validation (shape inference) runs here."""
    if mode not in OV_MODES[opset]:
        raise ValueError(f"Broadcast-{opset} has no mode {mode!r}")
    if any(v < 0 for v in target_shape):
        raise ValueError("negative target dims: onnx-bcast rejects them (docs/ops.md; -1 is dynamic in OpenVINO)")
    attributes: dict[str, str | int] = {"mode": mode}
    inputs = [data, _constant(target_shape, shape_dtype)]
    if mode == "explicit":
        if axes_mapping is None:
            raise ValueError("explicit mode needs axes_mapping")
        if len(set(axes_mapping)) != len(axes_mapping):
            raise ValueError("duplicate explicit axes: onnx-bcast rejects them (docs/ops.md; OpenVINO gives garbage)")
        inputs.append(_constant(axes_mapping, axes_dtype))
    elif axes_mapping is not None:
        raise ValueError("axes_mapping is only given in explicit mode")
    if mode == "pdpd":
        attributes[PDPD_AXIS_ATTRIBUTE[opset]] = axis
        if opset == 1:
            # Through the NodeFactory, a 2-input Broadcast-1 in pdpd mode fails with "index '2' out of range";
            # its third input is ignored in every mode but explicit.
            inputs.append(_constant([0], axes_dtype))
    node = _factory(opset).create("Broadcast", inputs, attributes)
    if mode == "pdpd" and node.get_attributes()[PDPD_AXIS_ATTRIBUTE[opset]] != axis:
        raise AssertionError("OpenVINO did not take the pdpd axis attribute")
    return node


def ov_broadcast_shape(
    data_shape: Sequence[int],
    target_shape: Sequence[int],
    axes_mapping: Sequence[int] | None = None,
    *,
    opset: int = 3,
    mode: str = "numpy",
    axis: int = -1,
    shape_dtype: type[np.integer] = np.int64,
    axes_dtype: type[np.integer] = np.int64,
) -> tuple[int, ...] | None:
    """Output shape from OpenVINO's shape inference, or None when OpenVINO rejects the broadcast."""
    data = ov.op.Parameter(ov.Type.f32, ov.PartialShape(list(data_shape)))
    try:
        node = _broadcast_node(
            data,
            target_shape,
            axes_mapping,
            opset=opset,
            mode=mode,
            axis=axis,
            shape_dtype=shape_dtype,
            axes_dtype=axes_dtype,
        )
    except RuntimeError:
        return None
    return static_output_shape(node)


def static_output_shape(node: ov.Node) -> tuple[int, ...]:
    """The output shape OpenVINO's shape inference gave ``node`` (it must be static)."""
    shape = node.get_output_partial_shape(0)
    if not shape.is_static:
        raise AssertionError(f"OpenVINO inferred a dynamic shape {shape}")
    return tuple(int(d) for d in shape.to_shape())


def ov_broadcast(
    data: np.ndarray,
    target_shape: Sequence[int],
    axes_mapping: Sequence[int] | None = None,
    *,
    opset: int = 3,
    mode: str = "numpy",
    axis: int = -1,
    shape_dtype: type[np.integer] = np.int64,
    axes_dtype: type[np.integer] = np.int64,
) -> np.ndarray | None:
    """Broadcast ``data`` with OpenVINO's CPU plugin, or None when OpenVINO rejects the broadcast.

    ``data`` is a model Parameter (only the shape inputs are constants), so the CPU kernel runs instead of
    constant folding. Cases on which OpenVINO's runtimes crash are refused before anything is executed.
    """
    if data.size == 0:
        raise ValueError("zero-size data crashes OpenVINO's runtimes; compare shapes only")
    param = ov.op.Parameter(ov.Type(data.dtype), ov.PartialShape(list(data.shape)))
    try:
        node = _broadcast_node(
            param,
            target_shape,
            axes_mapping,
            opset=opset,
            mode=mode,
            axis=axis,
            shape_dtype=shape_dtype,
            axes_dtype=axes_dtype,
        )
    except RuntimeError:
        return None
    out_shape = tuple(int(d) for d in node.get_output_partial_shape(0).to_shape())
    if len(out_shape) == 0 or 0 in out_shape:
        raise ValueError(f"output shape {out_shape} would crash OpenVINO's runtimes; compare shapes only")
    compiled = _core().compile_model(ov.Model([node], [param]), "CPU")
    result = np.array(compiled({0: data})[0], copy=True)
    if result.shape != out_shape:
        raise AssertionError(f"OpenVINO CPU shape {result.shape} differs from its shape inference {out_shape}")
    return result
