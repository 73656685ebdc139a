"""Broadcasts to a constant target holding a 0, with a check open (the data's dims symbolic): the output is empty on
valid input and the run fails on invalid input after the tools users run, and in OpenVINO.

The zero-size dims are sliced off an ``Expand`` to 1s, with the check's token as their end
(``ShapeForms.expand_to_zeros``). Before, the token rode on the target (``[4, 4, 0, 1] + token``): ONNX Runtime's
symbolic shape inference without ``auto_merge`` (what ``quant_pre_process`` runs) stopped there ("Incomplete
symbolic shape inference"; fuzz seed 44, cases 5253 and 27561), and onnxsim with the shapes fixed left an
``Expand`` to a constant 0, which ONNX Runtime's ExpandElimination drops as a no-op (fuzz seed 22, case 5372).
Building the empty output without an ``Expand`` and tying the output instead was tried: onnxoptimizer then failed
valid inputs or returned values for invalid ones, and OpenVINO returned wrong empty shapes (fuzz, seed 0, 10 cases).
The expected values come from numpy here: ``np.broadcast_to`` of the data, or its error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast
from tests import tool_pipelines as tools

pytest.importorskip("sympy", reason="symbolic shape inference needs sympy (pip install sympy)")

TARGETS = [(0, 5, 1), (4, 4, 0, 1), (0, 3, 0)]


def _model(mode: str, target: tuple[int, ...]) -> onnx.ModelProto:
    inputs = ["x", "target"] + (["axes"] if mode == "explicit" else [])
    inits = [numpy_helper.from_array(np.array(target, np.int64), "target")]
    if mode == "explicit":
        inits.append(numpy_helper.from_array(np.array([len(target) - 1], np.int64), "axes"))
    node = helper.make_node("Broadcast", inputs, ["y"], domain="onnx_bcast", name="bc", mode=mode)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT8, ["D1"])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 18),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


def _expected(x: np.ndarray, target: tuple[int, ...]) -> np.ndarray | None:
    """numpy's broadcast of ``x`` to ``target`` (explicit with the last axis mapped is the same here), else None."""
    try:
        return np.broadcast_to(x, target)
    except ValueError:
        return None


TOOLS = {
    "plain": lambda m, folder: m,
    "symbolic_shapes": lambda m, folder: tools.symbolic_shape_infer(m, False, folder),
    "symbolic_shapes_auto_merge": lambda m, folder: tools.symbolic_shape_infer(m, True, folder),
    "onnxsim": lambda m, folder: tools.onnxsim_simplify(tools.with_output_shapes(m)),
}



@pytest.mark.parametrize("tool", list(TOOLS))
@pytest.mark.parametrize("target", TARGETS, ids=str)
@pytest.mark.parametrize("mode", ["numpy", "explicit"])  # (pdpd: the output takes the data's dim at a 1)
def test_empty_target_with_an_open_check_survives_the_tools(mode: str, target: tuple[int, ...], tool: str,
                                                             tmp_path: Path) -> None:
    if tool == "onnxsim":
        pytest.importorskip("onnxsim", reason="onnxsim is not installed (pip install -e '.[tools]')")
    converted = onnx_bcast.convert(_model(mode, target))
    after = TOOLS[tool](converted, tmp_path)
    for x in (np.array([7], np.int8), np.array([], np.int8), np.array([1, 2], np.int8)):
        want = _expected(x, target)
        if want is None:
            with pytest.raises(Exception):  # noqa: B017 (any failure: no value may come back)
                got = tools.ort_run(after, {"x": x})
                pytest.fail(f"{tool} then ORT returned {got[0].shape} for x {x.shape}")
        else:
            np.testing.assert_array_equal(tools.ort_run(after, {"x": x})[0], want, strict=True)


@pytest.mark.parametrize("target", TARGETS, ids=str)
def test_empty_target_runs_in_openvino(target: tuple[int, ...]) -> None:
    pytest.importorskip("openvino", reason="OpenVINO is not installed (pip install openvino)")
    converted = onnx_bcast.convert(_model("numpy", target))
    np.testing.assert_array_equal(tools.openvino_run(converted, {"x": np.array([7], np.int8)})[0],
                                  np.zeros(target, np.int8))
    with pytest.raises(Exception):  # noqa: B017
        tools.openvino_run(converted, {"x": np.array([1, 2], np.int8)})


@pytest.mark.parametrize("target", [(4, 4, 0, 1), (0, 5, 1), (3, 0)], ids=str)
def test_symbolic_shape_inference_reads_an_empty_static_output(target: tuple[int, ...], tmp_path: Path) -> None:
    """Data of static dims, no check: the empty output is built without an ``Expand``, by a ``Reshape`` with
    ``allowzero`` whose 0s symbolic shape inference reads as "copy the input's dim": its input has zeros in place
    (before, a 1-D input: an ``IndexError`` past its rank for a 0 after the first axis)."""
    graph = helper.make_graph(
        [helper.make_node("Broadcast", ["x", "target"], ["y"], domain="onnx_bcast", name="bc", mode="numpy")], "g",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [1])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, None)],
        [numpy_helper.from_array(np.array(target, np.int64), "target")])
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 18),
                                                                 helper.make_opsetid("onnx_bcast", 1)])
    inferred = tools.symbolic_shape_infer(onnx_bcast.convert(model), False, tmp_path)
    np.testing.assert_array_equal(tools.ort_run(inferred, {"x": np.array([7], np.int8)})[0],
                                  np.broadcast_to(np.array([7], np.int8), target), strict=True)


