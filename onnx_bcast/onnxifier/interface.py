"""An IR's interface as OpenVINO reads it (input and output names, element types, ranks, order), and the written
ONNX model's graph inputs and outputs renamed and reordered to match it, so the model is a drop-in replacement."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from onnx_bcast.model.walk import subgraphs

log = logging.getLogger(__name__)

#: onnxifier's names for a graph output: the Result layer's name, after its passes with a port suffix
_PORT_SUFFIX = re.compile(r"/sink_port_\d+$")
_LAYER = {"input": "Parameter-1", "output": "Result-1"}  # how a refusal names the IR op behind an input or output


@dataclass(frozen=True)
class Port:
    """One IR input (a Parameter) or output (a Result): the name users see, the layer's name, type and shape."""

    name: str
    layer: str
    elem: int  # ONNX element type
    shape: tuple[int | None, ...] | None  # None: dynamic rank; None dims: dynamic


@dataclass(frozen=True)
class Interface:
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]


def _port(output: object, layer: str) -> Port:
    names = output.get_names()
    name = output.get_any_name() if names else layer
    dtype = output.get_element_type().to_dtype()
    shape = output.get_partial_shape()
    dims = None if shape.rank.is_dynamic else tuple(d.get_length() if d.is_static else None for d in shape)
    return Port(name, layer, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), dims)


def interface_of(model: object) -> Interface:
    """An ``openvino.Model``'s Parameters and Results, in its order."""
    inputs = tuple(_port(p.output(0), p.get_friendly_name()) for p in model.get_parameters())
    outputs = tuple(_port(r.output(0), r.get_friendly_name()) for r in model.get_results())
    return Interface(inputs, outputs)


def _rename(graph: onnx.GraphProto, old: str, new: str) -> None:
    """``old`` is ``new`` everywhere, in subgraphs too (an If's branches read names of the graph around them)."""
    for g in (graph, *subgraphs(graph)):
        for node in g.node:
            node.input[:] = [new if name == old else name for name in node.input]
            node.output[:] = [new if name == old else name for name in node.output]
        for info in (*g.input, *g.output, *g.value_info, *g.initializer):
            if info.name == old:
                info.name = new


def match_interface(model: onnx.ModelProto, interface: Interface) -> list[str]:
    """Rename and reorder ``model``'s graph inputs and outputs to the IR's; the mismatches left (name, element type,
    rank or count), as lines for from-ir's refusal."""
    graph = model.graph
    problems: list[str] = []
    used = {name for g in (graph, *subgraphs(graph)) for node in g.node for name in (*node.input, *node.output)} | {
        info.name for info in (*graph.input, *graph.output, *graph.initializer)}
    # an IR output that is an input (no op between them) has one tensor name, which ONNX cannot give two values: the
    # input is named after its Parameter layer (the name the model had before OpenVINO folded the ops away)
    passed_through = {port.name for port in interface.inputs} & {port.name for port in interface.outputs}
    inputs = tuple(Port(port.layer, port.layer, port.elem, port.shape) if port.name in passed_through else port
                   for port in interface.inputs)
    for kind, ports, infos in (("input", inputs, graph.input), ("output", interface.outputs, graph.output)):
        by_layer = {_PORT_SUFFIX.sub("", info.name): info for info in infos}
        ordered, names = [], set()
        for port in ports:
            if port.name in names:  # two IR outputs of one tensor: the second is named after its Result layer
                port = Port(port.layer, port.layer, port.elem, port.shape)
            names.add(port.name)
            info = by_layer.pop(port.layer, None) or by_layer.pop(port.name, None)
            if info is None and kind == "input" and port.name not in used:
                # only its static shape was read (ShapeOf folded away): kept as an input nothing reads, so the
                # model takes the IR's inputs (ONNX Runtime accepts an unread input)
                dims = None if port.shape is None else [d if d is not None else f"{port.name}_{i}"
                                                         for i, d in enumerate(port.shape)]
                info = helper.make_tensor_value_info(port.name, port.elem, dims)
                infos.append(info)
                log.info("IR input %r is not read by the written model (only its shape was): kept unread", port.name)
            if info is None:
                problems.append(f"{_LAYER[kind]} {port.layer!r}: the IR's {kind} {port.name!r} is not in the written "
                                "model (onnxifier drops an output it computes as a constant)")
                continue
            if info.name != port.name:
                if port.name in used:  # a tensor already holds the name: it moves aside
                    _rename(graph, port.name, f"{port.name}/onnxifier")
                _rename(graph, info.name, port.name)
            ordered.append(info)
            _check(kind, port, info, problems)
        problems += [f"the written model has an {kind} {name!r} the IR has not" for name in by_layer]
        kept = [_copy(info) for info in ordered]  # copies: the repeated field is emptied and refilled
        del infos[:]
        infos.extend(kept)
    return problems


def _copy(info: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    copy = onnx.ValueInfoProto()
    copy.CopyFrom(info)
    return copy


def _check(kind: str, port: Port, info: onnx.ValueInfoProto, problems: list[str]) -> None:
    tensor = info.type.tensor_type
    if tensor.elem_type != port.elem:
        problems.append(f"{_LAYER[kind]} {port.layer!r}: {kind} {port.name!r} is written as "
                        f"{onnx.TensorProto.DataType.Name(tensor.elem_type)}, the "
                        f"IR's is {onnx.TensorProto.DataType.Name(port.elem)}")
    if port.shape is not None and tensor.HasField("shape") and len(tensor.shape.dim) != len(port.shape):
        problems.append(f"{_LAYER[kind]} {port.layer!r}: {kind} {port.name!r} has rank {len(tensor.shape.dim)}, the "
                        f"IR's is {len(port.shape)}")
