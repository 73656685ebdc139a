"""onnx-bcast: run or convert ONNX models with explicit (OpenVINO, nGraph, PaddlePaddle) broadcasts."""

from __future__ import annotations

from importlib import metadata as _metadata

from onnx_bcast.convert import convert
from onnx_bcast.errors import BroadcastError, NotLowerable, VerificationError
from onnx_bcast.importers.legacy_onnx import import_legacy
from onnx_bcast.model.files import save_model
from onnx_bcast.onnx_defs.schemas import register as register_schemas
from onnx_bcast.ops.backprop import broadcast_backprop, broadcast_v0_backprop, unbroadcast
from onnx_bcast.ops.broadcast import broadcast, broadcast_shape, expand
from onnx_bcast.ops.broadcast_v0 import broadcast_like_v0, broadcast_v0
from onnx_bcast.ops.elementwise import elementwise, elementwise_shape
from onnx_bcast.ort.prepare import prepare

DOMAIN = "onnx_bcast"

# One version source: pyproject.toml's static `version`, read back from the installed distribution's metadata.
# Static rather than setuptools' dynamic `attr`: every packaging tool reads it without running setuptools or
# importing this package, and `pip show`, `onnx-bcast --version` and `__version__` agree by construction. A checkout
# that is not installed (no metadata) says so instead of guessing.
try:
    __version__ = _metadata.version("onnx-bcast")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

register_schemas()

# they import onnxruntime, or an optional package: only when first used
_LAZY = {"InferenceSession": "ort.session", "session_options": "ort.session", "LowerToStandard": "ir_pass"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is not None:
        import importlib

        try:
            return getattr(importlib.import_module(f"onnx_bcast.{module}"), name)
        except ModuleNotFoundError as err:
            if name != "LowerToStandard" or err.name is None or not err.name.startswith("onnx_ir"):
                raise
            return _missing_onnx_ir(err)
    raise AttributeError(f"module 'onnx_bcast' has no attribute {name!r}")


def _missing_onnx_ir(err: ModuleNotFoundError) -> type:
    """Without onnx-ir, ``LowerToStandard`` is a class that says so when made (``from onnx_bcast import *`` works)."""

    class LowerToStandard:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise ImportError("onnx_bcast.LowerToStandard needs onnx-ir, which is not installed: "
                              "pip install 'onnx-bcast[ir]'") from err

    return LowerToStandard


def __dir__() -> list[str]:
    """The public API (``__all__``) and the module's dunders, not the submodules that importing it loads."""
    return sorted(set(__all__) | {name for name in globals() if name.startswith("__")})

__all__ = [
    "DOMAIN",
    "BroadcastError",
    "InferenceSession",
    "LowerToStandard",
    "NotLowerable",
    "VerificationError",
    "convert",
    "broadcast",
    "broadcast_backprop",
    "broadcast_like_v0",
    "broadcast_shape",
    "broadcast_v0",
    "broadcast_v0_backprop",
    "elementwise",
    "elementwise_shape",
    "expand",
    "import_legacy",
    "prepare",
    "save_model",
    "session_options",
    "unbroadcast",
]
