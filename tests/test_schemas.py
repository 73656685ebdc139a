"""Our op schemas in onnx.defs: the checker and strict shape inference understand our models."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from tests.cases import INVALID_CASES, VALID_CASES, Case
from tests.onnx_util import IR_VERSION, OPSETS, case_model


def _output_dims(model: onnx.ModelProto) -> list[int] | None:
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    out = inferred.graph.output[0].type.tensor_type
    if not out.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in out.shape.dim]


@pytest.mark.parametrize("case", VALID_CASES, ids=lambda c: c.name)
def test_checker_and_static_shape_inference(case: Case) -> None:
    model = case_model(case, constant_shapes=True, data_shape=list(case.data_shape))
    onnx.checker.check_model(model, full_check=True)
    assert _output_dims(model) == list(case.expected_shape)


@pytest.mark.parametrize("case", [c for c in INVALID_CASES if c.name != "mode_unknown"], ids=lambda c: c.name)
def test_strict_inference_rejects_invalid_static_broadcast(case: Case) -> None:
    model = case_model(case, constant_shapes=True, data_shape=list(case.data_shape))
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        onnx.shape_inference.infer_shapes(model, strict_mode=True)
    assert f"{case.op.lower()}_node" in str(info.value)


def test_runtime_target_gives_unknown_shape_but_known_type() -> None:
    case = VALID_CASES[0]
    model = case_model(case, dtype=TensorProto.INT32)
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    assert inferred.graph.output[0].type.tensor_type.elem_type == TensorProto.INT32


def _v0_model(op: str, attrs: dict, like_shape: list[int] | None = None, out_rank: int = 3) -> onnx.ModelProto:
    inputs = ["arg"] + (["like"] if like_shape is not None else [])
    node = helper.make_node(op, inputs, ["out"], domain="onnx_bcast", **attrs)
    graph_inputs = [helper.make_tensor_value_info("arg", TensorProto.FLOAT, [3])]
    if like_shape is not None:
        graph_inputs.append(helper.make_tensor_value_info("like", TensorProto.INT64, like_shape))
    graph = helper.make_graph([node], "v0", graph_inputs, [helper.make_tensor_value_info("out", TensorProto.FLOAT,
                                                                                           [None] * out_rank)])
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=IR_VERSION)


def test_broadcast_v0_schema() -> None:
    model = _v0_model("BroadcastV0", {"shape": [2, 3, 4], "broadcast_axes": [0, 2]})
    onnx.checker.check_model(model, full_check=True)
    assert _output_dims(model) == [2, 3, 4]


def test_broadcast_v0_requires_its_attributes() -> None:
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(_v0_model("BroadcastV0", {"shape": [2, 3]}), full_check=True)


def test_broadcast_like_v0_schema() -> None:
    model = _v0_model("BroadcastLikeV0", {"initial_broadcast_axes": [0]}, like_shape=[2, 3], out_rank=2)
    onnx.checker.check_model(model, full_check=True)
    assert _output_dims(model) == [2, 3]


def test_prepared_model_passes_the_checker() -> None:
    case = next(c for c in VALID_CASES if c.mode == "explicit")
    prepared = onnx_bcast.prepare(case_model(case, dtype=TensorProto.FLOAT16))
    onnx.checker.check_model(prepared, full_check=True)
    assert prepared.ir_version <= 10


def test_unknown_op_in_our_domain_is_rejected() -> None:
    node = helper.make_node("Teleport", ["x"], ["y"], domain="onnx_bcast", name="tp")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=OPSETS, ir_version=IR_VERSION)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(model, full_check=True, check_custom_domain=True)
    with pytest.raises(onnx_bcast.BroadcastError, match="node 'tp'.*not an op of domain"):
        onnx_bcast.prepare(model)


def test_pow_exponent_has_its_own_type_and_the_output_is_the_base_type() -> None:
    """Pow's B is T1, as in the standard op: float32 ** int64 checks and infers float32."""
    node = helper.make_node("Pow", ["a", "b"], ["y"], domain=onnx_bcast.DOMAIN, auto_broadcast="pdpd", axis=1)
    graph = helper.make_graph([node], "pow", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3, 4]),
                                              helper.make_tensor_value_info("b", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])])
    model = helper.make_model(graph, opset_imports=OPSETS, ir_version=IR_VERSION)
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    out = inferred.graph.output[0].type.tensor_type
    assert out.elem_type == TensorProto.FLOAT
    assert [d.dim_value for d in out.shape.dim] == [2, 3, 4]
