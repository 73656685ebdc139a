"""Hiding nodes of ours from onnx's shape inference (known_outputs, hidden_inference) changes no fact and no
converted byte."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast
from onnx_bcast.converters import STANDARD
from onnx_bcast.errors import BroadcastError
from onnx_bcast.lowering.engine import lower
from onnx_bcast.lowering.fast import hidden_inference, known_outputs
from onnx_bcast.lowering.static_facts import StaticFacts
from onnx_bcast.lowering.survey import survey_nodes, walked_node_lists
from onnx_bcast.model.walk import NameGenerator
from tests.cases import ALL_CASES, Case

OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]


def _i64(name: str, values: list[int] | tuple[int, ...]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64).reshape(-1), name)


def _case_chain(case: Case, data_shape: list, dtype: int = TensorProto.FLOAT) -> onnx.ModelProto:
    """The case's node twice in a row (the second on the first's output when it fits, else on the data), then
    ``Identity``: our outputs are not graph outputs, so they can be hidden."""
    inputs = ["data", "target"] + (["axes"] if case.axes is not None else [])
    first = helper.make_node(case.op, inputs, ["mid"], domain="onnx_bcast", name="first", mode=case.mode,
                             axis=case.axis)
    second_data = "mid" if case.expected_shape == case.data_shape else "data"
    second = helper.make_node(case.op, [second_data, *inputs[1:]], ["out"], domain="onnx_bcast", mode=case.mode,
                              axis=case.axis)
    inits = [_i64("target", case.target)] + ([_i64("axes", case.axes)] if case.axes is not None else [])
    graph = helper.make_graph([first, second, helper.make_node("Identity", ["out"], ["y"])], "chain",
                              [helper.make_tensor_value_info("data", dtype, data_shape)],
                              [helper.make_tensor_value_info("y", dtype, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)


def _elementwise_chain(rule: str, a_shape: list, b_shape: list, op: str = "Add") -> onnx.ModelProto:
    nodes = [helper.make_node(op, ["a", "b"], ["m"], domain="onnx_bcast", auto_broadcast=rule, axis=1),
             helper.make_node("Relu" if op != "Equal" else "Not", ["m"], ["y"])]
    graph = helper.make_graph(nodes, "ew", [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_shape),
                                            helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.BOOL if op == "Equal" else
                                                             TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)


def _hidden_and_facts(model: onnx.ModelProto) -> tuple[int, StaticFacts, StaticFacts]:
    """How many nodes are hidden (known or assumed inputs), and the facts with and without hiding."""
    lists = walked_node_lists(model)
    survey = survey_nodes(lists, NameGenerator())
    args = (model, survey.declared[0], survey.inputs[0], survey.produced)
    hidden = len(known_outputs.decide(*args).hidden)
    return hidden, hidden_inference.static_facts(*args, survey.read), StaticFacts(model, raise_broadcast_errors=True)


def _assert_same_facts(model: onnx.ModelProto, fast: StaticFacts, plain: StaticFacts) -> None:
    names = {n for node in model.graph.node for n in [*node.input, *node.output] if n}
    for name in sorted(names):
        for kind in ("shapes", "types", "values"):
            got, want = getattr(fast, kind).get(name), getattr(plain, kind).get(name)
            if isinstance(want, np.ndarray):
                assert isinstance(got, np.ndarray) and got.dtype == want.dtype and np.array_equal(got, want), name
            else:
                assert got == want, (name, kind)


def _convert_both(model: onnx.ModelProto) -> tuple[bytes | str, bytes | str]:
    """The converted bytes (or the error text) with the engine's speed-ups (hiding) and without them."""
    def run(speedups: bool) -> bytes | str:
        try:
            return lower(model, STANDARD, speedups=speedups).model.SerializeToString()
        except BroadcastError as err:
            return f"BroadcastError: {err}"

    return run(True), run(False)


