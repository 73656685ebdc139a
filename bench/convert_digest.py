"""A digest of what the lowering pass writes, to show that a change (a speed-up, say) changes no converted byte.

Each item is a model converted three ways (``convert``, ``convert(guards=False)``, ``prepare``); its digest is the
SHA-256 of the result's bytes, or the error's text. The models: the bundled ones; every case of the shared case
table (tests/case_table.py) with static shapes and with its shape inputs fed at run time; models holding every
case twice (so that alike nodes meet: facts shared, rewrites replayed), per (op, mode) and all valid ones together;
the conversion benchmark's models, smaller. Run it on one commit with ``--out``, on another with ``--compare``;
``--plain`` turns the engine's speed-ups off (tests/test_speedups.py compares both ways on every model).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import onnx
from onnx import helper

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_convert import chain_model, conv_bias_model, wide_model  # noqa: E402

from onnx_bcast.converters import BARE, STANDARD  # noqa: E402
from onnx_bcast.lowering.engine import lower  # noqa: E402
from onnx_bcast.lowering.rules import RuleSet  # noqa: E402
from onnx_bcast.ort.rule_set import ort_rule_set  # noqa: E402
from tests.case_table import CASES  # noqa: E402
from tests.test_case_table import case_model  # noqa: E402

# what ``convert``, ``convert(guards=False)`` and ``prepare`` run
FORMS: dict[str, Callable[[], RuleSet]] = {
    "convert": lambda: STANDARD, "bare": lambda: BARE, "prepare": lambda: ort_rule_set(False, None)}


def twice(cases: list, runtime: bool = False) -> onnx.ModelProto:
    """Every case's node twice under other names, each output read by an Identity (so that it can be hidden)."""
    nodes, inputs, outputs, inits = [], [], [], []
    for k in range(2):
        for i, case in enumerate(cases):
            graph, prefix = case_model(case, runtime).graph, f"c{k}_{i}_"
            for node in graph.node:
                ours = copy.deepcopy(node)
                ours.name = prefix + node.name
                ours.input[:] = [prefix + x if x else x for x in node.input]
                ours.output[:] = [prefix + "o_" + x for x in node.output]
                nodes += [ours, *(helper.make_node("Identity", [prefix + "o_" + x], [prefix + x]) for x in node.output)]
            for group, into in ((graph.input, inputs), (graph.output, outputs), (graph.initializer, inits)):
                for item in group:
                    into.append(copy.deepcopy(item))
                    into[-1].name = prefix + item.name
    graph = helper.make_graph(nodes, "twice", inputs, outputs, initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                             ir_version=10)


def models() -> Iterator[tuple[str, onnx.ModelProto]]:
    for path in sorted((ROOT / "models").glob("*.onnx")):
        yield path.stem, onnx.load(path)
    for case in CASES:
        yield f"case/{case.name}", case_model(case)
        if len(case.inputs) > 1:
            yield f"case-runtime/{case.name}", case_model(case, True)
    valid = [c for c in CASES if c.valid]
    yield "twice/valid", twice(valid)
    yield "twice/valid-runtime", twice([c for c in valid if len(c.inputs) > 1], runtime=True)
    for op, mode in sorted({(c.op, c.mode) for c in CASES}):
        yield f"twice/{op}-{mode}", twice([c for c in CASES if (c.op, c.mode) == (op, mode)])
    yield "wide", wide_model(500)
    yield "chain", chain_model(300)
    yield "conv-bias", conv_bias_model(200)


def digests(speedups: bool = True, every: int = 1) -> dict[str, str]:
    """The digest of each conversion (every ``every``-th model), the engine's speed-ups on or off."""
    out = {}
    for index, (name, model) in enumerate(models()):
        if index % every:
            continue
        for form, rule_set in FORMS.items():
            try:
                lowered = lower(model, rule_set(), speedups=speedups).model
                out[f"{name}:{form}"] = hashlib.sha256(lowered.SerializeToString(deterministic=True)).hexdigest()
            except Exception as err:  # noqa: BLE001 - an error is an outcome too: its text is compared
                out[f"{name}:{form}"] = f"{type(err).__name__}: {err}"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="Exit status: 1 when --compare finds a difference.")
    parser.add_argument("--out", type=Path, help="write the digests here (JSON)")
    parser.add_argument("--compare", type=Path, help="compare with digests written before (JSON)")
    parser.add_argument("--plain", action="store_true", help="the engine's speed-ups off (lower(speedups=False))")
    args = parser.parse_args(argv)
    found = digests(speedups=not args.plain)
    print(f"{len(found)} conversions, {sum(1 for v in found.values() if ' ' in v)} of them errors")
    if args.out:
        args.out.write_text(json.dumps(found, indent=0, sort_keys=True))
    if args.compare:
        before = json.loads(args.compare.read_text())
        changed = sorted(k for k in before.keys() | found.keys() if before.get(k) != found.get(k))
        for key in changed[:20]:
            print(f"changed: {key}\n  before: {before.get(key, '-')[:200]}\n  now:    {found.get(key, '-')[:200]}")
        print(f"{len(changed)} changed" if changed else "the same digest")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
