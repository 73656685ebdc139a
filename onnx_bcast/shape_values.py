"""The values of shape-like tensors that the graph computes from ``Shape``: ints where known, else symbols.

A target such as ``Concat(Shape(f)[0:1], [8], Shape(f)[2:4])`` is not a constant, yet each of its elements is
known: an int, or the symbol ``(f, k)`` for the run-time size of dim ``k`` of ``f`` (equal to itself only, and
never negative). Only what the runtime computes is followed: ``Shape``, ``Constant``, initializers, ``Concat``,
``Gather``/``Slice`` with constant indices, ``Cast``, ``Identity``, ``Squeeze``/``Unsqueeze`` of a 1-element value.
Anything else is unknown (None).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from onnx import NodeProto, helper

from onnx_bcast.static_facts import Dims

Element = int | tuple[str, int] | None
Value = tuple[Element, ...] | None
MAX_LENGTH = 64  # a shape-like value longer than any rank is not followed


class ShapeValues:
    """Element-wise values of shape-like tensors, by name, from the graph's producers."""

    def __init__(self, producers: dict[str, NodeProto], shape_of: Callable[[str], Dims | None],
                 constant_of: Callable[[str], np.ndarray | None]) -> None:
        self._producers = producers
        self._shape_of = shape_of
        self._constant_of = constant_of
        self._memo: dict[str, Value] = {}

    def __call__(self, name: str) -> Value:
        if name not in self._memo:
            self._memo[name] = None  # a cycle (none in a valid graph) reads as unknown
            self._memo[name] = self._value(name)
        return self._memo[name]

    def _value(self, name: str) -> Value:
        constant = self._constant_of(name)
        if constant is not None:
            if constant.ndim > 1 or constant.size > MAX_LENGTH or constant.dtype.kind not in "iu":
                return None
            return tuple(int(v) for v in constant.reshape(-1).tolist())
        node = self._producers.get(name)
        if node is None or node.domain not in ("", "ai.onnx"):
            return None
        try:
            return self._node_value(node)
        except (IndexError, ValueError, TypeError, KeyError):  # a form not followed here: unknown
            return None

    def _node_value(self, node: NodeProto) -> Value:
        op = node.op_type
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if op == "Shape":
            dims = self._shape_of(node.input[0])
            if dims is None:
                return None
            full = tuple(int(d) if d is not None else (node.input[0], k) for k, d in enumerate(dims))
            start, end = attrs.get("start", 0), attrs.get("end", len(full))
            return full[slice(start, end)]
        if op == "Constant":
            return None  # read through ``constant_of``
        ins = [self(n) if n else None for n in node.input]
        if op in ("Identity", "Cast"):
            return ins[0] if op == "Identity" or attrs.get("to") in (6, 7) else None
        if op == "Concat":
            if any(v is None for v in ins):
                return None
            joined = tuple(e for v in ins for e in v)
            return joined if len(joined) <= MAX_LENGTH else None
        if op == "Gather":
            data, indices = ins[0], self._constant_of(node.input[1])
            if data is None or indices is None or attrs.get("axis", 0) != 0 or indices.ndim > 1:
                return None
            return tuple(data[int(i)] for i in indices.reshape(-1).tolist())  # a 0-d index: one element
        if op == "Slice" and len(node.input) >= 3:
            data = ins[0]
            starts, ends = (self._constant_of(n) for n in node.input[1:3])
            steps = self._constant_of(node.input[4]) if len(node.input) > 4 and node.input[4] else None
            axes = self._constant_of(node.input[3]) if len(node.input) > 3 and node.input[3] else None
            if data is None or starts is None or ends is None or starts.size != 1 or ends.size != 1:
                return None
            if (axes is not None and int(axes.reshape(-1)[0]) not in (0, -1)) or \
                    (steps is not None and int(steps.reshape(-1)[0]) != 1):
                return None
            return data[slice(*_clamped(int(starts.reshape(-1)[0]), int(ends.reshape(-1)[0]), len(data)))]
        if op in ("Squeeze", "Unsqueeze"):
            return ins[0] if ins[0] is not None and len(ins[0]) == 1 else None
        return None


def _clamped(start: int, end: int, n: int) -> tuple[int, int]:
    start = start + n if start < 0 else start
    end = end + n if end < 0 else end
    return max(0, min(n, start)), max(0, min(n, end))
