"""A declared node of ours bound to what is statically known: its inputs' shapes, types and values, its output shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import TensorProto

from onnx_bcast.errors import BroadcastError
from onnx_bcast.lowering.declaring import Declared, present_count
from onnx_bcast.lowering.static_facts import Dims, StaticFacts

INTEGER_TYPES = (TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
                 TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64)


_INTS: dict[int, tuple[Any, tuple[int, ...]]] = {}  # id(constant) -> (the constant, its values as ints)
_MAX_INTS = 4096


@dataclass(kw_only=True)
class Bound(Declared):
    """A declared node with what is statically known of its inputs (None: unknown) and its output shape."""

    shapes: list[Dims | None]  # per input: dims (None for an unknown dim), or None for an unknown rank
    types: list[int | None]  # per input: ONNX element type
    values: list[np.ndarray | None]  # per input: constant values
    out_shape: tuple[int, ...] | None  # the static output shape, validated
    in_function: bool
    # set by the pass: per input, the elements a shape-like input is computed to (``shape_values``), else None;
    # and the input names that the facts' symbols use
    computed: list = field(default_factory=list)
    fact_names: list[str] = field(default_factory=list)
    derived_dims: list = field(default_factory=list)  # per input: dims with symbols of the values they come from
    # a signed Div or Mod that cannot meet the type's minimum divided by -1 (a constant divisor without -1, or a
    # constant dividend without the minimum): it needs no wrapped form
    division_proven_safe: bool = False

    def static_shape(self, i: int) -> tuple[int, ...] | None:
        """Input ``i``'s shape when every dim is known."""
        dims = self.shapes[i]
        if dims is None or None in dims:
            return None
        return tuple(int(d) for d in dims)

    def rank(self, i: int) -> int | None:
        dims = self.shapes[i]
        return None if dims is None else len(dims)

    def ints(self, i: int) -> tuple[int, ...] | None:
        """Input ``i``'s constant integer values."""
        value = self.values[i]
        if value is None:
            return None
        entry = _INTS.get(id(value))  # nodes share constants, and rules ask several times
        if entry is None or entry[0] is not value:
            if len(_INTS) >= _MAX_INTS:
                _INTS.clear()
            entry = _INTS[id(value)] = (value, tuple(int(v) for v in np.asarray(value).reshape(-1).tolist()))
        return entry[1]

    def length(self, i: int) -> int | None:
        """The length of 1-D input ``i`` (from its value or its shape)."""
        values = self.ints(i)
        if values is not None:
            return len(values)
        dims = self.shapes[i]
        return dims[0] if dims is not None and len(dims) == 1 else None

    def is_int64(self, i: int) -> bool:
        return self.types[i] == TensorProto.INT64


def bind(declared: Declared, facts: StaticFacts, in_function: bool = False) -> Bound:
    """Attach the static facts and validate them; inside a function only constants are known (values are typed
    per call site)."""
    names = declared.inputs
    signature = None if in_function else declared.signature
    if signature is not None:
        shared = facts.bound_by_signature.get(signature)
        if shared is not None:  # a node with equal attributes, constants and input types was bound: its facts
            return _with_division_facts(_bound(declared, *shared, in_function), facts)
    reads = declared.spec.value_inputs  # only shape-like inputs' values matter: data values are never read
    if in_function:
        values = [facts.values.get(n) if n and r else None for n, r in zip(names, reads, strict=True)]
        shapes: list[Dims | None] = [None] * len(names)
        types: list[int | None] = [None] * len(names)
    else:
        shapes, types, values = facts.of_inputs(names, reads)
    _check_shape_inputs(declared, types, shapes)
    inferred = None if in_function else facts.shapes.get(declared.output)
    out_shape = _static_output(declared, shapes, values, inferred)
    if signature is not None:
        facts.bound_by_signature[signature] = (shapes, types, values, out_shape)
    return _with_division_facts(_bound(declared, shapes, types, values, out_shape, in_function), facts)


_TRAPPING_DIVISIONS = {TensorProto.INT32: np.iinfo(np.int32).min, TensorProto.INT64: np.iinfo(np.int64).min}


def _with_division_facts(bound: Bound, facts: StaticFacts) -> Bound:
    """``bound`` with ``division_proven_safe`` set for a signed int32/int64 ``Div`` or ``Mod`` whose constant
    divisor holds no -1 or whose constant dividend holds no minimum (the constants' data is not in the signature:
    the flag is in the replay key). Only constants prove it: a function body's values are typed per call site."""
    minimum = _TRAPPING_DIVISIONS.get(bound.types[0]) if bound.op in ("Div", "Mod") else None
    if minimum is None or bound.in_function:
        return bound
    dividend, divisor = (facts.values.get(name) for name in bound.inputs[:2])
    bound.division_proven_safe = bool((divisor is not None and not np.any(divisor == -1))
                                      or (dividend is not None and not np.any(dividend == minimum)))
    return bound


def _bound(declared: Declared, shapes: list[Dims | None], types: list[int | None], values: list[np.ndarray | None],
           out_shape: tuple[int, ...] | None, in_function: bool) -> Bound:
    """``Bound(...)`` of a declared node: what it says of itself is taken as it is, not derived again."""
    return Bound(**vars(declared), shapes=shapes, types=types, values=values, out_shape=out_shape,
                 in_function=in_function)


def _check_shape_inputs(declared: Declared, types: list[int | None], shapes: list[Dims | None]) -> None:
    """Shape-like inputs (target_shape, axes, ...) whose type or rank is known must be 1-D integer tensors."""
    for formal, name, elem, dims in zip(declared.spec.inputs, declared.inputs, types, shapes, strict=True):
        if not name or formal.type_param != "T_SHAPE":
            continue
        if elem is not None and elem not in INTEGER_TYPES:
            raise BroadcastError(declared.op, "", f"{formal.name} must be an integer tensor, got "
                                                  f"{TensorProto.DataType.Name(elem)}", declared.label)
        if dims is not None and len(dims) != 1:
            raise BroadcastError(declared.op, "", f"{formal.name} must be 1-D, got rank {len(dims)}", declared.label)


def _static_output(declared: Declared, shapes: list[Dims | None], values: list[np.ndarray | None],
                   inferred: Dims | None) -> tuple[int, ...] | None:
    """The validated output shape where statically known.

    A fully static inferred shape of a broadcast whose data shape is static was computed and validated by our
    schema. Any other is not proof: with the data's dims unknown the schema gives only the target's rank (a rank-0
    target is then a "static" shape no rule checked); under none/pdpd it gives A's shape while B's may be unknown,
    a gradient's is ``data_shape`` while ``delta``'s may be unknown, so only the spec's static rule on every input
    validates it.
    """
    data = shapes[0] if shapes else None
    if inferred is not None and None not in inferred and declared.spec.family == "broadcast" \
            and data is not None and None not in data:
        return tuple(int(d) for d in inferred)
    present = present_count(declared.inputs)
    static = [None if s is None or None in s else tuple(int(d) for d in s) for s in shapes[:present]]
    try:
        return declared.spec.static_shape(static, list(values[:present]), declared.attrs)
    except BroadcastError as err:
        raise err.with_node(declared.label) from None
