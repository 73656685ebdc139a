"""Where a command may write: never over a file it reads (however the path is spelled), never over an existing path
unless ``--force`` says so, only as a file in a folder that exists and is writable."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from onnx_bcast.cli.inputs import ModelProblem

#: what a command reads, as (what it is, its path): e.g. ("the input model", Path("m.onnx"))
Reads = Iterable[tuple[str, "str | os.PathLike"]]


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file: through symbolic links, ``./`` and ``..``, and hard links (same inode)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (or cannot be looked at): not one file
        return False


def refuse_reads(target: str | os.PathLike, label: str, reads: Reads) -> None:
    """A ModelProblem where ``target`` is one of the files the command reads (``--force`` or not)."""
    for what, path in reads:
        if same_file(target, path):
            raise ModelProblem(f"{label}: is {what}, which this command reads; choose another path")


def check_output(given: str, label: str, reads: Reads, force: bool, directory_hint: str) -> Path:
    """``given`` as a Path, once shown writable: not a file the command reads, not a folder, not an existing path
    unless ``force``, in a folder that exists and is writable. ``label`` starts each message (``out.onnx`` or
    ``--save-outputs out.npz``); ``directory_hint`` ends the one for a folder."""
    target = Path(given)
    refuse_reads(target, label, reads)
    if target.is_dir():
        raise ModelProblem(f"{label}: is a directory; {directory_hint}")
    if os.path.lexists(target) and not force:
        raise ModelProblem(f"{label}: exists; choose another path, or give --force to overwrite it")
    if not target.parent.is_dir():
        raise ModelProblem(f"{label}: folder {str(target.parent)!r} does not exist")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise ModelProblem(f"{label}: cannot write in folder {str(target.parent)!r} (permission denied)")
    return target
