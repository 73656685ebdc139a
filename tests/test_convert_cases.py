"""The converter on the shared case table: standard ONNX only, equal outputs, the simplest graph, opset-aware."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

import onnx_bcast
import onnx_bcast.models
from onnx_bcast.convert import convert, convert_with_report
from onnx_bcast.model.runtime_limits import max_ir_version, max_opset
from tests.cases import INVALID_CASES, VALID_CASES, Case, expected_values, sample
from tests.onnx_util import case_feeds, case_model

OPSETS = [11, 13, 17, max_opset()]


def _no_our_nodes(model: onnx.ModelProto) -> None:
    assert all(n.domain != "onnx_bcast" for n in model.graph.node)
    assert all(o.domain != "onnx_bcast" for o in model.opset_import)


def _plain_run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("constant_shapes", [True, False], ids=["static", "runtime"])
@pytest.mark.parametrize("case", VALID_CASES, ids=lambda c: c.name)
def test_converted_model_equals_expectation(case: Case, constant_shapes: bool, opset: int) -> None:
    data = sample(case.data_shape)
    model = case_model(case, constant_shapes=constant_shapes, data_shape=list(case.data_shape), opset=opset)
    # zero-size data with run-time explicit axes converts before opset 14 too (Reshape's "copy" 0 avoided, issue 18)
    converted = convert(model)
    _no_our_nodes(converted)
    onnx.checker.check_model(converted, full_check=True)
    assert converted.ir_version <= max_ir_version()
    feeds = case_feeds(case, data, constant_shapes)
    expected = expected_values(data, case)
    (plain,) = _plain_run(converted, feeds)
    (reference,) = ReferenceEvaluator(converted).run(None, feeds)
    (ours,) = onnx_bcast.InferenceSession(model).run(None, feeds)
    for got in (plain, reference, ours):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("case", VALID_CASES, ids=lambda c: c.name)
def test_opset_8_with_static_inputs(case: Case) -> None:
    data = sample(case.data_shape)
    model = case_model(case, constant_shapes=True, data_shape=list(case.data_shape), opset=8)
    converted = convert(model)
    onnx.checker.check_model(converted, full_check=True)
    (plain,) = _plain_run(converted, case_feeds(case, data, True))
    np.testing.assert_array_equal(plain, expected_values(data, case))


def test_runtime_explicit_axes_need_opset_11() -> None:
    case = next(c for c in VALID_CASES if c.name == "ov_xml_explicit_c")
    model = case_model(case, constant_shapes=False, opset=10)
    with pytest.raises(onnx_bcast.BroadcastError, match=r"node 'broadcast_node'.*opset >= 11"):
        convert(model)


def _op_types(model: onnx.ModelProto) -> Counter:
    return Counter(n.op_type for n in model.graph.node)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ov_xml_explicit_c", {"Unsqueeze": 1, "Expand": 1}),
        ("ov_xml_explicit_hw", {"Unsqueeze": 1, "Expand": 1}),
        ("ov_xml_numpy", {"Expand": 1}),
        ("ov_xml_bidirectional", {"Expand": 1}),
        ("pdpd_axis1", {"Expand": 1}),
        ("pdpd_axis0_full", {"Identity": 1}),
        # a declared scalar's rank, which ONNX Runtime does not check, is checked by an Einsum (docs/guards.md)
        ("numpy_scalar_scalar", {"Einsum": 1, "Identity": 1}),
        ("onnx_uni_scalar", {"Einsum": 1, "Expand": 1}),
        ("explicit_scalar_one_axis", {"Einsum": 1, "Expand": 1}),  # leading new axes: Expand aligns them itself
    ],
)
def test_static_conversion_emits_only_what_is_needed(name: str, expected: dict) -> None:
    case = next(c for c in VALID_CASES if c.name == name)
    converted = convert(case_model(case, constant_shapes=True, data_shape=list(case.data_shape)))
    assert _op_types(converted) == Counter(expected)


def test_explicit_without_replication_is_a_reshape_only() -> None:
    case = Case("explicit_no_replication", (3, 4), (3, 1, 4), (3, 1, 4), "explicit", axes=(0, 2))
    converted = convert(case_model(case, constant_shapes=True, data_shape=[3, 4]))
    assert _op_types(converted) == Counter({"Unsqueeze": 1})


@pytest.mark.parametrize("case", [c for c in INVALID_CASES if c.name != "mode_unknown"], ids=lambda c: c.name)
def test_static_invalid_broadcast_fails_conversion(case: Case) -> None:
    model = case_model(case, constant_shapes=True, data_shape=list(case.data_shape))
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        convert(model)
    assert f"node '{case.op.lower()}_node'" in str(info.value)


def test_converting_twice_changes_nothing() -> None:
    model = onnx.load(str(onnx_bcast.models.DEFAULT_MODEL))
    once = convert(model)
    assert convert(once).SerializeToString() == once.SerializeToString()


def test_report_counts_per_op_and_mode() -> None:
    from onnx_bcast.models import MODELS_DIR

    _, report = convert_with_report(onnx.load(str(MODELS_DIR / "expand_modes.onnx")))
    assert report.lines() == ["Expand(mode=bidirectional): 1 rewritten", "Expand(mode=explicit): 1 rewritten",
                              "Expand(mode=numpy): 1 rewritten", "Expand(mode=pdpd): 1 rewritten"]


def test_bundled_models_convert_and_run_everywhere() -> None:
    from onnx_bcast.random_inputs import random_feeds

    for path in onnx_bcast.models.bundled_models():
        model = onnx.load(str(path))
        converted = convert(model, verify=True)
        _no_our_nodes(converted)
        session = onnx_bcast.InferenceSession(model)
        feeds = random_feeds(session, seed=1)
        ours = session.run(None, feeds)
        sums = any(n.op_type in ("BroadcastBackprop", "Unbroadcast", "BroadcastV0Backprop") for n in model.graph.node)
        matmul = any(n.op_type == "MatMul" for n in model.graph.node)
        for got, summed in ((_plain_run(converted, feeds), sums),
                            (ReferenceEvaluator(converted).run(None, feeds), sums or matmul)):
            for a, b in zip(ours, got, strict=True):
                # a gradient's sums: ORT's ReduceSum adds in its own order; numpy's MatMul (onnx.reference) in its own
                if summed and a.dtype.kind == "f":
                    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5 * float(np.abs(a).max(initial=1.0)))
                else:
                    assert a.tobytes() == np.asarray(b).tobytes(), path.name
