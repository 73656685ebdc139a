"""The ONNX types our Python ops are registered for: those the onnxruntime-extensions bridge carries."""

from __future__ import annotations

from onnx_bcast.model.ort_import import extensions
from onnx_bcast.ops import OP_SPECS
from onnx_bcast.ops.common import OpSpec

PyCustomOpDef = extensions().PyCustomOpDef
# the types the bridge carries (16-bit floats abort it; strings are not practical as elementwise operands)
BRIDGE_TYPE = {"tensor(float)": PyCustomOpDef.dt_float, "tensor(double)": PyCustomOpDef.dt_double,
               "tensor(int8)": PyCustomOpDef.dt_int8, "tensor(int16)": PyCustomOpDef.dt_int16,
               "tensor(int32)": PyCustomOpDef.dt_int32, "tensor(int64)": PyCustomOpDef.dt_int64,
               "tensor(uint8)": PyCustomOpDef.dt_uint8, "tensor(uint16)": PyCustomOpDef.dt_uint16,
               "tensor(uint32)": PyCustomOpDef.dt_uint32, "tensor(uint64)": PyCustomOpDef.dt_uint64,
               "tensor(bool)": PyCustomOpDef.dt_bool, "tensor(string)": PyCustomOpDef.dt_string}


def _value_inputs(spec: OpSpec) -> list[str]:
    """The type parameters of the inputs whose values the kernel reads (not shapes, not shape-only inputs)."""
    return [i.type_param for i in spec.inputs if i.type_param != "T_SHAPE" and not i.shape_only]


def bridge_signatures(spec: OpSpec) -> list[tuple[str, ...]]:
    """The ONNX types of the value inputs, one tuple per registration of ``spec``'s Python ops.

    Inputs of one type parameter share a type; two parameters (Pow's base ``T`` and exponent ``T1``) take every
    pair the bridge carries. A shape-only input (``BroadcastLikeV0``'s ``like_arg``) keeps the first input's type
    in the public form.
    """
    constraints = dict(spec.type_constraints)
    kinds = _value_inputs(spec)
    if len(set(kinds)) == 2 and spec.family == "elementwise":
        return [(t, t1) for t in constraints[kinds[0]] if t in BRIDGE_TYPE
                for t1 in constraints[kinds[1]] if t1 in BRIDGE_TYPE]
    return [(t,) * len(kinds) for t in constraints[kinds[0]]
            if t in BRIDGE_TYPE and all(t in constraints[k] for k in kinds)]


def bridge_types(spec: OpSpec) -> list[str]:
    """The types of the first value input that ``spec``'s Python ops are registered for."""
    return sorted({signature[0] for signature in bridge_signatures(spec)})


def elementwise_bridge_types(op: str) -> list[str]:
    """The ONNX types the public elementwise op ``op`` runs with in plain ORT (one registration each)."""
    return bridge_types(next(s for s in OP_SPECS if s.name == op))
