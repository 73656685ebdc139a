"""The package's layers point one way: read from the imports (AST), no module imports a higher layer, no circle."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"onnx_bcast": ROOT / "onnx_bcast", "onnx_bcast.converters": ROOT / "converters"}

# Lowest first. A module may import its own layer (without a circle) and any layer below it, never one above. Each
# entry is a module or a package (with everything under it); the longest entry that names a module decides.
LAYERS: list[tuple[str, ...]] = [
    ("errors",),
    ("model",),  # walking models, their claims, external data, reading/writing files, runtime limits
    ("ops",),  # the op table: specs, shape rules, numpy kernels
    ("onnx_defs",),  # the ops told to onnx: schemas, inference keys, constants, reference ops
    ("importers",),  # legacy ONNX to our ops
    ("lowering",),  # the engine, the rule contract and the speed-ups
    ("converters",),  # the standard-ONNX rule sets
    ("ort",),  # ONNX Runtime: rule set, prepare, kernels, sessions
    ("openvino",),  # OpenVINO's ONNX frontend extensions
    ("random_inputs", "verify"),  # the equivalence check
    ("convert", "ir_pass"),  # the public conversion API
    ("onnxifier",),  # OpenVINO IR through onnxifier, lowered by convert
    ("",),  # the package's __init__: the public API
    ("cli", "__main__"),  # the command
]
# the speed-ups sit above the engine's core modules they speed up, below the splice and the engine that use them
SUBLAYERS = {"lowering": [("rules", "expand_elision", "node_build", "static_facts", "shape_values", "declaring",
                           "binding", "emitter", "survey", "working_copy"), ("fast",), ("lowered_model", "engine")]}


def _module_name(path: Path) -> str:
    for package, folder in FOLDERS.items():
        if path.is_relative_to(folder) and (package != "onnx_bcast" or not path.is_relative_to(ROOT / "converters")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join([package, *parts])
    raise AssertionError(path)


@cache
def modules() -> dict[str, Path]:
    found = {}
    for folder in FOLDERS.values():
        for path in folder.rglob("*.py"):
            found[_module_name(path)] = path
    return found


def _imported(name: str, path: Path) -> set[str]:
    """The modules of ours that ``name`` imports anywhere (lazy and type-checking imports included)."""
    known = modules()
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = name.split(".") if is_package else name.split(".")[:-1]
            if node.level:
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            candidates = [f"{module}.{alias.name}" for alias in node.names] + [module]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                targets.add(candidate)
    return targets


def layer_of(name: str) -> tuple[int, int]:
    """(layer, sublayer) of a module of ours."""
    rest = name.removeprefix("onnx_bcast").removeprefix(".")
    for index, entries in enumerate(LAYERS):
        for entry in entries:
            if rest == entry or (entry and rest.startswith(entry + ".")):
                sub = 0
                for sub_index, subs in enumerate(SUBLAYERS.get(entry, [])):
                    tail = rest.removeprefix(entry + ".").split(".")[0]
                    if tail in subs:
                        sub = sub_index
                return index, sub
    raise AssertionError(f"module {name} is in no layer: add it to LAYERS")


@cache
def graph() -> dict[str, set[str]]:
    return {name: _imported(name, path) for name, path in modules().items()}


def test_every_module_is_in_a_layer() -> None:
    for name in modules():
        layer_of(name)


def test_no_import_points_up() -> None:
    upward = [f"{name} -> {target}" for name, targets in graph().items() for target in targets
              if layer_of(target) > layer_of(name)]
    assert upward == []


def _cycle() -> list[str] | None:
    edges = graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        stack.append(name)
        for target in sorted(edges[name]):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[name] = 2
        return None

    for name in sorted(edges):
        if name not in state:
            found = visit(name)
            if found:
                return found
    return None


def test_no_circle() -> None:
    assert _cycle() is None


def test_the_check_sees_an_upward_import_and_a_circle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above can fail: an engine module that imports the command, and a circle of two modules."""
    edges = {name: set(targets) for name, targets in graph().items()}
    edges["onnx_bcast.lowering.emitter"].add("onnx_bcast.cli.main")
    edges["onnx_bcast.ops.common"].add("onnx_bcast.ops.broadcast")
    monkeypatch.setattr(__import__(__name__, fromlist=["graph"]), "graph", lambda: edges)
    assert layer_of("onnx_bcast.cli.main") > layer_of("onnx_bcast.lowering.emitter")
    assert _cycle() is not None


@pytest.mark.parametrize("name", sorted(modules()))
def test_modules_stay_small(name: str) -> None:
    """No module over about 250 lines (a module that grows past it holds two jobs)."""
    lines = len(modules()[name].read_text().splitlines())
    assert lines <= 260, f"{name} has {lines} lines"
