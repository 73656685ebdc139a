"""The dims and shape values that proofs follow through standard ops (``shape_values``, ``value_dims``) hold in
every run that gets past the op: ONNX Runtime is the oracle. Each model is run at every choice of its inputs' dims
from {0, 1, 2, 3}; where the run succeeds, each element the facts name (an int, a symbol of a value's dim, a
product of dims, ``max(1, ...)``) equals what the run computed. An element the facts do not name is not checked,
and some that they must name are asserted, so that the proofs do not silently stop following."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from onnx_bcast.lowering.dim_arithmetic import AtLeastOne, Product
from onnx_bcast.lowering.shape_values import ShapeValues
from onnx_bcast.lowering.static_facts import StaticFacts

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _i64(name: str, values: list[int]) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, I64, [len(values)], values))


def _scalar(name: str, value: int) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, I64, [], [value]))


def _f32w(name: str, shape: list[int]) -> onnx.NodeProto:
    size = int(np.prod(shape))
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, F, shape, [0.5] * size))


N = helper.make_node
# name: (inputs {name: dims}, nodes, "dims" or "value" (of "out"), the elements that must be named)
CASES: dict[str, tuple] = {
    "add": ({"x": ["a", "b"], "y": ["c", "b2"]}, [N("Add", ["x", "y"], ["out"])], "dims", ()),
    "add_row": ({"x": ["a", "b"], "y": ["b2"]}, [N("Add", ["x", "y"], ["out"])], "dims", (0,)),
    "add_ones": ({"x": ["a", 1], "y": [1, "b"]}, [N("Add", ["x", "y"], ["out"])], "dims", (0, 1)),
    "add_fixed": ({"x": ["a", 3], "y": ["c", "b"]}, [N("Add", ["x", "y"], ["out"])], "dims", (1,)),
    "same_symbol": ({"x": ["a", "b"]}, [N("Relu", ["x"], ["r"]), N("Mul", ["x", "r"], ["out"])], "dims", (0, 1)),
    "where": ({"c": ["a", 1], "x": ["a2", "b"], "y": ["b2"]},
              [N("Cast", ["c"], ["cb"], to=TensorProto.BOOL), N("Where", ["cb", "x", "y"], ["out"])], "dims", ()),
    "max3": ({"x": ["a", 1], "y": [1, "b"], "z": ["b2"]}, [N("Max", ["x", "y", "z"], ["out"])], "dims", (0,)),
    "matmul": ({"x": ["a", "m", "k"], "y": ["k2", 4]}, [N("MatMul", ["x", "y"], ["out"])], "dims", (0, 1, 2)),
    "matmul_batch": ({"x": ["a", 1, "m", "k"], "y": ["b", "k2", "n"]}, [N("MatMul", ["x", "y"], ["out"])], "dims",
                     (2, 3)),
    "matmul_batch_empty": ({"x": [0, "m", "k"], "y": ["b", "k2", "n"]}, [N("MatMul", ["x", "y"], ["out"])], "dims",
                           (1, 2)),
    "matmul_vector": ({"x": ["k"], "y": ["a", "k2", "n"]}, [N("MatMul", ["x", "y"], ["out"])], "dims", (0, 1)),
    "matmul_by_vector": ({"x": ["a", "m", "k"], "y": ["k2"]}, [N("MatMul", ["x", "y"], ["out"])], "dims", (0, 1)),
    "reshape_copy": ({"x": ["a", 6]}, [_i64("s", [0, 2, 3]), N("Reshape", ["x", "s"], ["out"])], "dims",
                     (0, 1, 2)),
    "reshape_rest": ({"x": ["a"]}, [_i64("s", [-1, 1]), N("Reshape", ["x", "s"], ["out"])], "dims", (0, 1)),
    "reshape_rest_int": ({"x": [2, 6]}, [_i64("s", [4, -1]), N("Reshape", ["x", "s"], ["out"])], "dims", (0, 1)),
    "reshape_rest_times": ({"x": ["a", 4]}, [_i64("s", [-1, 2]), N("Reshape", ["x", "s"], ["out"])], "dims", (1,)),
    "reshape_to_shape": ({"x": ["a", "b"], "y": ["c", "d"]},
                         [N("Shape", ["y"], ["s"]), N("Reshape", ["x", "s"], ["out"])], "dims", ()),
    "reshape_to_shape_allowzero": ({"x": ["a", "b"], "y": ["c", "d"]},
                                   [N("Shape", ["y"], ["s"]), N("Reshape", ["x", "s"], ["out"], allowzero=1)],
                                   "dims", ()),
    "reshape_to_own": ({"x": ["a", "b", "c"]},
                       [N("Shape", ["x"], ["s"]), _i64("i", [0, 1]), N("Gather", ["s", "i"], ["ab"]),
                        _i64("m", [-1]), N("Concat", ["ab", "m"], ["t"], axis=0), N("Reshape", ["x", "t"], ["out"])],
                       "dims", (0, 1)),
    "reshape_own_after_zero": ({"x": ["a", "b"]},
                               [N("Shape", ["x"], ["s"]), _i64("i", [0]), N("Gather", ["s", "i"], ["a_"]),
                                _i64("k", [-1]), N("Concat", ["a_", "k"], ["t"], axis=0),
                                N("Reshape", ["x", "t"], ["out"])], "dims", (0,)),
    "slice_whole": ({"x": ["a", "b"]}, [_i64("s", [0]), _i64("e", [2**63 - 1]), _i64("ax", [1]),
                                        N("Slice", ["x", "s", "e", "ax"], ["out"])], "dims", (0, 1)),
    "slice_ints": ({"x": ["a", 7]}, [_i64("s", [1, -1]), _i64("e", [-1, -8]), _i64("ax", [1, 0]), _i64("st", [2, -1]),
                                     N("Slice", ["x", "s", "e", "ax", "st"], ["out"])], "dims", (1,)),
    "slice_part": ({"x": ["a", "b"]}, [_i64("s", [1]), _i64("e", [2**63 - 1]), N("Slice", ["x", "s", "e"], ["out"])],
                   "dims", (1,)),
    "slice_to_big": ({"x": ["a", "b"]}, [_i64("s", [0]), _i64("e", [2]), N("Slice", ["x", "s", "e"], ["out"])], "dims",
                     (1,)),
    "conv_1x1": ({"x": ["n", 2, "h", "w"]}, [_f32w("w", [3, 2, 1, 1]), N("Conv", ["x", "w"], ["out"])], "dims",
                 (0, 1, 2, 3)),
    "conv_3x3": ({"x": ["n", 2, "h", "w"]},
                 [_f32w("w", [3, 2, 3, 3]), N("Conv", ["x", "w"], ["out"], pads=[1, 1, 1, 1])], "dims", (0, 1)),
    "transpose": ({"x": ["a", "b", 3]}, [N("Transpose", ["x"], ["out"], perm=[2, 0, 1])], "dims", (0, 1, 2)),
    "transpose_default": ({"x": ["a", 2]}, [N("Transpose", ["x"], ["out"])], "dims", (0, 1)),
    "reduce_input_axes": ({"x": ["a", "b", "c"]}, [_i64("ax", [1]), N("ReduceSum", ["x", "ax"], ["out"], keepdims=0)],
                          "dims", (0, 1)),
    "reduce_keep": ({"x": ["a", "b", "c"]}, [_i64("ax", [-1]), N("ReduceSum", ["x", "ax"], ["out"])], "dims",
                    (0, 1, 2)),
    "reduce_attr_axes": ({"x": ["a", "b"]}, [N("ReduceMax", ["x"], ["out"], axes=[0], keepdims=1)], "dims", (0, 1)),
    "reduce_all": ({"x": ["a", "b"]}, [N("ReduceMean", ["x"], ["out"], keepdims=0)], "dims", ()),
    "reduce_noop": ({"x": ["a", "b"]}, [_i64("ax", []), N("ReduceSum", ["x", "ax"], ["out"], noop_with_empty_axes=1)],
                    "dims", ()),
    "squeeze": ({"x": ["a", 1, "b"]}, [_i64("ax", [1]), N("Squeeze", ["x", "ax"], ["out"])], "dims", (0, 1)),
    "unsqueeze": ({"x": ["a", "b"]}, [_i64("ax", [0, -1]), N("Unsqueeze", ["x", "ax"], ["out"])], "dims",
                  (0, 1, 2, 3)),
    "concat": ({"x": ["a", "b"], "y": ["c", "b2"]}, [N("Concat", ["x", "y"], ["out"], axis=0)], "dims", ()),
    "concat_fixed": ({"x": [2, "b"], "y": [3, "b2"]}, [N("Concat", ["x", "y"], ["out"], axis=-2)], "dims", (0,)),
    "concat_same": ({"x": ["a", "b"]}, [N("Relu", ["x"], ["r"]), N("Concat", ["x", "r"], ["out"], axis=0)], "dims",
                    (1,)),
    "product": ({"x": ["a", "b", "c"]},
                [N("Shape", ["x"], ["s"]), _scalar("i1", 1), _scalar("i2", 2), N("Gather", ["s", "i1"], ["h"]),
                 N("Gather", ["s", "i2"], ["w"]), _i64("one", [1]), N("Reshape", ["h", "one"], ["h1"]),
                 N("Reshape", ["w", "one"], ["w1"]), N("Mul", ["h1", "w1"], ["hw"]),
                 N("Concat", ["hw", "one"], ["t"], axis=0), _i64("ones", [1, 1]), N("Max", ["ones", "t"], ["out"])],
                "value", (0, 1)),
    "product_of_two_values": ({"x": ["a"], "y": ["b"]},
                              [N("Shape", ["x"], ["sx"]), N("Shape", ["y"], ["sy"]), N("Mul", ["sx", "sy"], ["out"])],
                              "value", ()),
    "max_with_zero": ({"x": ["a", "b"]}, [N("Shape", ["x"], ["s"]), _i64("z", [0, -3]), N("Max", ["s", "z"], ["out"])],
                      "value", (0, 1)),
    "max_of_two_shapes": ({"x": ["a", "b"], "y": ["c", "d"]},
                          [N("Shape", ["x"], ["sx"]), N("Shape", ["y"], ["sy"]), N("Max", ["sx", "sy"], ["out"])],
                          "value", ()),
    "max_single": ({"x": ["a", "b"]}, [N("Shape", ["x"], ["s"]), N("Max", ["s"], ["out"])], "value", (0, 1)),
    "int32_round_trip": ({"x": ["a", "b"]},
                         [N("Shape", ["x"], ["s"]), N("Cast", ["s"], ["s32"], to=TensorProto.INT32),
                          N("Cast", ["s32"], ["out"], to=I64)], "value", (0, 1)),
}


def _model(inputs: dict, nodes: list, watched: list[str]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(k, F, v) for k, v in inputs.items()],
                              [helper.make_empty_tensor_value_info(name) for name in watched])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 17)])


def _facts(model: onnx.ModelProto, name: str, kind: str) -> tuple:
    facts = StaticFacts(model)
    producers = {out: node for node in model.graph.node for out in node.output}
    values = ShapeValues(producers, facts.shapes.get, facts.values.get, facts.types.get)
    return values.dims(name) if kind == "dims" else values(name)


def _symbols(element: object) -> list[tuple[str, int]]:
    if isinstance(element, (Product, AtLeastOne)):
        return [s for e in element for s in _symbols(e)]
    return [element] if isinstance(element, tuple) else []


def _instance(element: object, shapes: dict[str, tuple[int, ...]]) -> int | None:
    if element is None:
        return None
    if isinstance(element, Product):
        return int(np.prod([_instance(e, shapes) for e in element]))
    if isinstance(element, AtLeastOne):
        return max(1, _instance(element[0], shapes))
    if isinstance(element, tuple):
        return shapes[element[0]][element[1]]
    return int(element)


class _OpenVINO:
    """OpenVINO's CPU plugin on the ONNX model, as a session (``run(names, feeds)``)."""

    def __init__(self, model: onnx.ModelProto) -> None:
        ov = pytest.importorskip("openvino", reason="openvino is a test oracle, not a dependency")
        core = ov.Core()
        self.compiled = core.compile_model(core.read_model(model=model.SerializeToString()), "CPU")

    def run(self, names: list[str], feeds: dict) -> list[np.ndarray]:
        results = self.compiled(feeds)
        return [np.asarray(results[self.compiled.output(name)]) for name in names]


