"""Broadcast/Expand (every mode), BroadcastV0 and BroadcastLikeV0 as OpenVINO Broadcast-3 nodes.

``Broadcast``/``Expand`` -> ``Broadcast-3`` with the same mode, except: pdpd with known ranks is ``Unsqueeze`` of the
data's leading axes + ``Broadcast-3`` bidirectional (the same rule once aligned; OpenVINO's pdpd kernel dies with
SIGFPE on a 0-size data dim meeting a target dim 1), and bidirectional of scalar data is numpy (the same output;
the CPU plugin rejects it at run time). pdpd of unknown rank keeps OpenVINO's pdpd, its axis as ``mode.mode.axis``
(without it OpenVINO takes axis 0, not -1). ``BroadcastV0``/``BroadcastLikeV0`` -> ``Broadcast-3`` explicit with the
kept axes as ``axes_mapping``. A statically known output with a 0-size dim, or equal to the input, is a reshape
instead (OpenVINO's CPU plugin crashes on several of those broadcasts when static).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from onnx_bcast.errors import BroadcastError
from onnx_bcast.openvino.checks import check_broadcast, check_like_v0, check_v0, deduced_like_axes
from onnx_bcast.openvino.graph import (
    Dims,
    Output,
    as_i64,
    as_shape,
    attr,
    create,
    dims,
    fmt,
    fold,
    i64,
    index_input,
    input_at,
    int_attr,
    ints,
    length,
    ops,
    optional_input,
)
from onnx_bcast.ops.broadcast import canonical_mode
from onnx_bcast.ops.broadcast_v0 import LIKE_V0, V0
from onnx_bcast.ops.common import int_vector, target_dims

DEFAULT_MODE = {"Broadcast": "numpy", "Expand": "bidirectional"}


def explicit_axes(ctx: Any, op: str, mode: str) -> tuple[Output | None, tuple[int, ...] | None]:
    """``axes_mapping`` and its values where known. Outside explicit mode an empty one counts as absent; a
    non-empty one is an error, and one of unknown length is dropped (OpenVINO then never reads it)."""
    axes = optional_input(ctx, 2)
    if axes is None:
        if mode == "explicit":
            raise BroadcastError(op, mode, "axes_mapping is required in explicit mode")
        return None, None
    axes = index_input(axes, "axes_mapping", op, mode)
    values = fold(axes)
    a = int_vector(values, "axes_mapping", op, mode) if values is not None else None
    if mode == "explicit":
        return axes, a
    if a:
        raise BroadcastError(op, mode, f"axes_mapping {list(a)} is only allowed in explicit mode")
    if a is None and length(axes):
        raise BroadcastError(op, mode, f"axes_mapping (length {length(axes)}, values fed at run time) is only "
                                       "allowed in explicit mode")
    return None, None


def strictly_increasing(axes: Output) -> Output:
    """Run-time ``axes_mapping`` as OpenVINO gets it: itself unless two neighbours are equal; then a decreasing ramp
    is added, which unsorts it, so that OpenVINO's own check (an axis out of order or past the target's rank) fails
    the run instead of its kernel computing garbage (it accepts repeated axes)."""
    count = length(axes)
    if count is not None and count < 2:
        return axes
    if count is None:
        raise NotImplementedError("Broadcast: a run-time axes_mapping needs a known length to be read into OpenVINO")
    axes = as_i64(axes)
    head = ops.slice(axes, i64([0]), i64([count - 1]), i64([1]))
    tail = ops.slice(axes, i64([1]), i64([count]), i64([1]))
    repeats = ops.reduce_max(ops.convert(ops.equal(head, tail), "i64"), i64([0]), True)  # 1 or 0
    return ops.add(axes, ops.multiply(repeats, i64(range(count - 1, -1, -1)))).output(0)


def broadcast(ctx: Any, op: str) -> list[Output]:
    """``Broadcast``/``Expand`` in every mode."""
    mode = canonical_mode(attr(ctx, "mode", DEFAULT_MODE[op]), op)
    axis = int_attr(ctx, "axis", -1, op, mode)
    data = input_at(ctx, 0)
    target = index_input(input_at(ctx, 1), "target_shape", op, mode)
    t_values = fold(target)
    t = target_dims(t_values, op, mode) if t_values is not None else None  # negative dims: an error
    t_rank = len(t) if t is not None else length(target)
    axes, a = explicit_axes(ctx, op, mode)
    d = dims(data)
    out_shape = check_broadcast(op, mode, axis, d, t, t_rank, a, axes is not None and a is None)
    if out_shape is not None and (0 in out_shape or out_shape == d):
        return [as_shape(data, d, out_shape)]
    ov_mode = mode
    if mode == "pdpd" and d is not None and t_rank is not None:
        # data aligned at its start axis, then bidirectional: the same rule, and no SIGFPE on a 0-size data dim
        # meeting a target dim 1 at run time (OpenVINO's pdpd kernel divides by it); the check proved the coverage
        start = t_rank - len(d) if axis == -1 else axis
        data = ops.unsqueeze(data, i64(range(start))).output(0) if start else data
        ov_mode = "bidirectional"
    elif mode == "bidirectional" and d == ():
        ov_mode = "numpy"  # the same for scalar data; the CPU plugin's bidirectional fails on it at run time
    inputs = [data, i64(t) if t is not None else target]
    if mode == "explicit":
        inputs.append(i64(a) if a is not None else strictly_increasing(axes))
    attributes: dict[str, Any] = {"mode": ov_mode}
    if ov_mode == "pdpd":
        attributes["mode.mode.axis"] = axis
    return create("Broadcast", inputs, attributes)


def _explicit_v0(data: Output, d: Dims, target: Output, out_shape: tuple[int, ...] | None,
                 new_axes: Sequence[int], rank: int) -> list[Output]:
    if out_shape is not None and (0 in out_shape or out_shape == d):
        return [as_shape(data, d, out_shape)]
    kept = [i for i in range(rank) if i not in set(new_axes)]
    return create("Broadcast", [data, target, i64(kept)], {"mode": "explicit"})


def broadcast_v0(ctx: Any, op: str) -> list[Output]:
    """nGraph's ``BroadcastV0``: explicit mode, the axes not in ``broadcast_axes`` as ``axes_mapping``."""
    arg = input_at(ctx, 0)
    shape = ints(ctx, 1, "shape", op)
    axes = ints(ctx, 2, "broadcast_axes", op)
    d = dims(arg)
    return _explicit_v0(arg, d, i64(shape), check_v0(op, d, shape, axes), axes, len(shape))


