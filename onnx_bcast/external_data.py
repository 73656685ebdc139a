"""Models whose tensors live in external data files: where the files are, safely, without reading the weights."""

from __future__ import annotations

import errno
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import onnx
from onnx import ModelProto, TensorProto
from onnx.external_data_helper import ExternalDataInfo, uses_external_data

from onnx_bcast.model_walk import all_node_lists

if TYPE_CHECKING:
    import onnxruntime as ort

logger = logging.getLogger("onnx_bcast.external_data")

#: the metadata entry that says which folder a model's external data locations are relative to (set when a model is
#: loaded from a path; ``save_model`` and sessions read it; never written to a file by ``save_model``)
FOLDER_KEY = "onnx_bcast.external_data_folder"
#: an int32/int64 tensor of rank 0 or 1 and at most this many bytes is read from its file when the model is loaded:
#: shape-like inputs (targets, axes) are what the rules and shape inference read the values of
SMALL_CONSTANT_BYTES = 4096
_INTS = (TensorProto.INT64, TensorProto.INT32)
ORT_FOLDER_CONFIG = "session.model_external_initializers_file_folder_path"


class UnsafeLocation(ValueError):
    """An external data location that points outside the model's folder (absolute, or with '..')."""


def all_tensors(model: ModelProto) -> Iterator[TensorProto]:
    """Every tensor the model holds: initializers (sparse ones' values and indices) and attribute tensors, in
    every graph and function."""
    for container, _ in all_node_lists(model):
        yield from getattr(container, "initializer", [])
        for sparse in getattr(container, "sparse_initializer", []):
            yield sparse.values
            yield sparse.indices
        for node in container.node:
            for attr in node.attribute:
                if attr.HasField("t"):
                    yield attr.t
                yield from attr.tensors


def external_tensors(model: ModelProto) -> list[TensorProto]:
    """The tensors whose data is in external files."""
    return [tensor for tensor in all_tensors(model) if uses_external_data(tensor)]


def location_of(tensor: TensorProto) -> str:
    """The file name an external tensor refers to (relative to its model's folder)."""
    return next((entry.value for entry in tensor.external_data if entry.key == "location"), "")


def checked_file(folder: Path, location: str, where: str) -> Path:
    """``folder / location``, refused (``UnsafeLocation`` naming ``where``) unless it stays inside ``folder``."""
    folder = folder.resolve()
    target = (folder / location).resolve()
    if not location or Path(location).is_absolute() or folder not in target.parents:
        raise UnsafeLocation(f"{where}: external data location {location!r} points outside the model's folder")
    return target


def check_locations(model: ModelProto, folder: Path, where: str) -> list[str]:
    """The distinct locations the model's tensors refer to, each checked to stay inside ``folder``."""
    locations = sorted({location_of(tensor) for tensor in external_tensors(model)})
    for location in locations:
        checked_file(folder, location, where)
    return locations


def read_small_constants(model: ModelProto, folder: Path) -> int:
    """The values of the small integer tensors (shape-like inputs) read from their files into the model, so that
    shape inference and the rules see them; every other tensor stays a reference. Returns how many were read."""
    count = 0
    for tensor in external_tensors(model):
        if tensor.data_type not in _INTS or len(tensor.dims) > 1:
            continue
        info = ExternalDataInfo(tensor)
        size = info.length if info.length else None
        if size is None or size > SMALL_CONSTANT_BYTES:
            continue
        with open(checked_file(folder, info.location, str(folder)), "rb") as file:
            file.seek(info.offset or 0)
            data = file.read(size)
        if len(data) != size:
            raise UnsafeLocation(f"{folder / info.location}: holds {len(data)} bytes at offset {info.offset or 0} "
                                 f"for tensor {tensor.name!r}, which says it has {size}")
        tensor.raw_data = data
        del tensor.external_data[:]
        tensor.data_location = TensorProto.DEFAULT
        count += 1
    return count


def set_folder(model: ModelProto, folder: Path | None) -> None:
    """Record (None: forget) the folder that the model's external data locations are relative to."""
    entries = [entry for entry in model.metadata_props if entry.key != FOLDER_KEY]
    if folder is not None:
        entries.append(onnx.StringStringEntryProto(key=FOLDER_KEY, value=str(Path(folder).resolve())))
    del model.metadata_props[:]
    model.metadata_props.extend(entries)


def folder_of(model: ModelProto) -> Path | None:
    """The folder recorded by ``set_folder`` (a model loaded from a path by onnx-bcast), or None."""
    value = next((entry.value for entry in model.metadata_props if entry.key == FOLDER_KEY), None)
    return Path(value) if value else None


def has_external_data(model: ModelProto) -> bool:
    """Whether any tensor of the model refers to an external file."""
    return any(uses_external_data(tensor) for tensor in all_tensors(model))


def ort_options(model: ModelProto, options: ort.SessionOptions) -> ort.SessionOptions:
    """``options`` set so that ONNX Runtime, given ``model``'s bytes, reads (memory-maps) its external data from
    the folder it was loaded from: the weights never pass through Python."""
    folder = folder_of(model)
    if folder is not None and has_external_data(model):
        options.add_session_config_entry(ORT_FOLDER_CONFIG, str(folder))
    return options


def session_bytes(model: ModelProto) -> bytes:
    """The bytes ONNX Runtime is given: the model without the folder entry (it is for onnx-bcast only)."""
    if folder_of(model) is None:
        return model.SerializeToString()
    copy = ModelProto()
    copy.CopyFrom(model)  # the graph only: the weights are references
    set_folder(copy, None)
    return copy.SerializeToString()


def place(locations: list[str], source: Path, target: Path, staging: Path) -> list[tuple[Path, Path]]:
    """The data files ``locations`` (in ``source``) made available in folder ``target``: nothing to do where the
    folders are the same; else a hard link (same file system), else a copy, made in ``staging`` (a folder beside
    ``target``). Returns the (staged, final) pairs to move into place. A different file of the same name already
    in ``target`` is an error: it is not overwritten."""
    moves = []
    source, target = source.resolve(), target.resolve()
    for location in locations:
        original = checked_file(source, location, str(source))
        final = checked_file(target, location, str(target))
        if final.exists() and os.path.samefile(final, original):
            continue  # the same folder, or linked before: the output refers to the file itself
        if final.exists():
            raise FileExistsError(errno.EEXIST, f"{final} exists and is not the input's data file {original}; "
                                                "write the model to another folder", str(final))
        staged = staging / location
        staged.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(original, staged)
            logger.info("hard-linked %s to %s", original, final)
        except OSError:  # another file system, or links refused: a copy, read in chunks
            shutil.copyfile(original, staged)
            logger.info("copied %s to %s", original, final)
        moves.append((staged, final))
    return moves


def with_data(model: ModelProto) -> ModelProto:
    """``model`` itself if no tensor refers to external data, else a copy with the data read into it (for a
    runtime that cannot read the files itself, such as ``onnx.reference``)."""
    folder = folder_of(model)
    if folder is None or not has_external_data(model):
        return model
    copy = ModelProto()
    copy.CopyFrom(model)
    set_folder(copy, None)
    onnx.load_external_data_for_model(copy, str(folder))
    return copy
