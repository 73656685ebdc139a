"""The elementwise kernel computes what ONNX Runtime's standard op computes, bit for bit.

The oracle is ONNX Runtime itself: a plain ``onnxruntime.InferenceSession`` on a one-node standard ONNX model built
here, one session per (op, types), fed a whole vector of value pairs at once. Every op x every type the CPU
provider runs (probed: a combination whose session cannot be created for want of a kernel is skipped, and
``test_onnxruntime_runs_what_was_measured`` keeps the probe honest) is compared on edge values (±0, ±1, the type's
extremes, NaN, ±inf, subnormals, negative and special exponents for Pow) and seeded random values, in the three
span layouts of ONNX Runtime's broadcaster (both operands walked; A or B the repeated value of each span), because
Pow and Max/Min depend on the layout. Results must have the same dtype, shape and bytes; only NaN payloads (and
signs) may differ.

Integer division and modulo by zero, and the minimum divided by -1, are not fed to ONNX Runtime (its kernel may trap
with SIGFPE there); the kernel's behaviour on them is checked against formulas instead.
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.helper import np_dtype_to_tensor_dtype

import onnx_bcast
from tests.onnx_util import skip_unless_ort_reads

OPSET = 28  # Mod-28 defines fmod=0 for floats; ONNX Runtime 1.32 runs it from this opset on
OPS = ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Equal", "Less", "LessOrEqual", "Greater",
       "GreaterOrEqual", "And", "Or", "Xor")
BOOL_OUT = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"}
TYPES = (np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
         np.uint64, np.bool_)
POW_TYPES = (np.float32, np.float64, np.float16, np.int32, np.int64)
LAYOUTS = ("general", "input0scalar", "input1scalar")

# What ONNX Runtime 1.32's CPU provider ran when this file was written (same-type inputs).
MEASURED = {
    **{op: TYPES[:-1] for op in ("Add", "Sub", "Mul", "Div", "Mod", "Less", "LessOrEqual", "Greater",
                                 "GreaterOrEqual")},
    "Equal": TYPES,
    "Pow": POW_TYPES,
    **{op: (np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64)
       for op in ("Max", "Min")},
    **{op: (np.bool_,) for op in ("And", "Or", "Xor")},
}


def _variants(op: str) -> list[dict]:
    return [{"fmod": 0}, {"fmod": 1}] if op == "Mod" else [{}]


@cache
def _session(op: str, a_type: str, b_type: str, attrs: tuple) -> ort.InferenceSession | None:
    """A one-node standard model in plain ONNX Runtime, or None when its CPU provider has no kernel for it."""
    skip_unless_ort_reads(OPSET)
    a_elem, b_elem = np_dtype_to_tensor_dtype(np.dtype(a_type)), np_dtype_to_tensor_dtype(np.dtype(b_type))
    out_elem = TensorProto.BOOL if op in BOOL_OUT else a_elem
    graph = helper.make_graph(
        [helper.make_node(op, ["a", "b"], ["y"], **dict(attrs))], "one_node",
        [helper.make_tensor_value_info("a", a_elem, None), helper.make_tensor_value_info("b", b_elem, None)],
        [helper.make_tensor_value_info("y", out_elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=10)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # ORT splits one large span over threads; these inputs are small anyway
    try:
        return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - onnxruntime's pybind exception types are not importable by name
        if "NOT_IMPLEMENTED" in str(err):
            return None
        raise


def _ort(op: str, a: np.ndarray, b: np.ndarray, **attrs) -> np.ndarray:
    session = _session(op, a.dtype.str, b.dtype.str, tuple(sorted(attrs.items())))
    if session is None:
        pytest.skip(f"ONNX Runtime's CPU provider has no {op} kernel for {a.dtype}, {b.dtype}")
    return session.run(None, {"a": a, "b": b})[0]


def _edges(dtype: np.dtype, exponent: bool = False) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array([False, True])
    if dtype.kind == "f":
        fi = np.finfo(dtype)
        values = [0.0, -0.0, 1, -1, 2, -2, 3, -3, 0.5, -0.5, 1.5, -2.5, 7, -7, 0.1, 1e3, -1e3, fi.max, -fi.max,
                  fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, np.nan, np.inf, -np.inf]
        if exponent:
            values += [10, 31, -31, 1 / 3]
        return np.array(values).astype(dtype)
    info = np.iinfo(dtype)
    values = [0, 1, 2, 3, 7, 100, info.max, info.max - 1]
    if dtype.kind == "i":
        values += [-1, -2, -3, -7, info.min, info.min + 1]
    if exponent:
        values += [10, 31, 62, 63] + ([-31, -62] if dtype.kind == "i" else [])
    return np.array(values, dtype=dtype)


def _random(dtype: np.dtype, n: int, seed: int, exponent: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind == "f":
        scale = 4.0 if exponent else 10.0 ** rng.integers(-3, 4, n)
        return (rng.standard_normal(n) * scale).astype(dtype)
    info = np.iinfo(dtype)
    if exponent:
        return rng.integers(max(info.min, -6), 12, n).astype(dtype)
    small = rng.integers(max(info.min, -50), 50, n // 2)
    wide = rng.integers(info.min, info.max, n - n // 2, dtype=dtype, endpoint=True)
    return np.concatenate([small.astype(dtype), wide])


def _values(dtype: np.dtype, seed: int, exponent: bool = False) -> np.ndarray:
    return np.concatenate([_edges(dtype, exponent), _random(dtype, 24, seed, exponent)])


def _layout(layout: str, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (x, y) pair, laid out so that ONNX Runtime walks both, or repeats A or B over each span."""
    if layout == "general":
        return np.repeat(x, y.size), np.tile(y, x.size)
    if layout == "input0scalar":  # output (len x, len y), each span one row: A repeated over it
        return x.reshape(-1, 1), y.reshape(1, -1)
    return x.reshape(1, -1), y.reshape(-1, 1)  # input1scalar: B repeated over each row


