"""ONNX Runtime and onnxruntime-extensions, imported where used: when missing, one line says what to install."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

#: the builds of ONNX Runtime, each with the extra that installs it next to onnxruntime-extensions (pyproject.toml)
BUILD_EXTRAS = {"onnxruntime": "ort", "onnxruntime-gpu": "ort-gpu", "onnxruntime-directml": "ort-directml"}
INSTALL_HINT = ("pip install 'onnx-bcast[ort]' (beside another build of ONNX Runtime, its extra instead: "
                "'onnx-bcast[ort-gpu]' or 'onnx-bcast[ort-directml]'; with the OpenVINO execution provider: "
                "'onnx-bcast[ort-openvino-ep]')")


_NAMES = {"onnxruntime": "ONNX Runtime", "onnxruntime_extensions": "onnxruntime-extensions"}


class MissingRuntime(ModuleNotFoundError):
    """ONNX Runtime (or onnxruntime-extensions) is not installed: running a model needs it; converting does not."""


def _imported(module: str, needs: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is None or err.name.split(".")[0] != module.split(".")[0]:
            raise  # the package is there and something it imports is not: its own error says more
        raise MissingRuntime(f"{needs} needs {_NAMES[module]}, which is not installed: {INSTALL_HINT}",
                             name=err.name) from err


def onnxruntime(needs: str = "running a model") -> ModuleType:
    """The ``onnxruntime`` module (whichever build provides it)."""
    return _imported("onnxruntime", needs)


#: what importing onnxruntime-extensions writes into os.environ (its cvt module: pure-Python protobuf), which every
#: process started afterwards would inherit (3x slower, and onnxifier fails on some models there)
_ENVIRONMENT_SET_BY_EXTENSIONS = ("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION",)


def extensions(needs: str = "running a model") -> ModuleType:
    """The ``onnxruntime_extensions`` module, and ``onnxruntime`` (which it loads into); ``os.environ`` is left as
    it was before the import (this process's protobuf was chosen when onnx was imported)."""
    onnxruntime(needs)
    before = {name: os.environ.get(name) for name in _ENVIRONMENT_SET_BY_EXTENSIONS}
    try:
        return _imported("onnxruntime_extensions", needs)
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
