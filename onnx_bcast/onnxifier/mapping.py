"""OpenVINO IR ops (as onnxifier reads them: attributes as strings) to onnx_bcast nodes or plain ONNX nodes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from onnx import NodeProto, TensorProto, helper, numpy_helper

from onnx_bcast.errors import BroadcastError
from onnx_bcast.onnxifier.refusals import ir_flag
from onnx_bcast.ops.elementwise import NO_RUNTIME_KERNEL, SIGNED_INTEGERS, canonical_rule

DOMAIN = "onnx_bcast"

#: OpenVINO binary op -> (our elementwise op, its attributes). Mod is C's fmod (sign of the dividend): fmod=1.
BINARY: dict[str, tuple[str, dict[str, int]]] = {
    "Add": ("Add", {}), "Subtract": ("Sub", {}), "Multiply": ("Mul", {}), "Divide": ("Div", {}),
    "Power": ("Pow", {}), "Maximum": ("Max", {}), "Minimum": ("Min", {}), "Mod": ("Mod", {"fmod": 1}),
    "FloorMod": ("Mod", {"fmod": 0}), "Equal": ("Equal", {}), "NotEqual": ("Equal", {}), "Less": ("Less", {}),
    "LessEqual": ("LessOrEqual", {}), "Greater": ("Greater", {}), "GreaterEqual": ("GreaterOrEqual", {}),
    "LogicalAnd": ("And", {}), "LogicalOr": ("Or", {}), "LogicalXor": ("Xor", {}),
    "SquaredDifference": ("Sub", {}),
}
BROADCASTS = ("Broadcast",)
#: The pdpd axis as OpenVINO's serializer names it: elementwise ops, Broadcast-1, Broadcast-3.
AXIS_KEYS = ("auto_broadcast.auto_broadcast_axis", "mode.auto_broadcast_axis", "mode.mode.axis", "axis")
PYTHONDIV = ("cpu", "reference")  # the first is the default
_FLOATS = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)
#: integer Power: 8/16-bit bases as OpenVINO's CPU plugin computes them (ONNX's Pow takes none; measured, openvino
#: 2026.4): in float32, then 8-bit saturated (int8 3**5 is 127), 16-bit wrapped through int32 (uint16 7**9 is
#: 48968). int32/int64 stay ONNX's exact Pow, as their producers (ONNX, Paddle) mean it: the CPU plugin computes them
#: in float32 too (int32 7**9 is 40353608 there, int64 beyond int32 is -2**31), which no producer means. Unsigned
#: 32/64-bit bases (ONNX's Pow takes neither) are computed on int64 and cast back.
_SATURATED = (TensorProto.INT8, TensorProto.UINT8)
_THROUGH_INT32 = (TensorProto.INT16, TensorProto.UINT16)
_INTEGER_POWER = (*_SATURATED, *_THROUGH_INT32, TensorProto.UINT32, TensorProto.UINT64)

ElemType = Callable[[str], int]  # a tensor's ONNX element type (0: unknown)
#: A Divide's divisor or a Multiply's factor as ``Power(2, s)`` with a one-element base: (s, the base's shape).
PowerOfTwo = Callable[[str], "tuple[str, tuple[int, ...]] | None"]
#: Types whose shifts (a Multiply or floored Divide by ``Power(2, s)``) are computed exactly on int64.
_SHIFTED_ON_INT64 = (TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
                     TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32)


def _axis(attrs: dict[str, str], op: str, rule: str) -> int:
    for key in AXIS_KEYS:
        if key in attrs:
            try:
                return int(attrs[key])
            except ValueError:
                raise BroadcastError(op, rule, f"pdpd axis {attrs[key]!r} is not an integer") from None
    return -1


def broadcast(name: str, inputs: Sequence[str], outputs: Sequence[str], attrs: dict[str, str],
              version: str) -> list[NodeProto]:
    """Broadcast-1/-3 in every mode (Broadcast-1's ``none`` is explicit) -> ``onnx_bcast.Broadcast``."""
    mode = attrs.get("mode", "numpy").lower()
    mode = "explicit" if mode == "none" else mode
    extra = {"axis": _axis(attrs, "Broadcast", mode)} if mode == "pdpd" else {}
    kept = list(inputs[:3] if mode == "explicit" else inputs[:2])  # Broadcast-1 carries an ignored third input
    if mode == "explicit" and len(kept) < 3:
        raise BroadcastError("Broadcast", mode, f"({version}) has no axes_mapping input", name)
    return [helper.make_node("Broadcast", kept, list(outputs), name=name, domain=DOMAIN, mode=mode, **extra)]


def binary(op_type: str, name: str, inputs: Sequence[str], outputs: Sequence[str], attrs: dict[str, str],
           elem_type: ElemType, pythondiv: str = "cpu", power_of_two: PowerOfTwo | None = None
           ) -> list[NodeProto]:
    """One OpenVINO binary op with ``auto_broadcast`` (and the pdpd axis) as our op, or the standard op where it
    means the same (numpy broadcasting, same arithmetic), so that onnxifier's fusions still see it.

    Integer ``Divide m_pythondiv=true``: ``pythondiv="cpu"`` follows OpenVINO's CPU plugin (floor under pdpd, else
    truncation, which is what its ONNX, Paddle and JAX frontends mean by it), ``"reference"`` floors; a division by
    ``Power(2, s)`` (``power_of_two``: how OpenVINO writes ONNX's ``BitShift`` right) floors either way, and is
    computed as ONNX's ``BitShift`` right; a product with ``Power(2, s)`` as its ``BitShift`` left (``_shift``)."""
    if pythondiv not in PYTHONDIV:
        raise ValueError(f"pythondiv must be one of {PYTHONDIV}, got {pythondiv!r}")
    ours, extra = BINARY[op_type]
    rule = canonical_rule(attrs.get("auto_broadcast", "numpy"), ours)
    a, b = inputs[0], inputs[1]
    elem = elem_type(a)
    shift = power_of_two(b) if op_type in ("Divide", "Multiply") and power_of_two is not None else None
    if op_type == "Divide":
        floor = ir_flag(attrs.get("m_pythondiv", "true")) and (pythondiv == "reference" or rule == "pdpd"
                                                            or shift is not None)
        extra = {"pythondiv": 1} if floor and elem in SIGNED_INTEGERS else {}
        if floor and not elem:
            raise BroadcastError(ours, rule, f"Divide node {name!r} has m_pythondiv=true and an operand of unknown "
                                             "element type: floor or true division cannot be told", "auto_broadcast")
    rule_attrs = {"auto_broadcast": rule, **({"axis": _axis(attrs, ours, rule)} if rule == "pdpd" else {})}

    def node(op: str, ins: list[str], out: str, suffix: str = "", **more: int) -> NodeProto:
        # ours also where the plain op has no ONNX Runtime kernel for the type: convert writes it widened
        plain = rule == "numpy" and not more.get("pythondiv") and (op, elem) not in NO_RUNTIME_KERNEL
        if plain:
            return helper.make_node(op, ins, [out], name=name + suffix, **more)
        return helper.make_node(op, ins, [out], name=name + suffix, domain=DOMAIN, **rule_attrs, **more)

    out = outputs[0]
    if shift is not None and elem in _SHIFTED_ON_INT64 and (op_type == "Multiply" or floor
                                                             or elem not in SIGNED_INTEGERS):
        return _shift(name, a, *shift, out, elem, node, left=op_type == "Multiply")
    if op_type == "NotEqual":
        return [node("Equal", [a, b], f"{out}/equal", "/equal"), helper.make_node("Not", [f"{out}/equal"], [out],
                                                                                  name=name)]
    if op_type == "SquaredDifference":
        diff = node("Sub", [a, b], f"{out}/difference", "/difference")
        return [diff, helper.make_node("Mul", [diff.output[0], diff.output[0]], [out], name=name)]
    if op_type == "Power" and elem in _INTEGER_POWER:
        return _integer_power(name, a, b, out, elem, node)
    if op_type == "FloorMod" and elem in _FLOATS:
        return _float_floor_mod(name, a, b, out, elem, node)
    if op_type == "FloorMod" and not elem:
        raise BroadcastError(ours, rule, f"FloorMod node {name!r} has an operand of unknown element type",
                             name, "auto_broadcast")
    return [node(ours, [a, b], out, **extra)]


def _shift(name: str, x: str, exponent: str, base_shape: tuple[int, ...], out: str, elem: int,
           node: Callable[..., NodeProto], left: bool) -> list[NodeProto]:
    """``x * Power(2, s)`` or ``x / Power(2, s)`` floored, as ONNX's ``BitShift`` left or right means it, computed
    on int64 and cast back (wrapping): ``x * 2**s`` or ``floor(x / 2**s)``. Where ``s`` is negative or at least the
    bit width (the IR's power is 0 or has overflowed there) a left shift gives 0 and a right shift the sign fill, -1
    for a negative ``x`` and 0 otherwise. ``2**63`` is no int64: a shift beyond 62 is one of 62, then one of the
    rest (at most 1); below 64 bits a right shift of 62 already gives the sign fill."""
    def const(tag: str, value: int | np.ndarray) -> str:
        nodes.append(helper.make_node("Constant", [], [f"{out}/{tag}"], name=f"{name}/{tag}",
                                      value=numpy_helper.from_array(np.asarray(value, np.int64), f"{out}/{tag}")))
        return f"{out}/{tag}"

    def op(op_type: str, ins: list[str], tag: str, **attrs: int) -> str:
        nodes.append(helper.make_node(op_type, ins, [f"{out}/{tag}"], name=f"{name}/{tag}", **attrs))
        return f"{out}/{tag}"

    nodes: list[NodeProto] = []
    wide = elem == TensorProto.INT64
    two, zero = const("two", 2), const("zero", 0)
    # s on the shape of Power(2, s): the base's one element broadcast as the IR's Power broadcasts it
    s = op("Add", [op("Cast", [exponent], "s", to=TensorProto.INT64), const("base_zeros", np.zeros(base_shape))],
           "s_like_power")
    if left:
        width = const("width", np.iinfo(helper.tensor_dtype_to_np_dtype(elem)).bits)
        kept = op("And", [op("GreaterOrEqual", [s, zero], "not_negative"), op("Less", [s, width], "below_width")],
                  "in_range")
        shift = op("Where", [kept, s, zero], "shift")
    else:
        top = const("top", 63 if wide else 62)
        shift = op("Where", [op("Less", [s, zero], "negative"), top, op("Min", [s, top], "capped")], "shift")
    steps = [shift]
    if wide:
        first = op("Min", [shift, const("most", 62)], "first")
        steps = [first, op("Sub", [shift, first], "second")]
    result = x if wide else op("Cast", [x], "x", to=TensorProto.INT64)
    for k, step in enumerate(steps):
        factor = op("Pow", [two, step], f"factor{k}")
        if left and k == 0:  # out of range: times 0
            factor = op("Where", [kept, factor, zero], f"kept_factor{k}")
        nodes.append(node("Mul", [result, factor], f"{out}/product{k}", f"/product{k}") if left else
                     node("Div", [result, factor], f"{out}/quotient{k}", f"/quotient{k}", pythondiv=1))
        result = nodes[-1].output[0]
    return [*nodes, helper.make_node("Cast", [result], [out], name=name, to=elem)]


def _float_floor_mod(name: str, a: str, b: str, out: str, elem: int, node: Callable[..., NodeProto]
                     ) -> list[NodeProto]:
    """OpenVINO's reference FloorMod of floats, ``T(x - y * floor(x / y))`` computed in double, bit for bit."""
    def cast(x: str, to: int, tag: str) -> NodeProto:
        return helper.make_node("Cast", [x], [f"{out}/{tag}"], name=f"{name}/{tag}", to=to)

    xd, yd = cast(a, TensorProto.DOUBLE, "x"), cast(b, TensorProto.DOUBLE, "y")
    quotient = node("Div", [xd.output[0], yd.output[0]], f"{out}/quotient", "/quotient")
    floor = helper.make_node("Floor", quotient.output, [f"{out}/floor"], name=f"{name}/floor")
    product = node("Mul", [floor.output[0], yd.output[0]], f"{out}/product", "/product")
    rest = helper.make_node("Sub", [xd.output[0], product.output[0]], [f"{out}/rest"], name=f"{name}/rest")
    return [xd, yd, quotient, floor, product, rest, helper.make_node("Cast", rest.output, [out], name=name, to=elem)]


def _integer_power(name: str, a: str, b: str, out: str, elem: int, node: Callable[..., NodeProto]
                   ) -> list[NodeProto]:
    """An integer power ONNX's Pow does not take (``_INTEGER_POWER``): 8/16-bit as OpenVINO's CPU plugin computes it
    (``Pow`` of the operands as float32, then converted; exact where the result is below 2**24), unsigned 32/64-bit
    on int64."""
    via = TensorProto.FLOAT if elem in (*_SATURATED, *_THROUGH_INT32) else TensorProto.INT64
    nodes = [helper.make_node("Cast", [x], [f"{out}/{tag}_wide"], name=f"{name}/{tag}_wide", to=via)
             for x, tag in ((a, "base"), (b, "exponent"))]
    nodes.append(node("Pow", [n.output[0] for n in nodes], f"{out}/wide", "/wide"))
    result = nodes[-1].output[0]
    if elem in _SATURATED:
        info = np.iinfo(helper.tensor_dtype_to_np_dtype(elem))
        for bound, value in (("min", info.min), ("max", info.max)):
            nodes.append(helper.make_node("Constant", [], [f"{out}/{bound}"], name=f"{name}/{bound}",
                                          value=numpy_helper.from_array(np.array(value, np.float32), f"{out}/{bound}")))
        nodes.append(helper.make_node("Clip", [result, f"{out}/min", f"{out}/max"], [f"{out}/saturated"],
                                      name=f"{name}/saturated"))
        result = f"{out}/saturated"
    elif elem in _THROUGH_INT32:
        nodes.append(helper.make_node("Cast", [result], [f"{out}/int32"], name=f"{name}/int32", to=TensorProto.INT32))
        result = f"{out}/int32"
    return [*nodes, helper.make_node("Cast", [result], [out], name=name, to=elem)]
