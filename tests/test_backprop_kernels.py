"""The backprop kernels (issue 13) against two independent oracles (tests/backprop_oracles.py): the brute-force
adjoint built from the forward kernels, and jax's vjp. The cases are tests/backprop_cases.py; hypothesis checks the
adjoint identity on generated shapes of every mode."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import onnx_bcast
from tests import backprop_oracles as oracles
from tests.backprop_cases import (
    BROADCAST_BACKPROP,
    CASES,
    INVALID,
    UNBROADCAST,
    V0_BACKPROP,
    VALID,
    BpCase,
    cases_of,
)

DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64)]
# every numeric tensor type of SPEC §1 (no bool, no string)
NUMERIC = [np.dtype(t) for t in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.int16, np.int32,
                                 np.int64, np.uint8, np.uint16, np.uint32, np.uint64)]


def _ints(values, dtype=np.int64) -> np.ndarray:
    return np.asarray(list(values), dtype=dtype).reshape(-1)


def run_kernel(case: BpCase, delta: np.ndarray, index_dtype=np.int64) -> tuple[np.ndarray, ...]:
    """The case's kernel on ``delta``: its outputs as a tuple (shape inputs as 1-D arrays of ``index_dtype``)."""
    if case.op == BROADCAST_BACKPROP:
        axes = None if case.axes is None else _ints(case.axes, index_dtype)
        return (onnx_bcast.broadcast_backprop(delta, _ints(case.data_shape, index_dtype), axes, mode=case.mode,
                                              axis=case.axis),)
    if case.op == V0_BACKPROP:
        return (onnx_bcast.broadcast_v0_backprop(delta, list(case.broadcast_axes)),)
    return tuple(onnx_bcast.unbroadcast(delta, _ints(case.a_shape, index_dtype), _ints(case.b_shape, index_dtype),
                                        auto_broadcast=case.mode, axis=case.axis))


