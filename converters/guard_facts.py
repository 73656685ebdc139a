"""What a guard's conditions are before the run: each one proven, disproven or open, per element.

The conditions are the nodes a rule emitted (``Shape``, ``Slice``, ``Equal``, ...). They are evaluated here over
what the runtime enforces: the node's constant inputs, the dims of its inputs that shape inference derives from
fixed graph-input dims, and ranks. An unknown dim of input ``x`` at axis ``k`` is the symbol ``(x, k)``: equal to
itself, and to nothing else (a ``dim_param`` shared by two graph inputs proves nothing: ONNX Runtime does not
check it). A shape-like input computed from ``Shape`` upstream brings its elements (``shape_values``), so that a
target ``Shape(f)`` meets ``f``'s own symbols. Values are tuples of ints, bools, symbols or None (unknown); a whole
value may be None (unknown length).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from onnx import NodeProto, helper, numpy_helper

from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.dim_arithmetic import elementwise
from onnx_bcast.lowering.value_dims import squeezed_dims

Element = int | bool | tuple | None  # a tuple is a symbol (a value's name, axis): that dim's run-time size
Value = tuple[Element, ...] | None


def _known(e: Element) -> bool:
    return e is not None and not isinstance(e, tuple)


def _equal(a: Element, b: Element) -> Element:
    if a is None or b is None:
        return None
    if isinstance(a, tuple) or isinstance(b, tuple):
        return True if a == b else None  # one symbol is one dim; two may be equal or not
    return a == b


def _less(a: Element, b: Element) -> Element:
    if _known(a) and _known(b):
        return a < b
    if isinstance(a, tuple) and _known(b) and b <= 0:  # a symbol is a dim: never negative
        return False
    if isinstance(b, tuple) and _known(a) and a < 0:
        return True
    return False if isinstance(a, tuple) and a == b else None


def _arith(op: Callable[[int, int], int]) -> Callable[[Element, Element], Element]:
    def arith(a: Element, b: Element) -> Element:
        return int(op(a, b)) if _known(a) and _known(b) else None
    return arith


def _or(a: Element, b: Element) -> Element:
    if a is True or b is True:
        return True
    return False if a is False and b is False else None


def _and(a: Element, b: Element) -> Element:
    if a is False or b is False:
        return False
    return True if a is True and b is True else None


_BINARY: dict[str, Callable[[Element, Element], Element]] = {
    "Equal": _equal, "Less": _less, "Greater": lambda a, b: _less(b, a),
    "Or": _or, "And": _and, "Add": _arith(lambda a, b: a + b), "Sub": _arith(lambda a, b: a - b),
}
BROADCASTING = frozenset(_BINARY)  # the elementwise ops modelled: their operands broadcast


def _scalar(value: Value) -> int | None:
    """The one known int of a one-element value."""
    if value is not None and len(value) == 1 and _known(value[0]) and not isinstance(value[0], bool):
        return int(value[0])
    return None


class GuardFacts:
    """Partial evaluation of the values an emitter wrote, for one bound node."""

    def __init__(self, nodes: Sequence[NodeProto], constants: dict[str, tuple[int, ...]], bound: Bound) -> None:
        self._producer = {out: node for node in nodes for out in node.output}
        self._constants = constants
        self._bound = bound
        self._inputs = {name: i for i, name in enumerate(bound.inputs) if name}
        self._names = bound.fact_names or bound.inputs  # a replay's placeholders: the real names, for symbols
        self._computed = bound.computed
        self._memo: dict[str, Value] = {}

    def producer(self, name: str) -> NodeProto | None:
        """The emitted node that computes ``name`` (None for an input or a constant)."""
        return self._producer.get(name)

    def value(self, name: str) -> Value:
        if name not in self._memo:
            self._memo[name] = self._evaluate(name)
        return self._memo[name]

    def verdict(self, condition: str) -> bool | None:
        """True: holds for every run; False: fails for every run that reaches it; None: open."""
        value = self.value(condition)
        if value is None:
            return None
        if any(e is False for e in value):
            return False
        return True if all(e is True for e in value) else None

    def _evaluate(self, name: str) -> Value:
        if name in self._constants:
            return self._constants[name]
        node = self._producer.get(name)
        if node is None:
            return self._input_value(name)
        try:
            return self._node_value(node)
        except (IndexError, ValueError, TypeError):  # a form this evaluation does not model: open
            return None

    def _input_value(self, name: str) -> Value:
        i = self._inputs.get(name)
        if i is None:
            return None
        ints = self._bound.ints(i)
        if ints is not None and self._bound.values[i] is not None and np.ndim(self._bound.values[i]) == 1:
            return tuple(ints)
        if i < len(self._computed) and self._computed[i] is not None:
            return self._computed[i]  # computed from Shape upstream: ints and symbols
        length = self._bound.length(i)
        return None if length is None else (None,) * length

    def _shape_of(self, name: str) -> Value:
        i = self._inputs.get(name)
        if i is not None:
            if i < len(self._bound.derived_dims) and self._bound.derived_dims[i] is not None:
                return self._bound.derived_dims[i]
            dims = self._bound.shapes[i]
            if dims is None:
                return None
            return tuple(int(d) if d is not None else (self._names[i], k) for k, d in enumerate(dims))
        return self._emitted_shape(name)

    def _lead_tied(self, node: NodeProto) -> str | None:
        """``x`` where ``node`` is ``Squeeze(Expand(Unsqueeze(x, 0), Concat(1 + token, Shape(x))), 0)``, a check's
        tie on a leading axis (``Emitter.tied``; ``1 + token`` alone for a rank-0 ``x``); else None."""
        expand = self._producer.get(node.input[0])
        if expand is None or expand.op_type != "Expand":
            return None
        lead, target = self._producer.get(expand.input[0]), self._producer.get(expand.input[1])
        if lead is None or lead.op_type != "Unsqueeze" or target is None:
            return None
        if target.op_type == "Add" and self._shape_of(lead.input[0]) == ():  # a rank-0 x: [1 + token] alone
            return lead.input[0]
        if target.op_type != "Concat" or len(target.input) != 2:
            return None
        shape = self._producer.get(target.input[1])
        return lead.input[0] if shape is not None and shape.op_type == "Shape" and shape.input[0] == lead.input[0] \
            else None

    def _emitted_shape(self, name: str) -> Value:
        """The dims of a value the rule wrote: ``Unsqueeze``/``Squeeze`` of an input, a cast, or a 1-D value of ours."""
        node = self._producer.get(name)
        tied = self._lead_tied(node) if node is not None and node.op_type == "Squeeze" else None
        if tied is not None:
            return self._shape_of(tied)  # a run that reaches it passed the check: the same shape
        if node is not None and node.op_type in ("Unsqueeze", "Squeeze", "Cast", "Identity"):
            source = self._shape_of(node.input[0])
            if source is None or node.op_type in ("Cast", "Identity"):
                return source
            axes_attr = [a for a in node.attribute if a.name == "axes"]
            axes = list(helper.get_attribute_value(axes_attr[0])) if axes_attr else \
                list(self.value(node.input[1]) or ()) if len(node.input) > 1 else None
            if axes is None or not all(_known(a) for a in axes):
                return None
            return squeezed_dims(node.op_type, source, [int(a) for a in axes])
        inner = self.value(name)  # a 1-D value of ours: its length is its shape
        return None if inner is None else (len(inner),)

    def _node_value(self, node: NodeProto) -> Value:
        op, ins = node.op_type, [self.value(n) if n else None for n in node.input]
        if op == "Shape" and not node.attribute:
            return self._shape_of(node.input[0])
        if op in _BINARY:
            return elementwise(ins[0], ins[1], _BINARY[op])
        if op == "Not":
            return None if ins[0] is None else tuple(None if e is None else not e for e in ins[0])
        if op == "Neg":
            return None if ins[0] is None else tuple(-e if _known(e) else None for e in ins[0])
        if op == "Cast":
            to = helper.get_attribute_value(node.attribute[0])
            return ins[0] if to in (7, 9) else None  # int64 or bool: what the guards cast to
        if op == "Identity":
            return ins[0]
        if op == "Concat":
            return None if any(v is None for v in ins) else tuple(e for v in ins for e in v)
        if op == "Gather":  # one element per index (a vector of ours gathered from a vector)
            data, indices = ins
            if indices is None:
                return None
            return tuple(data[int(i)] if data is not None and _known(i) else None for i in indices)
        if op == "Slice" and len(ins) == 3:
            return self._slice(ins[0], ins[1], ins[2])
        if op == "ConstantOfShape":
            fill = [a for a in node.attribute if a.name == "value"]
            length = _scalar(ins[0])
            if not fill or length is None or length > 64:
                return None
            return (int(numpy_helper.to_array(fill[0].t).reshape(-1)[0]),) * length
        if op == "Where":
            cond, a, b = ins
            if cond is None or a is None or b is None or len(cond) != 1 or len(a) != 1 or len(b) != 1:
                return None
            return (a[0] if cond[0] is True else b[0] if cond[0] is False else (a[0] if a[0] == b[0] else None),)
        return None

    @staticmethod
    def _slice(data: Value, start: Value, end: Value) -> Value:
        begin, stop = _scalar(start), _scalar(end)
        if data is None or begin is None or stop is None:
            return None
        n = len(data)
        begin = max(0, min(n, begin + n if begin < 0 else begin))
        stop = max(0, min(n, stop + n if stop < 0 else stop))
        return data[begin:stop]
