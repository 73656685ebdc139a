"""The engine's speed-ups change no byte: every digest model, and a replay-fuzz slice, converted with them and without.

``lower(speedups=False)`` runs onnx's inference callback for every node and every rule (no hidden nodes, no shared
facts, no replay). The models are ``bench/convert_digest.py``'s 380 (bundled, case table, alike nodes twice, the
benchmark's models smaller) in three forms, and ``bench/replay_fuzz.py``'s seeded alike-node batches.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import convert_digest  # noqa: E402
import replay_fuzz  # noqa: E402

from onnx_bcast.lowering.engine import lower  # noqa: E402
from onnx_bcast.lowering.fast import replay  # noqa: E402


def test_every_digest_conversion_is_the_same_fast_and_plain() -> None:
    fast, plain = convert_digest.digests(speedups=True), convert_digest.digests(speedups=False)
    assert len(fast) == len(plain) >= 1000
    assert [key for key in fast if fast[key] != plain[key]] == []


@pytest.mark.parametrize("seed", [1, 2])
def test_a_replay_fuzz_slice_is_the_same_fast_and_plain(seed: int) -> None:
    differences: list[str] = []
    checked, replayed, differ = replay_fuzz.run_batches(6, seed, differences.append)
    assert differ == 0, differences
    assert checked >= 18 and replayed > 0  # the slice did replay


def test_the_comparison_sees_a_wrong_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay that loses a node is caught: the comparison can fail."""
    real = replay._replay

    def wrong(template: object, bound: object, emit: object, names: list[str]) -> bool:
        done = real(template, bound, emit, names)
        if done and len(emit.serialized) > 1:
            emit.serialized.pop(0)
        return done

    monkeypatch.setattr(replay, "_replay", wrong)
    model = next(m for name, m in convert_digest.models() if name == "twice/valid")
    rule_set = convert_digest.FORMS["convert"]()
    assert lower(model, rule_set).model != lower(model, rule_set, speedups=False).model
