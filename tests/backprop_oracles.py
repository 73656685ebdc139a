"""Two independent oracles for the backprop kernels (issue 13), and the tolerance they are compared with. No tests.

(a) Brute force, the adjoint exactly as the issue defines it: broadcast ``np.arange(size).reshape(data_shape)`` with
    the *forward* kernel, which gives every output position the flat index of the data element it copies, then add
    ``delta`` up per source index (``np.bincount`` with float64 weights for floats; an exact ``np.add.at`` in the
    delta's own integer type for integers, wrapping as numpy's integer sums wrap). Nothing of the backprop kernels is
    used; only the forward kernels (``broadcast``, ``broadcast_v0``, ``elementwise("Add", ...)``), which the case table
    checks against its own oracle.
(b) jax: ``jax.vjp`` of ``jax.lax.broadcast_in_dim`` and of ``jnp.broadcast_to`` (float64, ``jax_enable_x64``).
    ``broadcast_in_dim`` maps operand dim ``i`` to output dim ``broadcast_dimensions[i]``; an operand dim of size 1
    stretches, the output dims not listed are new. The dims are computed here from SPEC §2, not by onnx_bcast.

Float gradients are compared with a tolerance derived from the summation (``assert_gradient``); integer ones exactly.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes  # a dependency of onnx (and of jax): bfloat16 and a finfo that knows it
import numpy as np

import onnx_bcast

jax.config.update("jax_enable_x64", True)  # float64 gradients; without it jax silently computes in float32

Shape = tuple[int, ...]
F64_EPS = float(np.finfo(np.float64).eps)


def canonical_mode(mode: str) -> str:
    """A Broadcast mode as SPEC §1 names it (case-insensitive, ``none`` is ``explicit``)."""
    mode = mode.lower()
    return "explicit" if mode == "none" else mode


def canonical_rule(rule: str) -> str:
    """An elementwise rule as SPEC §1 names it (case-insensitive, ``explicit`` is ``none``)."""
    rule = rule.lower()
    return "none" if rule == "explicit" else rule


def is_integer(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


# ---------------------------------------------------------------------------------------------------------------------
# (a) brute force
# ---------------------------------------------------------------------------------------------------------------------

def index_array(shape: Sequence[int]) -> np.ndarray:
    """Every element its own flat index."""
    return np.arange(math.prod(shape), dtype=np.int64).reshape(tuple(shape))


def sources_broadcast(data_shape: Shape, target: Shape, axes: Shape | None, mode: str, axis: int) -> np.ndarray:
    """The forward ``Broadcast``'s output, with each data element replaced by its flat index."""
    return np.asarray(onnx_bcast.broadcast(index_array(data_shape), np.asarray(target, dtype=np.int64).reshape(-1),
                                           None if axes is None else np.asarray(axes, dtype=np.int64).reshape(-1),
                                           mode=mode, axis=axis))


def sources_v0(shape: Shape, broadcast_axes: Shape) -> np.ndarray:
    """The forward v0 ``Broadcast``'s output of the index array of ``shape`` without ``broadcast_axes``."""
    arg_shape = tuple(n for i, n in enumerate(shape) if i not in set(broadcast_axes))
    return np.asarray(onnx_bcast.broadcast_v0(index_array(arg_shape), list(shape), list(broadcast_axes)))


