"""OpenVINO ONNX-frontend extensions: ``openvino.Core().read_model`` reads the ``onnx_bcast`` ops natively.

Usage::

    import openvino as ov
    from onnx_bcast.openvino import extensions
    core = ov.Core(); core.add_extension(extensions()); model = core.read_model("model.onnx")

``openvino`` is imported when ``extensions()`` or ``read_model()`` is first called, never by ``import onnx_bcast``
(``pip install onnx-bcast[openvino]``). The extensions use ``ConversionExtension(op, "onnx_bcast", fn)`` of
``openvino.frontend.onnx`` and build ops of the newest opset module that has ``broadcast`` (opset16 in 2026.4).

Mapping
-------
* ``Broadcast`` / ``Expand``, every mode: OpenVINO ``Broadcast-3`` with the same mode (``none`` is ``explicit``;
  pdpd gets its axis as the ``mode.mode.axis`` attribute: without it OpenVINO uses axis 0, not -1).
  ``target_shape`` / ``axes_mapping`` of a type other than int32/int64 are converted to int64 (8-bit shape inputs
  make the CPU plugin over-read a buffer). An empty ``axes_mapping`` outside explicit mode counts as absent.
* ``BroadcastV0``: ``Broadcast-3`` explicit, ``target_shape`` = ``shape``, ``axes_mapping`` = the output axes *not*
  in ``broadcast_axes``. ``BroadcastLikeV0``: the same with ``ShapeOf(like_arg)`` (so that like_arg stays an input
  of the model; OpenVINO folds it when static) and the given or deduced axes; deducing them needs the dims SPEC §2
  reads (else a ``NotImplementedError`` at read time; give ``initial_broadcast_axes``). The ONNX Runtime form
  (shape/axes also as inputs 1 and 2) is read too: a constant input wins over the attribute, as in the kernel; a
  run-time one falls back to the attribute.
* The 16 elementwise ops: ``Add Subtract Multiply Divide`` (``m_pythondiv=False``: integers truncate as in ONNX)
  ``Power Maximum Minimum``, ``Mod`` -> ``FloorMod`` (fmod=0) / ``Mod`` (fmod=1), ``Equal Less LessEqual Greater
  GreaterEqual LogicalAnd LogicalOr LogicalXor``, with ``auto_broadcast`` none / numpy / pdpd. For pdpd with known
  ranks B is first reshaped as SPEC §2 aligns it: B's trailing size-1 dims that stick out past A are squeezed
  (OpenVINO's shape inference does not trim them), and size-1 dims are appended up to A's end, so OpenVINO's pdpd
  rule then applies with axis -1. Measured on the CPU plugin (openvino 2026.4.1), an explicit pdpd axis fails to
  compile for float comparisons and logical ops even where B is right-aligned, and any op but Add, Subtract,
  Multiply, Power, Maximum, Minimum and FloorMod fails where B does not reach A's last axis; with B aligned and
  axis -1 every op compiles but float ``Mod`` ("Doesn't support broadcast type: pdpd"), which (like a static
  size-1 B dim against a 0-size A dim, which OpenVINO's pdpd rejects) runs as numpy broadcasting of the aligned B.
  With an unknown rank the node is OpenVINO's pdpd with the given axis (no trimming). ``Pow`` with an exponent of
  another type: a float base converts the exponent to its type; an integer base is raised in the exponent's float
  type and converted back (OpenVINO's Convert truncates toward zero, as ONNX Runtime's cast does).

Read-time validation (SPEC §2 where it deliberately differs from OpenVINO)
-------------------------------------------------------------------------
What is known when the model is read is checked with onnx-bcast's own shape rules (``broadcast_shape``,
``elementwise_shape``, ``broadcast_v0_shape``) and raises ``onnx_bcast.BroadcastError``: constant target /
axes (initializers, ``Constant`` nodes and anything that folds, e.g. ``Concat`` of constants or ``Shape`` of a
static tensor), and the data shapes as far as they are known. With partly known shapes the rule runs with every
unknown dim set to the size that fits best, so an error there holds for every size the unknown dims can take (the
message says so). Duplicate or unsorted explicit axes, negative target dims (OpenVINO reads -1 as a dynamic dim
and other negatives as 0), pdpd data that does not cover the target, a pdpd start axis outside the target, V0
shape/axes mismatches (no size-1 stretching) and elementwise pdpd 0-size rules are all caught there.

``openvino.Core.read_model`` wraps an exception raised inside an extension into a ``RuntimeError`` whose text
contains ours ("... While validating ONNX node '<Node(Broadcast): y>': BroadcastError: Broadcast(mode=explicit):
axes_mapping must be strictly increasing ..."). ``read_model()`` below re-raises it as the ``BroadcastError``
itself.

Statically known shapes also avoid OpenVINO crashes: an output with a 0-size dim is built as an empty reshape of
the data (the CPU plugin dies with SIGFPE on a 0-size data dim in numpy, explicit and pdpd mode, returns shape
``[1]`` for bidirectional ``[1]`` -> ``[0]``, and throws on others), and a broadcast that changes nothing (e.g.
scalar -> ``[]``, a segfault when compiling) is a reshape to the same shape.

Run time: what OpenVINO does where only run-time values show the error (openvino 2026.4.1, CPU plugin)
-----------------------------------------------------------------------------------------------------
Measured on one-node models read with these extensions, dims and shape inputs fed at run time. The CPU plugin
compiles nothing of unknown rank (an input without a shape, a run-time ``target_shape`` of unknown length:
"CPU plug-in doesn't support Broadcast operation with dynamic rank"), so ranks are known when reading, and every
rank rule (target rank below data rank, pdpd start axis and coverage, the axes count, elementwise pdpd fit) is a
read-time ``BroadcastError``. What remains:

* A data dim that does not fit the target (numpy, bidirectional, explicit, pdpd), an explicit axis past the target
  rank, unsorted explicit axes, a negative target dim ("Value -1 not in range [0:...]"): ``RuntimeError`` from
  ``infer`` with OpenVINO's shape-inference message; the compiled model and the request stay usable.
* Duplicate explicit axes (``[3, 1]`` -> ``[2, 3, 1]``, axes ``[1, 1]``): no error, the output holds garbage.
* pdpd Broadcast with a 0-size data dim meeting target dim 1 (valid in SPEC §2, output dim 0): the process dies
  with SIGFPE. (Numpy ``[0]`` -> ``[2, 0]`` and explicit 0-size data work when the shapes are known only at run
  time; with static shapes the extensions avoid OpenVINO's Broadcast there, see above.)
* ``axes_mapping`` fed at run time outside explicit mode, of a length unknown when reading: not used, so not
  checked (SPEC: it must be empty); OpenVINO drops the unused input from the model ("Port for tensor name ... was
  not found" when fed). A known non-zero length is a read-time error.
* BroadcastV0 / BroadcastLikeV0: a size-1 arg dim against a larger output dim is stretched (explicit mode does
  that; nGraph v0 and SPEC reject it); other mismatches raise ``RuntimeError``.
* Elementwise ``none`` with shapes that differ but broadcast: no error, numpy broadcasting (SPEC: an error).
  ``numpy`` mismatches: ``RuntimeError``. ``pdpd``: a B dim past A's end that is not 1 (``Squeeze``), a B dim that
  is neither 1 nor A's: ``RuntimeError``; a size-1 B dim against a 0-size A dim (valid in SPEC): ``RuntimeError``;
  a 0-size B dim against a size-1 A dim (invalid in SPEC): accepted, 0-size output. (pdpd with run-time dims runs
  on the CPU plugin's reference implementation.)
* Integer ``Div`` / ``Mod`` by zero: no error, the type's minimum (ONNX Runtime and onnx-bcast raise).
* int64 tensors: the CPU plugin computes and moves them as int32, so values outside int32 wrap, in broadcasts too
  (an OpenVINO limitation, not of this mapping).

OpenVINO's ONNX frontend reads a tensor of shape ``[0]`` (an empty initializer or ``Constant``) as a "failsafe"
scalar 0; the extensions turn such an input back into an empty 1-D tensor.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

from onnx_bcast.errors import BroadcastError
from onnx_bcast.ops.broadcast import broadcast_shape, canonical_mode
from onnx_bcast.ops.broadcast_v0 import LIKE_V0, V0, broadcast_v0_shape
from onnx_bcast.ops.common import int_vector, target_dims
from onnx_bcast.ops.elementwise import LOGICAL, canonical_rule, elementwise_shape
from onnx_bcast.ops.ort_arithmetic import ARITHMETIC

DOMAIN = "onnx_bcast"

#: The elementwise ops, in the op table's order.
ELEMENTWISE_OPS: tuple[str, ...] = tuple(ARITHMETIC)

#: The ops of the domain that ``extensions()`` reads: every forward op (not the backprop ops).
OPS: tuple[str, ...] = ("Broadcast", "Expand", V0, LIKE_V0, *ELEMENTWISE_OPS)

#: onnx-bcast elementwise op -> OpenVINO op (``Mod`` by ``fmod``: ``OV_MOD``).
OV_ELEMENTWISE: dict[str, str] = {
    "Add": "Add", "Sub": "Subtract", "Mul": "Multiply", "Div": "Divide", "Pow": "Power", "Max": "Maximum",
    "Min": "Minimum", "Equal": "Equal", "Less": "Less", "LessOrEqual": "LessEqual", "Greater": "Greater",
    "GreaterOrEqual": "GreaterEqual", "And": "LogicalAnd", "Or": "LogicalOr", "Xor": "LogicalXor",
}

#: ONNX ``Mod``: fmod=0 takes the divisor's sign (OpenVINO ``FloorMod``), fmod=1 the dividend's (``Mod``).
OV_MOD: dict[int, str] = {0: "FloorMod", 1: "Mod"}

_FAILSAFE = "ONNX_FAILSAFE_NODE"  # rt_info key of the scalar 0 OpenVINO's ONNX frontend makes of a [0]-shaped tensor
_FOLD_DEPTH = 32  # how far back a shape-like input is folded to constants
_Dims = tuple[int | None, ...] | None  # a partial shape: None for an unknown rank, None dims unknown


# --- OpenVINO, imported on first use -----------------------------------------------------------------------------


@cache
def _ov() -> Any:
    import openvino

    return openvino


@cache
def _opset() -> tuple[Any, str]:
    """The newest opset module that has ``broadcast`` (Broadcast-3), and its name."""
    for package in ("openvino", "openvino.runtime"):  # openvino.opsetN since 2024.x; openvino.runtime before
        for version in range(40, 2, -1):
            try:
                module = importlib.import_module(f"{package}.opset{version}")
            except ImportError:
                continue
            if hasattr(module, "broadcast"):
                return module, f"opset{version}"
    raise ImportError("no OpenVINO opset module with broadcast found")


@cache
def _factory() -> Any:
    try:
        from openvino.utils.node_factory import NodeFactory
    except ImportError:  # OpenVINO before 2025
        from openvino.runtime.utils.node_factory import NodeFactory
    return NodeFactory(_opset()[1])


def _ops() -> Any:
    return _opset()[0]


def extensions() -> list:
    """OpenVINO ONNX-frontend ``ConversionExtension``s for the ``onnx_bcast`` ops in ``OPS``: every forward op
    (broadcasts and elementwise; the backprop ops are not mapped).

    ``core.add_extension(extensions())`` before ``core.read_model``, or ``openvino.convert_model(path,
    extension=extensions())``.
    """
    from openvino.frontend.onnx import ConversionExtension

    converters: dict[str, Callable[[Any, str], list]] = {"Broadcast": _broadcast, "Expand": _broadcast,
                                                         V0: _broadcast_v0, LIKE_V0: _broadcast_like_v0}
    return [ConversionExtension(op, DOMAIN, _recorded(op, converters.get(op, _elementwise))) for op in OPS]


# --- our errors through read_model -------------------------------------------------------------------------------

_recent = threading.local()


def _recorded(op: str, convert: Callable[[Any, str], list]) -> Callable[[Any], list]:
    def run(ctx: Any) -> list:
        try:
            return convert(ctx, op)
        except (BroadcastError, NotImplementedError) as err:
            errors = getattr(_recent, "errors", [])
            _recent.errors = [*errors[-15:], err]
            raise
    return run


def read_model(model: str | os.PathLike | bytes | Any, core: Any = None) -> Any:
    """``core.read_model(model)`` (an ``openvino.Model``) with our ops read by ``extensions()``.

    ``model``: a path, the serialized bytes or an ``onnx.ModelProto``. Without ``core`` a new ``openvino.Core``
    with ``extensions()`` is used; a given ``core`` must have them added. OpenVINO wraps an error raised while
    converting a node into a ``RuntimeError``; ours is re-raised as itself (a ``BroadcastError`` for an invalid
    broadcast), chained to OpenVINO's.
    """
    if core is None:
        core = _ov().Core()
        core.add_extension(extensions())
    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()
    _recent.errors = []
    try:
        return core.read_model(model) if isinstance(model, bytes) else core.read_model(os.fspath(model))
    except RuntimeError as wrapped:
        for err in reversed(_recent.errors):
            if str(err) in str(wrapped):
                if isinstance(err, BroadcastError):
                    raise BroadcastError(err.op, err.mode, err.detail, err.node, err.mode_attr) from wrapped
                raise type(err)(str(err)) from wrapped
        raise
    finally:
        _recent.errors = []


# --- reading a node ----------------------------------------------------------------------------------------------


def _is_failsafe(node: Any) -> bool:
    return node.get_type_name() == "Constant" and _FAILSAFE in node.get_rt_info()


def _input(ctx: Any, index: int) -> Any:
    """Input ``index``; OpenVINO's scalar stand-in for a [0]-shaped constant becomes an empty 1-D constant again."""
    value = ctx.get_input(index)
    node = value.get_node()
    if _is_failsafe(node):
        return _ops().constant(np.zeros(0, node.get_element_type().to_dtype())).output(0)
    return value


