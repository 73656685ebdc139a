"""OpenVINO's binary elementwise ops (auto_broadcast none/numpy/pdpd) wrapped as an oracle for onnx-bcast's tests."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
import openvino as ov
from openvino.utils.node_factory import NodeFactory

try:
    from ov_oracle import static_output_shape
except ImportError:  # tests/ imported as a package
    from tests.ov_oracle import static_output_shape

#: These ops are unchanged up to the newest opset (a test checks that opset16 builds the same versions).
OPSET = "opset1"

#: onnx-bcast op name -> OpenVINO op name (``Mod`` depends on ``fmod``: see ``ov_op_name``).
OV_OPS: dict[str, str] = {
    "Add": "Add",
    "Sub": "Subtract",
    "Mul": "Multiply",
    "Div": "Divide",
    "Pow": "Power",
    "Max": "Maximum",
    "Min": "Minimum",
    "Equal": "Equal",
    "Less": "Less",
    "LessOrEqual": "LessEqual",
    "Greater": "Greater",
    "GreaterOrEqual": "GreaterEqual",
    "And": "LogicalAnd",
    "Or": "LogicalOr",
    "Xor": "LogicalXor",
}

#: ONNX ``Mod`` by ``fmod``: fmod=0 takes the divisor's sign (Python ``%``) = OpenVINO ``FloorMod``;
#: fmod=1 takes the dividend's sign (C ``fmod``) = OpenVINO ``Mod``. Checked on examples in the tests.
OV_MOD = {0: "FloorMod", 1: "Mod"}

#: The attribute that carries the pdpd axis. Without it the NodeFactory uses axis 0, not -1.
PDPD_AXIS_ATTRIBUTE = "auto_broadcast.auto_broadcast_axis"

#: OpenVINO's auto_broadcast spellings and the name it reports back (``explicit`` is an alias of ``none``).
OV_RULES = {"none": "none", "explicit": "none", "numpy": "numpy", "pdpd": "pdpd"}

#: Compile for exact float32 arithmetic: on CPUs with bf16/fp16 support the plugin's default precision may be lower.
COMPILE_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


@cache
def _factory(opset: str = OPSET) -> NodeFactory:
    return NodeFactory(opset)


@cache
def _core() -> ov.Core:
    return ov.Core()


def ov_op_name(op: str, fmod: int = 0) -> str:
    """The OpenVINO op that computes onnx-bcast's ``op`` (``Mod`` with ``fmod``)."""
    return OV_MOD[int(fmod)] if op == "Mod" else OV_OPS[op]


def elementwise_node(
    op: str, a: ov.Node, b: ov.Node, *, auto_broadcast: str, axis: int = -1, fmod: int = 0, opset: str = OPSET
) -> ov.Node:
    """Build the OpenVINO node; validation (shape inference) runs here and raises RuntimeError when it fails.

    ``Divide`` gets ``m_pythondiv=False``: ONNX integer ``Div`` truncates toward zero. (OpenVINO's CPU plugin
    truncates whatever the attribute says; its reference evaluator floors when it is True.)
    """
    if auto_broadcast not in OV_RULES:
        raise ValueError(f"OpenVINO has no auto_broadcast {auto_broadcast!r}")
    attributes: dict[str, str | int | bool] = {"auto_broadcast": auto_broadcast}
    if auto_broadcast == "pdpd":
        attributes[PDPD_AXIS_ATTRIBUTE] = axis
    ov_op = ov_op_name(op, fmod)
    if ov_op == "Divide":
        attributes["m_pythondiv"] = False
    node = _factory(opset).create(ov_op, [a, b], attributes)
    taken = node.get_attributes()
    attributes["auto_broadcast"] = OV_RULES[auto_broadcast]
    for name, value in attributes.items():
        if taken.get(name) != value:
            raise AssertionError(f"OpenVINO did not take {name}={value!r} on {ov_op} (has {taken})")
    return node


def ov_elementwise_shape(
    a_shape: Sequence[int], b_shape: Sequence[int], *, auto_broadcast: str = "numpy", axis: int = -1
) -> tuple[int, ...] | None:
    """Output shape from OpenVINO's shape inference (of ``Add``), or None when OpenVINO rejects the shapes."""
    a = ov.op.Parameter(ov.Type.f32, ov.PartialShape(list(a_shape)))
    b = ov.op.Parameter(ov.Type.f32, ov.PartialShape(list(b_shape)))
    try:
        node = elementwise_node("Add", a, b, auto_broadcast=auto_broadcast, axis=axis)
    except RuntimeError:
        return None
    return static_output_shape(node)


def ov_pdpd_aligned_shape(a_shape: Sequence[int], b_shape: Sequence[int], axis: int) -> tuple[int, ...]:
    """B's shape as OpenVINO's pdpd rule meets A: ``[1] * axis + B + [1] * rest`` (no trimming)."""
    start = len(a_shape) - len(b_shape) if axis == -1 else axis
    return (1,) * start + tuple(b_shape) + (1,) * (len(a_shape) - start - len(b_shape))


def ov_elementwise(
    op: str, a: np.ndarray, b: np.ndarray, *, auto_broadcast: str = "numpy", axis: int = -1, fmod: int = 0
) -> np.ndarray | None:
    """``op(a, b)`` computed by OpenVINO's CPU plugin, or None when OpenVINO rejects the shapes.

    Both operands are model Parameters, so the CPU kernel runs (no constant folding). The CPU plugin refuses to
    compile some pdpd models that OpenVINO's shape inference accepts: float ``Mod`` ("Doesn't support broadcast
    type: pdpd"), and comparisons and logical ops with an explicit axis (its snippets' RankNormalization re-validates
    the node and fails). Those are run as the same op under numpy with B reshaped as pdpd means
    (``ov_pdpd_aligned_shape``; the arithmetic ops check that this form equals the native one).
    """
    pa = ov.op.Parameter(ov.Type(a.dtype), ov.PartialShape(list(a.shape)))
    pb = ov.op.Parameter(ov.Type(b.dtype), ov.PartialShape(list(b.shape)))
    try:
        node = elementwise_node(op, pa, pb, auto_broadcast=auto_broadcast, axis=axis, fmod=fmod)
    except RuntimeError:
        return None
    out_shape = tuple(int(d) for d in node.get_output_partial_shape(0).to_shape())
    try:
        compiled = _core().compile_model(ov.Model([node], [pa, pb]), "CPU", COMPILE_CONFIG)
    except RuntimeError:
        if auto_broadcast != "pdpd":
            raise
        aligned = b.reshape(ov_pdpd_aligned_shape(a.shape, b.shape, axis))
        result = ov_elementwise(op, a, aligned, auto_broadcast="numpy", fmod=fmod)
        if result is None or result.shape != out_shape:
            raise AssertionError(f"OpenVINO's pdpd shape {out_shape} differs from its numpy form's") from None
        return result
    result = np.array(compiled({0: a, 1: b})[0], copy=True)
    if result.shape != out_shape:
        raise AssertionError(f"OpenVINO CPU shape {result.shape} differs from its shape inference {out_shape}")
    return result
