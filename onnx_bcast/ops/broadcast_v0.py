"""nGraph v0 Broadcast and BroadcastLike: shape rules, numpy kernels and op specs."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_bcast.errors import BroadcastError, LazyText, fmt_shape
from onnx_bcast.ops.common import (
    ALL_TENSOR_TYPES,
    INDEX_TYPES,
    NUMPY_MAX_DIMS,
    Attr,
    Input,
    OpSpec,
    Shape,
    check_elements,
    check_numpy_rank,
    check_rank,
    int_vector,
    read_array,
    shape_of,
)
from onnx_bcast.ops.memory_guard import check_output_size

V0 = "BroadcastV0"
LIKE_V0 = "BroadcastLikeV0"


def broadcast_v0_shape(arg_shape: Any, shape: Any, broadcast_axes: Any, op: str = V0) -> Shape:
    """The output shape of nGraph's v0 Broadcast: ``shape`` without ``broadcast_axes`` must equal ``arg_shape``."""
    d = tuple(int(x) for x in arg_shape)
    out = int_vector(shape, "shape", op, "")
    axes = int_vector(broadcast_axes, "broadcast_axes", op, "")
    shapes = LazyText(lambda: f"arg {fmt_shape(d)}, shape {fmt_shape(out)}")
    check_rank(op, "", "arg", d, shapes)
    check_rank(op, "", "shape", out, shapes)
    for i, t in enumerate(out):
        if t < 0:
            raise BroadcastError(op, "", f"shape dim {i} is negative ({t}); shape {fmt_shape(out)}")
    for a in axes:
        if not 0 <= a < len(out):
            raise BroadcastError(op, "", f"broadcast axis {a} is outside the output rank {len(out)}; "
                                         f"arg {fmt_shape(d)}, shape {fmt_shape(out)}, broadcast_axes {sorted(axes)}")
    if len(set(axes)) != len(axes):
        raise BroadcastError(op, "", f"broadcast_axes {list(axes)} has duplicates")
    required = tuple(t for i, t in enumerate(out) if i not in set(axes))
    if required != d:
        raise BroadcastError(op, "", f"arg shape {fmt_shape(d)} must equal shape {fmt_shape(out)} without "
                                     f"broadcast_axes {sorted(axes)}, which is {fmt_shape(required)}")
    check_elements(op, "", out, shapes)
    return out


def broadcast_v0(arg: Any, shape: Any, broadcast_axes: Any, op: str = V0, *,
                 max_output_bytes: int | None = None) -> np.ndarray:
    """The numpy kernel of nGraph's v0 Broadcast: a read-only view (size-checked like ``broadcast``)."""
    arg = read_array(arg, op, "", "arg")
    out = broadcast_v0_shape(shape_of(arg), shape, broadcast_axes, op)
    check_output_size(op, "", out, arg.dtype, max_output_bytes)
    if len(out) > NUMPY_MAX_DIMS:  # numpy 1 stops at 32 dims; the rule allows 64
        check_numpy_rank(op, "", "output", out, f"arg {fmt_shape(arg.shape)}, shape {fmt_shape(out)}")
    new_axes = set(int_vector(broadcast_axes, "broadcast_axes", op, ""))
    aligned = tuple(1 if i in new_axes else t for i, t in enumerate(out))
    return np.broadcast_to(arg.reshape(aligned), out)


def like_axes(arg_shape: Shape, like_shape: Shape, initial_broadcast_axes: Any = ()) -> Shape:
    """The broadcast axes of BroadcastLike: the given ones, else deduced left-aligned as nGraph did."""
    given = int_vector(initial_broadcast_axes, "initial_broadcast_axes", LIKE_V0, "")
    if given:
        return given
    deduced = []
    for i, t in enumerate(like_shape):
        if i >= len(arg_shape) or (arg_shape[i] == 1 and t > 1):
            deduced.append(i)
    return tuple(deduced)


def broadcast_like_v0_shape(arg_shape: Any, like_shape: Any, initial_broadcast_axes: Any = ()) -> Shape:
    """The output shape of nGraph's v0 BroadcastLike (``like_arg``'s shape), validated."""
    d = tuple(int(x) for x in arg_shape)
    like = tuple(int(x) for x in like_shape)
    return broadcast_v0_shape(d, like, like_axes(d, like, initial_broadcast_axes), LIKE_V0)


def broadcast_like_v0(arg: Any, like_arg: Any, initial_broadcast_axes: Any = (), *,
                      max_output_bytes: int | None = None) -> np.ndarray:
    """The numpy kernel of nGraph's v0 BroadcastLike."""
    arg = read_array(arg, LIKE_V0, "", "arg")
    like = shape_of(read_array(like_arg, LIKE_V0, "", "like_arg"))
    return broadcast_v0(arg, like, like_axes(shape_of(arg), like, initial_broadcast_axes), LIKE_V0,
                        max_output_bytes=max_output_bytes)


