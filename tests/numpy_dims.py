"""What the installed numpy can hold: numpy 1 makes arrays of at most 32 dims, numpy 2 of 64 (the contract's limit).

Read from numpy's version here, not from ``onnx_bcast.ops.common.NUMPY_MAX_DIMS``, so that a wrong limit there fails
the tests instead of moving them.
"""

from __future__ import annotations

import numpy as np
import pytest

NUMPY_1 = np.lib.NumpyVersion(np.__version__) < "2.0.0"
ARRAY_DIMS = 32 if NUMPY_1 else 64


def numpy_1_reason(rank: int) -> str:
    """Why an array of ``rank`` dims cannot be made, as onnx-bcast says it."""
    return f"numpy 1 holds at most 32 dims; numpy 2 needed for rank {rank}"


def arrays_of_rank(rank: int) -> pytest.MarkDecorator:
    """Skips a test that makes arrays of ``rank`` dims where numpy cannot (numpy 1 above 32), saying so."""
    return pytest.mark.skipif(rank > ARRAY_DIMS, reason=numpy_1_reason(rank))


def array_ranks(ranks: tuple[int, ...]) -> list:
    """``ranks`` as parameters, each skipped where numpy cannot make arrays of it."""
    return [pytest.param(rank, marks=arrays_of_rank(rank)) for rank in ranks]


only_numpy_1 = pytest.mark.skipif(not NUMPY_1, reason="numpy 2 makes arrays of up to 64 dims: there is no numpy 1 "
                                                      "limit to refuse (the run at the declared minimums tests it)")