def _optional_input(ctx: Any, index: int) -> Any | None:
    if ctx.get_input_size() <= index or ctx.get_input(index).get_node().get_type_name() == "NullNode":
        return None
    return _input(ctx, index)


def _attr(ctx: Any, name: str, default: Any) -> Any:
    return ctx.get_attribute(name) if ctx.has_attribute(name) else default


def _int_attr(ctx: Any, name: str, default: int, op: str, mode: str, mode_attr: str = "mode") -> int:
    value = _attr(ctx, name, default)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise BroadcastError(op, mode, f"{name} must be an integer, got {value!r}", mode_attr=mode_attr)
    return int(value)


def _dims(value: Any) -> _Dims:
    shape = value.get_partial_shape()
    if shape.rank.is_dynamic:
        return None
    return tuple(d.get_length() if d.is_static else None for d in shape)


def _static(dims: _Dims) -> bool:
    return dims is not None and None not in dims


def _fmt(dims: _Dims) -> str:
    if dims is None:
        return "(unknown rank)"
    text = ", ".join("?" if d is None else str(d) for d in dims)
    return f"({text},)" if len(dims) == 1 else f"({text})"


def _fold(value: Any, depth: int = 0) -> np.ndarray | None:
    """The values of ``value`` where they are known when reading the model, else None."""
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
    inputs = [_fold(v, depth + 1) for v in node.input_values()]
    shape = node.get_output_partial_shape(0)
    if any(x is None for x in inputs) or not shape.is_static:
        return None
    ov = _ov()
    result = ov.Tensor(node.get_output_element_type(0), shape.to_shape())
    try:
        done = node.evaluate([result], [ov.Tensor(np.ascontiguousarray(x)) for x in inputs])
    except Exception:  # no evaluate for this op or these types: not known statically
        return None
    return np.array(result.data, copy=True) if done else None