def _session(runtime: str, model: onnx.ModelProto) -> object:
    if runtime == "openvino":
        return _OpenVINO(model)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


# what a runtime older than the one measured right computes otherwise: (case, runtime) -> (right from, reason)
OLDER_RUNTIMES_DIFFER = {
    ("reduce_keep", "onnxruntime"): ((1, 32), "ONNX Runtime 1.20 reduces an empty axis with keepdims to a dim of 0, "
                                              "not 1 (ONNX's rule, which onnx's shape inference states too)"),
}


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_named_dims_and_values_are_what_every_run_computes(case: str, runtime: str,
                                                           request: pytest.FixtureRequest) -> None:
    """In ONNX Runtime and in OpenVINO's CPU plugin (which run the converted models)."""
    if (case, runtime) in OLDER_RUNTIMES_DIFFER:
        right_from, reason = OLDER_RUNTIMES_DIFFER[case, runtime]
        if tuple(int(p) for p in ort.__version__.split(".")[:2]) < right_from:
            request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    inputs, nodes, kind, named = CASES[case]
    if runtime == "openvino" and any(d == 0 for dims in inputs.values() for d in dims):
        pytest.skip("OpenVINO's CPU plugin does not compile an input declared with a dim of 0")
    facts = _facts(_model(inputs, nodes, ["out"]), "out", kind)
    assert facts is not None, "the facts name nothing"
    for k in named:
        assert facts[k] is not None, f"element {k} of {facts} is no longer named"
    watched = ["out", *sorted({s[0] for e in facts for s in _symbols(e)} - set(inputs) - {"out"})]
    session = _session(runtime, _model(inputs, nodes, watched))
    params = sorted({d for dims in inputs.values() for d in dims if isinstance(d, str)})
    ran = 0
    for choice in itertools.product(range(4), repeat=len(params)):
        size = dict(zip(params, choice, strict=True))
        feeds = {k: np.ones([size.get(d, d) for d in dims], np.float32) for k, dims in inputs.items()}
        try:
            results = session.run(watched, feeds)
        except Exception:  # noqa: BLE001 - the op refused these shapes: no fact is asked of this run
            continue
        ran += 1
        shapes = {k: v.shape for k, v in feeds.items()} | {k: v.shape for k, v in zip(watched, results, strict=True)}
        actual = tuple(results[0].shape) if kind == "dims" else tuple(int(v) for v in results[0].reshape(-1))
        assert len(facts) == len(actual), (size, facts, actual)
        for k, element in enumerate(facts):
            expected = _instance(element, shapes)
            assert expected is None or expected == actual[k], (size, k, element, facts, actual)
    assert ran, "no run succeeded"


