"""Our op schemas in ``onnx.defs`` (with shape inference), so the checker and shape inference know our ops."""

from __future__ import annotations

from typing import Any

import onnx
from onnx import helper
from onnx.defs import OpSchema

from onnx_bcast.onnx_defs.inference import InferenceContext, infer_function
from onnx_bcast.ops import OP_SPECS
from onnx_bcast.ops.common import ATTR_PROTO_KIND, OpSpec

DOMAIN = "onnx_bcast"
GUARDED_DOMAIN = "onnx_bcast.ort"
VERSION = 1

_ATTR_TYPES = {"string": OpSchema.AttrType.STRING, "int": OpSchema.AttrType.INT, "ints": OpSchema.AttrType.INTS}


def _attribute(name: str, kind: str, default: Any, doc: str) -> OpSchema.Attribute:
    if default is None:
        return OpSchema.Attribute(name, _ATTR_TYPES[kind], doc, required=True)
    value = list(default) if kind == "ints" else default
    return OpSchema.Attribute(name, helper.make_attribute(name, value, attr_type=ATTR_PROTO_KIND[kind]), doc)


def _schema(spec: OpSpec, domain: str, guarded: bool) -> OpSchema:
    option = OpSchema.FormalParameterOption
    as_int64 = [guarded and (i.type_param == "T_SHAPE" or i.shape_only) for i in spec.inputs]
    inputs = [
        OpSchema.FormalParameter(i.name, "tensor(int64)" if cast else i.type_param,
                                 i.doc, param_option=option.Single if guarded or not i.optional else option.Optional)
        for i, cast in zip(spec.inputs, as_int64, strict=True)
    ]
    outputs = [OpSchema.FormalParameter(name, spec.output_type_param, "the result") for name in spec.outputs]
    constraints = [(name, list(types), "") for name, types in spec.type_constraints]
    attributes = [_attribute(a.name, a.kind, a.default, a.doc) for a in spec.attrs]
    if guarded:
        outputs += [OpSchema.FormalParameter(f"{name}_status", "tensor(int64)", f"{name}'s shape, or [2, error id] "
                                             "on failure") for name in spec.outputs]
        used = {i.type_param for i, cast in zip(spec.inputs, as_int64, strict=True) if not cast}
        constraints = [c for c in constraints if c[0] in used or c[0] == spec.output_type_param]
        attributes = [OpSchema.Attribute(a.name, _ATTR_TYPES[a.kind], a.doc, required=False) for a in spec.attrs]
        attributes += [OpSchema.Attribute("op", OpSchema.AttrType.STRING, "the original op", required=False),
                       OpSchema.Attribute("node", OpSchema.AttrType.STRING, "the original node", required=False),
                       OpSchema.Attribute("quiet", OpSchema.AttrType.INT, "1: errors are raised by the caller, not "
                                          "logged", required=False),
                       OpSchema.Attribute("max_output_bytes", OpSchema.AttrType.INT, "the output limit, -1: default",
                                          required=False)]
    schema = OpSchema(spec.name, domain, VERSION, spec.doc, inputs=inputs, outputs=outputs,
                      type_constraints=constraints, attributes=attributes)
    schema.set_type_and_shape_inference_function(infer_function(spec, guarded))
    return schema


def register() -> None:
    """Register our schemas with ``onnx.defs`` (idempotent, reload-safe)."""
    if onnx.defs.has(RANK_CHECK, GUARDED_DOMAIN):
        return  # registered last: every schema is there (each pass calls this; the full check costs 25 lookups)
    # onnx.reference indexes every registered schema by name at import and refuses a name found in two
    # domains (our Expand and ONNX's): let it build its index from the standard schemas first.
    from onnx.reference import op_run  # noqa: F401
    for spec in OP_SPECS:
        if not onnx.defs.has(spec.name, DOMAIN):
            onnx.defs.register_schema(_schema(spec, DOMAIN, guarded=False))
        if not onnx.defs.has(spec.name, GUARDED_DOMAIN):
            onnx.defs.register_schema(_schema(spec, GUARDED_DOMAIN, guarded=True))
    if not onnx.defs.has(ELEMENTWISE_CHECK, GUARDED_DOMAIN):
        onnx.defs.register_schema(_elementwise_check_schema())
    if not onnx.defs.has(BROADCAST_CHECK, GUARDED_DOMAIN):
        onnx.defs.register_schema(_broadcast_check_schema())
    if not onnx.defs.has(RANK_CHECK, GUARDED_DOMAIN):
        onnx.defs.register_schema(_rank_check_schema())


