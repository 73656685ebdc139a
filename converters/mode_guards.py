"""The run-time conditions of each Broadcast/Expand mode (numpy, explicit, bidirectional, pdpd), as guard checks
that the forward rules and the backprop rules share."""

from __future__ import annotations

from collections.abc import Callable

from onnx_bcast.converters.guards import Guard
from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.ops.broadcast_modes import MODE_BY_NAME
from onnx_bcast.ops.common import MAX_RANK


def checked_target(emit: Emitter, bound: Bound, data: str, target: str, axes: str | None = None,
                   carrier: str | None = None) -> tuple[str, str, str | None]:
    """``Expand``'s ``(carrier, target, zero_ends)`` after the checks of the node's mode (numpy, explicit with its
    int64 ``axes``, bidirectional, pdpd) on ``data`` and ``target``: ``Guard.tie_expand``. ``carrier``: what the
    ``Expand`` reads, ``data`` unless aligned first."""
    guard, mode = Guard(emit, bound), bound.mode
    guard.no_negative_dims(target)
    guard.representable(target)
    no_axes_mapping(guard, bound)
    data_shape = emit.shape(data)
    mode_conditions(guard, mode, data_shape, target, axes)
    # (bidirectional: the Expand checks its own dims, so it must see the target's 0s)
    return guard.tie_expand(carrier or data, target, data_shape if carrier is None else None,
                            slice_zeros=mode != "bidirectional")


def no_axes_mapping(guard: Guard, bound: Bound) -> None:
    """In a mode without ``axes_mapping``, the one given must be empty (the ORT form carries an absent one so)."""
    if not MODE_BY_NAME[bound.mode].uses_axes_mapping and bound.inputs[2]:
        guard.require(guard.op("Equal", guard.length(bound.inputs[2]), guard.i64(0)),
                      f"{bound.mode}: axes_mapping is only allowed in explicit mode")


def mode_conditions(guard: Guard, mode: str, d: str, target: str, axes: str | None = None,
                    unidirectional: bool = False) -> None:
    """The conditions of ``mode`` on data dims ``d`` and the target ``target`` (int64 vectors). With
    ``unidirectional`` the output must be the target itself (a gradient's ``delta``), bidirectional included."""
    big_r = guard.length(target)
    guard.require(guard.at_most(big_r, guard.i64(MAX_RANK)), f"ranks are at most {MAX_RANK}")
    CONDITIONS[mode](guard, guard.bound, d, target, big_r, axes, unidirectional)


def _numpy(guard: Guard, bound: Bound, d: str, target: str, big_r: str, axes: str | None,
           unidirectional: bool) -> None:
    r = guard.length(d)
    guard.require(guard.at_least(big_r, r), f"{bound.mode}: the target rank must be at least the data rank")
    tail = guard.slice(target, guard.op("Sub", big_r, r), big_r)
    fits = guard.op("Or", guard.op("Equal", d, guard.i64(1)), guard.op("Equal", d, tail))
    guard.require(fits, f"{bound.mode}: each data dim must be 1 or equal the target dim it meets")


def _bidirectional(guard: Guard, bound: Bound, d: str, target: str, big_r: str, axes: str | None,
                   unidirectional: bool) -> None:
    if unidirectional:  # the output is the target: numpy's conditions
        _numpy(guard, bound, d, target, big_r, axes, unidirectional)
    else:  # the standard Expand checks the dims itself, but not the data's rank
        r = guard.length(d)
        guard.require(guard.at_most(r, guard.i64(MAX_RANK)), f"ranks are at most {MAX_RANK}")
        facts = guard.facts()
        dims, lengths = facts.value(d), (facts.value(r) or ()) + (facts.value(big_r) or ())
        if dims is None or len(lengths) != 2 or not all(type(e) is int for e in (*dims, *lengths)):
            return  # OpenVINO checks the Expand where the data's dims are not static (and runs no unknown rank)
        # ... but not where they are static: said again (a (2, 3) to a fed [4, 3] returned (2, 3) there)
        k = guard.i64(min(lengths))
        d_tail, t_tail = guard.slice(d, guard.op("Sub", r, k), r), guard.slice(target, guard.op("Sub", big_r, k), big_r)
        one = guard.i64(1)
        fits = guard.op("Or", guard.op("Or", guard.op("Equal", d_tail, one), guard.op("Equal", t_tail, one)),
                        guard.op("Equal", d_tail, t_tail))
        guard.require(fits, "bidirectional: aligned dims must be equal or 1")


def _pdpd(guard: Guard, bound: Bound, d: str, target: str, big_r: str, axes: str | None,
          unidirectional: bool) -> None:
    r = guard.length(d)
    start = pdpd_start(guard, bound, big_r, r)
    guard.require(guard.at_least(big_r, start), "pdpd: the start axis must be within the target rank")
    guard.require(guard.at_least(start, guard.i64(0)), "pdpd: the start axis must not be negative")
    guard.require(guard.op("Equal", guard.op("Add", start, r), big_r),
                  "pdpd: the data must cover the target from the start axis to its end")
    tail = guard.slice(target, start, big_r)
    one = guard.i64(1)
    fits = guard.op("Or", guard.op("Equal", d, one), guard.op("Equal", d, tail))
    if not unidirectional:  # a target dim 1 takes the data's
        fits = guard.op("Or", fits, guard.op("Equal", tail, one))
    guard.require(fits, "pdpd: aligned dims must be equal or 1")


def pdpd_start(guard: Guard, bound: Bound, ra: str, rb: str) -> str:
    """``[start]``: where B (the data) starts in A (the target): ``axis``, or ``rank(A) - rank(B)`` for -1."""
    axis = int(bound.attrs["axis"])
    return guard.op("Sub", ra, rb) if axis == -1 else guard.i64(axis)


def _explicit(guard: Guard, bound: Bound, d: str, target: str, big_r: str, axes: str | None,
              unidirectional: bool) -> None:
    n = guard.length(axes)
    guard.require(guard.at_least(axes, guard.i64(0)), "explicit: axes_mapping must not be negative")
    guard.require(guard.op("Less", axes, big_r), "explicit: axes_mapping must lie within the target rank")
    later = guard.slice(axes, guard.i64(1), n)
    earlier = guard.slice(axes, guard.i64(0), guard.op("Sub", n, guard.i64(1)))
    guard.require(guard.op("Greater", later, earlier), "explicit: axes_mapping must be strictly increasing")
    mapped = guard.op("Gather", target, axes, axis=0)
    r, zero, one = guard.length(d), guard.i64(0), guard.i64(1)
    scalar_with_one_axis = guard.op("And", guard.op("Equal", r, zero), guard.op("Equal", n, one))
    guard.require(guard.op("Or", guard.op("Equal", n, r), scalar_with_one_axis),
                  "explicit: axes_mapping needs one axis per data dim (a scalar: none or one)")
    guard.require(guard.op("Or", guard.op("Greater", r, zero), guard.op("Equal", mapped, one)),
                  "explicit: a scalar's mapped target dim must be 1")
    fits = guard.op("Or", guard.op("Equal", d, one), guard.op("Equal", d, mapped))
    guard.require(fits, "explicit: each data dim must be 1 or equal its mapped target dim")


# each mode's run-time conditions (a mode of ops.broadcast_modes without an entry here fails tests/test_structure.py)
CONDITIONS: dict[str, Callable[[Guard, Bound, str, str, str, str | None, bool], None]] = {
    "numpy": _numpy, "explicit": _explicit, "bidirectional": _bidirectional, "pdpd": _pdpd}
