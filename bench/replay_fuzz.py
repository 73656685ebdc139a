"""Seeded random alike nodes: replayed rewrites (onnx_bcast/lowering/fast/replay.py) equal running each rule.

Each batch holds fuzz cases (bench/fuzz.py's generators) three times each, under other names, some unnamed; the
valid ones share a model, each invalid one has its own. About half of the broadcasts are read by an ``Add`` with a
random small shape, so that Expand elision answers differently for alike nodes. Every model is converted three
ways (``convert``, ``convert(guards=False)``, ``prepare``) with the engine's speed-ups on and off; the bytes, or
the error texts, must be equal. tests/test_speedups.py runs a few batches in CI.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz  # noqa: E402
from convert_digest import FORMS  # noqa: E402

from onnx_bcast.lowering.engine import lower  # noqa: E402
from onnx_bcast.lowering.fast import replay  # noqa: E402


def alike_model(cases: list[fuzz.Case], rng: np.random.Generator) -> onnx.ModelProto:
    """Each case's static node three times, each read by an Identity or (a broadcast, half the time) an Add."""
    nodes, inits, inputs, outputs, k = [], [], [], [], 0
    for case in cases:
        family = fuzz.FAMILIES[case.family]
        for _ in range(3):
            node, node_inits, feeds = family.static_node(case, k)
            if rng.random() < 0.4:
                node.name = ""
            nodes.append(node)
            inits += node_inits
            inputs += [fuzz.value_info(name, value.dtype, value.shape) for name, value in feeds.items()]
            out = node.output[0]
            if family.name != "elementwise" and rng.random() < 0.5:
                shape = tuple(int(rng.choice([1, 2, 3])) for _ in range(int(rng.integers(0, 4))))
                inputs.append(fuzz.value_info(f"z{k}", case.data.dtype, shape))
                nodes.append(helper.make_node("Add", [f"z{k}", out], [f"s{k}"]))
                outputs.append(fuzz.value_info(f"s{k}", case.data.dtype, None))
            else:
                nodes.append(helper.make_node("Identity", [out], [f"id{k}"]))
                outputs.append(fuzz.value_info(f"id{k}", np.dtype(family.out_dtype(case)), None))
            k += 1
    return fuzz.model_of(nodes, inputs, outputs, inits)


def outcome(run: Callable[[onnx.ModelProto], onnx.ModelProto], model: onnx.ModelProto) -> bytes | str:
    """The converted bytes, or the error's text."""
    try:
        return run(model).SerializeToString()
    except Exception as err:  # noqa: BLE001 - an error is an outcome too: its text is compared
        return f"{type(err).__name__}: {err}"


def run_batches(batches: int, seed: int, report: Callable[[str], None] = print) -> tuple[int, int, int]:
    """``batches`` batches of seeded alike-node models, each converted in every form with the engine's speed-ups
    on and off: (conversions, nodes replayed, conversions that differ)."""
    rng = np.random.default_rng(seed)
    names = list(fuzz.FAMILIES)
    weights = np.array([fuzz.FAMILIES[n].weight for n in names])
    checked, differ, replayed = 0, 0, [0]
    real_replay = replay._replay

    def counted(*replay_args: object) -> bool:
        done = real_replay(*replay_args)
        replayed[0] += done
        return done

    replay._replay = counted  # counted only: what is compared comes from lower(speedups=...)
    try:
        for batch in range(batches):
            cases = [fuzz.FAMILIES[str(rng.choice(names, p=weights / weights.sum()))].generate(rng) for _ in range(12)]
            valid = [fuzz.FAMILIES[c.family].expect(c) is not None for c in cases]
            groups = [[c for c, ok in zip(cases, valid, strict=True) if ok]]
            groups += [[c] for c, ok in zip(cases, valid, strict=True) if not ok]
            for group in filter(None, groups):
                model = alike_model(group, rng)
                for form, rule_set in FORMS.items():
                    fast = outcome(lambda m, r=rule_set: lower(m, r()).model, model)
                    plain = outcome(lambda m, r=rule_set: lower(m, r(), speedups=False).model, model)
                    checked += 1
                    if fast != plain:
                        differ += 1
                        report(f"differ: batch {batch}, {form}: {[c.describe() for c in group][:3]}")
    finally:
        replay._replay = real_replay
    return checked, replayed[0], differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="Exit status: 1 on a difference.")
    parser.add_argument("--batches", type=int, default=100, help="batches of 12 cases (default: 100)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    checked, replayed, differ = run_batches(args.batches, args.seed)
    print(f"seed {args.seed}: {checked} conversions, {replayed} nodes replayed, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