@pytest.mark.parametrize("static", [True, False], ids=["static", "symbolic"])
@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_a_hidden_node_changes_no_fact_and_no_byte(case: Case, static: bool) -> None:
    data_shape = list(case.data_shape) if static else [f"d{i}" for i in range(len(case.data_shape))]
    model = _case_chain(case, data_shape)
    try:
        hidden, fast, plain = _hidden_and_facts(model)
    except BroadcastError:
        hidden = None  # invalid: onnx's callback raised it; the conversions below must agree on the message
    else:
        _assert_same_facts(model, fast, plain)
        if case.expected_shape is not None and static:
            assert hidden >= 1
    fast_bytes, plain_bytes = _convert_both(model)
    assert fast_bytes == plain_bytes


@pytest.mark.parametrize(("rule", "a_shape", "b_shape"), [
    ("numpy", [2, 3, 4], [4]), ("numpy", ["n", 3, 4], [4]), ("numpy", [2, None, 4], [1, 4]),
    ("pdpd", [2, 3, 4], [3]), ("pdpd", ["n", 3, 4], [3, 1]), ("none", [2, 3], [2, 3]), ("none", [2, 3], [3, 2]),
    ("pdpd", [2, 3, 4], [5]), ("numpy", None, [4])])
@pytest.mark.parametrize("op", ["Add", "Equal"])
def test_elementwise_nodes_too(rule: str, a_shape: list | None, b_shape: list, op: str) -> None:
    model = _elementwise_chain(rule, a_shape, b_shape, op)
    try:
        _, fast, plain = _hidden_and_facts(model)
    except BroadcastError:
        pass
    else:
        _assert_same_facts(model, fast, plain)
    assert _convert_both(model)[0] == _convert_both(model)[1]


def _two_step(first_input: str, extra: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto] | None = None
              ) -> onnx.ModelProto:
    nodes = [*extra,
             helper.make_node("Broadcast", [first_input, "t"], ["b"], domain="onnx_bcast", mode="numpy"),
             helper.make_node("Relu", ["b"], ["y"])]
    graph = helper.make_graph(nodes, "g", inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[_i64("t", [2, 3])])
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)


@pytest.mark.parametrize("name, model, hidden", [
    ("from a graph input", _two_step("x", []), 1),
    ("from a standard node", _two_step("r", [helper.make_node("Relu", ["x"], ["r"])]), 0),
    ("read before it is defined", _two_step("x", [helper.make_node("Relu", ["b"], ["early"])]), 0),
    ("input redefined by a node", _two_step("x", [helper.make_node("Relu", ["t"], ["x"])]), 0),
    ("initializer that is also an input", _two_step("x", [], [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
        helper.make_tensor_value_info("t", TensorProto.INT64, [2])]), 1),
])
def test_when_a_node_is_hidden(name: str, model: onnx.ModelProto, hidden: int) -> None:
    before = model.SerializeToString()
    count, fast, plain = _hidden_and_facts(model)
    assert count == hidden
    assert model.SerializeToString() == before  # the domains are put back
    _assert_same_facts(model, fast, plain)
    fast_bytes, plain_bytes = _convert_both(model)
    assert fast_bytes == plain_bytes


def test_an_invalid_hideable_node_still_fails_with_the_node_named() -> None:
    model = _two_step("x", [])
    model.graph.initializer[0].CopyFrom(_i64("t", [2, 4]))  # [3] cannot become [2, 4]
    with pytest.raises(BroadcastError, match="cannot be broadcast") as caught:
        onnx_bcast.convert(model)
    assert "data (3,), target (2, 4)" in str(caught.value)


def _chain(n: int, shapes: list[list[int]]) -> onnx.ModelProto:
    """x -> (Broadcast numpy to shapes[i % len], ReduceMax over axis 0) x n: each Broadcast reads a ReduceMax."""
    nodes, inits, prev = [], [], "x"
    for i in range(n):
        target = shapes[i % len(shapes)]
        inits.append(_i64(f"t{i}", target))
        nodes += [helper.make_node("Broadcast", [prev, f"t{i}"], [f"b{i}"], domain="onnx_bcast", mode="numpy"),
                  helper.make_node("ReduceMax", [f"b{i}"], [f"r{i}"], axes=[0], keepdims=0)]
        prev = f"r{i}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)


@pytest.mark.parametrize("shapes", [[[3, 4]], [[3, 4], [2, 4]], [[3, 4], [2, 1, 4]], [[3, 4], [2, 3, 4]]],
                         ids=["repeating", "other targets", "other ranks", "growing"])
