"""Registration of our kernels as onnxruntime-extensions Python ops, once per process.

Two families are registered from one table:
* the public ops (domain ``onnx_bcast``) with the ONNX Runtime form of each op (fixed arity, int64 shape
  inputs, list attributes as inputs) so that such models run in a plain ORT session;
* the guarded ops (domain ``onnx_bcast.ort``) that ``onnx_bcast.prepare`` emits: a second output, the
  status, feeds a ``Reshape`` of a one-element constant beside the data path (so the data is never copied
  again). The status is ``[1]`` on success. When the kernel fails it records the error, returns an empty
  tensor and the status ``[2, error_id]``, which cannot reshape one element, so ORT fails the run cleanly
  (a Python exception, never an abort) and ``InferenceSession`` turns it back into the recorded error.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import helper
from onnxruntime_extensions import PyCustomOpDef, get_library_path, onnx_op

from onnx_bcast import ort_marshal
from onnx_bcast.errors import BroadcastError
from onnx_bcast.memory_guard import check_output_size
from onnx_bcast.ops.broadcast import broadcast, canonical_mode
from onnx_bcast.ops.broadcast_v0 import LIKE_V0, V0, broadcast_v0, like_axes
from onnx_bcast.ops.elementwise import (
    ARITHMETIC,
    COMPARISONS,
    LOGICAL,
    canonical_rule,
    elementwise,
    elementwise_shape,
    pdpd_alignment,
    standard_types,
)
from onnx_bcast.process_state import record_error, state
from onnx_bcast.schemas import ELEMENTWISE_CHECK

DOMAIN = "onnx_bcast"
GUARDED_DOMAIN = "onnx_bcast.ort"
ERROR_SHAPE_MARK = 2  # the guarded status on failure is [ERROR_SHAPE_MARK, error_id]
_STATUS_OK = np.ones((1,), dtype=np.int64)

logger = logging.getLogger("onnx_bcast.ort")
_U = PyCustomOpDef.undefined
_I64 = PyCustomOpDef.dt_int64
_STR = PyCustomOpDef.dt_string
_INT = PyCustomOpDef.dt_int64

guarded_run = threading.local()  # set by InferenceSession.run: errors are raised, not only logged


@dataclass(frozen=True)
class BridgeOp:
    """One Python op as ORT sees it: name, the attributes it reads, and how it calls our kernel."""

    name: str
    attrs: dict[str, int]
    run: Callable[[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]], np.ndarray]
    mode_of: Callable[[dict[str, Any]], str]


def _limit(attrs: dict[str, Any]) -> int | None:
    """The session's output limit from a guarded node (-1 or absent: the environment's or the default)."""
    value = int(attrs.get("max_output_bytes", -1))
    return None if value < 0 else value


def _run_broadcast(op: str) -> Callable[..., np.ndarray]:
    def run(data: np.ndarray, target: np.ndarray, axes: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
        return broadcast(data, target, axes, mode=attrs["mode"], axis=attrs["axis"], op=attrs.get("op", op),
                         max_output_bytes=_limit(attrs))
    return run


def _run_v0(data: np.ndarray, shape: np.ndarray, axes: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    return broadcast_v0(data, shape, axes, max_output_bytes=_limit(attrs))


def _run_like_v0(data: np.ndarray, like_shape: np.ndarray, axes: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    like = tuple(int(v) for v in like_shape.tolist())
    return broadcast_v0(data, like, like_axes(data.shape, like, axes), LIKE_V0, max_output_bytes=_limit(attrs))


def _mode_attr(attrs: dict[str, Any]) -> str:
    try:
        return canonical_mode(attrs.get("mode", ""))
    except BroadcastError:
        return str(attrs.get("mode", ""))


_BROADCAST_ATTRS = {"mode": _STR, "axis": _INT}
PUBLIC_OPS = (
    BridgeOp("Broadcast", _BROADCAST_ATTRS, _run_broadcast("Broadcast"), _mode_attr),
    BridgeOp("Expand", _BROADCAST_ATTRS, _run_broadcast("Expand"), _mode_attr),
    BridgeOp(V0, {}, _run_v0, lambda attrs: ""),
)
# quiet=1: the caller raises the error; max_output_bytes: the session's limit, -1 when not given
_GUARD_ATTRS = {"op": _STR, "node": _STR, "quiet": _INT, "max_output_bytes": _INT}
GUARDED_OPS = (
    BridgeOp("Broadcast", {**_BROADCAST_ATTRS, **_GUARD_ATTRS}, _run_broadcast("Broadcast"), _mode_attr),
    BridgeOp(V0, dict(_GUARD_ATTRS), _run_v0, lambda attrs: ""),
    BridgeOp(LIKE_V0, dict(_GUARD_ATTRS), _run_like_v0, lambda attrs: ""),
)


def _failure(bridge: BridgeOp, attrs: dict[str, Any], exc: BaseException) -> BaseException:
    op = attrs.get("op", bridge.name)
    node = attrs.get("node") or None
    if isinstance(exc, BroadcastError):
        return exc.with_node(node)
    err = BroadcastError(op, bridge.mode_of(attrs), f"kernel failed: {type(exc).__name__}: {exc}", node)
    err.__cause__ = exc
    return err


def _log(error: BaseException, attrs: dict[str, Any]) -> None:
    """A kernel error is logged unless the caller raises it (``InferenceSession``: ``quiet`` on the node).

    The node attribute, not a thread-local, decides: under ORT's parallel execution mode kernels run on ORT's
    pool threads, not on the thread that called ``run``.
    """
    if int(attrs.get("quiet", 0)) or getattr(guarded_run, "active", False):
        logger.debug("%s", error)
    else:
        logger.error("%s", error)


def _make_kernel(bridge: BridgeOp, guarded: bool) -> Callable[..., Any]:
    def kernel(data: np.ndarray, second: np.ndarray, third: np.ndarray, **attrs: Any) -> Any:
        try:
            out = bridge.run(data, second, third, attrs)
        except BaseException as exc:  # an exception here would abort the process: never let one through
            error = _failure(bridge, attrs, exc)
            error_id = record_error(error)
            if getattr(guarded_run, "active", False):
                guarded_run.error_id = error_id  # the fallback when another node fails the run first
            _log(error, attrs)
            empty = np.zeros((0,), dtype=data.dtype)
            if guarded:
                return empty, np.array([ERROR_SHAPE_MARK, error_id], dtype=np.int64)
            return empty
        if guarded:
            return out, _STATUS_OK
        return out
    kernel.__name__ = f"{bridge.name}_kernel"
    return kernel


def _declare(domain: str, bridge: BridgeOp, guarded: bool) -> None:
    outputs = [_U, _I64] if guarded else [_U]
    opdef = onnx_op(op_type=f"{domain}::{bridge.name}", inputs=[_U, _I64, _I64], outputs=outputs,
                    attrs=dict(bridge.attrs))(_make_kernel(bridge, guarded))
    state().our_op_ids.add(opdef._nativedef.obj_id)


# the types the bridge carries (16-bit floats and strings are refused or not practical as elementwise operands)
_BRIDGE_TYPE = {"tensor(float)": PyCustomOpDef.dt_float, "tensor(double)": PyCustomOpDef.dt_double,
                "tensor(int8)": PyCustomOpDef.dt_int8, "tensor(int16)": PyCustomOpDef.dt_int16,
                "tensor(int32)": PyCustomOpDef.dt_int32, "tensor(int64)": _I64,
                "tensor(uint8)": PyCustomOpDef.dt_uint8, "tensor(uint16)": PyCustomOpDef.dt_uint16,
                "tensor(uint32)": PyCustomOpDef.dt_uint32, "tensor(uint64)": PyCustomOpDef.dt_uint64,
                "tensor(bool)": PyCustomOpDef.dt_bool}


def elementwise_bridge_types(op: str) -> list[str]:
    """The ONNX types the public elementwise op ``op`` runs with in plain ORT (one registration each)."""
    return [t for t in standard_types(op) if t in _BRIDGE_TYPE]


def _elementwise_kernel(op: str) -> Callable[..., np.ndarray]:
    def kernel(a: np.ndarray, b: np.ndarray, **attrs: Any) -> np.ndarray:
        try:
            extra = {"fmod": int(attrs["fmod"])} if op == "Mod" else {}
            return elementwise(op, a, b, auto_broadcast=attrs["auto_broadcast"], axis=int(attrs["axis"]), **extra)
        except BaseException as exc:  # an exception here would abort the process: never let one through
            error = exc if isinstance(exc, BroadcastError) else BroadcastError(
                op, str(attrs.get("auto_broadcast", "")), f"kernel failed: {type(exc).__name__}: {exc}",
                mode_attr="auto_broadcast")
            record_error(error)
            logger.error("%s", error)
            return np.zeros((0,), dtype=np.bool_ if op in COMPARISONS or op in LOGICAL else a.dtype)
    kernel.__name__ = f"{op}_kernel"
    return kernel


def failure_shape(error_id: int, b_size: int) -> np.ndarray:
    """A shape no tensor of ``b_size`` elements can take, carrying the error id: [2, id] (or [2, id, 3])."""
    shape = [ERROR_SHAPE_MARK, error_id]
    if b_size == ERROR_SHAPE_MARK * error_id:
        shape.append(3)
    return np.asarray(shape, dtype=np.int64)


def elementwise_check(a_shape: np.ndarray, b_shape: np.ndarray, **attrs: Any) -> np.ndarray:
    """The guarded check: the shape B takes so that numpy broadcasting applies the rule, or a failure shape."""
    op = attrs.get("op", "Add")
    a, b = tuple(int(v) for v in a_shape.tolist()), tuple(int(v) for v in b_shape.tolist())
    try:
        rule = canonical_rule(attrs.get("auto_broadcast", "numpy"), op)
        axis = int(attrs.get("axis", -1))
        out_shape = elementwise_shape(a, b, auto_broadcast=rule, axis=axis, op=op)
        elem = int(attrs.get("elem_type", 0))
        if elem:  # the standard op allocates the output: the memory guard applies before it does
            check_output_size(op, rule, out_shape, helper.tensor_dtype_to_np_dtype(elem), _limit(attrs),
                              mode_attr="auto_broadcast")
        aligned = pdpd_alignment(a, b, axis, op) if rule == "pdpd" else b
        if 0 in aligned and aligned != b and not int(attrs.get("allowzero", 1)):
            raise BroadcastError(op, rule, f"a zero-size B {b} aligned to {aligned} needs Reshape with allowzero "
                                           "(default-domain opset >= 14) in the ORT path", mode_attr="auto_broadcast")
        return np.asarray(aligned, dtype=np.int64)
    except BaseException as exc:  # never let an exception reach the bridge: it would abort the process
        error = exc if isinstance(exc, BroadcastError) else BroadcastError(
            op, str(attrs.get("auto_broadcast", "")), f"shape check failed: {type(exc).__name__}: {exc}",
            mode_attr="auto_broadcast")
        error = error.with_node(attrs.get("node") or None)
        error_id = record_error(error)
        if getattr(guarded_run, "active", False):
            guarded_run.error_id = error_id
        _log(error, attrs)
        return failure_shape(error_id, int(np.prod(b, dtype=object)) if b else 1)


def _declare_elementwise() -> None:
    for op in ARITHMETIC:
        attrs = {"auto_broadcast": _STR, "axis": _INT, **({"fmod": _INT} if op == "Mod" else {})}
        for type_str in elementwise_bridge_types(op):
            dt = _BRIDGE_TYPE[type_str]
            out = PyCustomOpDef.dt_bool if op in COMPARISONS or op in LOGICAL else dt
            opdef = onnx_op(op_type=f"{DOMAIN}::{op}", inputs=[dt, dt], outputs=[out],
                            attrs=dict(attrs))(_elementwise_kernel(op))
            state().our_op_ids.add(opdef._nativedef.obj_id)
    check_attrs = {**_GUARD_ATTRS, "auto_broadcast": _STR, "axis": _INT, "allowzero": _INT, "elem_type": _INT}
    opdef = onnx_op(op_type=f"{GUARDED_DOMAIN}::{ELEMENTWISE_CHECK}", inputs=[_I64, _I64], outputs=[_I64],
                    attrs=check_attrs)(elementwise_check)
    state().our_op_ids.add(opdef._nativedef.obj_id)


def register() -> None:
    """Register every op with onnxruntime-extensions, exactly once per process (reload-safe)."""
    st = state()
    if st.registered:
        return
    ort_marshal.install()
    with st.lock:
        if st.registered:
            return
        for bridge in PUBLIC_OPS:
            _declare(DOMAIN, bridge, guarded=False)
        for bridge in GUARDED_OPS:
            _declare(GUARDED_DOMAIN, bridge, guarded=True)
        _declare_elementwise()
        st.registered = True


def library_path() -> str:
    """The onnxruntime-extensions library that carries our ops, with the ops registered."""
    register()
    return get_library_path()