def test_a_chain_of_thousands_of_standard_ops_is_followed_without_recursion() -> None:
    nodes = [N("Relu", ["x"], ["v0"])] + [N("Add", [f"v{i}", "c"], [f"v{i + 1}"]) for i in range(3000)]
    model = _model({"x": ["a", "b"], "c": ["k"]}, nodes, ["v3000"])
    assert _facts(model, "v3000", "dims")[0] == ("x", 0)


def test_following_dims_never_asks_for_a_float_weight() -> None:
    """Cost follows the graph: a weight the dims pass through (``Add(x, w)``, w float [4]) is never read."""
    nodes = [N("Add", ["x", "w"], ["y"]), N("Shape", ["y"], ["s"]), N("Reshape", ["y", "s"], ["out"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, ["a", 4])],
                              [helper.make_tensor_value_info("out", F, None)],
                              [helper.make_tensor("w", F, [4], [1.0, 2.0, 3.0, 4.0])])
    model = helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 17)])
    facts = StaticFacts(model)
    asked: list[str] = []

    def constant_of(name: str) -> np.ndarray | None:
        asked.append(name)
        return facts.values.get(name)

    producers = {out: node for node in model.graph.node for out in node.output}
    values = ShapeValues(producers, facts.shapes.get, constant_of, facts.types.get)
    assert values.dims("out") == (("x", 0), 4)
    assert "w" not in asked, asked
