"""Constants read as numpy: small int64/int32 constants (shape-like inputs) fast, and keyed by their bytes."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, numpy_helper

_FAST_INTS = {TensorProto.INT64: (np.dtype("<i8"), "int64_data"), TensorProto.INT32: (np.dtype("<i4"), "int32_data")}


def raw_int_key(tensor: TensorProto) -> tuple | None:
    """An int64/int32 constant held in raw bytes as (type, dims, bytes), its name left out: a key that is equal
    for equal constants (models repeat one target shape under many names); None for any other."""
    raw = tensor.raw_data
    if raw and tensor.data_type in _FAST_INTS and not tensor.external_data and not tensor.data_location:
        return (tensor.data_type, tuple(tensor.dims), raw)
    return None


def small_values(tensor: TensorProto | None) -> np.ndarray | None:
    """A constant's values; int32/int64 (shape-like inputs) without numpy_helper's general (slower) path. None for
    one whose data is in an external file (onnx would read it relative to the working folder)."""
    if tensor is None or tensor.data_location == TensorProto.EXTERNAL:
        return None
    key = raw_int_key(tensor)
    if key is not None:
        shared = _SHARED.get(key)
        if shared is None:
            data_type, dims, raw = key
            shared = np.frombuffer(raw, dtype=_FAST_INTS[data_type][0]).reshape(dims)  # read-only: safe to share
            if len(raw) <= 512:
                if len(_SHARED) >= 4096:
                    _SHARED.clear()
                _SHARED[key] = shared
        return shared
    fast = _FAST_INTS.get(tensor.data_type)
    if fast is not None and not tensor.external_data:
        dtype, field = fast
        raw = tensor.raw_data
        flat = np.frombuffer(raw, dtype=dtype) if raw else np.asarray(getattr(tensor, field), dtype=dtype)
        return flat.reshape(tuple(tensor.dims))
    return numpy_helper.to_array(tensor)


_SHARED: dict[tuple, np.ndarray] = {}  # small raw int constants by (type, dims, bytes)
