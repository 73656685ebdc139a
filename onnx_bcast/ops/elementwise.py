"""Elementwise ops with none/numpy/pdpd auto-broadcast: shape rule, numpy kernels and op specs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from onnx_bcast.errors import BroadcastError, LazyText, fmt_shape
from onnx_bcast.ops.common import Attr, Input, OpSpec, Shape, check_rank, read_array
from onnx_bcast.ops.memory_guard import check_output_size
from onnx_bcast.ops.ort_arithmetic import ELEMENTWISE_KERNELS, numpy_rule_shape

RULES = ("none", "numpy", "pdpd")
_ALIASES = {"explicit": "none"}


def canonical_rule(rule: str, op: str) -> str:
    """The canonical auto_broadcast name (case-insensitive, ``explicit`` is ``none``)."""
    name = rule.lower() if isinstance(rule, str) else ""
    name = _ALIASES.get(name, name)
    if name not in RULES:
        raise BroadcastError(op, str(rule), f"unknown auto_broadcast {rule!r}; expected none (explicit), numpy or "
                                            "pdpd", mode_attr="auto_broadcast")
    return name


def _fail(op: str, rule: str, detail: str, a: Shape, b: Shape) -> BroadcastError:
    return BroadcastError(op, rule, f"{detail}; A {fmt_shape(a)}, B {fmt_shape(b)}", mode_attr="auto_broadcast")


def pdpd_alignment(a: Shape, b: Shape, axis: int, op: str = "Add") -> Shape:
    """B's shape padded with 1s so that numpy broadcasting applies the pdpd rule (validated)."""
    ra, rb = len(a), len(b)
    if rb > ra:
        raise _fail(op, "pdpd", f"B's rank {rb} exceeds A's rank {ra}", a, b)
    if axis < -1:
        raise _fail(op, "pdpd", f"axis {axis} is below -1", a, b)
    start = ra - rb if axis == -1 else axis
    trimmed = list(b)
    while trimmed and trimmed[-1] == 1:
        trimmed.pop()
    if start + len(trimmed) > ra:
        raise _fail(op, "pdpd", f"B (trailing 1s ignored: {fmt_shape(trimmed)}) does not fit in A from axis {start}",
                    a, b)
    for k, bk in enumerate(trimmed):
        if bk != 1 and bk != a[start + k]:
            raise _fail(op, "pdpd", f"B dim {k} (size {bk}) must be 1 or equal A dim {start + k} (size "
                                    f"{a[start + k]})", a, b)
    return (1,) * start + tuple(trimmed) + (1,) * (ra - start - len(trimmed))


def elementwise_shape(a_shape: Any, b_shape: Any, *, auto_broadcast: str = "numpy", axis: int = -1,
                      op: str = "Add") -> Shape:
    """The output shape of an elementwise op under ``auto_broadcast``; validates, never allocates."""
    rule = canonical_rule(auto_broadcast, op)
    a, b = tuple(int(d) for d in a_shape), tuple(int(d) for d in b_shape)
    shapes = LazyText(lambda: f"A {fmt_shape(a)}, B {fmt_shape(b)}")
    check_rank(op, rule, "A", a, shapes, mode_attr="auto_broadcast")
    check_rank(op, rule, "B", b, shapes, mode_attr="auto_broadcast")  # the output's rank is the larger one
    if rule == "none":
        if a != b:
            raise _fail(op, rule, "shapes must be identical", a, b)
        return a
    if rule == "numpy":
        out = numpy_rule_shape(a, b)
        if out is None:
            raise _fail(op, rule, "shapes are not multidirectionally broadcastable", a, b)
        return out
    pdpd_alignment(a, b, int(axis), op)
    return a


def elementwise(op_type: str, a: Any, b: Any, *, auto_broadcast: str = "numpy", axis: int = -1,
                max_output_bytes: int | None = None, **attrs: Any) -> np.ndarray:
    """The numpy kernel of an elementwise op under ``auto_broadcast``: the standard op's arithmetic, bit for bit as
    ONNX Runtime's CPU kernel computes it (e.g. ``Div`` truncates, ``Pow`` calls C's ``powf``/``pow``).

    Pow's exponent may have its own type (the standard op's T1); the other ops take one element type.
    """
    if op_type not in ELEMENTWISE_KERNELS:
        known = ", ".join(ELEMENTWISE_KERNELS)
        raise BroadcastError(op_type, "", f"is not an elementwise op of onnx_bcast (known: {known})")
    rule = canonical_rule(auto_broadcast, op_type)
    a = read_array(a, op_type, rule, "A", mode_attr="auto_broadcast")
    b = read_array(b, op_type, rule, "B", mode_attr="auto_broadcast")
    if a.dtype != b.dtype and op_type != "Pow":
        raise _fail(op_type, rule, f"A and B must have one element type, got {a.dtype} and {b.dtype}", a.shape,
                    b.shape)
    out_shape = elementwise_shape(a.shape, b.shape, auto_broadcast=rule, axis=axis, op=op_type)
    check_output_size(op_type, rule, out_shape, a.dtype, max_output_bytes, mode_attr="auto_broadcast")
    if rule == "pdpd":
        b = b.reshape(pdpd_alignment(a.shape, b.shape, int(axis), op_type))
    try:
        with np.errstate(all="ignore"):
            out = ELEMENTWISE_KERNELS[op_type](a, b, **attrs)
    except ValueError as err:
        raise BroadcastError(op_type, rule, str(err), mode_attr="auto_broadcast") from None
    return np.asarray(out).reshape(out_shape) if np.shape(out) != out_shape else np.asarray(out)


