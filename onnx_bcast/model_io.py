"""Writing models safely: to a temporary file beside the target, then renamed; external data when large."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import onnx
from onnx.external_data_helper import uses_external_data

from onnx_bcast.model_walk import all_node_lists

PROTOBUF_LIMIT = 2 * 1024**3 - 1


class UnsafeModel(ValueError):
    """A model file that asks for something we refuse to do (e.g. read data outside its folder)."""


def external_locations(model: onnx.ModelProto) -> list[str]:
    """The external-data file names a model's tensors refer to."""
    locations = []
    for tensor in _all_tensors(model):
        if uses_external_data(tensor):
            info = {entry.key: entry.value for entry in tensor.external_data}
            locations.append(info.get("location", ""))
    return locations


def _all_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    tensors = []
    for container, _ in all_node_lists(model):
        tensors.extend(getattr(container, "initializer", []))
        for node in container.node:
            for attr in node.attribute:
                if attr.HasField("t"):
                    tensors.append(attr.t)
                tensors.extend(attr.tensors)
    return tensors


def load_model_file(path: Path) -> tuple[onnx.ModelProto, bool]:
    """Load a model; external data is read only from files inside the model's folder.

    Returns the model (external data loaded) and whether it had external data.
    """
    path = Path(path)
    model = onnx.load(str(path), load_external_data=False)
    folder = path.resolve().parent
    locations = external_locations(model)
    for location in locations:
        target = (folder / location).resolve()
        if Path(location).is_absolute() or folder not in target.parents:
            raise UnsafeModel(f"{path}: external data location {location!r} points outside the model's folder")
    if locations:
        onnx.load_external_data_for_model(model, str(folder))
    return model, bool(locations)


def save_atomically(model: onnx.ModelProto, path: Path, external: bool = False) -> None:
    """Write ``model`` to ``path`` so that a crash never leaves a half-written file there.

    Large tensors go to ``<name>.data`` next to the output when ``external`` (the input had external data) or
    when the model is over protobuf's 2 GiB limit.
    """
    path = Path(path)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    data_name = f"{path.name}.data"
    try:
        if external or model.ByteSize() > PROTOBUF_LIMIT:
            onnx.save_model(model, tmp, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=data_name, size_threshold=1024)
            # onnx wrote the data beside tmp under its final name; only the model file is renamed
        else:
            onnx.save_model(model, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
