"""Sums of a gradient in standard ONNX, as the kernels sum: 16-bit and 8-bit floats in float32, integers exactly."""

from __future__ import annotations

from collections.abc import Sequence

from onnx import TensorProto, helper

from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter

_FLOAT_SUM = {TensorProto.FLOAT16: TensorProto.FLOAT, TensorProto.BFLOAT16: TensorProto.FLOAT,
              TensorProto.FLOAT8E4M3FN: TensorProto.FLOAT, TensorProto.FLOAT8E4M3FNUZ: TensorProto.FLOAT,
              TensorProto.FLOAT8E5M2: TensorProto.FLOAT, TensorProto.FLOAT8E5M2FNUZ: TensorProto.FLOAT}
# integers: MatMul with a column of ones, which wraps as the kernel's sum does (ORT's ReduceSum adds integers in
# double and saturates); the narrow ones in int32 (wrapping mod 2**32, then mod their own size when cast back)
_MATMUL_SUM = {TensorProto.INT8: TensorProto.INT32, TensorProto.INT16: TensorProto.INT32,
               TensorProto.UINT8: TensorProto.INT32, TensorProto.UINT16: TensorProto.INT32,
               TensorProto.INT4: TensorProto.INT32, TensorProto.UINT4: TensorProto.INT32,
               TensorProto.INT32: None, TensorProto.UINT32: None, TensorProto.INT64: None, TensorProto.UINT64: None}
_ONE = {t: helper.make_tensor("one", t, [1], [1]) for t in (TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64,
                                                            TensorProto.UINT64)}


def sum_to(emit: Emitter, bound: Bound, delta: str, axes: Sequence[int] | str, keepdims: bool,
           shape: str | None, output: str, rank: int | None = None) -> None:
    """``output = Reshape(ReduceSum(delta, axes, keepdims), shape)`` (``shape`` None: no ``Reshape``; no axes: no
    sum), summed as the kernel sums ``delta``'s type: floats narrower than 32 bits in float32; integers exactly,
    wrapping, by ``MatMul`` where the axes and ``rank`` (delta's) are known and the opset has ``Reshape`` with
    allowzero (else ``ReduceSum`` in int64, exact while every partial sum stays below 2**53)."""
    elem = bound.types[0]
    if not isinstance(axes, str) and not axes:  # nothing is summed: the sum type does not matter
        if shape is None:
            emit.identity(delta, output)
        else:
            emit.reshape(delta, shape, output)
        return
    if elem in _MATMUL_SUM and not isinstance(axes, str) and rank is not None and emit.allowzero:
        _matmul_sum(emit, delta, sorted(int(a) for a in axes), keepdims, shape, output, rank, elem)
        return
    wide = _FLOAT_SUM.get(elem)
    if elem in _MATMUL_SUM and elem != TensorProto.INT64:
        wide = TensorProto.INT64
    x = emit.cast(delta, wide) if wide else delta
    last = output if wide is None else None
    summed = emit.reduce_sum(x, axes, keepdims, last if shape is None else None)
    result = emit.reshape(summed, shape, last) if shape is not None else summed
    if wide is not None:
        emit.cast(result, elem, output)


def _matmul_sum(emit: Emitter, delta: str, axes: list[int], keepdims: bool, shape: str | None, output: str,
                rank: int, elem: int) -> None:
    """``Reshape(MatMul(Reshape(Transpose(delta, kept + axes), [K, S]), ones[S, 1]), shape)``: the integer sum."""
    acc = _MATMUL_SUM[elem] or elem
    kept = [i for i in range(rank) if i not in set(axes)]
    x = emit.cast(delta, acc) if acc != elem else delta
    dims = emit.shape(delta)

    def product(which: list[int]) -> str:
        if not which:
            return emit.const_i64([1], "one")
        picked = emit.standard("Gather", [dims, emit.const_i64(which, "dims")], axis=0)
        return emit.standard("ReduceProd", [picked], keepdims=1)

    rows, columns = product(kept), product(axes)
    moved = emit.standard("Transpose", [x], perm=kept + axes) if kept + axes != list(range(rank)) else x
    matrix = emit.reshape(moved, emit.standard("Concat", [rows, columns], axis=0))
    ones = emit.standard("ConstantOfShape", [emit.standard("Concat", [columns, emit.const_i64([1], "one")], axis=0)],
                         value=_ONE[acc])
    total = emit.standard("MatMul", [matrix, ones])
    if shape is None:
        ones_at = emit.scatter(dims, emit.const_i64(axes, "sum_axes"), emit.const_i64([1] * len(axes), "ones"))
        shape = ones_at if keepdims else emit.standard("Gather", [dims, emit.const_i64(kept, "kept")], axis=0)
    if acc == elem:
        emit.reshape(total, shape, output)
    else:
        emit.cast(emit.reshape(total, shape), elem, output)
