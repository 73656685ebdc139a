"""A limit on the bytes one broadcast output (or one generated input) may take, checked before allocating."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from onnx_bcast.errors import BroadcastError, fmt_shape

ENV_VAR = "ONNX_BCAST_MAX_OUTPUT_BYTES"
FALLBACK_LIMIT = 4 * 1024**3  # when the machine's memory cannot be read
MEMORY_SHARE = 0.5  # the default limit is this share of physical memory


class InvalidLimit(ValueError):
    """``ONNX_BCAST_MAX_OUTPUT_BYTES`` (or ``max_output_bytes=``) is not a non-negative whole number of bytes."""


def _meminfo_total(path: str = "/proc/meminfo") -> int | None:
    try:
        with open(path, encoding="ascii") as file:
            for line in file:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024  # the value is in kB
    except (OSError, ValueError, IndexError):
        return None
    return None


@functools.cache
def physical_memory_bytes() -> int | None:
    """The machine's physical memory in bytes (``os.sysconf``, else ``/proc/meminfo``), None if unknown."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and page_size > 0:
            return int(pages) * int(page_size)
    except (AttributeError, ValueError, OSError):
        pass
    return _meminfo_total()


def default_limit() -> int:
    """Half of physical memory, or 4 GiB when it cannot be read."""
    total = physical_memory_bytes()
    return int(total * MEMORY_SHARE) if total else FALLBACK_LIMIT


def parse_limit(text: str, where: str = ENV_VAR) -> int:
    """A byte count from text: ``12000000000``, ``12_000_000_000`` or ``1.2e10`` (a whole number, >= 0)."""
    raw = text.strip().replace("_", "")
    try:
        value = int(raw)
    except ValueError:
        try:
            number = float(raw)
        except ValueError:
            raise InvalidLimit(f"{where}={text!r} is not a number of bytes (e.g. 12000000000 or 1.2e10)") from None
        if not math.isfinite(number) or number != int(number):
            raise InvalidLimit(f"{where}={text!r} is not a whole number of bytes") from None
        value = int(number)
    if value < 0:
        raise InvalidLimit(f"{where}={text!r} is negative")
    return value


# os.environ.get(ENV_VAR) of an absent variable raises and catches a KeyError inside Mapping.get, which cost about
# 0.4 of a tiny Expand's whole call on the numpy backend's every kernel call. os.environ keeps the variables in a dict
# keyed by its own encoding of the name (CPython's ``_Environ``: ``_data``, ``encodekey``): read there, the same text
# os.environ gives, without the exception; anything else falls back to os.environ.get.
_ENV_DATA = getattr(os.environ, "_data", None)
_ENV_KEY = os.environ.encodekey(ENV_VAR) if _ENV_DATA is not None and hasattr(os.environ, "encodekey") else None


def environment_text() -> str | None:
    """The value of ``ONNX_BCAST_MAX_OUTPUT_BYTES`` now, as ``os.environ.get`` gives it (None when unset)."""
    if _ENV_KEY is None or not isinstance(_ENV_DATA, dict):
        return os.environ.get(ENV_VAR)
    raw = _ENV_DATA.get(_ENV_KEY)
    return None if raw is None else os.environ.decodevalue(raw)


def output_limit(max_output_bytes: int | None = None) -> tuple[int, str]:
    """The limit in force and where it comes from: the keyword, else the environment (read now), else the default."""
    if max_output_bytes is not None:
        if isinstance(max_output_bytes, bool) or not isinstance(max_output_bytes, (int, np.integer)):
            raise InvalidLimit(f"max_output_bytes={max_output_bytes!r} must be an int")
        if max_output_bytes < 0:
            raise InvalidLimit(f"max_output_bytes={max_output_bytes!r} is negative")
        return int(max_output_bytes), "max_output_bytes"
    text = environment_text()  # read at every call: a changed environment is seen
    if text is not None:
        return _env_limit(text)
    return _default()


@functools.lru_cache(maxsize=64)
def _env_limit(text: str) -> tuple[int, str]:
    """The limit a value of the environment variable gives (parsed once per distinct text)."""
    if text.strip():
        return parse_limit(text), ENV_VAR
    return _default()


@functools.cache
def _default() -> tuple[int, str]:
    return default_limit(), "default: half of physical memory"


def nbytes(shape: Sequence[int], dtype: Any) -> int:
    """The bytes of an array of ``shape`` and ``dtype``, in Python ints (no overflow)."""
    return math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize


def fmt_bytes(count: int) -> str:
    """A byte count for messages: exact below a million, else like ``4.0e+12``."""
    return str(count) if count < 10**6 else f"{count:.1e}"


def over_limit(shape: Sequence[int], dtype: Any, max_output_bytes: int | None = None) -> str | None:
    """Why an array of ``shape``/``dtype`` may not be allocated, or None when it fits the limit."""
    size = nbytes(shape, dtype)
    limit, source = output_limit(max_output_bytes)
    if size <= limit:
        return None
    return (f"{fmt_shape(shape)} of {np.dtype(dtype).name} would take {fmt_bytes(size)} bytes, over the limit of "
            f"{fmt_bytes(limit)} bytes ({source})")


def check_output_size(op: str, mode: str, shape: Sequence[int], dtype: Any, max_output_bytes: int | None = None,
                      *, mode_attr: str = "mode") -> None:
    """Raise ``BroadcastError`` when an output of ``shape``/``dtype`` would exceed the limit; allocates nothing."""
    try:
        reason = over_limit(shape, dtype, max_output_bytes)
    except InvalidLimit as err:
        raise BroadcastError(op, mode, f"cannot check the output size: {err}", mode_attr=mode_attr) from None
    if reason is not None:
        raise BroadcastError(op, mode, f"output {reason}", mode_attr=mode_attr)
