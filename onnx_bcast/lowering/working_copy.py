"""The lowering pass's working copy of a model: our opset checked, functions inlined where needed, an opset set,
and the model's shape claims (declared output shapes, value_info) set aside so that they prove nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import onnx
import onnx.inliner
from onnx import GraphProto, ModelProto, TypeProto, ValueInfoProto, helper

from onnx_bcast.errors import BroadcastError
from onnx_bcast.model.walk import opset_version
from onnx_bcast.onnx_defs import schemas

DOMAIN = schemas.DOMAIN


def _check_our_opsets(model: ModelProto) -> None:
    """The model and its functions import a version of our domain that we know, or none."""
    wheres = [("the model", list(model.opset_import))]
    wheres += [(f"function {f.name!r}", list(f.opset_import)) for f in model.functions]
    for where, opsets in wheres:
        version = opset_version(opsets, DOMAIN)
        if version is not None and version != schemas.VERSION:
            raise BroadcastError(DOMAIN, "", f"{where} imports opset version {version} of domain {DOMAIN!r}; "
                                             f"this onnx-bcast knows version {schemas.VERSION} only")


def working_copy(model: ModelProto, opset: int | None, inline: bool, default_opset: Callable[[int | None], int]
                 ) -> ModelProto:
    """A copy of ``model`` for the pass: our opset checked, the local functions that hold our nodes inlined where
    ``inline`` (their values are typed per call site), a default-domain opset imported (``default_opset``)."""
    _check_our_opsets(model)
    copy = ModelProto()
    copy.CopyFrom(model)
    if inline and any(n.domain == DOMAIN for f in copy.functions for n in f.node):
        copy = _inline_functions_with_our_nodes(copy)
    current = opset_version(list(copy.opset_import), "")
    if current is None:
        copy.opset_import.append(helper.make_opsetid("", opset if opset is not None else default_opset(None)))
    elif opset is not None and opset != current:
        raise ValueError(f"the model already uses default-domain opset {current}; converting its standard nodes to "
                         f"opset {opset} is not done here (onnx's version converter drops model-local functions)")
    return copy


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


def _inline_functions_with_our_nodes(model: ModelProto) -> ModelProto:
    """The model with every local function that holds a node of ours inlined at its call sites (others kept)."""
    ours = [(f.domain, f.name) for f in model.functions if any(n.domain == DOMAIN for n in f.node)]
    try:
        return onnx.inliner.inline_selected_functions(model, ours, exclude=False)
    except Exception as err:  # onnx's own message, in our one-line form
        raise BroadcastError(DOMAIN, "", f"cannot inline the model-local functions {ours} that hold our nodes: "
                                         f"{str(err).strip().splitlines()[0]}") from None
