"""ONNX's node test cases through OpenVINO's ONNX frontend, IR and ``ir_to_onnx`` (``bench/onnx_node_cases.py``).

One case per group of today's results (equal, OpenVINO refuses, and each way the IR route fails), classified by the
harness against the case's own expected outputs (ONNX's, independent of OpenVINO, onnxifier and onnx-bcast): a case
passes when the IR route's model equals them in plain ONNX Runtime or the conversion is refused naming an IR op.
Today's failures are strict xfails that say why, so fixing one turns its test into an XPASS failure to update.
The harness's own verdicts are tested with routes of known behaviour (the case's own model, a wrong one, one ORT
refuses, refusals) and a route that kills its process.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

ov = pytest.importorskip("openvino")
pytest.importorskip("onnxifier", reason="onnxifier is not installed (the tools extra installs it on Python >= 3.11)")
pytest.importorskip("onnxruntime")

BENCH = str(Path(__file__).resolve().parents[1] / "bench")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)  # an importable module: the harness's child process imports it by name
import node_case_run as harness  # noqa: E402

from tests.onnx_node_export import export_cases  # noqa: E402

#: case name -> (its module in onnx.backend.test.case.node, why the IR route fails it today, or None): one case per
#: group of ``bench/onnx_node_cases.py --groups`` (onnx 1.23.2, openvino 2026.4.1, onnxifier 2.0.3, onnxruntime 1.32)
GROUPS: dict[str, tuple[str, str | None]] = {
    # equal today
    "test_abs": ("abs", None),
    "test_and_bcast4v3d": ("and_", None),  # LogicalAnd-1: onnxifier alone writes it as-is
    "test_mod_mixed_sign_int32": ("mod", None),  # FloorMod-1 on int32: onnxifier alone is wrong
    "test_bitshift_right_int32_negative_input": ("bitshift", None),  # Divide by Power(2, s), m_pythondiv: floors
    "test_bitshift_right_int8_negative_shift": ("bitshift", None),  # the IR divides by 0: ONNX's sign fill
    "test_bitshift_right_int32_shift_ge_width": ("bitshift", None),  # the IR divides by a wrapped power
    "test_bitshift_left_int32_shift_ge_width": ("bitshift", None),  # the IR multiplies by a wrapped power
    "test_bitshift_left_int8_overflow": ("bitshift", None),  # ONNX wraps; OpenVINO's CPU plugin saturates
    # written, ORT refuses: an OpenVINO op written as-is
    "test_not_2d": ("not_", None),
    "test_lppool_2d_default": ("lppool", None),
    "test_shrink_soft_expanded_ver18": ("shrink", None),
    "test_dft_inverse": ("dft", None),
    "test_dft_rfft": ("dft", None),
    "test_lstm_with_peepholes": ("lstm", "LSTMSequence-5 written as-is"),
    "test_argmax_default_axis_example_select_last_index": ("argmax", None),
    "test_softplus": ("softplus", None),
    "test_softsign": ("softsign", None),
    "test_ceil": ("ceil", None),
    "test_scan9_sum": ("scan", None),
    # written, ORT refuses: types ONNX's op or ORT's kernel does not have
    "test_bitshift_right_uint8": ("bitshift", None),
    "test_bitshift_left_int16": ("bitshift", None),
    "test_max_int16": ("max", None),
    "test_min_uint16": ("min", None),
    "test_convinteger_with_padding": ("convinteger", None),
    "test_reversesequence_time": ("reversesequence", None),
    "test_isinf_float16": ("isinf", None),
    "test_cast_FLOAT_to_BFLOAT16": ("cast", None),
    # written, ORT refuses: attributes or inputs in the wrong places
    "test_dft": ("dft", None),
    "test_einsum_sum": ("einsum", None),
    "test_if": ("if_", None),
    "test_onehot_without_axis": ("onehot", None),
    "test_hardmax_example": ("hardmax", None),
    "test_nonmaxsuppression_single_box": ("nonmaxsuppression", None),
    "test_lrn": ("lrn", None),
    "test_dropout_default_ratio": ("dropout", None),
    "test_shape": ("shape", None),
    "test_argmax_no_keepdims_example": ("argmax", None),
    "test_col2im_pads": ("col2im", None),
    "test_reshape_allowzero_reordered": ("reshape", None),
    "test_split_zero_size_splits_opset18": ("split", None),
    # silently wrong (OpenVINO's CPU plugin computes the IR right)
    "test_div_int32_trunc": ("div", None),
    "test_cast_FLOAT_to_FLOAT16": ("cast", None),
    "test_layer_normalization_2d_axis1": ("layernormalization", None),
    "test_layer_normalization_2d_axis1_expanded": ("layernormalization", None),
    "test_averagepool_2d_ceil": ("averagepool", None),
    "test_averagepool_2d_pads_count_include_pad": ("averagepool", None),
    "test_elu_example": ("elu", None),
    "test_top_k": ("topk", None),
    "test_split_equal_parts_1d_opset18": ("split", None),
    "test_unique_sorted_without_axis": ("unique", None),
    "test_scatternd_add": ("scatternd", None),
    "test_gridsample_nearest": ("gridsample", None),
    "test_logsoftmax_axis_0": ("logsoftmax", None),
    "test_cumsum_1d_exclusive": ("cumsum", None),
    "test_isinf_positive": ("isinf", None),
    "test_swiglu_alpha_expanded": ("swiglu", None),
    # silently wrong, and OpenVINO's CPU plugin computes the same: the IR itself differs from ONNX
    "test_resize_upsample_scales_cubic_A_n0p5_exclude_outside": ("resize", "Interpolate-11 has no exclude_outside; "
                                                                          "OpenVINO's CPU gives the same"),
    "test_resize_downsample_scales_linear_antialias": ("resize", None),  # refused: antialias
    "test_resize_upsample_sizes_nearest_not_larger": ("resize", "Interpolate-11: shape (1, 1, 7, 8), not (1, 1, 7, 7); "
                                                                "OpenVINO's CPU gives the same"),
    # an IR output that is its input; an input of dynamic rank (refused naming its Parameter)
    "test_max_one_input": ("max", None),
    "test_identity_sequence": ("identity", None),
    # refused without naming an op before
    "test_mvn": ("meanvariancenormalization", None),
    "test_gru_defaults": ("gru", None),
    "test_reduce_log_sum_desc_axes": ("reduce_log_sum", None),
    "test_constant_pad": ("pad", None),
    "test_dynamicquantizelinear_expanded": ("dynamicquantizelinear", None),
    "test_cast_FLOAT_to_FLOAT8E4M3FN": ("cast", None),
    "test_equal_string": ("equal", None),
    "test_causal_conv_with_state_basic_expanded": ("causal_conv_with_state", None),
}


def _xfail(reason: str | None) -> list[Any]:
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.fixture(scope="module")
def cases() -> dict[str, harness.NodeCase]:
    wanted = set(GROUPS) | {"test_abs", "test_neg"}
    modules = {module for module, _ in GROUPS.values()} | {"abs", "neg"}
    return {case.name: harness.node_case(case) for module in sorted(modules) for case in export_cases(module)
            if case.name in wanted}


def _record(case: harness.NodeCase, folder: Path, routes: Any = harness.default_routes) -> dict[str, Any]:
    *_, record = harness.case_steps(case, folder, routes)
    return record


@pytest.mark.parametrize("name", [pytest.param(name, marks=_xfail(reason)) for name, (_, reason) in GROUPS.items()])
def test_ir_route_is_equal_or_refuses_by_name(name: str, cases: dict, tmp_path: Path) -> None:
    record = _record(cases[name], tmp_path)
    assert record.get("openvino") == "reads", record
    result = record["IR route"]
    assert harness.verdict(result) in ("equal", "refused named"), (name, record["ir_ops"], result)


@pytest.mark.parametrize("name", [name for name, (_, reason) in GROUPS.items() if reason])
def test_where_the_ir_route_differs_the_ir_does(name: str, cases: dict, tmp_path: Path) -> None:
    """A case the IR route gets wrong (an xfail above) differs from ONNX's expected outputs exactly as OpenVINO's
    CPU plugin does on the same IR: the IR itself differs from ONNX, and the route follows it."""
    result = _record(cases[name], tmp_path)["IR route"]
    assert result["status"] == "wrong" and result["openvino cpu agrees"], result


# ---- the harness's verdicts, with routes whose behaviour is known ------------------------------------------------

def _original(xml: str) -> onnx.ModelProto:
    """The case's own model (saved beside the IR): equal by construction."""
    return onnx.load(str(Path(xml).with_name("model.onnx")))


