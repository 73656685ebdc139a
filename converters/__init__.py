"""The standard-ONNX rule sets (with run-time guards, and bare): one rule per (op, mode), and Expand elision."""

from __future__ import annotations

from onnx_bcast.converters import backprop, broadcast_explicit, broadcast_to_target, broadcast_v0, elementwise
from onnx_bcast.lowering.expand_elision import ExpandElision
from onnx_bcast.lowering.rules import RuleSet


def _rules(guards: bool) -> dict:
    modules = (broadcast_to_target, broadcast_explicit, broadcast_v0, elementwise, backprop)
    return {(rule.op, rule.mode): rule for module in modules for rule in module.rules(guards)}


def _newest_opset(requested: int | None) -> int:
    from onnx_bcast.model.runtime_limits import max_opset  # probes onnxruntime: for a model without a default opset

    return requested if requested is not None else max_opset()


STANDARD = RuleSet("standard-ONNX", _rules(guards=True), inline_functions=False, default_opset=_newest_opset,
                   elision=ExpandElision)
BARE = RuleSet("standard-ONNX", _rules(guards=False), inline_functions=False, default_opset=_newest_opset,
               elision=ExpandElision)
