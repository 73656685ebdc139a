"""The numpy kernels and shape rules against the documents' examples and an element-wise formula."""

from __future__ import annotations

import numpy as np
import pytest

import onnx_bcast
from tests.cases import INVALID_CASES, VALID_CASES, Case, expected_values, sample


def _run_kernel(case: Case, data: np.ndarray) -> np.ndarray:
    fn = onnx_bcast.expand if case.op == "Expand" else onnx_bcast.broadcast
    return fn(data, case.target, case.axes, mode=case.mode, axis=case.axis)


@pytest.mark.parametrize("case", VALID_CASES, ids=lambda c: c.name)
def test_kernel_values_and_shape(case: Case) -> None:
    data = sample(case.data_shape)
    out = _run_kernel(case, data)
    assert out.shape == case.expected_shape
    assert out.dtype == data.dtype
    np.testing.assert_array_equal(out, expected_values(data, case))


@pytest.mark.parametrize("case", VALID_CASES, ids=lambda c: c.name)
def test_shape_rule_matches_document(case: Case) -> None:
    shape = onnx_bcast.broadcast_shape(case.data_shape, case.target, case.axes, mode=case.mode, axis=case.axis)
    assert shape == case.expected_shape


@pytest.mark.parametrize("case", INVALID_CASES, ids=lambda c: c.name)
def test_invalid_raises_named_error(case: Case) -> None:
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        _run_kernel(case, sample(case.data_shape))
    message = str(info.value)
    assert message.startswith(case.op)
    assert isinstance(info.value, ValueError)
    for word in case.error_words:
        assert word in message, message


def test_error_message_follows_the_template() -> None:
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        onnx_bcast.broadcast(np.zeros((2, 3)), [2, 4])
    assert str(info.value) == ("Broadcast(mode=numpy): data dim 1 (size 3) cannot be broadcast to target dim 1 "
                               "(size 4); data (2, 3), target (2, 4)")


def test_shape_rule_never_allocates_huge_outputs() -> None:
    assert onnx_bcast.broadcast_shape((1,), (10**12, 10**6)) == (10**12, 10**6)


@pytest.mark.parametrize("dtype", [np.int8, np.uint64, np.bool_, np.float16, np.float64, np.str_])
def test_kernel_keeps_dtype(dtype: type) -> None:
    data = np.array([1, 0, 1]).astype(dtype)
    out = onnx_bcast.broadcast(data, [2, 3])
    assert out.dtype == data.dtype
    np.testing.assert_array_equal(out, np.stack([data, data]))


@pytest.mark.parametrize("bad", [np.array([2.0, 3.0]), np.array([[2, 3]]), np.array([True, False]), ["2", "3"]])
def test_target_must_be_1d_integers(bad: object) -> None:
    with pytest.raises(onnx_bcast.BroadcastError, match="target_shape"):
        onnx_bcast.broadcast(np.zeros(3), bad)


def test_int32_shapes_accepted() -> None:
    out = onnx_bcast.broadcast(np.arange(2), np.array([3, 2], np.int32), np.array([1], np.int32), mode="explicit")
    np.testing.assert_array_equal(out, np.array([[0, 1]] * 3))


def test_explicit_requires_axes() -> None:
    with pytest.raises(onnx_bcast.BroadcastError, match="axes_mapping is required"):
        onnx_bcast.broadcast(np.zeros(3), [2, 3], mode="explicit")


def test_empty_axes_count_as_absent_outside_explicit() -> None:
    np.testing.assert_array_equal(onnx_bcast.broadcast(np.arange(3), [2, 3], []), np.tile(np.arange(3), (2, 1)))


class TestBroadcastV0:
    """nGraph v0 Broadcast: broadcast_axes are the new output axes."""

    def test_batchnorm_style(self) -> None:
        mean = np.arange(3, dtype=np.float32)
        out = onnx_bcast.broadcast_v0(mean, [2, 3, 4, 5], [0, 2, 3])
        expected = np.empty((2, 3, 4, 5), np.float32)
        for c in range(3):
            expected[:, c] = mean[c]
        np.testing.assert_array_equal(out, expected)

    def test_no_axes_is_identity(self) -> None:
        data = sample((2, 3))
        np.testing.assert_array_equal(onnx_bcast.broadcast_v0(data, [2, 3], []), data)

    @pytest.mark.parametrize(
        ("arg", "shape", "axes", "words"),
        [
            ((1,), (3,), (), "must equal"),  # no size-1 stretching in v0
            ((3,), (2, 3), (2,), "outside"),
            ((3,), (2, 3), (-1,), "outside"),
            ((3,), (2, 3), (1,), "must equal"),
            ((4,), (2, 3), (0,), "must equal"),
        ],
    )
    def test_invalid(self, arg: tuple, shape: tuple, axes: tuple, words: str) -> None:
        with pytest.raises(onnx_bcast.BroadcastError, match=words) as info:
            onnx_bcast.broadcast_v0(np.zeros(arg), shape, axes)
        assert str(info.value).startswith("BroadcastV0")

    def test_duplicate_axes_rejected(self) -> None:
        with pytest.raises(onnx_bcast.BroadcastError, match="duplicates"):
            onnx_bcast.broadcast_v0(np.zeros((3,)), (2, 2, 3), (0, 0, 1))


class TestBroadcastLikeV0:
    """nGraph v0 BroadcastLike: axes deduced left-aligned when not given."""

    def test_deduced_trailing_axis(self) -> None:
        data = sample((2, 3))
        out = onnx_bcast.broadcast_like_v0(data, np.zeros((2, 3, 4)))
        np.testing.assert_array_equal(out, np.repeat(data[:, :, None], 4, axis=2))

    def test_numpy_style_fails_as_in_ngraph(self) -> None:
        with pytest.raises(onnx_bcast.BroadcastError, match="BroadcastLikeV0"):
            onnx_bcast.broadcast_like_v0(np.zeros(3), np.zeros((2, 3)))

    def test_initial_axes_given(self) -> None:
        data = sample((3,))
        out = onnx_bcast.broadcast_like_v0(data, np.zeros((2, 3)), initial_broadcast_axes=[0])
        np.testing.assert_array_equal(out, np.stack([data, data]))

    def test_like_dtype_irrelevant(self) -> None:
        out = onnx_bcast.broadcast_like_v0(np.array([1.5], np.float32), np.array([["a", "b"]]), [1])
        assert out.shape == (1, 2) and out.dtype == np.float32
