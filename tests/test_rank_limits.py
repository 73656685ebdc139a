"""Ranks up to 64 work in every kernel and shape rule; a rank over 64 is a BroadcastError (SPEC §2, "Everywhere").

numpy's own helpers stop earlier (``np.broadcast_shapes`` at 32 dims), so the valid cases use ranks 33 and 64. numpy 1
makes no array of more than 32 dims: there the cases that need arrays skip, saying so, and the shape rules are tested
without arrays (``test_shape_rules_need_no_arrays``); tests/test_numpy1_ranks.py tests the kernels' refusal.
Every valid case puts its non-1 dims at three places spread over the rank (first, middle, last axis) and checks
the values against a rank-3 formula written here with plain loops: the high-rank output must be that rank-3
result with size-1 axes in between.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import onnx_bcast
from onnx_bcast.ops.backprop import backprop_plan, unbroadcast_plan
from onnx_bcast.ops.broadcast_v0 import broadcast_like_v0_shape, broadcast_v0_shape
from tests.numpy_dims import array_ranks

RANKS = (33, 64)
CORE = (2, 3, 4)  # the output's non-1 dims, at axes (0, middle, last)


def axes(rank: int) -> tuple[int, int, int]:
    return 0, rank // 2, rank - 1


def spread(rank: int, dims: dict[int, int]) -> tuple[int, ...]:
    """A rank-``rank`` shape of 1s with ``dims`` (axis -> size) set."""
    shape = [1] * rank
    for axis, size in dims.items():
        shape[axis] = size
    return tuple(shape)


def target(rank: int) -> tuple[int, ...]:
    first, middle, last = axes(rank)
    return spread(rank, {first: CORE[0], middle: CORE[1], last: CORE[2]})


def expected(rank: int, value: callable) -> np.ndarray:
    """The output of shape ``target(rank)`` whose element at core index (i, j, k) is ``value(i, j, k)``."""
    core = np.empty(CORE, dtype=np.int64)
    for i, j, k in itertools.product(*(range(n) for n in CORE)):
        core[i, j, k] = value(i, j, k)
    return core.reshape(target(rank))


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# ---- Broadcast / Expand in every mode, BroadcastV0, BroadcastLikeV0 ---------------------------------------------

@pytest.mark.parametrize("rank", array_ranks(RANKS))
def test_broadcast_numpy_mode(rank: int) -> None:
    _, middle, last = axes(rank)
    # rank - 1 dims, right-aligned: the middle axis is stretched, the last one kept
    data_shape = spread(rank, {middle: 1, last: CORE[2]})[1:]
    data = np.arange(CORE[2], dtype=np.int64).reshape(data_shape)
    got = onnx_bcast.broadcast(data, list(target(rank)), mode="numpy")
    assert_same(got, expected(rank, lambda i, j, k: k))
    assert onnx_bcast.broadcast_shape(data_shape, target(rank)) == target(rank)


@pytest.mark.parametrize("rank", array_ranks(RANKS))
@pytest.mark.parametrize("kernel", ["broadcast", "expand"])
def test_bidirectional_mode(rank: int, kernel: str) -> None:
    first, middle, last = axes(rank)
    data = np.arange(CORE[1], dtype=np.int64).reshape(spread(rank, {middle: CORE[1]}))
    shape = list(spread(rank, {first: CORE[0], last: CORE[2]}))  # the output is larger than this target
    if kernel == "expand":
        got = onnx_bcast.expand(data, shape)
    else:
        got = onnx_bcast.broadcast(data, shape, mode="bidirectional")
    assert_same(got, expected(rank, lambda i, j, k: j))


@pytest.mark.parametrize("rank", array_ranks(RANKS))
def test_explicit_mode(rank: int) -> None:
    _, middle, last = axes(rank)
    data = np.arange(CORE[1] * CORE[2], dtype=np.int64).reshape(CORE[1], CORE[2])
    got = onnx_bcast.broadcast(data, list(target(rank)), [middle, last], mode="explicit")
    assert_same(got, expected(rank, lambda i, j, k: CORE[2] * j + k))


@pytest.mark.parametrize("rank", array_ranks(RANKS))
def test_pdpd_mode(rank: int) -> None:
    _, middle, last = axes(rank)
    data = np.arange(CORE[2], dtype=np.int64).reshape(spread(rank, {last: CORE[2]})[1:])  # axes 1.. of the target
    got = onnx_bcast.broadcast(data, list(target(rank)), mode="pdpd", axis=1)
    assert_same(got, expected(rank, lambda i, j, k: k))


@pytest.mark.parametrize("rank", array_ranks(RANKS))
def test_broadcast_v0_and_like(rank: int) -> None:
    _, middle, last = axes(rank)
    arg = np.arange(CORE[1] * CORE[2], dtype=np.int64).reshape(CORE[1], CORE[2])
    new_axes = [a for a in range(rank) if a not in (middle, last)]
    want = expected(rank, lambda i, j, k: CORE[2] * j + k)
    assert_same(onnx_bcast.broadcast_v0(arg, list(target(rank)), new_axes), want)
    like = np.zeros(target(rank), dtype=np.float32)
    assert_same(onnx_bcast.broadcast_like_v0(arg, like, new_axes), want)


# ---- elementwise in every rule ----------------------------------------------------------------------------------

def _a(rank: int) -> np.ndarray:
    return np.arange(np.prod(CORE), dtype=np.int64).reshape(target(rank)) - 7  # core value 12i + 4j + k - 7


def _a_value(i: int, j: int, k: int) -> int:
    return 12 * i + 4 * j + k - 7


@pytest.mark.parametrize("rank", array_ranks(RANKS))
def test_elementwise_none(rank: int) -> None:
    a = _a(rank)
    b = (np.arange(np.prod(CORE), dtype=np.int64) % 5).reshape(target(rank))
    got = onnx_bcast.elementwise("Sub", a, b, auto_broadcast="none")
    assert_same(got, expected(rank, lambda i, j, k: _a_value(i, j, k) - (12 * i + 4 * j + k) % 5))
    assert onnx_bcast.elementwise_shape(a.shape, b.shape, auto_broadcast="none") == target(rank)


@pytest.mark.parametrize("rank", array_ranks(RANKS))
@pytest.mark.parametrize("op", ["Add", "Max", "Pow"])
def test_elementwise_numpy(rank: int, op: str) -> None:
    _, middle, last = axes(rank)
    a = _a(rank)
    b = np.array([2, 3, 1, 0], dtype=np.int64).reshape(spread(rank, {middle: 1, last: CORE[2]})[1:])  # B[k]
    formula = {"Add": lambda x, y: x + y, "Max": max, "Pow": lambda x, y: x**y}[op]
    got = onnx_bcast.elementwise(op, a, b)
    assert_same(got, expected(rank, lambda i, j, k: formula(_a_value(i, j, k), [2, 3, 1, 0][k])))
    # both operands stretched: A's first axis against B's middle one
    a_row = np.arange(CORE[0], dtype=np.int64).reshape(spread(rank, {0: CORE[0]}))
    b_col = np.arange(CORE[1], dtype=np.int64).reshape(spread(rank, {middle: CORE[1]}))
    shape = spread(rank, {0: CORE[0], middle: CORE[1]})
    assert onnx_bcast.elementwise_shape(a_row.shape, b_col.shape) == shape
    got = onnx_bcast.elementwise("Mul", a_row, b_col)
    assert got.shape == shape
    np.testing.assert_array_equal(got.reshape(CORE[0], CORE[1]), [[i * j for j in range(CORE[1])]
                                                                   for i in range(CORE[0])])


@pytest.mark.parametrize("rank", array_ranks(RANKS))
def test_elementwise_pdpd(rank: int) -> None:
    _, middle, _ = axes(rank)
    a = _a(rank)
    b = np.array([10, 20, 30], dtype=np.int64)  # meets A's middle axis
    got = onnx_bcast.elementwise("Add", a, b, auto_broadcast="pdpd", axis=middle)
    assert_same(got, expected(rank, lambda i, j, k: _a_value(i, j, k) + 10 * (j + 1)))
    assert onnx_bcast.elementwise_shape(a.shape, b.shape, auto_broadcast="pdpd", axis=middle) == target(rank)


# ---- the shape rules alone, on any numpy -----------------------------------------------------------------------

@pytest.mark.parametrize("rank", RANKS)
def test_shape_rules_need_no_arrays(rank: int) -> None:
    """The rules (and so the conversion) take ranks up to 64 whatever numpy is installed: numpy 1 makes no array
    of more than 32 dims, and ``np.broadcast_shapes`` stops at 32 on numpy 2 as well."""
    first, middle, last = axes(rank)
    out = target(rank)
    right = spread(rank, {middle: 1, last: CORE[2]})[1:]  # rank - 1 dims, right-aligned
    assert onnx_bcast.broadcast_shape(right, out) == out
    assert onnx_bcast.broadcast_shape(spread(rank, {middle: CORE[1]}), spread(rank, {first: CORE[0], last: CORE[2]}),
                                      mode="bidirectional") == out
    assert onnx_bcast.broadcast_shape((CORE[1], CORE[2]), out, [middle, last], mode="explicit") == out
    assert onnx_bcast.broadcast_shape(right, out, mode="pdpd", axis=1) == out
    new_axes = [a for a in range(rank) if a not in (middle, last)]
    assert broadcast_v0_shape((CORE[1], CORE[2]), out, new_axes) == out
    assert broadcast_like_v0_shape((CORE[1], CORE[2]), out, new_axes) == out
    assert onnx_bcast.elementwise_shape(out, out, auto_broadcast="none") == out
    assert onnx_bcast.elementwise_shape(spread(rank, {0: CORE[0]}), spread(rank, {middle: CORE[1]})) == \
        spread(rank, {0: CORE[0], middle: CORE[1]})
    assert onnx_bcast.elementwise_shape(out, (CORE[1],), auto_broadcast="pdpd", axis=middle) == out
    assert backprop_plan(right, out)[2] == (first, middle)  # the summed axes
    assert unbroadcast_plan(out, out, right)[2] == out


# ---- rank 65 ----------------------------------------------------------------------------------------------------

R65 = (1,) * 63 + (2, 1)


def _nested(depth: int) -> object:
    value: object = 1.0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: onnx_bcast.broadcast(np.ones(2), list(R65)), r"Broadcast\(mode=numpy\): target rank 65"),
        (lambda: onnx_bcast.broadcast(np.ones(2), list(R65), mode="bidirectional"), "target rank 65"),
        (lambda: onnx_bcast.broadcast(np.ones(2), list(R65), list(range(63, 64)), mode="explicit"),
         r"Broadcast\(mode=explicit\): target rank 65"),
        (lambda: onnx_bcast.broadcast(np.ones(2), list(R65), mode="pdpd", axis=63), "target rank 65"),
        (lambda: onnx_bcast.broadcast(_nested(65), [1]), r"Broadcast\(mode=numpy\): data cannot be read"),
        (lambda: onnx_bcast.expand(np.ones(2), list(R65)), r"Expand\(mode=bidirectional\): target rank 65"),
        (lambda: onnx_bcast.broadcast_shape(R65, [2]), r"data rank 65 exceeds the maximum rank 64"),
        (lambda: onnx_bcast.broadcast_shape((2,), R65, mode="numpy"), "target rank 65"),
        (lambda: onnx_bcast.broadcast_v0(np.ones(2), list(R65), list(range(63)) + [64]),
         r"BroadcastV0: shape rank 65 exceeds the maximum rank 64"),
        (lambda: onnx_bcast.broadcast_v0(_nested(65), [1], []), "BroadcastV0: arg cannot be read"),
        (lambda: onnx_bcast.broadcast_like_v0(np.ones(2), _nested(65)), "BroadcastLikeV0: like_arg cannot be read"),
        (lambda: broadcast_like_v0_shape((2,), R65, list(range(63)) + [64]), "BroadcastLikeV0: shape rank 65"),
        (lambda: onnx_bcast.elementwise_shape(R65, (2, 1)), r"Add\(auto_broadcast=numpy\): A rank 65"),
        (lambda: onnx_bcast.elementwise_shape((2, 1), R65), r"B rank 65 exceeds the maximum rank 64"),
        (lambda: onnx_bcast.elementwise_shape(R65, R65, auto_broadcast="none"), r"\(auto_broadcast=none\): A rank 65"),
        (lambda: onnx_bcast.elementwise_shape(R65, (2,), auto_broadcast="pdpd"), r"\(auto_broadcast=pdpd\): A rank"),
        (lambda: onnx_bcast.elementwise("Mul", _nested(65), 1.0), r"Mul\(auto_broadcast=numpy\): A cannot be read"),
        (lambda: onnx_bcast.elementwise("Mul", 1.0, _nested(65), auto_broadcast="pdpd"), "B cannot be read"),
    ],
)
def test_rank_65_is_a_broadcast_error(call: callable, words: str) -> None:
    with pytest.raises(onnx_bcast.BroadcastError, match=words):
        call()


def test_rank_65_message_names_the_shapes() -> None:
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        onnx_bcast.broadcast(np.ones(2), list(R65))
    assert "data (2,), target (1, 1," in str(info.value)
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        onnx_bcast.elementwise_shape((3,), R65)
    assert "A (3,), B (1, 1," in str(info.value)