def _ort_safe(op: str, x: np.ndarray, y: np.ndarray, layout: str) -> tuple[np.ndarray, np.ndarray]:
    """Drops the divisors ONNX Runtime must not see: 0, and -1 with the minimum (the cartesian layouts drop -1)."""
    if op not in ("Div", "Mod") or x.dtype.kind not in "iu":
        return x, y
    y = y[y != 0]
    if x.dtype.kind == "i":
        if layout == "general":
            return x, y  # the pairs themselves are filtered in _pairs
        y = y[y != -1]
    return x, y


def _pairs(op: str, x: np.ndarray, y: np.ndarray, layout: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = _ort_safe(op, x, y, layout)
    a, b = _layout(layout, x, y)
    if layout == "general" and op in ("Div", "Mod") and x.dtype.kind == "i":
        keep = ~((a == np.iinfo(x.dtype).min) & (b == -1))
        a, b = a[keep], b[keep]
    return a, b


def assert_same_bits(got: np.ndarray, expected: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Same dtype, shape and bytes; where the expected value is a NaN, any NaN."""
    got = np.asarray(got)
    assert got.dtype == expected.dtype, f"dtype {got.dtype}, expected {expected.dtype}"
    assert got.shape == expected.shape, f"shape {got.shape}, expected {expected.shape}"
    g, e = got.reshape(-1), expected.reshape(-1)
    width = e.dtype.itemsize
    differ = np.frombuffer(g.tobytes(), np.uint8).reshape(-1, width) != np.frombuffer(e.tobytes(),
                                                                                       np.uint8).reshape(-1, width)
    bad = differ.any(axis=1)
    if e.dtype.kind == "f":
        bad &= ~(np.isnan(e) & np.isnan(g))
    if bad.any():
        a_flat = np.broadcast_to(a, expected.shape).reshape(-1)
        b_flat = np.broadcast_to(b, expected.shape).reshape(-1)
        where = np.flatnonzero(bad)
        shown = [(a_flat[i].item(), b_flat[i].item(), g[i].item(), e[i].item()) for i in where[:6]]
        raise AssertionError(f"{where.size} of {e.size} elements differ, (a, b, kernel, onnxruntime): {shown}")


# ---- every op x every type ONNX Runtime runs ----------------------------------------------------------------------

def _schema_takes(op: str, dtype: np.dtype) -> bool:
    """Whether the standard op's first input takes ``dtype`` at OPSET (else ONNX Runtime refuses the model)."""
    schema = onnx.defs.get_schema(op, OPSET)
    allowed = next(c.allowed_type_strs for c in schema.type_constraints
                   if c.type_param_str == schema.inputs[0].type_str)
    return f"tensor({TensorProto.DataType.Name(np_dtype_to_tensor_dtype(dtype)).lower()})" in allowed


MATRIX = [pytest.param(op, np.dtype(t), attrs, id=f"{op}{attrs.get('fmod', '')}-{np.dtype(t).name}")
          for op in OPS for t in TYPES for attrs in _variants(op) if _schema_takes(op, np.dtype(t))]


@pytest.mark.parametrize(("op", "dtype", "attrs"), MATRIX)
def test_kernel_equals_onnxruntime(op: str, dtype: np.dtype, attrs: dict) -> None:
    x = _values(dtype, seed=1)
    y = _values(dtype, seed=2, exponent=op == "Pow")
    if _session(op, dtype.str, dtype.str, tuple(sorted(attrs.items()))) is None:
        pytest.skip(f"ONNX Runtime's CPU provider has no {op} kernel for {dtype}")
    for layout in LAYOUTS:
        a, b = _pairs(op, x, y, layout)
        expected = _ort(op, a, b, **attrs)
        got = onnx_bcast.elementwise(op, a, b, **attrs)
        try:
            assert_same_bits(got, expected, a, b)
        except AssertionError as err:
            raise AssertionError(f"{op}{attrs} {dtype}, layout {layout}: {err}") from None


@pytest.mark.parametrize(("base", "exponent"), [pytest.param(np.dtype(t), np.dtype(e), id=f"{np.dtype(t).name}"
                                                             f"^{np.dtype(e).name}")
                                                for t in POW_TYPES for e in POW_TYPES])
def test_pow_of_mixed_types_equals_onnxruntime(base: np.dtype, exponent: np.dtype) -> None:
    """Pow's exponent has its own type T1; the output has the base's type."""
    x, y = _values(base, seed=3), _values(exponent, seed=4, exponent=True)
    for layout in LAYOUTS:
        a, b = _layout(layout, x, y)
        expected = _ort("Pow", a, b)
        got = onnx_bcast.elementwise("Pow", a, b)
        try:
            assert_same_bits(got, expected, a, b)
        except AssertionError as err:
            raise AssertionError(f"Pow {base}^{exponent}, layout {layout}: {err}") from None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_pow_on_many_random_values(dtype: type) -> None:
    """ONNX Runtime calls C's powf/pow; numpy's power (and, for float32, pow in double rounded to float) differ in
    the last bit on a share of these, e.g. 7 ** 1.5 in float32 is 18.52026 there, numpy's 18.520258."""
    rng = np.random.default_rng(99)
    a = np.concatenate([[7.0], rng.uniform(0, 100, 50_000)]).astype(dtype)
    b = np.concatenate([[1.5], rng.uniform(-5, 5, 50_000)]).astype(dtype)
    assert_same_bits(onnx_bcast.elementwise("Pow", a, b), _ort("Pow", a, b), a, b)


def test_onnxruntime_runs_what_was_measured() -> None:
    """The skips above are ONNX Runtime's missing kernels, not a broken probe."""
    for op, types in MEASURED.items():
        for t, attrs in itertools.product(types, _variants(op)):
            assert _session(op, np.dtype(t).str, np.dtype(t).str, tuple(sorted(attrs.items()))) is not None, (op, t)
    for t, e in itertools.product(POW_TYPES, POW_TYPES):
        assert _session("Pow", np.dtype(t).str, np.dtype(e).str, ()) is not None, (t, e)


# ---- the layout-dependent parts, on random broadcast shapes ------------------------------------------------------

def _random_shapes(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    rank = int(rng.integers(0, 6))
    out = [int(rng.integers(1, 7)) for _ in range(rank)]

    def operand() -> tuple[int, ...]:
        kept = out[rank - int(rng.integers(0, rank + 1)):]
        return tuple(1 if rng.random() < 0.4 else d for d in kept)
    return operand(), operand()


def test_layout_dependent_results_on_random_shapes() -> None:
    """Max/Min of +0 and -0 (which zero depends on SSE packet or scalar code) and Pow(x, 3) (a multiplication when
    the exponent is repeated over the span, else powf) on 150 random pairs of broadcastable shapes."""
    rng = np.random.default_rng(2024)
    for _ in range(150):
        a_shape, b_shape = _random_shapes(rng)
        for dtype, op in itertools.product((np.float32, np.float64, np.float16), ("Max", "Min")):
            sign = 1.0 if rng.random() < 0.5 else -1.0
            a, b = np.full(a_shape, sign * 0.0, dtype), np.full(b_shape, -sign * 0.0, dtype)
            assert_same_bits(onnx_bcast.elementwise(op, a, b), _ort(op, a, b), a, b)
        a = np.full(a_shape, 3.3, np.float32)  # powf(3.3, 3) and 3.3 * 3.3 * 3.3 differ in float32
        b = np.full(b_shape, 3.0, np.float32)
        assert_same_bits(onnx_bcast.elementwise("Pow", a, b), _ort("Pow", a, b), a, b)


@pytest.mark.parametrize("op", ["Pow", "Max", "Sub"])
def test_pdpd_equals_onnxruntime_on_the_aligned_b(op: str) -> None:
    """pdpd: ORT's standard op on B reshaped to its aligned shape (what the lowering feeds it)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    a[0, 0, :2] = [0.0, -0.0]
    for b_shape, axis in (((4,), 1), ((4, 5), 1), ((5,), -1), ((1,), 2), ((3, 1), 0)):
        b = np.where(rng.random(b_shape) < 0.3, 3.0, rng.standard_normal(b_shape)).astype(np.float32)
        start = 3 - len(b_shape) if axis == -1 else axis
        aligned = b.reshape((1,) * start + b_shape + (1,) * (3 - start - len(b_shape)))
        got = onnx_bcast.elementwise(op, a, b, auto_broadcast="pdpd", axis=axis)
        assert_same_bits(got, _ort(op, a, aligned), a, aligned)


# ---- what ONNX Runtime is not fed ---------------------------------------------------------------------------------

INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize(("op", "attrs"), [("Div", {}), ("Mod", {"fmod": 0}), ("Mod", {"fmod": 1})])
def test_integer_division_by_zero_is_a_broadcast_error(dtype: type, op: str, attrs: dict) -> None:
    a, b = np.array([7, 1], dtype), np.array([2, 0], dtype)
    with pytest.raises(onnx_bcast.BroadcastError, match=rf"{op}\(auto_broadcast=numpy\): integer .* by zero"):
        onnx_bcast.elementwise(op, a, b, **attrs)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_minimum_divided_by_minus_one_wraps(dtype: type, layout: str) -> None:
    """Two's complement: -MIN does not fit and wraps to MIN (the value ONNX Runtime's packed int32 division gives;
    its scalar int32/int64 division traps instead). The remainder is 0 in both Mod modes."""
    low = np.iinfo(dtype).min
    x = np.array([low, low + 1, -7, 0, 7, np.iinfo(dtype).max], dtype)
    y = np.array([-1, 1, 2, -2], dtype)
    a, b = _layout(layout, x, y)
    pairs = zip(np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape)).reshape(-1).tolist(),
                np.broadcast_to(b, np.broadcast_shapes(a.shape, b.shape)).reshape(-1).tolist(), strict=True)
    quotients, floor_rems, c_rems = [], [], []
    for p, q in pairs:
        exact = abs(p) // abs(q) * (1 if (p < 0) == (q < 0) else -1)  # C: truncates toward zero
        quotients.append(low if exact > np.iinfo(dtype).max else exact)
        floor_rems.append(p % q)
        c_rems.append(p - exact * q)
    shape = np.broadcast_shapes(a.shape, b.shape)
    for op, attrs, want in (("Div", {}, quotients), ("Mod", {"fmod": 0}, floor_rems), ("Mod", {"fmod": 1}, c_rems)):
        got = onnx_bcast.elementwise(op, a, b, **attrs)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, np.array(want, dtype).reshape(shape), err_msg=f"{op}{attrs}")


def test_float_mod_follows_the_sign_of_the_divisor() -> None:
    """Mod-28 with fmod=0 on floats (ONNX's special cases, written out here)."""
    inf, nan = np.inf, np.nan
    cases = [(5.5, 2.0, 1.5), (-5.5, 2.0, 0.5), (5.5, -2.0, -0.5), (-5.5, -2.0, -1.5), (4.0, -2.0, -0.0),
             (-4.0, 2.0, 0.0), (0.0, -3.0, -0.0), (-0.0, 3.0, 0.0), (1.0, inf, 1.0), (-1.0, inf, inf),
             (1.0, -inf, -inf), (-1.0, -inf, -1.0), (inf, 2.0, nan), (2.0, 0.0, nan), (2.0, -0.0, nan),
             (nan, 2.0, nan), (2.0, nan, nan)]
    for dtype in (np.float16, np.float32, np.float64):
        a, b, want = (np.array(column, dtype) for column in zip(*cases, strict=True))
        got = onnx_bcast.elementwise("Mod", a, b, fmod=0)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
        assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()