def _v0_kernel(inputs: list[np.ndarray | None], attrs: dict[str, Any], max_output_bytes: int | None = None
               ) -> np.ndarray:
    # ORT form: list attributes travel as inputs 1 and 2; the attributes win when the inputs are absent
    shape = inputs[1] if len(inputs) > 1 and inputs[1] is not None else attrs["shape"]
    axes = inputs[2] if len(inputs) > 2 and inputs[2] is not None else attrs["broadcast_axes"]
    return broadcast_v0(inputs[0], shape, axes, max_output_bytes=max_output_bytes)


def list_value(values: list[np.ndarray | None], present: int, i: int, attr: Any) -> Any:
    """A list attribute as the kernels read it: input ``i`` of the ONNX Runtime form when present (None when its
    value is not known), else the attribute. ``present``: how many inputs the node has."""
    if present > i:
        return values[i] if len(values) > i else None
    return attr


def _v0_static(shapes: list[Shape | None], values: list[np.ndarray | None], attrs: dict[str, Any]) -> Shape | None:
    shape = list_value(values, len(shapes), 1, attrs["shape"])
    axes = list_value(values, len(shapes), 2, attrs["broadcast_axes"])
    if not shapes or shapes[0] is None or shape is None or axes is None:
        return None
    return broadcast_v0_shape(shapes[0], shape, axes)


def _v0_output_shapes(shapes: list[Shape | None], values: list[np.ndarray | None], attrs: dict[str, Any]
                      ) -> tuple[Shape | None]:
    """For shape inference: the output is ``shape`` whenever the node succeeds, so it is known where ``arg``'s
    shape is not (a stale declared output is then retracted, ``model.claims``); ``shape`` and ``broadcast_axes``
    are validated on their own (else unknown: the rule says why where it is checked)."""
    static = _v0_static(shapes, values, attrs)
    if static is not None:
        return (static,)
    shape = list_value(values, len(shapes), 1, attrs["shape"])
    axes = list_value(values, len(shapes), 2, attrs["broadcast_axes"])
    if shape is None or axes is None:
        return (None,)
    try:
        out = [int(t) for t in np.asarray(shape).reshape(-1)]
        new = [int(a) for a in np.asarray(axes).reshape(-1)]
        return (broadcast_v0_shape([t for i, t in enumerate(out) if i not in new], out, new),)
    except (BroadcastError, ValueError, TypeError):
        return (None,)


def _like_kernel(inputs: list[np.ndarray | None], attrs: dict[str, Any], max_output_bytes: int | None = None
                 ) -> np.ndarray:
    axes = inputs[2] if len(inputs) > 2 and inputs[2] is not None else attrs["initial_broadcast_axes"]
    return broadcast_like_v0(inputs[0], inputs[1], axes, max_output_bytes=max_output_bytes)


def _like_static(shapes: list[Shape | None], values: list[np.ndarray | None], attrs: dict[str, Any]) -> Shape | None:
    axes = list_value(values, len(shapes), 2, attrs["initial_broadcast_axes"])
    if len(shapes) < 2 or shapes[0] is None or shapes[1] is None or axes is None:
        return None
    return broadcast_like_v0_shape(shapes[0], shapes[1], axes)


BROADCAST_V0 = OpSpec(
    name=V0,
    doc="nGraph v0 Broadcast: output axes listed in broadcast_axes are new; the rest must equal arg's shape.",
    inputs=(
        Input("arg", "T", doc="the tensor to broadcast"),
        Input("shape_input", "T_SHAPE", optional=True, doc="ONNX Runtime form: the 'shape' attribute as a tensor"),
        Input("broadcast_axes_input", "T_SHAPE", optional=True,
              doc="ONNX Runtime form: the 'broadcast_axes' attribute as a tensor"),
    ),
    attrs=(
        Attr("shape", "ints", None, "the output shape"),
        Attr("broadcast_axes", "ints", None, "the output axes that are new (replicated)"),
    ),
    type_constraints=(("T", ALL_TENSOR_TYPES), ("T_SHAPE", INDEX_TYPES)),
    output_type_param="T",
    kernel=_v0_kernel,
    static_shape=_v0_static,
    output_shapes=_v0_output_shapes,
)

BROADCAST_LIKE_V0 = OpSpec(
    name=LIKE_V0,
    doc="nGraph v0 BroadcastLike: broadcast arg to like_arg's shape.",
    inputs=(
        Input("arg", "T", doc="the tensor to broadcast"),
        Input("like_arg", "T2", doc="only its shape is used", shape_only=True),
        Input("initial_broadcast_axes_input", "T_SHAPE", optional=True,
              doc="ONNX Runtime form: the 'initial_broadcast_axes' attribute as a tensor"),
    ),
    attrs=(Attr("initial_broadcast_axes", "ints", (), "the new axes; deduced left-aligned when empty"),),
    type_constraints=(("T", ALL_TENSOR_TYPES), ("T2", ALL_TENSOR_TYPES), ("T_SHAPE", INDEX_TYPES)),
    output_type_param="T",
    kernel=_like_kernel,
    static_shape=_like_static,
)

SPECS = (BROADCAST_V0, BROADCAST_LIKE_V0)
