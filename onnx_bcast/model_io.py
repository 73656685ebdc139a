"""Writing models safely: to a temporary file beside the target, then renamed; external data when large."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import onnx

PROTOBUF_LIMIT = 2 * 1024**3 - 1


def save_atomically(model: onnx.ModelProto, path: Path) -> None:
    """Write ``model`` to ``path`` so that a crash never leaves a half-written file there.

    Models over protobuf's 2 GiB limit keep their tensors in ``<name>.data`` next to the output.
    """
    path = Path(path)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    data_name = f"{path.name}.data"
    try:
        if model.ByteSize() > PROTOBUF_LIMIT:
            onnx.save_model(model, tmp, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=data_name, size_threshold=1024)
        else:
            onnx.save_model(model, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
