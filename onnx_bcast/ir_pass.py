"""``LowerToStandard``: the standard-ONNX lowering as an onnx-ir pass, for onnx-ir and onnxscript pipelines."""

from __future__ import annotations

import onnx_ir as ir
from onnx_ir.passes import FunctionalPass, PassResult, PostconditionError

from onnx_bcast.convert import convert
from onnx_bcast.schemas import DOMAIN


def _ours(model: ir.Model) -> list[str]:
    """Where a node of ours is left: ``<graph or function>: <node>``."""
    found = [f"graph: {node.name or node.op_type}" for node in ir.traversal.RecursiveGraphIterator(model.graph)
             if node.domain == DOMAIN]
    for function in model.functions.values():
        found += [f"function {function.name}: {node.name or node.op_type}"
                  for node in ir.traversal.RecursiveGraphIterator(function) if node.domain == DOMAIN]
    return found


class LowerToStandard(FunctionalPass):
    """Every ``onnx_bcast`` node rewritten into standard ONNX, exactly as ``onnx_bcast.convert`` does it.

    ``guards`` and ``opset`` are ``convert``'s. A functional pass: the input model is left as it was.
    """

    def __init__(self, *, guards: bool = True, opset: int | None = None) -> None:
        super().__init__()
        self.guards, self.opset = guards, opset

    def call(self, model: ir.Model) -> PassResult:
        proto = ir.to_proto(model)
        converted = convert(proto, opset=self.opset, guards=self.guards)
        return PassResult(ir.from_proto(converted), modified=bool(_ours(model)))

    def ensures(self, model: ir.Model) -> None:
        left = _ours(model)
        if left:
            raise PostconditionError(f"onnx_bcast nodes are left after lowering: {left[:5]}")
