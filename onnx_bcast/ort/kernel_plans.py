"""The guarded broadcast kernel's plans: per input signature, how to make its output again as a view or a gather."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_bcast.ops.memory_guard import environment_text

PLANS_PER_NODE = 256  # input signatures remembered per node (a node called with ever new shapes starts afresh)


def input_signature(inputs: list[np.ndarray], attrs: dict[str, Any]) -> tuple:
    """What a broadcast's output structure depends on: the data's shape and type, the shape inputs' values (with
    their shapes), and the output limit in force (the environment's text is read at each call)."""
    data = inputs[0]
    limit = attrs.get("max_output_bytes", -1)
    return (data.shape, data.dtype, limit if limit >= 0 else environment_text(),
            *[(x.shape, x.tobytes()) for x in inputs[1:]])


def _status(shape: tuple[int, ...]) -> np.ndarray:
    """The guarded status of an output of ``shape``: its shape as int64 (read-only: shared by the calls of a plan)."""
    status = np.asarray(shape, dtype=np.int64)
    status.flags.writeable = False
    return status


GATHER_UP_TO = 4096  # outputs of at most this many elements are gathered through a kept index (one numpy call)


def output_plan(data: Any, out: Any) -> tuple | None:
    """How to make ``out`` again from any data of the same signature, where it is a strided view of C-contiguous
    ``data`` from its first element: (output shape, strides, status, flat index or None). Else None (the kernel runs
    at each call). A small output is gathered through the index (a contiguous array at once), a larger one is the
    view (the bridge copies it once)."""
    if (type(data) is not np.ndarray or type(out) is not np.ndarray or not data.flags.c_contiguous or not data.size
            or not out.size or out.dtype != data.dtype
            or out.__array_interface__["data"][0] != data.__array_interface__["data"][0]):
        return None
    index = None
    if out.ndim and out.size <= GATHER_UP_TO:  # (a 0-d index would gather a numpy scalar, not an array)
        positions = np.arange(data.size, dtype=np.intp).reshape(data.shape)
        index = np.ascontiguousarray(np.ndarray(out.shape, np.intp, positions, 0,
                                                tuple(st // data.itemsize * positions.itemsize for st in out.strides)))
        index.flags.writeable = False
    return out.shape, out.strides, _status(out.shape), index
