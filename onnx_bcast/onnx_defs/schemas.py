"""Our op schemas in ``onnx.defs`` (with shape inference), so the checker and shape inference know our ops."""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, TypeProto, helper
from onnx.defs import OpSchema

from onnx_bcast.errors import BroadcastError
from onnx_bcast.onnx_defs.input_keys import static_shape_of, value_key
from onnx_bcast.ops import OP_SPECS, SPEC_BY_NAME
from onnx_bcast.ops.broadcast_shape import canonical_mode
from onnx_bcast.ops.common import ATTR_PROTO_KIND, OpSpec, Shape
from onnx_bcast.ops.elementwise import canonical_rule

DOMAIN = "onnx_bcast"
GUARDED_DOMAIN = "onnx_bcast.ort"
VERSION = 1

_ATTR_TYPES = {"string": OpSchema.AttrType.STRING, "int": OpSchema.AttrType.INT, "ints": OpSchema.AttrType.INTS}


def _attribute(name: str, kind: str, default: Any, doc: str) -> OpSchema.Attribute:
    if default is None:
        return OpSchema.Attribute(name, _ATTR_TYPES[kind], doc, required=True)
    value = list(default) if kind == "ints" else default
    return OpSchema.Attribute(name, helper.make_attribute(name, value, attr_type=ATTR_PROTO_KIND[kind]), doc)


def attribute_value(attr: AttributeProto | None) -> Any:
    """A Python value of an attribute (strings decoded, ints as a tuple)."""
    if attr is None:
        return None
    if attr.type == AttributeProto.STRING:
        return attr.s.decode("utf-8", errors="replace")
    if attr.type == AttributeProto.INT:
        return attr.i
    if attr.type == AttributeProto.INTS:
        return tuple(attr.ints)
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return tuple(value)
    return value


def _dims(type_proto: TypeProto) -> list[int | str | None] | None:
    """A tensor type's dims (value, symbol or None), or None when its rank is unknown."""
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in type_proto.tensor_type.shape.dim]


def _numpy_dims(a: list, b: list) -> list:
    """Multidirectional broadcasting of partly known dims (a mismatch of known sizes is left to the rule)."""
    rank = max(len(a), len(b))
    a, b = [1] * (rank - len(a)) + a, [1] * (rank - len(b)) + b
    return [x if x == y or y == 1 else y if x == 1 else None for x, y in zip(a, b, strict=True)]


def _node_attributes(spec: OpSpec, ctx: Any) -> dict[str, Any]:
    """The node's attributes with the spec's defaults for those it does not set."""
    attrs = spec.defaults()
    for name in attrs:
        value = attribute_value(ctx.get_attribute(name))
        if value is not None:
            attrs[name] = value
    return attrs


def _infer_elementwise(spec: OpSpec):
    """Output type of an elementwise op: bool for comparisons, dims kept symbolic where the rule allows."""
    boolean = spec.output_type_param == "T1"

    def infer(ctx: Any) -> None:
        attrs = _node_attributes(spec, ctx)
        a, b = _dims(ctx.get_input_type(0)), _dims(ctx.get_input_type(1))
        static = [tuple(d) if d is not None and all(isinstance(x, int) for x in d) else None for d in (a, b)]
        try:
            out = spec.static_shape(static, [None, None], attrs)
            rule = canonical_rule(attrs["auto_broadcast"], spec.name)
        except BroadcastError as err:
            raise err.with_node(_display_name(ctx)) from None
        if out is not None:
            dims = list(out)
        elif rule == "numpy":
            dims = _numpy_dims(a, b) if a is not None and b is not None else None
        else:
            dims = a  # none and pdpd: the output has A's shape
        elem = onnx.TensorProto.BOOL if boolean else ctx.get_input_type(0).tensor_type.elem_type
        ctx.set_output_type(0, helper.make_tensor_type_proto(elem, dims))
    return infer


@functools.lru_cache(maxsize=4096)
def _type_proto(elem: int, dims: Shape | None) -> TypeProto:
    return helper.make_tensor_type_proto(elem, dims)


@functools.lru_cache(maxsize=4096)
def _memo_output_shapes(spec_name: str, attrs: tuple, shapes: tuple, values: tuple
                        ) -> tuple[Shape | None, ...] | BroadcastError:
    """Our static shape rule, memoised: models repeat the same broadcast many times (one bias per layer)."""
    spec = SPEC_BY_NAME[spec_name]
    arrays = [None if v is None else np.asarray(v[1], dtype=v[0]).reshape(v[2]) for v in values]
    try:
        return spec.all_output_shapes(list(shapes), arrays, dict(attrs))
    except BroadcastError as err:
        return err


def _infer_guarded(spec: OpSpec):
    """A guarded kernel's outputs: the op's output type, shape left to run time; an int64 status per output."""
    boolean = spec.output_type_param != spec.inputs[0].type_param

    count = len(spec.outputs)

    def infer(ctx: Any) -> None:
        elem = onnx.TensorProto.BOOL if boolean else ctx.get_input_type(0).tensor_type.elem_type
        for i in range(count):
            ctx.set_output_type(i, _type_proto(elem, None))
        for i in range(count, ctx.get_num_outputs()):
            ctx.set_output_type(i, _type_proto(onnx.TensorProto.INT64, (None,)))
    return infer


