"""Graph inputs declared scalar, checked at run time: ONNX Runtime does not check a declared scalar's rank."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, helper

from onnx_bcast.lowering.check_forms import check_name
from onnx_bcast.lowering.declaring import Declared
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.model.walk import NameGenerator, subgraphs

logger = logging.getLogger("onnx_bcast.lowering.scalar_inputs")

EINSUM_OPSET = 12
# Einsum("->") fails on any rank but 0 (ONNX Runtime, onnx.reference, OpenVINO); ONNX Runtime's CPU kernel takes
# these types, the others pass through an exact cast to one of them and back
_EINSUM_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.INT64}
_EXACT_IN = {TensorProto.BOOL: TensorProto.INT64, TensorProto.INT8: TensorProto.INT64,
             TensorProto.UINT8: TensorProto.INT64, TensorProto.INT16: TensorProto.INT64,
             TensorProto.UINT16: TensorProto.INT64, TensorProto.UINT32: TensorProto.INT64,
             TensorProto.UINT64: TensorProto.INT64, TensorProto.BFLOAT16: TensorProto.FLOAT}
RULE = "input '{name}' is declared a scalar and must be fed one (ONNX Runtime does not check its rank)"


@dataclass
class ScalarCheck:
    """A declared scalar's check: the label of our first node it reaches, its element type, and the outputs of our
    nodes it reaches that hold no element whatever it is fed (they get a tie: ``empty_tie``)."""

    label: str
    elem: int
    empty: list[str] = field(default_factory=list)


def declared_scalars(graph: GraphProto) -> list[tuple[str, int]]:
    """(name, element type) of the graph inputs declared as tensors of rank 0 (initializers excluded)."""
    found = []
    for value in graph.input:
        tensor = value.type.tensor_type
        if value.type.HasField("tensor_type") and tensor.HasField("shape") and not tensor.shape.dim:
            found.append((value.name, tensor.elem_type))
    if found and graph.initializer:
        initialized = {t.name for t in graph.initializer}
        found = [f for f in found if f[0] not in initialized]
    return found


def scalars_reaching_ours(graph: GraphProto, declared: list[list[tuple[int, Declared]]],
                          shape_of: Callable[[str], tuple | None] = lambda name: None
                          ) -> dict[str, ScalarCheck]:
    """For each declared scalar of the main graph whose value reaches one of our nodes: the label of the first, the
    scalar's element type, and the outputs of the main graph's nodes of ours it reaches whose shape (``shape_of``)
    is known to hold no element.

    ``declared``: our nodes per node list, the main graph's first. A node that holds a subgraph, or calls a
    function, counts as ours when our nodes are nested in the model. Reached: read by a node (or by its
    subgraphs), or computed from a reached value."""
    scalars = declared_scalars(graph) if any(declared) else []
    if not scalars:
        return {}
    labels = {index: d.label for index, d in declared[0]}
    nested_label = next((d.label for found in declared[1:] for _, d in found), None)
    reached = {name: name for name, _ in scalars}  # value -> the declared scalar it comes from
    types = dict(scalars)
    first: dict[str, ScalarCheck] = {}
    for index, node in enumerate(graph.node):
        sources = {reached[name] for name in _reads(node) if name in reached}
        if not sources:
            continue
        label = labels.get(index)
        if label is None and nested_label is not None and _holds_nested(node):
            label = nested_label
        if label is not None:
            empty = [out for out in node.output if index in labels and _no_element(shape_of(out))]
            for source in sorted(sources, key=list(types).index):  # inputs' order: the same bytes every run
                first.setdefault(source, ScalarCheck(label, types[source])).empty.extend(empty)
        for out in node.output:
            if out:
                reached[out] = min(sources)
    return first


def check_scalar_inputs(model: ModelProto, wanted: dict[str, ScalarCheck], opset: int, names: NameGenerator
                        ) -> set[str]:
    """Each declared scalar in ``wanted`` (``scalars_reaching_ours``) read by every node through a check that fails
    unless it is fed a scalar; the names the new nodes read."""
    graph = model.graph
    if opset < EINSUM_OPSET:
        logger.warning("inputs %s are declared scalars, which ONNX Runtime does not check; no run-time check at "
                       "default-domain opset %d (it needs %d)", sorted(wanted), opset, EINSUM_OPSET)
        return set()
    checks: list[NodeProto] = []
    renamed: dict[str, str] = {}
    for name, check in wanted.items():
        label, elem = check.label, check.elem
        checked = renamed[name] = names(f"{name}_rank0")
        node_name = check_name(label, RULE.format(name=name))
        wide = _EXACT_IN.get(elem)
        if elem in _EINSUM_TYPES:
            checks.append(helper.make_node("Einsum", [name], [checked], name=node_name, equation="->"))
        elif wide is not None:
            cast, summed = names(f"{name}_wide"), names(f"{name}_wide_rank0")
            checks += [helper.make_node("Cast", [name], [cast], name=names(f"{label}/{name}_wide"), to=wide),
                       helper.make_node("Einsum", [cast], [summed], name=node_name, equation="->"),
                       helper.make_node("Cast", [summed], [checked], name=names(f"{label}/{name}_back"),
                                        to=elem)]
        else:
            del renamed[name]
            logger.warning("input %r is declared a scalar of a type with no run-time rank check", name)
    _rename_reads(graph, renamed)
    ties = {out: (renamed[name], wanted[name]) for name in renamed for out in wanted[name].empty}
    if checks or ties:  # the checks at the front: before every node that reads them
        kept = list(graph.node)
        del graph.node[:]
        graph.node.extend(checks)
        for node in kept:
            tied = [(i, out) for i, out in enumerate(node.output) if out in ties]
            for i, out in tied:
                node.output[i] = names(f"{out}_untied")
            graph.node.append(node)
            for i, out in tied:
                checked, check = ties[out]
                graph.node.extend(_empty_tie(checked, check, node.output[i], out, names, opset))
    return {n for node in checks for n in (*node.input, *node.output)}


def _empty_tie(checked: str, check: ScalarCheck, value: str, output: str, names: NameGenerator, opset: int
               ) -> list[NodeProto]:
    """``output`` = ``value`` (which holds no element whatever the scalar is fed) on a path through the checked
    scalar: else a tool that computes zero-element tensors (onnxsim) computes ``value`` and drops the check. The
    guards' tie (``Emitter.tied``, docs/guards.md), its token from the scalar's value ``v`` minus itself (``Cast``
    to int64 first: exact for integers, and ``v - v`` is 0 for any int64)."""
    emit = Emitter(names, opset, check.label, "Einsum", "", allow_initializers=False)
    whole = checked if check.elem == TensorProto.INT64 else emit.cast(checked, TensorProto.INT64)
    token = emit.lead_token(emit.standard("Sub", [whole, whole]))
    emit.tied(value, emit.shape(value), token)
    emit.nodes[-1].output[0] = output  # the tie's Squeeze
    emit.prune([output])
    return emit.nodes


def _rename_reads(graph: GraphProto, renamed: dict[str, str]) -> None:
    """Every read of a renamed value in ``graph`` and its subgraphs (where no subgraph defines it again)."""
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in renamed:
                node.input[i] = renamed[name]
        for attr in node.attribute:
            for sub in [attr.g] if attr.type == AttributeProto.GRAPH else attr.graphs:
                defined = {v.name for v in sub.input} | {t.name for t in sub.initializer}
                inner = {k: v for k, v in renamed.items() if k not in defined}
                if inner:
                    _rename_reads(sub, inner)


def _reads(node: NodeProto) -> set[str]:
    """The names whose shapes a node's outputs may follow: its inputs (an ``If``'s condition only chooses), and the
    outer values its subgraphs read."""
    names = set(node.input[1:] if node.op_type == "If" and node.domain in ("", "ai.onnx") else node.input)
    if node.attribute:
        for attr in node.attribute:
            for sub in [attr.g] if attr.type == AttributeProto.GRAPH else attr.graphs:
                for inner in (sub, *subgraphs(sub)):
                    for n in inner.node:
                        names.update(n.input)
    return names


def _no_element(shape: tuple | None) -> bool:
    return shape is not None and 0 in shape


def _holds_nested(node: NodeProto) -> bool:
    return node.domain not in ("", "ai.onnx") or any(
        a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute)

