"""``convert``: a standard-ONNX equivalent of a model, with every onnx_bcast node rewritten by its rule."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import GraphProto, ModelProto, NodeProto, helper

from onnx_bcast import schemas
from onnx_bcast.converters import rule_for
from onnx_bcast.converters.emit import Emitter
from onnx_bcast.converters.facts import Dims, NodeFacts
from onnx_bcast.errors import BroadcastError
from onnx_bcast.model_walk import NameGenerator, all_node_lists, opset_version, subgraphs
from onnx_bcast.ops import SPEC_BY_NAME
from onnx_bcast.prepare import (
    check_inputs,
    check_our_opsets,
    check_shape_inputs,
    node_label,
    read_attributes,
    uses_our_ops,
    validate_nodes,
)
from onnx_bcast.runtime_limits import max_ir_version, max_opset
from onnx_bcast.session import load_model
from onnx_bcast.static_facts import StaticFacts

logger = logging.getLogger("onnx_bcast.convert")
DOMAIN = schemas.DOMAIN


@dataclass
class ConversionReport:
    """What a conversion rewrote: counts per (op, mode)."""

    rewritten: Counter = field(default_factory=Counter)

    def lines(self) -> list[str]:
        """One line per op type and rule, e.g. ``Broadcast(mode=explicit): 2 rewritten``."""
        def label(op: str) -> str:
            spec = SPEC_BY_NAME.get(op)
            return spec.mode_attr if spec is not None else "mode"

        return [f"{op}{f'({label(op)}={mode})' if mode else ''}: {count} rewritten"
                for (op, mode), count in sorted(self.rewritten.items())]


def _node_facts(knowledge: StaticFacts, node: NodeProto, label: str, attrs: dict[str, Any],
                in_function: bool) -> NodeFacts:
    """What is statically known about one node's inputs."""
    names = list(node.input)
    known = (lambda n: n) if not in_function else (lambda n: None)  # function values are typed per call
    return NodeFacts(
        op=node.op_type, name=label, attrs=attrs, inputs=names, output=node.output[0],
        shapes=[knowledge.shapes.get(known(n)) if n else None for n in names],
        values=[knowledge.values.get(n) if n else None for n in names],
        types=[knowledge.types.get(known(n)) if n else None for n in names],
    )


def _static_output(facts: NodeFacts, spec_name: str, inferred: Dims | None) -> tuple[int, ...] | None:
    """Validate what is statically known (raises the kernel's BroadcastError) and return the output shape.

    A fully static shape from shape inference was computed and validated by our own schema already.
    """
    if inferred is not None and all(d is not None for d in inferred):
        return tuple(int(d) for d in inferred)
    spec = SPEC_BY_NAME[spec_name]
    present = len(facts.inputs)
    while present and not facts.inputs[present - 1]:  # absent trailing optional inputs are not inputs
        present -= 1
    shapes = [facts.static_shape(i) for i in range(present)]
    values = list(facts.values[:present])
    try:
        return spec.static_shape(shapes, values, facts.attrs)
    except BroadcastError as err:
        raise err.with_node(facts.name) from None


def _check_attr_refs(node: NodeProto, label: str) -> None:
    for attr in node.attribute:
        if attr.ref_attr_name:
            raise BroadcastError(node.op_type, "", f"attribute {attr.name!r} refers to function attribute "
                                                   f"{attr.ref_attr_name!r}; only literal attributes can be "
                                                   "converted", label)


# standard ops that broadcast all their inputs multidirectionally (numpy style)
_BROADCASTING = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Equal", "Less", "LessOrEqual", "Greater",
                 "GreaterOrEqual", "And", "Or", "Xor", "Sum", "Mean", "BitShift", "BitwiseAnd", "BitwiseOr",
                 "BitwiseXor"}


