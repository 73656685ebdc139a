"""Seeded random alike nodes: replayed rewrites (onnx_bcast/lowering/fast/replay.py) equal running each rule.

Each batch holds fuzz cases (bench/fuzz.py's generators) three times each, under other names, some unnamed; the
valid ones share a model, each invalid one has its own. About half of the broadcasts are read by an ``Add`` with a
random small shape, so that Expand elision answers differently for alike nodes. Every model is converted three
ways (``convert``, ``convert(guards=False)``, ``prepare``) with replay and without it; the bytes, or the error
texts, must be equal.
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

import onnx_bcast  # noqa: E402
from onnx_bcast.lowering.fast import replay  # noqa: E402
from onnx_bcast.ort.prepare import prepare  # noqa: E402

FORMS: dict[str, Callable[[onnx.ModelProto], onnx.ModelProto]] = {
    "convert": onnx_bcast.convert, "bare": lambda m: onnx_bcast.convert(m, guards=False), "prepare": prepare}


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
    try:
        return run(model).SerializeToString()
    except Exception as err:  # noqa: BLE001 - an error is an outcome too: its text is compared
        return f"{type(err).__name__}: {err}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="Exit status: 1 on a difference.")
    parser.add_argument("--batches", type=int, default=100, help="batches of 12 cases (default: 100)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    names = list(fuzz.FAMILIES)
    weights = np.array([fuzz.FAMILIES[n].weight for n in names])
    checked, differ, replayed = 0, 0, [0]
    real_rewrite, real_replay = replay.Replays.rewrite, replay._replay

    def counted(*replay_args: object) -> bool:
        done = real_replay(*replay_args)
        replayed[0] += done
        return done

    replay._replay = counted
    for batch in range(args.batches):
        cases = [fuzz.FAMILIES[str(rng.choice(names, p=weights / weights.sum()))].generate(rng) for _ in range(12)]
        valid = [fuzz.FAMILIES[c.family].expect(c) is not None for c in cases]
        groups = [[c for c, ok in zip(cases, valid, strict=True) if ok]]
        groups += [[c] for c, ok in zip(cases, valid, strict=True) if not ok]
        for group in filter(None, groups):
            model = alike_model(group, rng)
            for form, run in FORMS.items():
                replay.Replays.rewrite = real_rewrite
                fast = outcome(run, model)
                replay.Replays.rewrite = lambda *_: False
                plain = outcome(run, model)
                replay.Replays.rewrite = real_rewrite
                checked += 1
                if fast != plain:
                    differ += 1
                    print(f"differ: batch {batch}, {form}: {[c.describe() for c in group][:3]}")
    print(f"seed {args.seed}: {checked} conversions, {replayed[0]} nodes replayed, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
