"""The values of shape-like tensors that the graph computes from ``Shape``, and the dims of values: ints where
known, else symbols.

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

from onnx_bcast.errors import BroadcastError
from onnx_bcast.lowering.dim_arithmetic import at_least, elementwise, times
from onnx_bcast.lowering.static_facts import Dims
from onnx_bcast.lowering.value_dims import broadcast_dims, output_dims
from onnx_bcast.onnx_defs.inference import attribute_value
from onnx_bcast.ops import SPEC_BY_NAME
from onnx_bcast.ops.broadcast import canonical_mode
from onnx_bcast.ops.elementwise import ELEMENTWISE_OPS

Element = int | tuple[str, int] | None
Value = tuple[Element, ...] | None
MAX_LENGTH = 64  # a shape-like value longer than any rank is not followed
_INTEGER_TYPES = frozenset({2, 3, 4, 5, 6, 7, 12, 13})  # uint8, int8, uint16, int16, int32, int64, uint32, uint64
_FOLLOWED = frozenset({"Shape", "Constant", "Identity", "Cast", "Concat", "Gather", "Slice", "Squeeze", "Unsqueeze",
                       "Reshape", "Max", "Min", "Sum", "Mean", "Mul"})  # the ops ``_node_value`` follows


# ops whose output has their first input's shape whenever they run (unary, or with attributes only)
SAME_SHAPE = frozenset({
    "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cast", "Ceil", "Celu", "Cos", "Cosh", "Elu", "Erf",
    "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish", "Hardmax", "Identity", "IsInf", "IsNaN", "LeakyRelu", "Log",
    "LogSoftmax", "Mish", "Neg", "Not", "Reciprocal", "Relu", "Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin",
    "Sinh", "Softmax", "Softplus", "Softsign", "Sqrt", "Tan", "Tanh", "ThresholdedRelu",
})
OURS = "onnx_bcast"


class ShapeValues:
    """Element-wise values of shape-like tensors, and the dims of values, by name, from the graph's producers."""

    def __init__(self, producers: dict[str, NodeProto], shape_of: Callable[[str], Dims | None],
                 constant_of: Callable[[str], np.ndarray | None],
                 type_of: Callable[[str], int | None] = lambda name: None) -> None:
        """``type_of``: a value's element type where known; a product is followed only in int64."""
        self._producers = producers
        self._type_of = type_of
        self._shape_of = shape_of
        self._constant_of = constant_of
        self._memo: dict[str, Value] = {}
        self._dims_memo: dict[str, Value] = {}

    def dims(self, name: str) -> Value:
        """``name``'s dims: ints where inference knows them from fixed dims, else symbols. A symbol is the dim of
        the value it was first read on, followed through ops that keep it or name it whenever they run (unary ops,
        the standard ops of ``value_dims``, our none/pdpd elementwise ops, whose output is A's shape or the run
        fails, and our broadcasts in numpy, explicit and bidirectional mode)."""
        if name not in self._dims_memo:
            self._upstream_first(name)
        return self._dims_memo[name]

    def _upstream_first(self, name: str) -> None:
        """Both facts of ``name`` and of every value it is computed from, inputs before the nodes that read them
        (a loop: a chain of thousands of nodes is not a recursion as deep). A value met again before its facts are
        known (a cycle, none in a valid graph) reads as unknown."""
        stack: list[tuple[str, bool]] = [(name, False)]
        while stack:
            current, ready = stack.pop()
            if ready:
                self._dims_memo[current] = self._derived_dims(current)
                self._memo[current] = self._value(current)
                continue
            if current in self._dims_memo:
                continue
            self._dims_memo[current] = self._memo[current] = None  # until known
            stack.append((current, True))
            node = self._producers.get(current)
            if node is not None:
                stack.extend((i, False) for i in node.input if i and i not in self._dims_memo)

    def _derived_dims(self, name: str) -> Value:
        known = self._shape_of(name)
        own: Value = None if known is None else tuple(int(d) if d is not None else (name, k)
                                                      for k, d in enumerate(known))
        node = self._producers.get(name)
        if node is None or not node.input or node.output[0] != name:
            return own
        source: Value = None
        if node.domain in ("", "ai.onnx") and node.op_type in SAME_SHAPE:
            source = self.dims(node.input[0])
        elif node.domain in ("", "ai.onnx"):
            source = output_dims(node, self.dims, self, self._constant_of)
        elif node.domain == OURS and node.op_type in ELEMENTWISE_SHAPE_OF_A and _rule(node) in ("none", "pdpd"):
            source = self.dims(node.input[0])
        elif node.domain == OURS and node.op_type in TARGET_SHAPED and len(node.input) > 1:
            mode = _mode(node)  # numpy, explicit: the output is the target exactly, or the run fails;
            # bidirectional: the data's dims and the target broadcast; pdpd: a target dim of 1 takes the data's
            if mode in ("numpy", "explicit"):
                source = self(node.input[1])
            elif mode == "bidirectional":
                source = broadcast_dims([self.dims(node.input[0]), self(node.input[1])])
        if source is None or (own is not None and len(source) != len(own)):
            return own
        if own is None:  # inference knows no shape: where the source names no dim, a symbol of this value's own
            own = tuple((name, k) for k in range(len(source)))
        # inference's fixed dims stand; where it knows none, the source's dim (an int or a symbol) is this one
        return tuple(o if isinstance(o, int) or s is None else s for o, s in zip(own, source, strict=True))

    def __call__(self, name: str) -> Value:
        if name not in self._memo:
            self._upstream_first(name)
        return self._memo[name]

    def _value(self, name: str) -> Value:
        elem = self._type_of(name)
        if elem is not None and elem not in _INTEGER_TYPES:  # a float weight's data is never read here
            return None
        node = self._producers.get(name)
        if node is not None and (node.domain not in ("", "ai.onnx") or node.op_type not in _FOLLOWED):
            return None
        constant = self._constant_of(name)
        if constant is not None:
            if constant.ndim > 1 or constant.size > MAX_LENGTH or constant.dtype.kind not in "iu":
                return None
            return tuple(int(v) for v in constant.reshape(-1).tolist())
        if node is None:
            return None
        try:
            return self._node_value(node)
        except (IndexError, ValueError, TypeError, KeyError):  # a form not followed here: unknown
            return None

    def _node_value(self, node: NodeProto) -> Value:
        op = node.op_type
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if op == "Shape":
            full = self.dims(node.input[0])
            if full is None:
                return None
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
        if op == "Reshape":  # to a 1-D value of its length, or a 1-element value to rank 0: the same elements
            shape = self._constant_of(node.input[1])
            if ins[0] is None or shape is None or shape.size > 1 or not ins[0] or attrs.get("allowzero", 0):
                return None
            return ins[0] if (shape.size == 0 and len(ins[0]) == 1) or \
                (shape.size == 1 and int(shape.reshape(-1)[0]) in (-1, len(ins[0]))) else None
        if op in ("Max", "Min", "Sum", "Mean") and len(ins) == 1:
            return ins[0]
        if op in ("Mul", "Max") and len(ins) == 2 and \
                (op == "Max" or self._type_of(node.output[0]) == 7):  # int64: a product of dims does not wrap
            return elementwise(ins[0], ins[1], times if op == "Mul" else at_least)
        return None


ELEMENTWISE_SHAPE_OF_A = frozenset(ELEMENTWISE_OPS)


TARGET_SHAPED = frozenset({"Broadcast", "Expand"})  # ours: in numpy/explicit mode, the output's shape is the target


def _mode(node: NodeProto) -> str | None:
    """A broadcast's canonical mode, as its spec reads it (``Expand``'s default: ONNX's, bidirectional); None for a
    mode it does not know (the node's declaration says why)."""
    attrs = {attr.name: attribute_value(attr) for attr in node.attribute}
    try:
        return canonical_mode(SPEC_BY_NAME[node.op_type].mode_of(attrs), node.op_type)
    except BroadcastError:
        return None


def _rule(node: NodeProto) -> str:
    for attr in node.attribute:
        if attr.name == "auto_broadcast":
            rule = attr.s.decode().lower()
            return "none" if rule == "explicit" else rule
    return "numpy"


def _clamped(start: int, end: int, n: int) -> tuple[int, int]:
    start = start + n if start < 0 else start
    end = end + n if end < 0 else end
    return max(0, min(n, start)), max(0, min(n, end))
