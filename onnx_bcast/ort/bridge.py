"""The one place that touches onnxruntime-extensions' private Python-op bridge: declaring ops, a faster output path.

``declare`` registers a Python op and remembers its id (``_nativedef.obj_id``). The stock hook returns every
output through ``ndarray.tolist()``. Its C++ side copies from any contiguous array of the output's element size,
so we hand it contiguous arrays of the declared dtype instead. String
outputs and outputs of other packages' ops whose type is left open keep the stock list path, so their
behaviour is unchanged. ``tests/test_ort_marshal.py`` fails loudly if the private API moves.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from onnx_bcast.model.ort_import import extensions
from onnx_bcast.ort.process_state import state

PyCustomOpDef, onnx_op = extensions().PyCustomOpDef, extensions().onnx_op
ocos = importlib.import_module("onnxruntime_extensions._ocos")


def declare(op_type: str, inputs: list[int], outputs: list[int], attrs: dict[str, int],
            kernel: Callable[[tuple, dict], Any]) -> None:
    """Register ``kernel(inputs, attributes)`` as the Python op ``domain::name``, marked as ours for the array
    output path, where the hook calls it with the bridge's input list and cast attributes as they are."""
    opdef = onnx_op(op_type=op_type, inputs=inputs, outputs=outputs, attrs=dict(attrs))(
        lambda *values, **attributes: kernel(values, attributes))
    state().our_ops[opdef._nativedef.obj_id] = kernel

_NUMPY_OF: dict[int, np.dtype] = {
    PyCustomOpDef.dt_float: np.dtype(np.float32),
    PyCustomOpDef.dt_double: np.dtype(np.float64),
    PyCustomOpDef.dt_float16: np.dtype(np.float16),
    PyCustomOpDef.dt_int8: np.dtype(np.int8),
    PyCustomOpDef.dt_int16: np.dtype(np.int16),
    PyCustomOpDef.dt_int32: np.dtype(np.int32),
    PyCustomOpDef.dt_int64: np.dtype(np.int64),
    PyCustomOpDef.dt_uint8: np.dtype(np.uint8),
    PyCustomOpDef.dt_uint16: np.dtype(np.uint16),
    PyCustomOpDef.dt_uint32: np.dtype(np.uint32),
    PyCustomOpDef.dt_uint64: np.dtype(np.uint64),
    PyCustomOpDef.dt_bool: np.dtype(np.bool_),
    PyCustomOpDef.dt_complex64: np.dtype(np.complex64),
    PyCustomOpDef.dt_complex128: np.dtype(np.complex128),
}


SCRATCH_LIMIT = 256 * 1024 * 1024  # largest output copied through a per-thread reusable buffer
SCRATCH_FROM = 64 * 1024  # below this a fresh small allocation is cheaper than the buffer's bookkeeping
_scratch = threading.local()