def broadcast_like_v0(ctx: Any, op: str) -> list[Output]:
    """nGraph's ``BroadcastLikeV0``: explicit mode to ``ShapeOf(like_arg)`` (like_arg stays an input)."""
    arg, like = input_at(ctx, 0), input_at(ctx, 1)
    d, like_dims = dims(arg), dims(like)
    axes = ints(ctx, 2, "initial_broadcast_axes", op, ())
    if not axes:
        axes = deduced_like_axes(d, like_dims)
        if axes is None:
            raise NotImplementedError(
                f"{op}: deducing the broadcast axes (no initial_broadcast_axes) reads arg's and like_arg's dims, "
                f"which OpenVINO does not know when reading the model: arg {fmt(d)}, like_arg {fmt(like_dims)}; "
                "give initial_broadcast_axes or static shapes")
    if like_dims is None:
        raise NotImplementedError(f"{op}: like_arg's rank must be known when reading the model into OpenVINO")
    out_shape = check_like_v0(op, d, like_dims, axes)
    target = ops.shape_of(like, "i64").output(0)
    return _explicit_v0(arg, d, target, out_shape, axes, len(like_dims))


CONVERTERS = {"Broadcast": broadcast, "Expand": broadcast, V0: broadcast_v0, LIKE_V0: broadcast_like_v0}
