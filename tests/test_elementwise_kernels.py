"""Elementwise kernels: the broadcast-rules document's examples, and ONNX Runtime's own arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.helper import np_dtype_to_tensor_dtype

import onnx_bcast
from tests.onnx_util import plain_session

A_SHAPE = (2, 3, 4, 5)


@pytest.mark.parametrize(
    ("b_shape", "axis", "aligned"),
    [  # the OpenVINO broadcast-rules PDPD examples; "aligned" is B's shape as numpy must see it
        ((3, 4), 1, (1, 3, 4, 1)),
        ((3, 1), 1, (1, 3, 1, 1)),
        ((4, 5), -1, (1, 1, 4, 5)),
        ((4, 5), 2, (1, 1, 4, 5)),
        ((1, 3), 0, (1, 3, 1, 1)),
        ((), -1, (1, 1, 1, 1)),
        ((5,), -1, (1, 1, 1, 5)),
    ],
)
def test_pdpd_document_examples(b_shape: tuple, axis: int, aligned: tuple) -> None:
    a = np.arange(np.prod(A_SHAPE), dtype=np.float32).reshape(A_SHAPE)
    b = (np.arange(int(np.prod(b_shape))) + 1).astype(np.float32).reshape(b_shape)
    out = onnx_bcast.elementwise("Add", a, b, auto_broadcast="pdpd", axis=axis)
    assert out.shape == A_SHAPE
    np.testing.assert_array_equal(out, a + b.reshape(aligned))


@pytest.mark.parametrize(
    ("a", "b", "result"),
    [  # the document's numpy examples
        ((), (), ()), ((2, 3), (1,), (2, 3)), ((3,), (2, 3), (2, 3)), ((2, 3, 5), (), (2, 3, 5)),
        ((2, 1, 5), (1, 4, 5), (2, 4, 5)), ((6, 5), (2, 1, 5), (2, 6, 5)), ((2, 1, 5), (4, 1), (2, 4, 5)),
        ((3, 2, 1, 4), (5, 4), (3, 2, 5, 4)), ((1, 5, 3), (5, 2, 1, 3), (5, 2, 5, 3)),
    ],
)
def test_numpy_document_examples(a: tuple, b: tuple, result: tuple) -> None:
    assert onnx_bcast.elementwise_shape(a, b) == result


@pytest.mark.parametrize(("a", "b"), [((3,), (2,)), ((3, 1, 5), (4, 4, 5))])
def test_numpy_document_failures(a: tuple, b: tuple) -> None:
    with pytest.raises(onnx_bcast.BroadcastError, match=r"Add\(auto_broadcast=numpy\)"):
        onnx_bcast.elementwise_shape(a, b)


@pytest.mark.parametrize(
    ("a", "b", "axis", "words"),
    [((2, 3), (2, 3, 4), -1, "rank"), ((2, 3), (3, 4), 1, "does not fit"), ((2, 3), (4,), -1, "size 4"),
     ((2, 3), (3,), -2, "below -1")],
)
def test_pdpd_failures(a: tuple, b: tuple, axis: int, words: str) -> None:
    with pytest.raises(onnx_bcast.BroadcastError, match=words):
        onnx_bcast.elementwise_shape(a, b, auto_broadcast="pdpd", axis=axis)


def test_pdpd_trailing_ones_are_trimmed() -> None:
    # SPEC: trailing size-1 dims of B are ignored (differs from OpenVINO's shape inference)
    assert onnx_bcast.elementwise_shape((2, 3), (3, 1), auto_broadcast="pdpd", axis=1) == (2, 3)


def test_none_requires_identical_shapes() -> None:
    assert onnx_bcast.elementwise_shape((2, 3), (2, 3), auto_broadcast="NONE") == (2, 3)
    with pytest.raises(onnx_bcast.BroadcastError, match="identical"):
        onnx_bcast.elementwise_shape((2, 3), (1, 3), auto_broadcast="explicit")


_COMPARISONS = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}


def _ort_standard(op: str, a: np.ndarray, b: np.ndarray, **attrs) -> np.ndarray:
    node = helper.make_node(op, ["a", "b"], ["y"], **attrs)
    elem = np_dtype_to_tensor_dtype(a.dtype)
    out_elem = TensorProto.BOOL if op in _COMPARISONS else elem
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", elem, None),
                                            helper.make_tensor_value_info("b", elem, None)],
                              [helper.make_tensor_value_info("y", out_elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    return plain_session(model).run(None, {"a": a, "b": b})[0]  # no uint8 Sub in onnxruntime 1.20: skips


_INTS = np.array([[-7, 7, -7, 7, 0, 9]], dtype=np.int32)
_DIVS = np.array([[2, -2, -2, 2, 3, 4]], dtype=np.int32)


@pytest.mark.parametrize(
    ("op", "a", "b", "attrs"),
    [
        ("Div", _INTS, _DIVS, {}),
        ("Div", _INTS.astype(np.int64), _DIVS.astype(np.int64), {}),
        ("Mod", _INTS, _DIVS, {}),
        ("Mod", _INTS, _DIVS, {"fmod": 1}),
        ("Mod", np.array([[-7.5, 7.5]], np.float32), np.array([[2.0, -2.0]], np.float32), {"fmod": 1}),
        ("Sub", np.array([[1, 200]], np.uint8), np.array([[2, 100]], np.uint8), {}),
        ("Add", np.array([[2**31 - 1]], np.int32), np.array([[1]], np.int32), {}),
        ("Pow", np.array([[2.0, -3.0]], np.float32), np.array([[3.0, 2.0]], np.float32), {}),
        ("Max", np.array([[1.0, -2.0]], np.float64), np.array([[0.5, -1.0]], np.float64), {}),
        ("Min", np.array([[1, -2]], np.int64), np.array([[0, -1]], np.int64), {}),
        ("Equal", np.array([[1, 2]], np.int32), np.array([[1, 3]], np.int32), {}),
        ("Less", np.array([[1.0, 2.0]], np.float32), np.array([[1.5, 2.0]], np.float32), {}),
        ("LessOrEqual", np.array([[1.0, 2.0]], np.float32), np.array([[1.5, 2.0]], np.float32), {}),
        ("Greater", np.array([[1, 2]], np.int64), np.array([[0, 2]], np.int64), {}),
        ("GreaterOrEqual", np.array([[1, 2]], np.int64), np.array([[0, 3]], np.int64), {}),
        ("And", np.array([[True, False, True]]), np.array([[True, True, False]]), {}),
        ("Or", np.array([[True, False, False]]), np.array([[True, True, False]]), {}),
        ("Xor", np.array([[True, False, True]]), np.array([[True, True, False]]), {}),
    ],
)
@pytest.mark.parametrize("rule", ["none", "numpy", "pdpd"])
def test_arithmetic_equals_onnxruntime_standard_op(op: str, a: np.ndarray, b: np.ndarray, attrs: dict,
                                                   rule: str) -> None:
    got = onnx_bcast.elementwise(op, a, b, auto_broadcast=rule, **attrs)
    expected = _ort_standard(op, a, b, **attrs)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    if rule == "pdpd":  # B as a row at axis 1 of a taller A: ORT's op on the pre-broadcast inputs
        tall = np.concatenate([a, a])
        got = onnx_bcast.elementwise(op, tall, b[0], auto_broadcast="pdpd", axis=1, **attrs)
        np.testing.assert_array_equal(got, _ort_standard(op, tall, np.concatenate([b, b]), **attrs))


def test_integer_division_by_zero_is_an_error() -> None:
    with pytest.raises(onnx_bcast.BroadcastError, match="division by zero"):
        onnx_bcast.elementwise("Div", np.array([1]), np.array([0]))
