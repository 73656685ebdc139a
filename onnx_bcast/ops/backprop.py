"""Backprop of every broadcast: the adjoint of Broadcast/Expand (every mode), nGraph's v0 Broadcast, and the
broadcast part of an elementwise op's gradient (``unbroadcast``): which axes are summed, and the kernels.

The adjoint of a broadcast sums the incoming gradient ``delta`` over every output position that copied one data
element: the new axes and the stretched size-1 axes. Which axes those are comes from the forward shape rules
(``broadcast_shape``/``aligned_shape``, ``broadcast_v0_shape``, ``elementwise_shape``/``pdpd_alignment``), with
``delta``'s shape as the forward output.

Result types: ``delta``'s. Integers are summed in their own type (wrapping as numpy does). float16, bfloat16 and
the other sub-32-bit floats are summed in float32 and rounded to the delta's type once, at the end. float32,
float64 and complex values are summed in their own type with numpy's pairwise summation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_bcast.errors import BroadcastError, fmt_shape
from onnx_bcast.ops.broadcast import aligned_shape, broadcast_shape, canonical_mode
from onnx_bcast.ops.broadcast_v0 import broadcast_v0_shape
from onnx_bcast.ops.common import Shape, int_vector, read_array, shape_of
from onnx_bcast.ops.elementwise import canonical_rule, elementwise_shape, pdpd_alignment

BROADCAST_BACKPROP = "BroadcastBackprop"
V0_BACKPROP = "BroadcastV0Backprop"
UNBROADCAST = "Unbroadcast"

Dims = tuple[int | None, ...]  # a shape whose dims may be unknown (the converter's view)


def _fmt_dims(dims: Dims) -> str:
    """A shape as the message template writes it, ``?`` for a dim known only at run time."""
    parts = ["?" if d is None else str(int(d)) for d in dims]
    return f"({parts[0]},)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"


# -- which axes are summed -----------------------------------------------------------------------------------------

def backprop_plan(data_shape: Any, delta_dims: Dims, axes_mapping: Any = None, *, mode: str = "numpy",
                  axis: int = -1, op: str = BROADCAST_BACKPROP) -> tuple[Shape, Shape, Shape, Shape]:
    """How ``delta`` (of ``delta_dims``; None marks a dim known only at run time) sums down to ``data_shape``.

    Validates that ``delta_dims`` can be the forward output for ``data_shape`` under the mode, by the forward
    shape rule with ``delta``'s shape as the target: for numpy and explicit the output is the target itself; for
    bidirectional and pdpd the output may be larger than the target, so ``delta``'s shape must be one that the
    forward rule gives back unchanged (a valid bidirectional/pdpd broadcast result of ``data_shape``).

    Returns ``(data_shape, aligned, summed, checked)``: ``aligned`` is the data's shape padded with 1s to
    ``delta``'s rank as the forward kernel aligns it; ``summed`` the axes of ``delta`` to sum (aligned size 1 and
    ``delta``'s dim not 1); ``checked`` the axes whose dim is unknown here and must equal ``aligned`` at run time.
    """
    mode = canonical_mode(mode, op)
    d = int_vector(data_shape, "data_shape", op, mode)
    for i, n in enumerate(d):
        if n < 0:
            raise BroadcastError(op, mode, f"data_shape dim {i} is negative ({n}); data_shape {fmt_shape(d)}")
    rank = len(delta_dims)
    fill = tuple(1 if x is None else int(x) for x in delta_dims)
    try:  # unknown dims are given the value a valid delta has there, so that only known dims are judged
        guess = aligned_shape(d, fill, axes_mapping, mode, axis)
    except (IndexError, TypeError, ValueError):
        guess = ()
    if len(guess) == rank and min(guess, default=0) >= 0:
        fill = tuple(g if x is None else int(x) for x, g in zip(delta_dims, guess, strict=True))
    where = f"(the forward target here is delta's shape {_fmt_dims(delta_dims)})"
    try:
        out = broadcast_shape(d, np.asarray(fill, dtype=np.int64), axes_mapping, mode=mode, axis=axis, op=op)
    except BroadcastError as err:
        raise BroadcastError(op, mode, f"{err.detail} {where}") from None
    if out != fill:
        raise BroadcastError(op, mode, f"delta {_fmt_dims(delta_dims)} is not a {mode} broadcast of data_shape "
                                       f"{fmt_shape(d)}: broadcasting data_shape to delta's shape gives "
                                       f"{fmt_shape(out)}")
    aligned = aligned_shape(d, out, axes_mapping, mode, axis)
    summed = tuple(i for i in range(rank) if aligned[i] == 1 and delta_dims[i] != 1)
    checked = tuple(i for i in range(rank) if delta_dims[i] is None and aligned[i] != 1)
    return d, aligned, summed, checked


def v0_plan(delta_dims: Dims, broadcast_axes: Any, op: str = V0_BACKPROP) -> tuple[tuple[int, ...], Dims]:
    """The summed axes of nGraph's backprop (``broadcast_axes``, validated against ``delta``'s rank as the forward
    rule validates them against its output's) and the gradient's dims."""
    axes = int_vector(broadcast_axes, "broadcast_axes", op, "")
    fill = [1 if x is None else int(x) for x in delta_dims]  # unknown dims: 1s, the axes are checked on the rank
    kept = [i for i in range(len(fill)) if i not in set(axes)]
    try:
        broadcast_v0_shape([fill[i] for i in kept], fill, axes, op)
    except BroadcastError as err:
        detail = err.detail.replace(f"arg {fmt_shape([fill[i] for i in kept])}",  # the 1s filled in are not dims
                                    f"arg {_fmt_dims(tuple(delta_dims[i] for i in kept))}")
        detail = detail.replace(f"shape {fmt_shape(fill)}", f"shape {_fmt_dims(tuple(delta_dims))}")
        raise BroadcastError(op, "", f"{detail} (the forward output here is delta's shape "
                                     f"{_fmt_dims(delta_dims)})") from None
    return tuple(sorted(axes)), tuple(delta_dims[i] for i in kept)


# -- summation ---------------------------------------------------------------------------------------------------

def accumulator(dtype: np.dtype, op: str, mode: str, mode_attr: str = "mode") -> np.dtype:
    """The type ``delta`` is summed in: its own, or float32 for floats narrower than 32 bits."""
    if dtype.kind in "iuc" or (dtype.kind == "f" and dtype.itemsize >= 4):
        return dtype
    if dtype.kind == "f" or (dtype.kind == "V" and dtype.name.startswith(("float", "bfloat"))):
        return np.dtype(np.float32)  # float16, and ml_dtypes' bfloat16 / float8 types
    raise BroadcastError(op, mode, f"delta must be a numeric tensor, got dtype {dtype}", mode_attr=mode_attr)


def _read_delta(delta: Any, op: str, mode: str, mode_attr: str = "mode") -> np.ndarray:
    arr = read_array(delta, op, mode, "delta", mode_attr=mode_attr)
    accumulator(arr.dtype, op, mode, mode_attr)  # refuses non-numeric types before any shape work
    return arr


def _sum_to(delta: np.ndarray, summed: tuple[int, ...], shape: Shape, op: str, mode: str,
            mode_attr: str = "mode") -> np.ndarray:
    """``delta`` summed over ``summed`` (dims kept), then shaped as ``shape``; a read-only view if nothing is summed."""
    if not summed:
        view = delta.reshape(shape)
        view.flags.writeable = False
        return view
    acc = accumulator(delta.dtype, op, mode, mode_attr)
    total = np.sum(delta, axis=summed, dtype=acc, keepdims=True)
    return np.asarray(total.astype(delta.dtype, copy=False)).reshape(shape)


# -- kernels ------------------------------------------------------------------------------------------------------

def broadcast_backprop(delta: Any, data_shape: Any, axes_mapping: Any = None, *, mode: str = "numpy",
                       axis: int = -1, op: str = BROADCAST_BACKPROP) -> np.ndarray:
    """The gradient of ``Broadcast``/``Expand`` in every mode: ``delta`` (the forward output's shape) summed over
    the output positions each data element was copied to; shape ``data_shape``, type ``delta``'s.

    float16/bfloat16 are summed in float32 and rounded once; integers are summed in their type (wrapping).
    A ``delta`` whose shape is not the forward output for ``data_shape`` under the mode is a BroadcastError.
    """
    canon = canonical_mode(mode, op)
    delta = _read_delta(delta, op, canon)
    d, _, summed, _ = backprop_plan(data_shape, shape_of(delta), axes_mapping, mode=canon, axis=axis, op=op)
    return _sum_to(delta, summed, d, op, canon)


def broadcast_v0_backprop(delta: Any, broadcast_axes: Any) -> np.ndarray:
    """nGraph's backprop of the v0 Broadcast: ``Sum(delta, broadcast_axes)`` (type ``delta``'s; float16/bfloat16
    summed in float32 and rounded once, integers in their type)."""
    delta = _read_delta(delta, V0_BACKPROP, "")
    axes, dims = v0_plan(shape_of(delta), broadcast_axes)
    kept = tuple(int(x) for x in dims)
    return _sum_to(delta, tuple(a for a in axes if delta.shape[a] != 1), kept, V0_BACKPROP, "")


def unbroadcast_plan(delta_dims: Dims, a_shape: Any, b_shape: Any, *, auto_broadcast: str = "numpy",
                     axis: int = -1) -> tuple[Shape, Shape, Shape, Shape, Shape]:
    """How ``delta`` (of ``delta_dims``; None marks a dim known only at run time) sums down to A's and B's shapes.

    Validates A and B under the rule and ``delta``'s known dims against their output shape. Returns
    ``(a, b, out, aligned_a, aligned_b)``: the shapes, the output shape, and A's and B's shapes padded with 1s to
    the output rank as the forward op aligns them.
    """
    rule = canonical_rule(auto_broadcast, UNBROADCAST)
    try:
        a = int_vector(a_shape, "a_shape", UNBROADCAST, rule)
        b = int_vector(b_shape, "b_shape", UNBROADCAST, rule)
    except BroadcastError as err:  # int_vector names the rule "mode"
        raise BroadcastError(UNBROADCAST, rule, err.detail, mode_attr="auto_broadcast") from None
    for what, shape in (("a_shape", a), ("b_shape", b)):
        if any(n < 0 for n in shape):
            raise BroadcastError(UNBROADCAST, rule, f"{what} {fmt_shape(shape)} has a negative dim",
                                 mode_attr="auto_broadcast")
    out = elementwise_shape(a, b, auto_broadcast=rule, axis=axis, op=UNBROADCAST)
    if len(out) != len(delta_dims) or any(x is not None and x != o for x, o in zip(delta_dims, out, strict=False)):
        raise BroadcastError(UNBROADCAST, rule, f"delta {_fmt_dims(delta_dims)} is not the output shape "
                                                f"{fmt_shape(out)} of A {fmt_shape(a)} and B {fmt_shape(b)}",
                             mode_attr="auto_broadcast")
    rank = len(out)
    aligned_a = (1,) * (rank - len(a)) + a
    aligned_b = pdpd_alignment(a, b, int(axis), UNBROADCAST) if rule == "pdpd" else (1,) * (rank - len(b)) + b
    return a, b, out, aligned_a, aligned_b


def unbroadcast(delta: Any, a_shape: Any, b_shape: Any, *, auto_broadcast: str = "numpy",
                axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """``delta`` (an elementwise op's output shape) summed down to A's shape and to B's shape under the elementwise
    rule (none/numpy/pdpd). For ``Add`` this is the gradient; for the other ops it is the broadcast part of it.
    Types and summation as ``broadcast_backprop``."""
    rule = canonical_rule(auto_broadcast, UNBROADCAST)
    delta = _read_delta(delta, UNBROADCAST, rule, "auto_broadcast")
    a, b, out, aligned_a, aligned_b = unbroadcast_plan(shape_of(delta), a_shape, b_shape, auto_broadcast=rule,
                                                       axis=axis)

    def down(aligned: Shape, shape: Shape) -> np.ndarray:
        summed = tuple(i for i in range(len(out)) if aligned[i] == 1 and out[i] != 1)
        return _sum_to(delta, summed, shape, UNBROADCAST, rule, "auto_broadcast")

    return down(aligned_a, a), down(aligned_b, b)
