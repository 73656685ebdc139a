"""The shape rule of Broadcast and Expand (OpenVINO Broadcast-1/-3) in every mode: validates, never allocates."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_bcast.errors import BroadcastError, LazyText, fmt_shape
from onnx_bcast.ops.broadcast_modes import MODE_BY_NAME
from onnx_bcast.ops.common import Shape, check_elements, check_rank, int_vector, target_dims

MODES = tuple(MODE_BY_NAME)  # numpy, explicit, bidirectional, pdpd
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


def _axes_or_none(op: str, mode: str, axes_mapping: Any) -> Shape | None:
    if axes_mapping is None:
        if MODE_BY_NAME[mode].uses_axes_mapping:
            raise BroadcastError(op, mode, f"axes_mapping is required in {mode} mode")
        return None
    axes = int_vector(axes_mapping, "axes_mapping", op, mode)
    if not MODE_BY_NAME[mode].uses_axes_mapping and axes:
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
    shapes = LazyText(lambda: f"data {fmt_shape(d)}, target {fmt_shape(t)}")
    check_rank(op, mode, "data", d, shapes)
    check_rank(op, mode, "target", t, shapes)  # the output's rank is at most the larger of the two
    out = _mode_shape(op, mode, d, t, a, axis)
    check_elements(op, mode, out, shapes)
    return out


def _mode_shape(op: str, mode: str, d: Shape, t: Shape, a: Shape | None, axis: Any) -> Shape:
    spec = MODE_BY_NAME[mode]
    if spec.uses_axis and (isinstance(axis, bool) or not isinstance(axis, (int, np.integer))):
        raise BroadcastError(op, mode, f"axis must be an integer, got {axis!r}")
    return spec.shape(op, d, t, a or (), int(axis) if spec.uses_axis else -1)


def aligned_shape(data_shape: Shape, out_shape: Shape, axes_mapping: Any, mode: str, axis: int) -> Shape:
    """The data's shape padded with 1s to the output rank so that a numpy broadcast does the rest."""
    axes = tuple(int(v) for v in np.asarray(axes_mapping).reshape(-1)) if axes_mapping is not None else ()
    return MODE_BY_NAME[mode].aligned(tuple(data_shape), tuple(out_shape), axes, axis)
