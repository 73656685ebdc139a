"""The 16 elementwise ops as OpenVINO's binary ops with ``auto_broadcast`` none/numpy/pdpd and the pdpd axis.

``Add Sub Mul Div Pow Max Min`` -> ``Add Subtract Multiply Divide Power Maximum Minimum`` (``Divide`` with
``m_pythondiv=False``: integers truncate as in ONNX), ``Mod`` -> ``FloorMod`` (fmod=0) / ``Mod`` (fmod=1),
comparisons -> ``Equal Less LessEqual Greater GreaterEqual``, ``And Or Xor`` -> ``LogicalAnd LogicalOr LogicalXor``.

pdpd with known ranks: B is first reshaped as docs/ops.md aligns it (trailing size-1 dims past A's end dropped, which
OpenVINO's shape inference does not do; size-1 dims appended up to A's end), so OpenVINO's pdpd rule applies with
axis -1. Measured on the CPU plugin (openvino 2026.4.1): an explicit pdpd axis fails to compile for float
comparisons and logical ops, and most ops fail where B does not reach A's last axis; aligned with axis -1 every op
compiles but float ``Mod`` ("Doesn't support broadcast type: pdpd"), which runs as numpy broadcasting of the aligned
B, as does a static size-1 B dim meeting a 0-size A dim (docs/ops.md accepts it, OpenVINO's pdpd does not). With an
unknown rank the node is OpenVINO's pdpd with the given axis.

8-bit integers (int8, uint8): ``Add Sub Mul Div Max Min Mod`` run in int32 and wrap back to 8 bits with
``BitwiseAnd`` (``(y & 255)`` for uint8, ``((y + 128) & 255) - 128`` for int8), so they wrap as ONNX Runtime and the
kernels do: OpenVINO's CPU plugin saturates 8-bit arithmetic (uint8 ``200 + 72`` gave 255, not 16) and does not
compile 8-bit ``Multiply``/``Divide``/``Maximum``/``Minimum`` under pdpd ("Cannot fallback on ngraph reference
implementation"). The int32 results are exact (at most 255 * 255); the wrap does not depend on how ``Convert``
narrows (the CPU plugin's wraps, the reference's need not). 8-bit ``Pow`` with an integer exponent runs in int32
too (so it compiles under pdpd): exact where the power fits 8 bits; past that ONNX Runtime casts a double out of
range (undefined in C) and the two differ.

float ``Div`` is marked with OpenVINO's ``disable_divide_conversion`` attribute (``EXACT_DIVIDE``): otherwise the
``ConvertDivide`` transformation makes it ``a * b**-1``, 1 ulp off for about a quarter of random float32 quotients.

``Pow`` with an exponent of another type: a float base converts the exponent to its type; an integer base is raised
in the exponent's float type and converted back (OpenVINO's Convert truncates toward zero, as ONNX Runtime does).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import openvino as ov

from onnx_bcast.errors import BroadcastError
from onnx_bcast.openvino.checks import check_elementwise
from onnx_bcast.openvino.graph import Output, attr, create, dims, fmt, i64, input_at, int_attr, is_static, ops
from onnx_bcast.ops.elementwise import LOGICAL, canonical_rule

#: onnx-bcast elementwise op -> OpenVINO op (``Mod`` by ``fmod``: ``OV_MOD``).
OV_OPS: dict[str, str] = {
    "Add": "Add", "Sub": "Subtract", "Mul": "Multiply", "Div": "Divide", "Pow": "Power", "Max": "Maximum",
    "Min": "Minimum", "Equal": "Equal", "Less": "Less", "LessOrEqual": "LessEqual", "Greater": "Greater",
    "GreaterOrEqual": "GreaterEqual", "And": "LogicalAnd", "Or": "LogicalOr", "Xor": "LogicalXor",
}

#: ONNX ``Mod``: fmod=0 takes the divisor's sign (OpenVINO ``FloorMod``), fmod=1 the dividend's (``Mod``).
OV_MOD: dict[int, str] = {0: "FloorMod", 1: "Mod"}


def align_pdpd(b: Output, da: tuple, db: tuple, axis: int) -> tuple[Output, tuple[int | None, ...]]:
    """B reshaped as docs/ops.md's pdpd rule aligns it, up to A's last axis: trailing size-1 dims past A's end dropped,
    size-1 dims appended, so that OpenVINO's pdpd rule with axis -1 (or numpy broadcasting) applies."""
    ra, rb = len(da), len(db)
    start = ra - rb if axis == -1 else axis
    stick_out = max(0, start + rb - ra)
    kept = rb - stick_out
    aligned = tuple(db[:kept]) + (1,) * (ra - start - kept)
    if is_static(db):
        return (b if aligned == tuple(db) else ops.reshape(b, i64(aligned), False).output(0)), aligned
    if stick_out:
        b = ops.squeeze(b, i64(range(kept, rb))).output(0)
    if len(aligned) > kept:
        b = ops.unsqueeze(b, i64(range(kept, len(aligned)))).output(0)
    return b, aligned


