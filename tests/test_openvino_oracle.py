"""Property tests: onnx-bcast's Broadcast agrees with OpenVINO's Broadcast-1/-3 outside SPEC's marked differences."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import onnx_bcast

try:
    from ov_oracle import OV_MODES, SHAPE_DTYPES, ov_broadcast, ov_broadcast_shape
except ImportError:  # tests/ imported as a package
    from tests.ov_oracle import OV_MODES, SHAPE_DTYPES, ov_broadcast, ov_broadcast_shape

# Deterministic in CI: fixed example sequence, no example database, no timing-based failures.
DETERMINISTIC = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

#: Spellings onnx-bcast must accept for each OpenVINO mode (case-insensitive, ``none`` = ``explicit``).
SPELLINGS = {
    "numpy": ("numpy", "NUMPY", "Numpy"),
    "explicit": ("explicit", "none", "EXPLICIT", "None"),
    "bidirectional": ("bidirectional", "BIDIRECTIONAL"),
    "pdpd": ("pdpd", "PDPD"),
}

MAX_RANK = 5


@dataclass(frozen=True)
class Case:
    """One Broadcast call, in OpenVINO terms (mode) and in onnx-bcast terms (spelling)."""

    data_shape: tuple[int, ...]
    target: tuple[int, ...]
    axes: tuple[int, ...] | None
    mode: str
    axis: int
    spelling: str
    shape_dtype: type[np.integer]
    axes_dtype: type[np.integer]

    def ov_kwargs(self, opset: int) -> dict:
        return {
            "opset": opset,
            "mode": self.mode,
            "axis": self.axis,
            "shape_dtype": self.shape_dtype,
            "axes_dtype": self.axes_dtype,
        }

    def bcast_kwargs(self) -> dict:
        kwargs: dict = {"mode": self.spelling}
        if self.mode == "pdpd":
            kwargs["axis"] = self.axis
        return kwargs

    def target_array(self) -> np.ndarray:
        return np.asarray(self.target, dtype=self.shape_dtype)

    def axes_array(self) -> np.ndarray | None:
        return None if self.axes is None else np.asarray(self.axes, dtype=self.axes_dtype)


def is_spec_difference(case: Case) -> bool:
    """True for the cases SPEC §2 marks "(differs)": there OpenVINO is not the reference."""
    if any(v < 0 for v in case.target):
        return True  # negative target dims: OpenVINO reads -1 as dynamic, other negatives as 0
    if case.mode == "explicit" and case.axes is not None and len(set(case.axes)) != len(case.axes):
        return True  # duplicate explicit axes: OpenVINO accepts them and computes garbage
    if case.mode == "pdpd" and case.axis >= 0 and len(case.data_shape) > len(case.target) - case.axis:
        # Data dims beyond R - start (OpenVINO ignores them at validation), which includes scalar data with an
        # axis beyond the target rank (OpenVINO accepts any axis >= R for a scalar).
        return True
    return False


def _dims(allow_zero: bool) -> st.SearchStrategy[int]:
    return st.sampled_from((0, 1, 1, 2, 3, 4) if allow_zero else (1, 1, 2, 3, 4))


@st.composite
def _related_dim(draw: st.DrawFn, other: int, allow_zero: bool, *, more_mismatches: bool = False) -> int:
    """A data dim for the target dim ``other``: mostly compatible (equal or 1), sometimes anything.

    ``more_mismatches`` for the two-way modes, whose callers turn half the mismatches into a size-1 target dim.
    """
    choice = draw(st.sampled_from(("equal", "equal", "one", "any") + (("any",) if more_mismatches else ())))
    if choice == "equal":
        return other
    if choice == "one":
        return 1
    return draw(_dims(allow_zero))


@st.composite
def numpy_cases(draw: st.DrawFn, allow_zero: bool, min_target_rank: int = 0) -> tuple:
    target = draw(st.lists(_dims(allow_zero), min_size=min_target_rank, max_size=MAX_RANK))
    rank = len(target)
    r = draw(st.integers(0, rank))
    if draw(st.integers(0, 7)) == 0:
        r = rank + draw(st.integers(1, 2))  # data rank above the target rank: invalid
    lead = [draw(_dims(allow_zero)) for _ in range(max(0, r - rank))]
    aligned = [draw(_related_dim(t, allow_zero)) for t in target[rank - min(r, rank) :]]
    return tuple(lead + aligned), tuple(target), None, -1


@st.composite
def bidirectional_cases(draw: st.DrawFn, allow_zero: bool, min_target_rank: int = 0) -> tuple:
    target = draw(st.lists(_dims(allow_zero), min_size=min_target_rank, max_size=MAX_RANK))
    rank = len(target)
    r = draw(st.integers(0, MAX_RANK))
    data = []
    for k in range(r):
        i = k + rank - r
        if i < 0:
            data.append(draw(_dims(allow_zero)))
            continue
        dim = draw(_related_dim(target[i], allow_zero, more_mismatches=True))
        if dim != target[i] and draw(st.booleans()):
            target[i] = 1  # a size-1 target dim takes the data dim: output larger than target
        data.append(dim)
    return tuple(data), tuple(target), None, -1


@st.composite
def explicit_cases(draw: st.DrawFn, allow_zero: bool, min_target_rank: int = 0) -> tuple:
    target = draw(st.lists(_dims(allow_zero), min_size=min_target_rank, max_size=MAX_RANK))
    rank = len(target)
    r = draw(st.integers(0, min(rank, 4)))
    axes = sorted(draw(st.permutations(range(rank)))[:r])
    data = [draw(_related_dim(target[a], allow_zero)) for a in axes]
    if r == 0 and rank > 0 and draw(st.booleans()):
        axes = [draw(st.integers(0, rank - 1))]  # a scalar may name one axis whose target dim must be 1
        if draw(st.booleans()):
            target[axes[0]] = 1
    mutation = draw(st.sampled_from(("none", "none", "none", "swap", "out_of_range", "negative", "drop", "add")))
    if mutation == "swap" and len(axes) >= 2:
        i = draw(st.integers(0, len(axes) - 2))
        axes[i], axes[i + 1] = axes[i + 1], axes[i]
    elif mutation == "out_of_range" and axes:
        axes[draw(st.integers(0, len(axes) - 1))] = rank + draw(st.integers(0, 2))
    elif mutation == "negative" and axes:
        axes[draw(st.integers(0, len(axes) - 1))] = draw(st.integers(-3, -1))
    elif mutation == "drop" and axes:
        axes.pop(draw(st.integers(0, len(axes) - 1)))
    elif mutation == "add":
        axes.insert(draw(st.integers(0, len(axes))), draw(st.integers(-1, rank + 1)))
    assume(len(set(axes)) == len(axes))  # duplicates are a SPEC difference
    return tuple(data), tuple(target), tuple(axes), -1


@st.composite
def pdpd_cases(draw: st.DrawFn, allow_zero: bool, min_target_rank: int = 0) -> tuple:
    target = draw(st.lists(_dims(allow_zero), min_size=min_target_rank, max_size=MAX_RANK))
    rank = len(target)
    kind = draw(st.sampled_from(("minus_one", "start", "start", "start", "short", "negative")))
    if kind == "minus_one":
        axis = -1
        r = draw(st.integers(0, rank + 1))  # r > R gives a negative start: invalid
        start = rank - r
    elif kind == "negative":
        axis = draw(st.integers(-4, -2))
        r = draw(st.integers(0, rank))
        start = axis
    else:
        axis = start = draw(st.integers(0, rank))
        r = rank - start
        if kind == "short":
            r = draw(st.integers(0, r))  # fewer data dims than the target has from start: invalid unless equal
    data = []
    for k in range(r):
        i = start + k
        if not 0 <= i < rank:
            data.append(draw(_dims(allow_zero)))
            continue
        dim = draw(_related_dim(target[i], allow_zero, more_mismatches=True))
        if dim != target[i] and draw(st.booleans()):
            target[i] = 1  # a size-1 target dim takes the data dim
        data.append(dim)
    return tuple(data), tuple(target), None, axis


_GENERATORS = {
    "numpy": numpy_cases,
    "explicit": explicit_cases,
    "bidirectional": bidirectional_cases,
    "pdpd": pdpd_cases,
}


@st.composite
def cases(draw: st.DrawFn, opset: int = 3, allow_zero: bool = False, min_target_rank: int = 0) -> Case:
    mode = draw(st.sampled_from(OV_MODES[opset]))
    data_shape, target, axes, axis = draw(_GENERATORS[mode](allow_zero, min_target_rank))
    case = Case(
        data_shape=data_shape,
        target=target,
        axes=axes,
        mode=mode,
        axis=axis,
        spelling=draw(st.sampled_from(SPELLINGS[mode])),
        shape_dtype=draw(st.sampled_from(SHAPE_DTYPES)),
        axes_dtype=draw(st.sampled_from(SHAPE_DTYPES)),
    )
    assume(not is_spec_difference(case))
    return case


def make_data(shape: tuple[int, ...], dtype: type[np.generic]) -> np.ndarray:
    """Distinct values, so that any misplaced element shows."""
    return (np.arange(int(np.prod(shape, dtype=np.int64))) + 1).astype(dtype).reshape(shape)


def check_shape(case: Case, opset: int) -> None:
    expected = ov_broadcast_shape(case.data_shape, case.target, case.axes, **case.ov_kwargs(opset))
    if expected is None:
        with pytest.raises(onnx_bcast.BroadcastError):
            onnx_bcast.broadcast_shape(case.data_shape, case.target, case.axes, **case.bcast_kwargs())
    else:
        got = onnx_bcast.broadcast_shape(case.data_shape, case.target, case.axes, **case.bcast_kwargs())
        assert tuple(got) == expected


def check_values(case: Case, opset: int, dtype: type[np.generic]) -> None:
    data = make_data(case.data_shape, dtype)
    expected = ov_broadcast(data, case.target, case.axes, **case.ov_kwargs(opset))
    if expected is None:
        with pytest.raises(onnx_bcast.BroadcastError):
            onnx_bcast.broadcast(data, case.target_array(), case.axes_array(), **case.bcast_kwargs())
    else:
        got = onnx_bcast.broadcast(data, case.target_array(), case.axes_array(), **case.bcast_kwargs())
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected, strict=True)


# --- the oracle itself (literal expectations from the reference notes, so an OpenVINO change fails loudly) ------


@pytest.mark.parametrize(
    ("data_shape", "target", "axes", "mode", "axis", "expected"),
    [
        ((3, 1), (2, 3, 6), None, "numpy", -1, (2, 3, 6)),
        ((3,), (2, 4), None, "numpy", -1, None),
        ((3, 1), (2, 3, 3), (1, 2), "explicit", -1, (2, 3, 3)),
        ((3, 1), (2, 3, 3), (2, 1), "explicit", -1, None),
        ((), (1, 2), (0,), "explicit", -1, (1, 2)),
        ((3,), (2, 1), None, "bidirectional", -1, (2, 3)),
        ((3,), (3, 3), None, "pdpd", -1, (3, 3)),  # fails if the axis attribute is lost (OpenVINO's default is 0)
        ((3,), (3, 3), None, "pdpd", 1, (3, 3)),
        ((3,), (3, 3), None, "pdpd", 0, None),
        ((3,), (2, 1, 4), None, "pdpd", 1, None),
        ((3, 1), (2, 1, 4), None, "pdpd", 1, (2, 3, 4)),
        ((3,), (2, 3), None, "pdpd", -2, None),
    ],
)
def test_oracle_shape_rule(
    data_shape: tuple[int, ...],
    target: tuple[int, ...],
    axes: tuple[int, ...] | None,
    mode: str,
    axis: int,
    expected: tuple[int, ...] | None,
) -> None:
    for opset in (1, 3) if mode != "bidirectional" else (3,):
        assert ov_broadcast_shape(data_shape, target, axes, opset=opset, mode=mode, axis=axis) == expected


def test_oracle_values() -> None:
    data = np.array([[1.0], [2.0], [3.0]], dtype=np.float32)
    expected = np.array([[[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]]] * 2, dtype=np.float32)
    got = ov_broadcast(data, (2, 1, 4), mode="pdpd", axis=1)
    np.testing.assert_array_equal(got, expected, strict=True)
    got = ov_broadcast(data, (2, 3, 4), (1, 2), mode="explicit")
    np.testing.assert_array_equal(got, expected, strict=True)


# --- shape rule and validity (zero-size dims allowed: nothing is executed in OpenVINO) -------------------------


@settings(DETERMINISTIC, max_examples=300)
@given(case=cases(opset=3, allow_zero=True))
def test_shape_rule_matches_broadcast3(case: Case) -> None:
    check_shape(case, opset=3)


@settings(DETERMINISTIC, max_examples=150)
@given(case=cases(opset=1, allow_zero=True))
def test_shape_rule_matches_broadcast1(case: Case) -> None:
    check_shape(case, opset=1)


# --- values against OpenVINO's CPU plugin (non-empty, non-scalar outputs: OpenVINO crashes on the others) -------


@settings(DETERMINISTIC, max_examples=200)
@given(case=cases(opset=3, min_target_rank=1), dtype=st.sampled_from((np.float32, np.float32, np.float32, np.int32)))
def test_values_match_broadcast3(case: Case, dtype: type[np.generic]) -> None:
    check_values(case, opset=3, dtype=dtype)


@settings(DETERMINISTIC, max_examples=100)
@given(case=cases(opset=1, min_target_rank=1), dtype=st.sampled_from((np.float32, np.int32)))
def test_values_match_broadcast1(case: Case, dtype: type[np.generic]) -> None:
    check_values(case, opset=1, dtype=dtype)


# --- the Broadcast op run through ONNX Runtime ------------------------------------------------------------------


def broadcast_model(spelling: str, axis: int, explicit: bool, elem_type: int) -> onnx.ModelProto:
    """A one-node model: onnx_bcast.Broadcast with data / target_shape (/ axes_mapping) as graph inputs."""
    inputs = [
        helper.make_tensor_value_info("data", elem_type, None),
        helper.make_tensor_value_info("target_shape", TensorProto.INT64, [None]),
    ]
    if explicit:
        inputs.append(helper.make_tensor_value_info("axes_mapping", TensorProto.INT64, [None]))
    node = helper.make_node(
        "Broadcast", [i.name for i in inputs], ["output"], domain="onnx_bcast", mode=spelling, axis=axis
    )
    graph = helper.make_graph([node], "broadcast", inputs, [helper.make_tensor_value_info("output", elem_type, None)])
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
        ir_version=10,
    )


@cache
def broadcast_session(spelling: str, axis: int, explicit: bool, elem_type: int) -> onnxruntime.InferenceSession:
    return onnx_bcast.InferenceSession(broadcast_model(spelling, axis, explicit, elem_type))


@settings(DETERMINISTIC, max_examples=80)
@given(
    # zero-size dims in one case out of five: their outputs are compared by shape only
    case=st.sampled_from((False, False, False, False, True)).flatmap(
        lambda allow_zero: cases(opset=3, allow_zero=allow_zero, min_target_rank=1)
    ),
    dtype=st.sampled_from((np.float32, np.int32)),
)
def test_onnxruntime_matches_broadcast3(case: Case, dtype: type[np.generic]) -> None:
    data = make_data(case.data_shape, dtype)
    explicit = case.mode == "explicit"
    elem_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    session = broadcast_session(case.spelling, case.axis, explicit, elem_type)
    feeds = {"data": data, "target_shape": np.asarray(case.target, dtype=np.int64)}
    if explicit:
        feeds["axes_mapping"] = np.asarray(case.axes, dtype=np.int64)
    expected_shape = ov_broadcast_shape(case.data_shape, case.target, case.axes, **case.ov_kwargs(3))
    if expected_shape is None:
        with pytest.raises(onnx_bcast.BroadcastError):
            session.run(None, feeds)
        return
    (got,) = session.run(None, feeds)
    assert got.shape == expected_shape
    assert got.dtype == data.dtype
    if data.size and 0 not in expected_shape:  # OpenVINO only executes non-empty cases
        expected = ov_broadcast(data, case.target, case.axes, **case.ov_kwargs(3))
        np.testing.assert_array_equal(got, expected, strict=True)
