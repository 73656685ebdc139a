"""Weights in external files as read-only memory maps, for a runtime that wants arrays (``onnx.reference``)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
from onnx import ModelProto, TensorProto, helper
from onnx.external_data_helper import ExternalDataInfo, uses_external_data

from onnx_bcast.model.data_files import checked_file
from onnx_bcast.model.external_data import folder_of, has_external_data, set_folder

logger = logging.getLogger("onnx_bcast.model.mapped_weights")

# element types numpy holds as themselves (bfloat16, float8, 4-bit and string tensors are read in instead)
_MAPPABLE = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8, TensorProto.INT16,
             TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32,
             TensorProto.UINT64, TensorProto.BOOL, TensorProto.COMPLEX64, TensorProto.COMPLEX128}


def mapped_weights(model: ModelProto) -> tuple[ModelProto, dict[str, np.ndarray]]:
    """A copy of ``model``'s graph in which each main-graph initializer kept in an external file is a graph input,
    and those inputs' values: read-only memory maps of the files (the weights are not read into memory; the page
    cache serves what the run touches). Tensors that cannot be mapped (in subgraphs or functions, or of a type numpy
    lacks) are read into the copy. A model without external data comes back as itself, with no feeds."""
    folder = folder_of(model)
    copy = ModelProto()
    copy.CopyFrom(model)  # the graph only: the weights are references
    set_folder(copy, None)
    if folder is None:
        return copy, {}
    feeds: dict[str, np.ndarray] = {}
    kept = []
    declared = {value.name for value in copy.graph.input}
    for tensor in copy.graph.initializer:
        if not uses_external_data(tensor) or tensor.data_type not in _MAPPABLE:
            kept.append(tensor)
            continue
        feeds[tensor.name] = _memory_map(tensor, folder)
        if tensor.name not in declared:
            copy.graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, tensor.dims))
    if feeds:
        del copy.graph.initializer[:]
        copy.graph.initializer.extend(kept)
        logger.debug("%d external initializers fed as memory maps", len(feeds))
    if has_external_data(copy):  # what could not be mapped: read in
        onnx.load_external_data_for_model(copy, str(folder))
    return copy, feeds


def _memory_map(tensor: TensorProto, folder: Path) -> np.ndarray:
    info = ExternalDataInfo(tensor)
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).newbyteorder("<")
    shape = tuple(int(d) for d in tensor.dims)
    count = int(np.prod(shape, dtype=np.int64))
    if count == 0:
        return np.zeros(shape, dtype)
    path = checked_file(folder, info.location, str(folder))
    if info.length is not None and info.length != count * dtype.itemsize:
        raise ValueError(f"{path}: tensor {tensor.name!r} says {info.length} bytes, its shape {list(shape)} of "
                         f"{dtype} needs {count * dtype.itemsize}")
    return np.memmap(path, dtype=dtype, mode="r", offset=info.offset or 0, shape=shape)
