"""onnx-bcast: run or convert ONNX models with explicit (OpenVINO, nGraph, PaddlePaddle) broadcasts."""

from __future__ import annotations

from onnx_bcast.convert import convert
from onnx_bcast.errors import BroadcastError
from onnx_bcast.ops.backprop import broadcast_backprop, broadcast_v0_backprop, unbroadcast
from onnx_bcast.ops.broadcast import broadcast, broadcast_shape, expand
from onnx_bcast.ops.broadcast_v0 import broadcast_like_v0, broadcast_v0
from onnx_bcast.ops.elementwise import elementwise, elementwise_shape
from onnx_bcast.prepare import prepare
from onnx_bcast.schemas import register as register_schemas

DOMAIN = "onnx_bcast"
__version__ = "0.1.0"

register_schemas()

# they import onnxruntime, or an optional package: only when first used
_LAZY = {"InferenceSession": "session", "session_options": "session", "LowerToStandard": "ir_pass"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is not None:
        import importlib

        return getattr(importlib.import_module(f"onnx_bcast.{module}"), name)
    raise AttributeError(f"module 'onnx_bcast' has no attribute {name!r}")

__all__ = [
    "DOMAIN",
    "BroadcastError",
    "InferenceSession",
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
    "prepare",
    "session_options",
    "unbroadcast",
]
