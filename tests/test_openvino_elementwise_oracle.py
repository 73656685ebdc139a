"""Property tests: onnx-bcast's elementwise ops agree with OpenVINO's outside SPEC's marked differences."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from onnx import helper

import onnx_bcast

ov = pytest.importorskip("openvino")

try:
    from elementwise_util import assert_values_equal
    from ov_elementwise_oracle import (
        OPSET,
        OV_OPS,
        elementwise_node,
        ov_elementwise,
        ov_elementwise_shape,
        ov_op_name,
        ov_pdpd_aligned_shape,
    )
except ImportError:  # tests/ imported as a package
    from tests.elementwise_util import assert_values_equal
    from tests.ov_elementwise_oracle import (
        OPSET,
        OV_OPS,
        elementwise_node,
        ov_elementwise,
        ov_elementwise_shape,
        ov_op_name,
        ov_pdpd_aligned_shape,
    )

# Deterministic in CI: fixed example sequence, no example database, no timing-based failures.
DETERMINISTIC = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

MAX_RANK = 4

#: onnx-bcast spellings per rule (``explicit`` is SPEC's alias of ``none``; OpenVINO accepts it too).
SPELLINGS = {"none": ("none", "explicit"), "numpy": ("numpy",), "pdpd": ("pdpd",)}

COMPARISONS = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")
LOGICAL = ("And", "Or", "Xor")

#: (op, dtype, fmod) combinations compared on values. ONNX Mod of floats needs fmod=1; integer Pow only with
#: non-negative exponents; Div/Mod never by zero (undefined in both).
OP_DTYPES: tuple[tuple[str, type[np.generic], int], ...] = (
    *((op, np.float32, 0) for op in ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min")),
    *((op, np.int32, 0) for op in ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min")),
    ("Mod", np.int32, 0),
    ("Mod", np.int32, 1),
    ("Mod", np.float32, 1),
    *((op, dtype, 0) for op in COMPARISONS for dtype in (np.float32, np.int32)),
    *((op, np.bool_, 0) for op in LOGICAL),
)


@dataclass(frozen=True)
class Case:
    """Shapes and rule of one elementwise call; ``spelling`` is what both libraries are given."""

    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    rule: str
    axis: int
    spelling: str

    def bcast_kwargs(self) -> dict:
        kwargs: dict = {"auto_broadcast": self.spelling}
        if self.rule == "pdpd":
            kwargs["axis"] = self.axis
        return kwargs

    def ov_kwargs(self) -> dict:
        return {"auto_broadcast": self.spelling, "axis": self.axis}


def _pdpd_start(case: Case) -> int | None:
    """pdpd's start axis, None when both libraries reject the case before any dim is compared."""
    ra, rb = len(case.a_shape), len(case.b_shape)
    if rb > ra or case.axis < -1:
        return None
    return ra - rb if case.axis == -1 else case.axis


def _trimmed(b: tuple[int, ...]) -> tuple[int, ...]:
    end = len(b)
    while end and b[end - 1] == 1:
        end -= 1
    return b[:end]


def spec_difference(case: Case) -> str | None:
    """Which of SPEC §2's marked pdpd differences (or OpenVINO's deviation from SPEC's text) decides ``case``.

    Structural: a case in one of these regions is left out of the OpenVINO comparisons, also when both libraries
    happen to reject it for another reason; ``test_spec_differences_follow_spec`` checks every such case against
    SPEC instead, so nothing in the regions goes untested.
    """
    if case.rule != "pdpd":
        return None
    start = _pdpd_start(case)
    if start is None:
        return None
    a, b = case.a_shape, case.b_shape
    ra, rb = len(a), len(b)
    if start + rb > ra and start + len(_trimmed(b)) <= ra:
        # SPEC: "trailing size-1 dims of B are then ignored ... (differs: OpenVINO's shape inference does not
        # trim)". OpenVINO rejects B's trailing 1s that stick out past A's last axis.
        return "trailing ones"
    aligned = [(b[k], a[start + k]) for k in range(rb) if start + k < ra]
    if any(bk == 1 and ak == 0 for bk, ak in aligned):
        # SPEC: "a size-1 B dim also meets a 0-size A dim, differs: OpenVINO rejects it" (its B[i] > A[i] check).
        return "one meets zero"
    if any(bk == 0 and ak == 1 for bk, ak in aligned):
        # Not marked in SPEC, but SPEC's text is explicit where OpenVINO differs: "each B dim equal to A's or 1"
        # and "Output shape is A's shape, always". OpenVINO accepts a 0-size B dim on a size-1 A dim and writes
        # the 0 into its output shape (A=[1], B=[0] -> [0]); see test_oracle_pins_spec_differences.
        return "zero meets one"
    return None


