"""The shape rule of Broadcast and Expand (OpenVINO Broadcast-1/-3) in every mode: validates, never allocates."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_bcast.errors import BroadcastError, fmt_shape
from onnx_bcast.ops.common import Shape, check_elements, check_rank, int_vector, target_dims

MODES = ("numpy", "explicit", "bidirectional", "pdpd")
_ALIASES = {"none": "explicit"}
CANONICAL_MODES = frozenset(MODES)


def canonical_mode(mode: str, op: str = "Broadcast") -> str:
    """The canonical name of a broadcast mode (case-insensitive, ``none`` is ``explicit``)."""
    if not isinstance(mode, str):
        raise BroadcastError(op, repr(mode), f"mode must be a string, got {type(mode).__name__}")
    name = mode.lower()
    name = _ALIASES.get(name, name)
    if name not in MODES:
        raise BroadcastError(op, mode, f"unknown mode {mode!r}; expected one of numpy, explicit (none), "
                                       "bidirectional, pdpd")
    return name


def _merge_dim(d: int, t: int) -> int | None:
    """OpenVINO's broadcast_merge of two static dims: 1 yields to the other, else they must be equal."""
    if d == 1:
        return t
    if t == 1 or d == t:
        return d
    return None


def _numpy_shape(op: str, d: Shape, t: Shape) -> Shape:
    r, rank = len(d), len(t)
    if rank < r:
        raise BroadcastError(op, "numpy", f"target rank {rank} is smaller than data rank {r}; "
                                          f"data {fmt_shape(d)}, target {fmt_shape(t)}")
    for k, dk in enumerate(d):
        i = k + rank - r
        if dk != 1 and dk != t[i]:
            raise BroadcastError(op, "numpy", f"data dim {k} (size {dk}) cannot be broadcast to target dim {i} "
                                              f"(size {t[i]}); data {fmt_shape(d)}, target {fmt_shape(t)}")
    return t


def _bidirectional_shape(op: str, d: Shape, t: Shape) -> Shape:
    rank = max(len(d), len(t))
    dp = (1,) * (rank - len(d)) + d
    tp = (1,) * (rank - len(t)) + t
    out = []
    for i, (dk, tk) in enumerate(zip(dp, tp, strict=True)):
        merged = _merge_dim(dk, tk)
        if merged is None:
            raise BroadcastError(op, "bidirectional", f"data dim {i - rank + len(d)} (size {dk}) and target dim "
                                                      f"{i - rank + len(t)} (size {tk}) are neither equal nor 1; "
                                                      f"data {fmt_shape(d)}, target {fmt_shape(t)}")
        out.append(merged)
    return tuple(out)


def _explicit_shape(op: str, d: Shape, t: Shape, a: Shape) -> Shape:
    r, rank = len(d), len(t)
    shapes = f"data {fmt_shape(d)}, target {fmt_shape(t)}, axes_mapping {list(a)}"
    if not (len(a) == r or (r == 0 and len(a) == 1)):
        raise BroadcastError(op, "explicit", f"axes_mapping has {len(a)} axes but data has rank {r}; {shapes}")
    for i in range(1, len(a)):
        if a[i] <= a[i - 1]:
            raise BroadcastError(op, "explicit", f"axes_mapping must be strictly increasing (no transposes, "
                                                 f"no duplicates): axes_mapping[{i - 1}]={a[i - 1]}, "
                                                 f"axes_mapping[{i}]={a[i]}; {shapes}")
    for i, ai in enumerate(a):
        if not 0 <= ai < rank:
            raise BroadcastError(op, "explicit", f"axes_mapping[{i}]={ai} is outside the target rank {rank}; {shapes}")
    if r == 0:
        if a and t[a[0]] != 1:
            raise BroadcastError(op, "explicit", f"scalar data mapped to target dim {a[0]} needs size 1 there, "
                                                 f"got {t[a[0]]}; {shapes}")
        return t
    for i, ai in enumerate(a):
        if d[i] != 1 and d[i] != t[ai]:
            raise BroadcastError(op, "explicit", f"data dim {i} (size {d[i]}) cannot be broadcast to target dim {ai} "
                                                 f"(size {t[ai]}); {shapes}")
    return t


