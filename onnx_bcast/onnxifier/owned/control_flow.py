"""OpenVINO If-8 as ONNX If, each body converted by the IR route itself; Loop and TensorIterator refused by name.

onnxifier's reader ignores an If's bodies, and its passes see only a node's explicit inputs: a subgraph's reads of
names in the enclosing graph are invisible to them (its dead-node pass would delete their producers). So:
``prepare`` converts each body before onnxifier runs (saved as its own IR, through ``ir_to_onnx``: our passes, the
lowering, the checks); the If then goes through onnxifier as a placeholder node (domain ``PLACEHOLDER``) that keeps
every input of the If explicit and carries both branches; ``finish`` writes ONNX ``If`` once onnxifier is done, each
branch reading, through Identity nodes, the tensors that feed the placeholder then. A branch has no graph inputs; its
outputs are in the If's output order; every name in it is prefixed with the If's name and the branch's.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, helper, numpy_helper

from onnx_bcast.model.walk import subgraphs
from onnx_bcast.onnxifier.owned.node import IrNode

log = logging.getLogger(__name__)

PLACEHOLDER = "onnx_bcast.if_placeholder"
#: the conversion option holding ``prepare``'s result
BRANCHES = "if_branches"
#: onnxifier's default passes that fail on the placeholder (onnxsim and onnxoptimizer refuse a node of no known op)
UNSAFE_PASSES = ("onnxsim", "onnx_optimizer")
_BODIES = ("then", "else")  # OpenVINO's body index 0, 1


@dataclass(frozen=True)
class Branches:
    """An If's two branches as ONNX subgraphs (reading ``outer(k)`` for If input k) and the opsets they import."""

    then_branch: GraphProto
    else_branch: GraphProto
    opsets: dict[str, int]


class _NotExpressed(ValueError):
    pass


def outer(if_name: str, index: int) -> str:
    """The name a branch reads for the If's input ``index`` until ``finish`` binds it to the tensor feeding it."""
    return f"{if_name}/outer:{index}"


def prepare(ov_model: Any, to_onnx: Callable[[Path], ModelProto]) -> dict[str, Branches | str]:
    """Every If of ``ov_model`` (its top level) by friendly name: its branches, or why they cannot be written.
    ``to_onnx`` converts one body saved as IR (the IR route with this conversion's options)."""
    prepared: dict[str, Branches | str] = {}
    for op in ov_model.get_ordered_ops():
        if op.get_type_name() != "If":
            continue
        try:
            graphs, opsets = [], {}
            for index in range(len(_BODIES)):
                graph, imports = _branch(op, index, to_onnx)
                graphs.append(graph)
                for domain, version in imports.items():
                    opsets[domain] = max(version, opsets.get(domain, version))
            prepared[op.get_friendly_name()] = Branches(graphs[0], graphs[1], opsets)
            log.debug("If %r: branches of %d and %d nodes", op.get_friendly_name(), len(graphs[0].node),
                      len(graphs[1].node))
        except _NotExpressed as err:
            prepared[op.get_friendly_name()] = str(err)
    return prepared


