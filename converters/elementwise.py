"""Elementwise ops: the standard op of the same name, with B aligned first under pdpd.

* ``numpy``: the standard op itself (ONNX broadcasting is numpy's).
* ``none``: the standard op after the static check that both shapes are equal; with shapes known only at run
  time, a guard checks it then (B reshaped to itself after the check).
* ``pdpd``: B's axes past A's end (size 1 in a valid B) squeezed, then 1s unsqueezed before ``axis`` and after
  B's end, so numpy broadcasting meets B at ``axis``; needs A's and B's ranks, not their dims. With dims known
  only at run time, a guard checks that each aligned B dim is 1 or A's (the output is A's shape).

Before opset 12, ``LessOrEqual``/``GreaterOrEqual`` are written ``Or(Less, Equal)``; a type the standard op
only takes at a later opset, or that ONNX Runtime has no kernel for (``Max``/``Min`` of int16/uint16), is computed
on a wider type where that is exact, else refused with the opset named (both decided by the emitter). ``Pow``'s
narrow integer and uint64 exponents, which ONNX Runtime has no kernel for, are cast to double: the kernel computes
every integer exponent as a double.
"""

from __future__ import annotations

from onnx import TensorProto

from onnx_bcast.converters.guards import Guard, checked_b
from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.ops.elementwise import (
    ELEMENTWISE_OPS,
    POW_EXPONENTS_AS_DOUBLE,
    floors,
    form_depends_on_type,
    pdpd_axes_plan,
)
from onnx_bcast.ops.elementwise import RULES as AUTO_BROADCAST_RULES

_FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)
# ONNX Runtime's Div kernels trap on MIN / -1, and so do its Mod's (fmod=0) in 1.20 to 1.30 (measured; 1.32 not)
_TRAPPING_DIVISION = (TensorProto.INT32, TensorProto.INT64)
_FMOD_IN_DOUBLE = (TensorProto.INT64, TensorProto.UINT64)  # Mod fmod=1 through double in 1.20 to 1.30: see _exact_mod


class ElementwiseRule:
    """``Op<auto_broadcast=rule>(A, B) -> Op(A, aligned B)`` for one standard elementwise op."""

    def __init__(self, op: str, mode: str, guards: bool = False) -> None:
        self.op = op
        self.mode = mode
        self.guards = guards

    def check_arithmetic(self, bound: Bound) -> str | None:
        """What the standard op cannot compute, whatever the shapes and opset (none today: see ``rewrite``)."""
        return None

    def check(self, bound: Bound) -> str | None:
        reason = self.check_arithmetic(bound)
        if reason is None and self.mode == "pdpd":
            rank_a, rank_b = bound.rank(0), bound.rank(1)
            if rank_a is None or rank_b is None:
                raise bound.limit("converting pdpd needs the ranks of A and B; give the model's inputs static "
                                  "ranks (onnx shape inference found none)")
            axis = int(bound.attrs["axis"])
            start = rank_a - rank_b if axis == -1 else axis
            if rank_b > rank_a or axis < -1 or start > rank_a:
                return f"B of rank {rank_b} cannot align with A of rank {rank_a} at axis {axis}"
        return reason

    def rewrite(self, emit: Emitter, bound: Bound) -> None:
        if self.op == "Mod" and not int(bound.attrs["fmod"]) and bound.types[0] in _FLOAT_TYPES:
            emit.require(28, "Mod of floating-point inputs with fmod=0")  # ONNX defines it from Mod-28 on
        if self.op == "Div" and int(bound.attrs["pythondiv"]) and bound.types[0] is None:
            raise emit.limit("pythondiv=1 floors signed integers only: converting it needs A's element type (onnx "
                            "shape inference found none)")
        if bound.types[0] is None and bound.in_function and form_depends_on_type(self.op, emit.opset):
            raise emit.limit(f"the standard {self.op}-{emit.opset} is written per element type, which a function body "
                            "does not give (its call sites do)")
        form = emit.elementwise_form(self.op, bound.types[0])
        b = self.align_pdpd(emit, bound) if self.mode == "pdpd" else bound.inputs[1]
        if self.guards and bound.out_shape is None:
            b = checked_b(emit, bound, bound.inputs[0], b)
        if self.op == "Pow" and bound.types[1] in POW_EXPONENTS_AS_DOUBLE:
            b = emit.cast(b, TensorProto.DOUBLE)
        self.emit_standard(emit, bound, b, form)

    def emit_standard(self, emit: Emitter, bound: Bound, b: str, form: str) -> None:
        """The standard op on A and ``b``, B already aligned for numpy broadcasting."""
        attrs = {"fmod": int(bound.attrs["fmod"])} if self.op == "Mod" else {}
        wrapped = self.op in ("Div", "Mod") and form == "direct" and bound.types[0] in _TRAPPING_DIVISION \
            and not bound.division_proven_safe
        if self.op == "Mod" and form == "direct" and (wrapped or bound.types[0] in _FMOD_IN_DOUBLE):
            _exact_mod(emit, bound.inputs[0], b, bound.output, bound.types[0], attrs["fmod"], wrapped)
        elif floors(self.op, bound.attrs, bound.types[0]):
            _floor_div(emit, bound.inputs[0], b, bound.output, form, bound.types[0], wrapped)
        elif wrapped:
            _wrapped_div(emit, bound.inputs[0], b, bound.output, bound.types[0])
        else:
            emit.elementwise(self.op, bound.inputs[0], b, bound.output, form, bound.types[0], **attrs)

    def align_pdpd(self, emit: Emitter, bound: Bound) -> str:
        """B squeezed past A's end and unsqueezed to A's rank (ranks known: ``check`` said so)."""
        rank_a, rank_b, b = bound.rank(0), bound.rank(1), bound.inputs[1]
        axis = int(bound.attrs["axis"])
        squeeze, unsqueeze = pdpd_axes_plan(rank_a, rank_b, axis)
        start = rank_a - rank_b if axis == -1 else axis
        if not squeeze and unsqueeze == tuple(range(start)):
            return b  # numpy's right alignment already is the pdpd one
        if squeeze:
            if self.guards:  # a Squeeze that fails is no check: optimizers fold Squeeze + Unsqueeze away
                b = _checked_past_a(emit, bound, b, squeeze)
            b = emit.squeeze(b, squeeze)
        if unsqueeze:
            b = emit.unsqueeze(b, unsqueeze)
        return b


