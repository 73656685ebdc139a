"""Elementwise ops with none/numpy/pdpd auto-broadcast: shape rule, numpy kernels and op specs."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from onnx_bcast.errors import BroadcastError, fmt_shape
from onnx_bcast.memory_guard import check_output_size
from onnx_bcast.ops.broadcast import check_rank, read_array
from onnx_bcast.ops.common import Attr, Input, OpSpec, Shape

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


def _numpy_rule_shape(op: str, a: Shape, b: Shape) -> Shape:
    """ONNX multidirectional broadcasting, for any rank (``np.broadcast_shapes`` stops at 32 dims)."""
    rank = max(len(a), len(b))
    out = []
    for x, y in zip((1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b, strict=True):
        if x != y and x != 1 and y != 1:
            raise _fail(op, "numpy", "shapes are not multidirectionally broadcastable", a, b)
        out.append(y if x == 1 else x)
    return tuple(out)


def elementwise_shape(a_shape: Any, b_shape: Any, *, auto_broadcast: str = "numpy", axis: int = -1,
                      op: str = "Add") -> Shape:
    """The output shape of an elementwise op under ``auto_broadcast``; validates, never allocates."""
    rule = canonical_rule(auto_broadcast, op)
    a, b = tuple(int(d) for d in a_shape), tuple(int(d) for d in b_shape)
    shapes = f"A {fmt_shape(a)}, B {fmt_shape(b)}"
    check_rank(op, rule, "A", a, shapes, mode_attr="auto_broadcast")
    check_rank(op, rule, "B", b, shapes, mode_attr="auto_broadcast")  # the output's rank is the larger one
    if rule == "none":
        if a != b:
            raise _fail(op, rule, "shapes must be identical", a, b)
        return a
    if rule == "numpy":
        return _numpy_rule_shape(op, a, b)
    pdpd_alignment(a, b, int(axis), op)
    return a


# ---------------------------------------------------------------------------------------------------------------
# How ONNX Runtime's CPU kernels compute, as far as it shows in the values (measured on onnxruntime 1.32, x86-64).
# Its binary elementwise kernels walk the output in spans; per span either input may be a single repeated value
# ("input0scalar" / "input1scalar") or both are runs ("general"). Pow squares or cubes by multiplication when the
# exponent is such a repeated 2 or 3, and Max/Min break +0/-0 ties differently in Eigen's SSE packets than in its
# scalar loop. Both depend on the span layout, which _ort_layout reproduces. Not reproduced: a large output that is
# one single span is cut into chunks for ORT's thread pool (from about 10^5 elements, depending on the threads),
# which moves some Max/Min ties of float32/float64 from packet to scalar code; and builds other than x86-64.


def _ort_layout(a_shape: Shape, b_shape: Shape) -> tuple[str, int]:
    """(kind, span length) of ONNX Runtime's two-input broadcaster for inputs of these shapes.

    Walking the right-aligned dims from the innermost: the first span is the innermost stretch of output dims over
    which neither input switches between being repeated (its dim is 1) and being walked (its dim is > 1); output
    dims of size 1 are skipped. An input that is repeated over that stretch is the span's scalar.
    """
    inner_a, inner_b = tuple(reversed(a_shape)), tuple(reversed(b_shape))
    shared, rank = min(len(inner_a), len(inner_b)), max(len(inner_a), len(inner_b))

    class Walk:  # one input's first stretch: is it repeated there, and how many output elements it covers
        def __init__(self, dim: int, out_dim: int) -> None:
            self.repeated, self.span, self.open = dim <= 1, out_dim, True

        def add(self, dim: int, out_dim: int) -> None:
            if self.open and (dim <= 1) == self.repeated:
                self.span *= out_dim
            else:
                self.open = False

    k = 0
    if shared == 0:  # a rank-0 input is repeated over the other's innermost dim
        dim = (inner_a or inner_b or (1,))[0]
        walk_a = Walk(1 if not inner_a else dim, dim)
        walk_b = Walk(1 if not inner_b else dim, dim)
        k = 1
    else:
        while max(inner_a[k], inner_b[k]) == 1 and k + 1 < shared:
            k += 1
        out_dim = max(inner_a[k], inner_b[k])
        walk_a, walk_b = Walk(inner_a[k], out_dim), Walk(inner_b[k], out_dim)
        k += 1
    for i in range(k, rank):
        da = inner_a[i] if i < len(inner_a) else 1
        db = inner_b[i] if i < len(inner_b) else 1
        out_dim = max(da, db)
        if i < shared and out_dim == 1:
            continue  # within the shared dims, an output dim of 1 changes nothing
        walk_a.add(da, out_dim)
        walk_b.add(db, out_dim)
    kind = "input0scalar" if walk_a.repeated else "input1scalar" if walk_b.repeated else "general"
    return kind, min(walk_a.span, walk_b.span)


_SSE_BYTES = 16  # Eigen's packet width in ONNX Runtime's x86-64 build (4 float32s, 2 float64s)


def _ort_packet_mask(out_shape: Shape, itemsize: int, span: int) -> np.ndarray:
    """Which output elements Eigen computes in SSE packets rather than in its scalar loop.

    Per span, Eigen runs scalar code up to the first 16-byte aligned output address (ONNX Runtime's buffers start
    aligned), packets while a whole one fits, and scalar code for the tail.
    """
    lanes = _SSE_BYTES // itemsize
    pos = np.arange(int(np.prod(out_shape, dtype=np.int64)), dtype=np.int64)
    start, j = pos - pos % span, pos % span
    head = np.minimum((lanes - start % lanes) % lanes, span)
    end = head + (span - head) // lanes * lanes
    return ((j >= head) & (j < end)).reshape(out_shape)


def _max_min(is_max: bool) -> Callable[..., np.ndarray]:
    """ONNX Runtime's Max/Min: NaN propagates; a +0/-0 tie gives Eigen's first operand in scalar code, its second
    in SSE packets (float32/float64; float16 is all scalar). Eigen's first operand is B when A is the span's scalar.
    """
    def run(a: np.ndarray, b: np.ndarray, **_: Any) -> np.ndarray:
        if a.dtype.kind != "f" and a.dtype.name != "bfloat16":
            return np.maximum(a, b) if is_max else np.minimum(a, b)
        out_shape = _numpy_rule_shape("Max" if is_max else "Min", a.shape, b.shape)
        if not np.prod(out_shape, dtype=np.int64):
            return np.empty(out_shape, a.dtype)
        kind, span = _ort_layout(a.shape, b.shape)
        first, second = (b, a) if kind == "input0scalar" else (a, b)
        if a.dtype in (np.float32, np.float64):
            in_packet = _ort_packet_mask(out_shape, a.dtype.itemsize, span)
        else:
            in_packet = np.zeros(out_shape, bool)
        wins, loses = (first > second, first < second) if is_max else (first < second, first > second)
        tie = ~wins & ~loses
        take_first = np.isnan(first) | (~np.isnan(second) & (wins | (tie & ~in_packet)))
        return np.where(take_first, first, second)
    return run


@functools.cache
def _libm() -> Any:
    """The C math library, whose ``powf``/``pow`` ONNX Runtime's Pow calls (through ``std::pow``), or None."""
    for name in (ctypes.util.find_library("m"), "ucrtbase", "msvcrt"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        for fn, ctype in ((lib.powf, ctypes.c_float), (lib.pow, ctypes.c_double)):
            fn.restype, fn.argtypes = ctype, [ctype, ctype]
        return lib
    return None


_C_POW_CHUNK = 1 << 16  # elements converted to Python floats at a time


def _c_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The C library's ``powf`` (float32 x and y) or ``pow`` (float64) elementwise; numpy's power without one."""
    lib = _libm()
    if lib is None:
        return np.power(x, y)
    fn = lib.powf if x.dtype == np.float32 else lib.pow
    xs, ys = x.reshape(-1), y.reshape(-1)
    out = np.empty(xs.size, x.dtype)
    for i in range(0, xs.size, _C_POW_CHUNK):
        part = slice(i, i + _C_POW_CHUNK)
        out[part] = np.fromiter(map(fn, xs[part].tolist(), ys[part].tolist()), x.dtype, count=len(out[part]))
    return out.reshape(x.shape)


def _is_half(dtype: np.dtype) -> bool:
    return dtype == np.float16 or dtype.name == "bfloat16"


def _float_to_int(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """C's ``static_cast`` of doubles to an integer type as x86-64 does it: truncation toward zero, and the type's
    minimum (the "integer indefinite" value) for NaN and for anything out of range."""
    info = np.iinfo(dtype)
    whole = np.trunc(values)
    fits = (whole >= float(info.min)) & (whole < float(info.max) + 1.0)  # max + 1 is a power of two: exact
    out = np.where(fits, whole, 0).astype(dtype)
    out[~fits] = info.min
    return out


def _pow(a: np.ndarray, b: np.ndarray, **_: Any) -> np.ndarray:
    """ONNX Runtime's Pow: ``static_cast<T>(std::pow(x, y))`` in the base's type T.

    float16 (and bfloat16) operands run as float32 (ONNX Runtime casts them around the float32 kernel). With both
    operands float32 it is C's ``powf``; in every other combination C++ promotes to double (``pow``), and the cast
    back truncates integers (NaN and out-of-range give the type's minimum). Where the exponent is the span's
    repeated value and equals 2 or 3, the result is ``x * x`` or ``x * x * x`` in T (integers wrap).
    """
    base_type = a.dtype
    for dtype in (a.dtype, b.dtype):
        if dtype.kind not in "iuf" and not _is_half(dtype):
            raise ValueError(f"takes numeric inputs, got {a.dtype} and {b.dtype}")
    work = np.dtype(np.float32) if _is_half(base_type) else base_type
    x = a.astype(work, copy=False)
    y = b.astype(np.float32, copy=False) if _is_half(b.dtype) else b
    out_shape = _numpy_rule_shape("Pow", x.shape, y.shape)
    x, y = np.broadcast_to(x, out_shape), np.broadcast_to(y, out_shape)
    out = np.empty(out_shape, work)
    by_pow = np.ones(out_shape, bool)
    if out.size and _ort_layout(a.shape, b.shape)[0] == "input1scalar":
        square, cube = y == 2, y == 3
        out[square] = x[square] * x[square]
        out[cube] = x[cube] * x[cube] * x[cube]
        by_pow = ~(square | cube)
    if work == np.float32 and y.dtype == np.float32:
        out[by_pow] = _c_pow(x[by_pow], y[by_pow])
    else:
        power = _c_pow(x[by_pow].astype(np.float64), y[by_pow].astype(np.float64))
        out[by_pow] = power.astype(work) if work.kind == "f" else _float_to_int(power, work)
    return out.astype(base_type, copy=False)


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's integer division (truncates toward zero); the minimum divided by -1 wraps to the minimum."""
    if np.any(b == 0):
        raise ValueError("integer division by zero")
    if a.dtype.kind == "i":  # x / -1 is -x (wrapping); dividing by 1 there instead keeps numpy away from the overflow
        minus_one = b == -1
        q = _trunc_div(a, np.where(minus_one, 1, b).astype(b.dtype))
        return np.where(minus_one, np.negative(a), q)
    return _trunc_div(a, b)


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    q = np.floor_divide(a, b)
    return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0))).astype(q.dtype)


