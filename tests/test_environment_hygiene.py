"""Importing onnx_bcast, making sessions and running CLI commands leave ``os.environ`` as they found it
(onnxruntime-extensions sets PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python on import, which child processes inherit)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime_extensions", reason="the numpy backend needs onnxruntime-extensions ([ort] extra)")

MODELS = Path(__file__).resolve().parents[1] / "models"

_CHILD = """
import json, os, sys
before = dict(os.environ)
import numpy as np
import onnx_bcast
from onnx_bcast.cli.main import main
model = sys.argv[1]
for backend in ("numpy", "native"):
    session = onnx_bcast.InferenceSession(model, backend=backend)
    session.run(None, {i.name: np.ones([d if isinstance(d, int) else 1 for d in i.shape], np.float32)
                       for i in session.get_inputs()})
main(["run", model, "-q"])
main(["check", model])
after = dict(os.environ)
print(json.dumps({k: [before.get(k), after.get(k)] for k in set(before) | set(after) if before.get(k) != after.get(k)}))
"""


def test_environment_is_left_as_found() -> None:
    """In a fresh process (the import happens once per process): the import, a session per backend, a run, and the
    CLI's run and check commands change no environment variable."""
    model = str(MODELS / "nchw_bias_explicit.onnx")
    env = {k: v for k, v in __import__("os").environ.items() if k != "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"}
    done = subprocess.run([sys.executable, "-c", _CHILD, model], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {}
