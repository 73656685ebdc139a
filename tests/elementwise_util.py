"""Shared pieces of the elementwise tests: op tables, models, input values and the standard-ORT oracle."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import ModelProto, TensorProto, helper
from onnx.helper import np_dtype_to_tensor_dtype

ARITHMETIC_OPS = ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod")
COMPARISON_OPS = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")
LOGICAL_OPS = ("And", "Or", "Xor")
ALL_OPS = ARITHMETIC_OPS + COMPARISON_OPS + LOGICAL_OPS

# (A shape, B shape, axis, B's shape as numpy must see it), written out by hand from SPEC §2, per rule
SHAPES = {
    "none": ((2, 3), (2, 3), -1, (2, 3)),
    "numpy": ((2, 1, 3), (4, 1), -1, (4, 1)),
    "pdpd": ((2, 3, 4, 2), (3, 4), 1, (1, 3, 4, 1)),
}


def output_type(op: str, dtype: np.dtype) -> np.dtype:
    """The standard op's output element type."""
    return np.dtype(np.bool_) if op in COMPARISON_OPS or op in LOGICAL_OPS else np.dtype(dtype)


def op_attrs(op: str, dtype: np.dtype) -> dict:
    """Extra attributes the op needs for ``dtype`` (Mod of floats needs fmod=1)."""
    if op != "Mod":
        return {}
    return {"fmod": 1 if np.issubdtype(dtype, np.floating) else 0}


def values(op: str, shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator, operand: str) -> np.ndarray:
    """Inputs with negative numbers where the type has them; divisors never 0, integer exponents small."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    signed = np.issubdtype(dtype, np.signedinteger) or np.issubdtype(dtype, np.floating)
    if op == "Pow":
        if operand == "A":
            return rng.integers(1 if not signed else -4, 5, size=shape).astype(dtype)
        return rng.integers(0, 4, size=shape).astype(dtype)
    low, high = (-9, 10) if signed else (0, 19)
    data = rng.integers(low, high, size=shape)
    if operand == "B" and op in ("Div", "Mod"):
        data = np.where(data == 0, 7, data)
    if np.issubdtype(dtype, np.floating):
        return (data + rng.choice([0.0, 0.25, 0.5], size=shape)).astype(dtype)
    return data.astype(dtype)


def elementwise_model(op: str, rule: str, axis: int, a_dims: list, b_dims: list, elem: int, opset: int = 17,
                      b_elem: int | None = None, **attrs) -> ModelProto:
    """One onnx_bcast elementwise node between graph inputs A and B (dims may be names: dynamic); B of ``elem``
    unless ``b_elem`` (Pow's exponent) is given."""
    node = helper.make_node(op, ["A", "B"], ["C"], domain="onnx_bcast", name=f"{op.lower()}_node",
                            auto_broadcast=rule, axis=axis, **attrs)
    out_elem = TensorProto.BOOL if op in COMPARISON_OPS or op in LOGICAL_OPS else elem
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("A", elem, a_dims),
                                            helper.make_tensor_value_info("B", b_elem or elem, b_dims)],
                              [helper.make_tensor_value_info("C", out_elem, None)])
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("onnx_bcast", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def dynamic(shape: tuple[int, ...], prefix: str) -> list[str]:
    return [f"{prefix}{i}" for i in range(len(shape))]


_STANDARD_SESSIONS: dict = {}


def standard_session(op: str, elem: int, rank_a: int, rank_b: int, **attrs) -> ort.InferenceSession | None:
    """Plain ORT with the standard op (numpy broadcasting); None when ORT has no kernel for the type."""
    key = (op, elem, rank_a, rank_b, tuple(sorted(attrs.items())))
    if key not in _STANDARD_SESSIONS:
        node = helper.make_node(op, ["A", "B"], ["C"], **attrs)
        out_elem = TensorProto.BOOL if op in COMPARISON_OPS or op in LOGICAL_OPS else elem
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("A", elem, [None] * rank_a),
                                                helper.make_tensor_value_info("B", elem, [None] * rank_b)],
                                  [helper.make_tensor_value_info("C", out_elem, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
        try:
            _STANDARD_SESSIONS[key] = ort.InferenceSession(model.SerializeToString(),
                                                           providers=["CPUExecutionProvider"])
        except Exception:  # NOT_IMPLEMENTED: ORT's CPU provider has no kernel of the standard op for this type
            _STANDARD_SESSIONS[key] = None
    return _STANDARD_SESSIONS[key]


def standard_result(op: str, a: np.ndarray, b_aligned: np.ndarray, **attrs) -> np.ndarray:
    """The standard ONNX op in plain ORT on pre-broadcast inputs: the independent oracle of the arithmetic."""
    out_shape = np.broadcast_shapes(a.shape, b_aligned.shape)
    a_full = np.ascontiguousarray(np.broadcast_to(a, out_shape))
    b_full = np.ascontiguousarray(np.broadcast_to(b_aligned, out_shape))
    elem = np_dtype_to_tensor_dtype(a.dtype)
    session = standard_session(op, elem, len(out_shape), len(out_shape), **attrs)
    assert session is not None, f"plain ORT has no {op} for {a.dtype}"
    return session.run(None, {"A": a_full, "B": b_full})[0]


def assert_values_equal(op: str, got: np.ndarray, expected: np.ndarray, a: np.ndarray) -> None:
    """As OpenVINO computes ``op``: exact, except where its float kernels round differently (one ulp for Div/Pow;
    its float Mod is ``a - trunc(a / b) * b``, within half an ulp of ``a`` in a 200k-sample check)."""
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if expected.dtype != np.float32 or op not in ("Div", "Pow", "Mod"):
        np.testing.assert_array_equal(got, expected, strict=True)
    elif op == "Mod":
        tolerance = 2 * np.finfo(np.float32).eps * np.broadcast_to(np.abs(a), got.shape)
        assert np.all(np.abs(got - expected) <= tolerance), (got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=3e-7, atol=0)
