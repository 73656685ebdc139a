"""``helper.make_node`` without its per-call cost: one constructor call, attributes built once per value; and the
int64 constants the emitter writes (``int64_tensor``).

The result is byte for byte what ``onnx.helper.make_node`` builds (fields set only when it sets them, attributes
sorted by name); ``tests/test_node_build.py`` compares the two.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from onnx import AttributeProto, NodeProto, TensorProto, helper

_ATTRIBUTES: dict[tuple, AttributeProto] = {}  # (name, kind, value) -> the attribute helper.make_attribute builds
_MAX_CACHED = 4096


def _key(name: str, value: Any) -> tuple | None:
    """A hashable key for an attribute value, or None for a kind not cached."""
    if isinstance(value, bool) or not isinstance(value, (int, str, list, tuple, TensorProto)):
        return None
    if isinstance(value, int):
        return (name, "i", value)
    if isinstance(value, str):
        return (name, "s", value)
    if isinstance(value, TensorProto):
        return (name, "t", value.SerializeToString())
    if value and all(type(v) is int for v in value):
        return (name, "ints", tuple(value))
    return None


def attribute(name: str, value: Any) -> AttributeProto:
    """``helper.make_attribute(name, value)``, shared between calls for ints, strings, int lists and tensors."""
    key = _key(name, value)
    if key is None:
        return helper.make_attribute(name, value)
    attr = _ATTRIBUTES.get(key)
    if attr is None:
        attr = helper.make_attribute(name, value)
        if len(_ATTRIBUTES) < _MAX_CACHED:
            _ATTRIBUTES[key] = attr
    return attr


def make_node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], name: str | None = None,
              domain: str | None = None, doc_string: str | None = None, **attrs: Any) -> NodeProto:
    """What ``helper.make_node(op_type, inputs, outputs, name=..., domain=..., doc_string=..., **attrs)`` returns."""
    fields: dict[str, Any] = {"op_type": op_type, "input": inputs, "output": outputs}
    if name:
        fields["name"] = name
    if doc_string:
        fields["doc_string"] = doc_string
    if domain is not None:
        fields["domain"] = domain
    if attrs:
        fields["attribute"] = [attribute(k, v) for k, v in sorted(attrs.items()) if v is not None]
    return NodeProto(**fields)


def int64_tensor(name: str, values: Sequence[int]) -> TensorProto:
    """An int64 1-D tensor: the TensorProto ``numpy_helper.from_array`` makes, without building its type table
    (0.1 ms in a new process)."""
    return TensorProto(name=name, data_type=TensorProto.INT64, dims=[len(values)],
                       raw_data=struct.pack(f"<{len(values)}q", *values))
