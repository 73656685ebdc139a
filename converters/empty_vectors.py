"""Conditions empty in every run (a check on each dim of a rank-0 value) and the lengths that decide them."""

from __future__ import annotations

from onnx_bcast.converters.guard_facts import BROADCASTING, GuardFacts


def empty_unless_long(facts: GuardFacts, name: str) -> list[str] | None:
    """Where ``name`` (a 1-D value of ours) is empty in every run that computes it: the values whose length decides
    whether that run fails (an elementwise op of an empty vector and one of length ``n`` is empty for ``n <= 1`` and
    a broadcast error otherwise), each of a length known only at run time; None where it may hold elements.

    Folding tools turn such an empty vector (``Shape`` of a rank-0 value, and what is computed from it alone) into a
    zero-element constant, which OpenVINO's ONNX reader reads as one element: a valid scalar's one-axis explicit
    broadcast then failed there. ``Guard.settle`` checks the lengths instead (docs/guards.md).
    """
    value = facts.value(name)
    if value is not None:
        return [] if value == () else None
    node = facts.producer(name)
    if node is None:
        return None
    op = node.op_type
    if op in ("Not", "Neg", "Cast", "Identity") or (op == "Slice" and len(node.input) == 3):
        return empty_unless_long(facts, node.input[0])  # a slice of an empty vector is empty
    if op == "Concat":
        parts = [empty_unless_long(facts, x) for x in node.input]
        return None if any(p is None for p in parts) else [n for p in parts for n in p]
    if op not in BROADCASTING:
        return None
    for x, y in (node.input, node.input[::-1]):
        needs = empty_unless_long(facts, x)
        if needs is None:
            continue
        other, partner = empty_unless_long(facts, y), facts.value(y)
        if other is not None:
            return needs + other
        if partner is None:  # its length is known only at run time
            return needs + [y]
        return needs if len(partner) <= 1 else None
    return None

