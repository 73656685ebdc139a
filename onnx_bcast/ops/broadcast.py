"""Broadcast and Expand (OpenVINO Broadcast-1/-3): numpy kernel and op specs (the shape rule: broadcast_shape)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from onnx_bcast.errors import fmt_shape
from onnx_bcast.ops.broadcast_modes import BROADCAST_MODES
from onnx_bcast.ops.broadcast_shape import (  # noqa: F401  (the family's names, imported from here too)
    CANONICAL_MODES,
    MODES,
    aligned_shape,
    broadcast_shape,
    canonical_mode,
)
from onnx_bcast.ops.common import (
    ALL_TENSOR_TYPES,
    INDEX_TYPES,
    NUMPY_MAX_DIMS,
    Attr,
    Input,
    OpSpec,
    Shape,
    check_numpy_rank,
    int_key,
    limit_or_none,
    read_array,
    shape_of,
)
from onnx_bcast.ops.memory_guard import check_output_size


def broadcast(data: Any, target_shape: Any, axes_mapping: Any = None, *, mode: str = "numpy", axis: int = -1,
              op: str = "Broadcast", max_output_bytes: int | None = None) -> np.ndarray:
    """The numpy kernel of ``Broadcast``: a read-only view where no copy is needed.

    An output over ``max_output_bytes`` (default: ``memory_guard.output_limit``) is a BroadcastError.
    """
    canon = mode if type(mode) is str and mode in CANONICAL_MODES else canonical_mode(mode, op)
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
    _check_numpy_rank(op, canon, data.shape, target_shape, out_shape)
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
    _check_numpy_rank(op, mode, data_shape, target, out_shape)
    aligned = aligned_shape(data_shape, out_shape, axes, mode, axis)
    contiguous = np.empty(aligned, dtype=np.dtype(dtype)).strides if 0 not in aligned else (0,) * len(aligned)
    strides = tuple(0 if a == 1 and o != 1 else st for a, o, st in zip(aligned, out_shape, contiguous, strict=True))
    return out_shape, aligned, strides


def _check_numpy_rank(op: str, mode: str, data_shape: Shape, target: Any, out_shape: Shape) -> None:
    """A BroadcastError for an output of more dims than the installed numpy makes (numpy 1: 32); the shape rule
    allows it (rank 64), so the conversion does, and numpy 2 runs it."""
    if len(out_shape) > NUMPY_MAX_DIMS:
        target_dims = tuple(int(t) for t in np.asarray(target).reshape(-1))
        check_numpy_rank(op, mode, "output", out_shape, f"data {fmt_shape(data_shape)}, target "
                                                        f"{fmt_shape(target_dims)}, output {fmt_shape(out_shape)}")


def expand(data: Any, shape: Any, axes_mapping: Any = None, *, mode: str = "bidirectional",
           axis: int = -1, max_output_bytes: int | None = None) -> np.ndarray:
    """The numpy kernel of ``Expand``: ``Broadcast`` with ONNX's bidirectional default."""
    return broadcast(data, shape, axes_mapping, mode=mode, axis=axis, op="Expand", max_output_bytes=max_output_bytes)


_WITHOUT_AXES = frozenset(mode.name for mode in BROADCAST_MODES if not mode.uses_axes_mapping)


def _kernel(op: str):
    def run(inputs: list[np.ndarray | None], attrs: dict[str, Any], max_output_bytes: int | None = None) -> np.ndarray:
        data, target, axes = inputs if len(inputs) == 3 else (*inputs, None, None)[:3]
        mode = attrs["mode"]
        if axes is not None and not axes.size and (mode in _WITHOUT_AXES or canonical_mode(mode, op) in _WITHOUT_AXES):
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