def is_spec_difference(case: Case) -> bool:
    """True where SPEC, not OpenVINO, is the reference (see ``spec_difference``)."""
    return spec_difference(case) is not None


def spec_pdpd_alignment(case: Case) -> tuple[int, ...] | None:
    """SPEC §2's pdpd rule, transcribed: B's shape padded with 1s to A's rank, or None when invalid."""
    start = _pdpd_start(case)
    if start is None:
        return None
    a, trimmed = case.a_shape, _trimmed(case.b_shape)
    if start + len(trimmed) > len(a):
        return None
    if any(bk != 1 and bk != a[start + k] for k, bk in enumerate(trimmed)):
        return None
    return (1,) * start + trimmed + (1,) * (len(a) - start - len(trimmed))


# --- strategies ---------------------------------------------------------------------------------------------------


def _dims(allow_zero: bool) -> st.SearchStrategy[int]:
    return st.sampled_from((0, 1, 1, 2, 3, 4) if allow_zero else (1, 1, 2, 3, 4))


@st.composite
def _shape(draw: st.DrawFn, allow_zero: bool) -> list[int]:
    """A shape of rank 0 to MAX_RANK, mostly 2 to 4 (hypothesis would otherwise favour scalars)."""
    rank = draw(st.sampled_from((0, 1, 2, 2, 3, 3, 4, 4)))
    return [draw(_dims(allow_zero)) for _ in range(rank)]


@st.composite
def _related_dim(draw: st.DrawFn, other: int, allow_zero: bool) -> int:
    """A dim meeting ``other``: mostly equal or 1, sometimes anything (often a mismatch)."""
    choice = draw(st.sampled_from(("equal", "equal", "one", "any")))
    if choice == "equal":
        return other
    if choice == "one":
        return 1
    return draw(_dims(allow_zero))


@st.composite
def none_shapes(draw: st.DrawFn, allow_zero: bool) -> tuple:
    a = draw(_shape(allow_zero))
    b = list(a)
    mutation = draw(st.sampled_from(("same", "same", "same", "dim", "one", "rank")))
    if mutation == "dim" and b:
        b[draw(st.integers(0, len(b) - 1))] = draw(_dims(allow_zero))  # may stay equal
    elif mutation == "one" and b:
        b[draw(st.integers(0, len(b) - 1))] = 1  # numpy-compatible, not identical unless it was 1
    elif mutation == "rank":
        if b and draw(st.booleans()):
            b.pop(0)
        else:
            b.insert(0, draw(st.sampled_from((1, 2))))
    if draw(st.booleans()):
        a, b = b, a
    return tuple(a), tuple(b), -1


@st.composite
def numpy_shapes(draw: st.DrawFn, allow_zero: bool) -> tuple:
    out = draw(_shape(allow_zero))
    n = len(out)
    shapes = []
    for _ in range(2):
        r = max(0, n - draw(st.sampled_from((0, 0, 0, 1, 2, n))))  # mostly full rank, sometimes a scalar
        shapes.append([draw(_related_dim(d, allow_zero)) for d in out[n - r :]])
    a, b = shapes
    common = min(len(a), len(b))
    if common and draw(st.integers(0, 3)) == 0:  # a sure mismatch on an aligned dim: invalid
        k = draw(st.integers(1, common))
        a[-k] = draw(st.sampled_from([d for d in (0, 2, 3, 4) if d != b[-k] and (allow_zero or d)]))
        if b[-k] == 1:
            b[-k] = draw(st.sampled_from([d for d in (2, 3, 4) if d != a[-k]]))
    return tuple(a), tuple(b), -1


