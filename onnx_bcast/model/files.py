"""Reading and writing model files safely: size and location checks on load, atomic writes on save."""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

import onnx
from onnx.external_data_helper import (
    convert_model_to_external_data,
    uses_external_data,
    write_external_data_tensors,
)

from onnx_bcast.model import data_files, external_data

logger = logging.getLogger("onnx_bcast.model.files")
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
    if stat.S_ISDIR(status.st_mode):
        raise UnsafeModel(f"{path}: is a directory, not an ONNX model file")
    return status


def _parse(path: Path) -> onnx.ModelProto:
    """``onnx.load`` without external data; protobuf's and the OS's errors as one message naming the path."""
    try:
        return onnx.load(str(path), load_external_data=False)
    except OSError as err:
        raise UnsafeModel(f"{path}: cannot read it ({err.strerror or err})") from None
    except Exception as err:  # protobuf's DecodeError and the like
        raise _unparsable(str(path), err) from None


def _unparsable(where: str, err: Exception) -> UnsafeModel:
    detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return UnsafeModel(f"{where}: not an ONNX model (protobuf cannot parse it: {detail}; truncated or not an "
                       ".onnx file?)")


def _parse_bytes(data: bytes) -> onnx.ModelProto:
    """Serialized bytes as a model, checked as a file is (``UnsafeModel`` where they are not one)."""
    where = f"the given bytes ({len(data)} bytes)"
    try:
        model = onnx.load_from_string(data)
    except Exception as err:  # protobuf's DecodeError and the like
        raise _unparsable(where, err) from None
    _check_is_model(model, where)
    return model


def _check_is_model(model: onnx.ModelProto, path: Path | str) -> None:
    """Protobuf parses many truncated or foreign files without complaint; a model has an IR version and a graph."""
    if model.ir_version <= 0 or not model.HasField("graph") or not model.opset_import:
        missing = "IR version" if model.ir_version <= 0 else "graph" if not model.HasField("graph") else \
            "opset import"
        raise UnsafeModel(f"{path}: not an ONNX model (no {missing}; truncated or not an .onnx file?)")


def load_model(model: str | os.PathLike | bytes | onnx.ModelProto) -> onnx.ModelProto:
    """A ModelProto from a path, serialized bytes or a ModelProto (returned as it is).

    A file is checked as ``onnx-bcast`` checks it: under protobuf's 2 GiB limit, parsed to a model with a graph,
    external data read only from inside its folder. A missing file is a ``FileNotFoundError``, a folder or a file
    that is not a model an ``UnsafeModel`` (a ``ValueError``), each naming the path; bytes that are not a model are
    an ``UnsafeModel`` too; any other argument is a ``TypeError``.
    """
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        return _parse_bytes(bytes(model))
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(f"expected an onnx.ModelProto, a path or serialized bytes, got {type(model).__name__}")
    return load_model_file(Path(os.fspath(model)))[0]


def load_model_file(path: Path) -> tuple[onnx.ModelProto, list[Path]]:
    """Load a model's graph; its external data stays in its files, which must be inside the model's folder.

    Only the small integer tensors (shape-like inputs) are read from them (``external_data.read_small_constants``);
    the others stay references, and the model records its folder (``external_data.FOLDER_KEY``) so that sessions
    and ``save_model`` find them. Returns the model and its external data files (none: inline weights only).
    """
    path = Path(path)
    _check_file_size(path)
    model = _parse(path)
    _check_is_model(model, path)
    tensors = external_data.external_tensors(model)
    folder = data_files.absolute_folder(path.parent)
    try:
        locations = external_data.check_locations(model, folder, str(path), tensors)
    except data_files.UnsafeLocation as err:
        raise UnsafeModel(str(err)) from None
    if locations:
        try:
            read = external_data.read_small_constants(model, folder, tensors)
        except data_files.UnsafeLocation as err:
            raise UnsafeModel(str(err)) from None
        except OSError as err:
            raise UnsafeModel(f"{path}: cannot read its external data ({err.strerror or err})") from None
        external_data.set_folder(model, folder)
        logger.debug("%s: %d small constants read from external data; the other tensors stay in %s", path, read,
                     ", ".join(locations))
    logger.info("read %s: IR version %d, %d nodes in the main graph%s", path, model.ir_version,
                len(model.graph.node), ", external data" if locations else "")
    return model, [folder / location for location in locations]


def _size_without_external_data(model: onnx.ModelProto) -> int:
    """The serialized size once the tensors marked external have their bytes moved out (raw_data is kept until then)."""
    moved = sum(len(t.raw_data) for t in external_data.all_tensors(model) if uses_external_data(t))
    return model.ByteSize() - moved


def save_atomically(model: onnx.ModelProto, path: Path, external: bool = False) -> None:
    """Write ``model`` to ``path`` so that a failure or a crash never leaves a file there (or a half-written one).

    Tensors that refer to external data keep referring to their files, made available beside ``path`` under the
    same names (``data_files.place``: the files themselves in the same folder, else copies, reflinked or sparse
    where the file system allows); the input's files are never written. Inline tensors over 1 KiB go to a new
    ``<name>.data`` (another name if that one is taken) when ``external`` or when the model is over protobuf's
    2 GiB limit; then ``model``'s tensors are turned into external references in place. Each file is written
    under a hidden temporary name beside its final one and renamed into place at the end; afterwards ``model``
    refers to the files beside ``path``. An OS error (a read-only folder, ``path`` a folder, a full disk) is an
    ``OSError`` naming ``path``, never the temporary files.
    """
    path = Path(path)
    try:
        _save_atomically(model, path, external)
    except OSError as err:
        reason = "it is a directory" if path.is_dir() else (err.strerror or type(err).__name__).lower()
        raise OSError(f"{path}: cannot write the model ({reason}); nothing written") from err
    logger.info("wrote %s", path)


