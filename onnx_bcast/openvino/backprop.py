"""BroadcastBackprop, BroadcastV0Backprop and Unbroadcast as OpenVINO ReduceSum over the summed axes + Reshape.

The summed axes come from the forward rule as ``onnx_bcast.ops.backprop`` reads it: where the data's shape (or A's,
B's) is known when reading, they are constants and the node is validated then (``backprop_plan``, ``v0_plan``,
the elementwise rule); where it is fed at run time, they are computed in the graph (``NonZero`` of the aligned
shape's 1s) and the forward rule's conditions are checked in the graph (``graph.checked_zero``, tied to the
summed axes): a run with invalid shapes fails with a ``RuntimeError`` quoting the rule.
float16/bfloat16 are summed in float32 and rounded once, as the kernels do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import openvino as ov

from onnx_bcast.errors import BroadcastError, fmt_shape
from onnx_bcast.openvino.broadcasts import explicit_axes
from onnx_bcast.openvino.checks import explained
from onnx_bcast.openvino.graph import (
    Dims,
    Output,
    as_i64,
    attr,
    checked_zero,
    dims,
    fmt,
    fold,
    i64,
    index_input,
    input_at,
    int_attr,
    ints,
    length,
    ones_then,
    ops,
)
from onnx_bcast.ops.backprop import BROADCAST_BACKPROP, UNBROADCAST, V0_BACKPROP, backprop_plan, v0_plan
from onnx_bcast.ops.broadcast import canonical_mode
from onnx_bcast.ops.common import int_vector
from onnx_bcast.ops.elementwise import canonical_rule, elementwise_shape, pdpd_alignment

_WIDENED = ("f16", "bf16")  # summed in float32


def _delta(ctx: Any, op: str, mode: str, mode_attr: str = "mode") -> tuple[Output, tuple[int | None, ...]]:
    delta = input_at(ctx, 0)
    elem = delta.get_element_type()
    if elem == ov.Type.boolean or elem == ov.Type.string:
        raise BroadcastError(op, mode, f"delta must be a numeric tensor, got {elem.get_type_name()}",
                             mode_attr=mode_attr)
    shape = dims(delta)
    if shape is None:
        raise NotImplementedError(f"{op}: delta's rank must be known when reading the model into OpenVINO")
    return delta, shape


def summed_where_one(aligned: Output) -> Output:
    """The axes where the aligned shape (a 1-D int64 tensor) is 1, the ones a backprop sums over, each plus one and
    after a 0: for ``sum_to`` on ``delta`` with a leading size-1 axis. (The CPU plugin's ReduceSum fails with "ptr is
    Null" on a run-time axes tensor that is empty; with the leading axis it never is.)"""
    where = ops.reshape(ops.non_zero(ops.equal(aligned, i64([1])), "i64"), i64([-1]), False)
    return ops.concat([i64([0]), ops.add(where, i64([1]))], 0).output(0)


def delta_dims_check(delta: Output, axes: Sequence[int], expected: Sequence[int], message: str) -> Output | None:
    """``graph.checked_zero`` of ``delta``'s dims on ``axes`` (known only at run time) equal to ``expected``'s
    there; None where there are none."""
    if not axes:
        return None
    got = ops.gather(ops.shape_of(delta, "i64"), i64(axes), i64([0]))
    return checked_zero([([ops.equal(got, i64([expected[i] for i in axes]))], message)])


def static_axes(summed: Sequence[int], zero: Output) -> Output:
    """Known summed axes as ``sum_to`` takes run-time ones (each plus one, after a 0), tied to a check's zero."""
    return ops.add(i64([0, *(i + 1 for i in summed)]), zero).output(0)


def sum_to(delta: Output, axes: Sequence[int] | Output, shape: Output | None, keep_dims: bool = True) -> Output:
    """``delta`` summed over ``axes`` (float16/bfloat16 in float32, rounded once), reshaped to ``shape``. Run-time
    ``axes`` (from ``summed_where_one``) count a size-1 axis put in front of ``delta``."""
    elem = delta.get_element_type()
    wide = elem.get_type_name() in _WIDENED
    total = ops.convert(delta, ov.Type.f32).output(0) if wide else delta
    if not isinstance(axes, Sequence):
        total = ops.reduce_sum(ops.unsqueeze(total, i64([0])), axes, keep_dims).output(0)
    else:  # also with no axes: a node of its own (a model output that is its input loses the input's name)
        total = ops.reduce_sum(total, i64(axes), keep_dims or not axes).output(0)  # the CPU plugin wants keep_dims
    if wide:
        total = ops.convert(total, elem).output(0)
    return total if shape is None else ops.reshape(total, shape, False).output(0)


def broadcast_backprop(ctx: Any, op: str) -> list[Output]:
    """``BroadcastBackprop(delta, data_shape, axes_mapping?)``: ``delta`` summed to ``data_shape``."""
    mode = canonical_mode(attr(ctx, "mode", "numpy"), op)
    axis = int_attr(ctx, "axis", -1, op, mode)
    delta, dd = _delta(ctx, op, mode)
    data_shape = index_input(input_at(ctx, 1), "data_shape", op, mode)
    axes, a = explicit_axes(ctx, op, mode)
    values = fold(data_shape)
    if values is not None and (axes is None or a is not None):
        d, aligned_d, summed, checked = backprop_plan(values, dd, a, mode=mode, axis=axis, op=op)
        error = BroadcastError(op, mode, f"delta is not a {mode} broadcast of data_shape {fmt_shape(d)}")
        zero = delta_dims_check(delta, checked, aligned_d, f"{error} [checked at run time]")
        return [sum_to(delta, summed if zero is None else static_axes(summed, zero), i64(d))]
    r = len(values) if values is not None else length(data_shape)
    if r is None:
        raise NotImplementedError(f"{op}: data_shape's length must be known when reading the model into OpenVINO")
    if mode != "explicit" or a is not None:
        try:  # ranks and axes: data dims of 1 fit every delta
            backprop_plan((1,) * r, dd, a, mode=mode, axis=axis, op=op)
        except BroadcastError as err:
            raise explained(err, f"delta {fmt(dd)}, {r} data_shape values known at run time") from None
    rank, shape = len(dd), as_i64(data_shape)
    out = ops.shape_of(delta, "i64").output(0)
    checks = [([ops.greater_equal(shape, i64([0]))], "data_shape has a negative dim")]
    if mode == "explicit":
        count = length(axes) if a is None else len(a)
        if count is None:
            raise NotImplementedError(f"{op}: axes_mapping's length must be known when reading the model into "
                                      "OpenVINO")
        if count != r and not (r == 0 and count == 1):
            raise BroadcastError(op, mode, f"axes_mapping has {count} axes for {r} data_shape values known at run "
                                           "time: one axis per data dim")
        axes64 = as_i64(axes)
        if count == 0:  # a scalar without axes: nothing to check (an empty Gather here killed the CPU plugin,
            # SIGFPE); the empty scatter keeps the input read, so that it stays an input of the compiled model
            aligned = ops.scatter_update(i64([1] * rank), axes64, shape, i64([0])).output(0)
    if mode == "explicit" and count:
        inside = [ops.greater_equal(axes64, i64([0])), ops.less(axes64, i64([rank]))]
        if count > 1:
            inside.append(ops.greater(ops.slice(axes64, i64([1]), i64([count]), i64([1])),
                                      ops.slice(axes64, i64([0]), i64([count - 1]), i64([1]))))
        checks.append((inside, f"axes_mapping must be strictly increasing and inside delta's rank {rank}"))
        clamped = ops.clamp(axes64, 0, max(rank - 1, 0)).output(0)
        landed = ops.gather(out, clamped, i64([0])).output(0) if rank else i64([1] * count)
        if r:
            checks.append(([ops.logical_or(ops.equal(shape, landed), ops.equal(shape, i64([1])))],
                           "a data dim is neither 1 nor delta's dim on its axis"))
            aligned = ops.scatter_update(i64([1] * rank), clamped, shape, i64([0])).output(0)
        else:  # a scalar with one axis: delta's dim there must be 1
            checks.append(([ops.equal(landed, i64([1]))], "a scalar's axis must have size 1 in delta"))
            aligned = i64([1] * rank)
    elif mode != "explicit":
        aligned = ones_then(rank - r if mode != "pdpd" or axis == -1 else axis, shape)
        checks.append(([ops.logical_or(ops.equal(aligned, i64([1])), ops.equal(aligned, out))],
                       f"delta's shape is not a {mode} broadcast of data_shape: each aligned data dim must be 1 "
                       "or delta's"))
    zero = checked_zero([(c, f"{BroadcastError(op, mode, detail)} [checked at run time]") for c, detail in checks])
    return [sum_to(delta, ops.add(summed_where_one(aligned), zero).output(0), data_shape)]


def broadcast_v0_backprop(ctx: Any, op: str) -> list[Output]:
    """``BroadcastV0Backprop(delta)``: nGraph's ``Sum(delta, broadcast_axes)``."""
    delta, dd = _delta(ctx, op, "")
    axes, _ = v0_plan(dd, ints(ctx, 1, "broadcast_axes", op))
    return [sum_to(delta, axes, None, keep_dims=False)]


def _unbroadcast_static(op: str, rule: str, axis: int, dd: Dims, a_values: Any, b_values: Any
                        ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A's and B's shapes validated against ``delta``'s dims, and the axes summed for each."""
    a = int_vector(a_values, "a_shape", op, rule)
    b = int_vector(b_values, "b_shape", op, rule)
    for what, shape in (("a_shape", a), ("b_shape", b)):
        if any(n < 0 for n in shape):
            raise BroadcastError(op, rule, f"{what} {fmt_shape(shape)} has a negative dim", mode_attr="auto_broadcast")
    out = elementwise_shape(a, b, auto_broadcast=rule, axis=axis, op=op)
    if len(out) != len(dd) or any(x is not None and x != o for x, o in zip(dd, out, strict=False)):
        raise BroadcastError(op, rule, f"delta {fmt(dd)} is not the output shape {fmt_shape(out)} of A "
                                       f"{fmt_shape(a)} and B {fmt_shape(b)}", mode_attr="auto_broadcast")
    rank = len(out)
    aligned_a = (1,) * (rank - len(a)) + a
    aligned_b = pdpd_alignment(a, b, axis, op) if rule == "pdpd" else (1,) * (rank - len(b)) + b

    def summed(aligned: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(i for i in range(rank) if aligned[i] == 1 and out[i] != 1)

    return a, b, summed(aligned_a), summed(aligned_b)


def unbroadcast(ctx: Any, op: str) -> list[Output]:
    """``Unbroadcast(delta, a_shape, b_shape)``: ``delta`` summed to A's and to B's shape (two outputs)."""
    rule = canonical_rule(attr(ctx, "auto_broadcast", "numpy"), op)
    axis = int_attr(ctx, "axis", -1, op, rule, "auto_broadcast")
    delta, dd = _delta(ctx, op, rule, "auto_broadcast")
    a_shape, b_shape = (index_input(input_at(ctx, i), what, op, rule, "auto_broadcast")
                        for i, what in ((1, "a_shape"), (2, "b_shape")))
    a_values, b_values = fold(a_shape), fold(b_shape)
    if a_values is not None and b_values is not None:
        a, b, summed_a, summed_b = _unbroadcast_static(op, rule, axis, dd, a_values, b_values)
        out = elementwise_shape(a, b, auto_broadcast=rule, axis=axis, op=op)
        unknown = tuple(i for i, x in enumerate(dd) if x is None)
        error = BroadcastError(op, rule, f"delta is not the output shape {fmt_shape(out)} of A {fmt_shape(a)} and B "
                                         f"{fmt_shape(b)}", mode_attr="auto_broadcast")
        zero = delta_dims_check(delta, unknown, out, f"{error} [checked at run time]")
        if zero is not None:
            summed_a, summed_b = static_axes(summed_a, zero), static_axes(summed_b, zero)
        return [sum_to(delta, summed_a, i64(a)), sum_to(delta, summed_b, i64(b))]
    ra, rb = length(a_shape), length(b_shape)
    if ra is None or rb is None:
        raise NotImplementedError(f"{op}: the lengths of a_shape and b_shape must be known when reading the model "
                                  "into OpenVINO")
    try:  # ranks: dims of 1 fit every rule
        _unbroadcast_static(op, rule, axis, tuple(None for _ in dd), (1,) * ra, (1,) * rb)
    except BroadcastError as err:
        raise explained(err, f"delta {fmt(dd)}, a_shape and b_shape of lengths {ra} and {rb} known at run "
                             "time") from None
    rank, a64, b64 = len(dd), as_i64(a_shape), as_i64(b_shape)
    out = ops.shape_of(delta, "i64").output(0)
    one = i64([1])

    def fits(x: Output, y: Output) -> Any:
        return ops.logical_or(ops.equal(x, y), ops.equal(x, one))

    checks = [([ops.greater_equal(a64, i64([0])), ops.greater_equal(b64, i64([0]))], "a_shape or b_shape has a "
               "negative dim")]
    aligned_a = ones_then(rank - ra, a64)
    if rule == "pdpd":
        start = ra - rb if axis == -1 else axis
        kept = min(rb, ra - start)  # B's dims past A's end are trailing 1s (docs/ops.md: ignored)
        b_part = ops.slice(b64, i64([0]), i64([kept]), i64([1])).output(0)
        a_part = ops.slice(a64, i64([start]), i64([start + kept]), i64([1])).output(0)
        fit = [fits(b_part, a_part)]
        if kept < rb:
            fit.append(ops.equal(ops.slice(b64, i64([kept]), i64([rb]), i64([1])), one))
        checks.append((fit, f"B does not fit A from axis {start}: each B dim must be A's or 1, and B's dims past "
                            "A's end 1"))
        aligned_b = ones_then(start, b_part, ra - start - kept)
        expected = a64
    elif rule == "none":
        checks.append(([ops.equal(a64, b64)], "A and B must have one shape"))
        aligned_b, expected = b64, a64
    else:
        aligned_b = ones_then(rank - rb, b64)
        checks.append(([ops.logical_or(fits(aligned_a, aligned_b), ops.equal(aligned_b, one))],
                       "A and B do not broadcast: each aligned pair of dims must be equal or have a 1"))
        expected = ops.select(ops.equal(aligned_a, one), aligned_b, aligned_a).output(0)
    checks.append(([ops.equal(out, expected)], "delta's shape is not the output shape of A and B"))
    zero = checked_zero([(c, f"{BroadcastError(op, rule, detail, mode_attr='auto_broadcast')} [checked at run "
                             "time]") for c, detail in checks])
    return [sum_to(delta, ops.add(summed_where_one(aligned_a), zero).output(0), a_shape),
            sum_to(delta, ops.add(summed_where_one(aligned_b), zero).output(0), b_shape)]

CONVERTERS = {BROADCAST_BACKPROP: broadcast_backprop, V0_BACKPROP: broadcast_v0_backprop, UNBROADCAST: unbroadcast}
