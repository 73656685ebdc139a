"""Models whose tensors live in external data files: where the files are, safely, without reading the weights."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import onnx
from onnx import ModelProto, TensorProto
from onnx.external_data_helper import ExternalDataInfo, uses_external_data

from onnx_bcast.model.data_files import UnsafeLocation, absolute_folder, checked_file, copy_file
from onnx_bcast.model.ort_import import onnxruntime
from onnx_bcast.model.tensor_walk import all_tensors, external_tensors, location_of

if TYPE_CHECKING:
    import onnxruntime as ort

logger = logging.getLogger("onnx_bcast.model.external_data")

#: the metadata entry that says which folder a model's external data locations are relative to (set when a model is
#: loaded from a path; ``save_model`` and sessions read it; never written to a file by ``save_model``)
FOLDER_KEY = "onnx_bcast.external_data_folder"
#: an int32/int64 tensor of rank 0 or 1 and at most this many bytes is read from its file when the model is loaded:
#: shape-like inputs (targets, axes) are what the rules and shape inference read the values of
SMALL_CONSTANT_BYTES = 4096
_INTS = (TensorProto.INT64, TensorProto.INT32)
ORT_FOLDER_CONFIG = "session.model_external_initializers_file_folder_path"
Session = TypeVar("Session")


def check_locations(model: ModelProto, folder: Path, where: str, tensors: list[TensorProto] | None = None
                    ) -> list[str]:
    """The distinct locations the model's tensors (``tensors``: its external ones, where already listed) refer
    to, each checked to stay inside ``folder``."""
    if tensors is None:
        tensors = external_tensors(model)
    locations = sorted({location_of(tensor) for tensor in tensors})
    for location in locations:
        checked_file(folder, location, where)
    return locations


def read_small_constants(model: ModelProto, folder: Path, tensors: list[TensorProto] | None = None) -> int:
    """The values of the small integer tensors (shape-like inputs) read from their files into the model, so that
    shape inference and the rules see them; every other tensor stays a reference (``tensors``: the model's external
    ones, where already listed). Returns how many were read."""
    count = 0
    for tensor in external_tensors(model) if tensors is None else tensors:
        if tensor.data_type not in _INTS or len(tensor.dims) > 1:
            continue
        info = ExternalDataInfo(tensor)
        size = info.length or (8 if tensor.data_type == TensorProto.INT64 else 4) * math.prod(tensor.dims)
        if size > SMALL_CONSTANT_BYTES:
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
    """Record (None: forget) the folder that the model's external data locations are relative to (as an
    ``absolute_folder``)."""
    props = model.metadata_props
    kept = [entry for entry in props if entry.key != FOLDER_KEY]
    if len(kept) != len(props):
        del props[:]
        props.extend(kept)
    if folder is not None:
        props.add(key=FOLDER_KEY, value=str(absolute_folder(Path(folder))))


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


@cache
def ort_reads_folder_option() -> bool:
    """Whether the installed ONNX Runtime honours ``ORT_FOLDER_CONFIG`` (1.20 ignores it and looks in the working
    folder): probed once, on a one-value model whose data file is in a temporary folder."""
    ort = onnxruntime()
    with tempfile.TemporaryDirectory(prefix="onnx_bcast_probe_") as folder:
        name = f"{Path(folder).name}.bin"  # a name no working folder holds
        Path(folder, name).write_bytes(b"\x00\x00\x80\x3f")  # float32 1.0
        weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1], data_location=TensorProto.EXTERNAL)
        weight.external_data.add(key="location", value=name)
        graph = onnx.helper.make_graph([onnx.helper.make_node("Identity", ["w"], ["y"])], "probe", [],
                                       [onnx.helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], [weight])
        probe = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)], ir_version=8)
        options = ort.SessionOptions()
        options.log_severity_level = 4
        options.add_session_config_entry(ORT_FOLDER_CONFIG, folder)
        try:
            ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
        except Exception as err:  # noqa: BLE001 - ORT's pybind exception types are not importable by name
            logger.info("ONNX Runtime %s ignores %s (%s): sessions of models with external data are made from a "
                        "temporary graph file beside the data", ort.__version__, ORT_FOLDER_CONFIG, err)
            return False
    return True


def ort_session(create: Callable[[str | bytes, ort.SessionOptions], Session], model: ModelProto,
                options: ort.SessionOptions) -> Session:
    """``create(source, options)``: an ONNX Runtime session of ``model`` that reads (memory-maps) the external data
    itself, so the weights never pass through Python. ``source`` is the model's bytes with ``options`` naming the
    data's folder; where ONNX Runtime ignores that option, a hidden graph file in the data's folder
    (``graph_file``), removed once the session is made (ORT has mapped the data by then)."""
    if folder_of(model) is None or not has_external_data(model) or ort_reads_folder_option():
        return create(session_bytes(model), ort_options(model, options))
    with graph_file(model) as path:
        return create(str(path), options)


def session_bytes(model: ModelProto) -> bytes:
    """The bytes ONNX Runtime is given: the model without the folder entry (it is for onnx-bcast only)."""
    if folder_of(model) is None:
        return model.SerializeToString()
    copy = ModelProto()
    copy.CopyFrom(model)  # the graph only: the weights are references
    set_folder(copy, None)
    return copy.SerializeToString()


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


@contextlib.contextmanager
def graph_file(model: ModelProto) -> Iterator[Path]:
    """A temporary model file of ``model``'s graph where its external data is found: for a runtime that reads
    external data only beside a model file, and refuses links out of its folder (OpenVINO). The file is made in the
    data's folder, hidden and removed afterwards; where that folder is read-only, in a temporary folder with copies
    of the data files (``copy_file``: reflinks or data regions where the file system allows)."""
    folder = folder_of(model) or Path.cwd()
    data = session_bytes(model)
    try:
        handle, name = tempfile.mkstemp(prefix=".onnx_bcast_graph_", suffix=".onnx", dir=folder)
    except OSError:
        handle = -1
    if handle >= 0:
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            yield Path(name)
        finally:
            os.unlink(name)
        return
    with tempfile.TemporaryDirectory(prefix="onnx_bcast_graph_") as temporary:
        path = Path(temporary) / "model.onnx"
        path.write_bytes(data)
        for location in sorted({location_of(tensor) for tensor in external_tensors(model)}):
            copy = checked_file(Path(temporary), location, str(path))
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy_file(checked_file(folder, location, str(folder)), copy)
        yield path