#: The rt_info key of OpenVINO's ``disable_divide_conversion`` (``NonconvertibleDivide``): without it the common
#: transformations rewrite a float ``Divide`` as ``Multiply(a, Power(b, -1))``, two roundings.
EXACT_DIVIDE = "nonconvertable_divide_0"

#: The ops computed in int32 for 8-bit integer inputs (see the module notes).
WIDENED_8BIT = frozenset({"Add", "Sub", "Mul", "Div", "Max", "Min", "Mod"})
_EIGHT_BIT = {ov.Type.i8: -128, ov.Type.u8: 0}  # the type's lowest value: the wrap's offset


def wrap_to(value: Output, elem: Any) -> Output:
    """An int32 ``value`` wrapped into the 8-bit integer type ``elem`` (two's complement, as numpy's cast)."""
    low = _EIGHT_BIT[elem]
    shifted = ops.subtract(value, ops.constant(np.int32(low))) if low else value
    wrapped = ops.bitwise_and(shifted, ops.constant(np.int32(255)))
    if low:
        wrapped = ops.add(wrapped, ops.constant(np.int32(low)))
    return ops.convert(wrapped, elem).output(0)


def _floored(q: Output, a: Output, b: Output, attributes: dict[str, Any]) -> Output:
    """The truncated quotient ``q`` of signed integers floored: minus 1 where ``q * b != a`` and the signs differ
    (OpenVINO's own ``m_pythondiv`` floors in its reference, but its CPU plugin truncates under numpy broadcasting)."""
    zero = ops.constant(np.zeros((), q.get_element_type().to_dtype()))
    rule = {k: v for k, v in attributes.items() if k != "m_pythondiv"}  # B meets A (or q) as in the division
    signs = create("LogicalXor", [ops.less(a, zero).output(0), ops.less(b, zero).output(0)], rule)[0]
    adjust = ops.logical_and(ops.not_equal(create("Multiply", [q, b], rule)[0], a), signs)
    return ops.subtract(q, ops.convert(adjust, q.get_element_type())).output(0)


def _may_be_minus_one(b: Output) -> bool:
    """Whether the divisor ``b`` may hold -1: anything but a constant without it."""
    node = b.get_node()
    return node.get_type_name() != "Constant" or bool(np.any(node.get_data() == -1))


def _without_trap(ov_op: str, a: Output, b: Output, attributes: dict[str, Any]) -> list[Output]:
    """``Divide`` or ``Mod`` by ``b * s`` with ``s = -1`` where ``b == -1`` (else 1), the quotient times ``s``: the
    CPU plugin's pdpd ``Divide`` and ``Mod`` of int32 (and of int64, which it computes in int32) die of SIGFPE on
    the minimum over -1, as the x86 division traps. Dividing by 1 there gives ``-a`` wrapped (the minimum) and a
    remainder of 0, as the kernels do (docs/ops.md); ``s`` has B's shape, so it meets A as B does."""
    dtype = a.get_element_type().to_dtype()
    minus_one = ops.equal(b, ops.constant(np.array(-1, dtype))).output(0)
    sign = ops.select(minus_one, ops.constant(np.array(-1, dtype)), ops.constant(np.array(1, dtype))).output(0)
    result = create(ov_op, [a, ops.multiply(b, sign).output(0)], attributes)[0]
    if ov_op == "Mod":  # a mod -1 and a mod 1 are both 0
        return [result]
    exact = {k: v for k, v in attributes.items() if k != "m_pythondiv"}
    return [create("Multiply", [result, sign], exact)[0]]