def _index_input(value: Any, what: str, op: str, mode: str) -> Any:
    """A shape-like input checked for an integer type and rank 1 where known; int64 unless it is int32/int64."""
    ov = _ov()
    elem = value.get_element_type()
    if not elem.is_integral_number():
        raise BroadcastError(op, mode, f"{what} must be an integer tensor, got {elem.get_type_name()}")
    dims = _dims(value)
    if dims is not None and len(dims) != 1:
        raise BroadcastError(op, mode, f"{what} must be 1-D, got shape {_fmt(dims)}")
    if elem not in (ov.Type.i32, ov.Type.i64):
        return _ops().convert(value, ov.Type.i64).output(0)
    return value


def _i64(values: Sequence[int]) -> Any:
    return _ops().constant(np.asarray(values, np.int64).reshape(-1)).output(0)


def _as_shape(data: Any, data_dims: tuple[int, ...], out_shape: tuple[int, ...]) -> Any:
    """``data`` (static shape) as a tensor of ``out_shape`` without a Broadcast: a reshape where the shapes are
    equal, an empty slice reshaped where ``out_shape`` has no elements (OpenVINO's Broadcast crashes on those)."""
    ops = _ops()
    if tuple(out_shape) != tuple(data_dims):
        flat = ops.reshape(data, _i64([int(np.prod(data_dims, dtype=np.int64))]), False)
        data = ops.slice(flat, _i64([0]), _i64([0]), _i64([1]))
    return ops.reshape(data, _i64(out_shape), False).output(0)


