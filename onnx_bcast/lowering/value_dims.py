"""The dims of a standard op's output from its inputs' dims (ints and symbols), as every run that gets past it has
them: the forward rules ``ShapeValues.dims`` follows through the graph.

A rule here may use only what the op itself enforces when it runs (ONNX Runtime, ``onnx.reference`` and OpenVINO
fail otherwise): broadcasting inputs meet, a ``Reshape`` keeps its element count, ``Concat``'s inputs agree off its
axis. A dim no rule can name is None: the caller keeps inference's own (a symbol of that output, equal only to
itself). A symbol may be 0 or 1 at run time, so it never stands for a 1 or stands in for another symbol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from onnx import NodeProto, helper

Element = int | tuple | None
Value = tuple[Element, ...] | None

# standard ops whose inputs broadcast multidirectionally (numpy's rule) into their one output
BROADCASTING = frozenset({
    "Add", "And", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Div", "Equal", "Greater", "GreaterOrEqual",
    "Less", "LessOrEqual", "Max", "Mean", "Min", "Mod", "Mul", "Or", "Pow", "Sub", "Sum", "Where", "Xor",
})
REDUCING = frozenset({
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
    "ReduceSum", "ReduceSumSquare",
})
FOLLOWED = BROADCASTING | REDUCING | {"MatMul", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Slice",
                                      "Conv"}  # the ops ``output_dims`` has a rule for
Dims = Callable[[str], Value]
Constant = Callable[[str], "np.ndarray | None"]


def output_dims(node: NodeProto, dims: Dims, values: Dims, constant: Constant) -> Value:
    """The dims of ``node``'s first output (a standard op's), per element an int, a symbol or None; None where no
    rule here applies."""
    op = node.op_type
    if op not in FOLLOWED:
        return None
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if op in BROADCASTING:
        return broadcast_dims([dims(name) if name else None for name in node.input])
    if op == "MatMul" and len(node.input) == 2:
        return _matmul(dims(node.input[0]), dims(node.input[1]))
    if op == "Reshape" and len(node.input) == 2:
        return _reshape(dims(node.input[0]), values(node.input[1]), bool(attrs.get("allowzero", 0)))
    if op == "Transpose":
        source = dims(node.input[0])
        if source is None:
            return None
        perm = attrs.get("perm", list(range(len(source)))[::-1])
        return tuple(source[p] for p in perm) if sorted(perm) == list(range(len(source))) else None
    if op in REDUCING:
        return _reduced(node, dims(node.input[0]), attrs, constant)
    if op in ("Squeeze", "Unsqueeze"):
        axes = attrs.get("axes") if "axes" in attrs else _ints(constant, node.input[1:2])
        return squeezed_dims(op, dims(node.input[0]), axes)
    if op == "Concat":
        return _concat([dims(name) for name in node.input], attrs.get("axis"))
    if op == "Slice" and len(node.input) >= 3:
        return _sliced(dims(node.input[0]), *(_ints(constant, node.input[k:k + 1]) for k in range(1, 5)))
    if op == "Conv" and len(node.input) >= 2:
        return _conv(dims(node.input[0]), dims(node.input[1]), attrs)
    return None


def broadcast_dims(operands: Sequence[Value]) -> Value:
    """Numpy's broadcast of ``operands``' dims: per axis, a dim of 1 yields; the dims left must agree in a run that
    gets past the op, so an int among them is the output's, and one symbol left alone is; two different symbols
    (either may be 1) name nothing."""
    if not operands or any(d is None for d in operands):
        return None
    rank = max(len(d) for d in operands)
    out: list[Element] = []
    for axis in range(rank):
        met = [d[axis - rank + len(d)] for d in operands if axis - rank + len(d) >= 0]
        left = [e for e in met if e != 1]
        ints = [e for e in left if isinstance(e, int)]
        if not left:
            out.append(1)
        elif ints:
            out.append(ints[0])
        elif None not in left and len(set(left)) == 1:
            out.append(left[0])
        else:
            out.append(None)
    return tuple(out)


_ABSENT = object()  # a batch axis one side of a MatMul does not have


def _matmul(a: Value, b: Value) -> Value:
    if a is None or b is None or not a or not b:
        return None
    if len(b) == 1:
        return a[:-1]
    if len(a) == 1:
        return (*b[:-2], b[-1])
    # a batch dim is named where both sides have it, or one side alone: ONNX Runtime 1.20 makes 1 of (1,) and (0,)
    rank = max(len(a), len(b)) - 2
    padded = [(_ABSENT,) * (rank + 2 - len(d)) + tuple(d[:-2]) for d in (a, b)]
    batch = tuple(x if x == y or y is _ABSENT else y if x is _ABSENT else None for x, y in zip(*padded, strict=True))
    return (*batch, a[-2], b[-1])


def _reshape(source: Value, shape: Value, allowzero: bool) -> Value:
    """A dim the shape input names is the output's: an int >= 1, or a symbol where a 0 there would copy the same
    symbol (the input's dim there is that symbol); a 0 copies the input's dim (without ``allowzero``); one -1 is
    what the element counts leave, where they cancel."""
    if shape is None:
        return None
    out: list[Element] = []
    for k, e in enumerate(shape):
        copied = source[k] if source is not None and k < len(source) else None
        if isinstance(e, int) and not isinstance(e, bool):
            out.append(e if e >= 1 or (e == 0 and allowzero) else copied if e == 0 else None)
        elif isinstance(e, tuple):  # (not with ``allowzero`` either: OpenVINO 2026.0 copies the dim there too)
            out.append(e if copied == e else None)
        else:
            out.append(None)
    if shape.count(-1) == 1 and source is not None and None not in source and out.count(None) == 1:
        out[shape.index(-1)] = _left_over(source, out)
    return tuple(out)


def _left_over(source: tuple, out: list) -> Element:
    """The dim a -1 stands for, where the output's other dims are ints >= 1 (a symbol there may be 0, which leaves
    the -1 undetermined): the input's dims with those ints divided out, where one symbol or an int is left."""
    named = [e for e in out if e is not None]
    if any(not isinstance(e, int) or e < 1 for e in named) or 0 in source:
        return None
    symbols = [e for e in source if isinstance(e, tuple)]
    ints = int(np.prod([e for e in source if isinstance(e, int)], dtype=np.int64))
    taken = int(np.prod(named, dtype=np.int64))
    if ints % taken:
        return None
    rest = ints // taken
    if not symbols:
        return rest
    return symbols[0] if len(symbols) == 1 and rest == 1 else None


