"""``LowerToStandard``: the standard-ONNX lowering as an onnx-ir pass, for onnx-ir and onnxscript pipelines."""

from __future__ import annotations

from pathlib import Path

import onnx_ir as ir
from onnx_ir.passes import FunctionalPass, PassResult, PostconditionError

from onnx_bcast.convert import convert
from onnx_bcast.model import external_data
from onnx_bcast.onnx_defs.schemas import DOMAIN


def _ours(model: ir.Model) -> list[str]:
    """Where a node of ours is left: ``<graph or function>: <node>``."""
    found = [f"graph: {node.name or node.op_type}" for node in ir.traversal.RecursiveGraphIterator(model.graph)
             if node.domain == DOMAIN]
    for function in model.functions.values():
        found += [f"function {function.name}: {node.name or node.op_type}"
                  for node in ir.traversal.RecursiveGraphIterator(function) if node.domain == DOMAIN]
    return found


def _external_folder(model: ir.Model) -> Path | None:
    """The folder of the main graph's external tensors (onnx-ir's ``base_dir``), or None."""
    for value in model.graph.initializers.values():
        tensor = value.const_value
        if isinstance(tensor, ir.ExternalTensor):
            return Path(tensor.base_dir or ".")
    return None


def _keep_external_tensors(source: ir.Model, result: ir.Model) -> None:
    """The result's initializers that refer to external data given the source's tensor objects: they know their
    folder, and read their data lazily (a tensor read from a proto alone would look for its file in the working
    folder)."""
    for name, value in result.graph.initializers.items():
        original = source.graph.initializers.get(name)
        if original is not None and isinstance(original.const_value, ir.ExternalTensor):
            value.const_value = original.const_value


class LowerToStandard(FunctionalPass):
    """Every ``onnx_bcast`` node rewritten into standard ONNX, exactly as ``onnx_bcast.convert`` does it.

    ``guards`` and ``opset`` are ``convert``'s. A functional pass: the input model is left as it was.
    """

    def __init__(self, *, guards: bool = True, opset: int | None = None) -> None:
        super().__init__()
        self.guards, self.opset = guards, opset

    def call(self, model: ir.Model) -> PassResult:
        proto = ir.to_proto(model)  # external tensors stay references: their data is not read
        folder = _external_folder(model)
        if folder is not None:  # the small shape-like constants read, as for a model loaded from its path
            external_data.read_small_constants(proto, folder)
            external_data.set_folder(proto, folder)
        converted = convert(proto, opset=self.opset, guards=self.guards)
        external_data.set_folder(converted, None)
        result = ir.from_proto(converted)
        _keep_external_tensors(model, result)
        return PassResult(result, modified=bool(_ours(model)))

    def ensures(self, model: ir.Model) -> None:
        left = _ours(model)
        if left:
            raise PostconditionError(f"onnx_bcast nodes are left after lowering: {left[:5]}")