ELEMENTWISE_CHECK = "ElementwiseCheck"
BROADCAST_CHECK = "BroadcastCheck"
RANK_CHECK = "RankCheck"


def _broadcast_check_schema() -> OpSchema:
    """The guarded shape check of a broadcast whose data ORT's ``Expand`` moves: the data's shape, the target and
    axes_mapping in; the shape the data is reshaped to and the output shape out."""
    return _check_schema(
        BROADCAST_CHECK,
        "Validates a broadcast of data of this shape to the target under mode; outputs the shape the data takes "
        "(Reshape) and the output shape (Expand), or [2, error id] (a shape the data cannot take) on failure.",
        [("data_shape", "Shape(data)"), ("target_shape", "int64"), ("axes_mapping", "int64, empty if absent")],
        ("data_aligned_shape", "the shape for Reshape(data, ...)"),
        {"op": _STRING, "node": _STRING, "mode": _STRING, "axis": _INT, "allowzero": _INT, "quiet": _INT,
         "elem_type": _INT, "max_output_bytes": _INT}, ("output_shape", "the shape for Expand(..., )"))


def _elementwise_check_schema() -> OpSchema:
    """The guarded shape check of an elementwise op: both shapes in, the shape B must be reshaped to out."""
    return _check_schema(
        ELEMENTWISE_CHECK,
        "Validates A's and B's shapes under auto_broadcast; outputs the shape B takes for numpy broadcasting, or "
        "[2, error id] (a shape B cannot take) on failure.",
        [("a_shape", "Shape(A)"), ("b_shape", "Shape(B)")], ("b_aligned_shape", "the shape for Reshape(B, ...)"),
        {"op": _STRING, "node": _STRING, "auto_broadcast": _STRING, "axis": _INT, "allowzero": _INT, "quiet": _INT,
         "elem_type": _INT, "max_output_bytes": _INT})


def _rank_check_schema() -> OpSchema:
    """The guarded rank check of a kernel's value input (numpy 1: at most 32 dims): its shape in, the same shape
    out (for ``Reshape(value, ...)``), or [2, error id] (a shape the value cannot take) on failure."""
    return _check_schema(
        RANK_CHECK,
        "Checks that a value's rank is one the numpy kernels take; outputs its shape, or [2, error id] (a shape the "
        "value cannot take) on failure.",
        [("shape", "Shape(value)")], ("checked_shape", "the shape for Reshape(value, ...)"),
        {"op": _STRING, "node": _STRING, "mode": _STRING, "mode_attr": _STRING, "input": _STRING, "quiet": _INT})


_STRING, _INT = OpSchema.AttrType.STRING, OpSchema.AttrType.INT


def _check_schema(name: str, doc: str, inputs: list[tuple[str, str]], output: tuple[str, str],
                  attributes: dict[str, OpSchema.AttrType], *more: tuple[str, str]) -> OpSchema:
    """A guarded check of the ONNX Runtime form: int64 shapes in, int64 shapes out (``output`` and ``more``; a
    failure shape carrying the error id when the check fails), every attribute optional."""
    i64 = "tensor(int64)"
    schema = OpSchema(
        name, GUARDED_DOMAIN, VERSION, doc,
        inputs=[OpSchema.FormalParameter(input_name, i64, what) for input_name, what in inputs],
        outputs=[OpSchema.FormalParameter(out, i64, what) for out, what in (output, *more)],
        attributes=[OpSchema.Attribute(attr, kind, "", required=False) for attr, kind in attributes.items()],
    )

    def infer(ctx: InferenceContext) -> None:
        for k in range(1 + len(more)):
            ctx.set_output_type(k, helper.make_tensor_type_proto(onnx.TensorProto.INT64, [None]))

    schema.set_type_and_shape_inference_function(infer)
    return schema
