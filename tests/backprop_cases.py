"""The case list of the backprop ops (issue 13), shared by tests/test_backprop_kernels.py and
tests/test_backprop_paths.py. No tests here.

A case is the *forward* problem written out by hand: for ``BroadcastBackprop`` the forward Broadcast's data shape,
target_shape, axes_mapping, mode and axis, and ``out``, the forward output's shape (which is delta's shape); for
``BroadcastV0Backprop`` the forward ``shape`` and ``broadcast_axes``; for ``Unbroadcast`` A's and B's shapes, the
rule and axis. ``out`` is written by hand from SPEC §2 and checked against the forward kernel in the kernel tests, so
a wrong hand-written shape and a wrong forward rule both show. An invalid case gives the delta shape that the
backprop op receives and the words its BroadcastError must contain (op, mode, the shapes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

BROADCAST_BACKPROP = "BroadcastBackprop"
V0_BACKPROP = "BroadcastV0Backprop"
UNBROADCAST = "Unbroadcast"
BACKPROP_OPS = (BROADCAST_BACKPROP, V0_BACKPROP, UNBROADCAST)

Shape = tuple[int, ...]


@dataclass(frozen=True)
class BpCase:
    """One backprop problem. ``out`` is delta's shape (the forward output's); ``error_words`` is empty for a valid
    case. ``data_shape``/``target``/``axes``/``axis`` describe the forward broadcast (BroadcastBackprop), ``shape``/
    ``broadcast_axes`` the forward v0 Broadcast, ``a_shape``/``b_shape``/``axis`` the forward elementwise op."""

    name: str
    op: str
    mode: str  # as written in the node ("" for BroadcastV0Backprop); canonical_mode gives the canonical spelling
    out: Shape
    data_shape: Shape = ()
    target: Shape | None = None
    axes: Shape | None = None  # None: no axes_mapping input at all
    axis: int = -1
    broadcast_axes: Shape = ()
    a_shape: Shape = ()
    b_shape: Shape = ()
    error_words: tuple[str, ...] = field(default_factory=tuple)

    @property
    def valid(self) -> bool:
        return not self.error_words

    @property
    def canonical_mode(self) -> str:
        m = self.mode.lower()
        if self.op == BROADCAST_BACKPROP:
            return "explicit" if m == "none" else m
        if self.op == UNBROADCAST:
            return "none" if m == "explicit" else m
        return ""

    @property
    def grad_shapes(self) -> tuple[Shape, ...]:
        """The shapes of the op's outputs."""
        if self.op == BROADCAST_BACKPROP:
            return (self.data_shape,)
        if self.op == V0_BACKPROP:
            return (tuple(n for i, n in enumerate(self.out) if i not in set(self.broadcast_axes)),)
        return (self.a_shape, self.b_shape)

    @property
    def n_summed(self) -> tuple[int, ...]:
        """Per output: how many delta elements each gradient element sums (the same for all its elements)."""
        size = math.prod(self.out)
        return tuple(size // math.prod(s) if math.prod(s) else 0 for s in self.grad_shapes)

    @property
    def head(self) -> str:
        """How the error message template starts for this op and mode."""
        if self.op == BROADCAST_BACKPROP:
            return f"{self.op}(mode={self.canonical_mode})"
        if self.op == UNBROADCAST:
            return f"{self.op}(auto_broadcast={self.canonical_mode})"
        return self.op

    def kernel_kwargs(self) -> dict:
        if self.op == BROADCAST_BACKPROP:
            return {"mode": self.mode, "axis": self.axis}
        if self.op == UNBROADCAST:
            return {"auto_broadcast": self.mode, "axis": self.axis}
        return {}


def fmt(shape: Shape) -> str:
    """A shape as SPEC's message template writes it."""
    return f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(str(d) for d in shape) + ")"


CASES: list[BpCase] = []


def _add(case: BpCase) -> None:
    assert all((c.op, c.name) != (case.op, case.name) for c in CASES), case.name
    CASES.append(case)


def bb(name: str, mode: str, data: Shape, target: Shape, out: Shape, axes: Shape | None = None, axis: int = -1,
       *, invalid: tuple[str, ...] = ()) -> None:
    """A BroadcastBackprop case. Valid: forward ``Broadcast(data, target, axes, mode, axis)`` has shape ``out``.
    Invalid: ``out`` is the (wrong) delta shape given, ``target`` unused; the words must be in the message."""
    words = (f"{BROADCAST_BACKPROP}(mode=",) + invalid if invalid else ()
    _add(BpCase(name, BROADCAST_BACKPROP, mode, out, data_shape=data, target=target, axes=axes, axis=axis,
                error_words=words))


def v0(name: str, out: Shape, broadcast_axes: Shape, *, invalid: tuple[str, ...] = ()) -> None:
    """A BroadcastV0Backprop case: the forward v0 Broadcast's ``shape`` (delta's shape) and ``broadcast_axes``."""
    words = (V0_BACKPROP,) + invalid if invalid else ()
    _add(BpCase(name, V0_BACKPROP, "", out, broadcast_axes=broadcast_axes, error_words=words))


def ub(name: str, rule: str, a: Shape, b: Shape, out: Shape, axis: int = -1, *, invalid: tuple[str, ...] = ()) -> None:
    """An Unbroadcast case: A, B and the forward output (delta's) shape."""
    words = (f"{UNBROADCAST}(auto_broadcast=",) + invalid if invalid else ()
    _add(BpCase(name, UNBROADCAST, rule, out, a_shape=a, b_shape=b, axis=axis, error_words=words))


# --- BroadcastBackprop, valid: (data, forward target, forward output = delta) -------------------------------------
# numpy
bb("numpy_31_to_236", "numpy", (3, 1), (2, 3, 6), (2, 3, 6))
bb("numpy_scalar_to_23", "numpy", (), (2, 3), (2, 3))
bb("numpy_scalar_to_scalar", "numpy", (), (), ())
bb("numpy_identity_no_sum", "numpy", (2, 3), (2, 3), (2, 3))
bb("numpy_new_leading_axes", "NumPy", (4,), (3, 2, 4), (3, 2, 4))
bb("numpy_11_to_57", "numpy", (1, 1), (5, 7), (5, 7))
bb("numpy_1_to_30", "numpy", (1,), (3, 0), (3, 0))  # zero copies: the gradient is 0
bb("numpy_10_to_40", "numpy", (1, 0), (4, 0), (4, 0))  # zero-size data
bb("numpy_scalar_to_0", "numpy", (), (0,), (0,))
# explicit (alias none)
bb("explicit_3_to_132", "explicit", (3,), (1, 3, 2), (1, 3, 2), (1,))
bb("explicit_stretch_31_to_233", "explicit", (3, 1), (2, 3, 3), (2, 3, 3), (1, 2))
bb("explicit_gap_23_to_243", "explicit", (2, 3), (2, 4, 3), (2, 4, 3), (0, 2))
bb("explicit_stretch_first_13_to_235", "explicit", (1, 3), (2, 3, 5), (2, 3, 5), (0, 1))
bb("explicit_scalar_empty_axes", "explicit", (), (2, 3), (2, 3), ())
bb("explicit_scalar_one_axis", "explicit", (), (1, 2), (1, 2), (0,))
bb("explicit_scalar_one_axis_last", "explicit", (), (2, 1), (2, 1), (1,))
bb("explicit_1_to_02", "explicit", (1,), (0, 2), (0, 2), (0,))
bb("explicit_0_to_20", "explicit", (0,), (2, 0), (2, 0), (1,))
bb("explicit_none_alias", "NONE", (2,), (2, 3), (2, 3), (0,))
# bidirectional: delta (the forward output) may be larger than the target
bb("bidi_31_with_216", "bidirectional", (3, 1), (2, 1, 6), (2, 3, 6))
bb("bidi_34_with_1_larger_than_target", "bidirectional", (3, 4), (1,), (3, 4))
bb("bidi_213_with_41", "bidirectional", (2, 1, 3), (4, 1), (2, 4, 3))
bb("bidi_15_with_31", "bidirectional", (1, 5), (3, 1), (3, 5))
bb("bidi_scalar_with_22", "bidirectional", (), (2, 2), (2, 2))
bb("bidi_20_with_11", "bidirectional", (2, 0), (1, 1), (2, 0))
bb("bidi_1_with_0", "bidirectional", (1,), (0,), (0,))
bb("bidi_scalar_with_empty_target", "bidirectional", (), (), ())
# pdpd
bb("pdpd_31_to_234_default_axis", "pdpd", (3, 1), (2, 3, 4), (2, 3, 4))
bb("pdpd_34_to_234_axis1", "pdpd", (3, 4), (2, 3, 4), (2, 3, 4), axis=1)
bb("pdpd_target_1_takes_data", "pdpd", (3, 5), (2, 3, 1), (2, 3, 5), axis=1)
bb("pdpd_13_with_411", "pdpd", (1, 3), (4, 1, 1), (4, 1, 3))
bb("pdpd_scalar_at_end", "pdpd", (), (2, 3), (2, 3), axis=2)
bb("pdpd_1_to_20", "pdpd", (1,), (2, 0), (2, 0), axis=1)
bb("pdpd_21_to_23_axis0", "pdpd", (2, 1), (2, 3), (2, 3), axis=0)

# --- BroadcastBackprop, invalid: (data_shape, delta shape) -------------------------------------------------------
bb("numpy_dim_mismatch", "numpy", (2, 3), None, (2, 4), invalid=("numpy", "(2, 3)", "(2, 4)"))
bb("numpy_delta_rank_too_small", "numpy", (2, 3), None, (3,), invalid=("numpy", "rank", "(2, 3)", "(3,)"))
bb("numpy_delta_1_where_data_3", "numpy", (3,), None, (3, 1), invalid=("numpy", "(3,)", "(3, 1)"))
bb("numpy_delta_0_where_data_2", "numpy", (2,), None, (0,), invalid=("numpy", "(2,)", "(0,)"))
bb("numpy_negative_data_dim", "numpy", (2, -1), None, (2, 3), invalid=("numpy", "negative", "(2, -1)"))
bb("numpy_axes_mapping_given", "numpy", (3,), None, (2, 3), (1,), invalid=("numpy", "axes_mapping", "explicit"))
bb("unknown_mode", "sideways", (3,), None, (2, 3), invalid=("sideways", "mode"))
bb("explicit_not_increasing", "explicit", (3, 2), None, (2, 3), (1, 0),
   invalid=("explicit", "strictly increasing", "(3, 2)", "(2, 3)"))
bb("explicit_axis_outside", "explicit", (3,), None, (3,), (1,), invalid=("explicit", "outside", "(3,)"))
bb("explicit_too_many_axes", "explicit", (3,), None, (2, 3), (0, 1), invalid=("explicit", "(3,)", "(2, 3)"))
bb("explicit_no_axes_mapping", "explicit", (3,), None, (2, 3), invalid=("explicit", "axes_mapping", "required"))
bb("explicit_dim_mismatch", "explicit", (3,), None, (1, 4, 2), (1,), invalid=("explicit", "(3,)", "(1, 4, 2)"))
bb("explicit_scalar_axis_not_1", "explicit", (), None, (2, 2), (0,), invalid=("explicit", "size 1", "(2, 2)"))
bb("bidi_delta_not_an_output", "bidirectional", (3, 4), None, (1, 4),
   invalid=("bidirectional", "(3, 4)", "(1, 4)"))
bb("bidi_mismatch", "bidirectional", (3,), None, (2,), invalid=("bidirectional", "(3,)", "(2,)"))
bb("bidi_delta_rank_below_data", "bidirectional", (1, 3), None, (3,), invalid=("bidirectional", "(1, 3)", "(3,)"))
bb("bidi_0_vs_3", "bidirectional", (0,), None, (3,), invalid=("bidirectional", "(0,)", "(3,)"))
bb("pdpd_not_covering", "pdpd", (3,), None, (2, 3, 4), axis=1, invalid=("pdpd", "cover", "(3,)", "(2, 3, 4)"))
bb("pdpd_axis_too_big", "pdpd", (), None, (2, 3), axis=3, invalid=("pdpd", "outside", "(2, 3)"))
bb("pdpd_delta_1_where_data_5", "pdpd", (3, 5), None, (2, 3, 1), axis=1,
   invalid=("pdpd", "(3, 5)", "(2, 3, 1)"))
bb("pdpd_dim_mismatch", "pdpd", (4,), None, (2, 3), axis=1, invalid=("pdpd", "(4,)", "(2, 3)"))

# --- BroadcastV0Backprop ----------------------------------------------------------------------------------------
v0("v0_23_axis0", (2, 3), (0,))
v0("v0_23_axis1", (2, 3), (1,))
v0("v0_scalar_from_22", (2, 2), (0, 1))
v0("v0_identity_no_axes", (2, 3), ())
v0("v0_234_axes02", (2, 3, 4), (0, 2))
v0("v0_234_axes_unordered", (2, 3, 4), (2, 0))
v0("v0_summed_axis_of_size1", (3, 1, 4), (1,))  # a new axis of size 1: removed, nothing added up
v0("v0_04_axis1", (0, 4), (1,))
v0("v0_20_axis1", (2, 0), (1,))  # zero copies: the gradient is 0
v0("v0_scalar_to_scalar", (), ())
v0("v0_axis_outside", (2, 3), (2,), invalid=("outside", "(2, 3)"))
v0("v0_negative_axis", (2, 3), (-1,), invalid=("(2, 3)",))
v0("v0_duplicate_axes", (2, 3), (0, 0), invalid=("duplicates", "(2, 3)"))

# --- Unbroadcast ------------------------------------------------------------------------------------------------
ub("none_23", "none", (2, 3), (2, 3), (2, 3))
ub("none_scalars", "none", (), (), ())
ub("none_03_explicit_alias", "EXPLICIT", (0, 3), (0, 3), (0, 3))
ub("numpy_213_41", "numpy", (2, 1, 3), (4, 1), (2, 4, 3))
ub("numpy_scalar_22", "numpy", (), (2, 2), (2, 2))
ub("numpy_01_13", "numpy", (0, 1), (1, 3), (0, 3))
ub("numpy_3_21", "numpy", (3,), (2, 1), (2, 3))
ub("numpy_23_scalar", "numpy", (2, 3), (), (2, 3))
ub("numpy_1_0", "numpy", (1,), (0,), (0,))
ub("pdpd_234_3_axis1", "pdpd", (2, 3, 4), (3,), (2, 3, 4), 1)
ub("pdpd_234_31_default_axis", "pdpd", (2, 3, 4), (3, 1), (2, 3, 4))  # axis 1 from ranks before trimming
ub("pdpd_23_scalar", "pdpd", (2, 3), (), (2, 3))
ub("pdpd_203_13_axis1", "pdpd", (2, 0, 3), (1, 3), (2, 0, 3), 1)
ub("pdpd_234_41_axis2", "pdpd", (2, 3, 4), (4, 1), (2, 3, 4), 2)  # trimmed B (4,) fits at axis 2
ub("pdpd_23_23_axis0", "pdpd", (2, 3), (2, 3), (2, 3), 0)
ub("pdpd_234_23_axis0", "pdpd", (2, 3, 4), (2, 3), (2, 3, 4), 0)
ub("pdpd_234_11_all_trimmed", "pdpd", (2, 3, 4), (1, 1), (2, 3, 4))
ub("pdpd_20_1_meets_0", "pdpd", (2, 0), (1,), (2, 0))
ub("none_shapes_differ", "none", (2, 3), (3,), (2, 3), invalid=("none", "(2, 3)", "(3,)"))
ub("numpy_not_broadcastable", "numpy", (2, 3), (4, 3), (2, 3), invalid=("numpy", "(2, 3)", "(4, 3)"))
ub("numpy_delta_not_the_output", "numpy", (2, 3), (3,), (2, 4), invalid=("numpy", "(2, 4)", "(2, 3)", "(3,)"))
ub("numpy_delta_is_b_shape", "numpy", (1,), (3,), (1,), invalid=("numpy", "(1,)", "(3,)"))
ub("numpy_negative_a_dim", "numpy", (2, -3), (3,), (2, 3), invalid=("numpy", "negative", "(2, -3)"))
ub("pdpd_b_rank_above_a", "pdpd", (3,), (2, 3), (3,), invalid=("pdpd", "rank", "(3,)", "(2, 3)"))
ub("pdpd_dim_mismatch", "pdpd", (2, 3, 4), (4,), (2, 3, 4), 1, invalid=("pdpd", "(2, 3, 4)", "(4,)"))
ub("pdpd_b0_on_a1", "pdpd", (2, 1), (0,), (2, 1), 1, invalid=("pdpd", "(2, 1)", "(0,)"))
ub("pdpd_trimmed_b_does_not_fit", "pdpd", (2, 3), (3, 2), (2, 3), 1, invalid=("pdpd", "fit", "(2, 3)", "(3, 2)"))
ub("pdpd_delta_not_a_shape", "pdpd", (2, 3), (3,), (4, 3), invalid=("pdpd", "(4, 3)", "(2, 3)"))

VALID = [c for c in CASES if c.valid]
INVALID = [c for c in CASES if not c.valid]


def cases_of(op: str, valid: bool | None = None) -> list[BpCase]:
    return [c for c in CASES if c.op == op and (valid is None or c.valid == valid)]
