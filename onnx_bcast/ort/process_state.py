"""Process-wide state that must survive ``importlib.reload`` of any onnx-bcast module.

ONNX Runtime keeps the Python ops it was given for the life of the process; registering them twice breaks
later sessions. So the registration flag, the ids of our ops and the errors our kernels record live here,
in one object stored in ``sys.modules`` under a fixed key, found again by every reloaded module.
"""

from __future__ import annotations

import itertools
import sys
import threading
import types
from collections import OrderedDict

_KEY = "onnx_bcast._process_state_singleton"
_MAX_ERRORS = 4096


def _create() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        lock=threading.Lock(),
        registered=False,
        hook_installed=False,
        our_ops={},  # bridge op id -> our kernel taking (inputs, attributes) as they come
        errors=OrderedDict(),
        error_ids=itertools.count(1),
    )


def state() -> types.SimpleNamespace:
    """The one state object of this process."""
    holder = sys.modules.get(_KEY)
    if holder is None:
        holder = types.ModuleType(_KEY)
        holder.state = _create()
        holder = sys.modules.setdefault(_KEY, holder)
    return holder.state


def record_error(error: BaseException) -> int:
    """Keep an error raised inside an ORT kernel; returns its id (>= 1). Old errors are dropped."""
    st = state()
    with st.lock:
        error_id = next(st.error_ids)
        st.errors[error_id] = error
        while len(st.errors) > _MAX_ERRORS:
            st.errors.popitem(last=False)
    return error_id


def take_error(error_id: int) -> BaseException | None:
    """The error recorded under ``error_id``, removed from the store."""
    st = state()
    with st.lock:
        return st.errors.pop(error_id, None)
