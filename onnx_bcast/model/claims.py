"""A model's shape claims (declared output shapes, value_info) set aside so that they prove nothing, then restored."""

from __future__ import annotations

from collections.abc import Iterable

from onnx import GraphProto, ModelProto, TypeProto, ValueInfoProto


def set_claims_aside(model: ModelProto, graphs: Iterable[GraphProto]) -> list[ValueInfoProto]:
    """The shape claims of ``graphs`` (the model's main graph and subgraphs, as the caller walked them) removed in
    place; returns the main graph's outputs as declared.

    Shape inference hands back a declared graph-output shape or a value_info entry as if it had inferred it, and
    no runtime checks either: a stale or wrong one would prove a rule that the run then breaks. So every graph's
    value_info is dropped, and its outputs keep their element types only. ``restore_outputs`` puts the main
    graph's declared outputs back on the finished model (they are its interface).
    """
    declared = [ValueInfoProto() for _ in model.graph.output]
    for copy, output in zip(declared, model.graph.output, strict=True):
        copy.CopyFrom(output)
    for graph in graphs:
        del graph.value_info[:]
        for output in graph.output:
            _drop_shapes(output.type)
    return declared


def _drop_shapes(type_proto: TypeProto) -> None:
    """The shapes in a type removed, its element types kept (tensors, and sequences/optionals of them)."""
    kind = type_proto.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        getattr(type_proto, kind).ClearField("shape")
    elif kind == "sequence_type":
        _drop_shapes(type_proto.sequence_type.elem_type)
    elif kind == "optional_type":
        _drop_shapes(type_proto.optional_type.elem_type)
    elif kind == "map_type":
        _drop_shapes(type_proto.map_type.value_type)


def restore_outputs(model: ModelProto, declared: list[ValueInfoProto]) -> None:
    """The main graph's outputs as the model declared them (names are kept by every rewrite)."""
    del model.graph.output[:]
    model.graph.output.extend(declared)
