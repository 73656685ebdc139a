"""The standard-ONNX rule set: one rule per (op, mode), and the Expand elision that runs after them."""

from __future__ import annotations

from onnx_bcast.converters import broadcast_explicit, broadcast_to_target, broadcast_v0, elementwise
from onnx_bcast.converters.expand_elision import ExpandElision

from onnx_bcast.lowering import RuleSet

RULES = {(rule.op, rule.mode): rule for module in (broadcast_to_target, broadcast_explicit, broadcast_v0, elementwise)
         for rule in module.RULES}


def _newest_opset(requested: int | None) -> int:
    from onnx_bcast.runtime_limits import max_opset  # probes onnxruntime: only for a model without a default opset

    return requested if requested is not None else max_opset()


STANDARD = RuleSet("standard-ONNX", RULES, inline_functions=False, default_opset=_newest_opset,
                   elision=ExpandElision)
