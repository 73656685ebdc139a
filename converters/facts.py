"""What is statically known about one onnx_bcast node: its attributes, input shapes and constant values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import TensorProto

from onnx_bcast.static_facts import Dims


@dataclass
class NodeFacts:
    """Facts about a node's inputs; None means unknown."""

    op: str
    name: str
    attrs: dict[str, Any]
    inputs: list[str]
    output: str
    shapes: list[Dims | None]  # per input: dims (None for an unknown dim) or None for an unknown rank
    values: list[np.ndarray | None]  # per input: constant values
    types: list[int | None]  # per input: ONNX element type

    @property
    def mode(self) -> str:
        """The broadcast rule: ``mode`` of the broadcasts, ``auto_broadcast`` of the elementwise ops."""
        return str(self.attrs.get("mode", self.attrs.get("auto_broadcast", "")))

    def static_shape(self, i: int) -> tuple[int, ...] | None:
        """Input ``i``'s shape when every dim is known."""
        dims = self.shapes[i] if i < len(self.shapes) else None
        if dims is None or any(d is None for d in dims):
            return None
        return tuple(int(d) for d in dims)

    def rank(self, i: int) -> int | None:
        dims = self.shapes[i] if i < len(self.shapes) else None
        return None if dims is None else len(dims)

    def ints(self, i: int) -> tuple[int, ...] | None:
        """Input ``i``'s constant integer values."""
        value = self.values[i] if i < len(self.values) else None
        return None if value is None else tuple(int(v) for v in np.asarray(value).reshape(-1).tolist())

    def length(self, i: int) -> int | None:
        """The length of 1-D input ``i`` (from its value or its shape)."""
        values = self.ints(i)
        if values is not None:
            return len(values)
        dims = self.shapes[i] if i < len(self.shapes) else None
        return dims[0] if dims is not None and len(dims) == 1 else None

    def is_int64(self, i: int) -> bool:
        return i < len(self.types) and self.types[i] == TensorProto.INT64