def _contiguous(arr: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of a broadcast view, in this thread's reusable buffer when it fits.

    The C++ side copies it into ORT's output before this thread runs any other Python code, so reusing the
    buffer on the next call is safe; it saves the page faults of a fresh allocation per call.
    """
    if arr.flags.c_contiguous or not SCRATCH_FROM <= arr.nbytes <= SCRATCH_LIMIT or arr.dtype.hasobject:
        return np.ascontiguousarray(arr)
    buf = getattr(_scratch, "buf", None)
    if buf is None or buf.nbytes < arr.nbytes:
        buf = np.empty(max(arr.nbytes, 1 << 16), dtype=np.uint8)
        _scratch.buf = buf
    view = buf[: arr.nbytes].view(arr.dtype).reshape(arr.shape)
    np.copyto(view, arr)
    return view


def _marshal(value: Any, declared: int, ours: bool) -> Any:
    """One output as the C++ side copies it: a contiguous array, or a flat list for strings."""
    if ours and type(value) is np.ndarray and value.flags.c_contiguous and value.dtype == _NUMPY_OF.get(declared):
        return value  # already what the C++ side copies from (e.g. a guarded kernel's status)
    arr = np.asarray(value)
    if declared == PyCustomOpDef.dt_string or arr.dtype.kind in "OUS":
        return arr.reshape(-1).tolist()
    dtype = _NUMPY_OF.get(declared)
    if dtype is not None:
        if ours and arr.dtype == dtype:  # through this thread's reusable buffer: no fresh pages per call
            return _contiguous(arr)
        return np.ascontiguousarray(arr, dtype=dtype)
    if ours:  # type left open: our kernels return exactly the type ORT inferred
        return _contiguous(arr)
    return arr.reshape(-1).tolist()


_ATTR_CACHE_LIMIT = 4096


class NodeAttributes(dict):
    """One node's cast attributes, shared by every call of the node, with ``memo``: what a kernel keeps per input
    signature of this node (a fresh, empty one whenever the attribute cache is renewed)."""

    __slots__ = ("memo",)

    def __init__(self, attributes: dict) -> None:
        super().__init__(attributes)
        self.memo: dict = {}


_cast_cache: dict[tuple, NodeAttributes] = {}


def _attributes(opdef: Any, op_id: int, attributes: dict) -> NodeAttributes:
    """``opdef.cast_attributes`` memoised: a node's attribute strings are the same on every call."""
    key = (op_id, tuple(attributes.values()))  # the bridge fills it from a std::map: one op, the same keys in order
    cast = _cast_cache.get(key)
    if cast is None:
        cast = NodeAttributes(opdef.cast_attributes(attributes))
        if len(_cast_cache) >= _ATTR_CACHE_LIMIT:
            _cast_cache.clear()
        _cast_cache[key] = cast
    return cast  # shared by every call of the node: neither the bridge nor our kernels mutate its items


_op_cache: dict[int, tuple[Any, list[int], Callable[[Any, dict], Any] | None, list[np.dtype | None]]] = {}


def _op(op_id: int) -> tuple[Any, list[int], Callable[[Any, dict], Any] | None, list[np.dtype | None]]:
    """(opdef, declared output types, our kernel or None for another package's op, the declared outputs' numpy
    dtypes), looked up once per op."""
    entry = _op_cache.get(op_id)
    if entry is None:
        opdef = ocos.Opdef._odlist[op_id]
        declared = list(opdef._nativedef.output_types)
        entry = (opdef, declared, state().our_ops.get(op_id), [_NUMPY_OF.get(kind) for kind in declared])
        _op_cache[op_id] = entry
    return entry


def _invoke(op_id: int, feed: list, attributes: dict) -> tuple:
    """Replacement for ``_ocos._on_pyop_invocation`` with the same contract for every Python op."""
    opdef, declared, kernel, dtypes = _op_cache.get(op_id) or _op(op_id)
    cast = _attributes(opdef, op_id, attributes)
    if kernel is None:
        result = opdef.body(*feed, **cast)
        outputs = result if isinstance(result, tuple) else (result,)
        return _reply(op_id, outputs, declared, False)
    result = kernel(feed, cast)  # ours: no argument unpacking per call
    outputs = result if type(result) is tuple else (result,)
    if len(outputs) != len(dtypes):
        return _reply(op_id, outputs, declared, True)
    reply: list[Any] = [op_id]
    for i, value in enumerate(outputs):
        if type(value) is np.ndarray and value.dtype == dtypes[i]:
            # contiguous: extensions before 0.15 copy the array's buffer as it is, whatever its strides
            reply += (value.shape, value if value.flags.c_contiguous else _contiguous(value))
        else:
            reply += (np.shape(value), _marshal(value, declared[i], True))
    return tuple(reply)


def _reply(op_id: int, outputs: tuple, declared: list[int], ours: bool) -> tuple:
    """The hook's answer: the op id, then each output's shape and data as the C++ side copies it."""
    reply: list[Any] = [op_id]
    for i, value in enumerate(outputs):
        kind = declared[i] if i < len(declared) else PyCustomOpDef.undefined
        reply.append(value.shape if isinstance(value, np.ndarray) else tuple(np.shape(value)))
        reply.append(_marshal(value, kind, ours))
    return tuple(reply)


def install() -> None:
    """Route every Python op of this process through the array path (once per process)."""
    st = state()
    with st.lock:
        if st.hook_installed:
            return
        PyCustomOpDef.install_hooker(_invoke)
        st.hook_installed = True