def test_assumed_input_types_are_checked(shapes: list[list[int]]) -> None:
    """Each Broadcast's input comes from a ReduceMax: its type is assumed from the previous Broadcast's, and the
    run is checked (where a rank grows, the assumption fails and onnx infers again with every callback)."""
    model = _chain(6, shapes)
    hidden, fast, plain = _hidden_and_facts(model)
    assert hidden == (6 if len(shapes) == 1 else 3)  # assumed from the last Broadcast with the same target
    _assert_same_facts(model, fast, plain)
    fast_bytes, plain_bytes = _convert_both(model)
    assert fast_bytes == plain_bytes


def test_an_assumption_that_would_fail_a_node_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The assumed [4] meets a target [2, 3] that does not take it: the run without assumptions decides."""
    model = _chain(3, [[3, 4], [3, 4], [2, 3]])
    fast_bytes, plain_bytes = _convert_both(model)
    assert fast_bytes == plain_bytes


def _nested_model() -> onnx.ModelProto:
    """An If whose branches hold a Loop body, and a local function: containers at every depth."""
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"]),
                              helper.make_node("Broadcast", ["x", "t"], ["inner"], domain="onnx_bcast")],
                             "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                      helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                             [helper.make_tensor_value_info("c_out", TensorProto.BOOL, [])])
    loop = helper.make_node("Loop", ["", "cond"], [], body=body)
    then = helper.make_graph([loop, helper.make_node("Identity", ["x"], ["y_then"])], "then", [],
                             [helper.make_tensor_value_info("y_then", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["y_else"])], "else", [],
                              [helper.make_tensor_value_info("y_else", TensorProto.FLOAT, None)])
    graph = helper.make_graph([helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)], "g",
                              [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                               helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[_i64("t", [2, 3])])
    function = helper.make_function("local", "f", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                                    [helper.make_opsetid("", 17)])
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10, functions=[function])


@pytest.mark.parametrize("model", [_nested_model(), _two_step("x", []), _chain(3, [[3, 4]])],
                         ids=["nested", "flat", "chain"])
def test_walked_node_lists_equal_node_lists(model: onnx.ModelProto) -> None:
    from onnx_bcast.model.walk import node_lists

    walked = [(e.container.SerializeToString(), e.in_function) for e in walked_node_lists(model)]
    assert walked == [(e.container.SerializeToString(), e.in_function) for e in node_lists(model)]


def _pairs(targets: list[tuple[str, int, list[int] | None]], data: list[tuple[str, list]]) -> onnx.ModelProto:
    """One Broadcast numpy per (target name, type, values or None for a graph input of that length) and data input
    (name, shape), each followed by Identity: nodes that agree on attributes and differ in one fact only."""
    nodes, inits, inputs, outputs = [], [], [], []
    for i, ((target, elem, values), (x, shape)) in enumerate(zip(targets, data, strict=True)):
        nodes += [helper.make_node("Broadcast", [x, target], [f"b{i}"], domain="onnx_bcast", mode="numpy"),
                  helper.make_node("Identity", [f"b{i}"], [f"y{i}"])]
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
        if values is None:
            inputs.append(helper.make_tensor_value_info(target, elem, [i + 2]))
        elif target not in {t.name for t in inits}:
            inits.append(numpy_helper.from_array(np.asarray(values, dtype=helper.tensor_dtype_to_np_dtype(elem)),
                                                 target))
        if x not in {v.name for v in inputs}:
            inputs.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, shape))
    graph = helper.make_graph(nodes, "pairs", inputs, outputs, initializer=inits)
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)


I64, I32 = TensorProto.INT64, TensorProto.INT32


@pytest.mark.parametrize("model", [
    _pairs([("t0", I64, [2, 3]), ("t1", I64, [2, 3]), ("t2", I64, [4, 3])], [("x", [3])] * 3),
    _pairs([("t0", I64, [2, 3]), ("t1", I32, [2, 3])], [("x", [3])] * 2),
    _pairs([("t0", I64, [2, 3]), ("t1", I64, [2, 3])], [("x", [3]), ("z", [1])]),
    _pairs([("t0", I64, [2, 3]), ("t1", I64, [2, 3])], [("x", [3]), ("z", ["n"])]),
    _pairs([("t0", I64, None), ("t1", I64, None)], [("x", [1])] * 2),
    _pairs([("t0", I64, None), ("t1", I32, None)], [("x", [1])] * 2),
], ids=["equal and other values", "other target type", "other data shape", "symbolic data", "run-time targets",
        "run-time targets of two types"])
def test_nodes_with_equal_signatures_share_facts_and_nothing_else(model: onnx.ModelProto) -> None:
    """``bind`` shares the facts of hidden nodes with equal signatures: the bytes are those of a conversion
    without hiding (hence without sharing), node by node."""
    fast_bytes, plain_bytes = _convert_both(model)
    assert isinstance(fast_bytes, bytes)
    assert fast_bytes == plain_bytes


def test_an_initializer_that_is_also_an_input_is_never_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its static facts are the initializer's dims while its type is the input's: no signature may stand for it."""
    model = _pairs([("t0", I64, [2, 3]), ("t1", I64, [2, 3])], [("x", [3]), ("w", [3])])
    model.graph.initializer.append(numpy_helper.from_array(np.ones([1], np.float32), "w"))  # dims [1], not [3]
    lists = walked_node_lists(model)
    survey = survey_nodes(lists, NameGenerator())
    decision = known_outputs.decide(model, survey.declared[0], survey.inputs[0], survey.produced)
    assert [d.output for d, _ in decision.signed] == ["b0"]
    fast_bytes, plain_bytes = _convert_both(model)
    assert fast_bytes == plain_bytes