def _exact_mod(emit: Emitter, a: str, b: str, output: str | None, elem: int, fmod: int, wrapped: bool) -> str:
    """A signed or 64-bit integer ``Mod`` that no ONNX Runtime gets wrong: with ``wrapped`` the divisor -1 becomes 1
    (both remainders are 0; onnxruntime 1.20 to 1.30 die of SIGFPE on ``INT_MIN % -1`` with fmod=0); with fmod=1 on
    64-bit integers, which those versions compute through double (wrong past 2**53), ``a - Div(a, b) * b`` (int64:
    C's truncating quotient) or fmod=0 (uint64: the same remainder)."""
    if wrapped:
        _, b = _minus_one_as_one(emit, b, elem)
    if fmod and elem == TensorProto.INT64:
        product = emit.standard("Mul", [emit.standard("Div", [a, b]), b])
        return emit.standard("Sub", [a, product], output)
    return emit.standard("Mod", [a, b], output, fmod=0 if elem == TensorProto.UINT64 else fmod)


def _wrapped_div(emit: Emitter, a: str, b: str, output: str | None, elem: int) -> str:
    """``Where(b == -1, -a, Div(a, Where(b == -1, 1, b)))``: ONNX Runtime's int32/int64 ``Div`` dies of SIGFPE on
    the minimum divided by -1 (the x86 division traps); dividing by 1 there and negating instead gives the
    minimum, wrapped, as the kernel does (docs/ops.md). Scalar constants of the type, so no rank changes."""
    minus_one, divisor = _minus_one_as_one(emit, b, elem)
    quotient = emit.standard("Div", [a, divisor])
    return emit.standard("Where", [minus_one, emit.standard("Neg", [a]), quotient], output)


def _minus_one_as_one(emit: Emitter, b: str, elem: int) -> tuple[str, str]:
    """``(b == -1, Where(b == -1, 1, b))``: a divisor that never meets the trapping ``x / -1``, and where it was -1.
    Scalar constants of the type, so no rank changes."""
    minus_one = emit.standard("Equal", [b, emit.scalar(-1, elem)])
    return minus_one, emit.standard("Where", [minus_one, emit.scalar(1, elem), b])


def _floor_div(emit: Emitter, a: str, b: str, output: str, form: str, elem: int, wrapped: bool) -> None:
    """``q - (q * b != a and (a < 0) != (b < 0))`` with ``q = Div(a, b)`` (truncated; ``wrapped``: by
    ``_wrapped_div``): the floor quotient of signed integers (``q * b`` is in range, and the minimum divided by -1
    wraps as in the kernel). ``x < x - x`` is ``x < 0`` in x's own shape, with no constant of the type."""
    q = _wrapped_div(emit, a, b, None, elem) if wrapped else emit.elementwise("Div", a, b, None, form, elem)
    product = emit.elementwise("Mul", q, b, None, emit.elementwise_form("Mul", elem), elem)
    exact = emit.elementwise("Equal", product, a, None, emit.elementwise_form("Equal", elem), elem)
    signs = [emit.elementwise("Less", x, emit.elementwise("Sub", x, x, None, emit.elementwise_form("Sub", elem),
                                                            elem), None, emit.elementwise_form("Less", elem), elem)
             for x in (a, b)]
    adjust = emit.standard("And", [emit.standard("Not", [exact]), emit.standard("Xor", signs)])
    emit.elementwise("Sub", q, emit.cast(adjust, elem), output, emit.elementwise_form("Sub", elem), elem)


def _checked_past_a(emit: Emitter, bound: Bound, b: str, axes: tuple[int, ...]) -> str:
    """B after the check that its dims at ``axes`` (past A's end) are 1 (proven where they are known)."""
    guard = Guard(emit, bound)
    shape = emit.shape(b)
    past = guard.op("Gather", shape, guard.i64(*axes), axis=0)
    guard.require(guard.op("Equal", past, guard.i64(1)), "pdpd: B's dims past A's end must be 1")
    return guard.tied(b, shape)


def rules(guards: bool) -> list[ElementwiseRule]:
    return [ElementwiseRule(op, mode, guards) for op in ELEMENTWISE_OPS for mode in AUTO_BROADCAST_RULES]
