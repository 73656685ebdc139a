"""Gather-1/7/8 as ONNX: the axis from a scalar or one-element constant, ``batch_dims`` through GatherND."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto, TensorProto

from onnx_bcast.onnxifier.owned.node import Builder, IrNode


def gather(node: IrNode) -> list[NodeProto]:
    """``Gather(data, indices, axis)``: ONNX ``Gather`` where ``batch_dims`` is 0; where ``batch_dims == axis``
    (the form batched gathers take), ``GatherND(data, Unsqueeze(indices, -1), batch_dims)``; other forms refused."""
    data, indices = node.inputs[0], node.inputs[1]
    axis_value = np.asarray(node.const_or_refuse(2, "axis"))
    if axis_value.size != 1:
        raise node.refuse(f"its axis has {axis_value.size} values, not one")
    axis = int(axis_value.reshape(()))
    batch_dims = int(node.attr("batch_dims", "0"))
    b = Builder(node)
    if batch_dims == 0:
        return b.finish("Gather", [data, indices], axis=axis)
    data_rank, indices_rank = node.rank(data), node.rank(indices)
    axis = axis + data_rank if axis < 0 else axis
    batch_dims = batch_dims + indices_rank if batch_dims < 0 else batch_dims
    if axis != batch_dims:
        raise node.refuse(f"batch_dims {batch_dims} with axis {axis}: only batch_dims equal to the axis is expressed")
    wide = b.one("Cast", [indices], "indices_int64", to=TensorProto.INT64)  # GatherND takes int64 indices only
    column = b.one("Unsqueeze", [wide, b.i64([-1], "last")], "indices_column")
    return b.finish("GatherND", [data, column], batch_dims=batch_dims)


TRANSLATIONS = {"Gather": gather}