def _branch(op: Any, index: int, to_onnx: Callable[[Path], ModelProto]) -> tuple[GraphProto, dict[str, int]]:
    """Body ``index`` of the If ``op`` as an ONNX branch, and the opsets it imports."""
    which, if_name = _BODIES[index], op.get_friendly_name()
    bound = {d.body_parameter_index: d.input_index for d in op.get_input_descriptions(index)}
    given = {d.output_index: d.body_value_index for d in op.get_output_descriptions(index)}
    body = _body(op, index, bound)
    unbound = [p.get_friendly_name() for i, p in enumerate(body.get_parameters()) if i not in bound]
    if unbound:
        raise _NotExpressed(f"its {which} body's Parameters {unbound} read no input of the If")
    missing = [j for j in range(op.get_output_size()) if j not in given]
    if missing:
        raise _NotExpressed(f"its {which} body gives none of its outputs {missing}")
    plan = _plain_results(body)
    model = _converted(body, which, to_onnx) if body.get_results() else ModelProto()
    prefix = f"{if_name}/{which}/"
    graph = GraphProto()
    graph.CopyFrom(model.graph)
    _prefix_names(graph, prefix)
    params = [i.name for i in graph.input]  # the body's Parameters, in its order (the written model's interface)
    nodes = [*(helper.make_node("Identity", [outer(if_name, bound[p])], [name], name=f"{name}/bind")
               for p, name in enumerate(params)), *graph.node]
    outputs: list[onnx.ValueInfoProto] = []
    for j in range(op.get_output_size()):
        kind, what = plan[given[j]]
        if kind == "same":
            kind, what = plan[what]
        result = onnx.ValueInfoProto()
        if kind == "constant":
            result = helper.make_tensor_value_info(f"{prefix}output:{j}", helper.np_dtype_to_tensor_dtype(what.dtype),
                                                   what.shape)
            nodes.append(helper.make_node("Constant", [], [result.name], name=result.name,
                                          value=numpy_helper.from_array(what, result.name)))
        else:
            result.CopyFrom(graph.output[what])
        if any(o.name == result.name for o in outputs):  # one body value for two If outputs: a name each
            copy = f"{prefix}output:{j}"
            nodes.append(helper.make_node("Identity", [result.name], [copy], name=copy))
            result.name = copy
        outputs.append(result)
    del graph.input[:], graph.output[:], graph.node[:]
    graph.node.extend(nodes)
    graph.output.extend(outputs)
    graph.name = f"{if_name}/{which}"
    return graph, {o.domain or "": o.version for o in model.opset_import}


def _plain_results(body: Any) -> list[tuple[str, Any]]:
    """What each Result of ``body`` gives: ``("kept", i)``, output i of the converted body; ``("constant", array)``;
    ``("same", r)``, Result r's value. The Results onnxifier mishandles are removed from ``body``: a Constant's (it
    loses the output) and a value's second one (its identity pass breaks the graph, and onnxoptimizer then crashes
    the process)."""
    plan: list[tuple[str, Any]] = []
    first: dict[tuple[str, int], int] = {}
    dropped = []
    for r, result in enumerate(body.get_results()):
        source = result.input_value(0)
        node = source.get_node()
        key = (node.get_name(), source.get_index())
        if node.get_type_name() == "Constant":
            plan.append(("constant", np.array(node.get_data())))
            dropped.append(result)
        elif key in first:
            plan.append(("same", first[key]))
            dropped.append(result)
        else:
            first[key] = r
            plan.append(("kept", r - len(dropped)))
    for result in dropped:
        body.remove_result(result)
    return plan


def _converted(body: Any, which: str, to_onnx: Callable[[Path], ModelProto]) -> ModelProto:
    """``body`` saved as IR in a scratch folder and converted by ``to_onnx``; its failure as the If's refusal."""
    import openvino as ov

    from onnx_bcast.onnxifier.validate import IRNotConvertible

    with tempfile.TemporaryDirectory(prefix="onnx-bcast-if-") as folder:
        xml = Path(folder) / f"{which}.xml"
        ov.save_model(body, str(xml), compress_to_fp16=False)
        try:
            return to_onnx(xml)
        except IRNotConvertible as err:
            raise _NotExpressed(f"its {which} body cannot be written: " + "; ".join(err.lines)) from None
        except Exception as err:  # noqa: BLE001 - onnxifier failing on the body, whatever its type
            raise _NotExpressed(f"its {which} body cannot be read by onnxifier: {type(err).__name__}: "
                                f"{' '.join(str(err).split())[:300]}") from None