def _explained(err: BroadcastError, known: str) -> BroadcastError:
    """``err`` from a check with unknown dims set to the sizes that fit best: it holds for every size."""
    return BroadcastError(err.op, err.mode, f"{err.detail} [checked when reading the model with {known}; each "
                                            "unknown dim taken as the size that fits best]", err.node, err.mode_attr)


# --- Broadcast / Expand ------------------------------------------------------------------------------------------


def _broadcast(ctx: Any, op: str) -> list:
    mode = canonical_mode(_attr(ctx, "mode", "numpy" if op == "Broadcast" else "bidirectional"), op)
    axis = _int_attr(ctx, "axis", -1, op, mode)
    data = _input(ctx, 0)
    target = _index_input(_input(ctx, 1), "target_shape", op, mode)
    t_values = _fold(target)
    t = target_dims(t_values, op, mode) if t_values is not None else None
    t_rank = len(t) if t is not None else (_dims(target) or (None,))[0]
    axes = _optional_input(ctx, 2)
    a: tuple[int, ...] | None = None
    if axes is not None:
        axes = _index_input(axes, "axes_mapping", op, mode)
        values = _fold(axes)
        if values is not None:
            a = int_vector(values, "axes_mapping", op, mode)
            if mode != "explicit" and a:
                raise BroadcastError(op, mode, f"axes_mapping {list(a)} is only allowed in explicit mode")
        if mode != "explicit":
            length = None if a is not None else (_dims(axes) or (None,))[0]
            if length:
                raise BroadcastError(op, mode, f"axes_mapping (length {length}, values fed at run time) is only "
                                               "allowed in explicit mode")
            axes = a = None  # a constant empty one is absent; one of unknown length is not checked (see notes)
    elif mode == "explicit":
        raise BroadcastError(op, mode, "axes_mapping is required in explicit mode")
    d = _dims(data)
    out_shape = _check_broadcast(op, mode, axis, d, t, t_rank, a, axes is not None and a is None)
    if out_shape is not None and (0 in out_shape or out_shape == d):
        return [_as_shape(data, d, out_shape)]
    inputs = [data, _i64(t) if t is not None else target]
    if mode == "explicit":
        inputs.append(_i64(a) if a is not None else axes)
    attributes: dict[str, Any] = {"mode": mode}
    if mode == "pdpd":
        attributes["mode.mode.axis"] = axis
    return _factory().create("Broadcast", inputs, attributes).outputs()


