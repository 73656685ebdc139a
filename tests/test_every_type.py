"""Every ONNX tensor type through every op family on every path, in child processes: no run may end by a signal.

Each item (path, family, type) must end with correct values (bit for bit against an independent expectation:
``np.broadcast_to`` for the broadcasts, ``onnx.reference`` on the standard ``Add``), or a clean refusal (a
``BroadcastError``, or an onnxruntime error at session creation or at run). One child per path runs all its items
(tests/every_type_child.py) and reports each as it starts and ends; a child that dies is restarted after the item it
died on, which is recorded as died, with the signal and its stderr. ``Add`` of a type the standard op does not
define has no expectation: when it runs, it is "unchecked". The table of outcomes is printed (``pytest -s``) and
written to ``SUMMARY_PATH``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto

from tests.every_type_child import FAMILIES, ITEMS, PATHS, STDERR_MARK, TYPES, compare

ROOT = Path(__file__).resolve().parents[1]
SUMMARY_PATH = Path(tempfile.gettempdir()) / "onnx_bcast_every_type.txt"
DEADLINE_S = 150.0  # per path, restarts included; a hung item is killed and recorded as died
CLEAN_KINDS = {"BroadcastError", "ort-session", "ort-run"}
# all_results() runs a child per path for the whole module, once per process: one pytest-xdist worker runs the module;
# slow: that batch took 26 s (docs/testing.md)
pytestmark = [pytest.mark.xdist_group("every_type"), pytest.mark.slow]

# (path, family) -> reason, for what fails today: strict xfails, so that a fix shows as XPASS(strict) = failure.
# None today: since e240426 a type the Python-op bridge cannot carry is refused at session creation.
DIES_TODAY: dict[tuple[str, str], str] = {}
WRONG_TODAY: dict[tuple[str, str], str] = {}
UNCLEAN_TODAY: dict[tuple[str, str], str] = {}


# --------------------------------------------------------------------------------------------- running children


def _died(returncode: int | None, hung: bool) -> str:
    if hung:
        return "died: hung (killed)"
    if returncode is not None and returncode < 0:
        try:
            return f"died: {signal.Signals(-returncode).name}"
        except ValueError:
            return f"died: signal {-returncode}"
    return f"died: exit status {returncode}"


def _stderr_of(err: str, index: int) -> str:
    """What the child wrote to stderr while it ran item ``index``: its last lines, joined."""
    tail = err.split(f"{STDERR_MARK} {index}\n")[-1]
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return " | ".join(lines[-4:])[-600:]


def run_path(path: str, items: list[tuple[str, str]] = ITEMS, extra: tuple[str, ...] = (),
             deadline_s: float = DEADLINE_S) -> tuple[dict[int, dict[str, Any]], int]:
    """Index -> outcome for every item of ``path``, and how many children it took."""
    results: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + deadline_s
    start, children = 0, 0
    while start < len(items):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            results.update({i: {"outcome": "not run", "message": f"deadline of {deadline_s} s"}
                            for i in range(start, len(items))})
            break
        children += 1
        env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}  # stderr: the native message
        proc = subprocess.Popen([sys.executable, "-m", "tests.every_type_child", path, str(start), *extra], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            out, err = proc.communicate(timeout=remaining)
            hung = False
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            hung = True
        running: int | None = None
        for line in out.splitlines():
            try:
                record = json.loads(line)
            except ValueError:  # a library's own output on stdout
                continue
            if record.get("event") == "begin":
                running = record["i"]
            elif record.get("event") == "end":
                results[record["i"]] = {k: v for k, v in record.items() if k not in ("event", "i")}
                running = None
        if running is None:
            if proc.returncode == 0 and not hung:
                break
            # the child ended between items (e.g. while importing): nothing it could go on with
            message = f"{_died(proc.returncode, hung)} outside an item: {err.strip()[-600:]}"
            first = max(results, default=-1) + 1
            results.update({i: {"outcome": "not run", "message": message} for i in range(first, len(items))})
            break
        results[running] = {"outcome": "died", "message": _died(proc.returncode, hung),
                            "stderr": _stderr_of(err, running)}
        start = running + 1
    return results, children


@functools.cache
def all_results() -> dict[tuple[str, str, str], dict[str, Any]]:
    """(path, family, type) -> outcome; prints and writes the summary table once."""
    began = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(PATHS)) as pool:
        runs = dict(zip(PATHS, pool.map(run_path, PATHS), strict=True))
    elapsed = time.monotonic() - began
    results = {(path, *ITEMS[i]): outcome for path, (by_index, _) in runs.items() for i, outcome in by_index.items()}
    children = {path: n for path, (_, n) in runs.items()}
    text = summary(results, elapsed, children)
    partial = SUMMARY_PATH.with_name(f"{SUMMARY_PATH.name}.{os.getpid()}")  # another run may write it at once
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, SUMMARY_PATH)
    print("\n" + text)
    return results


# --------------------------------------------------------------------------------------------- the summary


def cell(outcome: dict[str, Any]) -> str:
    kind = outcome["outcome"]
    if kind == "ok":
        return "ok(raw)" if "raw bytes" in outcome.get("how", "") else "ok"
    if kind == "refused":
        return f"refused({outcome['kind']})"
    if kind == "died":
        return outcome["message"].replace("died: ", "DIED:")
    return kind.upper() if kind == "wrong" else kind


def summary(results: dict[tuple[str, str, str], dict[str, Any]], elapsed: float, children: dict[str, int]) -> str:
    lines = [f"onnx-bcast: every ONNX tensor type x op family x path ({len(results)} runs, {elapsed:.1f} s; "
             f"child processes per path: {children})",
             "paths: " + "; ".join(f"{k} = {v}" for k, v in PATHS.items()),
             "ok = bit for bit; ok(raw) = the output has no numpy type in ONNX Runtime, its bytes read from the "
             "OrtValue; unchecked = ran, no standard op defines the type", ""]
    width = max(len(cell(o)) for o in results.values()) + 2
    for family in FAMILIES:
        lines.append(f"{family:<20}" + "".join(f"{path:<{width}}" for path in PATHS))
        for name, _ in TYPES:
            lines.append(f"  {name:<18}" + "".join(f"{cell(results[(path, family, name)]):<{width}}"
                                                   for path in PATHS))
        lines.append("")
    lines.append("Messages (first line), by path and family:")
    for path in PATHS:
        for family in FAMILIES:
            groups: dict[str, list[str]] = {}
            for name, _ in TYPES:
                outcome = results[(path, family, name)]
                if outcome["outcome"] == "ok":
                    continue
                text = outcome["message"]
                if outcome["outcome"] == "refused":
                    text = f"{outcome['kind']} at {outcome['stage']}: {text}"
                elif outcome["outcome"] == "died":
                    text = f"{text}; stderr: {outcome.get('stderr', '')}"
                text = re.sub(rf"(?<![\w.]){re.escape(name)}(?![\w.])", "<T>", text)  # one line for all types
                groups.setdefault(f"{outcome['outcome']}: {text}", []).append(name)
            for text, names in groups.items():
                lines.append(f"  {path} / {family} [{', '.join(names)}]")
                lines.append(f"      {text}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------- tests


def _params(known: dict[tuple[str, str], str]) -> list[Any]:
    return [pytest.param(path, family, id=f"{path}-{family}",
                         marks=[pytest.mark.xfail(strict=True, reason=known[(path, family)])]
                         if (path, family) in known else [])
            for path in PATHS for family in FAMILIES]


def _of(path: str, family: str, *outcomes: str) -> dict[str, dict[str, Any]]:
    results = all_results()
    return {name: results[(path, family, name)] for name, _ in TYPES
            if results[(path, family, name)]["outcome"] in outcomes}


@pytest.mark.parametrize(("path", "family"), _params(DIES_TODAY))
def test_no_type_kills_the_process(path: str, family: str) -> None:
    died = _of(path, family, "died", "not run")
    assert not died, "\n".join(f"{name}: {o['message']}; stderr: {o.get('stderr', '')}" for name, o in died.items())


@pytest.mark.parametrize(("path", "family"), _params(WRONG_TODAY))
def test_no_type_returns_wrong_values(path: str, family: str) -> None:
    wrong = _of(path, family, "wrong")
    assert not wrong, "\n".join(f"{name}: {o['message']}" for name, o in wrong.items())


@pytest.mark.parametrize(("path", "family"), _params(UNCLEAN_TODAY))
def test_every_refusal_is_clean(path: str, family: str) -> None:
    """A refusal is a BroadcastError or an onnxruntime error at session creation or at run, nothing else."""
    unclean = {name: o for name, o in _of(path, family, "refused").items() if o["kind"] not in CLEAN_KINDS}
    assert not unclean, "\n".join(f"{name}: {o['kind']} at {o['stage']}: {o['message']}" for name, o in unclean.items())


def test_every_onnx_type_ran_on_every_path() -> None:
    names = {name.lower() for name, value in TensorProto.DataType.items() if value != TensorProto.UNDEFINED}
    assert {name for name, _ in TYPES} == names
    assert set(all_results()) == {(path, family, name) for path in PATHS for family, name in ITEMS}


def test_the_plain_types_run_through_the_session() -> None:
    """The harness reaches the kernels: float32 gives correct values through every family of InferenceSession."""
    assert all(all_results()[("session", family, "float")]["outcome"] == "ok" for family in FAMILIES)


def test_a_death_is_recorded_and_the_next_item_runs() -> None:
    """The restart logic itself: a child that dies by a signal on some items (no onnx_bcast involved)."""
    items = [(family, name) for family in FAMILIES[:2] for name in ("float", "int4", "bool")]
    results, children = run_path("selftest", items, extra=("float:SIGSEGV,int4:SIGABRT", json.dumps(items)),
                                 deadline_s=60)
    assert children == 5  # a first child, then one after each of the four deaths
    died = {items[i]: o["message"] for i, o in results.items() if o["outcome"] == "died"}
    assert died == {(f, "float"): "died: SIGSEGV" for f in FAMILIES[:2]} | {(f, "int4"): "died: SIGABRT"
                                                                             for f in FAMILIES[:2]}
    assert all(results[i]["outcome"] == "ok" for i, item in enumerate(items) if item[1] == "bool")
    assert "dying by SIGABRT on Broadcast-numpy int4" in results[1]["stderr"]


@pytest.mark.parametrize("elem", [TensorProto.FLOAT, TensorProto.STRING, TensorProto.BFLOAT16,
                                  TensorProto.FLOAT8E4M3FN, TensorProto.INT4])
def test_a_wrong_value_is_caught(elem: int) -> None:
    """The value check: the same values in another order fail, as numpy arrays and as raw OrtValue bytes."""
    from tests.every_type_child import sample

    x = sample(elem)
    expected = np.broadcast_to(x, (2, 3))
    swapped = np.broadcast_to(x[::-1], (2, 3))
    assert compare(np.array(expected), expected, elem) is None
    assert compare(np.array(swapped), expected, elem) is not None
    if elem != TensorProto.STRING:
        raw = onnx.numpy_helper.from_array(np.ascontiguousarray(swapped)).raw_data
        good = onnx.numpy_helper.from_array(np.ascontiguousarray(expected)).raw_data
        assert compare((good, [2, 3], elem), expected, elem) is None
        assert compare((raw, [2, 3], elem), expected, elem) is not None
