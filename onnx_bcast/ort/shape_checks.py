"""The guarded shape checks of the ONNX Runtime form, run as Python ops on shapes only: each gives the shapes a
standard op's operands take, or a failure shape carrying the recorded error."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from onnx_bcast.errors import BroadcastError
from onnx_bcast.ops import SPEC_BY_NAME
from onnx_bcast.ops.broadcast import aligned_shape, canonical_mode
from onnx_bcast.ops.broadcast_modes import MODE_BY_NAME
from onnx_bcast.ops.common import check_array_rank, shape_stand_in, zeros_inferred_dims
from onnx_bcast.ops.elementwise import canonical_rule, elementwise_shape, pdpd_alignment
from onnx_bcast.ops.memory_guard import check_output_size, environment_text
from onnx_bcast.ort.kernel_errors import failure_shape, output_limit, record
from onnx_bcast.ort.kernel_plans import PLANS_PER_NODE


def elementwise_check(a_shape: np.ndarray, b_shape: np.ndarray, **attrs: Any) -> np.ndarray:
    """The guarded check: the shape B takes so that numpy broadcasting applies the rule, or a failure shape."""
    op = attrs.get("op", "Add")
    a, b = tuple(int(v) for v in a_shape.tolist()), tuple(int(v) for v in b_shape.tolist())
    try:
        rule = canonical_rule(attrs.get("auto_broadcast", "numpy"), op)
        axis = int(attrs.get("axis", -1))
        out_shape = elementwise_shape(a, b, auto_broadcast=rule, axis=axis, op=op)
        elem = int(attrs.get("elem_type", 0))
        if elem:  # the standard op allocates the output: the memory guard applies before it does
            check_output_size(op, rule, out_shape, helper.tensor_dtype_to_np_dtype(elem), output_limit(attrs),
                              mode_attr="auto_broadcast")
        aligned = pdpd_alignment(a, b, axis, op) if rule == "pdpd" else b
        if 0 in aligned and aligned != b and not int(attrs.get("allowzero", 1)):
            # before opset 14 a 0 in Reshape's shape copies the input's dim: the first 0 becomes -1 (inferred as 0,
            # B being empty) and any other a 1, which the op's broadcasting against A's 0 there makes 0 again
            aligned = zeros_inferred_dims(aligned)
        return np.asarray(aligned, dtype=np.int64)
    except BaseException as exc:  # never let an exception reach the bridge: it would abort the process
        if not isinstance(exc, BroadcastError):
            exc = BroadcastError(op, str(attrs.get("auto_broadcast", "")),
                                 f"shape check failed: {type(exc).__name__}: {exc}", mode_attr="auto_broadcast")
        error_id = record(op, str(attrs.get("auto_broadcast", "")), attrs, exc, "auto_broadcast")
        return failure_shape(error_id, int(np.prod(b, dtype=object)) if b else 1)


def broadcast_check(data_shape: np.ndarray, target: np.ndarray, axes: np.ndarray, attrs: dict[str, Any]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The guarded check of a broadcast whose data ORT's ``Expand`` moves (``BROADCAST_CHECK``): the op's own
    kernel runs on a zero-copy stand-in of the data's shape and dtype, so every rule and limit is checked as where
    the kernel moves the data, with the same errors. Gives the shape the data takes (for ``Reshape``) and the output
    shape (for ``Expand``), or a failure shape the data cannot take, carrying the error id."""
    memo = getattr(attrs, "memo", None)  # the bridge's per-node attributes carry it
    if memo is not None:
        limit = attrs.get("max_output_bytes", -1)
        key = (data_shape.tobytes(), target.tobytes(), axes.tobytes(), limit if limit >= 0 else environment_text())
        known = memo.get(key)
        if known is not None:
            return known
    op, mode = str(attrs.get("op", "Broadcast")), str(attrs.get("mode", ""))
    spec = SPEC_BY_NAME.get(op)
    dims = tuple(int(v) for v in data_shape.tolist())
    try:
        dtype = helper.tensor_dtype_to_np_dtype(int(attrs.get("elem_type") or 1))
        stand_in = shape_stand_in(op, mode, "data", dims, dtype, spec.mode_attr)
        canon = canonical_mode(mode, op)
        given = axes if axes.size or MODE_BY_NAME[canon].uses_axes_mapping else None  # empty: absent
        out = spec.kernel([stand_in, target, given], attrs, output_limit(attrs)).shape
        aligned = aligned_shape(dims, out, given, canon, int(attrs.get("axis", -1)))
        if 0 in aligned and aligned != dims and not int(attrs.get("allowzero", 1)):
            aligned = zeros_inferred_dims(aligned)  # before opset 14 a 0 in Reshape's shape copies the input's dim
        shapes_out = _frozen(aligned), _frozen(out)
    except BaseException as exc:  # never let an exception reach the bridge: it would abort the process
        if not isinstance(exc, BroadcastError):
            exc = BroadcastError(op, mode, f"shape check failed: {type(exc).__name__}: {exc}")
        error_id = record(op, mode, attrs, exc, spec.mode_attr if spec is not None else "mode")
        failure = failure_shape(error_id, int(np.prod(dims, dtype=object)) if dims else 1)
        return failure, failure
    if memo is not None:  # valid shapes only: an error is raised again at each call
        if len(memo) >= PLANS_PER_NODE:
            memo.clear()
        memo[key] = shapes_out
    return shapes_out


def _frozen(shape: tuple[int, ...]) -> np.ndarray:
    """A shape as int64, read-only: the calls of one input signature share it."""
    array = np.asarray(shape, dtype=np.int64)
    array.flags.writeable = False
    return array


def rank_check(shape: np.ndarray, **attrs: Any) -> np.ndarray:
    """The guarded check before a kernel's value input of a rank numpy may not hold (``RANK_CHECK``): ``shape``
    itself, which the value is reshaped to (free), or a failure shape carrying the error id when the rank is over
    64, or over what the installed numpy makes (numpy 1: 32 dims; the bridge would abort the process on such an
    input)."""
    op, mode, mode_attr = str(attrs.get("op", "")), str(attrs.get("mode", "")), str(attrs.get("mode_attr") or "mode")
    dims = tuple(int(v) for v in shape.tolist())
    try:
        check_array_rank(op, mode, str(attrs.get("input") or "input"), dims, mode_attr)
        return np.asarray(dims, dtype=np.int64)
    except BaseException as exc:  # never let an exception reach the bridge: it would abort the process
        error_id = record(op, mode, attrs, exc, mode_attr)
        return failure_shape(error_id, int(np.prod(dims, dtype=object)) if dims else 1)
