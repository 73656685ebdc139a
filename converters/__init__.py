"""Rewrite rules from onnx_bcast ops to standard ONNX: one rule per (op, mode), looked up in ``RULES``."""

from __future__ import annotations

from onnx_bcast.converters import broadcast_explicit, broadcast_to_target, broadcast_v0, elementwise

RULES = {(rule.op, rule.mode): rule for module in (broadcast_to_target, broadcast_explicit, broadcast_v0, elementwise)
         for rule in module.RULES}


def rule_for(op: str, mode: str):
    """The rule of an (op, canonical mode) pair, or None."""
    return RULES.get((op, mode))
