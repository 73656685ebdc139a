"""What every op family shares: the op-spec record and validation of shape-like inputs."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import AttributeProto

from onnx_bcast.errors import BroadcastError, LazyText, fmt_shape
from onnx_bcast.ops.memory_guard import InvalidLimit, output_limit

Shape = tuple[int, ...]

# Every tensor type a broadcast accepts (ONNX type strings, for the schemas).
ALL_TENSOR_TYPES: tuple[str, ...] = tuple(
    f"tensor({t})"
    for t in (
        "float", "double", "float16", "bfloat16",
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "bool", "string",
    )
)
INDEX_TYPES: tuple[str, ...] = ("tensor(int32)", "tensor(int64)")
# the AttributeProto type of each Attr kind
ATTR_PROTO_KIND: dict[str, int] = {"string": AttributeProto.STRING, "int": AttributeProto.INT,
                                   "ints": AttributeProto.INTS}


@dataclass(frozen=True)
class Input:
    """One formal input of an op."""

    name: str
    type_param: str
    optional: bool = False
    doc: str = ""
    shape_only: bool = False  # only its shape is read (the ORT form passes Shape(input) instead)


@dataclass(frozen=True)
class Attr:
    """One attribute of an op: kind is 'string', 'int' or 'ints'."""

    name: str
    kind: str
    default: Any
    doc: str = ""


@dataclass(frozen=True)
class OpSpec:
    """Everything the adapters (schemas, ORT bridge, converter) need to know about one op."""

    name: str
    doc: str
    inputs: tuple[Input, ...]
    attrs: tuple[Attr, ...]
    type_constraints: tuple[tuple[str, tuple[str, ...]], ...]
    output_type_param: str
    # kernel(inputs, attrs, max_output_bytes) -> output (a tuple of them for several); inputs may hold None for
    # absent optional inputs
    kernel: Callable[[list[np.ndarray | None], dict[str, Any], int | None], np.ndarray | tuple[np.ndarray, ...]]
    # static_shape(input_shapes, input_values, attrs) -> output shape, or None when unknown
    static_shape: Callable[[list[Shape | None], list[np.ndarray | None], dict[str, Any]], Shape | None]
    # the 'mode' shown in error messages, from the attributes
    mode_of: Callable[[dict[str, Any]], str] = field(default=lambda attrs: "")
    mode_attr: str = "mode"  # the attribute that holds the broadcast rule
    # "broadcast" (a Python kernel moves the data), "elementwise" (a standard op does) or "backprop" (sums)
    family: str = "broadcast"
    outputs: tuple[str, ...] = ("output",)  # a kernel of several outputs returns a tuple of arrays
    # for shape inference: output_shapes(input_shapes, input_values, attrs) -> one shape (None: unknown) per
    # output, raising where the known facts break the rule; it may know a shape that ``static_shape`` (a proof
    # that the node is valid) does not, e.g. a gradient's shape from ``data_shape`` while ``delta``'s is unknown
    output_shapes: Callable[[list[Shape | None], list[np.ndarray | None], dict[str, Any]],
                            tuple[Shape | None, ...]] | None = None

    def all_output_shapes(self, shapes: list[Shape | None], values: list[np.ndarray | None],
                          attrs: dict[str, Any]) -> tuple[Shape | None, ...]:
        """Every output's shape for shape inference, None where unknown."""
        if self.output_shapes is not None:
            return self.output_shapes(shapes, values, attrs)
        return (self.static_shape(shapes, values, attrs),)

    @functools.cached_property
    def value_inputs(self) -> tuple[bool, ...]:
        """Per input: whether its constant values matter statically (the shape-like inputs)."""
        return tuple(i.type_param == "T_SHAPE" for i in self.inputs)

    def defaults(self) -> dict[str, Any]:
        """The attributes a node without any would have (a new dict each call)."""
        return dict(self._defaults)

    @functools.cached_property
    def _defaults(self) -> dict[str, Any]:
        return {a.name: a.default for a in self.attrs}


