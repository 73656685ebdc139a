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
from onnxruntime_extensions import PyCustomOpDef, get_library_path, onnx_op

from onnx_bcast import ort_marshal
from onnx_bcast.errors import BroadcastError
from onnx_bcast.ops.broadcast import broadcast, canonical_mode
from onnx_bcast.ops.broadcast_v0 import LIKE_V0, V0, broadcast_v0, like_axes
from onnx_bcast.process_state import record_error, state

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


def _run_broadcast(op: str) -> Callable[..., np.ndarray]:
    def run(data: np.ndarray, target: np.ndarray, axes: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
        return broadcast(data, target, axes, mode=attrs["mode"], axis=attrs["axis"], op=attrs.get("op", op))
    return run


def _run_v0(data: np.ndarray, shape: np.ndarray, axes: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    return broadcast_v0(data, shape, axes)


def _run_like_v0(data: np.ndarray, like_shape: np.ndarray, axes: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    like = tuple(int(v) for v in like_shape.tolist())
    return broadcast_v0(data, like, like_axes(data.shape, like, axes), LIKE_V0)


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
_GUARD_ATTRS = {"op": _STR, "node": _STR}
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


def _make_kernel(bridge: BridgeOp, guarded: bool) -> Callable[..., Any]:
    def kernel(data: np.ndarray, second: np.ndarray, third: np.ndarray, **attrs: Any) -> Any:
        try:
            out = bridge.run(data, second, third, attrs)
        except BaseException as exc:  # an exception here would abort the process: never let one through
            error = _failure(bridge, attrs, exc)
            error_id = record_error(error)
            if getattr(guarded_run, "active", False):
                guarded_run.error_id = error_id  # the fallback when another node fails the run first
                logger.debug("%s", error)
            else:
                logger.error("%s", error)
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
        st.registered = True


def library_path() -> str:
    """The onnxruntime-extensions library that carries our ops, with the ops registered."""
    register()
    return get_library_path()
