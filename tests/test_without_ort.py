"""Without ONNX Runtime (a converting-only install): import and convert work, running says in one line what to install.

Each test runs in a subprocess whose import system refuses ``onnxruntime`` and ``onnxruntime_extensions`` as if they
were not installed (``.ci/run`` also checks this in a real virtual environment without them).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "expand_modes.onnx"
BLOCKER = """
import importlib.abc, sys
class _NoRuntime(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("onnxruntime", "onnxruntime_extensions"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NoRuntime())
"""
HINT = "pip install 'onnx-bcast[ort]'"


def _python(code: str, *, blocked: bool, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", (BLOCKER if blocked else "") + code], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("blocked", [False, True], ids=["ort-installed", "ort-missing"])
def test_import_and_convert_never_import_onnxruntime(blocked: bool, tmp_path: Path) -> None:
    out = tmp_path / "converted.onnx"
    done = _python(f"import sys, onnx_bcast; onnx_bcast.save_model(onnx_bcast.convert({str(MODEL)!r}), {str(out)!r});"
                   " print(sorted(m for m in sys.modules if m.startswith('onnxruntime')))", blocked=blocked)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    converted = onnx.load(out)
    onnx.checker.check_model(converted, full_check=True)
    assert not any(node.domain == "onnx_bcast" for node in converted.graph.node)
    # the result runs in plain ONNX Runtime (here, in this process), with numpy's answers for the model's four nodes
    x = np.arange(3, dtype=np.float32).reshape(3, 1)
    expected = [np.broadcast_to(x, (2, 3, 4)), np.broadcast_to(x, (2, 3, 4)),  # bidirectional {2,1,4}; numpy
                np.broadcast_to(x[None], (4, 3, 2)), np.broadcast_to(x[None], (2, 3, 5))]  # explicit [1,2]; pdpd 1
    session = ort.InferenceSession(out.read_bytes(), providers=["CPUExecutionProvider"])
    for got, want in zip(session.run(None, {"x": x}), expected, strict=True):
        np.testing.assert_array_equal(got, want, strict=True)


@pytest.mark.parametrize("command", [["run", str(MODEL)], ["demo"], ["run", str(MODEL), "--backend", "native"],
                                     ["convert", str(MODEL), "-o", "{out}", "--verify"]])
def test_running_says_in_one_line_what_to_install(command: list[str], tmp_path: Path) -> None:
    argv = [arg.replace("{out}", str(tmp_path / "x.onnx")) for arg in command]
    done = _python(f"import sys; from onnx_bcast.cli.main import main; sys.exit(main({argv!r}))", blocked=True)
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr  # no traceback
    assert lines[0].startswith(f"onnx-bcast {argv[0]}: ") and "needs ONNX Runtime, which is not installed" in lines[0]
    assert HINT in lines[0] and "'onnx-bcast[ort-gpu]'" in lines[0]


def test_the_api_says_what_to_install() -> None:
    done = _python("import onnx_bcast\ntry:\n    onnx_bcast.InferenceSession\nexcept ImportError as err:\n"
                   "    print(type(err).__mro__[1].__name__, err.name, err)", blocked=True)
    assert done.returncode == 0, done.stderr
    kind, name, message = done.stdout.strip().split(" ", 2)
    assert (kind, name) == ("ModuleNotFoundError", "onnxruntime")
    assert HINT in message


def test_what_a_converting_only_install_assumes_is_what_the_oldest_supported_runtime_loads() -> None:
    """Without ONNX Runtime, conversion targets what the oldest supported onnxruntime loads: the version is
    pyproject.toml's minimum, and where that version is installed (CI's minimum run) its limits are the ones assumed."""
    import tomllib

    from onnx_bcast.model import runtime_limits

    ort_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["ort"]
    (minimum,) = [r.split(">=")[1].split(",")[0] for r in ort_extra if r.startswith("onnxruntime>=")]
    assert minimum.rsplit(".", 1)[0] == runtime_limits.OLDEST_ORT, minimum
    if not ort.__version__.startswith(runtime_limits.OLDEST_ORT + "."):
        pytest.skip(f"onnxruntime {ort.__version__} is not the oldest supported ({runtime_limits.OLDEST_ORT}): "
                    "the run at the declared minimums compares the limits")
    assert (runtime_limits.max_ir_version(), runtime_limits.max_opset()) == \
        (runtime_limits.OLDEST_ORT_IR_VERSION, runtime_limits.OLDEST_ORT_OPSET)
