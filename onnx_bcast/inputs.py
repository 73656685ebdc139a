"""Random inputs for a session's graph inputs (for ``run``, ``demo`` and verification)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_NUMPY_OF_ORT = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int8)": np.int8, "tensor(int16)": np.int16, "tensor(int32)": np.int32, "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16, "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_, "tensor(string)": np.str_,
}


def random_input(name: str, ort_type: str, shape: Sequence[Any], rng: np.random.Generator) -> np.ndarray:
    """A random input for a graph input; unknown dims become 1."""
    dtype = _NUMPY_OF_ORT.get(ort_type)
    if dtype is None:
        raise ValueError(f"input {name!r}: cannot generate data of type {ort_type}; pass --input {name}=FILE.npy")
    dims = [d if isinstance(d, int) and d >= 0 else 1 for d in shape]
    if dtype is np.str_:
        return rng.integers(0, 100, dims).astype(str).astype(object)
    if dtype is np.bool_:
        return rng.integers(0, 2, dims).astype(bool)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 10, dims).astype(dtype)
    return rng.standard_normal(dims).astype(dtype)



def random_feeds(session: Any, seed: int = 0, given: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Feeds for every input of an ORT session: the given arrays, random data for the rest."""
    rng = np.random.default_rng(seed)
    given = given or {}
    return {i.name: given[i.name] if i.name in given else random_input(i.name, i.type, i.shape, rng)
            for i in session.get_inputs()}
