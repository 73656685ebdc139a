"""Replayed rewrites (onnx_bcast/lowering/fast/replay.py) write the bytes that running each node's rule writes."""

from __future__ import annotations

import copy

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast
from onnx_bcast.converters import BARE, STANDARD
from onnx_bcast.errors import BroadcastError
from onnx_bcast.lowering.engine import lower
from onnx_bcast.lowering.fast import replay
from onnx_bcast.ort.rule_set import ort_rule_set
from tests.case_table import CASES
from tests.test_case_table import case_model

OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]


def _each_case_twice(cases: list, runtime: bool = False, unnamed_every: int = 3) -> onnx.ModelProto:
    """Every case's node twice (alike nodes: the second is replayed), each read by an Identity so that it can be
    hidden; every ``unnamed_every``-th node has no name."""
    nodes, inputs, outputs, inits = [], [], [], []
    for copy_index in range(2):
        for i, case in enumerate(cases):
            graph = case_model(case, runtime).graph
            prefix = f"c{copy_index}_{i}_"
            for node in graph.node:
                ours = copy.deepcopy(node)
                ours.name = "" if (i + copy_index) % unnamed_every == 0 else prefix + node.name
                ours.input[:] = [prefix + x if x else x for x in node.input]
                ours.output[:] = [prefix + "mid_" + x for x in node.output]
                nodes.append(ours)
                nodes += [helper.make_node("Identity", [prefix + "mid_" + x], [prefix + x]) for x in node.output]
            for group, into in ((graph.input, inputs), (graph.output, outputs)):
                for value in group:
                    into.append(copy.deepcopy(value))
                    into[-1].name = prefix + value.name
            for tensor in graph.initializer:
                inits.append(copy.deepcopy(tensor))
                inits[-1].name = prefix + tensor.name
    graph = helper.make_graph(nodes, "twice", inputs, outputs, initializer=inits)
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)


def _bias_pairs(shapes: list[list[int]]) -> onnx.ModelProto:
    """``Add(features_i, Broadcast explicit(bias, [1,4,2,2], [1]))`` per features shape: alike Broadcasts whose
    Expand elision answers differ ([1,4,2,2] keeps the shape; [1,4,1,2] does not). Every other one is unnamed."""
    nodes, inputs, outputs = [], [], []
    for i, shape in enumerate(shapes):
        nodes += [helper.make_node("Broadcast", ["bias", "target", "axes"], [f"b{i}"], domain="onnx_bcast",
                                   mode="explicit", name=f"bcast{i}" if i % 2 else ""),
                  helper.make_node("Add", [f"x{i}", f"b{i}"], [f"y{i}"], name=f"add{i}")]
        inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, shape))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
    inits = [numpy_helper.from_array(np.arange(4, dtype=np.float32), "bias"),
             numpy_helper.from_array(np.array([1, 4, 2, 2], np.int64), "target"),
             numpy_helper.from_array(np.array([1], np.int64), "axes")]
    graph = helper.make_graph(nodes, "bias", inputs, outputs, initializer=inits)
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)


def _same_input_twice() -> onnx.ModelProto:
    """Alike elementwise nodes, one reading ``a`` twice and one reading ``a`` and ``b``: another name pattern."""
    nodes = [helper.make_node("Add", ["a", "a"], ["s0"], domain="onnx_bcast", auto_broadcast="numpy"),
             helper.make_node("Add", ["a", "b"], ["s1"], domain="onnx_bcast", auto_broadcast="numpy"),
             helper.make_node("Add", ["b", "b"], ["s2"], domain="onnx_bcast", auto_broadcast="numpy")]
    nodes += [helper.make_node("Relu", [f"s{i}"], [f"y{i}"]) for i in range(3)]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, "same", [value("a", TensorProto.FLOAT, [2, 3]), value("b", TensorProto.FLOAT,
                                                                                           [2, 3])],
                              [value(f"y{i}", TensorProto.FLOAT, None) for i in range(3)])
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)


VALID = [c for c in CASES if c.valid]
MODELS = {
    "every valid case twice": _each_case_twice(VALID),
    "every valid case twice, shapes fed at run time": _each_case_twice([c for c in VALID if len(c.inputs) > 1],
                                                                       runtime=True),
    "every case twice, invalid ones too": _each_case_twice([c for c in CASES if not c.valid], unnamed_every=2),
    "elision answers differ": _bias_pairs([[1, 4, 2, 2], [1, 4, 1, 2], [1, 4, 2, 2], [2, 4, 2, 2], [1, 4, 2, 1]]),
    "one input read twice": _same_input_twice(),
}


def _outcome(run, model: onnx.ModelProto) -> bytes | str:
    try:
        return run(model).SerializeToString()
    except BroadcastError as err:
        return f"BroadcastError: {err}"


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("form", ["convert", "bare", "prepare"])
def test_replayed_rewrites_write_what_the_rules_write(name: str, form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rule_set = {"convert": STANDARD, "bare": BARE, "prepare": ort_rule_set(False, None)}[form]
    replayed = []
    real_replay = replay._replay

    def counted(*args: object) -> bool:
        done = real_replay(*args)
        replayed.append(done)
        return done

    monkeypatch.setattr(replay, "_replay", counted)
    fast = _outcome(lambda m: lower(m, rule_set).model, MODELS[name])
    plain = _outcome(lambda m: lower(m, rule_set, speedups=False).model, MODELS[name])
    assert fast == plain
    if name != "every case twice, invalid ones too":
        assert sum(replayed) >= 2  # replays happened (the first of a kind is replayed from its recording too)


def test_alike_nodes_whose_elision_answers_differ_are_not_replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = []
    real_replay = replay._replay
    monkeypatch.setattr(replay, "_replay", lambda *args: answers.append(real_replay(*args)) or answers[-1])
    converted = onnx_bcast.convert(MODELS["elision answers differ"])
    # unnamed (0, 2, 4) and named (1, 3) nodes are two kinds; Add([2,4,2,2], [1,4,2,2]) keeps [2,4,2,2]: node 3 is
    # elided where node 1 (recorded) was not, node 4 is not where node 0 (recorded) was
    assert answers == [True, True, True, False, False]
    assert [n.op_type for n in converted.graph.node].count("Expand") == 2  # where the Add's shape is not kept