@st.composite
def pdpd_shapes(draw: st.DrawFn, allow_zero: bool) -> tuple:
    a = draw(_shape(allow_zero))
    ra = len(a)
    kind = draw(st.sampled_from(("minus_one", "minus_one", "axis", "axis", "axis", "axis", "negative", "too_long")))
    if kind == "minus_one":
        axis = -1
        rb = draw(st.sampled_from(range(ra + 1)))
        start = ra - rb
    elif kind == "too_long":
        axis = draw(st.sampled_from((-1, 0)))
        rb, start = ra + 1, 0  # B's rank above A's: invalid
    elif kind == "negative":
        axis = draw(st.integers(-3, -2))
        rb, start = draw(st.integers(0, ra)), 0
    else:
        axis = start = draw(st.integers(0, ra + 1))  # ra + 1 is past A's end
        rb = draw(st.sampled_from(range(max(0, ra - start) + 1)))  # B may end before A does
    b = [draw(_related_dim(a[start + k], allow_zero)) if start + k < ra else draw(_dims(allow_zero))
         for k in range(rb)]
    if axis >= 0 and draw(st.sampled_from((False, False, True))):
        b += [1] * draw(st.integers(1, 2))  # trailing 1s, which may stick out past A (a marked SPEC difference)
    return tuple(a), tuple(b), axis


_GENERATORS = {"none": none_shapes, "numpy": numpy_shapes, "pdpd": pdpd_shapes}


@st.composite
def cases(draw: st.DrawFn, allow_zero: bool | None = False, differences: bool = False) -> Case:
    """Cases outside SPEC's marked differences (only inside them with ``differences``).

    ``allow_zero=None``: zero-size dims may appear in one case out of four (one of two with ``differences``).
    """
    if allow_zero is None:
        allow_zero = draw(st.integers(0, 1 if differences else 3)) == 0
    rule = draw(st.sampled_from(("pdpd",) if differences else ("none", "numpy", "numpy", "pdpd", "pdpd")))
    a_shape, b_shape, axis = draw(_GENERATORS[rule](allow_zero))
    case = Case(a_shape, b_shape, rule, axis, draw(st.sampled_from(SPELLINGS[rule])))
    assume(is_spec_difference(case) == differences)
    return case


