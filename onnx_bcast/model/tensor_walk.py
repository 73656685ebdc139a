"""Finding a model's tensors, and those whose data is in external files, without reading any data."""

from __future__ import annotations

from collections.abc import Iterator

from onnx import ModelProto, TensorProto

from onnx_bcast.model.walk import all_node_lists


def all_tensors(model: ModelProto) -> Iterator[TensorProto]:
    """Every tensor the model holds: initializers (sparse ones' values and indices) and attribute tensors, in
    every graph and function."""
    for container, _ in all_node_lists(model):
        yield from getattr(container, "initializer", [])
        for sparse in getattr(container, "sparse_initializer", []):
            yield sparse.values
            yield sparse.indices
        for node in container.node:
            for attr in node.attribute:
                if attr.HasField("t"):
                    yield attr.t
                yield from attr.tensors


#: a model up to this size is serialized to count its external tensors before they are looked for (below)
_COUNTED_BYTES = 16 * 1024 * 1024
#: ... where its main graph's inline initializers hold at most this many bytes (weights are never copied for it)
_INLINE_BYTES = 64 * 1024
_EXTERNAL_MARK = bytes((14 << 3, TensorProto.EXTERNAL))  # TensorProto.data_location = EXTERNAL, as written


def serialized(model: ModelProto) -> bytes:
    """The model's bytes (one place, so that a test can see when they are made)."""
    return model.SerializeToString()


def external_tensors(model: ModelProto) -> list[TensorProto]:
    """The tensors whose data is in external files (those of ``all_tensors`` that ``uses_external_data``).

    A model's graph is walked on every load and save; walking every node's attributes costs more than
    serializing a small model. Every external tensor's bytes hold ``_EXTERNAL_MARK``, so where the marks in a
    small model's bytes are no more than its main graph's external initializers, they are all there are. A model
    whose initializers hold their weights inline is walked instead: serializing it would copy them.
    """
    external = TensorProto.EXTERNAL
    if model.ByteSize() <= _COUNTED_BYTES:
        found, inline = [], 0
        for tensor in model.graph.initializer:
            if tensor.data_location == external:
                found.append(tensor)
            else:
                inline += tensor.ByteSize()
        if inline <= _INLINE_BYTES and serialized(model).count(_EXTERNAL_MARK) == len(found):
            return found
    return [tensor for tensor in all_tensors(model) if tensor.data_location == external]


def location_of(tensor: TensorProto) -> str:
    """The file name an external tensor refers to (relative to its model's folder)."""
    return next((entry.value for entry in tensor.external_data if entry.key == "location"), "")
