"""Broadcast and Expand (OpenVINO Broadcast-1/-3): shape rule, numpy kernel and op specs."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from onnx_bcast.errors import BroadcastError, fmt_shape
from onnx_bcast.memory_guard import check_output_size
from onnx_bcast.ops.common import (
    ALL_TENSOR_TYPES,
    INDEX_TYPES,
    Attr,
    Input,
    OpSpec,
    Shape,
    check_rank,
    int_key,
    int_vector,
    limit_or_none,
    read_array,
    shape_of,
    target_dims,
)

MODES = ("numpy", "explicit", "bidirectional", "pdpd")
_ALIASES = {"none": "explicit"}
_CANONICAL = frozenset(MODES)


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


def broadcast(data: Any, target_shape: Any, axes_mapping: Any = None, *, mode: str = "numpy", axis: int = -1,
              op: str = "Broadcast", max_output_bytes: int | None = None) -> np.ndarray:
    """The numpy kernel of ``Broadcast``: a read-only view where no copy is needed.

    An output over ``max_output_bytes`` (default: ``memory_guard.output_limit``) is a BroadcastError.
    """
    canon = mode if type(mode) is str and mode in _CANONICAL else canonical_mode(mode, op)
    target, axes = int_key(target_shape), int_key(axes_mapping) if axes_mapping is not None else ()
    limit = limit_or_none(max_output_bytes)
    if isinstance(data, np.ndarray) and target is not None and axes is not None and type(axis) is int and limit:
        # the same shapes come again and again (a model run in a loop): validate them once
        out_shape, aligned, strides = _plan(op, canon, axis, data.shape, target,
                                            axes if axes_mapping is not None else None, data.dtype, limit,
                                            max_output_bytes)
        if data.flags.c_contiguous and data.size:  # a strided view of the data itself, as broadcast_to makes
            view = np.ndarray(out_shape, data.dtype, data, 0, strides)
            view.flags.writeable = False
            return view
        return np.broadcast_to(data.reshape(aligned), out_shape)
    data = read_array(data, op, canon, "data")
    out_shape = broadcast_shape(shape_of(data), target_shape, axes_mapping, mode=canon, axis=axis, op=op)
    check_output_size(op, canon, out_shape, data.dtype, max_output_bytes)
    aligned = aligned_shape(data.shape, out_shape, axes_mapping, canon, axis)
    return np.broadcast_to(data.reshape(aligned), out_shape)


@functools.lru_cache(maxsize=4096)
def _plan(op: str, mode: str, axis: int, data_shape: Shape, target: Shape, axes: Shape | None, dtype: np.dtype,
          limit: tuple[int, str] | None, max_output_bytes: int | None) -> tuple[Shape, Shape, Shape]:
    """The validated output shape, the data's aligned shape, and the byte strides of the output as a view of
    C-contiguous data (raises as ``broadcast_shape`` does; errors are not cached). ``limit`` is the output limit in
    force now, read by the caller, so a changed environment is seen."""
    out_shape = broadcast_shape(data_shape, np.asarray(target, dtype=np.int64), None if axes is None else
                                np.asarray(axes, dtype=np.int64), mode=mode, axis=axis, op=op)
    check_output_size(op, mode, out_shape, np.dtype(dtype), max_output_bytes)
    aligned = aligned_shape(data_shape, out_shape, axes, mode, axis)
    contiguous = np.empty(aligned, dtype=np.dtype(dtype)).strides if 0 not in aligned else (0,) * len(aligned)
    strides = tuple(0 if a == 1 and o != 1 else st for a, o, st in zip(aligned, out_shape, contiguous, strict=True))
    return out_shape, aligned, strides


def expand(data: Any, shape: Any, axes_mapping: Any = None, *, mode: str = "bidirectional",
           axis: int = -1, max_output_bytes: int | None = None) -> np.ndarray:
    """The numpy kernel of ``Expand``: ``Broadcast`` with ONNX's bidirectional default."""
    return broadcast(data, shape, axes_mapping, mode=mode, axis=axis, op="Expand", max_output_bytes=max_output_bytes)


_NOT_EXPLICIT = frozenset(("numpy", "bidirectional", "pdpd"))


def _kernel(op: str):
    def run(inputs: list[np.ndarray | None], attrs: dict[str, Any], max_output_bytes: int | None = None) -> np.ndarray:
        data, target, axes = inputs if len(inputs) == 3 else (*inputs, None, None)[:3]
        mode = attrs["mode"]
        if axes is not None and not axes.size and (mode in _NOT_EXPLICIT or canonical_mode(mode, op) != "explicit"):
            axes = None  # the ONNX Runtime form's empty axes_mapping: absent
        return broadcast(data, target, axes, mode=attrs["mode"], axis=attrs["axis"], op=op,
                         max_output_bytes=max_output_bytes)
    return run


def _static_shape(op: str):
    def infer(shapes: list[Shape | None], values: list[np.ndarray | None], attrs: dict[str, Any]) -> Shape | None:
        data_shape = shapes[0] if shapes else None
        target = values[1] if len(values) > 1 else None
        axes = values[2] if len(values) > 2 else None
        has_axes_input = len(shapes) > 2  # callers list inputs up to the last one present
        if data_shape is None or target is None or (has_axes_input and axes is None):
            return None
        return broadcast_shape(data_shape, target, axes, mode=attrs["mode"], axis=attrs["axis"], op=op)
    return infer


def _spec(op: str, default_mode: str, doc: str) -> OpSpec:
    return OpSpec(
        name=op,
        doc=doc,
        inputs=(
            Input("data", "T", doc="the tensor to broadcast"),
            Input("target_shape", "T_SHAPE", doc="1-D target shape"),
            Input("axes_mapping", "T_SHAPE", optional=True,
                  doc="explicit mode: the output axis of each data axis (empty or absent otherwise)"),
        ),
        attrs=(
            Attr("mode", "string", default_mode, "numpy, explicit (none), bidirectional or pdpd"),
            Attr("axis", "int", -1, "pdpd: the output axis the data starts at; -1 aligns it to the right"),
        ),
        type_constraints=(("T", ALL_TENSOR_TYPES), ("T_SHAPE", INDEX_TYPES)),
        output_type_param="T",
        kernel=_kernel(op),
        static_shape=_static_shape(op),
        mode_of=lambda attrs: str(attrs.get("mode", default_mode)),
    )


BROADCAST = _spec("Broadcast", "numpy", "OpenVINO Broadcast-3 (Broadcast-1 is its subset).")
EXPAND = _spec("Expand", "bidirectional", "Broadcast with ONNX's default: without attributes it is ONNX Expand.")
SPECS = (BROADCAST, EXPAND)