def _div(a: np.ndarray, b: np.ndarray, **_: Any) -> np.ndarray:
    if a.dtype.kind in "iu":
        return _int_div(a, b)
    return np.divide(a, b)


def _floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ONNX Mod-28 with fmod=0 on floats, as ONNX Runtime computes it: ``fmod``, plus B where the remainder's sign
    differs from B's; a zero remainder takes B's sign; B = ±0 or A = ±inf gives NaN; A finite and B = ±inf gives A
    when their signs agree, else B."""
    rem = np.fmod(a, b)
    rem = np.where((rem != 0) & ((rem < 0) != (b < 0)), rem + b, rem)
    return np.where(rem == 0, np.copysign(np.zeros((), rem.dtype), b), rem)


def _mod(a: np.ndarray, b: np.ndarray, fmod: int = 0, **_: Any) -> np.ndarray:
    if a.dtype.kind in "iu":
        if np.any(b == 0):
            raise ValueError("integer modulo by zero")
        if a.dtype.kind == "i":  # x mod -1 is 0 either way; mod 1 keeps numpy away from the minimum's overflow
            b = np.where(b == -1, 1, b).astype(b.dtype)
        return np.fmod(a, b) if fmod else np.mod(a, b)
    return np.fmod(a, b) if fmod else _floor_mod(a, b)


def _logical(fn: Callable) -> Callable:
    def run(a: np.ndarray, b: np.ndarray, **_: Any) -> np.ndarray:
        if a.dtype != np.bool_ or b.dtype != np.bool_:
            raise ValueError(f"takes bool inputs, got {a.dtype} and {b.dtype}")
        return fn(a, b)
    return run


def _plain(fn: Callable) -> Callable:
    return lambda a, b, **_: fn(a, b)


ARITHMETIC: dict[str, Callable[..., np.ndarray]] = {
    "Add": _plain(np.add), "Sub": _plain(np.subtract), "Mul": _plain(np.multiply), "Div": _div,
    "Pow": _pow, "Max": _max_min(True), "Min": _max_min(False), "Mod": _mod,
    "Equal": _plain(np.equal), "Less": _plain(np.less), "LessOrEqual": _plain(np.less_equal),
    "Greater": _plain(np.greater), "GreaterOrEqual": _plain(np.greater_equal),
    "And": _logical(np.logical_and), "Or": _logical(np.logical_or), "Xor": _logical(np.logical_xor),
}


def elementwise(op_type: str, a: Any, b: Any, *, auto_broadcast: str = "numpy", axis: int = -1,
                max_output_bytes: int | None = None, **attrs: Any) -> np.ndarray:
    """The numpy kernel of an elementwise op under ``auto_broadcast``: the standard op's arithmetic, bit for bit as
    ONNX Runtime's CPU kernel computes it (e.g. ``Div`` truncates, ``Pow`` calls C's ``powf``/``pow``).

    Pow's exponent may have its own type (the standard op's T1); the other ops take one element type.
    """
    if op_type not in ARITHMETIC:
        raise BroadcastError(op_type, "", f"is not an elementwise op of onnx_bcast (known: {', '.join(ARITHMETIC)})")
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
            out = ARITHMETIC[op_type](a, b, **attrs)
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


COMPARISONS = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")
LOGICAL = ("And", "Or", "Xor")
STANDARD_OPSET = 26  # the newest default-domain opset ONNX Runtime 1.31 accepts: its type lists are ours


def standard_types(op: str) -> tuple[str, ...]:
    """The input types of the standard ONNX op of the same name (its ``T``)."""
    schema = onnx.defs.get_schema(op, STANDARD_OPSET)
    return tuple(next(c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == "T"))


def _type_string(elem: int) -> str:
    return f"tensor({onnx.TensorProto.DataType.Name(elem).lower()})"


def standard_accepts(op: str, opset: int, elem: int) -> bool:
    """Whether the standard op, as of default-domain ``opset``, takes inputs of ONNX element type ``elem``."""
    try:
        schema = onnx.defs.get_schema(op, opset)
    except onnx.defs.SchemaError:
        return False
    first = schema.inputs[0].type_str
    allowed = next((c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == first), ())
    return _type_string(elem) in allowed


def standard_form(op: str, opset: int, elem: int | None) -> str:
    """How the standard op is written at ``opset``: ``"direct"`` or ``"or_strict_equal"`` (``A<B or A==B``).

    Raises ``ValueError`` naming the opset needed when neither form exists for ``elem`` at ``opset``.
    """
    if elem is None or standard_accepts(op, opset, elem):
        return "direct"
    strict = {"LessOrEqual": "Less", "GreaterOrEqual": "Greater"}.get(op)
    if strict and standard_accepts(strict, opset, elem) and standard_accepts("Equal", opset, elem):
        return "or_strict_equal"  # exact, NaN included: both parts are false for NaN
    since = next((v for v in range(opset + 1, STANDARD_OPSET + 1) if standard_accepts(op, v, elem)), None)
    need = f"default-domain opset >= {since}" if since else "a newer ONNX"
    raise ValueError(f"standard {op} of {_type_string(elem)} needs {need}; the model uses opset {opset}")


def _kernel(op: str) -> Callable[[list[np.ndarray | None], dict[str, Any]], np.ndarray]:
    def run(inputs: list[np.ndarray | None], attrs: dict[str, Any], max_output_bytes: int | None = None) -> np.ndarray:
        extra = {"fmod": int(attrs["fmod"])} if "fmod" in attrs else {}
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
    boolean_out = op in COMPARISONS or op in LOGICAL
    return OpSpec(
        name=op,
        doc=f"The standard ONNX {op} with an OpenVINO/PaddlePaddle auto_broadcast rule.",
        inputs=(Input("A", "T", doc="the first operand"), Input("B", "T", doc="the second operand")),
        attrs=tuple(attrs),
        type_constraints=(("T", standard_types(op)),) + ((("T1", ("tensor(bool)",)),) if boolean_out else ()),
        output_type_param="T1" if boolean_out else "T",
        kernel=_kernel(op),
        static_shape=_static_shape(op),
        mode_of=lambda attrs: str(attrs.get("auto_broadcast", "numpy")),
        mode_attr="auto_broadcast",
        family="elementwise",
    )


SPECS = tuple(_spec(op) for op in ARITHMETIC)
