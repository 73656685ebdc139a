"""The suite's ``--dist loadgroup`` (tests/conftest.py) keeps an ``xdist_group`` in one worker, on the installed pytest.

A small suite is written to a temporary folder with this conftest, and run by pytest with two workers; each test
logs the worker that ran it. From pytest 9.2 on, xdist alone spreads a group (pytest-dev/pytest-xdist#1386).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")

LOGGING_TEST = '''
import os
import pytest

{mark}
@pytest.mark.parametrize("i", range(8))
def test_{name}(i):
    with open(os.environ["WORKER_LOG"], "a") as log:
        log.write(f"{name} {{os.environ['PYTEST_XDIST_WORKER']}}\\n")
'''


def _workers_by_test(tmp_path: Path) -> dict[str, set[str]]:
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(Path(__file__).with_name("conftest.py"), suite / "conftest.py")
    (suite / "pytest.ini").write_text("[pytest]\n")
    group = '@pytest.mark.xdist_group("shared")'
    for name, mark in (("grouped_a", group), ("grouped_b", group), ("free", "")):
        (suite / f"test_{name}.py").write_text(LOGGING_TEST.format(name=name, mark=mark))
    log = tmp_path / "workers.log"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist",
                           "loadgroup", str(suite)], cwd=suite, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "WORKER_LOG": str(log)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers: dict[str, set[str]] = {}
    for line in log.read_text().splitlines():
        name, worker = line.split()
        workers.setdefault(name, set()).add(worker)
    return workers


def test_a_group_runs_in_one_worker_and_the_rest_spreads(tmp_path: Path) -> None:
    workers = _workers_by_test(tmp_path)
    assert set(workers) == {"grouped_a", "grouped_b", "free"}
    grouped = workers["grouped_a"] | workers["grouped_b"]
    assert len(grouped) == 1, f"the group 'shared' ran in {sorted(grouped)}"
    assert len(set().union(*workers.values())) == 2, workers  # the group does not make the run serial