def _check_broadcast(op: str, mode: str, axis: int, d: _Dims, t: tuple[int, ...] | None, t_rank: int | None,
                     a: tuple[int, ...] | None, axes_at_run_time: bool) -> tuple[int, ...] | None:
    """SPEC §2 on what is known now: the exact output shape when everything is, else None after checking the
    known part with unknown dims set to the sizes that fit best (an error then holds for every size)."""
    if _static(d) and t is not None and not axes_at_run_time:
        return broadcast_shape(d, t, a, mode=mode, axis=axis, op=op)
    if t_rank is None and t is None:
        if mode != "explicit" or a is None:
            return None
        t_rank = max(a, default=-1) + 1  # only the order of the axes can be checked
    if d is not None:
        d_rep = tuple(1 if x is None else x for x in d)  # a size-1 data dim passes every per-dim check
    elif mode == "explicit":
        if a is None:
            return None
        d_rep = (1,) * len(a)
    elif mode == "pdpd" and axis != -1 and 0 <= axis <= t_rank:
        d_rep = (1,) * (t_rank - axis)
    else:
        d_rep = ()
    if t is not None:
        t_rep = t
    elif mode == "explicit":
        if a is None:
            return None
        rep = [1] * t_rank
        for k, ak in enumerate(a):
            if 0 <= ak < t_rank and k < len(d_rep):
                rep[ak] = d_rep[k]
        t_rep = tuple(rep)
    else:
        start = t_rank - len(d_rep) if mode != "pdpd" or axis == -1 else axis
        fits = mode != "bidirectional" and 0 <= start and start + len(d_rep) == t_rank
        t_rep = (1,) * start + d_rep if fits else (1,) * t_rank
    try:
        broadcast_shape(d_rep, t_rep, a, mode=mode, axis=axis, op=op)
    except BroadcastError as err:
        values = f"target_shape {list(t)}" if t is not None else f"{t_rank} target_shape values known at run time"
        axes = "" if mode != "explicit" else f", axes_mapping {list(a)}" if a is not None else ", run-time axes"
        raise _explained(err, f"data {_fmt(d)}, {values}{axes}") from None
    return None


