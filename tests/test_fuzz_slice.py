"""A bounded slice of ``bench/fuzz.py``: rules, kernels, both backends and the converter agree with its oracle.

The slice fails on any disagreement that is not the symptom of a known issue (``KNOWN_ISSUES`` in the fuzz). Each
known issue has a strict xfail reproducer here: when the library fixes it, that test XPASSes (and fails), saying
to drop the issue from ``KNOWN_ISSUES``.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.bench_modules import load_bench_script


@pytest.fixture(scope="module")
def fuzz():
    return load_bench_script("fuzz.py")


def _case(fuzz, data_shape, **params):
    base = {"mode": "numpy", "axis": -1, "axes": None, "x_decl": "unknown", "t_decl": "dynamic", "a_input": True}
    return fuzz.Case("broadcast", "Broadcast", np.arange(int(np.prod(data_shape)), dtype=np.int32).reshape(data_shape),
                     {**base, **params})


def _ew(fuzz, op, a_shape, b_shape, mode="numpy", axis=-1, dtype=np.float32, declared="unknown"):
    a = np.arange(int(np.prod(a_shape)), dtype=dtype).reshape(a_shape)
    b = (np.arange(int(np.prod(b_shape)), dtype=dtype) + 1).reshape(b_shape)
    fmod = fuzz.ew_fmod_default(op, np.dtype(dtype))
    return fuzz.Case("elementwise", op, a, {"B": b, "mode": mode, "axis": axis, "fmod": fmod, "x_decl": declared})


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
    v0 = fuzz.Case("v0", "BroadcastV0", np.arange(3.0), {"shape": [2, 3, 4], "broadcast_axes": [0, 2],
                                                         "x_decl": "rank"})
    assert fuzz.expect_v0(v0)[1, 2, 3] == 2.0


def test_elementwise_oracle_follows_spec(fuzz) -> None:
    """SPEC §2's elementwise rules as the fuzz writes them, and its values (plain ORT on pre-broadcast operands)."""
    align = fuzz.ew_alignment
    assert align((2, 3), (2, 3), "none", -1) == ((2, 3), (2, 3)) and align((2, 3), (3,), "none", -1) is None
    assert align((2, 1, 3), (4, 1), "numpy", -1) == ((2, 4, 3), (4, 1)) and align((2, 3), (4, 3), "numpy", -1) is None
    assert align((2, 3, 4, 5), (3, 4), "pdpd", 1) == ((2, 3, 4, 5), (1, 3, 4, 1))
    assert align((2, 3, 4), (3, 1), "pdpd", 1) == ((2, 3, 4), (1, 3, 1))  # trailing 1s ignored
    assert align((2, 3), (3, 1, 1), "pdpd", -1) is None  # rank(B) > rank(A)
    assert align((1, 2), (2, 1), "pdpd", -1) is None  # A's size-1 dims do not stretch (PaddlePaddle 3.x: (2, 2))
    assert align((2, 0), (1,), "pdpd", -1) is not None and align((2, 1), (0,), "pdpd", -1) is None
    assert align((2, 3), (1,), "pdpd", -2) is None
    add = fuzz.expect_elementwise(_ew(fuzz, "Add", (2, 3), (3,)))
    np.testing.assert_array_equal(add, [[1, 3, 5], [4, 6, 8]])
    pdpd = fuzz.expect_elementwise(_ew(fuzz, "Mul", (2, 3), (2,), mode="pdpd", axis=0, dtype=np.int32))
    np.testing.assert_array_equal(pdpd, [[0, 1, 2], [6, 8, 10]])
    less = fuzz.expect_elementwise(_ew(fuzz, "Less", (2, 2), (2, 1)))
    assert less.dtype == np.bool_ and less.tolist() == [[True, False], [False, False]]
    assert fuzz.values_differ(np.float32([0.0]), np.float32([-0.0]), "Max") is None
    assert fuzz.values_differ(np.float32([0.0]), np.float32([-0.0]), "Add") is not None


@pytest.mark.slow  # 22 s (docs/testing.md)
def test_fuzz_slice_has_no_new_disagreement(fuzz) -> None:
    summary = fuzz.run_fuzz(300, seed=20260601)
    assert summary.new == [], "\n".join(summary.new[:20])
    assert set(summary.known) <= set(fuzz.KNOWN_ISSUES)
    assert summary.cases == 300 and summary.valid > 150 and summary.invalid > 40
    assert summary.families[("elementwise", "valid")] > 40 and summary.families[("elementwise", "invalid")] > 10
    for path in fuzz.RUNTIME_PATHS:  # every case through both backends and the converted model, valid or not
        assert summary.checks[(path, "valid")] == summary.valid, path
        assert summary.checks[(path, "invalid")] == summary.invalid, path
    assert summary.checks[("static_convert", "invalid")] == summary.invalid
    assert summary.checks[("static_native", "valid")] == summary.valid
    assert summary.checks[("oracle_formula", "valid")] > 20