def pdpd_axes_plan(rank_a: int, rank_b: int, axis: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """How ``Squeeze`` then ``Unsqueeze`` align B for pdpd when only the ranks are known.

    Returns (B's trailing axes to squeeze, the axes to unsqueeze afterwards). The squeezed axes are those that
    stick out past A's last axis; a valid B has size 1 there (trailing 1s are ignored by the rule).
    """
    start = rank_a - rank_b if axis == -1 else axis
    excess = max(0, start + rank_b - rank_a)
    squeeze = tuple(range(rank_b - excess, rank_b))
    kept = rank_b - excess
    unsqueeze = tuple(range(start)) + tuple(range(start + kept, rank_a))
    return squeeze, unsqueeze


ELEMENTWISE_OPS: tuple[str, ...] = tuple(ELEMENTWISE_KERNELS)  # every elementwise op of ours, written once there
COMPARISONS = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")
LOGICAL = ("And", "Or", "Xor")
STANDARD_OPSET = 26  # the newest default-domain opset ONNX Runtime 1.31 accepts: its type lists are ours


def standard_types(op: str, param: str = "T") -> tuple[str, ...]:
    """The input types of the standard ONNX op of the same name (its ``T``, or Pow's exponent ``T1``)."""
    schema = onnx.defs.get_schema(op, STANDARD_OPSET)
    return tuple(next(c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == param))


def _type_string(elem: int) -> str:
    return f"tensor({onnx.TensorProto.DataType.Name(elem).lower()})"


@functools.lru_cache(maxsize=1024)
def standard_accepts(op: str, opset: int, elem: int) -> bool:
    """Whether the standard op, as of default-domain ``opset``, takes inputs of ONNX element type ``elem``."""
    try:
        schema = onnx.defs.get_schema(op, opset)
    except onnx.defs.SchemaError:
        return False
    first = schema.inputs[0].type_str
    allowed = next((c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == first), ())
    return _type_string(elem) in allowed


# a type a standard op takes only at a later opset, and wider types whose values hold it exactly: the op computed
# there and cast back gives the same bits (integers wrap on the way back as they wrap in the narrow op; the
# half-precision floats round once, correctly, since float32 has more than twice their precision bits)
_T = onnx.TensorProto
_WIDER = {_T.INT8: (_T.INT32,), _T.UINT8: (_T.INT32,), _T.INT16: (_T.INT32,), _T.UINT16: (_T.INT32,),
          _T.INT32: (_T.INT64,), _T.UINT32: (_T.INT64,), _T.FLOAT16: (_T.FLOAT,), _T.BFLOAT16: (_T.FLOAT,)}
_EXACT_WHEN_WIDENED = {"Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", *COMPARISONS}
# types the standard op takes that ONNX Runtime's CPU provider has no kernel for (16-bit: 1.21 to 1.32; 8-bit: 1.21 to
# 1.23): written widened, which is exact, so that the converted model runs wherever the original runs
NO_RUNTIME_KERNEL = frozenset((op, elem) for op in ("Max", "Min") for elem in (_T.INT8, _T.UINT8, _T.INT16, _T.UINT16))
SIGNED_INTEGERS = frozenset({_T.INT8, _T.INT16, _T.INT32, _T.INT64})


def floors(op: str, attrs: dict[str, Any], elem: int | None) -> bool:
    """Whether the op floors rather than truncates: ``Div`` with ``pythondiv`` on signed integers (OpenVINO's
    ``m_pythondiv``); unsigned quotients and floats are the same either way."""
    return op == "Div" and bool(int(attrs.get("pythondiv", 0))) and elem in SIGNED_INTEGERS


# Pow exponent types (T1) ONNX Runtime has no kernel for: the kernel computes every integer exponent as a double
# (C's pow), so the converted model casts these to double, which computes the same bits
POW_EXPONENTS_AS_DOUBLE = frozenset({_T.INT8, _T.INT16, _T.UINT8, _T.UINT16, _T.UINT32, _T.UINT64})


def standard_form(op: str, opset: int, elem: int | None) -> str:
    """How the standard op is written at ``opset``: ``"direct"``, ``"or_strict_equal"`` (``A<B or A==B``), or
    ``"widen:<type>"`` (cast to that wider type, the op, cast back).

    Raises ``ValueError`` naming the opset needed when neither form exists for ``elem`` at ``opset``.
    """
    if elem is None or (standard_accepts(op, opset, elem) and (op, elem) not in NO_RUNTIME_KERNEL):
        return "direct"
    strict = {"LessOrEqual": "Less", "GreaterOrEqual": "Greater"}.get(op)
    if strict and standard_accepts(strict, opset, elem) and standard_accepts("Equal", opset, elem):
        return "or_strict_equal"  # exact, NaN included: both parts are false for NaN
    for wide in _WIDER.get(elem, ()) if op in _EXACT_WHEN_WIDENED else ():
        if standard_accepts(op, opset, wide) and standard_accepts("Cast", opset, elem):
            return f"widen:{wide}"
    newest = onnx.defs.onnx_opset_version()
    since = next((v for v in range(opset + 1, newest + 1) if standard_accepts(op, v, elem)), None)
    if since is None:
        raise ValueError(f"no version of the standard {op} takes {_type_string(elem)}")
    raise ValueError(f"standard {op} of {_type_string(elem)} needs default-domain opset >= {since}; the model uses "
                     f"opset {opset}")


@functools.cache
def form_depends_on_type(op: str, opset: int) -> bool:
    """Whether, at ``opset``, some element type the op takes is written otherwise than the standard op itself
    (widened, ``Or(Less, Equal)``, or refused): a node whose type is unknown (in a function) cannot be written."""
    for type_str in standard_types(op):
        elem = getattr(onnx.TensorProto, type_str[len("tensor("):-1].upper())
        try:
            if standard_form(op, opset, elem) != "direct":
                return True
        except ValueError:
            return True
    return False


def _kernel(op: str) -> Callable[[list[np.ndarray | None], dict[str, Any]], np.ndarray]:
    def run(inputs: list[np.ndarray | None], attrs: dict[str, Any], max_output_bytes: int | None = None) -> np.ndarray:
        extra = {name: int(attrs[name]) for name in ("fmod", "pythondiv") if name in attrs}
        return elementwise(op, inputs[0], inputs[1], auto_broadcast=attrs["auto_broadcast"], axis=int(attrs["axis"]),
                           max_output_bytes=max_output_bytes, **extra)
    return run


def _static_shape(op: str) -> Callable[..., Shape | None]:
    def infer(shapes: list[Shape | None], values: list[np.ndarray | None], attrs: dict[str, Any]) -> Shape | None:
        if len(shapes) < 2 or shapes[0] is None or shapes[1] is None:
            return None
        return elementwise_shape(shapes[0], shapes[1], auto_broadcast=attrs["auto_broadcast"],
                                 axis=int(attrs["axis"]), op=op)
    return infer


def _spec(op: str) -> OpSpec:
    attrs = [Attr("auto_broadcast", "string", "numpy", "none (explicit), numpy or pdpd"),
             Attr("axis", "int", -1, "pdpd: the axis of A that B's first axis meets; -1 aligns B to the right")]
    if op == "Mod":
        attrs.append(Attr("fmod", "int", 0, "as ONNX Mod: 1 for C fmod (sign of the dividend)"))
    if op == "Div":
        attrs.append(Attr("pythondiv", "int", 0, "OpenVINO's m_pythondiv: 1 floors signed integer quotients"))
    boolean_out = op in COMPARISONS or op in LOGICAL
    b_type = "T1" if op == "Pow" else "T"  # Pow's exponent has its own type, as in the standard op
    extra = (("T1", ("tensor(bool)",)),) if boolean_out else (("T1", standard_types(op, "T1")),) if b_type == "T1" \
        else ()
    return OpSpec(
        name=op,
        doc=f"The standard ONNX {op} with an OpenVINO/PaddlePaddle auto_broadcast rule.",
        inputs=(Input("A", "T", doc="the first operand"), Input("B", b_type, doc="the second operand")),
        attrs=tuple(attrs),
        type_constraints=(("T", standard_types(op)),) + extra,
        output_type_param="T1" if boolean_out else "T",
        kernel=_kernel(op),
        static_shape=_static_shape(op),
        mode_of=lambda attrs: str(attrs.get("auto_broadcast", "numpy")),
        mode_attr="auto_broadcast",
        family="elementwise",
    )


SPECS = tuple(_spec(op) for op in ELEMENTWISE_OPS)
