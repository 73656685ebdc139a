"""ONNX's backend node test cases through OpenVINO's ONNX frontend, IR, and two IR-to-ONNX routes, run in plain ORT.

Every case of ``onnx.backend.test.case.node.collect_testcases()`` (model, inputs, ONNX's expected outputs) is saved
as .onnx, read by ``openvino.Core().read_model`` (what OpenVINO refuses is counted as such), saved as IR
(``compress_to_fp16=False``), converted by ``onnx_bcast.onnxifier.ir_to_onnx`` ("IR route") and by onnxifier alone
(``onnxifier.convert``, as ``bench/onnxifier_alone.py``), and each written model runs in plain ONNX Runtime on the
case's inputs. Each route's verdict:

- ``equal``: same outputs as ONNX's expected ones, same dtypes and shapes; integers, bools and strings exactly,
  floats within ``rtol=max(case.rtol, 1e-3)``, ``atol=max(case.atol, 1e-5)`` (ONNX's backend runner uses the case's
  rtol 1e-3), float16/bfloat16 within ``rtol=1e-2, atol=1e-3``;
- ``refused``: the conversion raised (``named`` when its message names one of the IR's op types);
- ``ort refuses``: a model was written, and ONNX Runtime's load or run fails;
- ``wrong``: it runs, and outputs differ (count, dtype, shape or values): silently wrong;
- ``not compared``: values ORT's Python API cannot carry (float8, 4-bit types);
- ``crashed`` / ``timeout``: the process running the step died / hung (it is restarted; the run goes on).

OpenVINO's CPU plugin also runs the IR (``openvino cpu``, for information: it tells a wrong IR from a wrong route).
Each case runs in one long-lived child process (restarted after a crash), so a case that kills the process is counted
instead of ending the run (none did with openvino 2026.4.1, onnxifier 2.0.3 and onnxruntime 1.32.0: the child costs
one process start). Every case's record (IR op types with versions, written ONNX op types, errors, largest
differences, seconds per step) goes to ``--json``; ``--groups`` prints each route's failures grouped (the op ORT
names and why, the kind of difference and the IR's ops), ``--from-json`` reports on an earlier run without running.
The whole run takes about 25 minutes on one loaded core.

    nice .venv/bin/python bench/onnx_node_cases.py [--only REGEX] [--list] [--groups] [--json OUT.json]
    .venv/bin/python bench/onnx_node_cases.py --from-json OUT.json --groups
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from node_case_run import NodeCase, node_case, run_cases, verdict


def collect(pattern: str | None = None) -> list[NodeCase]:
    """ONNX's node test cases whose name matches ``pattern`` (a regular expression searched in the name)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some case modules warn about overflows while exporting
        cases = collect_testcases(None)
    return [node_case(case) for case in cases if not pattern or re.search(pattern, case.name)]


# ---- report ------------------------------------------------------------------------------------------------------

def _line(record: dict[str, Any]) -> str:
    if record.get("openvino") != "reads":
        return f"{record['name']}: openvino {record.get('openvino')} ({record.get('detail', '')[:120]})"
    parts = []
    for step in record["steps"][1:]:
        result = record.get(step)
        text = verdict(result)
        if result and result.get("detail") and text != "equal":
            text += f" ({result['detail'][:300]})"
        parts.append(f"{step}: {text}")
    return f"{record['name']} [{' '.join(record.get('ir_ops', []))}]: " + "; ".join(parts)


def summary(records: list[dict[str, Any]]) -> list[str]:
    """Count lines: cases, OpenVINO's refusals, then each route's verdicts."""
    refused = sum(r.get("openvino") != "reads" for r in records)
    lines = [f"{len(records)} cases; OpenVINO refuses {refused}, reads {len(records) - refused}"]
    steps = next((r["steps"][1:] for r in records if "steps" in r), [])
    for step in steps:
        counts = Counter(verdict(r.get(step)) for r in records if r.get("openvino") == "reads")
        order = ("equal", "refused named", "refused unnamed", "refused", "ort refuses", "wrong", "not compared",
                 "crashed", "timeout", "not run")
        lines.append(f"{step}: " + ", ".join(f"{counts[k]} {k}" for k in order if counts[k]))
        agree = Counter(r[step]["openvino cpu agrees"] for r in records
                        if isinstance(r.get(step), dict) and "openvino cpu agrees" in r[step])
        if agree:
            lines.append(f"  of the wrong: OpenVINO's CPU plugin computes the same from the IR in {agree[True]}, "
                         f"other values in {agree[False]}")
    return lines