LEVELS = ["ort_disabled", "ort_basic", "ort_extended", "ort_all"]


def _aligned_model(target: tuple[int, ...], opset: int) -> onnx.ModelProto:
    """Broadcast explicit of x [D1] int8 to a constant ``target`` with axes_mapping [0]: an ``Unsqueeze`` puts
    known 1s where ``target`` has its 0s."""
    inits = [numpy_helper.from_array(np.array(target, np.int64), "target"),
             numpy_helper.from_array(np.array([0], np.int64), "axes")]
    node = helper.make_node("Broadcast", ["x", "target", "axes"], ["b"], domain="onnx_bcast", name="bc",
                            mode="explicit")
    graph = helper.make_graph([node, helper.make_node("Identity", ["b"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.INT8, ["D1"])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)
    return helper.make_model(graph, ir_version=7, opset_imports=[helper.make_opsetid("", opset),
                                                                helper.make_opsetid("onnx_bcast", 1)])


@pytest.mark.parametrize("opset", [9, 18])
@pytest.mark.parametrize("target", [(1, 0), (1, 1, 0), (1, 0, 0)], ids=str)
def test_unchecked_empty_target_is_not_taken_for_a_no_op(target: tuple[int, ...], opset: int) -> None:
    """Without checks (``guards=False``, and the native backend's unguarded session on proven inputs), ONNX
    Runtime's ExpandElimination removed ``Expand(Unsqueeze(x), [1, 0])`` as a no-op from the basic level on: the
    output was (1, 1), not (1, 0) (fuzz seed 17, case 5512)."""
    x = np.array([7], np.int8)
    want = np.broadcast_to(x.reshape(-1, *(1,) * (len(target) - 1)), target)
    bare = onnx_bcast.convert(_aligned_model(target, opset), guards=False)
    for level in LEVELS:
        np.testing.assert_array_equal(tools.ort_run(bare, {"x": x}, level)[0], want, strict=True)
    if opset >= 11:  # the native backend's run-time checks need opset 11
        native = onnx_bcast.InferenceSession(_aligned_model(target, opset).SerializeToString(), backend="native")
        np.testing.assert_array_equal(native.run(None, {"x": x})[0], want, strict=True)
    pytest.importorskip("openvino", reason="OpenVINO is not installed (pip install openvino)")
    np.testing.assert_array_equal(tools.openvino_run(bare, {"x": x})[0], want, strict=True)


@pytest.mark.xfail(strict=True, reason="documented limit (docs/limits.md): OpenVINO's CPU plugin gives 1 where an "
                                       "Expand's zero-size dim meets a 1 in an elementwise op, in plain ONNX")
def test_openvino_keeps_a_zero_size_dim_an_expand_made() -> None:
    """Plain ONNX, no node of ours: ``Add(Expand(x (0,), [0, 0]), c (1, 1))``. numpy gives (0, 0); OpenVINO gave
    (1, 0) (fuzz seed 18, case 11446, where a converted check keeps such an ``Expand``). Passing here means that
    OpenVINO fixed it, and the fuzz's allowance for it (``fuzz_scenarios._zeros_made_ones``) can go."""
    pytest.importorskip("openvino", reason="OpenVINO is not installed (pip install openvino)")
    nodes = [helper.make_node("Expand", ["x", "t"], ["e"]), helper.make_node("Add", ["e", "c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT8, ["D0"])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)],
                              [numpy_helper.from_array(np.array([0, 0], np.int64), "t"),
                               numpy_helper.from_array(np.ones((1, 1), np.int8), "c")])
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17)])
    x = np.zeros((0,), np.int8)
    want = np.broadcast_to(x, (0, 0)) + np.ones((1, 1), np.int8)
    np.testing.assert_array_equal(tools.ort_run(model, {"x": x})[0], want, strict=True)  # the oracle's runtime agrees
    np.testing.assert_array_equal(tools.openvino_run(model, {"x": x})[0], want, strict=True)


def test_onnxsim_with_fixed_shapes_keeps_an_empty_dim() -> None:
    """Broadcast explicit of x [N1] fed (1,) to the constant [0, 1] with axes_mapping [0], an open check, then Abs:
    valid,
    numpy gives (0, 1). After onnxsim with the fed shapes fixed, the check is proven and folded, the tie's token with
    it: what was left was ``Expand(x (1, 1), [0, 1])``, which ORT's ExpandElimination took for a no-op, (1, 1) (fuzz
    seed 22, case 5372). The zero-size dims are now sliced off an Expand to 1s, the token their end."""
    pytest.importorskip("onnxsim", reason="onnxsim is not installed (pip install -e '.[tools]')")
    inits = [numpy_helper.from_array(np.array([0, 1], np.int64), "target"),
             numpy_helper.from_array(np.array([0], np.int64), "axes")]
    nodes = [helper.make_node("Broadcast", ["x", "target", "axes"], ["b"], domain="onnx_bcast", name="bc",
                              mode="explicit"),
             helper.make_node("Abs", ["b"], ["y"])]  # (ORT removes no node whose output is the graph's)
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, ["N1"])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 19),
                                                                 helper.make_opsetid("onnx_bcast", 1)])
    x = np.array([59], np.uint8)
    shaped = tools.with_output_shapes(onnx_bcast.convert(model))
    assert shaped is not None
    simplified = tools.onnxsim_simplify(shaped, {"x": [1]})
    np.testing.assert_array_equal(tools.ort_run(simplified, {"x": x})[0],
                                  np.broadcast_to(x.reshape(-1, 1), (0, 1)), strict=True)
