"""A script of bench/ imported as a module for the tests that drive it (bench/ is no package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench_script(filename: str) -> ModuleType:
    """``bench/<filename>`` as the module ``onnx_bcast_bench_<stem>`` (registered: dataclasses look it up)."""
    spec = importlib.util.spec_from_file_location(f"onnx_bcast_bench_{Path(filename).stem}", BENCH / filename)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
