"""Op specs of the backprop family: BroadcastBackprop, BroadcastV0Backprop and Unbroadcast (kernels in backprop)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_bcast.errors import BroadcastError
from onnx_bcast.ops.backprop import (
    BROADCAST_BACKPROP,
    UNBROADCAST,
    V0_BACKPROP,
    backprop_plan,
    broadcast_backprop,
    broadcast_v0_backprop,
    unbroadcast,
    unbroadcast_plan,
    v0_plan,
)
from onnx_bcast.ops.broadcast_modes import MODE_BY_NAME
from onnx_bcast.ops.broadcast_shape import canonical_mode
from onnx_bcast.ops.common import INDEX_TYPES, Attr, Input, OpSpec, Shape
from onnx_bcast.ops.elementwise import elementwise_shape

# the types a gradient can have: every real numeric tensor type whose sum the kernel and the standard form agree on
# (no bool, string or complex; float8 and 4-bit integers are summed in float32 / int32, as 16-bit floats are)
NUMERIC_TYPES: tuple[str, ...] = tuple(
    f"tensor({t})"
    for t in ("float", "double", "float16", "bfloat16",
              "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "int4", "uint4")
)
_ROUNDING = "float16/bfloat16 are summed in float32 and rounded once; integers are summed in their type."


def _present(values: list[Any], i: int) -> Any:
    return values[i] if len(values) > i else None


def _uses_axes_mapping(mode: str) -> bool:
    try:
        return MODE_BY_NAME[canonical_mode(mode, "BroadcastBackprop")].uses_axes_mapping
    except BroadcastError:
        return False  # broadcast_backprop names the unknown mode


def _backprop_kernel(inputs: list[np.ndarray | None], attrs: dict[str, Any], max_output_bytes: int | None = None
                     ) -> np.ndarray:
    axes = _present(inputs, 2)
    if axes is not None and np.size(axes) == 0 and not _uses_axes_mapping(attrs["mode"]):
        axes = None  # the ORT form carries an absent axes_mapping as an empty one
    return broadcast_backprop(inputs[0], inputs[1], axes, mode=attrs["mode"], axis=attrs["axis"])


def _backprop_static(shapes: list[Shape | None], values: list[np.ndarray | None], attrs: dict[str, Any]
                     ) -> Shape | None:
    """``data_shape``'s value, validated against ``delta``'s shape (None unless both are known)."""
    delta_shape, data_shape, axes = _present(shapes, 0), _present(values, 1), _present(values, 2)
    if delta_shape is None or data_shape is None or (len(shapes) > 2 and axes is None):
        return None
    return backprop_plan(data_shape, delta_shape, axes, mode=attrs["mode"], axis=attrs["axis"])[0]


def _v0_kernel(inputs: list[np.ndarray | None], attrs: dict[str, Any], max_output_bytes: int | None = None
               ) -> np.ndarray:
    # ORT form: the list attribute travels as input 1; the attribute wins when the input is absent
    axes = _present(inputs, 1)
    return broadcast_v0_backprop(inputs[0], attrs["broadcast_axes"] if axes is None else axes)


def _v0_static(shapes: list[Shape | None], values: list[np.ndarray | None], attrs: dict[str, Any]) -> Shape | None:
    if not shapes or shapes[0] is None:
        return None
    return tuple(int(d) for d in v0_plan(shapes[0], attrs["broadcast_axes"])[1])


def _unbroadcast_kernel(inputs: list[np.ndarray | None], attrs: dict[str, Any], max_output_bytes: int | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    return unbroadcast(inputs[0], inputs[1], inputs[2], auto_broadcast=attrs["auto_broadcast"], axis=attrs["axis"])


def _values(values: list[np.ndarray | None], i: int) -> Shape | None:
    value = _present(values, i)
    return None if value is None else tuple(int(x) for x in np.asarray(value).reshape(-1))


def _backprop_shapes(shapes: list[Shape | None], values: list[np.ndarray | None], attrs: dict[str, Any]
                     ) -> tuple[Shape | None]:
    """For shape inference: ``data_shape``'s value, validated where ``delta``'s shape is known too."""
    return (_backprop_static(shapes, values, attrs) or _values(values, 1),)


def _unbroadcast_shapes(shapes: list[Shape | None], values: list[np.ndarray | None], attrs: dict[str, Any]
                        ) -> tuple[Shape | None, Shape | None]:
    """For shape inference: A's and B's shapes (the shape inputs' values), validated with ``delta``'s known dims."""
    delta_shape, a, b = _present(shapes, 0), _values(values, 1), _values(values, 2)
    if a is None or b is None:
        return a, b
    rule, axis = attrs["auto_broadcast"], attrs["axis"]
    if delta_shape is None:  # A and B are still checked against each other
        delta_shape = (None,) * len(elementwise_shape(a, b, auto_broadcast=rule, axis=axis, op=UNBROADCAST))
    planned = unbroadcast_plan(delta_shape, a, b, auto_broadcast=rule, axis=axis)
    return planned[0], planned[1]


def _unbroadcast_static(shapes: list[Shape | None], values: list[np.ndarray | None], attrs: dict[str, Any]
                        ) -> Shape | None:
    """A's shape when every input is known and valid (the proof that the node is valid), else None."""
    if _present(shapes, 0) is None:
        return None
    return _unbroadcast_shapes(shapes, values, attrs)[0] if _values(values, 2) is not None else None


BROADCAST_BACKPROP_SPEC = OpSpec(
    name=BROADCAST_BACKPROP,
    doc="The gradient of Broadcast/Expand: delta summed over every output position each data element was copied "
        f"to; output shape data_shape. {_ROUNDING}",
    inputs=(
        Input("delta", "T", doc="the gradient of the forward output (the forward output's shape)"),
        Input("data_shape", "T_SHAPE", doc="1-D: the forward data's shape"),
        Input("axes_mapping", "T_SHAPE", optional=True,
              doc="explicit mode: the forward axes_mapping (empty or absent otherwise)"),
    ),
    attrs=(
        Attr("mode", "string", "numpy", "the forward mode: numpy, explicit (none), bidirectional or pdpd"),
        Attr("axis", "int", -1, "pdpd: the forward axis"),
    ),
    type_constraints=(("T", NUMERIC_TYPES), ("T_SHAPE", INDEX_TYPES)),
    output_type_param="T",
    kernel=_backprop_kernel,
    static_shape=_backprop_static,
    mode_of=lambda attrs: str(attrs.get("mode", "numpy")),
    family="backprop",
    output_shapes=_backprop_shapes,
)

BROADCAST_V0_BACKPROP_SPEC = OpSpec(
    name=V0_BACKPROP,
    doc=f"nGraph's backprop of the v0 Broadcast: Sum(delta, broadcast_axes). {_ROUNDING}",
    inputs=(
        Input("delta", "T", doc="the gradient of the forward output"),
        Input("broadcast_axes_input", "T_SHAPE", optional=True,
              doc="ONNX Runtime form: the 'broadcast_axes' attribute as a tensor"),
    ),
    attrs=(Attr("broadcast_axes", "ints", None, "the forward's new axes: summed"),),
    type_constraints=(("T", NUMERIC_TYPES), ("T_SHAPE", INDEX_TYPES)),
    output_type_param="T",
    kernel=_v0_kernel,
    static_shape=_v0_static,
    family="backprop",
)

UNBROADCAST_SPEC = OpSpec(
    name=UNBROADCAST,
    doc="delta (an elementwise op's output) summed down to A's and to B's shape under the elementwise rule: the "
        f"gradient of Add, the broadcast part of the others'. {_ROUNDING}",
    inputs=(
        Input("delta", "T", doc="the gradient of the elementwise op's output"),
        Input("a_shape", "T_SHAPE", doc="1-D: A's shape"),
        Input("b_shape", "T_SHAPE", doc="1-D: B's shape"),
    ),
    attrs=(
        Attr("auto_broadcast", "string", "numpy", "the forward rule: none (explicit), numpy or pdpd"),
        Attr("axis", "int", -1, "pdpd: the forward axis"),
    ),
    type_constraints=(("T", NUMERIC_TYPES), ("T_SHAPE", INDEX_TYPES)),
    output_type_param="T",
    kernel=_unbroadcast_kernel,
    static_shape=_unbroadcast_static,
    mode_of=lambda attrs: str(attrs.get("auto_broadcast", "numpy")),
    mode_attr="auto_broadcast",
    family="backprop",
    outputs=("a_grad", "b_grad"),
    output_shapes=_unbroadcast_shapes,
)

SPECS = (BROADCAST_BACKPROP_SPEC, BROADCAST_V0_BACKPROP_SPEC, UNBROADCAST_SPEC)
