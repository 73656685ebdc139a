"""Which tensor types ONNX Runtime's Python-op bridge carries, and where ORT's own standard ops can serve."""

from __future__ import annotations

import functools
from typing import Any

from onnx import TensorProto, helper

from onnx_bcast.ops.elementwise import COMPARISONS, LOGICAL, floors, standard_accepts, standard_form

# the element types the onnxruntime-extensions bridge hands to Python (others abort the process there)
BRIDGE_TYPES = frozenset({
    TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.BOOL, TensorProto.STRING,
    TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
    TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64,
})
# types it does not carry, and the carried type that holds every one of their values exactly
CARRIERS = {
    TensorProto.FLOAT16: TensorProto.FLOAT, TensorProto.BFLOAT16: TensorProto.FLOAT,
    TensorProto.FLOAT8E4M3FN: TensorProto.FLOAT, TensorProto.FLOAT8E4M3FNUZ: TensorProto.FLOAT,
    TensorProto.FLOAT8E5M2: TensorProto.FLOAT, TensorProto.FLOAT8E5M2FNUZ: TensorProto.FLOAT,
    TensorProto.INT4: TensorProto.INT8, TensorProto.UINT4: TensorProto.UINT8,
}
_FLOATS = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)
_TRAPS = {("Div", TensorProto.INT32), ("Div", TensorProto.INT64)}  # ORT's native Div dies on INT_MIN / -1


def type_name(elem: int) -> str:
    return TensorProto.DataType.Name(elem).lower()


def carrier_type(elem: int) -> int | None:
    """The type a value of ``elem`` crosses the bridge as (itself, or an exact wider type); None: it cannot."""
    return elem if elem in BRIDGE_TYPES else CARRIERS.get(elem)


def carrier_problem(elem: int, opset: int) -> str | None:
    """Why data of ``elem`` cannot reach our Python kernels in a model of default-domain ``opset`` (None: it can)."""
    carrier = carrier_type(elem)
    if carrier is None:
        return (f"data of type {type_name(elem)} cannot run in the ONNX Runtime path: the Python-op bridge does not "
                "carry it and no exact cast to a type it carries exists")
    if carrier != elem and not standard_accepts("Cast", opset, elem):
        since = next((v for v in range(opset + 1, 30) if standard_accepts("Cast", v, elem)), None)
        return (f"data of type {type_name(elem)} crosses the Python-op bridge as {type_name(carrier)} through Cast, "
                f"which needs default-domain opset >= {since}; the model uses opset {opset}")
    return None


def native_elementwise_runs(op: str, a: int | None, b: int | None, opset: int, attrs: dict[str, Any]) -> bool:
    """Whether ORT's standard op computes ``op`` on these types at ``opset`` (probed once per combination)."""
    if a is None:
        return True  # nothing known: the standard op, as before types were known
    if (op, a) in _TRAPS:
        return False
    if floors(op, attrs, a):
        return False  # floor division: ORT's Div truncates, our kernel floors
    if op == "Mod" and not int(attrs.get("fmod", 0)) and a in _FLOATS and opset < 28:
        return False  # ORT makes the session, then fails the run: "fmod attribute must be true ... before opset 28"
    try:
        form = standard_form(op, opset, a)
    except ValueError:
        return False
    fmod = int(attrs.get("fmod", 0)) if op == "Mod" else None
    if form.startswith("widen:"):  # the op on the wider type, with Casts around it
        wide = int(form.split(":")[1])
        return _ort_has_kernel(op, wide, wide, opset, fmod)
    ops = [op] if form == "direct" else ["Less" if op == "LessOrEqual" else "Greater", "Equal", "Or"]
    return all(_ort_has_kernel(name, a, b if b is not None else a, opset, fmod) for name in ops)


@functools.cache
def _ort_has_kernel(op: str, a: int, b: int, opset: int, fmod: int | None) -> bool:
    from onnx_bcast.model.runtime_limits import max_ir_version, ort_accepts  # imports onnxruntime: the ORT path only

    if op == "Or":
        a = b = TensorProto.BOOL
    out = TensorProto.BOOL if op in COMPARISONS or op in LOGICAL else a
    node = helper.make_node(op, ["a", "b"], ["y"], **({"fmod": fmod} if fmod is not None else {}))
    graph = helper.make_graph([node], "probe", [helper.make_tensor_value_info("a", a, [1]),
                                                helper.make_tensor_value_info("b", b, [1])],
                              [helper.make_tensor_value_info("y", out, [1])])
    return ort_accepts(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                         ir_version=max_ir_version()))