def _pdpd_start(op: str, d: Shape, t: Shape, axis: int) -> int:
    r, rank = len(d), len(t)
    shapes = f"data {fmt_shape(d)}, target {fmt_shape(t)}, axis {axis}"
    start = rank - r if axis == -1 else axis
    if not 0 <= start <= rank:
        raise BroadcastError(op, "pdpd", f"start axis {start} is outside [0, {rank}]; {shapes}")
    if r != rank - start:
        raise BroadcastError(op, "pdpd", f"data rank {r} must cover the target from axis {start} to its end "
                                         f"({rank - start} dims); {shapes}")
    return start


def _pdpd_shape(op: str, d: Shape, t: Shape, axis: int) -> Shape:
    start = _pdpd_start(op, d, t, axis)
    out = list(t)
    for k, dk in enumerate(d):
        i = start + k
        merged = _merge_dim(dk, t[i])
        if merged is None:
            raise BroadcastError(op, "pdpd", f"data dim {k} (size {dk}) and target dim {i} (size {t[i]}) are "
                                             f"neither equal nor 1; data {fmt_shape(d)}, target {fmt_shape(t)}, "
                                             f"axis {axis}")
        out[i] = merged
    return tuple(out)


def _axes_or_none(op: str, mode: str, axes_mapping: Any) -> Shape | None:
    if axes_mapping is None:
        if mode == "explicit":
            raise BroadcastError(op, mode, "axes_mapping is required in explicit mode")
        return None
    axes = int_vector(axes_mapping, "axes_mapping", op, mode)
    if mode != "explicit" and axes:
        raise BroadcastError(op, mode, f"axes_mapping {list(axes)} is only allowed in explicit mode")
    return axes


def broadcast_shape(data_shape: Any, target_shape: Any, axes_mapping: Any = None, *, mode: str = "numpy",
                    axis: int = -1, op: str = "Broadcast") -> Shape:
    """The output shape of a broadcast; validates everything and allocates nothing.

    In modes other than explicit an *empty* ``axes_mapping`` counts as absent (the form ONNX Runtime needs).
    """
    mode = canonical_mode(mode, op)
    d = tuple(int(x) for x in data_shape)
    t = target_dims(target_shape, op, mode)
    a = _axes_or_none(op, mode, axes_mapping)
    shapes = f"data {fmt_shape(d)}, target {fmt_shape(t)}"
    check_rank(op, mode, "data", d, shapes)
    check_rank(op, mode, "target", t, shapes)  # the output's rank is at most the larger of the two
    out = _mode_shape(op, mode, d, t, a, axis)
    check_elements(op, mode, out, shapes)
    return out


def _mode_shape(op: str, mode: str, d: Shape, t: Shape, a: Shape | None, axis: Any) -> Shape:
    if mode == "numpy":
        return _numpy_shape(op, d, t)
    if mode == "bidirectional":
        return _bidirectional_shape(op, d, t)
    if mode == "explicit":
        return _explicit_shape(op, d, t, a or ())
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise BroadcastError(op, mode, f"axis must be an integer, got {axis!r}")
    return _pdpd_shape(op, d, t, int(axis))


def aligned_shape(data_shape: Shape, out_shape: Shape, axes_mapping: Any, mode: str, axis: int) -> Shape:
    """The data's shape padded with 1s to the output rank so that a numpy broadcast does the rest."""
    r, rank = len(data_shape), len(out_shape)
    if mode == "explicit":
        aligned = [1] * rank
        axes = tuple(int(v) for v in np.asarray(axes_mapping).reshape(-1)) if axes_mapping is not None else ()
        for k, dk in enumerate(data_shape):
            aligned[axes[k]] = dk
        return tuple(aligned)
    if mode == "pdpd":
        start = rank - r if int(axis) == -1 else int(axis)
        return (1,) * start + tuple(data_shape)
    return (1,) * (rank - r) + tuple(data_shape)
