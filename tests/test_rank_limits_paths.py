"""Ranks 33 and 64 run on every path (numpy and native backends, plain ORT on prepare(), the converted model);
rank 65 is a BroadcastError in InferenceSession and a failure, never a value, in plain ORT. numpy 1 makes no array
of more than 32 dims: there the runs fed such arrays skip, saying so, and the conversion is still tested."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from tests.numpy_dims import array_ranks

CPU = ["CPUExecutionProvider"]


def _model(op: str, rank: int, static: bool, **attrs: object) -> tuple:
    """``op`` of domain onnx_bcast on A of rank ``rank`` (2 and 3 at its first and last axes) and B [3]; feeds and
    the expected output."""
    model = _graph(op, rank, static, **attrs)
    a = np.arange(6, dtype=np.float32).reshape([2] + [1] * (rank - 2) + [3])
    return model, {"A": a, "B": np.array([10, 20, 30], np.float32)}, a + np.array([10, 20, 30], np.float32)


def _graph(op: str, rank: int, static: bool, **attrs: object) -> onnx.ModelProto:
    """The model of ``_model``, without arrays of its rank (numpy 1 makes none over 32 dims)."""
    a_dims = [2] + [1] * (rank - 2) + [3] if static else [f"a{i}" for i in range(rank)]
    nodes = [helper.make_node(op, ["A", "B"], ["Y"], domain="onnx_bcast", name="n", **attrs)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("A", TensorProto.FLOAT, a_dims),
                                           helper.make_tensor_value_info("B", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                             ir_version=10)


RUNNERS = {
    "numpy backend": lambda m, f: onnx_bcast.InferenceSession(m).run(None, f)[0],
    "native backend": lambda m, f: onnx_bcast.InferenceSession(m, backend="native").run(None, f)[0],
    "plain ORT on prepare": lambda m, f: ort.InferenceSession(
        onnx_bcast.prepare(m).SerializeToString(), onnx_bcast.session_options(), providers=CPU).run(None, f)[0],
    "converted": lambda m, f: ort.InferenceSession(onnx_bcast.convert(m).SerializeToString(),
                                                   providers=CPU).run(None, f)[0],
}


@pytest.mark.parametrize("static", [True, False], ids=["static", "run-time"])
@pytest.mark.parametrize("rank", array_ranks((33, 64)))
@pytest.mark.parametrize("runner", RUNNERS)
def test_elementwise_of_high_rank_runs_on_every_path(runner: str, rank: int, static: bool) -> None:
    model, feeds, expected = _model("Add", rank, static, auto_broadcast="pdpd", axis=rank - 1)
    got = RUNNERS[runner](model, feeds)
    assert got.shape == expected.shape and np.array_equal(got, expected)


@pytest.mark.parametrize("static", [True, False], ids=["static", "run-time"])
@pytest.mark.parametrize("rank", [33, 64])
def test_high_rank_converts_and_prepares_on_any_numpy(rank: int, static: bool) -> None:
    """Converting (and preparing) a model of rank 33 or 64 makes no array of that rank: it works on numpy 1 too,
    where only running the numpy kernels is refused (tests/test_numpy1_ranks.py)."""
    model = _graph("Add", rank, static, auto_broadcast="pdpd", axis=rank - 1)
    for made in (onnx_bcast.convert(model), onnx_bcast.prepare(model)):
        assert made.graph.node and not any(n.domain == "onnx_bcast" for n in made.graph.node)
    converted = onnx.shape_inference.infer_shapes(onnx_bcast.convert(model), strict_mode=True)
    (y,) = [v for v in converted.graph.value_info if v.name.startswith("Y")] or converted.graph.output
    dims = [d.dim_value if d.HasField("dim_value") else None for d in y.type.tensor_type.shape.dim]
    assert len(dims) == rank and (not static or dims == [2] + [1] * (rank - 2) + [3])


def _rank_65_model(run_time: bool) -> tuple:
    """A [2, 3] reshaped in the graph to rank 65 (the shape a constant, or fed at run time), then our Add with B [3],
    then ReduceSum to a scalar output."""
    shape65 = helper.make_tensor("shape65", TensorProto.INT64, [65], [2] + [1] * 63 + [3])
    nodes = [helper.make_node("Reshape", ["A", "shape65"], ["A65"]),
             helper.make_node("Add", ["A65", "B"], ["S"], domain="onnx_bcast", name="n", auto_broadcast="numpy"),
             helper.make_node("ReduceSum", ["S"], ["Y"], keepdims=0)]
    inputs = [helper.make_tensor_value_info("A", TensorProto.FLOAT, [2, 3]),
              helper.make_tensor_value_info("B", TensorProto.FLOAT, [3])]
    if run_time:
        inputs.append(helper.make_tensor_value_info("shape65", TensorProto.INT64, [None]))
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                              [] if run_time else [shape65])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                              ir_version=10)
    feeds = {"A": np.ones((2, 3), np.float32), "B": np.ones(3, np.float32)}
    if run_time:
        feeds["shape65"] = np.array([2] + [1] * 63 + [3], np.int64)
    return model, feeds


@pytest.mark.parametrize("run_time", [False, True], ids=["constant shape", "run-time shape"])
@pytest.mark.parametrize("runner", RUNNERS)
def test_rank_65_made_in_the_graph_never_gives_a_value(runner: str, run_time: bool) -> None:
    model, feeds = _rank_65_model(run_time)
    if runner in ("numpy backend", "native backend"):
        with pytest.raises(onnx_bcast.BroadcastError, match="rank 65"):
            RUNNERS[runner](model, feeds)
    else:  # plain ORT cannot raise our type: any error, and no value
        with pytest.raises(Exception):  # noqa: B017
            RUNNERS[runner](model, feeds)


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_like_arg_of_rank_65_names_its_rank(backend: str) -> None:
    """BroadcastLikeV0 reads only like_arg's shape; made rank 65 at run time (a Reshape to a fed shape), it is the
    rule's rank error (SPEC: ranks are at most 64), not numpy's "maximum supported dimension" text."""
    shape65 = [2] + [1] * 63 + [3]
    nodes = [helper.make_node("Reshape", ["A", "s"], ["A65"]),
             helper.make_node("BroadcastLikeV0", ["B", "A65"], ["Y"], domain="onnx_bcast", name="n",
                              initial_broadcast_axes=list(range(64)))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [2, 3]),
                                           helper.make_tensor_value_info("s", TensorProto.INT64, [None]),
                                           helper.make_tensor_value_info("B", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                              ir_version=10)
    feeds = {"A": np.ones((2, 3), np.float32), "s": np.array(shape65, np.int64), "B": np.ones(3, np.float32)}
    with pytest.raises(onnx_bcast.BroadcastError, match="like_arg rank 65 exceeds the maximum rank 64"):
        onnx_bcast.InferenceSession(model, backend=backend).run(None, feeds)


@pytest.mark.parametrize("shape_is", ["a constant with -1", "fed at run time"])
@pytest.mark.parametrize("runner", RUNNERS)
def test_bidirectional_broadcast_of_rank_65_never_gives_a_value(runner: str, shape_is: str) -> None:
    """``Broadcast<bidirectional>`` of data reshaped to rank 65 (its rank known but not its dims, or unknown until run
    time) to ``[1]``: ONNX Runtime's own ``Expand`` computes a rank-65 tensor, so the converted model must check the
    data's rank itself (SPEC: a rank over 64 is an error). A ReduceSum to a scalar keeps the output readable."""
    shape65 = np.array([1] * 64 + [-1], np.int64)
    nodes = [helper.make_node("Reshape", ["A", "shape65"], ["A65"]),
             helper.make_node("Broadcast", ["A65", "one"], ["S"], domain="onnx_bcast", name="n", mode="bidirectional"),
             helper.make_node("ReduceSum", ["S"], ["Y"], keepdims=0)]
    inputs = [helper.make_tensor_value_info("A", TensorProto.FLOAT, [3])]
    initializers = [helper.make_tensor("one", TensorProto.INT64, [1], [1])]
    if shape_is == "fed at run time":
        inputs.append(helper.make_tensor_value_info("shape65", TensorProto.INT64, [None]))
    else:
        initializers.append(helper.make_tensor("shape65", TensorProto.INT64, [65], shape65.tolist()))
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                              ir_version=10)
    feeds = {"A": np.ones(3, np.float32)}
    if shape_is == "fed at run time":
        feeds["shape65"] = shape65
    if runner in ("numpy backend", "native backend"):
        with pytest.raises(onnx_bcast.BroadcastError, match="rank"):
            RUNNERS[runner](model, feeds)
    else:  # plain ORT cannot raise our type: any error (here, or when converting), and no value
        with pytest.raises(Exception):  # noqa: B017
            RUNNERS[runner](model, feeds)