# --- BroadcastV0 / BroadcastLikeV0 -------------------------------------------------------------------------------


def _ints(ctx: Any, index: int, name: str, op: str, default: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """An ints attribute, or its ONNX Runtime form (input ``index``) where that is a constant."""
    value = _optional_input(ctx, index)
    folded = _fold(value) if value is not None else None
    if folded is not None:
        return int_vector(folded, name, op, "")
    if ctx.has_attribute(name):
        return int_vector(list(ctx.get_attribute(name)), name, op, "")
    if value is not None:
        raise NotImplementedError(f"{op}: {name} is fed at run time and there is no '{name}' attribute; OpenVINO "
                                  "needs it when reading the model")
    return int_vector(default, name, op, "")


def _explicit_v0(data: Any, d: _Dims, target: Any, out_shape: tuple[int, ...] | None, new_axes: Sequence[int],
                 rank: int) -> list:
    if out_shape is not None and (0 in out_shape or out_shape == d):
        return [_as_shape(data, d, out_shape)]
    kept = [i for i in range(rank) if i not in set(new_axes)]
    return _factory().create("Broadcast", [data, target, _i64(kept)], {"mode": "explicit"}).outputs()


def _broadcast_v0(ctx: Any, op: str) -> list:
    arg = _input(ctx, 0)
    shape = _ints(ctx, 1, "shape", op)
    axes = _ints(ctx, 2, "broadcast_axes", op)
    d = _dims(arg)
    if _static(d):
        out_shape = broadcast_v0_shape(d, shape, axes, op)
    else:
        out_shape = None
        required = [s for i, s in enumerate(shape) if i not in set(axes)]
        d_rep = list(required) if d is None else [required[k] if x is None and k < len(required) else x
                                                  for k, x in enumerate(d)]
        try:
            broadcast_v0_shape([1 if x is None else x for x in d_rep], shape, axes, op)
        except BroadcastError as err:
            raise _explained(err, f"arg {_fmt(d)}") from None
    return _explicit_v0(arg, d, _i64(shape), out_shape, axes, len(shape))


def _deduced_axes(d: _Dims, like: _Dims) -> tuple[int, ...] | None:
    """nGraph's left-aligned deduction of BroadcastLike's axes where the dims it reads are known, else None."""
    if d is None or like is None:
        return None
    axes = []
    for i, li in enumerate(like):
        if i >= len(d):
            axes.append(i)
        elif d[i] is None or d[i] == 1:
            if li is None or (d[i] is None and li > 1):
                return None
            if d[i] == 1 and li > 1:
                axes.append(i)
    return tuple(axes)


def _broadcast_like_v0(ctx: Any, op: str) -> list:
    arg, like = _input(ctx, 0), _input(ctx, 1)
    d, like_dims = _dims(arg), _dims(like)
    axes = _ints(ctx, 2, "initial_broadcast_axes", op, ())
    if not axes:
        axes = _deduced_axes(d, like_dims)
        if axes is None:
            raise NotImplementedError(
                f"{op}: deducing the broadcast axes (no initial_broadcast_axes) reads arg's and like_arg's dims, "
                f"which OpenVINO does not know when reading the model: arg {_fmt(d)}, like_arg {_fmt(like_dims)}; "
                "give initial_broadcast_axes or static shapes")
    if like_dims is None:
        raise NotImplementedError(f"{op}: like_arg's rank must be known when reading the model into OpenVINO")
    if _static(d) and _static(like_dims):
        out_shape = broadcast_v0_shape(d, like_dims, axes, op)
    else:
        out_shape = None
        kept = [i for i in range(len(like_dims)) if i not in set(axes)]
        like_rep = list(like_dims)
        d_rep = [like_dims[i] for i in kept] if d is None else list(d)
        for k, i in enumerate(kept[:len(d_rep)]):
            like_rep[i] = d_rep[k] if like_rep[i] is None else like_rep[i]
            d_rep[k] = like_rep[i] if d_rep[k] is None else d_rep[k]
        try:
            broadcast_v0_shape([1 if x is None else x for x in d_rep], [1 if x is None else x for x in like_rep],
                               axes, op)
        except BroadcastError as err:
            raise _explained(err, f"arg {_fmt(d)}, like_arg {_fmt(like_dims)}") from None
    target = _ops().shape_of(like, "i64").output(0)  # also when static: like_arg stays an input of the model
    return _explicit_v0(arg, d, target, out_shape, axes, len(like_dims))


# --- elementwise -------------------------------------------------------------------------------------------------


def _check_elementwise(op: str, rule: str, axis: int, da: _Dims, db: _Dims) -> tuple[int, ...] | None:
    """SPEC §2 on the known shapes: the output shape when both are static, else None after the check with unknown
    dims set to the sizes that fit best."""
    if _static(da) and _static(db):
        return elementwise_shape(da, db, auto_broadcast=rule, axis=axis, op=op)
    if da is None or db is None:
        return None
    if rule == "numpy":
        a_rep, b_rep = [1 if x is None else x for x in da], [1 if x is None else x for x in db]
    elif rule == "none":
        a_rep = [x if x is not None else (db[i] if i < len(db) and db[i] is not None else 1) for i, x in
                 enumerate(da)]
        b_rep = [x if x is not None else (a_rep[i] if i < len(a_rep) else 1) for i, x in enumerate(db)]
    else:
        b_rep = [1 if x is None else x for x in db]
        start = len(da) - len(db) if axis == -1 else axis
        a_rep = [x if x is not None else (db[i - start] if 0 <= i - start < len(db) and db[i - start] is not None
                                          else 1) for i, x in enumerate(da)]
    try:
        elementwise_shape(a_rep, b_rep, auto_broadcast=rule, axis=axis, op=op)
    except BroadcastError as err:
        raise _explained(err, f"A {_fmt(da)}, B {_fmt(db)}") from None
    return None


def _align_pdpd(b: Any, da: tuple, db: tuple, axis: int) -> tuple[Any, tuple[int | None, ...]]:
    """B reshaped as SPEC's pdpd rule aligns it, up to A's last axis: trailing size-1 dims past A's end dropped,
    size-1 dims appended, so that OpenVINO's pdpd rule with axis -1 (or numpy broadcasting) applies."""
    ops = _ops()
    ra, rb = len(da), len(db)
    start = ra - rb if axis == -1 else axis
    stick_out = max(0, start + rb - ra)
    kept = rb - stick_out
    aligned = tuple(db[:kept]) + (1,) * (ra - start - kept)
    if _static(db):
        return (b if aligned == tuple(db) else ops.reshape(b, _i64(aligned), False).output(0)), aligned
    if stick_out:
        b = ops.squeeze(b, _i64(range(kept, rb))).output(0)
    if len(aligned) > kept:
        b = ops.unsqueeze(b, _i64(range(kept, len(aligned)))).output(0)
    return b, aligned


def _elementwise(ctx: Any, op: str) -> list:
    ov = _ov()
    rule = canonical_rule(_attr(ctx, "auto_broadcast", "numpy"), op)
    axis = _int_attr(ctx, "axis", -1, op, rule, "auto_broadcast")
    fmod = _int_attr(ctx, "fmod", 0, op, rule, "auto_broadcast") if op == "Mod" else 0
    a, b = _input(ctx, 0), _input(ctx, 1)
    ta, tb = a.get_element_type(), b.get_element_type()
    shapes = f"A {_fmt(_dims(a))}, B {_fmt(_dims(b))}"
    if op in LOGICAL and not (ta == tb == ov.Type.boolean):
        raise BroadcastError(op, rule, f"takes bool inputs, got {ta.get_type_name()} and {tb.get_type_name()}; "
                                       f"{shapes}", mode_attr="auto_broadcast")
    if op != "Pow" and ta != tb:
        raise BroadcastError(op, rule, f"A and B must have one element type, got {ta.get_type_name()} and "
                                       f"{tb.get_type_name()}; {shapes}", mode_attr="auto_broadcast")
    if op == "Mod" and fmod not in OV_MOD:
        raise BroadcastError(op, rule, f"fmod must be 0 or 1, got {fmod}", mode_attr="auto_broadcast")
    da, db = _dims(a), _dims(b)
    out_shape = _check_elementwise(op, rule, axis, da, db)
    ov_op = OV_MOD[fmod] if op == "Mod" else OV_ELEMENTWISE[op]
    ov_rule, ov_axis = rule, axis
    if rule == "pdpd" and da is not None and db is not None:
        b, aligned = _align_pdpd(b, da, db, axis)
        ov_axis = -1
        a_part = da[len(da) - len(aligned):]
        zero_meets_one = out_shape is not None and any(a_part[k] == 0 and y == 1 for k, y in enumerate(aligned))
        if (ov_op == "Mod" and ta.is_real()) or zero_meets_one:
            ov_rule = "numpy"
    convert_back = None
    if op == "Pow" and ta != tb:
        if ta.is_real() or not tb.is_real():
            b = _ops().convert(b, ta).output(0)
        else:  # an integer base, a float exponent: as ONNX Runtime, in floating point, truncated back
            a, convert_back = _ops().convert(a, tb).output(0), ta
    attributes: dict[str, Any] = {"auto_broadcast": ov_rule}
    if ov_rule == "pdpd":
        attributes["auto_broadcast.auto_broadcast_axis"] = ov_axis
    if ov_op == "Divide":
        attributes["m_pythondiv"] = False
    node = _factory().create(ov_op, [a, b], attributes)
    if convert_back is not None:
        node = _ops().convert(node, convert_back)
    return node.outputs()


__all__ = ["DOMAIN", "ELEMENTWISE_OPS", "OPS", "OV_ELEMENTWISE", "OV_MOD", "extensions", "read_model"]
