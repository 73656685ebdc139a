"""A bounded slice of ``bench/fuzz.py``: kernels, rules, the ORT path and the converter agree with its oracle."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

FUZZ_PATH = Path(__file__).resolve().parent.parent / "bench" / "fuzz.py"


@pytest.fixture(scope="module")
def fuzz():
    spec = importlib.util.spec_from_file_location("onnx_bcast_bench_fuzz", FUZZ_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _case(fuzz, data_shape, **params):
    base = {"mode": "numpy", "axis": -1, "axes": None}
    return fuzz.Case("broadcast", "Broadcast", np.arange(int(np.prod(data_shape)), dtype=np.int32).reshape(data_shape),
                     {**base, **params})


def test_oracle_follows_spec_examples(fuzz) -> None:
    """The fuzz oracle itself, on SPEC/README examples (so a vacuous oracle cannot pass the slice)."""
    assert fuzz.expect_broadcast(_case(fuzz, (2, 3), target=[2, 4])) is None
    out = fuzz.expect_broadcast(_case(fuzz, (16, 1, 1), target=[1, 1, 50, 50], mode="bidirectional"))
    assert out.shape == (1, 16, 50, 50) and out[0, 5, 7, 9] == 5
    assert fuzz.expect_broadcast(_case(fuzz, (2, 3), target=[2, 4, 3], mode="explicit", axes=[0, 0])) is None
    out = fuzz.expect_broadcast(_case(fuzz, (2, 3), target=[2, 4, 3], mode="explicit", axes=[0, 2]))
    assert out[1, 3, 2] == 5 and out[0, 2, 1] == 1
    assert fuzz.expect_broadcast(_case(fuzz, (3,), target=[2, 3, 4], mode="pdpd", axis=1)) is None
    out = fuzz.expect_broadcast(_case(fuzz, (3, 1), target=[2, 3, 4], mode="pdpd", axis=1))
    assert out.shape == (2, 3, 4) and out[1, 2, 3] == 2
    v0 = fuzz.Case("v0", "BroadcastV0", np.arange(3.0), {"shape": [2, 3, 4], "broadcast_axes": [0, 2]})
    assert fuzz.expect_v0(v0)[1, 2, 3] == 2.0


def test_fuzz_slice_has_no_disagreement(fuzz) -> None:
    summary = fuzz.run_fuzz(300, seed=20260601)
    assert summary.disagreements == []
    assert summary.cases == 300 and summary.valid > 100 and summary.invalid > 30
    assert summary.checks["convert"] == summary.invalid
    assert summary.checks["converted_plain_ort"] == summary.valid