def _subgraph_reads(container: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(container, GraphProto):
        for graph in subgraphs(container):
            for node in graph.node:
                names.update(node.input)
    else:
        for node in container.node:
            for attr in node.attribute:
                for graph in [attr.g] if attr.HasField("g") else list(attr.graphs):
                    names.update(n for g in [graph, *subgraphs(graph)] for node2 in g.node for n in node2.input)
    return names


def _elide_expands(container: Any, expands: list[tuple[NodeProto, tuple[int, ...]]], knowledge: StaticFacts) -> None:
    """Drop an emitted ``Expand`` whose every consumer broadcasts anyway to a shape it does not change.

    ``Add(features[1,16,50,50], Expand(Unsqueeze(bias), ...))`` becomes ``Add(features, Unsqueeze(bias))``: the
    same values, without materialising (or letting ORT constant-fold) the full-size bias.
    """
    if not expands:
        return
    outputs = {v.name for v in container.output} if isinstance(container, GraphProto) else set(container.output)
    protected = outputs | _subgraph_reads(container)
    consumers: dict[str, list[NodeProto]] = {}
    for node in container.node:
        for name in set(node.input):
            consumers.setdefault(name, []).append(node)
    dropped = []
    for expand, out_shape in expands:
        out = expand.output[0]
        users = consumers.get(out, [])
        if out in protected or not users or not all(_keeps_shape(u, out, out_shape, knowledge) for u in users):
            continue
        for user in users:
            for i, name in enumerate(user.input):
                if name == out:
                    user.input[i] = expand.input[0]
        for producer in container.node:  # the original node name moves to what now stands in its place
            if expand.name and expand.input[0] in producer.output and producer.name.startswith(f"{expand.name}/"):
                producer.name = expand.name
        dropped.append(expand)
    if dropped:
        keep = [n for n in container.node if all(n is not d for d in dropped)]
        del container.node[:]
        container.node.extend(keep)
        if isinstance(container, GraphProto):
            gone = {d.output[0] for d in dropped}
            infos = [v for v in container.value_info if v.name not in gone]
            del container.value_info[:]
            container.value_info.extend(infos)


def _keeps_shape(user: NodeProto, out: str, out_shape: tuple[int, ...], knowledge: StaticFacts) -> bool:
    if user.domain not in ("", "ai.onnx") or user.op_type not in _BROADCASTING:
        return False
    others = [name for name in user.input if name != out]
    if not others:
        return False
    for name in others:
        shape = knowledge.shapes.get(name)
        if shape is None or any(d is None for d in shape):
            return False
        try:
            if np.broadcast_shapes(tuple(shape), out_shape) != tuple(shape):
                return False
        except ValueError:
            return False
    return True


def _rewrite_container(container: Any, opset: int, knowledge: StaticFacts, names: NameGenerator,
                       report: ConversionReport, freed: set[str]) -> None:
    in_function = not isinstance(container, GraphProto)
    new_nodes: list[NodeProto] = []
    expands: list[tuple[NodeProto, tuple[int, ...]]] = []
    for index, node in enumerate(container.node):
        if node.domain != DOMAIN:
            new_nodes.append(node)
            continue
        label = node_label(node, index)
        spec = SPEC_BY_NAME.get(node.op_type)
        if spec is None:
            raise BroadcastError(node.op_type, "", f"is not an op of domain {DOMAIN!r}", label)
        _check_attr_refs(node, label)
        attrs = read_attributes(node, spec, label)
        check_inputs(node, spec, label)
        if not in_function:
            check_shape_inputs(node, spec, label, knowledge.types, knowledge.shapes)
        facts = _node_facts(knowledge, node, label, attrs, in_function)
        inferred = None if in_function else knowledge.shapes.get(node.output[0])
        out_shape = _static_output(facts, spec.name, inferred)
        rule = rule_for(node.op_type, facts.mode)
        emitter = Emitter(names, opset, label, node.op_type, facts.mode, allow_initializers=not in_function,
                          final_name=node.name)
        rule.rewrite(emitter, facts, out_shape)
        last = emitter.nodes[-1] if emitter.nodes else None
        if last is not None and last.op_type == "Expand" and out_shape is not None and not in_function:
            expands.append((last, out_shape))
        new_nodes.extend(emitter.nodes)
        if emitter.initializers:
            container.initializer.extend(emitter.initializers)
        report.rewritten[(node.op_type, facts.mode)] += 1
        freed.update(n for n in node.input if n)
    del container.node[:]
    container.node.extend(new_nodes)
    # the nodes were copied into the container: find the Expands again by their (unique) output
    by_output = {n.output[0]: n for n in container.node if n.output}
    _elide_expands(container, [(by_output[e.output[0]], shape) for e, shape in expands], knowledge)


def _drop_unused_initializers(model: ModelProto, candidates: set[str]) -> None:
    """Initializers that only our rewritten nodes read (now folded into the rewrite) go with them."""
    if not candidates:
        return
    used = {name for container, _ in all_node_lists(model) for node in container.node for name in node.input}
    for graph in (c for c, _ in all_node_lists(model) if isinstance(c, GraphProto)):
        visible = {v.name for v in graph.input} | {v.name for v in graph.output}
        keep = [t for t in graph.initializer if t.name not in candidates or t.name in used or t.name in visible]
        if len(keep) != len(graph.initializer):
            del graph.initializer[:]
            graph.initializer.extend(keep)


def _drop_our_import(opsets: Any, nodes_use_it: bool) -> None:
    if nodes_use_it:
        return
    keep = [o for o in opsets if o.domain != DOMAIN]
    del opsets[:]
    opsets.extend(keep)


def _target_opset(model: ModelProto, opset: int | None) -> int:
    current = opset_version(list(model.opset_import), "")
    if current is None:
        return opset if opset is not None else max_opset()
    if opset is not None and opset != current:
        raise ValueError(f"the model already uses default-domain opset {current}; converting its standard nodes to "
                         f"opset {opset} is not done here (onnx's version converter drops model-local functions)")
    return current


def convert_with_report(model: Any, *, opset: int | None = None) -> tuple[ModelProto, ConversionReport]:
    """``convert`` that also says what it rewrote."""
    schemas.register()
    source = load_model(model)
    check_our_opsets(source)
    validate_nodes(source)
    converted = ModelProto()
    converted.CopyFrom(source)
    target = _target_opset(converted, opset)
    if opset_version(list(converted.opset_import), "") is None:
        converted.opset_import.append(helper.make_opsetid("", target))
    knowledge = StaticFacts(converted)
    names = NameGenerator(converted)
    report = ConversionReport()
    freed: set[str] = set()
    model_opset = opset_version(list(converted.opset_import), "")
    # children first: rewriting a graph copies its nodes, and with them the subgraphs they hold
    for container, opsets in reversed(list(all_node_lists(converted))):
        container_opset = opset_version(opsets, "") or model_opset
        _rewrite_container(container, container_opset, knowledge, names, report, freed)
    _drop_unused_initializers(converted, freed)
    for function in converted.functions:
        if opset_version(list(function.opset_import), "") is None and report.rewritten:
            function.opset_import.append(helper.make_opsetid("", model_opset))
    still_used = uses_our_ops(converted)
    _drop_our_import(converted.opset_import, still_used)
    for function in converted.functions:
        _drop_our_import(function.opset_import, any(n.domain == DOMAIN for n in function.node))
    if converted.ir_version > max_ir_version() or converted.ir_version == 0:
        converted.ir_version = max_ir_version()
    return converted, report


def convert(model: Any, *, opset: int | None = None, verify: bool = False,
            feeds: dict[str, np.ndarray] | None = None) -> ModelProto:
    """A standard-ONNX equivalent with no onnx_bcast node left (subgraphs and functions included).

    ``verify=True`` runs both models (ours through ``InferenceSession``, the result through plain ORT) on
    ``feeds`` or generated inputs and raises ``VerificationError`` unless every output is bit-identical.
    """
    converted, _ = convert_with_report(model, opset=opset)
    if verify:
        from onnx_bcast.verify import verify_equal

        verify_equal(load_model(model), converted, feeds)
    return converted