def int_vector(values: Any, what: str, op: str, mode: str) -> Shape:
    """A 1-D integer tensor (or a sequence of ints) as a tuple of Python ints, else a BroadcastError."""
    if values is None:
        raise BroadcastError(op, mode, f"{what} is required")
    arr = np.asarray(values)
    empty_sequence = arr.size == 0 and not isinstance(values, np.ndarray)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or empty_sequence):
        raise BroadcastError(op, mode, f"{what} must be an integer tensor, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise BroadcastError(op, mode, f"{what} must be 1-D, got shape {fmt_shape(arr.shape)}")
    return tuple(int(v) for v in arr.tolist())


def target_dims(values: Any, op: str, mode: str) -> Shape:
    """Validated target-shape values: 1-D, integer, no negative dimension."""
    target = int_vector(values, "target_shape", op, mode)
    for i, t in enumerate(target):
        if t < 0:
            raise BroadcastError(op, mode, f"target dim {i} is negative ({t}); target {fmt_shape(target)}")
    return target


def shape_of(data: Any) -> Shape:
    """The shape of an array-like as a tuple of ints."""
    return tuple(int(d) for d in np.shape(data))


def as_array(data: Any) -> np.ndarray:
    """Data as a numpy array without copying an array that already is one."""
    return data if isinstance(data, np.ndarray) else np.asarray(data)


MAX_RANK = 64  # numpy 2's limit on dimensions; docs/ops.md: ranks up to 64 work, a rank over 64 is an error


def check_rank(op: str, mode: str, what: str, shape: Shape, shapes: str | LazyText,
                mode_attr: str = "mode") -> None:
    """A BroadcastError when ``shape`` (the ``what``) has more than MAX_RANK dims; ``shapes`` lists all shapes."""
    if len(shape) > MAX_RANK:
        raise BroadcastError(op, mode, f"{what} rank {len(shape)} exceeds the maximum rank {MAX_RANK}; {shapes}",
                             mode_attr=mode_attr)


# the most dims a numpy array of the installed numpy can have: numpy 1 stops at 32. Only the numpy kernels (and what
# hands them arrays) are bound by it; the shape rules and the conversion allow MAX_RANK whatever numpy is installed.
NUMPY_MAX_DIMS = 32 if np.lib.NumpyVersion(np.__version__) < "2.0.0" else MAX_RANK


def check_numpy_rank(op: str, mode: str, what: str, shape: Shape, shapes: str | LazyText,
                     mode_attr: str = "mode") -> None:
    """A BroadcastError when a numpy kernel would need an array of ``shape`` (the ``what``) that the installed numpy
    cannot make (more than NUMPY_MAX_DIMS dims, at most MAX_RANK: numpy 1 only); ``shapes`` lists all shapes."""
    if NUMPY_MAX_DIMS < len(shape) <= MAX_RANK:
        raise BroadcastError(op, mode, f"{what} rank {len(shape)}: numpy 1 holds at most {NUMPY_MAX_DIMS} dims; "
                                       f"numpy 2 needed for rank {len(shape)}; {shapes}", mode_attr=mode_attr)


def check_array_rank(op: str, mode: str, what: str, dims: Shape, mode_attr: str = "mode") -> None:
    """``check_rank`` and ``check_numpy_rank`` of an input a numpy kernel takes as an array (``what (dims)``)."""
    shapes = f"{what} {fmt_shape(dims)}"
    check_rank(op, mode, what, dims, shapes, mode_attr)
    check_numpy_rank(op, mode, what, dims, shapes, mode_attr)


def shape_stand_in(op: str, mode: str, what: str, dims: Shape, dtype: Any = np.bool_, mode_attr: str = "mode"
                   ) -> np.ndarray:
    """A zero-copy array of ``dims`` for a kernel that reads only the shape of ``what``, once its rank passes
    ``check_array_rank``."""
    check_array_rank(op, mode, what, dims, mode_attr)
    return np.broadcast_to(np.zeros((), dtype), dims)


MAX_ELEMENTS = 2**60 - 1  # the widest element (8 bytes) times this still fits int64: numpy and ORT size arithmetic


def nonzero_product(dims: Sequence[int]) -> int:
    """The product of the dims that are not 0 (what an empty array's shape would take in elements)."""
    return math.prod(d for d in dims if d > 0)


def zeros_inferred_dims(dims: Sequence[int]) -> tuple[int, ...]:
    """A shape holding 0s written for a ``Reshape`` before opset 14 (a 0 there copies the input's dim) of empty
    data: the first 0 becomes -1 (inferred as 0) and any other 0 a 1, which a later broadcast makes 0 again."""
    first = list(dims).index(0)
    return tuple(-1 if k == first else 1 if d == 0 else int(d) for k, d in enumerate(dims))


def check_elements(op: str, mode: str, out: Shape, shapes: str | LazyText, mode_attr: str = "mode") -> None:
    """A BroadcastError when an empty output's non-zero dims multiply past ``MAX_ELEMENTS``: no runtime can hold
    that shape, though it has no element (``(2**63 - 1, 0)``: numpy cannot make it, ORT would return it). A
    non-empty output that large is over the memory limit (``memory_guard``), which says so in bytes."""
    if 0 not in out:
        return
    count = nonzero_product(out)
    if count > MAX_ELEMENTS:
        raise BroadcastError(op, mode, f"output {fmt_shape(out)} cannot exist: its non-zero dims multiply to "
                                       f"{count:.2e} elements, over 2**60 - 1 (8-byte elements must fit int64 "
                                       f"sizes); {shapes}", mode_attr=mode_attr)


def read_array(value: Any, op: str, mode: str, what: str, mode_attr: str = "mode") -> np.ndarray:
    """``value`` as a numpy array; a BroadcastError where numpy cannot make one (nested over 64 deep, ragged)."""
    try:
        return as_array(value)
    except ValueError as err:
        raise BroadcastError(op, mode, f"{what} cannot be read as an array: {err}", mode_attr=mode_attr) from None


def limit_or_none(max_output_bytes: int | None) -> tuple[int, str] | None:
    """The output limit in force now, or None when it is invalid (the general path reports that)."""
    try:
        return output_limit(max_output_bytes)
    except InvalidLimit:
        return None


def int_key(values: Any) -> tuple[int, ...] | None:
    """A 1-D integer array's values as a tuple, cheaply; None for anything else (the general path validates it)."""
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iu":
        return tuple(values.tolist())
    return None
