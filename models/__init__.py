"""The bundled example models (built by ``python -m onnx_bcast.models.build``)."""

from __future__ import annotations

from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent


def bundled_models() -> list[Path]:
    """The bundled ``.onnx`` files, in a stable order."""
    return sorted(MODELS_DIR.glob("*.onnx"))


DEFAULT_MODEL = MODELS_DIR / "nchw_bias_explicit.onnx"
