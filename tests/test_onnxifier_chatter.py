"""onnxifier's warnings during ``ir_to_onnx`` go to the DEBUG log; warnings from elsewhere still show."""

from __future__ import annotations

import contextlib
import logging
import warnings
from pathlib import Path

import pytest

onnxifier = pytest.importorskip("onnxifier", reason="onnxifier (the onnxifier extra) is not installed")

from onnx_bcast.onnxifier.chatter import onnxifier_warnings_logged  # noqa: E402

ONNXIFIER_FILE = str(Path(onnxifier.__file__).parent / "graph.py")
OURS_FILE = str(Path(__file__).resolve().parents[1] / "onnx_bcast" / "onnxifier" / "__init__.py")


@pytest.mark.parametrize("failing", [False, True])
def test_onnxifier_warnings_are_logged_and_others_shown(caplog: pytest.LogCaptureFixture, failing: bool) -> None:
    caplog.set_level(logging.DEBUG, logger="onnx_bcast")
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError) if failing else contextlib.nullcontext(), onnxifier_warnings_logged():
            warnings.warn_explicit("Inferring shape failed,\n value info is not set", UserWarning, ONNXIFIER_FILE, 82)
            warnings.warn_explicit("a warning of ours", UserWarning, OURS_FILE, 1)  # the same folder name, ours
            warnings.warn("a user's warning", DeprecationWarning, stacklevel=1)
            if failing:
                raise RuntimeError("the conversion failed")
    assert [str(w.message) for w in shown] == ["a warning of ours", "a user's warning"]
    assert [r.getMessage() for r in caplog.records] == ["onnxifier: Inferring shape failed, value info is not set"]