_ORT_TYPE_ERROR = re.compile(r"Type Error: Type '([^']+)' of input parameter \([^)]*\) of operator \((\w+)\)")
_ORT_NODE = (re.compile(r'In Node, \("[^"]*", (\w+), "[^"]*", -?\d+\)'), re.compile(r"Op \((\w+)\)"),
             re.compile(r"running (\w+) node"), re.compile(r"implementation for (\w+\(\d+\))"))


def failure_group(record: dict[str, Any], step: str) -> str:
    """What a route's failure on a case has in common with others: the op ORT names and why, the kind of difference
    and the IR's ops, or the error's type and start."""
    result = record[step]
    status, detail = verdict(result), result.get("detail", "")
    if result.get("nonstandard_ops"):
        return f"{status}: written as non-ONNX op {', '.join(result['nonstandard_ops'])}"
    if status == "wrong":
        what = detail.split(": ", 1)[-1]
        kind = "output count" if "outputs, expected" in detail else what if what.startswith("dtype") else \
            what.split(" ")[0]
        return f"wrong: {kind} [{' '.join(record.get('ir_ops', []))}]"
    if status == "ort refuses":
        typed = _ORT_TYPE_ERROR.search(detail)
        if typed:
            return f"ort refuses: ONNX {typed.group(2)} on {typed.group(1)}"
        for pattern in _ORT_NODE:
            found = pattern.search(detail)
            if found:
                why = re.sub(r".*(ShapeInferenceError|Status Message:|INVALID_GRAPH :)", r"\1", detail)[:90]
                return f"ort refuses ({result.get('stage')}): ONNX {found.group(1)}: {why}"
        return f"ort refuses ({result.get('stage')}): {detail[:90]}"
    return f"{status}: {re.sub(r'[_/]?[0-9]{3,}', 'N', detail)[:100]}"


def groups(records: list[dict[str, Any]], step: str) -> list[str]:
    """A route's results other than equal and named refusals, grouped by ``failure_group``, largest first."""
    found: dict[str, list[str]] = {}
    for record in records:
        if record.get("openvino") == "reads" and verdict(record.get(step)) not in ("equal", "refused named"):
            found.setdefault(failure_group(record, step), []).append(record["name"].removeprefix("test_"))
    lines = []
    for key, names in sorted(found.items(), key=lambda item: (-len(item[1]), item[0])):
        shown = ", ".join(names[:6]) + (f", ... ({len(names) - 6} more)" if len(names) > 6 else "")
        lines.append(f"  {len(names):4d}  {key}\n        {shown}")
    return lines


def _versions() -> str:
    from importlib.metadata import version

    return ", ".join(f"{name} {version(name)}" for name in ("onnx", "openvino", "onnxifier", "onnxruntime"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", metavar="REGEX", help="only the cases whose name matches (re.search)")
    parser.add_argument("--list", action="store_true", help="one line per case")
    parser.add_argument("--json", metavar="OUT", type=Path, help="write every case's record here")
    parser.add_argument("--in-process", action="store_true", help="no child process (a crash ends the run)")
    parser.add_argument("--groups", action="store_true", help="each route's failures, grouped")
    parser.add_argument("--from-json", metavar="IN", type=Path, help="report on the records of an earlier --json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    started = time.monotonic()
    if args.json and args.from_json and args.json.resolve() == args.from_json.resolve():
        parser.error(f"--json {args.json} would write over the file --from-json reads")
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        versions, records = saved["versions"], [r for r in saved["records"]
                                                if not args.only or re.search(args.only, r["name"])]
        for record in records if args.list else ():
            print(_line(record))
    else:
        versions, records = _versions(), list(_run(args))
    if args.json:
        staged = args.json.with_name(args.json.name + ".partial")
        staged.write_text(json.dumps({"versions": versions, "records": records}, indent=1))
        os.replace(staged, args.json)
    print(versions)
    for line in summary(records):
        print(line)
    steps = next((r["steps"][1:-1] for r in records if "steps" in r), [])
    for step in steps if args.groups else ():
        print(f"{step}, other than equal and refused naming an op:")
        print("\n".join(groups(records, step)))
    print(f"{time.monotonic() - started:.0f} s")
    return 0


def _run(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    cases = collect(args.only)
    if not cases:
        raise SystemExit(f"no case matches {args.only!r}")
    with tempfile.TemporaryDirectory(prefix="onnx_node_cases_") as folder:
        for record in run_cases(cases, Path(folder), isolate=not args.in_process):
            if args.list:
                print(_line(record), flush=True)
            yield record


if __name__ == "__main__":
    sys.exit(main())