def _body(op: Any, index: int, bound: dict[int, int]) -> Any:
    """A copy of the If's body ``index`` whose Parameters have the shapes of the If inputs feeding them (OpenVINO
    gives body Parameters wider shapes, intervals such as ``1..`` or a dynamic rank, which onnxifier cannot read);
    an interval left in an If input becomes a dynamic dimension."""
    import openvino as ov

    body = op.get_function(index).clone()
    shapes = {}
    for p, k in bound.items():
        outer_shape = op.input(k).get_partial_shape()
        if outer_shape.rank.is_static:
            shapes[p] = ov.PartialShape([d if d.is_static else ov.Dimension() for d in outer_shape])
    if shapes:
        body.reshape(shapes)
    return body


def _defined(graph: GraphProto) -> set[str]:
    names: set[str] = set()
    for g in (graph, *subgraphs(graph)):
        names.update(i.name for i in g.input)
        names.update(t.name for t in g.initializer)
        names.update(t.values.name for t in g.sparse_initializer)
        names.update(o for node in g.node for o in node.output)
    names.discard("")
    return names


def _prefix_names(graph: GraphProto, prefix: str) -> None:
    """Every value and node name defined in ``graph`` (its subgraphs too) gets ``prefix``, and so every use of it."""
    renamed = {name: prefix + name for name in _defined(graph)}
    for g in (graph, *subgraphs(graph)):
        for node in g.node:
            node.input[:] = [renamed.get(name, name) for name in node.input]
            node.output[:] = [renamed.get(name, name) for name in node.output]
            node.name = prefix + node.name
        for info in (*g.input, *g.output, *g.value_info, *g.initializer):
            info.name = renamed.get(info.name, info.name)
        for sparse in g.sparse_initializer:
            sparse.values.name = renamed.get(sparse.values.name, sparse.values.name)


def if_op(node: IrNode) -> list[NodeProto]:
    """If-8: the placeholder carrying the branches ``prepare`` made (``finish`` writes ONNX If from it)."""
    prepared = node.context.get(BRANCHES, {}).get(node.name)
    if prepared is None:
        raise node.refuse("OpenVINO's reading of the IR has no If of this name")
    if isinstance(prepared, str):
        raise node.refuse(prepared)
    return [helper.make_node("If", node.inputs, node.outputs, name=node.name, domain=PLACEHOLDER,
                             then_branch=prepared.then_branch, else_branch=prepared.else_branch)]


def loop(node: IrNode) -> list[NodeProto]:
    """Loop-5, TensorIterator-1: refused (the IR route writes no ONNX Loop or Scan)."""
    raise node.refuse("loops are not translated: the IR route writes no ONNX Loop or Scan")


def finish(model: ModelProto, prepared: dict[str, Branches | str]) -> None:
    """Every placeholder as ONNX ``If`` on its first input, its branches reading its other inputs; the opsets the
    branches import added to the model's (a newer version of one the model imports is not: ``validate`` sees it)."""
    graph = model.graph
    nodes = list(graph.node)
    found = False
    for position, node in enumerate(nodes):
        if node.domain != PLACEHOLDER:
            continue
        found = True
        bound = {outer(node.name, k): name for k, name in enumerate(node.input)}
        branches = {a.name: a.g for a in node.attribute if a.type == AttributeProto.GRAPH}
        for branch in branches.values():
            for inner in branch.node:
                inner.input[:] = [bound.get(name, name) for name in inner.input]
        nodes[position] = helper.make_node("If", [node.input[0]], list(node.output), name=node.name, **branches)
    if not found:
        return
    del graph.node[:]
    graph.node.extend(nodes)
    for opset in [o for o in model.opset_import if o.domain == PLACEHOLDER]:
        model.opset_import.remove(opset)
    imported = {o.domain or "" for o in model.opset_import}
    for branches in prepared.values():
        if isinstance(branches, Branches):
            for domain, version in branches.opsets.items():
                if domain not in imported:
                    model.opset_import.append(helper.make_opsetid(domain, version))
                    imported.add(domain)


TRANSLATIONS = {"If": if_op, "Loop": loop, "TensorIterator": loop}
