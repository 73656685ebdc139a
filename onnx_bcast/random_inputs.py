"""Random inputs for a session's graph inputs (for ``run``, ``demo`` and verification)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from onnx_bcast.ops.common import NUMPY_MAX_DIMS
from onnx_bcast.ops.memory_guard import over_limit

_NUMPY_OF_ORT = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int8)": np.int8, "tensor(int16)": np.int16, "tensor(int32)": np.int32, "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16, "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_, "tensor(string)": np.str_,
}


def random_input(name: str, ort_type: str, shape: Sequence[Any], rng: np.random.Generator,
                 named_dims: dict[str, int] | None = None, lowest_integer: int = 0) -> np.ndarray:
    """A random input for a graph input; unknown dims become 1; integers from ``lowest_integer`` to 9.

    With ``named_dims``, a symbolic dim (e.g. ``"N"``) gets the size recorded there, or the next of 2, 3, 4, ...
    (recorded), so that inputs sharing a name agree and different names differ.
    """
    dtype = _NUMPY_OF_ORT.get(ort_type)
    if dtype is None:
        raise ValueError(f"input {name!r}: cannot generate data of type {ort_type}; pass --input {name}=FILE.npy")
    dims = [_dim_size(d, named_dims) for d in shape]
    if len(dims) > NUMPY_MAX_DIMS:
        raise ValueError(f"input {name!r}: rank {len(dims)}: numpy 1 holds at most {NUMPY_MAX_DIMS} dims; numpy 2 "
                         f"needed for rank {len(dims)}")
    too_big = over_limit(dims, dtype)
    if too_big is not None:
        raise ValueError(f"input {name!r}: generating {too_big}; pass --input {name}=FILE.npy")
    if dtype is np.str_:
        return rng.integers(0, 100, dims).astype(str).astype(object)
    if dtype is np.bool_:
        return rng.integers(0, 2, dims).astype(bool)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(lowest_integer, 10, dims).astype(dtype)
    return rng.standard_normal(dims).astype(dtype)


def _dim_size(dim: Any, named_dims: dict[str, int] | None) -> int:
    if isinstance(dim, int) and dim >= 0:
        return dim
    if isinstance(dim, str) and dim and named_dims is not None:
        return named_dims.setdefault(dim, 2 + len(named_dims))
    return 1


def _given_dims(session: Any, given: dict[str, np.ndarray], shapes: dict[str, list[int]]) -> dict[str, int]:
    """Sizes of symbolic dims as the given arrays, then the given shapes, fix them."""
    named: dict[str, int] = {}
    for meta in session.get_inputs():
        for shape in (np.shape(given[meta.name]) if meta.name in given else None, shapes.get(meta.name)):
            if shape is not None and len(meta.shape) == len(shape):
                for dim, size in zip(meta.shape, shape, strict=True):
                    if isinstance(dim, str) and dim:
                        named.setdefault(dim, int(size))
    return named


def _check_shapes(session: Any, shapes: dict[str, list[int]]) -> None:
    """Each given shape is for an input of the session, with its declared rank and static dims."""
    metas = {meta.name: meta for meta in session.get_inputs()}
    for name, shape in shapes.items():
        meta = metas.get(name)
        if meta is None:
            raise ValueError(f"a shape is given for {name!r}, which is not an input of the model "
                             f"(inputs: {sorted(metas)})")
        declared = list(meta.shape)
        fixed = [d if isinstance(d, int) and d >= 0 else None for d in declared]
        if declared and (len(declared) != len(shape) or
                         any(f is not None and f != s for f, s in zip(fixed, shape, strict=True))):
            shown = [d if isinstance(d, (int, str)) and d != "" else "?" for d in declared]
            raise ValueError(f"input {name!r}: shape {list(shape)} does not fit the declared shape "
                             f"[{', '.join(map(str, shown))}] (only its unknown or named dims may be chosen)")


def random_feeds(session: Any, seed: int = 0, given: dict[str, np.ndarray] | None = None,
                 shapes: dict[str, list[int]] | None = None, nonzero_integers: bool = False
                 ) -> dict[str, np.ndarray]:
    """Feeds for every input of an ORT session: the given arrays, random data for the rest.

    ``shapes`` fixes the shape of a random input (its unknown and named dims; the declared static dims must
    match), as polygraphy's ``--input-shapes`` does. ``nonzero_integers``: random integers from 1 (divisors).
    """
    rng = np.random.default_rng(seed)
    given, shapes = given or {}, shapes or {}
    _check_shapes(session, shapes)
    named_dims = _given_dims(session, given, shapes)
    return {i.name: given[i.name] if i.name in given else
            random_input(i.name, i.type, shapes.get(i.name, i.shape), rng, named_dims, int(nonzero_integers))
            for i in session.get_inputs()}
