"""A shape rule's static inputs as memo keys: a type's static shape and a constant's values, each read once.

Our schemas' inference runs once per node, and models repeat the same types and constants (one bias shape, one
target shape) thousands of times: reading each distinct one once keeps the per-node cost down.
"""

from __future__ import annotations

from onnx import TensorProto, TypeProto

from onnx_bcast.onnx_defs.constants import raw_int_key, small_values
from onnx_bcast.ops.common import Shape

_SHAPES: dict[bytes, Shape | None] = {}
_VALUES: dict[tuple, tuple | None] = {}
_MAX = 4096  # entries per memo; past it, it starts again


def _shape_of(type_proto: TypeProto) -> Shape | None:
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    dims = type_proto.tensor_type.shape.dim
    if not all(d.HasField("dim_value") for d in dims):
        return None
    return tuple(d.dim_value for d in dims)


def static_shape_of(type_proto: TypeProto) -> Shape | None:
    """A tensor type's shape when every dim is known, else None."""
    key = type_proto.SerializeToString()
    if key not in _SHAPES:
        if len(_SHAPES) >= _MAX:
            _SHAPES.clear()
        _SHAPES[key] = _shape_of(type_proto)
    return _SHAPES[key]


def value_key(tensor: TensorProto | None) -> tuple | None:
    """A constant as (dtype, flat values, shape), or None without one; an int64/int32 constant with raw data is
    read once per distinct (type, dims, bytes)."""
    if tensor is None:
        return None
    key = raw_int_key(tensor)
    if key is not None and key in _VALUES:
        return _VALUES[key]
    array = small_values(tensor)
    value = None if array is None else (array.dtype.str, tuple(array.reshape(-1).tolist()), array.shape)
    if key is not None:
        if len(_VALUES) >= _MAX:
            _VALUES.clear()
        _VALUES[key] = value
    return value
