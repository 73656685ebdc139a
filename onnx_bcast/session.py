"""ONNX Runtime sessions for models that use onnx_bcast ops."""

from __future__ import annotations

import os
import re
from typing import Any

import onnxruntime as ort
from onnx import ModelProto

from onnx_bcast import ort_ops, schemas
from onnx_bcast.model_io import load_model
from onnx_bcast.prepare import prepare
from onnx_bcast.process_state import take_error

# the guard's or the elementwise check's failure shape: [2, error id] or [2, error id, 3]
_FAILURE = re.compile(r"requested shape:\{" + str(ort_ops.ERROR_SHAPE_MARK) + r",(\d+)(?:,\d+)?\}")


def session_options(options: ort.SessionOptions | None = None) -> ort.SessionOptions:
    """Session options with onnxruntime-extensions and our ops registered (a new object when None)."""
    options = options if options is not None else ort.SessionOptions()
    options.register_custom_ops_library(ort_ops.library_path())
    return options


class InferenceSession(ort.InferenceSession):
    """An ``onnxruntime.InferenceSession`` for models with onnx_bcast ops; bad runtime input raises
    ``BroadcastError`` from ``run`` and leaves the session usable."""

    def __init__(self, model: str | os.PathLike | bytes | ModelProto, sess_options: ort.SessionOptions | None = None,
                 providers: list[Any] | None = None, *, max_output_bytes: int | None = None, **kwargs: Any) -> None:
        """``max_output_bytes`` limits every broadcast output of this session (default: the environment's
        ``ONNX_BCAST_MAX_OUTPUT_BYTES``, else half of the machine's memory)."""
        schemas.register()
        self.prepared_model = prepare(load_model(model), quiet=True, max_output_bytes=max_output_bytes)
        options = sess_options
        if options is None:
            options = ort.SessionOptions()
            options.log_severity_level = 4  # a failed run is raised as a Python error, not also logged by ORT
        super().__init__(self.prepared_model.SerializeToString(), sess_options=session_options(options),
                         providers=providers or ["CPUExecutionProvider"], **kwargs)

    def run(self, output_names: list[str] | None, input_feed: dict[str, Any], run_options: Any = None) -> list[Any]:
        """Like ``onnxruntime.InferenceSession.run``; an invalid broadcast raises ``BroadcastError``."""
        ort_ops.guarded_run.active = True
        ort_ops.guarded_run.error_id = None
        try:
            return super().run(output_names, input_feed, run_options)
        except Exception as exc:
            recorded = _recorded_error(exc, ort_ops.guarded_run.error_id)
            if recorded is None:
                raise
            raise recorded from None
        finally:
            ort_ops.guarded_run.active = False
            ort_ops.guarded_run.error_id = None


def _recorded_error(exc: BaseException, this_thread_error: int | None) -> BaseException | None:
    """The kernel error behind a failed run: named in the guard's message, else recorded on this thread."""
    match = _FAILURE.search(str(exc))
    if match:
        return take_error(int(match.group(1)))
    return take_error(this_thread_error) if this_thread_error is not None else None