def _infer(spec: OpSpec, guarded: bool):
    if guarded:
        return _infer_guarded(spec)
    if spec.family == "elementwise":
        return _infer_elementwise(spec)
    reads_values = spec.value_inputs

    def infer(ctx: Any) -> None:
        attrs = _node_attributes(spec, ctx)
        n = ctx.get_num_inputs()
        while n and not ctx.has_input(n - 1):  # absent trailing optional inputs are not inputs
            n -= 1
        present = [ctx.has_input(i) for i in range(n)]
        # only the value inputs' types are read: each read crosses into C++ and copies a proto
        types = [ctx.get_input_type(i) if present[i] and not reads_values[i] else None for i in range(n)]
        elem = types[0].tensor_type.elem_type if types and types[0] is not None else 0
        shapes = tuple(None if t is None else static_shape_of(t) for t in types)
        values = [value_key(ctx.get_input_data(i)) if present[i] and reads_values[i] else None for i in range(n)]
        out_shapes = _memo_output_shapes(spec.name, tuple(sorted(attrs.items())), shapes, tuple(values))
        if isinstance(out_shapes, BroadcastError):
            raise out_shapes.with_node(_display_name(ctx))
        for i, out_shape in enumerate(out_shapes):
            if out_shape is None and i == 0:
                rank = _target_rank(spec.name, attrs, values)
                if rank is not None:  # dims unknown (no rule checked them), the rank is the target's length
                    ctx.set_output_type(i, helper.make_tensor_type_proto(elem, [None] * rank))
                    continue
            ctx.set_output_type(i, _type_proto(elem, out_shape))
    return infer


def _target_rank(op: str, attrs: dict, values: list) -> int | None:
    """The output rank of a Broadcast/Expand whose target is a known 1-D constant, in the modes where the output
    has the target's rank whatever the data (numpy, explicit, pdpd); else None."""
    if op not in ("Broadcast", "Expand") or len(values) < 2 or values[1] is None:
        return None
    try:
        mode = canonical_mode(attrs.get("mode"), op)
    except BroadcastError:
        return None  # the rule says so where it is checked
    dims = values[1][2]  # (dtype, data, shape)
    return int(dims[0]) if mode in ("numpy", "explicit", "pdpd") and len(dims) == 1 else None


def inference_function(spec: OpSpec):
    """The type and shape inference function of ``spec``'s schema in our domain (called with an InferenceContext)."""
    return _infer(spec, guarded=False)


def _display_name(ctx: Any) -> str | None:
    """The node's name as the other paths print it (onnx says ``node Broadcast[onnx_bcast] (name)``)."""
    try:
        display = ctx.get_display_name() or ""
    except AttributeError:  # older onnx
        return None
    match = re.fullmatch(r"node \S+ \((.*)\)", display)
    if match:
        return match.group(1) or None
    return display or None


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
    schema.set_type_and_shape_inference_function(_infer(spec, guarded))
    return schema


def register() -> None:
    """Register our schemas with ``onnx.defs`` (idempotent, reload-safe)."""
    # onnx.reference indexes every registered schema by name at import and refuses a name found in two
    # domains (our Expand and ONNX's): let it build its index from the standard schemas first.
    import onnx.reference.op_run  # noqa: F401
    for spec in OP_SPECS:
        if not onnx.defs.has(spec.name, DOMAIN):
            onnx.defs.register_schema(_schema(spec, DOMAIN, guarded=False))
        if not onnx.defs.has(spec.name, GUARDED_DOMAIN):
            onnx.defs.register_schema(_schema(spec, GUARDED_DOMAIN, guarded=True))
    if not onnx.defs.has(ELEMENTWISE_CHECK, GUARDED_DOMAIN):
        onnx.defs.register_schema(_elementwise_check_schema())


ELEMENTWISE_CHECK = "ElementwiseCheck"


def _elementwise_check_schema() -> OpSchema:
    """The guarded shape check of an elementwise op: both shapes in, the shape B must be reshaped to out."""
    i64 = "tensor(int64)"
    schema = OpSchema(
        ELEMENTWISE_CHECK, GUARDED_DOMAIN, VERSION,
        "Validates A's and B's shapes under auto_broadcast; outputs the shape B takes for numpy broadcasting, or "
        "[2, error id] (a shape B cannot take) on failure.",
        inputs=[OpSchema.FormalParameter("a_shape", i64, "Shape(A)"),
                OpSchema.FormalParameter("b_shape", i64, "Shape(B)")],
        outputs=[OpSchema.FormalParameter("b_aligned_shape", i64, "the shape for Reshape(B, ...)")],
        attributes=[OpSchema.Attribute(name, kind, "", required=False) for name, kind in (
            ("op", OpSchema.AttrType.STRING), ("node", OpSchema.AttrType.STRING),
            ("auto_broadcast", OpSchema.AttrType.STRING), ("axis", OpSchema.AttrType.INT),
            ("allowzero", OpSchema.AttrType.INT), ("quiet", OpSchema.AttrType.INT),
            ("elem_type", OpSchema.AttrType.INT), ("max_output_bytes", OpSchema.AttrType.INT))],
    )

    def infer(ctx: Any) -> None:
        ctx.set_output_type(0, helper.make_tensor_type_proto(onnx.TensorProto.INT64, [None]))

    schema.set_type_and_shape_inference_function(infer)
    return schema

