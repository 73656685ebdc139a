"""The inputs of ``run`` and ``convert --verify``: ``--input`` files, ``--input-shapes``, and saved outputs."""

from __future__ import annotations

import logging
import os
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from onnx_bcast.random_inputs import random_feeds

logger = logging.getLogger("onnx_bcast.cli.main")


class ModelProblem(Exception):
    """A problem with the user's model or inputs: one line on stderr, exit status 1."""


def parse_inputs(pairs: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
    """``--input NAME=FILE.npy`` values (as ``args.input_file`` splits them) as arrays."""
    feeds = {}
    for name, file in pairs:
        try:
            feeds[name] = np.load(file, allow_pickle=False)
        except Exception as err:
            raise ModelProblem(f"--input {name}: cannot read {file} ({type(err).__name__}: {err})") from err
    return feeds


def input_reads(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The ``--input`` files as ``output_paths.Reads``: what a command reads besides the model."""
    return [(f"the file of --input {name}", file) for name, file in pairs]


def check_names(inputs: list[Any], given: dict[str, np.ndarray], shapes: dict[str, list[int]]) -> None:
    """Every name given by ``--input`` and ``--input-shapes`` is an input of the model."""
    known = {meta.name for meta in inputs}
    for option, names in (("--input", given), ("--input-shapes", shapes)):
        unknown = sorted(set(names) - known)
        if unknown:
            raise ModelProblem(f"{option} names {unknown} are not inputs of the model (inputs: {sorted(known)})")


def feeds_for(session: Any, given: dict[str, np.ndarray], shapes: dict[str, list[int]], seed: int
              ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Every input of ``session``: the given arrays, random data for the rest; and the names of the random ones."""
    check_names(session.get_inputs(), given, shapes)
    try:
        feeds = random_feeds(session, seed, given, shapes)
    except ValueError as err:
        raise ModelProblem(str(err)) from err
    generated = [name for name in feeds if name not in given]
    for name in generated:
        logger.info("random input %s: %s %s (seed %d)", name, feeds[name].dtype, list(feeds[name].shape), seed)
    return feeds, generated


def random_note(names: list[str], seed: int) -> str:
    """A sentence for an error on random inputs: which were random, and how to give them."""
    if len(names) == 1:
        return (f"The input {names[0]!r} was random (--seed {seed}): give it with --input {names[0]}=FILE.npy or "
                f"fix its shape with --input-shapes.")
    return (f"The inputs {', '.join(map(repr, names))} were random (--seed {seed}): give them with "
            "--input NAME=FILE.npy or fix their shapes with --input-shapes.")


def save_outputs(path: str, outputs: list[tuple[str, np.ndarray]]) -> None:
    """Every output in one ``.npz`` file under its name, written atomically (never a half-written file); the
    caller has checked the path (``output_paths.check_output``)."""
    target = Path(path)
    try:
        handle, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(handle, "wb") as file, zipfile.ZipFile(file, "w", allowZip64=True) as archive:
                for name, value in outputs:  # as numpy.savez writes them, whatever the names
                    array = value.astype(str) if value.dtype.hasobject else value
                    with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, array, allow_pickle=False)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as err:
        raise ModelProblem(f"--save-outputs {path}: cannot write it ({(err.strerror or str(err)).lower()})") from None
    logger.info("saved %d outputs in %s", len(outputs), path)