def jax_grads(case: BpCase, delta: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """The gradients from jax, once per jax formulation of the case's mode."""
    if case.op == BROADCAST_BACKPROP:
        return [(g,) for g in oracles.jax_broadcast_backprop(delta, case.data_shape, case.axes, case.mode, case.axis)]
    if case.op == V0_BACKPROP:
        return [(oracles.jax_v0_backprop(delta, case.broadcast_axes),)]
    return oracles.jax_unbroadcast(delta, case.a_shape, case.b_shape, case.mode, case.axis)


def _params(cases: list[BpCase], dtypes: list[np.dtype]) -> list:
    return [pytest.param(c, d, id=f"{c.op}-{c.name}-{d.name}") for c in cases for d in dtypes]


def _ids(cases: list[BpCase]) -> list:
    return [pytest.param(c, id=f"{c.op}-{c.name}") for c in cases]


# --- the case list ----------------------------------------------------------------------------------------------

def test_case_list_covers_every_op_and_mode() -> None:
    modes = {(c.op, c.canonical_mode) for c in VALID}
    assert {(BROADCAST_BACKPROP, m) for m in ("numpy", "explicit", "bidirectional", "pdpd")} <= modes
    assert {(UNBROADCAST, r) for r in ("none", "numpy", "pdpd")} <= modes
    assert (V0_BACKPROP, "") in modes
    for op in (BROADCAST_BACKPROP, V0_BACKPROP, UNBROADCAST):
        assert cases_of(op, valid=False), op
    assert len({(c.op, c.name) for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", _ids(VALID))
def test_hand_written_output_shape_is_the_forward_output(case: BpCase) -> None:
    """delta's shape in the case list (written from SPEC §2) is what the forward kernel produces."""
    if case.op == BROADCAST_BACKPROP:
        shapes = [oracles.sources_broadcast(case.data_shape, case.target, case.axes, case.mode, case.axis).shape]
    elif case.op == V0_BACKPROP:
        shapes = [oracles.sources_v0(case.out, case.broadcast_axes).shape]
    else:
        shapes = [s.shape for s in oracles.sources_unbroadcast(case.a_shape, case.b_shape, case.mode, case.axis)]
    assert all(s == case.out for s in shapes), (shapes, case.out)


# --- valid cases against both oracles -----------------------------------------------------------------------------

@pytest.mark.parametrize(("case", "dtype"), _params(VALID, DTYPES))
def test_kernel_against_brute_force(case: BpCase, dtype: np.dtype) -> None:
    delta = oracles.case_delta(case, dtype)
    oracles.assert_case_outputs(case, run_kernel(case, delta), delta)


@pytest.mark.parametrize(("case", "dtype"), _params(VALID, DTYPES))
def test_kernel_against_jax(case: BpCase, dtype: np.dtype) -> None:
    delta = oracles.case_delta(case, dtype)
    got = run_kernel(case, delta)
    abs_delta = np.abs(delta.astype(np.float64))
    for form, (grads, sums) in enumerate(zip(jax_grads(case, delta), jax_grads(case, abs_delta), strict=True)):
        for i, (g, e, s, shape, n) in enumerate(zip(got, grads, sums, case.grad_shapes, case.n_summed, strict=True)):
            oracles.assert_gradient(g, dtype, shape, e, s, n, what=f"jax form {form}, output {i}")


@pytest.mark.parametrize("case", _ids([c for c in VALID if c.op != V0_BACKPROP]))
@pytest.mark.parametrize("form", ["int32", "list"])
def test_shape_inputs_int32_and_sequences(case: BpCase, form: str) -> None:
    """data_shape/axes_mapping/a_shape/b_shape as int32 tensors or plain sequences give the int64 result."""
    delta = oracles.case_delta(case, np.dtype(np.float64))
    expected = run_kernel(case, delta)
    if form == "int32":
        got = run_kernel(case, delta, index_dtype=np.int32)
    elif case.op == BROADCAST_BACKPROP:
        got = (onnx_bcast.broadcast_backprop(delta, list(case.data_shape), case.axes and list(case.axes),
                                             **case.kernel_kwargs()),)
    else:
        got = onnx_bcast.unbroadcast(delta, list(case.a_shape), list(case.b_shape), **case.kernel_kwargs())
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("dtype", [pytest.param(d, id=d.name) for d in NUMERIC])
@pytest.mark.parametrize("op", [BROADCAST_BACKPROP, V0_BACKPROP, UNBROADCAST])
def test_every_numeric_type_keeps_its_type(op: str, dtype: np.dtype) -> None:
    """Output dtype == delta's dtype for every numeric type, values as the brute force gives them."""
    case = {BROADCAST_BACKPROP: "numpy_31_to_236", V0_BACKPROP: "v0_234_axes02", UNBROADCAST: "numpy_213_41"}[op]
    case = next(c for c in cases_of(op) if c.name == case)
    delta = oracles.case_delta(case, dtype)
    oracles.assert_case_outputs(case, run_kernel(case, delta), delta)


# --- float16/bfloat16: summed in float32, rounded once; integers: their own type ---------------------------------

# the sum of [big, 1, 1, 1, 1] is big + 4, exact in float32 and representable in the narrow type, while adding in
# the narrow type loses every 1 (big + 1 is a tie that rounds back to big, an even mantissa)
NARROW = [pytest.param(np.dtype(np.float16), 2048.0, id="float16"),
          pytest.param(np.dtype(ml_dtypes.bfloat16), 256.0, id="bfloat16")]


@pytest.mark.parametrize(("dtype", "big"), NARROW)
def test_narrow_floats_are_summed_in_float32_and_rounded_once(dtype: np.dtype, big: float) -> None:
    column = np.array([big, 1, 1, 1, 1], dtype=dtype)
    assert column.astype(np.float32).sum() == big + 4 and np.array(big + 4, dtype=dtype) == big + 4
    naive = np.array(0, dtype=dtype)
    for value in column:
        naive = (naive + value).astype(dtype)
    assert naive == big  # what summing in the narrow type would give
    # (5, 2): two data elements, five copies each; built in float64 and cast once (with numpy 2.0, bfloat16 * 2
    # is float32)
    delta = np.stack([column.astype(np.float64), 2 * column.astype(np.float64)], axis=1).astype(dtype)
    assert delta.dtype == dtype
    grad = onnx_bcast.broadcast_backprop(delta, _ints((2,)), mode="numpy")
    assert grad.dtype == dtype and grad.tolist() == [big + 4, 2 * big + 8]
    grad = onnx_bcast.broadcast_v0_backprop(delta, [0])
    assert grad.dtype == dtype and grad.tolist() == [big + 4, 2 * big + 8]
    grad_a, grad_b = onnx_bcast.unbroadcast(delta, _ints((5, 2)), _ints((1, 2)))
    assert grad_b.dtype == dtype and grad_b.tolist() == [[big + 4, 2 * big + 8]]
    assert grad_a.dtype == dtype and np.array_equal(grad_a, delta)


@pytest.mark.parametrize(("dtype", "values"), [
    pytest.param(np.int8, [100, 100, 100, -128], id="int8"),
    pytest.param(np.uint8, [200, 100, 255], id="uint8"),
    pytest.param(np.int32, [2**31 - 1, 1, 2**31 - 1], id="int32"),
    pytest.param(np.uint64, [2**64 - 1, 2], id="uint64"),
    pytest.param(np.int64, [2**63 - 1, 1, 2**63 - 1], id="int64"),
    pytest.param(np.int64, [2**53, 1], id="int64_exact_beyond_2**53"),
    pytest.param(np.uint64, [2**53, 1], id="uint64_exact_beyond_2**53"),
])
def test_integers_are_summed_in_their_own_type(dtype, values) -> None:
    """Integer sums wrap as integers of delta's type do (no widening, no float)."""
    dtype = np.dtype(dtype)
    bits = 8 * dtype.itemsize
    exact = sum(values) % 2**bits
    if dtype.kind == "i" and exact >= 2 ** (bits - 1):
        exact -= 2**bits
    delta = np.array(values, dtype=dtype).reshape(-1, 1)
    grad = onnx_bcast.broadcast_backprop(delta, _ints((1, 1)))
    assert grad.dtype == dtype and grad.tolist() == [[exact]]
    expected, _ = oracles.brute_broadcast_backprop(delta, (1, 1), delta.shape, None, "numpy", -1)
    assert expected.tolist() == [[exact]]
    assert onnx_bcast.broadcast_v0_backprop(delta.reshape(-1), [0]).tolist() == exact
    assert onnx_bcast.unbroadcast(delta, _ints(delta.shape), _ints((1,)))[1].tolist() == [exact]


# --- invalid cases ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", _ids(INVALID))
def test_invalid_case_raises_broadcast_error(case: BpCase) -> None:
    delta = oracles.case_delta(case, np.dtype(np.float32))
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        run_kernel(case, delta)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert message.startswith(case.head), f"{message!r} does not start with {case.head!r}"
    for word in case.error_words:
        assert word in message, f"{word!r} not in {message!r}"


BAD_INPUTS = [
    pytest.param(lambda: onnx_bcast.broadcast_backprop(np.ones((2, 3)), np.array([2.0, 3.0])),
                 ("BroadcastBackprop(mode=numpy)", "data_shape", "float64"), id="data_shape_float"),
    pytest.param(lambda: onnx_bcast.broadcast_backprop(np.ones((2, 3)), np.array([[2, 3]])),
                 ("BroadcastBackprop(mode=numpy)", "data_shape", "1-D"), id="data_shape_2d"),
    pytest.param(lambda: onnx_bcast.broadcast_backprop(np.ones((2, 3)), _ints((3,)), np.array([1.0]),
                                                       mode="explicit"),
                 ("BroadcastBackprop(mode=explicit)", "axes_mapping"), id="axes_mapping_float"),
    pytest.param(lambda: onnx_bcast.broadcast_backprop(np.ones((2, 3), bool), _ints((3,))),
                 ("BroadcastBackprop(mode=numpy)", "numeric", "bool"), id="delta_bool"),
    pytest.param(lambda: onnx_bcast.broadcast_backprop(np.array([["a"]]), _ints((1,))),
                 ("BroadcastBackprop(mode=numpy)", "numeric"), id="delta_string"),
    pytest.param(lambda: onnx_bcast.broadcast_backprop(np.ones((2, 3)), _ints((3,)), mode="pdpd", axis=1.5),
                 ("BroadcastBackprop(mode=pdpd)", "axis"), id="pdpd_axis_not_int"),
    pytest.param(lambda: onnx_bcast.broadcast_backprop(np.ones((1,)), _ints((1,) * 65)),
                 ("BroadcastBackprop(mode=numpy)", "65", "64"), id="data_shape_rank_65"),
    pytest.param(lambda: onnx_bcast.broadcast_backprop(np.ones((2, 3)), _ints((3,)), mode=3),
                 ("BroadcastBackprop", "mode", "int"), id="mode_not_a_string"),
    pytest.param(lambda: onnx_bcast.broadcast_v0_backprop(np.ones((2, 3)), [0.5]),
                 ("BroadcastV0Backprop", "broadcast_axes"), id="v0_axes_float"),
    pytest.param(lambda: onnx_bcast.broadcast_v0_backprop(np.ones((2, 3), bool), [0]),
                 ("BroadcastV0Backprop", "numeric"), id="v0_delta_bool"),
    pytest.param(lambda: onnx_bcast.unbroadcast(np.ones((2, 3)), np.array([[2, 3]]), _ints((3,))),
                 ("Unbroadcast(auto_broadcast=numpy)", "a_shape", "1-D"), id="unbroadcast_a_shape_2d"),
    pytest.param(lambda: onnx_bcast.unbroadcast(np.ones((2, 3)), _ints((2, 3)), np.array([3.0])),
                 ("Unbroadcast(auto_broadcast=numpy)", "b_shape", "float64"), id="unbroadcast_b_shape_float"),
    pytest.param(lambda: onnx_bcast.unbroadcast(np.ones((2, 3)), _ints((2, 3)), None),
                 ("Unbroadcast(auto_broadcast=numpy)", "b_shape", "required"), id="unbroadcast_b_shape_missing"),
    pytest.param(lambda: onnx_bcast.unbroadcast(np.ones((1,)), _ints((1,) * 65), _ints((1,))),
                 ("Unbroadcast(auto_broadcast=numpy)", "65", "64"), id="unbroadcast_a_shape_rank_65"),
    pytest.param(lambda: onnx_bcast.unbroadcast(np.ones((2, 3)), _ints((2, 3)), _ints((3,)), auto_broadcast="pdpd",
                                                axis=-2),
                 ("Unbroadcast(auto_broadcast=pdpd)", "-2"), id="unbroadcast_axis_below_minus1"),
    pytest.param(lambda: onnx_bcast.unbroadcast(np.ones((2, 3)), _ints((2, 3)), _ints((3,)), auto_broadcast="bidi"),
                 ("Unbroadcast", "bidi"), id="unbroadcast_unknown_rule"),
    pytest.param(lambda: onnx_bcast.unbroadcast(np.ones((2, 3), bool), _ints((2, 3)), _ints((3,))),
                 ("Unbroadcast(auto_broadcast=numpy)", "numeric"), id="unbroadcast_delta_bool"),
]


@pytest.mark.parametrize(("call", "words"), BAD_INPUTS)
def test_bad_inputs_raise_broadcast_error(call, words) -> None:
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        call()
    for word in words:
        assert word in str(info.value), f"{word!r} not in {str(info.value)!r}"


# --- hypothesis: the adjoint identity -----------------------------------------------------------------------------
# <forward(x), delta> == <x, backprop(delta)> in float64, on shapes generated valid by construction from SPEC §2;
# dims 0..3 (zero-size included), ranks 0..4 (0-d included). Both sides are summed exactly (math.fsum) from rounded
# products, so the difference is the kernel's summation error: at most n_summed * eps * sum|x * delta|.

DIM = st.integers(0, 3)
SHAPE = st.lists(DIM, max_size=4).map(tuple)
SEED = st.integers(0, 2**32 - 1)
PER_MODE = settings(max_examples=130, derandomize=True, deadline=None)


def _one_or(draw, n: int) -> int:
    return draw(st.sampled_from((1, n)))


@st.composite
def numpy_problems(draw):
    out = draw(SHAPE)
    r = draw(st.integers(0, len(out)))
    data = tuple(_one_or(draw, n) for n in out[len(out) - r:])
    return data, out, None, -1, out


@st.composite
def explicit_problems(draw):
    out = draw(SHAPE)
    axes = sorted(draw(st.sets(st.integers(0, len(out) - 1), max_size=len(out)))) if out else []
    data = tuple(_one_or(draw, out[a]) for a in axes)
    ones = [i for i, n in enumerate(out) if n == 1]
    if not axes and ones and draw(st.booleans()):  # the scalar's one-axis form, on a size-1 output dim
        axes = [draw(st.sampled_from(ones))]
    return data, out, tuple(axes), -1, out


@st.composite
def bidirectional_problems(draw):
    base = draw(SHAPE)
    rank = len(base)
    r, rt = draw(st.integers(0, rank)), draw(st.integers(0, rank))
    data = tuple(_one_or(draw, n) for n in base[rank - r:])
    target = tuple(_one_or(draw, n) for n in base[rank - rt:])
    return data, target, None, -1, tuple(np.broadcast_shapes(data, target))  # may be larger than the target


@st.composite
def pdpd_problems(draw):
    out = draw(SHAPE)
    start = draw(st.integers(0, len(out)))
    data = tuple(_one_or(draw, n) for n in out[start:])
    # before start the target is the output; opposite a data dim equal to the output's, the target may be 1
    target = out[:start] + tuple(n if d == 1 else _one_or(draw, n) for d, n in zip(data, out[start:], strict=True))
    axis = draw(st.sampled_from((-1, start)))  # data covers the target to its end, so both name the same start
    return data, target, None, axis, out


def _close(lhs_terms: np.ndarray, rhs_terms: np.ndarray, n_summed: int) -> None:
    lhs, rhs = math.fsum(lhs_terms.ravel()), math.fsum(rhs_terms.ravel())
    scale = math.fsum(np.abs(lhs_terms).ravel())
    bound = (n_summed + 2) * oracles.F64_EPS * scale + 1e-300
    assert abs(lhs - rhs) <= bound, (lhs, rhs, bound)


def _check_broadcast_adjoint(mode: str, problem, seed: int) -> None:
    data_shape, target, axes, axis, out = problem
    rng = np.random.default_rng(seed)
    x, delta = np.asarray(rng.standard_normal(data_shape)), np.asarray(rng.standard_normal(out))
    forward = np.asarray(onnx_bcast.broadcast(x, _ints(target), None if axes is None else _ints(axes), mode=mode,
                                              axis=axis))
    assert forward.shape == out
    grad = onnx_bcast.broadcast_backprop(delta, _ints(data_shape), None if axes is None else _ints(axes), mode=mode,
                                         axis=axis)
    assert grad.shape == data_shape and grad.dtype == np.float64
    n = delta.size // x.size if x.size else 0
    _close(forward * delta, x * grad, n)


@PER_MODE
@given(numpy_problems(), SEED)
@example(((), (), None, -1, ()), 0)
@example(((1,), (3, 0), None, -1, (3, 0)), 0)
def test_adjoint_identity_numpy(problem, seed) -> None:
    _check_broadcast_adjoint("numpy", problem, seed)


@PER_MODE
@given(explicit_problems(), SEED)
@example(((), (2, 1), (1,), -1, (2, 1)), 0)
@example(((0,), (2, 0), (1,), -1, (2, 0)), 0)
def test_adjoint_identity_explicit(problem, seed) -> None:
    _check_broadcast_adjoint("explicit", problem, seed)


@PER_MODE
@given(bidirectional_problems(), SEED)
@example(((3, 1), (1,), None, -1, (3, 1)), 0)
@example(((2, 0), (1, 1), None, -1, (2, 0)), 0)
def test_adjoint_identity_bidirectional(problem, seed) -> None:
    _check_broadcast_adjoint("bidirectional", problem, seed)


@PER_MODE
@given(pdpd_problems(), SEED)
@example(((), (2, 3), None, 2, (2, 3)), 0)
@example(((1,), (2, 0), None, 1, (2, 0)), 0)
def test_adjoint_identity_pdpd(problem, seed) -> None:
    _check_broadcast_adjoint("pdpd", problem, seed)


@st.composite
def v0_problems(draw):
    out = draw(SHAPE)
    axes = draw(st.permutations(sorted(draw(st.sets(st.integers(0, max(len(out) - 1, 0)), max_size=len(out))))))
    return out, tuple(axes)


@PER_MODE
@given(v0_problems(), SEED)
@example(((), ()), 0)
@example(((2, 0), (1,)), 0)
def test_adjoint_identity_v0(problem, seed) -> None:
    out, axes = problem
    arg_shape = tuple(n for i, n in enumerate(out) if i not in set(axes))
    rng = np.random.default_rng(seed)
    x, delta = np.asarray(rng.standard_normal(arg_shape)), np.asarray(rng.standard_normal(out))
    forward = np.asarray(onnx_bcast.broadcast_v0(x, list(out), list(axes)))
    grad = onnx_bcast.broadcast_v0_backprop(delta, list(axes))
    assert grad.shape == arg_shape and grad.dtype == np.float64
    _close(forward * delta, x * grad, delta.size // x.size if x.size else 0)


@st.composite
def unbroadcast_problems(draw, rule: str):
    """(A shape, B shape, axis, output shape) valid under ``rule`` by construction."""
    if rule == "none":
        a = draw(SHAPE)
        return a, a, -1, a
    if rule == "numpy":
        data, target, _, _, out = draw(bidirectional_problems())
        return (data, target, -1, out) if draw(st.booleans()) else (target, data, -1, out)
    a = draw(SHAPE)
    start = draw(st.integers(0, len(a)))
    kept = draw(st.integers(0, len(a) - start))
    b = tuple(_one_or(draw, n) for n in a[start:start + kept])
    if draw(st.booleans()):  # axis -1: B's rank (before trimming its trailing 1s) puts it at start
        return a, b + (1,) * (len(a) - start - kept), -1, a
    return a, b + (1,) * draw(st.integers(0, len(a) - kept)), start, a


def _check_unbroadcast_adjoint(rule: str, problem, seed: int) -> None:
    a_shape, b_shape, axis, out = problem
    rng = np.random.default_rng(seed)
    a, b, delta = (np.asarray(rng.standard_normal(s)) for s in (a_shape, b_shape, out))
    a_b = np.asarray(onnx_bcast.elementwise("Add", a, np.zeros(b_shape), auto_broadcast=rule, axis=axis))
    b_b = np.asarray(onnx_bcast.elementwise("Add", np.zeros(a_shape), b, auto_broadcast=rule, axis=axis))
    assert a_b.shape == out and b_b.shape == out
    grad_a, grad_b = onnx_bcast.unbroadcast(delta, _ints(a_shape), _ints(b_shape), auto_broadcast=rule, axis=axis)
    assert grad_a.shape == a_shape and grad_b.shape == b_shape
    assert grad_a.dtype == np.float64 and grad_b.dtype == np.float64
    n = max(delta.size // a.size if a.size else 0, delta.size // b.size if b.size else 0)
    _close(np.concatenate([(a_b * delta).ravel(), (b_b * delta).ravel()]),
           np.concatenate([(a * grad_a).ravel(), (b * grad_b).ravel()]), n)


@PER_MODE
@given(unbroadcast_problems("none"), SEED)
@example(((), (), -1, ()), 0)
def test_adjoint_identity_unbroadcast_none(problem, seed) -> None:
    _check_unbroadcast_adjoint("none", problem, seed)


@PER_MODE
@given(unbroadcast_problems("numpy"), SEED)
@example(((1,), (0,), -1, (0,)), 0)
def test_adjoint_identity_unbroadcast_numpy(problem, seed) -> None:
    _check_unbroadcast_adjoint("numpy", problem, seed)


@PER_MODE
@given(unbroadcast_problems("pdpd"), SEED)
@example(((2, 3, 4), (3, 1), -1, (2, 3, 4)), 0)
@example(((2, 0), (1,), -1, (2, 0)), 0)
def test_adjoint_identity_unbroadcast_pdpd(problem, seed) -> None:
    _check_unbroadcast_adjoint("pdpd", problem, seed)


@pytest.mark.parametrize("layout", ["fortran", "reversed", "strided", "broadcast_view", "list"])
def test_delta_layout_does_not_matter(layout: str) -> None:
    """A non-contiguous delta (or a nested list) gives the gradient of its values."""
    base = oracles.make_delta((4, 3, 6), np.dtype(np.float64), 7)
    delta = {"fortran": np.asfortranarray(base), "reversed": base[::-1, :, ::-1], "strided": base[:, :, ::2],
             "broadcast_view": np.broadcast_to(base[:1], base.shape), "list": base.tolist()}[layout]
    values = np.array(delta)
    grad = onnx_bcast.broadcast_backprop(delta, _ints((3, 1)), mode="numpy")
    expected, sums = oracles.brute_broadcast_backprop(values, (3, 1), values.shape, None, "numpy", -1)
    oracles.assert_gradient(grad, np.dtype(np.float64), (3, 1), expected, sums, values.size // 3)
