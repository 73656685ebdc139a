"""Reading and writing model files safely: size and location checks on load, atomic writes on save."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import onnx
from onnx.external_data_helper import convert_model_to_external_data, uses_external_data

from onnx_bcast.model_walk import all_node_lists

logger = logging.getLogger("onnx_bcast.model_io")
PROTOBUF_LIMIT = 2 * 1024**3 - 1


class UnsafeModel(ValueError):
    """A path we refuse to read as a model: a folder, a file that is not an ONNX model, or a model that asks for
    something we refuse to do (e.g. read data outside its folder). The message starts with the path."""


class ModelTooLarge(ValueError):
    """A model that protobuf cannot hold in one message (2 GiB), even with its tensors as external data."""


def _check_file_size(path: Path) -> None:
    size = _stat_model_file(path).st_size
    if size > PROTOBUF_LIMIT:
        raise ModelTooLarge(f"{path}: the file is {size} bytes, over protobuf's limit of {PROTOBUF_LIMIT} bytes for "
                            "one model; store its tensors as external data")


def _stat_model_file(path: Path) -> os.stat_result:
    """The file's status; a missing path is a FileNotFoundError and a folder an UnsafeModel, both naming it."""
    try:
        status = path.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except OSError as err:
        raise UnsafeModel(f"{path}: cannot read it ({err.strerror or err})") from None
    if path.is_dir():
        raise UnsafeModel(f"{path}: is a directory, not an ONNX model file")
    return status


def _parse(path: Path) -> onnx.ModelProto:
    """``onnx.load`` without external data; protobuf's and the OS's errors as one message naming the path."""
    try:
        return onnx.load(str(path), load_external_data=False)
    except OSError as err:
        raise UnsafeModel(f"{path}: cannot read it ({err.strerror or err})") from None
    except Exception as err:  # protobuf's DecodeError and the like
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UnsafeModel(f"{path}: not an ONNX model (protobuf cannot parse it: {detail}; truncated or not an "
                          ".onnx file?)") from None


def _check_is_model(model: onnx.ModelProto, path: Path) -> None:
    """Protobuf parses many truncated or foreign files without complaint; a model has an IR version and a graph."""
    if model.ir_version <= 0 or not model.HasField("graph") or not model.opset_import:
        missing = "IR version" if model.ir_version <= 0 else "graph" if not model.HasField("graph") else \
            "opset import"
        raise UnsafeModel(f"{path}: not an ONNX model (no {missing}; truncated or not an .onnx file?)")


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


def load_model(model: str | os.PathLike | bytes | onnx.ModelProto) -> onnx.ModelProto:
    """A ModelProto from a path, serialized bytes or a ModelProto (returned as it is).

    A file is checked as ``onnx-bcast`` checks it: under protobuf's 2 GiB limit, parsed to a model with a graph,
    external data read only from inside its folder. A missing file is a ``FileNotFoundError``, a folder or a file
    that is not a model an ``UnsafeModel`` (a ``ValueError``), each naming the path; any other argument is a
    ``TypeError``.
    """
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(f"expected an onnx.ModelProto, a path or serialized bytes, got {type(model).__name__}")
    return load_model_file(Path(os.fspath(model)))[0]


def load_model_file(path: Path) -> tuple[onnx.ModelProto, bool]:
    """Load a model; external data is read only from files inside the model's folder.

    Returns the model (external data loaded) and whether it had external data.
    """
    path = Path(path)
    _check_file_size(path)
    model = _parse(path)
    _check_is_model(model, path)
    folder = path.resolve().parent
    locations = external_locations(model)
    for location in locations:
        target = (folder / location).resolve()
        if Path(location).is_absolute() or folder not in target.parents:
            raise UnsafeModel(f"{path}: external data location {location!r} points outside the model's folder")
    if locations:
        onnx.load_external_data_for_model(model, str(folder))
    logger.info("read %s: IR version %d, %d nodes in the main graph%s", path, model.ir_version,
                len(model.graph.node), ", external data" if locations else "")
    return model, bool(locations)


def _size_without_external_data(model: onnx.ModelProto) -> int:
    """The serialized size once the tensors marked external have their bytes moved out (raw_data is kept until then)."""
    moved = sum(len(t.raw_data) for t in _all_tensors(model) if uses_external_data(t))
    return model.ByteSize() - moved


def save_atomically(model: onnx.ModelProto, path: Path, external: bool = False) -> None:
    """Write ``model`` to ``path`` so that a failure or a crash never leaves a file there (or a half-written one).

    Large tensors go to ``<name>.data`` next to the output when ``external`` (the input had external data) or
    when the model is over protobuf's 2 GiB limit; then ``model``'s tensors are turned into external references
    in place. Everything is written into a temporary folder beside ``path`` and renamed into place at the end.
    An OS error (a read-only folder, ``path`` a folder, a full disk) is an ``OSError`` naming ``path``, never
    the temporary files.
    """
    path = Path(path)
    try:
        _save_atomically(model, path, external)
    except OSError as err:
        reason = "it is a directory" if path.is_dir() else (err.strerror or type(err).__name__).lower()
        raise OSError(f"{path}: cannot write the model ({reason}); nothing written") from err
    logger.info("wrote %s", path)


def _save_atomically(model: onnx.ModelProto, path: Path, external: bool) -> None:
    data_name = f"{path.name}.data"
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        tmp = staging / path.name
        if external or model.ByteSize() > PROTOBUF_LIMIT:
            convert_model_to_external_data(model, all_tensors_to_one_file=True, location=data_name,
                                           size_threshold=1024)
            skeleton = _size_without_external_data(model)
            if skeleton > PROTOBUF_LIMIT:
                raise ModelTooLarge(f"{path}: the model is {skeleton} bytes without its large tensors, over "
                                    f"protobuf's limit of {PROTOBUF_LIMIT} bytes; nothing written")
            onnx.save_model(model, str(tmp), save_as_external_data=True, all_tensors_to_one_file=True,
                            location=data_name, size_threshold=1024)
        else:
            onnx.save_model(model, str(tmp))
        if (staging / data_name).exists():
            os.replace(staging / data_name, path.parent / data_name)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