def test_an_op_of_two_outputs_keeps_the_facts_of_both(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Unbroadcast`` infers a_grad (2, 3, 4) and b_grad (3, 1): neither may take the other's type, and what reads
    them is converted as it would be with every callback."""
    nodes = [helper.make_node("Unbroadcast", ["d", "a", "b"], ["ga", "gb"], domain="onnx_bcast"),
             helper.make_node("Broadcast", ["ga", "t"], ["wide"], domain="onnx_bcast", mode="numpy"),
             helper.make_node("Add", ["wide", "gb"], ["y"])]
    graph = helper.make_graph(nodes, "grads", [helper.make_tensor_value_info("d", TensorProto.FLOAT, [2, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[_i64("a", [2, 3, 4]), _i64("b", [3, 1]), _i64("t", [5, 2, 3, 4])])
    model = helper.make_model(graph, opset_imports=OPSETS, ir_version=10)
    _, fast, plain = _hidden_and_facts(model)
    assert plain.shapes.get("ga") == (2, 3, 4) and plain.shapes.get("gb") == (3, 1)
    _assert_same_facts(model, fast, plain)
    fast_bytes, plain_bytes = _convert_both(model)
    assert fast_bytes == plain_bytes


def test_a_gradient_read_by_an_invalid_broadcast_fails_the_conversion() -> None:
    """a_grad (2, 3, 4) cannot be broadcast to (2, 3, 1) under numpy rules: had a_grad taken b_grad's (3, 1), the
    conversion would have passed and the converted model returned an (2, 3, 4) answer (Expand is bidirectional)."""
    nodes = [helper.make_node("Unbroadcast", ["d", "a", "b"], ["ga", "gb"], domain="onnx_bcast"),
             helper.make_node("Broadcast", ["ga", "t"], ["wide"], domain="onnx_bcast", mode="numpy", name="wide"),
             helper.make_node("Relu", ["wide"], ["y"])]
    graph = helper.make_graph(nodes, "grads", [helper.make_tensor_value_info("d", TensorProto.FLOAT, [2, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[_i64("a", [2, 3, 4]), _i64("b", [3, 1]), _i64("t", [2, 3, 1])])
    with pytest.raises(BroadcastError, match=r"data \(2, 3, 4\), target \(2, 3, 1\)"):
        onnx_bcast.convert(helper.make_model(graph, opset_imports=OPSETS, ir_version=10))


@pytest.mark.parametrize("static", [True, False], ids=["static", "symbolic"])
def test_an_unnamed_node_is_labelled_in_errors_and_stays_unnamed(static: bool) -> None:
    """onnx's inference raises for the invalid node (static dims) where binding does (symbolic): both name it
    ``Broadcast#1``; the valid unnamed node before it keeps no name in the converted model."""
    dims = [2, 3] if static else ["a", "b"]
    nodes = [helper.make_node("Broadcast", ["x", "ok"], ["y"], domain="onnx_bcast", mode="numpy"),
             helper.make_node("Broadcast", ["x", "bad"], ["z"], domain="onnx_bcast", mode="numpy")]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, "g", [value("x", TensorProto.FLOAT, dims)],
                              [value("y", TensorProto.FLOAT, None), value("z", TensorProto.FLOAT, None)],
                              initializer=[_i64("ok", [4, 2, 3]), _i64("bad", [2, 4])])
    model = helper.make_model(graph, opset_imports=OPSETS, ir_version=10)
    if static:
        with pytest.raises(BroadcastError, match="node 'Broadcast#1'"):
            onnx_bcast.convert(model)
    del model.graph.node[1], model.graph.output[1]
    converted = onnx_bcast.convert(model)
    assert converted.graph.node and not any(n.HasField("name") for n in converted.graph.node if n.output == ["y"])
    assert not model.graph.node[0].HasField("name")


