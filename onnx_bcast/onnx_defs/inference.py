"""Our schemas' type and shape inference, and the one contract its callers meet: ``InferenceContext``.

onnx calls these functions with its C++ ``InferenceContext``; ``lowering/fast/known_outputs.py`` calls them with a
Python stand-in. Both meet the ``Protocol`` below, which lists everything the functions ask of a context.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, TypeProto, helper

from onnx_bcast.errors import BroadcastError
from onnx_bcast.onnx_defs.input_keys import static_shape_of, value_key
from onnx_bcast.ops import SPEC_BY_NAME
from onnx_bcast.ops.broadcast_modes import MODE_BY_NAME
from onnx_bcast.ops.broadcast_shape import canonical_mode
from onnx_bcast.ops.common import OpSpec, Shape
from onnx_bcast.ops.elementwise import canonical_rule


class InferenceContext(Protocol):
    """What our inference functions ask of onnx's ``InferenceContext`` (onnx >= 1.16's Python-callable API)."""

    def get_attribute(self, name: str) -> AttributeProto | None: ...

    def get_num_inputs(self) -> int: ...

    def has_input(self, i: int) -> bool: ...

    def get_input_type(self, i: int) -> TypeProto | None: ...

    def get_input_data(self, i: int) -> TensorProto | None: ...

    def get_num_outputs(self) -> int: ...

    def set_output_type(self, i: int, type_proto: TypeProto) -> Any: ...

    def get_display_name(self) -> str: ...


Inference = Callable[[InferenceContext], None]


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


def _dims(type_proto: TypeProto | None) -> list[int | str | None] | None:
    """A tensor type's dims (value, symbol or None), or None when its rank is unknown (or the type is)."""
    if type_proto is None or not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in type_proto.tensor_type.shape.dim]


def _numpy_dims(a: list, b: list) -> list:
    """Multidirectional broadcasting of partly known dims (a mismatch of known sizes is left to the rule)."""
    rank = max(len(a), len(b))
    a, b = [1] * (rank - len(a)) + a, [1] * (rank - len(b)) + b
    return [x if x == y or y == 1 else y if x == 1 else None for x, y in zip(a, b, strict=True)]


def _node_attributes(spec: OpSpec, ctx: InferenceContext) -> dict[str, Any]:
    """The node's attributes with the spec's defaults for those it does not set."""
    attrs = spec.defaults()
    for name in attrs:
        value = attribute_value(ctx.get_attribute(name))
        if value is not None:
            attrs[name] = value
    return attrs


def _infer_elementwise(spec: OpSpec) -> Inference:
    """Output type of an elementwise op: bool for comparisons, dims kept symbolic where the rule allows."""
    boolean = spec.output_type_param == "T1"

    def infer(ctx: InferenceContext) -> None:
        attrs = _node_attributes(spec, ctx)
        a_type = ctx.get_input_type(0)  # None where the caller knows no type (onnx's version converter does so
        a, b = _dims(a_type), _dims(ctx.get_input_type(1))  # for an initializer whose data is in an external file)
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
        if not boolean and (a_type is None or not a_type.HasField("tensor_type")):
            return  # A's type unknown: nothing to say of the output's
        elem = onnx.TensorProto.BOOL if boolean else a_type.tensor_type.elem_type
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


def _infer_guarded(spec: OpSpec) -> Inference:
    """A guarded kernel's outputs: the op's output type, shape left to run time; an int64 status per output."""
    boolean = spec.output_type_param != spec.inputs[0].type_param

    count = len(spec.outputs)

    def infer(ctx: InferenceContext) -> None:
        elem = onnx.TensorProto.BOOL if boolean else ctx.get_input_type(0).tensor_type.elem_type
        for i in range(count):
            ctx.set_output_type(i, _type_proto(elem, None))
        for i in range(count, ctx.get_num_outputs()):
            ctx.set_output_type(i, _type_proto(onnx.TensorProto.INT64, (None,)))
    return infer


def infer_function(spec: OpSpec, guarded: bool) -> Inference:
    """The inference function of ``spec``'s schema: the guarded (ONNX Runtime) form's, or our domain's."""
    if guarded:
        return _infer_guarded(spec)
    if spec.family == "elementwise":
        return _infer_elementwise(spec)
    reads_values = spec.value_inputs

    def infer(ctx: InferenceContext) -> None:
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
                rank = _target_rank(spec.name, attrs, values, ctx)
                if rank is not None:  # dims unknown (no rule checked them), the rank is the target's length
                    ctx.set_output_type(i, helper.make_tensor_type_proto(elem, [None] * rank))
                    continue
            ctx.set_output_type(i, _type_proto(elem, out_shape))
    return infer


def _target_rank(op: str, attrs: dict, values: list, ctx: InferenceContext) -> int | None:
    """The output rank of a Broadcast/Expand whose 1-D target has a known length (a constant, or a computed vector
    such as ``Shape(x)`` of a ranked ``x``), in the modes where the output has the target's rank whatever the data
    (``BroadcastMode.output_has_target_rank``); else None."""
    if op not in ("Broadcast", "Expand") or len(values) < 2 or not ctx.has_input(1):
        return None
    try:
        mode = canonical_mode(attrs.get("mode"), op)
    except BroadcastError:
        return None  # the rule says so where it is checked
    if not MODE_BY_NAME[mode].output_has_target_rank:
        return None
    if values[1] is not None:
        dims = values[1][2]  # (dtype, data, shape)
        return int(dims[0]) if len(dims) == 1 else None
    # a computed target: its type's length where known and not 0 (an empty run-time target keeps the output's rank
    # unknown: a rank-0 output lets tools with fixed shapes fold its check away, tests/test_sound_guards.py)
    target = ctx.get_input_type(1)
    dims = static_shape_of(target) if target is not None else None
    return dims[0] if dims is not None and len(dims) == 1 and dims[0] >= 1 else None


def inference_function(spec: OpSpec) -> Inference:
    """The type and shape inference function of ``spec``'s schema in our domain (called with an InferenceContext)."""
    return infer_function(spec, guarded=False)


def _display_name(ctx: InferenceContext) -> str | None:
    """The node's name as the other paths print it (onnx says ``node Broadcast[onnx_bcast] (name)``)."""
    try:
        display = ctx.get_display_name() or ""
    except AttributeError:  # older onnx
        return None
    match = re.fullmatch(r"node \S+ \((.*)\)", display)
    if match:
        return match.group(1) or None
    return display or None
