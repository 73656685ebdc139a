"""Each Broadcast/Expand mode as one record (``BroadcastMode``): its shape rule, how it aligns the data with the
output, and what it reads. A new mode is a new record here; the kernel, the backprop plan, the schemas' inference,
the declaring checks and the listings derive from the records, and the converters' run-time conditions
(``converters/mode_guards.py``) and OpenVINO's mapping (``openvino/broadcasts.py``) have one entry per mode, which
tests/test_structure.py requires."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from onnx_bcast.errors import BroadcastError, LazyText, fmt_shape
from onnx_bcast.ops.common import Shape


@dataclass(frozen=True)
class BroadcastMode:
    """One mode: ``shape(op, data, target, axes, axis)`` validates and returns the output shape;
    ``aligned(data, out, axes, axis)`` is the data's shape padded with 1s to the output's rank as the kernel aligns
    it (a numpy broadcast then does the rest)."""

    name: str
    shape: Callable[[str, Shape, Shape, Shape, int], Shape]
    aligned: Callable[[Shape, Shape, Shape, int], Shape]
    uses_axes_mapping: bool = False  # axes_mapping is required and read (explicit); elsewhere it must be empty
    uses_axis: bool = False  # the ``axis`` attribute is read (pdpd)
    output_has_target_rank: bool = True  # whatever the data (bidirectional: the larger rank of the two)


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
    shapes = LazyText(lambda: f"data {fmt_shape(d)}, target {fmt_shape(t)}, axes_mapping {list(a)}")
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
    shapes = LazyText(lambda: f"data {fmt_shape(d)}, target {fmt_shape(t)}, axis {axis}")
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


def _right_aligned(d: Shape, out: Shape, axes: Shape, axis: int) -> Shape:
    return (1,) * (len(out) - len(d)) + tuple(d)


def _explicit_aligned(d: Shape, out: Shape, axes: Shape, axis: int) -> Shape:
    aligned = [1] * len(out)
    for k, dk in enumerate(d):
        aligned[axes[k]] = dk
    return tuple(aligned)


def _pdpd_aligned(d: Shape, out: Shape, axes: Shape, axis: int) -> Shape:
    start = len(out) - len(d) if int(axis) == -1 else int(axis)
    return (1,) * start + tuple(d)


BROADCAST_MODES: tuple[BroadcastMode, ...] = (
    BroadcastMode("numpy", lambda op, d, t, a, axis: _numpy_shape(op, d, t), _right_aligned),
    BroadcastMode("explicit", lambda op, d, t, a, axis: _explicit_shape(op, d, t, a), _explicit_aligned,
                  uses_axes_mapping=True),
    BroadcastMode("bidirectional", lambda op, d, t, a, axis: _bidirectional_shape(op, d, t), _right_aligned,
                  output_has_target_rank=False),
    BroadcastMode("pdpd", lambda op, d, t, a, axis: _pdpd_shape(op, d, t, axis), _pdpd_aligned, uses_axis=True),
)
MODE_BY_NAME: dict[str, BroadcastMode] = {mode.name: mode for mode in BROADCAST_MODES}