_PROBE_DOMAIN = "onnx_bcast.test.has_input"


def _onnx_has_input_answers(model: onnx.ModelProto) -> list[list[bool]]:
    """What onnx's own InferenceContext answers to ``has_input(i)`` for each probe node (i up to one past its
    inputs), through a probe schema's Python inference function."""
    from onnx import defs

    seen: list[list[bool]] = []
    if not defs.has("HasInputProbe", _PROBE_DOMAIN):
        optional = defs.OpSchema.FormalParameterOption.Optional
        schema = defs.OpSchema("HasInputProbe", _PROBE_DOMAIN, 1, inputs=[
            defs.OpSchema.FormalParameter(name, "tensor(float)", param_option=optional) for name in "abcd"],
            outputs=[defs.OpSchema.FormalParameter("y", "tensor(float)")])
        schema.set_type_and_shape_inference_function(lambda ctx: _PROBE_SINK[-1].append(
            [ctx.has_input(i) for i in range(ctx.get_num_inputs() + 1)]))
        defs.register_schema(schema)
    _PROBE_SINK.append(seen)
    try:
        onnx.shape_inference.infer_shapes(model)
    finally:
        _PROBE_SINK.pop()
    return seen


_PROBE_SINK: list[list[list[bool]]] = []


def test_has_input_answers_as_onnx_does() -> None:
    """The stand-in's ``has_input`` is a name test (``""`` is absent); onnx's answer (onnx 1.23.2 and onnx-weekly
    1.24.0.dev20261026 alike, after onnx PR 8271 split a missing input from one of unknown type) is the same for a
    typed graph input, an absent one, an initializer, a value of unknown type from a node and an untyped graph input.
    If onnx goes back to ``getInputType(i) != nullptr`` (its default before), the last two differ and this fails."""
    untyped = onnx.ValueInfoProto(name="u")
    nodes = [helper.make_node("Unknown", ["x"], ["unk"], domain="nowhere"),
             helper.make_node("HasInputProbe", ["x", "", "w", "unk"], ["y1"], domain=_PROBE_DOMAIN),
             helper.make_node("HasInputProbe", ["u", "x"], ["y2"], domain=_PROBE_DOMAIN)]
    graph = helper.make_graph(nodes, "probe", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]), untyped],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None) for y in ("y1", "y2")],
                              initializer=[numpy_helper.from_array(np.ones(2, np.float32), "w")])
    model = helper.make_model(graph, ir_version=10, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid(_PROBE_DOMAIN, 1), helper.make_opsetid("nowhere", 1)])
    onnx_answers = _onnx_has_input_answers(model)
    assert onnx_answers == [[True, False, True, True, False], [True, True, False]]  # as measured on both
    ours = []
    for node in nodes[1:]:
        context = known_outputs._Context(node, list(node.input), [None] * len(node.input), [None] * len(node.input))
        ours.append([context.has_input(i) for i in range(context.get_num_inputs() + 1)])
    assert ours == onnx_answers
