"""Graph inputs declared as scalars and fed another rank fail on every path (issue 33, item 1).

ONNX Runtime checks a graph input's rank, except where it is declared a scalar (``[]`` accepts ``(1,)`` and
``(2,)``). The converter trusted the declaration: a numpy ``Broadcast`` of ``x[]`` fed ``(2,)`` to ``[2, 1]`` gave
``(2, 2)``, and a none-rule ``Add`` of two declared scalars fed ``(3,)`` and ``()`` gave ``(3,)``, on every path.
The expected values on valid input come from numpy formulas here.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import onnx_bcast
from tests import tool_pipelines as tools


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], opset: int = 17) -> onnx.ModelProto:
    elem = inputs[0].type.tensor_type.elem_type
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", opset),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


def broadcast_to_runtime_target(elem: int = TensorProto.FLOAT) -> onnx.ModelProto:
    node = helper.make_node("Broadcast", ["x", "target"], ["y"], domain="onnx_bcast", name="bc", mode="numpy")
    return _model([node], [helper.make_tensor_value_info("x", elem, []),
                           helper.make_tensor_value_info("target", TensorProto.INT64, [2])])


def none_add() -> onnx.ModelProto:
    node = helper.make_node("Add", ["a", "b"], ["y"], domain="onnx_bcast", name="add", auto_broadcast="none")
    return _model([node], [helper.make_tensor_value_info("a", TensorProto.FLOAT, []),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [])])


def through_a_standard_op() -> onnx.ModelProto:
    """The declared scalar reaches our node through ``Neg``: its declared rank flows on in the facts."""
    nodes = [helper.make_node("Neg", ["x"], ["n"]),
             helper.make_node("Broadcast", ["n", "target"], ["y"], domain="onnx_bcast", name="bc", mode="numpy")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, []),
                          helper.make_tensor_value_info("target", TensorProto.INT64, [2])])


def explicit_to_an_empty_constant(opset: int = 17) -> onnx.ModelProto:
    """The result holds no element whatever ``x`` holds, and its shape is constant: onnxsim computed it and dropped
    the check with the rest (fuzz seed 44, case 13122: ``(2, 0, 2)`` for ``x`` fed ``(1,)``)."""
    nodes = [helper.make_node("Constant", [], ["target"], value=helper.make_tensor("t", TensorProto.INT64, [3],
                                                                                   [2, 0, 2])),
             helper.make_node("Constant", [], ["axes"], value=helper.make_tensor("a", TensorProto.INT64, [0], [])),
             helper.make_node("Broadcast", ["x", "target", "axes"], ["b"], domain="onnx_bcast", name="bc",
                              mode="explicit"),
             helper.make_node("Neg", ["b"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.INT64, [])], opset)


TARGET = np.array([2, 1], np.int64)
# (model, valid feeds, expected output, feeds that are invalid only by the declared scalar's rank)
CASES: dict[str, tuple[Callable[[], onnx.ModelProto], dict, np.ndarray, list[dict]]] = {
    "broadcast": (broadcast_to_runtime_target, {"x": np.array(1.5, np.float32), "target": TARGET},
                  np.full((2, 1), 1.5, np.float32),
                  [{"x": np.array([1.5, 2.5], np.float32), "target": TARGET},
                   {"x": np.array([1.5], np.float32), "target": TARGET}]),
    "none_add": (none_add, {"a": np.array(1.0, np.float32), "b": np.array(2.0, np.float32)},
                 np.array(3.0, np.float32),
                 [{"a": np.ones(3, np.float32), "b": np.array(2.0, np.float32)},
                  {"a": np.ones(1, np.float32), "b": np.array(2.0, np.float32)},
                  {"a": np.array(1.0, np.float32), "b": np.ones((1, 1), np.float32)}]),
    "through_neg": (through_a_standard_op, {"x": np.array(2.0, np.float32), "target": TARGET},
                    np.full((2, 1), -2.0, np.float32),
                    [{"x": np.array([2.0, 3.0], np.float32), "target": TARGET}]),
    "empty_result": (explicit_to_an_empty_constant, {"x": np.array(22, np.int64)}, np.zeros((2, 0, 2), np.int64),
                     [{"x": np.array([22], np.int64)}]),
}


def _invalid(name: str) -> list:
    return [pytest.param(name, k, id=f"{name}-{k}") for k in range(len(CASES[name][3]))]


INVALID = [p for name in CASES for p in _invalid(name)]


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize(("name", "k"), INVALID)
def test_backends_raise_naming_the_node_the_input_and_its_shape(name: str, k: int, backend: str) -> None:
    make, valid, expected, invalid = CASES[name]
    session = onnx_bcast.InferenceSession(make(), backend=backend)
    np.testing.assert_array_equal(session.run(None, valid)[0], expected, strict=True)
    feeds = invalid[k]
    with pytest.raises(onnx_bcast.BroadcastError) as err:
        session.run(None, feeds)
    wrong = next(n for n, v in feeds.items() if np.ndim(v) and n != "target")
    assert f"input '{wrong}' is declared a scalar" in str(err.value)
    assert f"'{wrong}' fed {tuple(np.shape(feeds[wrong]))}".replace(",)", ")") in str(err.value) or \
        f"'{wrong}' fed {tuple(np.shape(feeds[wrong]))}" in str(err.value)
    np.testing.assert_array_equal(session.run(None, valid)[0], expected, strict=True)  # the session still works


OPTIMIZED: dict[str, tuple[str, Callable[[onnx.ModelProto], onnx.ModelProto]]] = {
    "onnxscript": ("onnxscript", tools.onnxscript_optimize),
    "onnx_ir": ("onnx_ir.passes.common", tools.onnx_ir_passes),
    "onnxoptimizer": ("onnxoptimizer", tools.onnxoptimizer_optimize),
    "onnxsim": ("onnxsim", lambda m: tools.onnxsim_simplify(tools.with_output_shapes(m))),
    "onnxslim": ("onnxslim", lambda m: tools.quiet(lambda: __import__("onnxslim").slim(m))),
}


@pytest.mark.parametrize("tool", ["plain", *OPTIMIZED])
@pytest.mark.parametrize("name", CASES)
def test_converted_model_fails_after_every_tool_and_level(name: str, tool: str) -> None:
    make, valid, expected, invalid = CASES[name]
    converted = onnx_bcast.convert(make())
    if tool != "plain":
        module, optimize = OPTIMIZED[tool]
        pytest.importorskip(module, reason=f"{module} is not installed (pip install -e '.[tools]')")
        converted = optimize(converted)
    for level in tools.ORT_LEVELS:
        np.testing.assert_array_equal(tools.ort_run(converted, valid, level)[0], expected, strict=True)
        for feeds in invalid:
            with pytest.raises(Exception):  # noqa: B017 (any failure: no value may come back)
                got = tools.ort_run(converted, feeds, level)
                pytest.fail(f"{tool} then ORT {level} returned {got[0].shape} for {[v.shape for v in feeds.values()]}")


@pytest.mark.parametrize("name", CASES)
def test_converted_model_fails_in_onnx_reference_and_openvino(name: str) -> None:
    make, valid, expected, invalid = CASES[name]
    converted = onnx_bcast.convert(make())
    runners = {"onnx.reference": lambda feeds: ReferenceEvaluator(converted).run(None, feeds)}
    try:
        import openvino  # noqa: F401

        runners["openvino"] = lambda feeds: tools.openvino_run(converted, feeds)
    except ImportError:
        pass
    for runner, run in runners.items():
        np.testing.assert_array_equal(run(valid)[0], expected, err_msg=runner)
        for feeds in invalid:
            with pytest.raises(Exception):  # noqa: B017
                got = run(feeds)
                pytest.fail(f"{runner} returned {got[0].shape}")


@pytest.mark.parametrize(("elem", "dtype"), [(TensorProto.UINT8, np.uint8), (TensorProto.BOOL, np.bool_),
                                             (TensorProto.INT64, np.int64), (TensorProto.FLOAT16, np.float16),
                                             (TensorProto.UINT64, np.uint64), (TensorProto.INT8, np.int8)])
def test_every_type_is_checked_and_kept_exact(elem: int, dtype: type) -> None:
    """Types ONNX Runtime's Einsum lacks pass through an exact cast: the value comes back bit for bit."""
    model = broadcast_to_runtime_target(elem)
    extreme = np.array(np.iinfo(dtype).max if np.issubdtype(dtype, np.integer) else
                       (True if dtype is np.bool_ else 65504), dtype)
    valid = {"x": extreme, "target": TARGET}
    converted = onnx_bcast.convert(model)
    for backend in ("numpy", "native"):
        got = onnx_bcast.InferenceSession(model, backend=backend).run(None, valid)[0]
        np.testing.assert_array_equal(got, np.broadcast_to(extreme, (2, 1)), strict=True)
        with pytest.raises(onnx_bcast.BroadcastError):
            onnx_bcast.InferenceSession(model, backend=backend).run(None, {"x": np.stack([extreme] * 2),
                                                                           "target": TARGET})
    np.testing.assert_array_equal(tools.ort_run(converted, valid)[0], np.broadcast_to(extreme, (2, 1)), strict=True)
    with pytest.raises(Exception):  # noqa: B017
        tools.ort_run(converted, {"x": extreme.reshape(1), "target": TARGET})


