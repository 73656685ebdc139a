"""A model's shape claims (declared output shapes, value_info) set aside so that they prove nothing, then restored."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from onnx import GraphProto, ModelProto, TypeProto, ValueInfoProto

logger = logging.getLogger("onnx_bcast.model.claims")


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


def restore_outputs(model: ModelProto, declared: list[ValueInfoProto],
                    inferred: Callable[[str], Sequence[int | None] | None] | None = None) -> None:
    """The main graph's outputs as the model declared them (names are kept by every rewrite); with ``inferred``,
    the dims that contradict it retracted first (``retract_contradicted``), each logged as a warning."""
    for retracted in retract_contradicted(declared, inferred) if inferred is not None else ():
        logger.warning("declared output shape contradicts inference: %s", retracted)
    del model.graph.output[:]
    model.graph.output.extend(declared)


def retract_contradicted(declared: list[ValueInfoProto], inferred: Callable[[str], Sequence[int | None] | None]
                         ) -> list[str]:
    """Each declared output dim that contradicts what inference found (``inferred``: dims by name, None where it
    knows none) made unknown: a fixed size that differs; a shape of another rank becomes the inferred rank with
    every dim unknown (onnxsim refuses an output with no shape at all). A ``dim_param`` claims no size and stays.
    Nothing is claimed in their place: a claim that tools trust is only ever taken back. Returns what was
    retracted, one entry per output (for the log)."""
    retracted = []
    for output in declared:
        if not output.type.HasField("tensor_type") or not output.type.tensor_type.HasField("shape"):
            continue
        dims, shape = inferred(output.name), output.type.tensor_type.shape
        if dims is None:
            continue
        before = "(" + ", ".join(str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?"
                                 for d in shape.dim) + ")"
        if len(dims) != len(shape.dim):
            del shape.dim[:]
            for _ in dims:
                shape.dim.add()
            retracted.append(f"{output.name}: declared {before}, inferred rank {len(dims)}: declared "
                             f"({', '.join('?' * len(dims))}) instead")
            continue
        changed = False
        for dim, known in zip(shape.dim, dims, strict=True):
            if dim.HasField("dim_value") and known is not None and dim.dim_value != known:
                dim.Clear()
                changed = True
        if changed:
            retracted.append(f"{output.name}: declared {before}, inferred {tuple(dims)}: the contradicting dims "
                             "made unknown")
    return retracted
