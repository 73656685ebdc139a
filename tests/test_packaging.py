"""Packaging: one version source, a complete ``__all__``, a clean namespace, ``py.typed``, LICENSE and CHANGELOG."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import re
import sys
from pathlib import Path

import pytest

import onnx_bcast

ROOT = Path(__file__).resolve().parent.parent


def _pyproject() -> str:
    return (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_version_is_the_installed_metadata_and_pyprojects() -> None:
    assert onnx_bcast.__version__ == importlib.metadata.version("onnx-bcast")
    declared = re.search(r'^version = "([^"]+)"', _pyproject(), re.M)
    assert declared is not None and declared.group(1) == onnx_bcast.__version__


def test_all_is_complete_and_resolves() -> None:
    assert "LowerToStandard" in onnx_bcast.__all__
    assert len(set(onnx_bcast.__all__)) == len(onnx_bcast.__all__)
    for name in onnx_bcast.__all__:
        assert getattr(onnx_bcast, name) is not None, name
    # every public name the package defines at import time is exported
    public = {name for name, value in vars(onnx_bcast).items()
              if not name.startswith("_") and not isinstance(value, type(sys)) and name != "register_schemas"
              and type(value).__module__ != "__future__"}
    assert public <= set(onnx_bcast.__all__), public - set(onnx_bcast.__all__)


def test_dir_is_the_public_api() -> None:
    listed = dir(onnx_bcast)
    assert set(onnx_bcast.__all__) <= set(listed)
    assert "__version__" in listed
    extra = [name for name in listed if name not in onnx_bcast.__all__ and not name.startswith("__")]
    assert extra == [], extra
    # the submodules stay reachable as attributes, only not listed
    assert onnx_bcast.errors.BroadcastError is onnx_bcast.BroadcastError


def test_py_typed_is_installed_and_declared() -> None:
    assert importlib.resources.files("onnx_bcast").joinpath("py.typed").is_file()
    package_data = _pyproject().split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    assert re.search(r'^"onnx_bcast" = \[.*"py\.typed".*\]', package_data, re.M), package_data


def test_license_and_changelog() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert 'license = { text = "Apache-2.0" }' in _pyproject()
    assert (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").startswith("# Changelog")


def test_readme_links_resolve_inside_the_repository() -> None:
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        assert "shared/" not in text, doc
        for target in re.findall(r"\]\(([^)]+)\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            path = (doc.parent / target.split("#", 1)[0]).resolve()
            assert path.is_relative_to(ROOT) and path.exists(), f"{doc.name}: {target}"


def test_every_subpackage_is_in_the_wheel() -> None:
    """pyproject.toml lists the packages one by one (converters/ is mapped into onnx_bcast): a folder of the package
    missing there works in an editable install and is absent from the wheel (onnx_bcast.importers was)."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")
    config = tomllib.loads(_pyproject())["tool"]["setuptools"]
    listed, dirs = set(config["packages"]), config["package-dir"]
    for init in sorted((ROOT / "onnx_bcast").rglob("__init__.py")):
        if "__pycache__" in init.parts:
            continue
        name = ".".join(init.parent.relative_to(ROOT).parts)
        assert name in listed and dirs.get(name) == init.parent.relative_to(ROOT).as_posix(), name
