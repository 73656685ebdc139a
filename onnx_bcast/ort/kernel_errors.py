"""Kernel errors of the ONNX Runtime form: recorded for the caller (by id), logged unless it raises them, and the
failure shape that carries the id to a ``Reshape`` that then fails the run."""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np

from onnx_bcast.errors import BroadcastError
from onnx_bcast.ort.process_state import record_error

ERROR_SHAPE_MARK = 2  # the guarded status on failure is [ERROR_SHAPE_MARK, error_id]
logger = logging.getLogger("onnx_bcast.ort")
guarded_run = threading.local()  # set by InferenceSession.run: errors are raised, not only logged


def output_limit(attrs: dict[str, Any]) -> int | None:
    """The session's output limit from a guarded node (-1 or absent: the environment's or the default)."""
    value = int(attrs.get("max_output_bytes", -1))
    return None if value < 0 else value


def _log(error: BaseException, attrs: dict[str, Any]) -> None:
    """A kernel error is logged unless the caller raises it (``InferenceSession``: ``quiet`` on the node).

    The node attribute, not a thread-local, decides: under ORT's parallel execution mode kernels run on ORT's
    pool threads, not on the thread that called ``run``.
    """
    if int(attrs.get("quiet", 0)) or getattr(guarded_run, "active", False):
        logger.debug("%s", error)
    else:
        logger.error("%s", error)


def record(spec_name: str, mode: str, attrs: dict[str, Any], exc: BaseException, mode_attr: str = "mode") -> int:
    """Keep a kernel's error (a BroadcastError naming the node) for the caller; returns its id."""
    if isinstance(exc, BroadcastError):
        error = exc.with_node(attrs.get("node") or exc.node)
    else:
        error = BroadcastError(attrs.get("op", spec_name), mode, f"kernel failed: {type(exc).__name__}: {exc}",
                               attrs.get("node") or None, mode_attr=mode_attr)
        error.__cause__ = exc
    error_id = record_error(error)
    if getattr(guarded_run, "active", False):
        guarded_run.error_id = error_id  # the fallback when another node fails the run first
    _log(error, attrs)
    return error_id


def failure_shape(error_id: int, b_size: int) -> np.ndarray:
    """A shape no tensor of ``b_size`` elements can take, carrying the error id: [2, id] (or [2, id, 3])."""
    shape = [ERROR_SHAPE_MARK, error_id]
    if b_size == ERROR_SHAPE_MARK * error_id:
        shape.append(3)
    return np.asarray(shape, dtype=np.int64)