def operands(
    op: str, dtype: type[np.generic], a_shape: tuple[int, ...], b_shape: tuple[int, ...], seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Values defined in both libraries: no integer division by 0, integer powers that fit (and are exact in
    float32, which OpenVINO's CPU plugin uses for integer Divide and Power), positive float bases."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return np.asarray(rng.random(a_shape) < 0.5), np.asarray(rng.random(b_shape) < 0.5)
    if dtype == np.int32:
        if op == "Pow":
            a, b = rng.integers(-4, 5, a_shape), rng.integers(0, 6, b_shape)
        elif op in ("Div", "Mod"):
            a, b = rng.integers(-50, 51, a_shape), rng.integers(1, 10, b_shape) * rng.choice((-1, 1), b_shape)
        else:
            a, b = rng.integers(-20, 21, a_shape), rng.integers(-20, 21, b_shape)
        return np.asarray(a, np.int32), np.asarray(b, np.int32)
    if op == "Pow":
        base, exponent = rng.uniform(0.1, 4.0, a_shape), rng.uniform(-3.0, 3.0, b_shape)
        return np.asarray(base, np.float32), np.asarray(exponent, np.float32)
    if op in ("Div", "Mod"):
        b = rng.uniform(0.25, 4.0, b_shape) * rng.choice((-1.0, 1.0), b_shape)
        return np.asarray(rng.standard_normal(a_shape) * 8, np.float32), np.asarray(b, np.float32)

    def mixed(shape: tuple[int, ...]) -> np.ndarray:  # half-integers tie often (Equal, Max, Min)
        return np.where(rng.random(shape) < 0.5, rng.integers(-4, 5, shape) / 2, rng.standard_normal(shape) * 8)

    return np.asarray(mixed(a_shape), np.float32), np.asarray(mixed(b_shape), np.float32)


# --- the oracle itself (literal expectations, so an OpenVINO change fails loudly) ---------------------------------


def test_oracle_builds_the_newest_versions() -> None:
    """The newest opset builds the same op versions as ``OPSET`` (OpenVINO reports LogicalXor as opset2)."""
    p = ov.op.Parameter(ov.Type.f32, ov.PartialShape([2]))
    q = ov.op.Parameter(ov.Type.boolean, ov.PartialShape([2]))
    for op in (*OV_OPS, "Mod"):
        for fmod in (0, 1) if op == "Mod" else (0,):
            x = q if op in LOGICAL else p
            old = elementwise_node(op, x, x, auto_broadcast="numpy", fmod=fmod, opset=OPSET)
            new = elementwise_node(op, x, x, auto_broadcast="numpy", fmod=fmod, opset="opset16")
            assert old.get_type_name() == new.get_type_name() == ov_op_name(op, fmod)
            assert old.get_type_info().version_id == new.get_type_info().version_id


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "rule", "axis", "expected"),
    [
        ((2, 3), (2, 3), "none", -1, (2, 3)),
        ((2, 3), (2, 3), "explicit", -1, (2, 3)),
        ((2, 3), (1, 3), "none", -1, None),
        ((2, 1, 3), (4, 1), "numpy", -1, (2, 4, 3)),
        ((0, 3), (1, 1), "numpy", -1, (0, 3)),
        ((2, 3), (3,), "numpy", -1, (2, 3)),
        ((2, 3), (2,), "numpy", -1, None),
        ((2, 3), (3,), "pdpd", -1, (2, 3)),  # fails if the axis attribute is lost (the factory's default is 0)
        ((2, 3, 4), (3, 1), "pdpd", 1, (2, 3, 4)),
        ((2, 3, 4), (3,), "pdpd", 1, (2, 3, 4)),
        ((2, 3, 4), (3,), "pdpd", 0, None),
        ((2, 3), (2, 3, 4), "pdpd", -1, None),  # B's rank above A's
        ((2, 3), (3,), "pdpd", -2, None),
        ((2, 3), (), "pdpd", 2, (2, 3)),
        ((2, 3), (), "pdpd", 3, None),
        ((1, 3), (4, 3), "pdpd", -1, None),  # B -> A only
    ],
)
def test_oracle_shape_rule(
    a_shape: tuple[int, ...], b_shape: tuple[int, ...], rule: str, axis: int, expected: tuple[int, ...] | None
) -> None:
    assert ov_elementwise_shape(a_shape, b_shape, auto_broadcast=rule, axis=axis) == expected


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "axis", "ov_expected", "spec_expected"),
    [
        ((2, 3), (3, 1), 1, None, (2, 3)),  # trailing 1s: SPEC trims them, OpenVINO does not
        ((2, 3), (1,), 2, None, (2, 3)),
        ((2, 3, 4), (3, 1, 1), 1, None, (2, 3, 4)),
        ((0,), (1,), -1, None, (0,)),  # size-1 B dim on a 0-size A dim: SPEC accepts, OpenVINO rejects
        ((2, 0, 3), (1, 3), 1, None, (2, 0, 3)),
        ((1,), (0,), -1, (0,), None),  # 0-size B dim on a size-1 A dim: OpenVINO accepts and writes 0
        ((2, 1, 3), (0,), 1, (2, 0, 3), None),
    ],
)
def test_oracle_pins_spec_differences(
    a_shape: tuple[int, ...],
    b_shape: tuple[int, ...],
    axis: int,
    ov_expected: tuple[int, ...] | None,
    spec_expected: tuple[int, ...] | None,
) -> None:
    """OpenVINO's behaviour where SPEC differs, and onnx-bcast following SPEC there."""
    case = Case(a_shape, b_shape, "pdpd", axis, "pdpd")
    assert is_spec_difference(case)
    assert ov_elementwise_shape(a_shape, b_shape, auto_broadcast="pdpd", axis=axis) == ov_expected
    aligned = spec_pdpd_alignment(case)
    assert (None if aligned is None else a_shape) == spec_expected
    if spec_expected is None:
        with pytest.raises(onnx_bcast.BroadcastError):
            onnx_bcast.elementwise_shape(a_shape, b_shape, auto_broadcast="pdpd", axis=axis)
    else:
        assert tuple(onnx_bcast.elementwise_shape(a_shape, b_shape, auto_broadcast="pdpd", axis=axis)) == spec_expected


