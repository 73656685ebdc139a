"""onnx-bcast: run or convert ONNX models with explicit (OpenVINO, nGraph, PaddlePaddle) broadcasts."""

from __future__ import annotations

from onnx_bcast.convert import convert
from onnx_bcast.errors import BroadcastError
from onnx_bcast.ops.broadcast import broadcast, broadcast_shape, expand
from onnx_bcast.ops.broadcast_v0 import broadcast_like_v0, broadcast_v0
from onnx_bcast.ops.elementwise import elementwise, elementwise_shape
from onnx_bcast.prepare import prepare
from onnx_bcast.schemas import register as register_schemas

DOMAIN = "onnx_bcast"
__version__ = "0.1.0"

register_schemas()

_LAZY = {"InferenceSession", "session_options"}  # they import onnxruntime: only when first used


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from onnx_bcast import session

        return getattr(session, name)
    raise AttributeError(f"module 'onnx_bcast' has no attribute {name!r}")

__all__ = [
    "DOMAIN",
    "BroadcastError",
    "InferenceSession",
    "convert",
    "broadcast",
    "broadcast_like_v0",
    "broadcast_shape",
    "broadcast_v0",
    "elementwise",
    "elementwise_shape",
    "expand",
    "prepare",
    "session_options",
]