def _known_cases(fuzz) -> dict[str, tuple]:
    """A minimal case per known issue (and whether it needs the ONNX Runtime form run natively)."""
    like = fuzz.Case("like", "BroadcastLikeV0", np.arange(5, dtype=np.float32),
                     {"like_shape": [5], "initial_broadcast_axes": [1], "x_decl": "rank"})
    v0_axes = fuzz.Case("v0", "BroadcastV0", np.arange(2, dtype=np.int8),
                        {"shape": [2], "broadcast_axes": [1], "x_decl": "unknown"})
    v0_abort = fuzz.Case("v0", "BroadcastV0", np.zeros((0,), np.int32),
                         {"shape": [0, -1], "broadcast_axes": [1], "x_decl": "rank"})
    ortform = fuzz.Case("v0", "BroadcastV0", np.arange(3, dtype=np.float32),
                        {"shape": [3, 5], "broadcast_axes": [1], "x_decl": "unknown"})
    like_rank_unknown = fuzz.Case("like", "BroadcastLikeV0", np.arange(5, dtype=np.float32),
                                  {"like_shape": [5], "initial_broadcast_axes": [1], "x_decl": "unknown"})
    return {
        "like-unguarded": (like, False),
        "like-unguarded-rank-unknown": (like_rank_unknown, False),
        "v0-axes-unchecked": (v0_axes, False),
        "v0-negative-shape-abort": (v0_abort, False),  # runs in the fuzz's worker process: the abort is contained
        "pdpd-rank-message": (_ew(fuzz, "Add", (2, 3), (2, 1, 1), mode="pdpd", axis=0, declared="rank"), False),
        "fp16-compare-unnamed-node": (_ew(fuzz, "LessOrEqual", (2, 3), (4, 3), dtype=np.float16), False),
        "ortform-inputs-ignored": (ortform, True),
        "ortform-like-deduced": (fuzz.Case("like", "BroadcastLikeV0", np.arange(3, dtype=np.float32).reshape(1, 3),
                                           {"like_shape": [4, 3, 2], "initial_broadcast_axes": [], "x_decl": "static"}),
                                 True),
        "ortform-like-invalid": (fuzz.Case("like", "BroadcastLikeV0", np.arange(3, dtype=np.float32),
                                           {"like_shape": [2, 4], "initial_broadcast_axes": [0],
                                            "x_decl": "unknown"}), True),
    }


# issues the fuzz found and has not seen fixed: a new one gets a reproducer above, an entry here and a
# strict xfail (raising on its symptom only), until it is fixed and moves to FIXED
KNOWN: tuple[str, ...] = ("ssi-zero-target-token",)  # its reproducer: tests/test_empty_constant_targets.py's
# strict xfails (symbolic shape inference on a converted broadcast to a constant target holding a 0)
# issues the fuzz found and the library fixed: their reproducers must now agree on every path ("like-unguarded":
# with like_arg's rank known and, since the kept dims are gathered at run time, unknown)
FIXED = ("v0-axes-unchecked", "v0-negative-shape-abort", "pdpd-rank-message", "fp16-compare-unnamed-node",
         "like-unguarded", "like-unguarded-rank-unknown", "ortform-inputs-ignored", "ortform-like-deduced",
         "ortform-like-invalid")  # and "openvino-guard-not-enforced", "openvino-guard-fails-valid":
# tests/test_fuzz_scenarios.py; "empty-target-tie": tests/test_sound_guards.py


def test_the_fuzz_knows_no_issue_this_file_does_not(fuzz) -> None:
    assert set(fuzz.KNOWN_ISSUES) <= set(KNOWN)


@pytest.mark.parametrize("issue", FIXED)
def test_fixed_issue_reproducer(fuzz, issue: str) -> None:
    case, ort_form_native = _known_cases(fuzz)[issue]
    summary = fuzz.check_cases([(fuzz.FAMILIES[case.family], case)], ort_form_native=ort_form_native)
    assert summary.cases == 1 and summary.disagreements == [], "\n".join(summary.disagreements)