def _check_types(op: str, rule: str, a: Output, b: Output, fmod: int) -> None:
    ta, tb = a.get_element_type(), b.get_element_type()
    shapes = f"A {fmt(dims(a))}, B {fmt(dims(b))}"
    if op in LOGICAL and not (ta == tb == ov.Type.boolean):
        raise BroadcastError(op, rule, f"takes bool inputs, got {ta.get_type_name()} and {tb.get_type_name()}; "
                                       f"{shapes}", mode_attr="auto_broadcast")
    if op != "Pow" and ta != tb:
        raise BroadcastError(op, rule, f"A and B must have one element type, got {ta.get_type_name()} and "
                                       f"{tb.get_type_name()}; {shapes}", mode_attr="auto_broadcast")
    if op == "Mod" and fmod not in OV_MOD:
        raise BroadcastError(op, rule, f"fmod must be 0 or 1, got {fmod}", mode_attr="auto_broadcast")


def elementwise(ctx: Any, op: str) -> list[Output]:
    """One of the 16 elementwise ops under ``auto_broadcast`` none/numpy/pdpd."""
    rule = canonical_rule(attr(ctx, "auto_broadcast", "numpy"), op)
    axis = int_attr(ctx, "axis", -1, op, rule, "auto_broadcast")
    fmod = int_attr(ctx, "fmod", 0, op, rule, "auto_broadcast") if op == "Mod" else 0
    floor = op == "Div" and bool(int_attr(ctx, "pythondiv", 0, op, rule, "auto_broadcast"))
    a, b = input_at(ctx, 0), input_at(ctx, 1)
    _check_types(op, rule, a, b, fmod)
    ta, tb = a.get_element_type(), b.get_element_type()
    da, db = dims(a), dims(b)
    out_shape = check_elementwise(op, rule, axis, da, db)
    ov_op = OV_MOD[fmod] if op == "Mod" else OV_OPS[op]
    ov_rule, ov_axis = rule, axis
    if rule == "pdpd" and da is not None and db is not None:
        b, aligned = align_pdpd(b, da, db, axis)
        ov_axis = -1
        a_part = da[len(da) - len(aligned):]
        zero_meets_one = out_shape is not None and any(a_part[k] == 0 and y == 1 for k, y in enumerate(aligned))
        if (ov_op == "Mod" and ta.is_real()) or zero_meets_one:
            ov_rule = "numpy"
    convert_back, wrap = None, False
    if ta in _EIGHT_BIT and (op in WIDENED_8BIT or (op == "Pow" and not tb.is_real())):
        a, b, wrap = ops.convert(a, ov.Type.i32).output(0), ops.convert(b, ov.Type.i32).output(0), True
    elif op == "Pow" and ta != tb:
        if ta.is_real() or not tb.is_real():
            b = ops.convert(b, ta).output(0)
        else:  # an integer base, a float exponent: as ONNX Runtime, in floating point, truncated back
            a, convert_back = ops.convert(a, tb).output(0), ta
    attributes: dict[str, Any] = {"auto_broadcast": ov_rule}
    if ov_rule == "pdpd":
        attributes["auto_broadcast.auto_broadcast_axis"] = ov_axis
    if ov_op == "Divide":
        attributes["m_pythondiv"] = False
    if ov_rule == "pdpd" and ov_op in ("Divide", "Mod") and ta in (ov.Type.i32, ov.Type.i64) \
            and _may_be_minus_one(b):
        outputs = _without_trap(ov_op, a, b, attributes)
    else:
        outputs = create(ov_op, [a, b], attributes)
        if ov_op == "Divide":  # keep it a division: the CPU plugin's a * b**-1 is 1 ulp off for a quarter of floats
            outputs[0].get_node().get_rt_info()[EXACT_DIVIDE] = True
    if ov_op == "Divide":
        if floor and ta.is_integral() and ta.is_signed():
            outputs = [_floored(outputs[0], a, b, attributes)]
    if wrap:
        outputs = [wrap_to(outputs[0], ta)]
    elif convert_back is not None:
        outputs = [ops.convert(outputs[0], convert_back).output(0)]
    return outputs