def test_a_scalar_our_nodes_never_read_is_not_checked() -> None:
    """Only the declared scalars whose values reach our nodes get the check: the rest of the model is as it was."""
    nodes = [helper.make_node("Neg", ["s"], ["other"]),
             helper.make_node("Broadcast", ["x", "target"], ["y"], domain="onnx_bcast", name="bc", mode="numpy")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
                                           helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]),
                                           helper.make_tensor_value_info("target", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("other", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)])
    converted = onnx_bcast.convert(model)
    assert "Einsum" not in {n.op_type for n in converted.graph.node}
    got = tools.ort_run(converted, {"s": np.ones(3, np.float32), "x": np.ones(1, np.float32), "target": TARGET})
    np.testing.assert_array_equal(got[1], -np.ones(3, np.float32))  # as the original: plain ORT's Neg of (3,)


@pytest.mark.parametrize("opset", [12, 13])
def test_the_tie_of_an_empty_result_at_every_opset_with_einsum(opset: int) -> None:
    """``Unsqueeze``/``Squeeze`` take their axes as an attribute before opset 13 (fuzz seed 0, case 2791: at opset
    12 the tie's form was invalid and every path failed, valid input too)."""
    model = explicit_to_an_empty_constant(opset)
    valid, invalid = {"x": np.array(22, np.int64)}, {"x": np.array([22], np.int64)}
    for backend in ("numpy", "native"):
        session = onnx_bcast.InferenceSession(model, backend=backend)
        np.testing.assert_array_equal(session.run(None, valid)[0], np.zeros((2, 0, 2), np.int64), strict=True)
        with pytest.raises(onnx_bcast.BroadcastError, match="declared a scalar"):
            session.run(None, invalid)
    converted = onnx_bcast.convert(model)
    np.testing.assert_array_equal(tools.ort_run(converted, valid)[0], np.zeros((2, 0, 2), np.int64), strict=True)
    with pytest.raises(Exception):  # noqa: B017
        tools.ort_run(converted, invalid)


def test_the_checks_are_written_in_the_same_order_in_every_process(tmp_path: Path) -> None:
    """A node reading two declared scalars gets their checks in the inputs' order, whatever Python's string hashing
    (it was the iteration order of a set: the written bytes differed between runs)."""
    path = tmp_path / "two_scalars.onnx"
    onnx.save(none_add(), str(path))
    script = ("import hashlib, sys, onnx_bcast; "
              "print(hashlib.sha256(onnx_bcast.convert(sys.argv[1]).SerializeToString()).hexdigest())")
    digests = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        env.pop("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", None)  # (set by onnxruntime-extensions' import)
        done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, env=env,
                              timeout=300, check=True)
        digests.add(done.stdout.strip())
    names = [n.name for n in onnx_bcast.convert(none_add()).graph.node if n.op_type == "Einsum"]
    assert [name.split("'")[1] for name in names] == ["a", "b"]
    assert len(digests) == 1, digests
    assert hashlib.sha256(onnx_bcast.convert(none_add()).SerializeToString()).hexdigest() in digests
