"""What a model says statically: shapes, element types and constant values by name, from shape inference."""

from __future__ import annotations

import logging

import numpy as np
import onnx
from onnx import GraphProto, ModelProto, NodeProto, numpy_helper

from onnx_bcast.errors import BroadcastError
from onnx_bcast.model_walk import node_lists

Dims = tuple[int | None, ...]
logger = logging.getLogger("onnx_bcast.static_facts")


class StaticFacts:
    """Static facts gathered from shape inference: shapes, element types and constant values by name."""

    def __init__(self, model: ModelProto, raise_broadcast_errors: bool = False) -> None:
        """With ``raise_broadcast_errors``, a statically invalid node of ours found by inference is raised."""
        self.shapes: dict[str, Dims | None] = {}
        self.types: dict[str, int] = {}
        self.values: dict[str, np.ndarray] = {}
        try:
            inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
        except BroadcastError:
            if raise_broadcast_errors:
                raise
            inferred = model
        except Exception as err:  # only a source of facts; callers fall back to run-time forms
            logger.debug("shape inference failed: %s", err)
            inferred = model
        for entry in node_lists(inferred):
            if isinstance(entry.container, GraphProto):
                self._graph(entry.container)
            for node in entry.container.node:
                self._constant(node)

    @classmethod
    def empty(cls) -> StaticFacts:
        """Facts that know nothing (for a model with nothing to ask about)."""
        facts = cls.__new__(cls)
        facts.shapes, facts.types, facts.values = {}, {}, {}
        return facts

    def _graph(self, graph: GraphProto) -> None:
        inputs = {v.name for v in graph.input}
        for value in list(graph.input) + list(graph.output) + list(graph.value_info):
            tensor = value.type.tensor_type
            if value.type.HasField("tensor_type"):
                if tensor.elem_type:
                    self.types[value.name] = tensor.elem_type
                if tensor.HasField("shape"):
                    self.shapes[value.name] = tuple(d.dim_value if d.HasField("dim_value") else None
                                                    for d in tensor.shape.dim)
        for init in graph.initializer:
            self.types[init.name] = init.data_type
            self.shapes[init.name] = tuple(init.dims)
            if init.name not in inputs and len(init.dims) <= 1 and not init.data_location:
                self.values[init.name] = numpy_helper.to_array(init)

    def _constant(self, node: NodeProto) -> None:
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
            return
        for attr in node.attribute:
            if attr.name == "value" and not attr.ref_attr_name:
                value = numpy_helper.to_array(attr.t)
            elif attr.name == "value_ints":
                value = np.asarray(list(attr.ints), dtype=np.int64)
            else:
                continue
            self.values[node.output[0]] = value
            self.types[node.output[0]] = attr.t.data_type if attr.name == "value" else onnx.TensorProto.INT64
            self.shapes[node.output[0]] = tuple(value.shape)
