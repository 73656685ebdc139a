"""External data files: locations kept inside the model's folder, and the files placed beside a written model."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger("onnx_bcast.model.data_files")


class UnsafeLocation(ValueError):
    """An external data location that points outside the model's folder (absolute, or with '..')."""


def absolute_folder(folder: Path) -> Path:
    """``folder`` as an absolute path that names the folder the kernel finds: made absolute where it has no
    ``..`` (lexically, without the ``lstat`` per component of resolving), else resolved (``link/..`` is not where
    the lexical form points)."""
    if ".." in folder.parts:
        return folder.resolve()
    return folder if folder.is_absolute() else Path(os.path.abspath(folder))


def checked_file(folder: Path, location: str, where: str) -> Path:
    """``folder / location``, refused (``UnsafeLocation`` naming ``where``) unless it stays inside ``folder``."""
    folder = absolute_folder(folder)
    plain = _plainly_inside(folder, location)
    if plain is not None:
        return plain
    real = folder.resolve()
    target = (real / location).resolve()
    if not location or Path(location).is_absolute() or real not in target.parents:
        raise UnsafeLocation(f"{where}: external data location {location!r} points outside the model's folder")
    return target


def _plainly_inside(folder: Path, location: str) -> Path | None:
    """``folder / location`` where it is plainly inside ``folder`` (an ``absolute_folder``): a relative POSIX
    location of plain names, none of them a symbolic link on disk (an ``lstat`` per name of the location, not per
    component of the whole path as resolving costs); None where that is not shown (``checked_file`` resolves)."""
    if os.name != "posix" or not location or location[0] == "/":
        return None
    path = str(folder)
    for part in location.split("/"):
        if part in ("", ".", ".."):
            return None
        path = f"{path}/{part}"
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return None
        except FileNotFoundError:
            break  # nothing from here on exists: no link either
        except (OSError, ValueError):
            return None
    return Path(f"{folder}/{location}")


def place(locations: list[str], source: Path, target: Path, stage: Callable[[Path], Path]
          ) -> list[tuple[Path, Path]]:
    """The data files ``locations`` (in ``source``) made available in folder ``target`` (both
    ``absolute_folder``s): nothing to do where the folders are the same (the output refers to the input's files);
    else a copy made at ``stage(final)`` (a temporary name beside the final file): a reflink where the file system
    can share the blocks, else the data regions only (a sparse file stays sparse), never through Python's memory.
    Returns the (staged, final) pairs to move into place. A file of the same name already in ``target`` is kept
    where it holds the same bytes (converting again to the same folder), else an error: it is never overwritten.

    Not hard links: onnx (1.18 and later) refuses to read external data from a file with several links, as a
    possible hard-link attack. Not symbolic links: onnx, ONNX Runtime and onnx-bcast refuse data outside the
    model's folder."""
    moves = []
    for location in locations:
        original = checked_file(source, location, str(source))
        final = checked_file(target, location, str(target))
        if os.path.lexists(final):
            if os.path.exists(final) and os.path.samefile(final, original):
                continue  # the same folder: the output refers to the file itself
            if _reusable(final) and same_bytes(final, original):
                logger.info("%s already holds the bytes of %s (an earlier conversion's copy): kept", final, original)
                continue
            raise FileExistsError(errno.EEXIST, f"{final} exists and is not the input's data file {original} (its "
                                                "bytes differ); write the model to another folder", str(final))
        if final.parent != target:
            final.parent.mkdir(parents=True, exist_ok=True)
        staged = stage(final)
        how = copy_file(original, staged)
        logger.info("copied %s to %s (%s)", original, final, how)
        moves.append((staged, final))
    return moves


_FICLONE = 0x40049409  # Linux's ioctl that makes a file share another's blocks (btrfs, xfs, ...)


def copy_file(source: Path, target: Path) -> str:
    """``source`` copied to a new file ``target`` in the kernel: a reflink where the file system allows, else its
    data regions (holes stay holes), else a plain copy. Returns which."""
    with open(source, "rb") as src, open(target, "xb") as dst:
        try:
            import fcntl

            fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
            return "reflink"
        except (ImportError, OSError):
            pass
        size = os.fstat(src.fileno()).st_size
        if hasattr(os, "SEEK_DATA") and hasattr(os, "copy_file_range"):
            try:
                _copy_data_regions(src.fileno(), dst.fileno(), size)
                return "data regions"
            except OSError:  # a file system without SEEK_DATA or copy_file_range: start again, plainly
                dst.seek(0)
                dst.truncate(0)
        src.seek(0)
        shutil.copyfileobj(src, dst, 16 * 1024 * 1024)
        return "plain copy"


def _copy_data_regions(src: int, dst: int, size: int) -> None:
    for start, end in data_regions(src, size):
        offset = start
        while offset < end:
            copied = os.copy_file_range(src, dst, end - offset, offset, offset)
            if copied <= 0:
                raise OSError(errno.EIO, "copy_file_range copied nothing")
            offset += copied
    os.ftruncate(dst, size)


def data_regions(fd: int, size: int) -> list[tuple[int, int]]:
    """The [start, end) ranges of an open file of ``size`` bytes that hold data (its holes left out); the whole
    file where the system cannot say (no ``SEEK_DATA``)."""
    whole = [(0, size)] if size else []
    if not hasattr(os, "SEEK_DATA"):
        return whole
    regions, position = [], 0
    try:
        while position < size:
            try:
                start = os.lseek(fd, position, os.SEEK_DATA)
            except OSError as err:
                if err.errno == errno.ENXIO:  # only a hole from here on
                    break
                raise
            position = os.lseek(fd, start, os.SEEK_HOLE)
            regions.append((start, position))
    except OSError:
        return whole
    return regions


def _reusable(path: Path) -> bool:
    """A regular file with one link (onnx refuses external data in a file with several: a possible attack)."""
    status = os.lstat(path)
    return stat.S_ISREG(status.st_mode) and status.st_nlink == 1


def same_bytes(first: Path, second: Path, chunk: int = 16 * 1024 * 1024) -> bool:
    """Whether two files hold the same bytes: compared a chunk at a time where either holds data (holes read as
    zeros, so a sparse file costs its data only)."""
    with open(first, "rb") as a, open(second, "rb") as b:
        size = os.fstat(a.fileno()).st_size
        if os.fstat(b.fileno()).st_size != size:
            return False
        spans = sorted(data_regions(a.fileno(), size) + data_regions(b.fileno(), size))
        merged: list[list[int]] = []
        for start, end in spans:
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        for start, end in merged:
            for offset in range(start, end, chunk):
                a.seek(offset)
                b.seek(offset)
                n = min(chunk, end - offset)
                if a.read(n) != b.read(n):
                    return False
    return True
