"""Reading a node in OpenVINO's ONNX frontend (inputs, attributes, known shapes and values) and building ov nodes."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops
from openvino.utils.node_factory import NodeFactory

from onnx_bcast.errors import BroadcastError
from onnx_bcast.ops.common import int_vector

#: The OpenVINO opset the mappings build (Broadcast-3, the v1 elementwise ops and ReduceSum are its versions).
OPSET = "opset13"

Dims = tuple[int | None, ...] | None  # a partial shape: None for an unknown rank, None dims unknown
Output = Any  # an openvino Output (the frontend's tensor handle)

_FAILSAFE = "ONNX_FAILSAFE_NODE"  # rt_info key of the scalar 0 OpenVINO's ONNX frontend makes of a [0]-shaped tensor
_FOLD_DEPTH = 32  # how far back a shape-like input is folded to constants


@cache
def factory() -> NodeFactory:
    """A node factory for ``OPSET``: it takes attributes by their IR names (e.g. the pdpd axis)."""
    return NodeFactory(OPSET)


def create(op: str, inputs: Sequence[Output], attributes: dict[str, Any]) -> list[Output]:
    """The outputs of a new ``op`` of ``OPSET`` (shape inference runs here)."""
    return list(factory().create(op, list(inputs), attributes).outputs())


# --- inputs and attributes ----------------------------------------------------------------------------------------


def _is_failsafe(node: Any) -> bool:
    return node.get_type_name() == "Constant" and _FAILSAFE in node.get_rt_info()


def input_at(ctx: Any, index: int) -> Output:
    """Input ``index``; the frontend's scalar stand-in for a [0]-shaped constant becomes an empty 1-D one again."""
    value = ctx.get_input(index)
    node = value.get_node()
    if _is_failsafe(node):
        return ops.constant(np.zeros(0, node.get_element_type().to_dtype())).output(0)
    return value


def optional_input(ctx: Any, index: int) -> Output | None:
    """Input ``index``, or None where the node has fewer inputs or an empty name there."""
    if ctx.get_input_size() <= index or ctx.get_input(index).get_node().get_type_name() == "NullNode":
        return None
    return input_at(ctx, index)


def attr(ctx: Any, name: str, default: Any) -> Any:
    """An attribute's value, or ``default`` where the node has none."""
    return ctx.get_attribute(name) if ctx.has_attribute(name) else default


def int_attr(ctx: Any, name: str, default: int, op: str, mode: str, mode_attr: str = "mode") -> int:
    """An int attribute, a BroadcastError if it has another kind."""
    value = attr(ctx, name, default)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise BroadcastError(op, mode, f"{name} must be an integer, got {value!r}", mode_attr=mode_attr)
    return int(value)


def ints(ctx: Any, index: int, name: str, op: str, default: Sequence[int] | None = None) -> tuple[int, ...]:
    """An ints attribute, or its ONNX Runtime form (input ``index``) where that input is known when reading."""
    value = optional_input(ctx, index)
    folded = fold(value) if value is not None else None
    if folded is not None:
        return int_vector(folded, name, op, "")
    if ctx.has_attribute(name):
        return int_vector(list(ctx.get_attribute(name)), name, op, "")
    if value is not None:
        raise NotImplementedError(f"{op}: {name} is fed at run time and there is no '{name}' attribute; OpenVINO "
                                  "needs it when reading the model")
    return int_vector(default, name, op, "")


# --- what is known when reading -----------------------------------------------------------------------------------


def dims(value: Output) -> Dims:
    """The partial shape of ``value`` as known now."""
    shape = value.get_partial_shape()
    if shape.rank.is_dynamic:
        return None
    return tuple(d.get_length() if d.is_static else None for d in shape)


def is_static(shape: Dims) -> bool:
    """Whether every dim is known."""
    return shape is not None and None not in shape


def fmt(shape: Dims) -> str:
    """A partial shape as the message template writes it, ``?`` for an unknown dim."""
    if shape is None:
        return "(unknown rank)"
    text = ", ".join("?" if d is None else str(d) for d in shape)
    return f"({text},)" if len(shape) == 1 else f"({text})"


def fold(value: Output, depth: int = 0) -> np.ndarray | None:
    """The values of ``value`` where they are known when reading the model (constants, ``ShapeOf`` of a static
    shape, and ops on those that OpenVINO evaluates), else None."""
    node = value.get_node()
    kind = node.get_type_name()
    if kind == "Constant":
        if _is_failsafe(node):
            return np.zeros(0, node.get_element_type().to_dtype())
        return np.array(node.get_data(), copy=True)
    if kind == "ShapeOf":
        shape = node.get_input_partial_shape(0)
        dtype = node.get_output_element_type(0).to_dtype()
        return np.array([d.get_length() for d in shape], dtype) if shape.is_static else None
    if kind in ("Parameter", "NullNode") or depth >= _FOLD_DEPTH or node.get_output_size() != 1:
        return None
    inputs = [fold(v, depth + 1) for v in node.input_values()]
    shape = node.get_output_partial_shape(0)
    if any(x is None for x in inputs) or not shape.is_static:
        return None
    result = ov.Tensor(node.get_output_element_type(0), shape.to_shape())
    try:
        done = node.evaluate([result], [ov.Tensor(np.ascontiguousarray(x)) for x in inputs])
    except Exception:  # no evaluate for this op or these types: not known statically
        return None
    return np.array(result.data, copy=True) if done else None


