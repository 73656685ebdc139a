"""Generated chains of onnx_bcast ops (runtime shapes, If, Loop, functions) through convert, against numpy."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import AttributeProto, FunctionProto, ModelProto, NodeProto, TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnx_bcast
from onnx_bcast.convert import convert
from onnx_bcast.model.runtime_limits import max_ir_version, max_opset

DOMAIN = "onnx_bcast"
LOCAL = "local"
OPSETS = sorted({11, 13, 17, max_opset()})
IR_VERSION = min(onnx.IR_VERSION, max_ir_version())
SETTINGS = {"derandomize": True, "database": None, "deadline": None,
            "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}

#: name -> (ONNX element type, numpy dtype)
DTYPES: dict[str, tuple[int, Any]] = {
    "float32": (TensorProto.FLOAT, np.float32),
    "float64": (TensorProto.DOUBLE, np.float64),
    "float16": (TensorProto.FLOAT16, np.float16),
    "int64": (TensorProto.INT64, np.int64),
    "int32": (TensorProto.INT32, np.int32),
    "int8": (TensorProto.INT8, np.int8),
    "uint8": (TensorProto.UINT8, np.uint8),
    "bool": (TensorProto.BOOL, np.bool_),
}
STATIC_SOURCES = ["init", "init32", "const"]
RUNTIME_SOURCES = ["input", "input32", "computed", "computed_static"]

# ------------------------------------------------------------------------------------------ the generated chain


@dataclass(frozen=True)
class Step:
    """One of our ops applied to the running value: everything needed to build it and to predict its output."""

    kind: str  # numpy | bidirectional | pdpd | explicit | v0 | like | like_deduced
    op: str
    data_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    mapping: tuple[int, ...]  # the output axis of each data axis
    attrs: dict[str, Any] = field(default_factory=dict)
    target: tuple[int, ...] | None = None  # Broadcast/Expand target_shape, or the like_arg shape
    axes: tuple[int, ...] | None = None  # explicit axes_mapping
    target_src: str = "init"  # see _shape_operand; for BroadcastLikeV0: "static" or "dynamic" like_arg dims
    axes_src: str = "init"
    like_dtype: str = "float32"


@dataclass(frozen=True)
class Chain:
    """2-4 steps on one data input; ``nested`` (step index, "if" | "loop" | "function") or None; ``tail`` a
    standard broadcasting op on the result and an input of the result's shape ("full") or of its last dim ("row")."""

    dtype: str
    x_shape: tuple[int, ...]
    x_dynamic: bool
    steps: tuple[Step, ...]
    nested: tuple[int, str] | None = None
    tail: str | None = None


def expected_step(x: np.ndarray, step: Step) -> np.ndarray:
    """The step's output by the numpy expression of its rule (SPEC §2), independent of onnx_bcast."""
    if step.kind == "numpy":
        out = np.broadcast_to(x, step.target)
    elif step.kind == "bidirectional":
        out = np.broadcast_to(x, np.broadcast_shapes(x.shape, step.target))
    elif step.kind == "pdpd":
        start = len(step.target) - x.ndim
        out = np.broadcast_to(x.reshape((1,) * start + x.shape), step.out_shape)
    elif step.kind == "explicit":
        aligned = [1] * len(step.target)
        for k, a in enumerate(step.axes if x.ndim else ()):
            aligned[a] = x.shape[k]
        out = np.broadcast_to(x.reshape(aligned), step.target)
    else:  # v0, like, like_deduced: the new axes are inserted, then replicated
        new_axes = [i for i in range(len(step.out_shape)) if i not in step.mapping]
        out = np.broadcast_to(np.expand_dims(x, new_axes), step.out_shape)
    assert out.shape == step.out_shape, (step, out.shape)
    return out


def expected_output(chain: Chain, x: np.ndarray) -> np.ndarray:
    """The chain's output, step by step, as a fresh C-ordered array (0-d stays 0-d)."""
    for step in chain.steps:
        x = expected_step(x, step)
    if chain.tail:
        other = tail_operand(chain)
        x = np.logical_xor(x, other) if chain.dtype == "bool" else x + other
    return np.array(x)


def tail_operand(chain: Chain) -> np.ndarray:
    """The other input of the tail op: small values, the result's shape or only its last dim."""
    shape = chain.steps[-1].out_shape
    shape = shape if chain.tail == "full" else shape[-1:]
    n = int(np.prod(shape, dtype=np.int64))
    if chain.dtype == "bool":
        return (np.arange(n) % 2 == 0).reshape(shape)
    return (np.arange(n) % 5 + 1).astype(DTYPES[chain.dtype][1]).reshape(shape)


