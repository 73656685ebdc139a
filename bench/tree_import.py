"""Make ``import onnx_bcast`` load one source tree's code, with the package layout its pyproject.toml declares.

``pyproject.toml`` maps ``onnx_bcast.converters`` to ``converters/`` and ``onnx_bcast.models`` to ``models/``, so a
plain ``PYTHONPATH`` is not enough, and an editable install of another checkout (a ``__editable__`` finder on
``sys.meta_path``) would win for those packages. ``install(tree)`` removes such finders and puts first a finder
that maps each package of ``[tool.setuptools.package-dir]`` to its folder in ``tree``; the modules inside a
package are then found through its ``__path__`` as usual.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

PACKAGE = "onnx_bcast"


def package_dirs(tree: Path) -> dict[str, Path]:
    """The folder of each package of ``tree`` (its pyproject's package-dir, else ``tree/onnx_bcast``)."""
    text = (tree / "pyproject.toml").read_text(encoding="utf-8")
    section = re.search(r"^\[tool\.setuptools\.package-dir\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
    declared = re.findall(r'^"([\w.]+)"\s*=\s*"([^"]*)"', section.group(1), re.M) if section else []
    dirs = {name: tree / folder for name, folder in declared if name.split(".")[0] == PACKAGE}
    dirs.setdefault(PACKAGE, tree / PACKAGE)
    return dirs


class TreeFinder(importlib.abc.MetaPathFinder):
    """Finds the packages of one tree at the folders its pyproject.toml maps them to."""

    def __init__(self, dirs: dict[str, Path]) -> None:
        self.dirs = dirs

    def find_spec(self, fullname: str, path: object = None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        folder = self.dirs.get(fullname)
        if folder is None or not (folder / "__init__.py").is_file():
            return None
        return importlib.util.spec_from_file_location(fullname, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])


def install(tree: Path) -> None:
    """From now on, this process imports onnx_bcast from ``tree`` (call before any onnx_bcast import)."""
    if any(name == PACKAGE or name.startswith(PACKAGE + ".") for name in sys.modules):
        raise RuntimeError(f"{PACKAGE} is already imported: install the tree's finder first")
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("__editable__")]
    sys.meta_path.insert(0, TreeFinder(package_dirs(tree)))