def test_oracle_mod_and_div_match_onnx() -> None:
    """ONNX Mod fmod=0 (sign of the divisor) is OpenVINO FloorMod, fmod=1 (sign of the dividend) is Mod;
    ONNX integer Div truncates, and so does OpenVINO's Divide with m_pythondiv=False."""
    a = np.array([7, -7, 7, -7, 5, 0, -6], np.int32)
    b = np.array([3, 3, -3, -3, -5, 3, 4], np.int32)
    np.testing.assert_array_equal(ov_elementwise("Mod", a, b, fmod=0), np.int32([1, 2, -2, -1, 0, 0, 2]), strict=True)
    np.testing.assert_array_equal(ov_elementwise("Mod", a, b, fmod=1), np.int32([1, -1, 1, -1, 0, 0, -2]), strict=True)
    np.testing.assert_array_equal(ov_elementwise("Div", a, b), np.int32([2, -2, -2, 2, -1, 0, -1]), strict=True)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    np.testing.assert_array_equal(ov_elementwise("Mod", af, bf, fmod=1), np.fmod(af, bf), strict=True)


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "axis"),
    [((2, 3, 4), (3, 1), 1), ((2, 3, 4), (3,), 1), ((2, 3, 4), (2,), 0), ((2, 3, 4), (), 3), ((2, 3), (3,), -1),
     ((2, 1, 4), (1, 4), -1), ((3,), (3,), 0)],
)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"])
def test_oracle_pdpd_native_equals_aligned_form(
    op: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...], axis: int
) -> None:
    """The form ``ov_elementwise`` falls back on where the CPU plugin refuses pdpd: B reshaped, numpy rule."""
    a, b = operands(op, np.float32, a_shape, b_shape, seed=1)
    native = ov_elementwise(op, a, b, auto_broadcast="pdpd", axis=axis)
    aligned = ov_elementwise(op, a, b.reshape(ov_pdpd_aligned_shape(a_shape, b_shape, axis)), auto_broadcast="numpy")
    assert native is not None and native.shape == a_shape
    np.testing.assert_array_equal(native, aligned, strict=True)


def test_oracle_values() -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.array([[10.0], [20.0], [30.0]], dtype=np.float32)
    got = ov_elementwise("Add", a, b, auto_broadcast="pdpd", axis=1)
    np.testing.assert_array_equal(got, a + b.reshape(1, 3, 1), strict=True)
    got = ov_elementwise("Less", a, np.float32(5).reshape(()), auto_broadcast="pdpd")
    np.testing.assert_array_equal(got, a < 5, strict=True)
    assert ov_elementwise("Sub", a, b.reshape(3), auto_broadcast="numpy") is None


# --- (1) shape rule and validity (zero-size dims included: nothing is executed) ------------------------------------


@settings(DETERMINISTIC, max_examples=400)
@given(case=cases(allow_zero=True))
def test_shape_rule_matches_openvino(case: Case) -> None:
    expected = ov_elementwise_shape(case.a_shape, case.b_shape, **case.ov_kwargs())
    if expected is None:
        with pytest.raises(onnx_bcast.BroadcastError):
            onnx_bcast.elementwise_shape(case.a_shape, case.b_shape, **case.bcast_kwargs())
    else:
        assert tuple(onnx_bcast.elementwise_shape(case.a_shape, case.b_shape, **case.bcast_kwargs())) == expected


# --- (2) kernel values against OpenVINO's CPU plugin ---------------------------------------------------------------


OP_DTYPE_IDS = [f"{op}-{np.dtype(dtype).name}" + (f"-fmod{fmod}" if op == "Mod" else "")
                for op, dtype, fmod in OP_DTYPES]


@pytest.mark.parametrize("op_dtype", OP_DTYPES, ids=OP_DTYPE_IDS)
@settings(DETERMINISTIC, max_examples=10)  # x 27 (op, dtype) pairs
@given(case=cases(allow_zero=None), seed=st.integers(0, 2**32 - 1))
def test_values_match_openvino(case: Case, op_dtype: tuple[str, type[np.generic], int], seed: int) -> None:
    op, dtype, fmod = op_dtype
    a, b = operands(op, dtype, case.a_shape, case.b_shape, seed)
    attrs = {"fmod": fmod} if op == "Mod" else {}
    expected = ov_elementwise(op, a, b, fmod=fmod, **case.ov_kwargs())
    if expected is None:
        with pytest.raises(onnx_bcast.BroadcastError):
            onnx_bcast.elementwise(op, a, b, **case.bcast_kwargs(), **attrs)
        return
    got = onnx_bcast.elementwise(op, a, b, **case.bcast_kwargs(), **attrs)
    assert_values_equal(op, np.asarray(got), expected, a)


# --- (3) the ops run through ONNX Runtime, A and B graph inputs of dynamic dims ------------------------------------