def _free_data_name(path: Path, taken: list[str]) -> str:
    """``<name>.data``, or ``<name>.<k>.data`` where that is a data file the model already refers to or any path that
    exists beside ``path`` (a file that save did not make is never written over)."""
    name, k = f"{path.name}.data", 1
    while name in taken or os.path.lexists(path.parent / name):
        name, k = f"{path.name}.{k}.data", k + 1
    return name


def _save_atomically(model: onnx.ModelProto, path: Path, external: bool) -> None:
    folder = data_files.absolute_folder(path.parent)
    source = external_data.folder_of(model)
    if source is not None:
        source = data_files.absolute_folder(source)
    tensors = external_data.external_tensors(model)
    locations = external_data.check_locations(model, source or folder, str(path), tensors)
    if locations and source is None:
        missing = [name for name in locations if not (folder / name).is_file()]
        if missing:
            raise ValueError(f"{path}: the model's tensors refer to external data files {missing} that are not "
                             "beside it, and the model does not say where they are (load it with "
                             "onnx_bcast.load_model, or onnx.load with its data); nothing written")
    clash = next((name for name in locations if os.path.normpath(name) == path.name), None)
    if clash is not None:  # the graph would be written over the data it refers to
        raise ValueError(f"{path}: is where the model's external data file {clash!r} goes; choose another name; "
                         "nothing written")
    staged: list[Path] = []
    token = f"{os.getpid()}-{secrets.token_hex(4)}"

    def stage(final: Path) -> Path:
        """A new hidden name beside ``final``, removed at the end unless renamed to ``final``."""
        staged.append(final.parent / f".{final.name}.{token}.tmp")
        return staged[-1]

    written = False
    try:
        moves = data_files.place(locations, source, folder, stage) if source is not None else []
        tmp = stage(path)
        external_data.set_folder(model, None)  # for onnx-bcast only: not written
        inline_out = (external and any(len(t.raw_data) >= 1024 for t in external_data.all_tensors(model))) or \
            model.ByteSize() > PROTOBUF_LIMIT
        if inline_out:
            data_name = _free_data_name(path, locations)
            moves.append(_write_inline_data(model, path, data_name, stage(path.parent / data_name)))
            tensors = external_data.external_tensors(model)
        write_graph(model, tmp, any(t.HasField("raw_data") for t in tensors))
        for staged_file, final in moves:
            os.replace(staged_file, final)
            staged.remove(staged_file)
        os.replace(tmp, path)
        staged.remove(tmp)
        written = True
    finally:
        if written and tensors:
            external_data.set_folder(model, folder)  # every file it refers to is now beside ``path``
        elif source is not None:
            external_data.set_folder(model, source)
        for name in staged:  # what was not renamed into place
            name.unlink(missing_ok=True)


def write_graph(model: onnx.ModelProto, path: Path, marked_with_bytes: bool) -> None:
    """``model`` written to a new file ``path`` (protobuf); ``marked_with_bytes``: some tensor marked external still
    holds its bytes, which ``onnx.save_model`` writes to its file beside ``path`` first. Otherwise the bytes are
    written here, without onnx.save_model's walk over every tensor."""
    if marked_with_bytes:
        onnx.save_model(model, str(path))
        return
    with open(path, "xb") as file:
        file.write(model.SerializeToString())


def _write_inline_data(model: onnx.ModelProto, path: Path, data_name: str, staged: Path) -> tuple[Path, Path]:
    """The inline tensors of 1 KiB or more written to ``staged``, and ``model``'s tensors turned into references to
    ``data_name`` (the name ``staged`` takes when renamed); returns that rename."""
    convert_model_to_external_data(model, all_tensors_to_one_file=True, location=staged.name, size_threshold=1024)
    skeleton = _size_without_external_data(model)
    if skeleton > PROTOBUF_LIMIT:
        raise ModelTooLarge(f"{path}: the model is {skeleton} bytes without its large tensors, over "
                            f"protobuf's limit of {PROTOBUF_LIMIT} bytes; nothing written")
    write_external_data_tensors(model, str(staged.parent))
    for tensor in external_data.all_tensors(model):
        for entry in tensor.external_data:
            if entry.key == "location" and entry.value == staged.name:
                entry.value = data_name
    return staged, path.parent / data_name


def save_model(model: onnx.ModelProto, path: str | os.PathLike) -> None:
    """Write a model that ``onnx_bcast.convert`` (or ``prepare``) returned, with its data: tensors that refer to
    the input's external data files keep referring to them, made available beside ``path`` (copies, reflinked or
    sparse where the file system allows, where the folders differ; nothing where the folder is the input's), and a model
    over protobuf's 2 GiB limit has its large inline tensors written to ``<name>.data``. The write is atomic
    (nothing is left at ``path`` on failure) and never modifies the input's files."""
    save_atomically(model, Path(os.fspath(path)))