def index_input(value: Output, what: str, op: str, mode: str, mode_attr: str = "mode") -> Output:
    """A shape-like input checked for an integer type and rank 1 where known; int64 unless it is int32/int64
    (8-bit shape inputs make the CPU plugin over-read a buffer)."""
    elem = value.get_element_type()
    if not elem.is_integral_number():
        raise BroadcastError(op, mode, f"{what} must be an integer tensor, got {elem.get_type_name()}",
                             mode_attr=mode_attr)
    shape = dims(value)
    if shape is not None and len(shape) != 1:
        raise BroadcastError(op, mode, f"{what} must be 1-D, got shape {fmt(shape)}", mode_attr=mode_attr)
    if elem not in (ov.Type.i32, ov.Type.i64):
        return ops.convert(value, ov.Type.i64).output(0)
    return value


def length(value: Output) -> int | None:
    """The length of a 1-D input where it is known when reading."""
    shape = dims(value)
    return shape[0] if shape else None


# --- building -----------------------------------------------------------------------------------------------------


def i64(values: Sequence[int]) -> Output:
    """A 1-D int64 constant."""
    return ops.constant(np.asarray(values, np.int64).reshape(-1)).output(0)


def as_shape(data: Output, data_dims: tuple[int, ...], out_shape: tuple[int, ...]) -> Output:
    """``data`` (static shape) as a tensor of ``out_shape`` without a Broadcast: a reshape where the element counts
    agree, an empty slice reshaped where ``out_shape`` has no elements (OpenVINO's Broadcast crashes on those)."""
    if tuple(out_shape) != tuple(data_dims):
        flat = ops.reshape(data, i64([int(np.prod(data_dims, dtype=np.int64))]), False)
        data = ops.slice(flat, i64([0]), i64([0]), i64([1]))
    return ops.reshape(data, i64(out_shape), False).output(0)


def ones_then(count: int, tail: Output | None = None, after: int = 0) -> Output:
    """``[1] * count + tail + [1] * after`` as an int64 tensor (``tail`` a 1-D int64 tensor or None)."""
    parts = [i64([1] * count)] if count else []
    if tail is not None:
        parts.append(tail)
    if after:
        parts.append(i64([1] * after))
    if not parts:
        return i64([])
    return parts[0] if len(parts) == 1 else ops.concat(parts, 0).output(0)


def as_i64(value: Output) -> Output:
    """``value`` as int64."""
    return value if value.get_element_type() == ov.Type.i64 else ops.convert(value, ov.Type.i64).output(0)


# --- run-time checks ----------------------------------------------------------------------------------------------


def checked_zero(checks: Sequence[tuple[Sequence[Output], str]]) -> Output:
    """``[0]`` (int64), computed only when every condition (a bool tensor) of every ``(conditions, message)`` check
    holds everywhere; otherwise running the model fails with OpenVINO's ``RuntimeError`` quoting that ``message``.
    Add it to a value the data path reads (a ``ReduceSum``'s axes) so that no pass removes the check.

    The CPU plugin runs an incompatible ``Broadcast`` in shape arithmetic unchecked but checks a ``Reshape``'s
    element count (of a 2-D target: it drops 1-D to 1-D ones) and names the node in its error: with ``bad`` the
    number of false elements, three zeros are reshaped to ``[1, 3 + bad]`` by a ``Reshape`` named ``message``, and
    their sum is the zero. Counts are int32 (the CPU plugin computes int64 as int32 anyway). Not a tie in a
    ``Reshape``'s target: the CPU plugin rewrites a 1-D target to ``[-1]`` and the check with it.
    """
    zero = i64([0])
    for conditions, message in checks:
        flags = [c.output(0) if hasattr(c, "output") else c for c in conditions]  # nodes or outputs
        flags = [c for c in flags if 0 not in [d.get_length() for d in c.get_partial_shape() if d.is_static]]
        bad = None
        for c in flags:
            count = ops.reduce_sum(ops.convert(ops.logical_not(c), ov.Type.i32), i64(range(len(c.get_partial_shape()))),
                                   False)
            bad = count if bad is None else ops.add(bad, count)
        if bad is None:
            continue
        size = ops.add(ops.reshape(bad, i64([1]), False), ops.constant(np.array([3], np.int32)))
        probe = ops.reshape(ops.constant(np.zeros(3, np.int32)),
                            ops.concat([ops.constant(np.array([1], np.int32)), size], 0), False)
        probe.set_friendly_name(message)
        total = ops.reduce_sum(probe, i64([1]), False)  # [0], of shape [1]
        zero = ops.add(zero, ops.convert(total, ov.Type.i64)).output(0)
    return zero
