"""ONNX's own backend test cases for Expand, run as onnx_bcast::Expand in ORT and through the numpy kernel."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper
from onnx.backend.test.case.node import collect_testcases

import onnx_bcast


def _expand_cases() -> list:
    """ONNX's node test cases whose model is a standard Expand (collecting imports every case module)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some unrelated case modules warn about overflows while importing
        cases = collect_testcases("Expand")
    return [c for c in cases
            if c.model is not None and c.data_sets
            and [(n.domain, n.op_type) for n in c.model.graph.node] == [("", "Expand")]]


CASES = _expand_cases()


def as_onnx_bcast(model: onnx.ModelProto) -> onnx.ModelProto:
    """The case's model with its Expand node moved to onnx_bcast::Expand (no attributes: bidirectional)."""
    ours = onnx.ModelProto()
    ours.CopyFrom(model)
    for node in ours.graph.node:
        assert node.op_type == "Expand" and node.domain == ""
        assert not node.attribute
        node.domain = onnx_bcast.DOMAIN
    ours.opset_import.append(helper.make_opsetid(onnx_bcast.DOMAIN, 1))
    ours.ir_version = 10
    return ours


def feeds_of(model: onnx.ModelProto, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    names = [i.name for i in model.graph.input]
    assert len(names) == len(inputs)
    return dict(zip(names, inputs, strict=True))


def assert_exact(actual: np.ndarray, expected: np.ndarray) -> None:
    assert isinstance(actual, np.ndarray)
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected, strict=True)


def test_the_cases_were_collected() -> None:
    names = {c.name for c in CASES}
    assert {"test_expand_dim_changed", "test_expand_dim_unchanged"} <= names, names


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_through_onnx_bcast_session(case) -> None:
    model = as_onnx_bcast(case.model)
    session = onnx_bcast.InferenceSession(model)
    for inputs, outputs in case.data_sets:
        got = session.run(None, feeds_of(model, inputs))
        assert len(got) == len(outputs) == 1
        assert_exact(got[0], outputs[0])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_through_plain_ort(case) -> None:
    """The prepared model in a plain ORT session, and ORT's own Expand on the original model, agree."""
    model = as_onnx_bcast(case.model)
    plain = onnxruntime.InferenceSession(onnx_bcast.prepare(model).SerializeToString(),
                                         sess_options=onnx_bcast.session_options())
    reference = onnxruntime.InferenceSession(case.model.SerializeToString(), providers=["CPUExecutionProvider"])
    for inputs, outputs in case.data_sets:
        assert_exact(plain.run(None, feeds_of(model, inputs))[0], outputs[0])
        assert_exact(reference.run(None, feeds_of(case.model, inputs))[0], outputs[0])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_through_kernel(case) -> None:
    for inputs, outputs in case.data_sets:
        data, shape = inputs
        got = np.asarray(onnx_bcast.expand(data, shape))
        assert_exact(got, outputs[0])
        assert_exact(np.asarray(onnx_bcast.expand(data, shape.astype(np.int32))), outputs[0])
        assert_exact(np.asarray(onnx_bcast.broadcast(data, shape, mode="bidirectional")), outputs[0])