def _ints(constant: Constant, names: Sequence[str]) -> list[int] | None:
    if not names or not names[0]:
        return None
    value = constant(names[0])
    return None if value is None or value.dtype.kind not in "iu" else [int(v) for v in value.reshape(-1)]


def _reduced(node: NodeProto, source: Value, attrs: dict, constant: Constant) -> Value:
    if source is None:
        return None
    if "axes" in attrs:
        axes: list[int] | None = list(attrs["axes"])
    elif len(node.input) > 1 and node.input[1]:
        axes = _ints(constant, node.input[1:2])
        if axes is None:
            return None
    else:
        axes = []
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return None  # ONNX Runtime 1.20 reduces an empty input over every axis there
        axes = list(range(len(source)))
    rank = len(source)
    if any(not -rank <= a < rank for a in axes):
        return None
    gone = {a % rank for a in axes}
    keep = attrs.get("keepdims", 1)
    return tuple(1 if k in gone else d for k, d in enumerate(source) if keep or k not in gone)


INT64_MAX = 2**63 - 1


def _sliced(source: Value, starts: list[int] | None, ends: list[int] | None, axes: list[int] | None,
            steps: list[int] | None) -> Value:
    """Dims off the sliced axes stay; a sliced int dim is what numpy's slice leaves (ONNX's rule); a sliced symbol
    stays only where the slice is the whole axis (start 0, end at least INT64_MAX, step 1)."""
    if source is None or starts is None or ends is None or len(starts) != len(ends):
        return None
    rank = len(source)
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if len(axes) != len(starts) or len(steps) != len(starts) or any(not -rank <= a < rank for a in axes) or \
            len({a % rank for a in axes}) != len(axes) or 0 in steps:
        return None
    out = list(source)
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        d = source[axis % rank]
        if isinstance(d, int):
            out[axis % rank] = len(range(*slice(start, end, step).indices(d)))
        elif not (start == 0 and end >= INT64_MAX and step == 1):
            out[axis % rank] = None
    return tuple(out)


def _conv(x: Value, w: Value, attrs: dict) -> Value:
    """The batch dim is the input's and the channels the weight's first; a spatial dim stays where the kernel
    leaves it (1 wide, stride and dilation 1, no padding)."""
    if x is None or w is None or len(x) < 3 or len(w) != len(x):
        return None
    spatial = len(x) - 2
    kernel = list(attrs.get("kernel_shape", w[2:]))
    unit = attrs.get("auto_pad", b"NOTSET") in (b"NOTSET", b"VALID") and \
        all(list(attrs.get(name, [default] * size)) == [default] * size
            for name, default, size in (("strides", 1, spatial), ("dilations", 1, spatial), ("pads", 0, 2 * spatial)))
    return (x[0], w[0], *(d if unit and k == 1 else None for d, k in zip(x[2:], kernel, strict=True)))


def squeezed_dims(op: str, source: Value, axes: Sequence[int] | None) -> Value:
    """``Squeeze`` (``op``) or ``Unsqueeze`` of dims ``source`` at ``axes``; None where they name no valid axis."""
    if source is None or axes is None:
        return None
    if op == "Squeeze":
        rank = len(source)
        if not axes or any(not -rank <= a < rank for a in axes):
            return None
        gone = {a % rank for a in axes}
        return tuple(d for k, d in enumerate(source) if k not in gone)
    rank = len(source) + len(axes)
    if any(not -rank <= a < rank for a in axes):
        return None
    dims = list(source)
    for a in sorted(a % rank for a in axes):
        dims.insert(a, 1)
    return tuple(dims)


def _concat(operands: Sequence[Value], axis: int | None) -> Value:
    """On the axis, the sum where every dim is an int; off it, a dim every input has: ONNX Runtime takes those dims
    from an input that holds elements and does not compare the empty ones ((3, 0) and (2, 4) make (5, 4))."""
    if axis is None or not operands or any(d is None for d in operands) or len({len(d) for d in operands}) != 1:
        return None
    rank = len(operands[0])
    if not -rank <= axis < rank:
        return None
    axis %= rank
    out: list[Element] = []
    for k in range(rank):
        met = [d[k] for d in operands]
        if k == axis:
            out.append(sum(met) if all(isinstance(e, int) for e in met) else None)
        else:
            out.append(met[0] if len(set(met)) == 1 else None)
    return tuple(out)