def _unary(op_type: str, elem_type: int = TensorProto.FLOAT, domain: str = "", **attrs: Any) -> onnx.ModelProto:
    """``y = op(x)`` on x float[3, 4, 5], the shape of test_abs."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])
    y = helper.make_tensor_value_info("y", elem_type, [3, 4, 5])
    graph = helper.make_graph([helper.make_node(op_type, ["x"], ["y"], domain=domain, **attrs)], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)


def _refuse_naming_the_op(xml: str) -> onnx.ModelProto:
    raise ValueError("Abs-1 'y': cannot be expressed in ONNX")


def _refuse_without_a_name(xml: str) -> onnx.ModelProto:
    raise TypeError("only length-1 arrays can be converted to Python scalars")


def known_routes() -> dict[str, Any]:
    return {"original": _original, "negated": lambda xml: _unary("Neg"),
            "as double": lambda xml: _unary("Cast", TensorProto.DOUBLE, to=TensorProto.DOUBLE),
            "unknown op": lambda xml: _unary("LogicalNot", TensorProto.BOOL),
            "refused named": _refuse_naming_the_op, "refused unnamed": _refuse_without_a_name}


def test_verdicts_of_routes_with_known_behaviour(cases: dict, tmp_path: Path) -> None:
    record = _record(cases["test_abs"], tmp_path, known_routes)
    assert record["openvino"] == "reads" and record["ir_ops"] == ["Abs-1"]
    verdicts = {route: harness.verdict(record[route]) for route in known_routes()}
    assert verdicts == {"original": "equal", "negated": "wrong", "as double": "wrong", "unknown op": "ort refuses",
                        "refused named": "refused named", "refused unnamed": "refused unnamed"}
    assert "values differ" in record["negated"]["detail"]
    assert record["as double"]["detail"] == "output 0: dtype float64, expected float32"
    assert record["unknown op"]["stage"] == "load" and record["unknown op"]["nonstandard_ops"] == ["LogicalNot"]
    assert record["openvino cpu"]["status"] == "equal"


def test_float16_is_compared_with_a_looser_tolerance(cases: dict) -> None:
    case = cases["test_abs"]
    want = np.array([1.0, 2.0], dtype=np.float16)
    assert harness.compare([want * np.float16(1.004)], [want], case) is None
    assert harness.compare([(want * np.float16(1.004)).astype(np.float32)], [want.astype(np.float32)], case)
    assert harness.compare([want.astype(np.float32)], [want], case) == "output 0: dtype float32, expected float16"
    assert harness.compare([np.array([1, 2], np.int32)], [np.array([1, 3], np.int32)], case)
    assert harness.compare([want[:1]], [want], case) == "output 0: shape (1,), expected (2,)"


def crashing_routes() -> dict[str, Any]:
    """A route that kills its process on test_abs and returns the case's own model otherwise."""
    def convert(xml: str) -> onnx.ModelProto:
        if "test_abs" in xml:
            os.kill(os.getpid(), signal.SIGKILL)
        return _original(xml)
    return {"crash": convert}


def test_a_case_that_kills_the_process_is_counted_and_the_run_goes_on(cases: dict, tmp_path: Path) -> None:
    records = list(harness.run_cases([cases["test_abs"], cases["test_neg"]], tmp_path, routes=crashing_routes))
    crashed, after = records
    assert crashed["openvino"] == "reads" and crashed["crash"]["status"] == "crashed", crashed
    assert f"exit code {-signal.SIGKILL}" in crashed["crash"]["detail"]
    assert "openvino cpu" not in crashed and harness.verdict(crashed.get("openvino cpu")) == "not run"
    assert harness.verdict(after["crash"]) == "equal" and after["openvino cpu"]["status"] == "equal", after