def sample(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Distinct values (a pattern for bool) so that any misplaced element shows."""
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == "bool":
        return (np.arange(n) % 3 == 1).reshape(shape)
    return (np.arange(n) % 120 + 1).astype(DTYPES[dtype][1]).reshape(shape)


# ------------------------------------------------------------------------------------------------ strategies


def draw_dim(draw: Callable) -> int:
    """Mostly 1-3, one time in twenty 0."""
    n = draw(st.integers(0, 19))
    return 0 if n == 0 else n % 3 + 1


def draw_subset(draw: Callable, size: int, total: int) -> tuple[int, ...]:
    """``size`` distinct axes of ``range(total)``, increasing."""
    order = draw(st.permutations(range(total)))
    return tuple(sorted(order[:size]))


def draw_step(draw: Callable, d: tuple[int, ...], runtime: bool, static_only: bool) -> Step:
    """A valid step on data of shape ``d`` (output rank at most 5), with its expected output shape and mapping."""
    r = len(d)
    room = 5 - r
    kinds = ["numpy", "bidirectional", "pdpd", "explicit"] + (["v0", "like"] if room else [])
    if static_only and room:
        kinds.append("like_deduced")
    kind = draw(st.sampled_from(kinds))
    sources = STATIC_SOURCES + (RUNTIME_SOURCES if runtime else [])
    target_src = draw(st.sampled_from(sources))
    axes_src = draw(st.sampled_from(sources))
    if kind == "numpy":
        extra = draw(st.integers(0, min(2, room)))
        target = tuple(draw_dim(draw) for _ in range(extra)) + tuple(draw_dim(draw) if di == 1 else di for di in d)
        op, mode = draw(st.sampled_from([("Broadcast", None), ("Broadcast", "numpy"), ("Broadcast", "NumPy"),
                                         ("Expand", "numpy")]))
        return Step(kind, op, d, target, tuple(range(extra, extra + r)), _mode(mode), target, None, target_src)
    if kind == "bidirectional":
        length = draw(st.integers(0, min(r + 2, 5)))
        target = []
        for j in range(length):
            i = j - (length - r)
            if i >= 0 and d[i] != 1:
                target.append(draw(st.sampled_from([d[i], 1])))
            else:
                target.append(draw_dim(draw))
        out = tuple(np.broadcast_shapes(d, tuple(target)))
        op, mode = draw(st.sampled_from([("Expand", None), ("Expand", "bidirectional"),
                                         ("Broadcast", "bidirectional"), ("Broadcast", "BIDIRECTIONAL")]))
        return Step(kind, op, d, out, tuple(range(len(out) - r, len(out))), _mode(mode), tuple(target), None,
                    target_src)
    if kind == "pdpd":
        extra = draw(st.integers(0, min(2, room)))
        prefix = tuple(draw_dim(draw) for _ in range(extra))
        aligned = [draw_dim(draw) if di == 1 else draw(st.sampled_from([di, 1])) for di in d]
        out = prefix + tuple(t if di == 1 else di for di, t in zip(d, aligned, strict=True))
        attrs = {"mode": draw(st.sampled_from(["pdpd", "PDPD"]))}
        if draw(st.booleans()):
            attrs["axis"] = extra
        op = draw(st.sampled_from(["Broadcast", "Expand"]))
        return Step(kind, op, d, out, tuple(range(extra, extra + r)), attrs, prefix + tuple(aligned), None,
                    target_src)
    if kind == "explicit":
        extra = draw(st.integers(0 if r else 1, min(2, room)))
        rank = r + extra
        if r == 0:
            axes = draw(st.sampled_from([(), (draw(st.integers(0, rank - 1)),)]))
            target = tuple(1 if i in axes else draw_dim(draw) for i in range(rank))
            mapping: tuple[int, ...] = ()
        else:
            axes = mapping = draw_subset(draw, r, rank)
            target = tuple(draw_dim(draw) if i not in axes or d[axes.index(i)] == 1 else d[axes.index(i)]
                           for i in range(rank))
        op = draw(st.sampled_from(["Broadcast", "Expand"]))
        mode = draw(st.sampled_from(["explicit", "none", "EXPLICIT", "None"]))
        return Step(kind, op, d, target, mapping, {"mode": mode}, target, axes, target_src, axes_src)
    extra = draw(st.integers(1, min(2, room)))
    rank = r + extra
    new_axes = tuple(range(r, rank)) if kind == "like_deduced" else draw_subset(draw, extra, rank)
    kept = [i for i in range(rank) if i not in new_axes]
    dims = dict(zip(kept, d, strict=True))
    shape = tuple(dims[i] if i in dims else draw_dim(draw) for i in range(rank))
    if kind == "v0":
        attrs = {"shape": list(shape), "broadcast_axes": list(draw(st.permutations(new_axes)))}
        return Step(kind, "BroadcastV0", d, shape, tuple(kept), attrs)
    attrs = {} if kind == "like_deduced" else {"initial_broadcast_axes": list(new_axes)}
    like_dtype = draw(st.sampled_from(["float32", "int64", "bool"]))
    return Step(kind, "BroadcastLikeV0", d, shape, tuple(kept), attrs, shape, None, draw(st.sampled_from(
        ["static", "dynamic"] if runtime else ["static"])), like_dtype=like_dtype)


def _mode(mode: str | None) -> dict[str, Any]:
    return {} if mode is None else {"mode": mode}


@st.composite
def chains(draw: Callable, runtime: bool, nested: bool, static_only: bool = False) -> Chain:
    """2-4 steps; shape inputs static or (``runtime``) also graph inputs and computed; one step nested or none."""
    dtype = draw(st.sampled_from(list(DTYPES)))
    shape = tuple(draw_dim(draw) for _ in range(draw(st.integers(0, 3))))
    x_dynamic = draw(st.booleans()) if runtime else False
    steps = []
    d = shape
    for _ in range(draw(st.integers(2, 4))):
        step = draw_step(draw, d, runtime, static_only)
        steps.append(step)
        d = step.out_shape
    where = None
    if nested:
        where = (draw(st.integers(0, len(steps) - 1)), draw(st.sampled_from(["if", "loop", "function"])))
    tail = draw(st.sampled_from([None, None, "full", "row"])) if dtype not in ("int8", "uint8") else None  # Add-14+
    return Chain(dtype, shape, x_dynamic, tuple(steps), where, tail)


# ---------------------------------------------------------------------------------------------- model builder


class Scope:
    """A node list being filled: the main graph, an If branch, a Loop body or a function body."""

    def __init__(self, builder: Builder, main: bool) -> None:
        self.builder = builder
        self.main = main
        self.nodes: list[NodeProto] = []
        self.external: list[str] = []  # graph inputs read here (a function takes them as inputs)

    def node(self, op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], name=f"{output}_node", domain=domain, **attrs))
        return output

    def const(self, name: str, values: Any, dtype: Any, as_initializer: bool) -> str:
        tensor = numpy_helper.from_array(np.asarray(values, dtype=dtype), name)
        if self.main and (as_initializer or self.builder.opset < 9):  # Constant-1 holds floats only
            self.builder.initializers.append(tensor)
            return name
        return self.node("Constant", [], name, value=tensor)

    def graph_input(self, name: str, value: np.ndarray, elem: int, dims: list | None) -> str:
        self.builder.inputs.append(helper.make_tensor_value_info(name, elem, dims))
        self.builder.feeds[name] = value
        self.external.append(name)
        return name


class Builder:
    """Builds the model of a chain at one default-domain opset, with its feeds and expected output."""

    def __init__(self, chain: Chain, opset: int) -> None:
        self.chain = chain
        self.opset = opset
        self.inputs: list[onnx.ValueInfoProto] = []
        self.initializers: list[TensorProto] = []
        self.functions: list[FunctionProto] = []
        self.feeds: dict[str, np.ndarray] = {}

    def build(self) -> ModelProto:
        chain = self.chain
        elem = DTYPES[chain.dtype][0]
        main = Scope(self, main=True)
        x = sample(chain.x_shape, chain.dtype)
        cur = main.graph_input("x", x, elem, [None] * x.ndim if chain.x_dynamic else list(x.shape))
        for k, step in enumerate(chain.steps):
            where = chain.nested[1] if chain.nested and chain.nested[0] == k else "main"
            cur = getattr(self, f"_place_{where}")(main, k, step, cur, f"y{k}")
        if chain.tail:
            other = tail_operand(chain)
            main.graph_input("tail_operand", other, elem, list(other.shape))
            cur = main.node("Xor" if chain.dtype == "bool" else "Add", [cur, "tail_operand"], "tail")
        output = helper.make_tensor_value_info(cur, elem, chain.steps[-1].out_shape)
        graph = helper.make_graph(main.nodes, "chain", self.inputs, [output], initializer=self.initializers)
        opsets = [helper.make_opsetid("", self.opset), helper.make_opsetid(DOMAIN, 1)]
        if self.functions:
            opsets.append(helper.make_opsetid(LOCAL, 1))
        return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION, functions=self.functions)

    def feed_list(self) -> list[dict[str, np.ndarray]]:
        """Both values of an If condition, else the feeds as they are."""
        if "cond" not in self.feeds:
            return [self.feeds]
        return [{**self.feeds, "cond": np.array(flag)} for flag in (True, False)]

    # -- one step -------------------------------------------------------------------------------------------
    def emit(self, scope: Scope, k: int, step: Step, data: str, out: str) -> str:
        inputs = [data]
        attrs = dict(step.attrs)
        if step.op in ("Broadcast", "Expand"):
            inputs.append(self._shape_operand(scope, f"t{k}", step.target, step.target_src, "target"))
            if step.axes is not None:
                inputs.append(self._shape_operand(scope, f"a{k}", step.axes, step.axes_src, "axes"))
        elif step.op == "BroadcastLikeV0":
            like = np.zeros(step.target, DTYPES[step.like_dtype][1])
            dims = list(step.target) if step.target_src == "static" else [None] * like.ndim
            inputs.append(scope.graph_input(f"like{k}", like, DTYPES[step.like_dtype][0], dims))
        scope.nodes.append(helper.make_node(step.op, inputs, [out], name=f"s{k}_{step.kind}", domain=DOMAIN,
                                            **attrs))
        return out

    def _shape_operand(self, scope: Scope, name: str, values: tuple[int, ...], src: str, what: str) -> str:
        """A 1-D integer input: an initializer or Constant (int64/int32), a graph input (int64/int32, length
        declared or not), or computed from the shape of a graph input whose dims are declared or dynamic."""
        vec = [int(v) for v in values]
        if src in ("init", "init32", "const"):
            return scope.const(name, vec, np.int32 if src == "init32" else np.int64, src != "const")
        if src in ("input", "input32"):
            value = np.asarray(vec, np.int32 if src == "input32" else np.int64)
            return scope.graph_input(name, value, TensorProto.INT32 if src == "input32" else TensorProto.INT64,
                                     [len(vec) if len(vec) % 2 else None])
        static = src == "computed_static"
        if what == "axes":  # the axes are the shape of an (empty or tiny) input
            probe = np.zeros(tuple(vec), np.float32)
            scope.graph_input(f"{name}_probe", probe, TensorProto.FLOAT, list(vec) if static else [None] * len(vec))
            return scope.node("Shape", [f"{name}_probe"], name)
        split = len(vec) // 2
        probe = np.zeros(tuple(vec[:split]), np.float32)
        scope.graph_input(f"{name}_probe", probe, TensorProto.FLOAT, list(vec[:split]) if static else [None] * split)
        head = scope.node("Shape", [f"{name}_probe"], f"{name}_head")
        tail = scope.const(f"{name}_tail", vec[split:], np.int64, False)
        return scope.node("Concat", [head, tail], name, axis=0)

    # -- placements -----------------------------------------------------------------------------------------
    def _place_main(self, main: Scope, k: int, step: Step, data: str, out: str) -> str:
        return self.emit(main, k, step, data, out)

    def _place_if(self, main: Scope, k: int, step: Step, data: str, out: str) -> str:
        elem = DTYPES[self.chain.dtype][0]
        then = Scope(self, main=False)
        self.emit(then, k, step, data, f"then{k}")
        other = Scope(self, main=False)  # the same broadcast as an explicit one with constant shapes
        target = other.const(f"else{k}_target", step.out_shape, np.int64, False)
        axes = other.const(f"else{k}_axes", step.mapping, np.int64, False)
        other.nodes.append(helper.make_node("Broadcast", [data, target, axes], [f"else{k}"], name=f"else{k}_bcast",
                                            domain=DOMAIN, mode="explicit"))
        main.graph_input("cond", np.array(True), TensorProto.BOOL, [])  # feed_list runs both values
        branches = {}
        for branch, scope, value in (("then_branch", then, f"then{k}"), ("else_branch", other, f"else{k}")):
            branches[branch] = helper.make_graph(scope.nodes, f"{branch}{k}", [],
                                                 [helper.make_tensor_value_info(value, elem, None)])
        main.nodes.append(helper.make_node("If", ["cond"], [out], name=f"if{k}", **branches))
        return out

    def _place_loop(self, main: Scope, k: int, step: Step, data: str, out: str) -> str:
        """Two iterations; the body broadcasts the outer-scope value into the loop-carried one (whose shape changes
        on the first iteration), since the reference evaluator stacks scan outputs wrongly."""
        elem = DTYPES[self.chain.dtype][0]
        body = Scope(self, main=False)
        body.node("Identity", [f"cond_in{k}"], f"cond_out{k}")
        self.emit(body, k, step, data, f"carried_out{k}")
        graph = helper.make_graph(
            body.nodes, f"body{k}",
            [helper.make_tensor_value_info(f"iter{k}", TensorProto.INT64, []),
             helper.make_tensor_value_info(f"cond_in{k}", TensorProto.BOOL, []),
             helper.make_tensor_value_info(f"carried_in{k}", elem, None)],
            [helper.make_tensor_value_info(f"cond_out{k}", TensorProto.BOOL, []),
             helper.make_tensor_value_info(f"carried_out{k}", elem, None)])
        trips = main.const(f"trips{k}", np.array(2, np.int64), np.int64, True)
        keep_going = main.const(f"keep_going{k}", np.array(True), np.bool_, True)
        main.nodes.append(helper.make_node("Loop", [trips, keep_going, data], [out], name=f"loop{k}", body=graph))
        return out

    def _place_function(self, main: Scope, k: int, step: Step, data: str, out: str) -> str:
        body = Scope(self, main=False)
        self.emit(body, k, step, "fx", "fy")
        name = f"Bcast{k}"
        self.functions.append(helper.make_function(
            LOCAL, name, ["fx"] + body.external, ["fy"], body.nodes,
            [helper.make_opsetid("", self.opset), helper.make_opsetid(DOMAIN, 1)]))
        main.nodes.append(helper.make_node(name, [data] + body.external, [out], name=f"call{k}", domain=LOCAL))
        return out


# ------------------------------------------------------------------------------------------------ assertions


def assert_identical(got: Any, want: np.ndarray, what: str) -> None:
    """Same dtype, shape and bytes."""
    got = np.asarray(got)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), f"{what}: {got.dtype}{got.shape} != {want.dtype}" \
                                                               f"{want.shape}"
    assert got.tobytes() == want.tobytes(), f"{what}: values differ\n{got}\n!=\n{want}"


def node_lists(model: ModelProto) -> Iterator[tuple[str, list[NodeProto]]]:
    """Every node list of the model, subgraphs and functions (and their subgraphs) included, independently walked."""
    def walk(where: str, nodes: Any) -> Iterator[tuple[str, list[NodeProto]]]:
        yield where, list(nodes)
        for node in nodes:
            for attr in node.attribute:
                graphs = [attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)
                for g in graphs:
                    yield from walk(f"{where}/{node.name}.{attr.name}", g.node)
    yield from walk("graph", model.graph.node)
    for function in model.functions:
        yield from walk(f"function {function.domain}.{function.name}", function.node)


def assert_standard(model: ModelProto) -> None:
    """No onnx_bcast node anywhere and no onnx_bcast import, in the model or its functions."""
    for where, nodes in node_lists(model):
        ours = [n.name or n.op_type for n in nodes if n.domain.startswith(DOMAIN)]
        assert not ours, f"{where} still holds {ours}"
    assert DOMAIN not in {o.domain for o in model.opset_import}
    for function in model.functions:
        assert DOMAIN not in {o.domain for o in function.opset_import}, function.name


def _uses_runtime_reshape(model: ModelProto) -> bool:
    return any(n.op_type == "ScatterElements" for _, nodes in node_lists(model) for n in nodes)


def check_converted(original: ModelProto, feeds_list: list[dict[str, np.ndarray]], expected: np.ndarray,
                    zero_reshape_limit: bool = False) -> None:
    """The conversion is standard, checked, and identical to numpy in plain ORT and the reference evaluator, and
    so is the original through onnx_bcast.InferenceSession (checked last, so a converter fault shows on its own).

    ``zero_reshape_limit``: the documented limit below opset 14 (run-time explicit mapping of zero-size data goes
    through a Reshape without allowzero): ORT may then refuse the model or the run, but never give wrong values."""
    before = original.SerializeToString(deterministic=True)
    if zero_reshape_limit:
        try:
            converted = convert(original)
        except onnx_bcast.BroadcastError as err:  # the documented refusal when the zero is statically known
            assert "opset >= 14" in str(err), err
            return
    else:
        converted = convert(original)
    assert original.SerializeToString(deterministic=True) == before, "convert changed its input"
    assert_standard(converted)
    onnx.checker.check_model(converted, full_check=True)
    options = ort.SessionOptions()
    options.log_severity_level = 4 if zero_reshape_limit else 3
    limited = zero_reshape_limit and _uses_runtime_reshape(converted)
    if limited:
        try:
            plain = ort.InferenceSession(converted.SerializeToString(), options, providers=["CPUExecutionProvider"])
            outputs = [plain.run(None, feeds)[0] for feeds in feeds_list]
        except Exception:  # refused loudly: the documented limit, not a wrong result
            outputs = []
        for got in outputs:
            assert_identical(got, expected, "plain onnxruntime (opset < 14, zero-size run-time explicit)")
    else:
        plain = ort.InferenceSession(converted.SerializeToString(), options, providers=["CPUExecutionProvider"])
        reference = ReferenceEvaluator(converted)
        for feeds in feeds_list:
            assert_identical(plain.run(None, feeds)[0], expected, "plain onnxruntime")
            assert_identical(reference.run(None, feeds)[0], expected, "ReferenceEvaluator")
    again = convert(converted)
    assert again.SerializeToString(deterministic=True) == converted.SerializeToString(deterministic=True)
    ours = onnx_bcast.InferenceSession(original)
    for feeds in feeds_list:
        assert_identical(ours.run(None, feeds)[0], expected, "onnx_bcast.InferenceSession")


def check_chain(chain: Chain, opsets: list[int]) -> None:
    """The chain's model built directly at each opset, checked against one numpy expectation."""
    expected = expected_output(chain, sample(chain.x_shape, chain.dtype))
    # an If's other branch is an explicit Broadcast of the same step: any zero-size step may take that path
    zero_explicit = any(0 in step.data_shape and (step.kind == "explicit" or chain.nested is not None)
                        for step in chain.steps)
    for opset in opsets:
        builder = Builder(chain, opset)
        model = builder.build()
        check_converted(model, builder.feed_list(), expected, zero_reshape_limit=zero_explicit and opset < 14)


# ---------------------------------------------------------------------------------------------- generated tests


@pytest.mark.slow  # with the other two: 606 s of the suite's 2504 s of test time (docs/testing.md)
@settings(max_examples=200, **SETTINGS)
@given(chains(runtime=True, nested=False))
def test_generated_chain_with_runtime_shapes(chain: Chain) -> None:
    check_chain(chain, OPSETS)


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(chains(runtime=True, nested=True))
def test_generated_chain_with_if_loop_or_function(chain: Chain) -> None:
    check_chain(chain, OPSETS)


@pytest.mark.slow
@settings(max_examples=150, **SETTINGS)
@given(chains(runtime=False, nested=False, static_only=True))
def test_generated_static_chain_down_to_opset_8(chain: Chain) -> None:
    check_chain(chain, [8] + OPSETS)


# ------------------------------------------------------------------------------------------ deterministic tests

F32, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32


def ours(op: str, inputs: list[str], output: str, name: str, **attrs: Any) -> NodeProto:
    """A node of our domain."""
    return helper.make_node(op, inputs, [output], name=name, domain=DOMAIN, **attrs)


def init(name: str, values: Any, dtype: Any = np.int64) -> TensorProto:
    """A tensor (initializer or Constant value)."""
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def standard_model(nodes: list[NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
                   initializers: list[TensorProto], functions: list[FunctionProto] = (), opset: int = 17) -> ModelProto:
    """A model importing our domain (and the local one when it has functions)."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=initializers)
    imports = [helper.make_opsetid("", opset), helper.make_opsetid(DOMAIN, 1)]
    if functions:
        imports.append(helper.make_opsetid(LOCAL, 1))
    return helper.make_model(graph, opset_imports=imports, ir_version=IR_VERSION, functions=list(functions))


def run_converted(converted: ModelProto, feeds: dict[str, np.ndarray], expected: np.ndarray) -> None:
    """Checker, plain ORT and the reference evaluator on a converted model, against a numpy expectation."""
    assert_standard(converted)
    onnx.checker.check_model(converted, full_check=True)
    plain = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
    assert_identical(plain.run(None, feeds)[0], expected, "plain onnxruntime")
    assert_identical(ReferenceEvaluator(converted).run(None, feeds)[0], expected, "ReferenceEvaluator")


def test_conversion_preserves_the_rest_of_the_model() -> None:
    add_one = helper.make_function(LOCAL, "AddOne", ["a"], ["b"], [
        helper.make_node("Constant", [], ["one"], name="one_node", value=init("one", [1.0], np.float32)),
        helper.make_node("Add", ["a", "one"], ["b"], name="add_node")], [helper.make_opsetid("", 17)],
        doc_string="adds one")
    with_ours = helper.make_function(LOCAL, "Widen", ["a"], ["b"], [
        helper.make_node("Constant", [], ["shape"], name="shape_node", value=init("shape", [2, 2, 3])),
        ours("Broadcast", ["a", "shape"], "b", "widen_inner")],
        [helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)], doc_string="widens")
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["pre"], name="pre_mul", doc_string="doubles"),
        ours("Broadcast", ["pre", "axes_target", "axes"], "wide", "bcast", mode="explicit", doc_string="ours"),
        helper.make_node("Neg", ["wide"], ["post"], name="post_neg", doc_string="negates"),
        helper.make_node("AddOne", ["post"], ["plus"], name="call_add_one", domain=LOCAL),
        ours("BroadcastV0", ["plus"], "v0", "v0_node", shape=[2, 2, 3], broadcast_axes=[0]),
        helper.make_node("Widen", ["v0"], ["widened"], name="call_widen", domain=LOCAL),
        helper.make_node("Identity", ["widened"], ["y"], name="final"),
    ]
    initializers = [init("two", [2.0], np.float32), init("axes_target", [2, 3], np.int32), init("axes", [1]),
                    init("unused", [7.0, 8.0], np.float32)]
    model = standard_model(nodes, [helper.make_tensor_value_info("x", F32, [3])],
                           [helper.make_tensor_value_info("y", F32, [2, 2, 3])], initializers, [add_one, with_ours])
    model.doc_string = "model doc"
    model.graph.doc_string = "graph doc"
    model.producer_name, model.producer_version, model.model_version = "gen-test", "1.2", 7
    helper.set_model_props(model, {"author": "tests", "purpose": "preservation"})
    model.graph.value_info.extend([helper.make_tensor_value_info("pre", F32, [3]),
                                   helper.make_tensor_value_info("post", F32, [None, 3])])

    converted = convert(model)

    x = np.array([1.0, -2.5, 4.0], np.float32)
    run_converted(converted, {"x": x}, np.broadcast_to(-(2 * x) + 1, (2, 2, 3)).copy())
    for field_name in ("doc_string", "producer_name", "producer_version", "model_version", "domain"):
        assert getattr(converted, field_name) == getattr(model, field_name), field_name
    assert converted.graph.doc_string == "graph doc" and converted.graph.name == model.graph.name
    assert [(p.key, p.value) for p in converted.metadata_props] == [(p.key, p.value) for p in model.metadata_props]
    assert converted.graph.input == model.graph.input and converted.graph.output == model.graph.output
    # value_info is a claim that may be stale (issue 18): dropped, never trusted (README: What is known)
    assert not converted.graph.value_info
    kept = {t.name: t for t in converted.graph.initializer}
    for name in ("two", "unused"):  # read by a standard node, and read by nothing
        assert kept.get(name) == next(t for t in model.graph.initializer if t.name == name), name
    # the other nodes: the same protos, in the same order, each rewrite where its node was
    other = [n for n in model.graph.node if n.domain != DOMAIN]
    positions = {n.output[0]: i for i, n in enumerate(converted.graph.node)}
    assert [n for n in converted.graph.node if n.name in {o.name for o in other}] == other
    assert positions["pre"] < positions["wide"] < positions["post"] < positions["plus"] < positions["v0"] \
        < positions["widened"] < positions["y"]
    functions = {(f.domain, f.name): f for f in converted.functions}
    assert list(functions) == [(LOCAL, "AddOne"), (LOCAL, "Widen")]
    assert functions[(LOCAL, "AddOne")] == add_one
    widen = functions[(LOCAL, "Widen")]
    assert (list(widen.input), list(widen.output), widen.doc_string) == (["a"], ["b"], "widens")
    assert DOMAIN not in {o.domain for o in converted.opset_import}
    assert {o.domain: o.version for o in converted.opset_import} == {"": 17, LOCAL: 1}


def test_new_names_never_collide() -> None:
    """Names the converter could derive from our nodes' names are taken already: as values, node names,
    initializers and graph inputs; and a node is named as an unnamed node of ours would be labelled."""
    taken = [("n_cast", "n/Cast"), ("n_shape", "n/Shape"), ("n_constantofshape", "n/ConstantOfShape"),
             ("n_scatterelements", "n/ScatterElements"), ("n_reshape", "n/Reshape"), ("n_expand", "m/Unsqueeze"),
             ("m_unsqueeze", "m/Expand"), ("m_expand", "n_axes_mapping"), ("Broadcast#0_expand", "m_target_shape_1")]
    nodes = [
        ours("Broadcast", ["x", "first_target"], "first", ""),  # unnamed: labelled "Broadcast#0"
        helper.make_node("Identity", ["first"], ["first_copy"], name="Broadcast#0"),
        ours("Expand", ["first_copy", "m_target", "m_axes"], "wide", "m", mode="explicit"),  # static
        ours("Broadcast", ["wide", "n_target", "n_axes"], "wider", "n", mode="explicit"),  # run-time shapes
    ]
    previous = "wider"
    for value, node_name in taken:
        nodes.append(helper.make_node("Identity", [previous], [value], name=node_name))
        previous = value
    nodes.append(helper.make_node("Identity", [previous], ["y"], name="m_axes_1"))
    initializers = [init("first_target", [2, 3]), init("m_target", [2, 2, 3], np.int32),
                    init("m_axes", [1, 2], np.int32), init("m_target_shape", [9]), init("m_axes_1_1", [9])]
    inputs = [helper.make_tensor_value_info("x", F32, [3]), helper.make_tensor_value_info("n_target", I32, [None]),
              helper.make_tensor_value_info("n_axes", I32, [None]), helper.make_tensor_value_info("m_axes_2", F32, [1])]
    model = standard_model(nodes, inputs, [helper.make_tensor_value_info("y", F32, [2, 2, 3, 1])], initializers)

    converted = convert(model)

    node_names = [n.name for n in converted.graph.node if n.name]
    assert len(node_names) == len(set(node_names)), sorted({n for n in node_names if node_names.count(n) > 1})
    values = [o for n in converted.graph.node for o in n.output] + [t.name for t in converted.graph.initializer] \
        + [v.name for v in converted.graph.input]
    assert len(values) == len(set(values)), sorted({n for n in values if values.count(n) > 1})
    for node in model.graph.node:
        if node.domain != DOMAIN:
            assert node in converted.graph.node, node.name
    x = np.array([1.0, 2.0, 3.0], np.float32)
    feeds = {"x": x, "n_target": np.array([2, 2, 3, 1], np.int32), "n_axes": np.array([0, 1, 2], np.int32),
             "m_axes_2": np.zeros(1, np.float32)}
    run_converted(converted, feeds, np.stack([np.broadcast_to(x, (2, 3))] * 2)[..., np.newaxis])


def _invalid_in(where: str) -> ModelProto:
    """A Broadcast numpy of data (2, 3) to the constant target (2, 4), named "bad_node", in the main graph or a body."""
    bad = ours("Broadcast", ["x", "target"], "inner", "bad_node")
    inputs = [helper.make_tensor_value_info("x", F32, [2, 3])]
    out = [helper.make_tensor_value_info("y", F32, None)]
    if where == "graph":
        nodes = [bad, helper.make_node("Identity", ["inner"], ["y"], name="out")]
    elif where == "if":
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
        then = helper.make_graph([bad], "then", [], [helper.make_tensor_value_info("inner", F32, None)])
        other = helper.make_graph([helper.make_node("Identity", ["x"], ["other"], name="other_id")], "else", [],
                                  [helper.make_tensor_value_info("other", F32, None)])
        nodes = [helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then, else_branch=other)]
    else:
        body = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["c_out"], name="c_id"), bad], "body",
            [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
             helper.make_tensor_value_info("v", F32, None)],
            [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
             helper.make_tensor_value_info("inner", F32, None)])
        nodes = [helper.make_node("Loop", ["trips", "", "x"], ["y"], name="loop", body=body)]
    return standard_model(nodes, inputs, out, [init("target", [2, 4]), init("trips", 2)])


@pytest.mark.parametrize("where", ["graph", "if", "loop"])
def test_static_invalid_broadcast_fails_conversion_naming_the_node(where: str) -> None:
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        convert(_invalid_in(where))
    message = str(info.value)
    assert "node 'bad_node'" in message, message
    assert "Broadcast(mode=numpy)" in message and "(2, 3)" in message and "(2, 4)" in message, message