def sources_unbroadcast(a_shape: Shape, b_shape: Shape, rule: str, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output position of the forward elementwise op: the flat index of the A element and of the B element it
    reads (``Add`` of an index array and zeros, in int64)."""
    zeros_a, zeros_b = np.zeros(a_shape, np.int64), np.zeros(b_shape, np.int64)
    src_a = onnx_bcast.elementwise("Add", index_array(a_shape), zeros_b, auto_broadcast=rule, axis=axis)
    src_b = onnx_bcast.elementwise("Add", zeros_a, index_array(b_shape), auto_broadcast=rule, axis=axis)
    return np.asarray(src_a), np.asarray(src_b)


def scatter_add(sources: np.ndarray, delta: np.ndarray, shape: Shape) -> np.ndarray:
    """``delta`` added up per source index, shaped ``shape``: float64 for float deltas (exact enough to be the
    reference: its own error is covered by ``assert_gradient``), the delta's own type for integers (exact, wrapping)."""
    size = math.prod(shape)
    assert sources.shape == delta.shape, f"the forward output {sources.shape} is not delta's shape {delta.shape}"
    flat = sources.reshape(-1)
    if is_integer(delta.dtype):
        out = np.zeros(size, dtype=delta.dtype)
        np.add.at(out, flat, delta.reshape(-1))
        return out.reshape(shape)
    weights = delta.astype(np.float64).reshape(-1)
    return np.bincount(flat, weights=weights, minlength=size).astype(np.float64).reshape(shape)


def abs_sums(sources: np.ndarray, delta: np.ndarray, shape: Shape) -> np.ndarray:
    """Per gradient element, the sum of |delta| over its copies (the scale of the summation error)."""
    weights = np.abs(delta.astype(np.float64)).reshape(-1)
    return np.bincount(sources.reshape(-1), weights=weights, minlength=math.prod(shape)).reshape(shape)


def brute_broadcast_backprop(delta: np.ndarray, data_shape: Shape, target: Shape, axes: Shape | None, mode: str,
                             axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(gradient, |delta| sums) of ``Broadcast(data, target, axes, mode, axis)``."""
    src = sources_broadcast(data_shape, target, axes, mode, axis)
    return scatter_add(src, delta, data_shape), abs_sums(src, delta, data_shape)


def brute_v0_backprop(delta: np.ndarray, broadcast_axes: Shape) -> tuple[np.ndarray, np.ndarray]:
    """(gradient, |delta| sums) of the v0 ``Broadcast`` whose output shape is delta's."""
    src = sources_v0(delta.shape, broadcast_axes)
    arg_shape = tuple(n for i, n in enumerate(delta.shape) if i not in set(broadcast_axes))
    return scatter_add(src, delta, arg_shape), abs_sums(src, delta, arg_shape)


def brute_unbroadcast(delta: np.ndarray, a_shape: Shape, b_shape: Shape, rule: str, axis: int
                      ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """((grad A, grad B), (|delta| sums A, |delta| sums B)) of the elementwise op on A and B."""
    src_a, src_b = sources_unbroadcast(a_shape, b_shape, rule, axis)
    return ((scatter_add(src_a, delta, a_shape), scatter_add(src_b, delta, b_shape)),
            (abs_sums(src_a, delta, a_shape), abs_sums(src_b, delta, b_shape)))


# ---------------------------------------------------------------------------------------------------------------------
# (b) jax
# ---------------------------------------------------------------------------------------------------------------------

def _vjp(fn, primal_shapes: Sequence[Shape], delta: np.ndarray) -> list[np.ndarray]:
    """The pullback of ``fn`` at float64 zeros of ``primal_shapes``, applied to ``delta`` (as float64)."""
    primals = [np.zeros(s, np.float64) for s in primal_shapes]
    out, pullback = jax.vjp(fn, *primals)
    assert out.shape == delta.shape, f"jax's forward output {out.shape} is not delta's shape {delta.shape}"
    return [np.asarray(g, dtype=np.float64) for g in pullback(jnp.asarray(delta.astype(np.float64)))]


def broadcast_dimensions(data_shape: Shape, out: Shape, axes: Shape | None, mode: str, axis: int) -> tuple[int, ...]:
    """Where each data dim lands in the output, by SPEC §2 (numpy, explicit, pdpd)."""
    r, rank = len(data_shape), len(out)
    mode = canonical_mode(mode)
    if mode == "numpy":  # right-aligned
        return tuple(range(rank - r, rank))
    if mode == "explicit":  # data dim i on axes_mapping[i]; a scalar's one axis (if any) carries no data dim
        return tuple(int(a) for a in (axes or ()))[:r]
    if mode == "pdpd":
        # jax has no pdpd broadcast. pdpd aligns data dim k with output dim start + k (start = R - r for axis -1,
        # else axis); a size-1 data dim stretches, and a target dim of 1 opposite a larger data dim only makes the
        # output (= delta) larger, so it is a broadcast_in_dim to delta's shape with these dims.
        start = rank - r if axis == -1 else axis
        return tuple(range(start, start + r))
    raise AssertionError(f"no broadcast_in_dim form for mode {mode}")


def jax_broadcast_backprop(delta: np.ndarray, data_shape: Shape, axes: Shape | None, mode: str, axis: int
                           ) -> list[np.ndarray]:
    """The gradient of the forward broadcast from jax, once per jax formulation of the mode (float64):
    ``lax.broadcast_in_dim`` for numpy/explicit/pdpd, ``jnp.broadcast_to`` for numpy/bidirectional (the output,
    delta's shape, is numpy's broadcast of data to it; in bidirectional mode it may be larger than the target)."""
    mode = canonical_mode(mode)
    out = delta.shape
    grads = []
    if mode in ("numpy", "explicit", "pdpd"):
        dims = broadcast_dimensions(data_shape, out, axes, mode, axis)
        grads += _vjp(lambda x: jax.lax.broadcast_in_dim(x, out, dims), [data_shape], delta)
    if mode in ("numpy", "bidirectional"):
        grads += _vjp(lambda x: jnp.broadcast_to(x, out), [data_shape], delta)
    return grads


def jax_v0_backprop(delta: np.ndarray, broadcast_axes: Shape) -> np.ndarray:
    """nGraph's v0 Broadcast is ``broadcast_in_dim`` with the axes not in ``broadcast_axes`` (in order) as dims."""
    out = delta.shape
    kept = tuple(i for i in range(len(out)) if i not in set(broadcast_axes))
    arg_shape = tuple(out[i] for i in kept)
    return _vjp(lambda x: jax.lax.broadcast_in_dim(x, out, kept), [arg_shape], delta)[0]


def pdpd_b_alignment(a_shape: Shape, b_shape: Shape, axis: int) -> tuple[Shape, tuple[int, ...]]:
    """SPEC §2's elementwise pdpd rule for B: (trimmed B, the A dims it lands on). ``axis`` -1 is computed from the
    ranks *before* trailing 1s of B are trimmed."""
    start = len(a_shape) - len(b_shape) if axis == -1 else axis
    trimmed = list(b_shape)
    while trimmed and trimmed[-1] == 1:
        trimmed.pop()
    return tuple(trimmed), tuple(range(start, start + len(trimmed)))


def jax_unbroadcast(delta: np.ndarray, a_shape: Shape, b_shape: Shape, rule: str, axis: int
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
    """(grad A, grad B) of ``A + B`` under the rule from jax, once per formulation: ``broadcast_in_dim`` of both
    (pdpd: B reshaped to its trimmed shape first), and for none/numpy also jax's own ``x + y`` broadcasting."""
    rule = canonical_rule(rule)
    out = delta.shape
    rank = len(out)
    dims_a = tuple(range(rank - len(a_shape), rank))
    if rule == "pdpd":
        trimmed, dims_b = pdpd_b_alignment(a_shape, b_shape, axis)

        def fb(y):
            return jax.lax.broadcast_in_dim(jnp.reshape(y, trimmed), out, dims_b)
    else:
        def fb(y):
            return jax.lax.broadcast_in_dim(y, out, tuple(range(rank - len(b_shape), rank)))
    results = [tuple(_vjp(lambda x, y: jax.lax.broadcast_in_dim(x, out, dims_a) + fb(y), [a_shape, b_shape],
                          delta))]
    if rule in ("none", "numpy"):
        results.append(tuple(_vjp(lambda x, y: x + y, [a_shape, b_shape], delta)))
    return results


# ---------------------------------------------------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------------------------------------------------

def accumulation_dtype(dtype: np.dtype) -> np.dtype:
    """What the contract sums ``dtype`` in: float32 for floats narrower than 32 bits, else the type itself."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if not is_integer(dtype) and dtype.itemsize < 4 else dtype


def float_tolerance(dtype: np.dtype, n_summed: int, sums_of_abs: np.ndarray) -> np.ndarray:
    """The error bound of one gradient element against the float64 reference.

    Any summation order of n terms in a type with machine epsilon e errs by at most (n - 1) * e/2 * sum|x| (the
    standard bound; pairwise summation does better), so ``n * eps(accumulator)`` covers the kernel's sum and
    ``n * eps(float64)`` the reference's own; the final rounding to delta's type adds ``eps(out)/2 * |sum|``, taken
    as ``eps(out) * sum|x|`` (room for one more rounding). Underflow to a subnormal adds at most half the smallest
    subnormal.
    """
    info = ml_dtypes.finfo(dtype)
    eps_acc = float(ml_dtypes.finfo(accumulation_dtype(dtype)).eps)
    return (n_summed * (eps_acc + F64_EPS) + float(info.eps)) * sums_of_abs + float(info.smallest_subnormal)


def assert_gradient(got: object, delta_dtype: np.dtype, shape: Shape, expected: np.ndarray, sums_of_abs: np.ndarray,
                    n_summed: int, what: str = "gradient") -> None:
    """``got`` has delta's dtype and ``shape``; integers equal ``expected`` exactly, floats within
    ``float_tolerance`` of it."""
    got = np.asarray(got)
    assert got.dtype == np.dtype(delta_dtype), f"{what}: dtype {got.dtype}, expected delta's {np.dtype(delta_dtype)}"
    assert got.shape == tuple(shape), f"{what}: shape {got.shape}, expected {tuple(shape)}"
    if is_integer(delta_dtype):
        np.testing.assert_array_equal(got, np.asarray(expected).astype(delta_dtype), err_msg=what)
        return
    tol = float_tolerance(np.dtype(delta_dtype), n_summed, sums_of_abs)
    err = np.abs(got.astype(np.float64) - np.asarray(expected, dtype=np.float64))
    bad = err > tol
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {got.size} elements off by more than the tolerance; worst "
                           f"error {err.max():.3g} (tolerance there {tol.reshape(-1)[int(np.argmax(err))]:.3g}); "
                           f"got {got.reshape(-1)[:8]}, expected {np.asarray(expected).reshape(-1)[:8]}")


def make_delta(shape: Shape, dtype: np.dtype, seed: int) -> np.ndarray:
    """A delta of ``shape``: normal values (scale 4) for floats, small integers (0..50 unsigned, -50..50 signed),
    small enough that float64 holds every integer sum exactly (so jax, which works in float64, is exact too)."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if is_integer(dtype):
        low = 0 if dtype.kind == "u" else -50
        return np.asarray(rng.integers(low, 51, size=shape)).astype(dtype).reshape(shape)  # a 0-d array, not a scalar
    return np.asarray(rng.standard_normal(shape) * 4).astype(dtype).reshape(shape)


# ---------------------------------------------------------------------------------------------------------------------
# per case (a tests/backprop_cases.BpCase)
# ---------------------------------------------------------------------------------------------------------------------

def case_delta(case: Any, dtype: np.dtype) -> np.ndarray:
    """The delta a case runs with: ``make_delta`` of its output shape, seeded by its name and the dtype."""
    dtype = np.dtype(dtype)
    return make_delta(case.out, dtype, zlib.crc32(f"{case.op}/{case.name}/{dtype.name}".encode()))


def brute_case(case: Any, delta: np.ndarray) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """(gradients, |delta| sums) of a case's op from the brute-force oracle."""
    if case.op == "BroadcastBackprop":
        grad, sums = brute_broadcast_backprop(delta, case.data_shape, case.target, case.axes, case.mode, case.axis)
        return (grad,), (sums,)
    if case.op == "BroadcastV0Backprop":
        grad, sums = brute_v0_backprop(delta, case.broadcast_axes)
        return (grad,), (sums,)
    return brute_unbroadcast(delta, case.a_shape, case.b_shape, case.mode, case.axis)


def assert_case_outputs(case: Any, got: Sequence[Any], delta: np.ndarray, what: str = "") -> None:
    """Every output of a case's op against the brute force: delta's dtype, the gradient's shape, the values."""
    expected, sums = brute_case(case, delta)
    assert len(got) == len(expected), f"{what}{len(got)} outputs, expected {len(expected)}"
    for i, (g, e, s, shape, n) in enumerate(zip(got, expected, sums, case.grad_shapes, case.n_summed, strict=True)):
        assert_gradient(g, delta.dtype, shape, e, s, n, what=f"{what}output {i}")
