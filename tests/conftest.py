"""pytest-xdist's ``--dist loadgroup`` made to hold on every pytest: the tests of one ``xdist_group`` share a worker.

xdist tells its scheduler a test's group by appending ``@group`` to the test's node id in the worker; from pytest 9.2
on, a node id can no longer be changed that way, and xdist then spreads a group's tests over the workers without a
word (pytest-dev/pytest-xdist#1386). Here each worker writes the groups it collected to a file in a folder the
controller made, and the controller's scheduler reads them. tests/test_xdist_groups.py checks that a group stays
together.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

GROUPS_FOLDER = "onnx_bcast_xdist_groups"  # the key of the folder in each worker's workerinput


def _group_of(item: pytest.Item) -> str | None:
    names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                    for mark in item.iter_markers("xdist_group")})
    return "_".join(names) or None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Controller, once per worker: tell it where to write its groups."""
    config = node.config
    if not hasattr(config, "_onnx_bcast_groups"):
        config._onnx_bcast_groups = tempfile.mkdtemp(prefix="onnx-bcast-xdist-groups-")
    node.workerinput[GROUPS_FOLDER] = config._onnx_bcast_groups


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Worker: node id -> group of every grouped test, written whole before the worker reports its collection."""
    workerinput = getattr(config, "workerinput", None)
    if not workerinput or GROUPS_FOLDER not in workerinput:
        return
    groups = {item.nodeid: group for item in items if (group := _group_of(item))}
    target = Path(workerinput[GROUPS_FOLDER]) / f"{workerinput['workerid']}.json"
    partial = target.with_suffix(".part")
    partial.write_text(json.dumps(groups), encoding="utf-8")
    os.replace(partial, target)


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = getattr(config, "_onnx_bcast_groups", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class GroupFileScheduling(LoadGroupScheduling):
        """xdist's loadgroup, with each test's group read from the workers' files."""

        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                folder = Path(getattr(config, "_onnx_bcast_groups", ""))
                self._groups = {}
                for path in sorted(folder.glob("*.json")) if folder.name else []:
                    self._groups.update(json.loads(path.read_text(encoding="utf-8")))
            return self._groups.get(nodeid) or super()._split_scope(nodeid)

    return GroupFileScheduling(config, log)