def elementwise_model(op: str, spelling: str, axis: int, ranks: tuple[int, int], dtype: type[np.generic],
                      fmod: int) -> onnx.ModelProto:
    """A one-node model; every input dim is a distinct dim_param, so the broadcast is checked at run time."""
    elem_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    out_type = helper.np_dtype_to_tensor_dtype(np.dtype(np.bool_)) if op in COMPARISONS + LOGICAL else elem_type
    inputs = [
        helper.make_tensor_value_info(name, elem_type, [f"{name}{i}" for i in range(rank)])
        for name, rank in zip(("A", "B"), ranks, strict=True)
    ]
    attrs: dict = {"auto_broadcast": spelling, "axis": axis}
    if op == "Mod":
        attrs["fmod"] = fmod
    node = helper.make_node(op, ["A", "B"], ["C"], domain="onnx_bcast", **attrs)
    graph = helper.make_graph([node], "elementwise", inputs, [helper.make_tensor_value_info("C", out_type, None)])
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
        ir_version=10,
    )


@cache
def elementwise_session(op: str, spelling: str, axis: int, ranks: tuple[int, int], dtype: type[np.generic],
                        fmod: int) -> onnxruntime.InferenceSession:
    return onnx_bcast.InferenceSession(elementwise_model(op, spelling, axis, ranks, dtype, fmod))


def run_session(case: Case, op: str, dtype: type[np.generic], fmod: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    session = elementwise_session(op, case.spelling, case.axis, (a.ndim, b.ndim), dtype, fmod)
    (got,) = session.run(None, {"A": a, "B": b})
    return got


@pytest.mark.parametrize("op_dtype", OP_DTYPES, ids=OP_DTYPE_IDS)
@settings(DETERMINISTIC, max_examples=3)  # x 27 (op, dtype) pairs
@given(case=cases(allow_zero=None), seed=st.integers(0, 2**32 - 1))
def test_onnxruntime_matches_openvino(case: Case, op_dtype: tuple[str, type[np.generic], int], seed: int) -> None:
    op, dtype, fmod = op_dtype
    a, b = operands(op, dtype, case.a_shape, case.b_shape, seed)
    expected = ov_elementwise(op, a, b, fmod=fmod, **case.ov_kwargs())
    if expected is None:
        with pytest.raises(onnx_bcast.BroadcastError):
            run_session(case, op, dtype, fmod, a, b)
        return
    assert_values_equal(op, run_session(case, op, dtype, fmod, a, b), expected, a)


# --- SPEC's marked differences: SPEC is the reference (OpenVINO's arithmetic on B aligned as SPEC says) ------------


@settings(DETERMINISTIC, max_examples=80)
@given(
    case=cases(allow_zero=None, differences=True),
    op_dtype=st.sampled_from(OP_DTYPES),
    seed=st.integers(0, 2**32 - 1),
    through_ort=st.booleans(),
)
def test_spec_differences_follow_spec(
    case: Case, op_dtype: tuple[str, type[np.generic], int], seed: int, through_ort: bool
) -> None:
    op, dtype, fmod = op_dtype
    a, b = operands(op, dtype, case.a_shape, case.b_shape, seed)
    attrs = {"fmod": fmod} if op == "Mod" else {}
    aligned = spec_pdpd_alignment(case)
    if aligned is None:
        with pytest.raises(onnx_bcast.BroadcastError):
            onnx_bcast.elementwise_shape(case.a_shape, case.b_shape, **case.bcast_kwargs())
        with pytest.raises(onnx_bcast.BroadcastError):
            if through_ort:
                run_session(case, op, dtype, fmod, a, b)
            else:
                onnx_bcast.elementwise(op, a, b, **case.bcast_kwargs(), **attrs)
        return
    assert tuple(onnx_bcast.elementwise_shape(case.a_shape, case.b_shape, **case.bcast_kwargs())) == case.a_shape
    expected = ov_elementwise(op, a, b.reshape(aligned), auto_broadcast="numpy", fmod=fmod)
    assert expected is not None and expected.shape == case.a_shape
    if through_ort:
        got = run_session(case, op, dtype, fmod, a, b)
    else:
        got = np.asarray(onnx_bcast.elementwise(op, a, b, **case.bcast_kwargs(), **attrs))
    assert_values_equal(op, got, expected, a)
