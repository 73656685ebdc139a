"""What a model says statically: shapes, element types and constant values by name, from shape inference."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import numpy as np
import onnx
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, TypeProto, ValueInfoProto

from onnx_bcast.errors import BroadcastError
from onnx_bcast.model.walk import node_lists
from onnx_bcast.onnx_defs.constants import small_values

Dims = tuple[int | None, ...]
logger = logging.getLogger("onnx_bcast.lowering.static_facts")
V = TypeVar("V")


_UNREAD: Any = object()


class _Lazy(Generic[V]):
    """A read-only name -> fact lookup that reads each fact from its proto on first use."""

    def __init__(self, read: Callable[[str], V | None]) -> None:
        self._read = read
        self._memo: dict[str, V | None] = {}

    def get(self, name: str, default: V | None = None) -> V | None:
        value = self._memo.get(name, _UNREAD)
        if value is _UNREAD:
            value = self._memo[name] = self._read(name)
        return default if value is None else value


class StaticFacts:
    """Static facts gathered from shape inference: shapes, element types and constant values by name."""

    def __init__(self, model: ModelProto | None = None, raise_broadcast_errors: bool = False,
                 subgraphs: bool = True, serialized: bytes | None = None,
                 known_types: dict[str, TypeProto] | None = None,
                 initializers: dict[str, TensorProto] | None = None) -> None:
        """With ``raise_broadcast_errors``, a statically invalid node of ours found by inference is raised;
        ``subgraphs=False``: the caller knows that the model has none (no walk to find them); ``serialized``: the
        bytes to infer instead of ``model``, a model without subgraphs whose nodes are some of ``model``'s, and
        whose initializers are those they read; ``known_types``: the types of the values defined by the nodes it
        leaves out (``hidden_inference``), with ``initializers``: ``model``'s by name, where the caller has them."""
        self._infos: dict[str, ValueInfoProto] = {}
        self._known_types: dict[str, TypeProto] = {}  # the types of values defined by nodes onnx did not see
        self._initializers: dict[str, TensorProto] = {}
        self._graph_inputs: set[str] = set()
        self._constants: dict[str, NodeProto] = {}
        self._dims: dict[bytes, Dims | None] = {}
        self.bound_by_signature: dict[tuple, tuple] = {}  # ``binding.bind``'s facts of a signed node, shared
        self.shapes: _Lazy[Dims] = _Lazy(self._shape)
        self.types: _Lazy[int] = _Lazy(self._type)
        self.values: _Lazy[np.ndarray] = _Lazy(self._value)
        self.inferred: ModelProto | None = None  # what inference wrote (its subgraphs' output types, per graph)
        if model is None:
            return
        try:
            inferred = onnx.shape_inference.infer_shapes(serialized or model, check_type=False, strict_mode=False,
                                                         data_prop=True)
        except BroadcastError:
            if raise_broadcast_errors:
                raise
            inferred, known_types = model, None
        except Exception as err:  # only a source of facts; callers fall back to run-time forms
            logger.debug("shape inference failed: %s", err)
            inferred, known_types = model, None
        self.inferred = inferred
        if known_types:
            self._known_types = known_types
            self._initializers.update(initializers if initializers is not None else
                                      {t.name: t for t in model.graph.initializer})
        containers = [e.container for e in node_lists(inferred)] if subgraphs else [inferred.graph,
                                                                                   *inferred.functions]
        for graph in containers:
            if isinstance(graph, GraphProto):
                for group in (graph.input, graph.output, graph.value_info):
                    self._infos.update({v.name: v for v in group})
                self._initializers.update({t.name: t for t in graph.initializer})
                self._graph_inputs.update(v.name for v in graph.input)
            self._constants.update((n.output[0], n) for n in graph.node
                                   if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.output)

    def of_inputs(self, names: list[str], reads: tuple[bool, ...]) -> tuple[list, list, list]:
        """Per name (absent: ""): its shape, type and (where ``reads``) value, as ``shapes.get``, ``types.get`` and
        ``values.get`` give them; one call for a node's inputs."""
        shapes, types, values = [], [], []
        lookups = ((self.shapes._memo, self._shape, shapes), (self.types._memo, self._type, types))
        value_memo = self.values._memo
        for name, read in zip(names, reads, strict=True):
            if not name:
                shapes.append(None)
                types.append(None)
                values.append(None)
                continue
            for memo, read_fact, out in lookups:
                fact = memo.get(name, _UNREAD)
                if fact is _UNREAD:
                    fact = memo[name] = read_fact(name)
                out.append(fact)
            if read:
                value = value_memo.get(name, _UNREAD)
                if value is _UNREAD:
                    value = value_memo[name] = self._value(name)
                values.append(value)
            else:
                values.append(None)
        return shapes, types, values

    def declared_type(self, name: str) -> TypeProto | None:
        """The type inference gave ``name`` (a graph input's or output's, or a value info's), as onnx wrote it."""
        info = self._infos.get(name)
        return self._known_types.get(name) if info is None else info.type

    @classmethod
    def empty(cls) -> StaticFacts:
        """Facts that know nothing (for a model with nothing to ask about)."""
        return cls()

    def _shape(self, name: str) -> Dims | None:
        init = self._initializers.get(name)
        if init is not None:
            return tuple(init.dims)
        constant = self._constants.get(name)
        if constant is not None:
            value = self._value(name)
            return None if value is None else tuple(value.shape)
        info = self.declared_type(name)
        if info is None:
            return None
        key = info.SerializeToString()  # value infos repeat a few types: read each once
        dims = self._dims.get(key, _UNREAD)
        if dims is _UNREAD:
            tensor_type = info.tensor_type if info.HasField("tensor_type") else None
            dims = self._dims[key] = None if tensor_type is None or not tensor_type.HasField("shape") else tuple(
                d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim)
        return dims

    def _type(self, name: str) -> int | None:
        init = self._initializers.get(name)
        if init is not None:
            return init.data_type
        constant = self._constants.get(name)
        if constant is not None:
            attr = next((a for a in constant.attribute if a.name in ("value", "value_ints")), None)
            if attr is not None:
                return attr.t.data_type if attr.name == "value" else TensorProto.INT64
        info = self.declared_type(name)
        if info is not None and info.HasField("tensor_type") and info.tensor_type.elem_type:
            return info.tensor_type.elem_type
        return None

    def _value(self, name: str) -> np.ndarray | None:
        init = self._initializers.get(name)
        if init is not None:
            if name in self._graph_inputs or len(init.dims) > 1 or init.data_location:
                return None
            return small_values(init)
        constant = self._constants.get(name)
        if constant is None:
            return None
        for attr in constant.attribute:
            if attr.name == "value" and not attr.ref_attr_name:
                return small_values(attr.t)
            if attr.name == "value_ints":
                return np.asarray(list(attr.ints), dtype=np.int64)
        return None
