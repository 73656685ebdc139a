"""Read-time docs/ops.md checks on what OpenVINO knows when it reads a node; an invalid node is a BroadcastError.

Each check runs onnx-bcast's own shape rule. Where some dims or values are known only at run time, the rule runs
with every unknown dim set to the size that fits best, so an error found then holds for every size they can take
(the message says so), and no valid model is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from onnx_bcast.errors import BroadcastError
from onnx_bcast.openvino.graph import Dims, fmt, is_static
from onnx_bcast.ops.broadcast import broadcast_shape
from onnx_bcast.ops.broadcast_v0 import broadcast_v0_shape
from onnx_bcast.ops.elementwise import elementwise_shape

Shape = tuple[int, ...]


def explained(err: BroadcastError, known: str) -> BroadcastError:
    """``err`` from a check with unknown dims set to the sizes that fit best: it holds for every size."""
    return BroadcastError(err.op, err.mode, f"{err.detail} [checked when reading the model with {known}; each "
                                            "unknown dim taken as the size that fits best]", err.node, err.mode_attr)


def check_broadcast(op: str, mode: str, axis: int, d: Dims, t: Shape | None, t_rank: int | None,
                    a: Shape | None, axes_at_run_time: bool) -> Shape | None:
    """Broadcast/Expand: the exact output shape where everything is known, else None after checking the known
    part (``t``: target values, ``t_rank``: their count where only that is known; ``a``: axes_mapping values)."""
    if is_static(d) and t is not None and not axes_at_run_time:
        return broadcast_shape(d, t, a, mode=mode, axis=axis, op=op)
    if t_rank is None and t is None:
        if mode != "explicit" or a is None:
            return None
        t_rank = max(a, default=-1) + 1  # only the order of the axes can be checked
    if d is not None:
        d_rep = tuple(1 if x is None else x for x in d)  # a size-1 data dim passes every per-dim check
    elif mode == "explicit":
        if a is None:
            return None
        d_rep = (1,) * len(a)
    elif mode == "pdpd" and axis != -1 and 0 <= axis <= t_rank:
        d_rep = (1,) * (t_rank - axis)
    else:
        d_rep = ()
    if t is not None:
        t_rep = t
    elif mode == "explicit":
        if a is None:
            return None
        rep = [1] * t_rank
        for k, ak in enumerate(a):
            if 0 <= ak < t_rank and k < len(d_rep):
                rep[ak] = d_rep[k]
        t_rep = tuple(rep)
    else:
        start = t_rank - len(d_rep) if mode != "pdpd" or axis == -1 else axis
        fits = mode != "bidirectional" and 0 <= start and start + len(d_rep) == t_rank
        t_rep = (1,) * start + d_rep if fits else (1,) * t_rank
    try:
        broadcast_shape(d_rep, t_rep, a, mode=mode, axis=axis, op=op)
    except BroadcastError as err:
        values = f"target_shape {list(t)}" if t is not None else f"{t_rank} target_shape values known at run time"
        axes = "" if mode != "explicit" else f", axes_mapping {list(a)}" if a is not None else ", run-time axes"
        raise explained(err, f"data {fmt(d)}, {values}{axes}") from None
    return None


def check_v0(op: str, d: Dims, shape: Sequence[int], axes: Sequence[int]) -> Shape | None:
    """BroadcastV0: the output shape where ``arg``'s shape is static, else None after the check."""
    if is_static(d):
        return broadcast_v0_shape(d, shape, axes, op)
    required = [s for i, s in enumerate(shape) if i not in set(axes)]
    d_rep = list(required) if d is None else [required[k] if x is None and k < len(required) else x
                                              for k, x in enumerate(d)]
    try:
        broadcast_v0_shape([1 if x is None else x for x in d_rep], shape, axes, op)
    except BroadcastError as err:
        raise explained(err, f"arg {fmt(d)}") from None
    return None


def deduced_like_axes(d: Dims, like: Dims) -> Shape | None:
    """nGraph's left-aligned deduction of BroadcastLike's axes where the dims it reads are known, else None."""
    if d is None or like is None:
        return None
    axes = []
    for i, li in enumerate(like):
        if i >= len(d):
            axes.append(i)
        elif d[i] is None or d[i] == 1:
            if li is None or (d[i] is None and li > 1):
                return None
            if d[i] == 1 and li > 1:
                axes.append(i)
    return tuple(axes)


def check_like_v0(op: str, d: Dims, like: tuple[int | None, ...], axes: Sequence[int]) -> Shape | None:
    """BroadcastLikeV0 with its axes: the output shape where both shapes are static, else None after the check."""
    if is_static(d) and is_static(like):
        return broadcast_v0_shape(d, like, axes, op)
    kept = [i for i in range(len(like)) if i not in set(axes)]
    like_rep = list(like)
    d_rep = [like[i] for i in kept] if d is None else list(d)
    for k, i in enumerate(kept[:len(d_rep)]):
        like_rep[i] = d_rep[k] if like_rep[i] is None else like_rep[i]
        d_rep[k] = like_rep[i] if d_rep[k] is None else d_rep[k]
    try:
        broadcast_v0_shape([1 if x is None else x for x in d_rep], [1 if x is None else x for x in like_rep],
                           axes, op)
    except BroadcastError as err:
        raise explained(err, f"arg {fmt(d)}, like_arg {fmt(like)}") from None
    return None


def check_elementwise(op: str, rule: str, axis: int, da: Dims, db: Dims) -> Shape | None:
    """The 16 elementwise ops: the output shape where both shapes are static, else None after the check."""
    if is_static(da) and is_static(db):
        return elementwise_shape(da, db, auto_broadcast=rule, axis=axis, op=op)
    if da is None or db is None:
        return None
    if rule == "numpy":
        a_rep, b_rep = [1 if x is None else x for x in da], [1 if x is None else x for x in db]
    elif rule == "none":
        a_rep = [x if x is not None else (db[i] if i < len(db) and db[i] is not None else 1) for i, x in
                 enumerate(da)]
        b_rep = [x if x is not None else (a_rep[i] if i < len(a_rep) else 1) for i, x in enumerate(db)]
    else:
        b_rep = [1 if x is None else x for x in db]
        start = len(da) - len(db) if axis == -1 else axis
        a_rep = [x if x is not None else (db[i - start] if 0 <= i - start < len(db) and db[i - start] is not None
                                          else 1) for i, x in enumerate(da)]
    try:
        elementwise_shape(a_rep, b_rep, auto_broadcast=rule, axis=axis, op=op)
    except BroadcastError as err:
        raise explained(err, f"A {fmt(da)}, B {fmt(db)}") from None
    return None
