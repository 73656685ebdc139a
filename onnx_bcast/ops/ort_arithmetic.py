"""The standard ops' arithmetic as ONNX Runtime's CPU kernels compute it, bit for bit (measured on 1.32, x86-64)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from onnx_bcast.ops.ort_layout import Shape, ort_layout, packet_mask


def numpy_rule_shape(a: Shape, b: Shape) -> Shape | None:
    """ONNX multidirectional broadcasting for any rank (``np.broadcast_shapes`` stops at 32 dims); None: no fit."""
    rank = max(len(a), len(b))
    out = []
    for x, y in zip((1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b, strict=True):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def _max_min(is_max: bool) -> Callable[..., np.ndarray]:
    """ONNX Runtime's Max/Min: NaN propagates; a +0/-0 tie gives Eigen's first operand in scalar code, its second
    in SSE packets (float32/float64; float16 is all scalar). Eigen's first operand is B when A is the span's scalar.
    """
    def run(a: np.ndarray, b: np.ndarray, **_: Any) -> np.ndarray:
        if a.dtype.kind != "f" and a.dtype.name != "bfloat16":
            return np.maximum(a, b) if is_max else np.minimum(a, b)
        out_shape = numpy_rule_shape(a.shape, b.shape)
        if not np.prod(out_shape, dtype=np.int64):
            return np.empty(out_shape, a.dtype)
        kind, span = ort_layout(a.shape, b.shape)
        first, second = (b, a) if kind == "input0scalar" else (a, b)
        if a.dtype in (np.float32, np.float64):
            in_packet = packet_mask(out_shape, a.dtype.itemsize, span)
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
    out_shape = numpy_rule_shape(x.shape, y.shape)
    x, y = np.broadcast_to(x, out_shape), np.broadcast_to(y, out_shape)
    out = np.empty(out_shape, work)
    by_pow = np.ones(out_shape, bool)
    if out.size and ort_layout(a.shape, b.shape)[0] == "input1scalar":
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


def _div(a: np.ndarray, b: np.ndarray, pythondiv: int = 0, **_: Any) -> np.ndarray:
    """ONNX Div; with ``pythondiv`` (OpenVINO's ``m_pythondiv``), signed integers floor instead of truncating: the
    truncated quotient minus 1 where the division is inexact and the signs differ (exact at the type's limits:
    ``q * b`` and ``a`` are in range there, and the minimum divided by -1 wraps to the minimum either way)."""
    if a.dtype.kind in "iu":
        q = _int_div(a, b)
        if pythondiv and a.dtype.kind == "i":
            inexact = np.multiply(q, b) != a
            q = q - (inexact & ((a < 0) != (b < 0))).astype(q.dtype)
        return q
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


# The registry of every elementwise op of ours (their names are written here only): op -> its kernel.
ELEMENTWISE_KERNELS: dict[str, Callable[..., np.ndarray]] = {
    "Add": _plain(np.add), "Sub": _plain(np.subtract), "Mul": _plain(np.multiply), "Div": _div,
    "Pow": _pow, "Max": _max_min(True), "Min": _max_min(False), "Mod": _mod,
    "Equal": _plain(np.equal), "Less": _plain(np.less), "LessOrEqual": _plain(np.less_equal),
    "Greater": _plain(np.greater), "GreaterOrEqual": _plain(np.greater_equal),
    "And": _logical(np.logical_and), "Or": _logical(np.logical_or), "Xor": _logical(np.logical_xor),
}


