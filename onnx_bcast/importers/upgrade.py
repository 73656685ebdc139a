"""A model's standard nodes upgraded by onnx's version converter; a failure names the node and the step."""

from __future__ import annotations

import logging

import onnx
from onnx import ModelProto, TensorProto, helper, version_converter

logger = logging.getLogger("onnx_bcast.importers.upgrade")


class UpgradeError(ValueError):
    """onnx's version converter cannot upgrade a node: the message names it, its op and the opsets."""


def upgrade(model: ModelProto, source: int, target: int) -> ModelProto:
    """``model`` (default-domain opset ``source``) at opset ``target``; nodes of other domains pass through.

    Where onnx's converter fails on the whole model, each standard node is converted alone (in a model of its own
    with its inputs' inferred types) to say which one it cannot upgrade.
    """
    held = _external_set_aside(model)
    try:
        return _external_put_back(version_converter.convert_version(model, target), model, held)
    except Exception as err:
        whole = _first_line(err)
    finally:
        _external_put_back(model, model, held)
    logger.debug("the version converter failed on the whole model: %s", whole)
    raise _failing_node(model, source, target) or UpgradeError(
        f"onnx's version converter cannot upgrade the model from opset {source} to {target}: {whole}")


def _external_set_aside(model: ModelProto) -> tuple[list[str], list[TensorProto], set[str]]:
    """The main graph's initializers whose data is in external files, taken out of ``model`` (onnx's converter
    drops them: "Input W is undefined!") and declared as graph inputs of their type where they are not already;
    returns the initializers' order, those taken out, and the inputs added for them."""
    graph = model.graph
    order = [tensor.name for tensor in graph.initializer]
    external = [tensor for tensor in graph.initializer if tensor.data_location == TensorProto.EXTERNAL]
    if not external:
        return order, [], set()
    taken = {tensor.name for tensor in external}
    kept = [tensor for tensor in graph.initializer if tensor.name not in taken]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    declared = {value.name for value in graph.input}
    added = {tensor.name for tensor in external if tensor.name not in declared}
    graph.input.extend(helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims))
                       for tensor in external if tensor.name in added)
    return order, external, added


def _external_put_back(model: ModelProto, source: ModelProto, held: tuple[list[str], list[TensorProto], set[str]]
                       ) -> ModelProto:
    """The initializers ``_external_set_aside`` took out back in ``model`` in their order (new ones after them),
    the inputs it added gone, and ``source``'s metadata (the data's folder) kept."""
    order, external, added = held
    if not external:
        return model
    graph = model.graph
    inputs = [value for value in graph.input if value.name not in added]
    del graph.input[:]
    graph.input.extend(inputs)
    rank = {name: index for index, name in enumerate(order)}
    everything = sorted([*graph.initializer, *external], key=lambda tensor: rank.get(tensor.name, len(rank)))
    del graph.initializer[:]
    graph.initializer.extend(everything)
    if model is not source:
        del model.metadata_props[:]
        model.metadata_props.extend(source.metadata_props)
    return model


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


def _failing_node(model: ModelProto, source: int, target: int) -> UpgradeError | None:
    """The first standard node that the converter cannot upgrade alone, as an error naming it and the step."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:
        inferred = model
    graph = inferred.graph
    infos = {v.name: v for v in (*graph.input, *graph.value_info, *graph.output)}
    initializers = {t.name: t for t in graph.initializer}
    for index, node in enumerate(graph.node):
        if node.domain not in ("", "ai.onnx"):
            continue
        inputs = [name for name in node.input if name]
        values = [infos.get(name) or helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
                  for name in inputs]
        outputs = [helper.make_empty_tensor_value_info(name) for name in node.output if name]
        one = helper.make_graph([node], "one_node", values, outputs,
                                initializer=[initializers[name] for name in inputs if name in initializers])
        alone = helper.make_model(one, opset_imports=[helper.make_opsetid("", source)], ir_version=model.ir_version)
        try:
            version_converter.convert_version(alone, target)
        except Exception as err:
            label = node.name or f"{node.op_type}#{index}"
            step = _failing_step(alone, source, target)
            return UpgradeError(f"onnx's version converter cannot upgrade {node.op_type} node {label!r} (opset "
                                f"{source} to {target}) at step {step - 1} -> {step}: {_first_line(err)}")
    return None


def _failing_step(alone: ModelProto, source: int, target: int) -> int:
    """The first opset, from ``source + 1`` on, that the converter cannot take the one-node model ``alone`` to."""
    for step in range(source + 1, target):
        try:
            version_converter.convert_version(alone, step)
        except Exception:
            return step
    return target
