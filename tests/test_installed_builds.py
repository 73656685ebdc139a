"""``onnx-bcast --version`` names the distributions actually installed (onnx-weekly, onnxruntime-gpu, a plugin EP's
wheel), from fake dist-info folders on a temporary path: the expected names are the ones written there."""

from __future__ import annotations

import io
import sys
import sysconfig
from contextlib import redirect_stdout
from pathlib import Path

import pytest

import onnx_bcast
from onnx_bcast.cli.main import main
from onnx_bcast.model.installed_builds import runtime_versions


def _dist(root: Path, name: str, version: str, modules: list[str], top_level: bool = True) -> None:
    """A dist-info folder as pip writes it: METADATA, and top_level.txt or only a RECORD (as wheels built without
    setuptools have)."""
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nlong text\n")
    if top_level:
        (info / "top_level.txt").write_text("".join(f"{m}\n" for m in modules))
    record = "".join(f"{m}/__init__.py,sha256=x,1\n" for m in modules)
    (info / "RECORD").write_text(record + f"{info.name}/METADATA,,\n")


def _ort_files(root: Path, package_name: str, version: str) -> None:
    """The onnxruntime package's own note of its build, as every ONNX Runtime wheel writes it."""
    capi = root / "onnxruntime" / "capi"
    capi.mkdir(parents=True, exist_ok=True)
    (root / "onnxruntime" / "__init__.py").write_text("raise ImportError('never imported')\n")
    (capi / "build_and_package_info.py").write_text(f"package_name = '{package_name}'\n__version__ = '{version}'\n"
                                                    "cuda_version = '12.8'\n")


def test_the_gpu_build_and_onnx_weekly_are_named(tmp_path: Path) -> None:
    _dist(tmp_path, "onnxruntime-gpu", "1.31.1", ["onnxruntime"])
    _ort_files(tmp_path, "onnxruntime-gpu", "1.31.1")
    _dist(tmp_path, "onnx-weekly", "1.24.0.dev20261026", ["onnx"], top_level=False)
    _dist(tmp_path, "numpy", "2.4.6", ["numpy"], top_level=False)
    assert runtime_versions([str(tmp_path)]) == [
        "onnx-weekly 1.24.0.dev20261026", "onnxruntime-gpu 1.31.1", "onnxruntime-extensions not installed",
        "numpy 2.4.6", "openvino not installed"]


def test_a_plugin_ep_wheel_is_named_with_the_stock_build(tmp_path: Path) -> None:
    _dist(tmp_path, "onnxruntime", "1.32.0", ["onnxruntime"])
    _dist(tmp_path, "onnxruntime-ep-openvino", "1.8.1", ["onnxruntime_ep_openvino"], top_level=False)
    _dist(tmp_path, "onnxruntime-extensions", "0.15.2", ["onnxruntime_extensions"])
    _dist(tmp_path, "onnx", "1.23.2", ["onnx"])
    assert runtime_versions([str(tmp_path)])[:3] == [
        "onnx 1.23.2", "onnxruntime 1.32.0 with onnxruntime-ep-openvino 1.8.1", "onnxruntime-extensions 0.15.2"]


def test_of_two_builds_over_one_another_the_one_on_disk_comes_first(tmp_path: Path) -> None:
    """pip keeps both dist-info folders when a second build is installed over the first: the files on disk say
    which one ``import onnxruntime`` loads."""
    _dist(tmp_path, "onnxruntime", "1.32.0", ["onnxruntime"])
    _dist(tmp_path, "onnxruntime-gpu", "1.31.1", ["onnxruntime"])
    _ort_files(tmp_path, "onnxruntime_gpu", "1.31.1")
    assert runtime_versions([str(tmp_path)])[1] == (
        "onnxruntime-gpu 1.31.1 (over onnxruntime 1.32.0: one build of onnxruntime overwrote another's files)")
    (tmp_path / "onnxruntime" / "capi" / "build_and_package_info.py").unlink()  # nothing says which: both named
    assert runtime_versions([str(tmp_path)])[1] == (
        "onnxruntime 1.32.0 + onnxruntime-gpu 1.31.1 (several builds of onnxruntime: reinstall one)")


def test_nothing_installed(tmp_path: Path) -> None:
    assert runtime_versions([str(tmp_path)])[:2] == ["onnx not installed", "onnxruntime not installed"]


@pytest.mark.parametrize("onnx_dist", ["onnx-weekly", "onnx"])
def test_the_command_names_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx_dist: str) -> None:
    """``onnx-bcast --version`` with only the fake folders and the standard library on ``sys.path``."""
    _dist(tmp_path, "onnxruntime-gpu", "1.31.1", ["onnxruntime"])
    _ort_files(tmp_path, "onnxruntime-gpu", "1.31.1")
    _dist(tmp_path, onnx_dist, "1.24.0.dev20261026", ["onnx"])
    stdlib = [sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib")]
    monkeypatch.setattr(sys, "path", [str(tmp_path), *stdlib])
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert out.getvalue() == (f"onnx-bcast {onnx_bcast.__version__} ({onnx_dist} 1.24.0.dev20261026, "
                              "onnxruntime-gpu 1.31.1, onnxruntime-extensions not installed, numpy not installed, "
                              "openvino not installed)\n")

