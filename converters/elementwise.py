"""Elementwise ops: the standard op of the same name, with B aligned first under pdpd.

* ``numpy``: the standard op itself (ONNX broadcasting is numpy's).
* ``none``: the standard op after the static check that both shapes are equal; with shapes known only at run
  time the standard op's numpy broadcasting is what checks them (it accepts more than ``none`` would).
* ``pdpd``: B's axes past A's end (size 1 in a valid B) squeezed, then 1s unsqueezed before ``axis`` and after
  B's end, so numpy broadcasting meets B at ``axis``; needs A's and B's ranks, not their dims.

Before opset 12, ``LessOrEqual``/``GreaterOrEqual`` are written ``Or(Less, Equal)``; a type the standard op
only takes at a later opset is refused with that opset named.
"""

from __future__ import annotations

from onnx import TensorProto
from onnx_bcast.converters.emit import Emitter
from onnx_bcast.converters.facts import NodeFacts

from onnx_bcast.errors import BroadcastError
from onnx_bcast.ops.elementwise import ARITHMETIC, pdpd_axes_plan, standard_form
from onnx_bcast.ops.elementwise import RULES as AUTO_BROADCAST_RULES

_FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)


class ElementwiseRule:
    """``Op<auto_broadcast=rule>(A, B) -> Op(A, aligned B)`` for one standard elementwise op."""

    def __init__(self, op: str, mode: str) -> None:
        self.op = op
        self.mode = mode

    def _fail(self, facts: NodeFacts, detail: str) -> BroadcastError:
        return BroadcastError(self.op, self.mode, detail, facts.name, mode_attr="auto_broadcast")

    def rewrite(self, emit: Emitter, facts: NodeFacts, out_shape: tuple[int, ...] | None) -> None:
        form = self.standard_form(emit, facts)
        b = self._align_pdpd(emit, facts, facts.inputs[1]) if self.mode == "pdpd" else facts.inputs[1]
        self.emit_standard(emit, facts, b, form)

    def standard_form(self, emit: Emitter, facts: NodeFacts) -> str:
        """How the standard op is written at the emitter's opset; what it cannot express is a BroadcastError."""
        if self.op == "Mod" and not int(facts.attrs["fmod"]) and facts.types[0] in _FLOAT_TYPES:
            raise self._fail(facts, "Mod of floating-point inputs needs fmod=1")
        try:
            return standard_form(self.op, emit.opset, facts.types[0])
        except ValueError as err:
            raise self._fail(facts, str(err)) from None

    def emit_standard(self, emit: Emitter, facts: NodeFacts, b: str, form: str) -> None:
        """The standard op on A and ``b``, B already aligned for numpy broadcasting."""
        a = facts.inputs[0]
        if form == "or_strict_equal":  # LessOrEqual/GreaterOrEqual before opset 12
            strict = emit.standard("Less" if self.op == "LessOrEqual" else "Greater", [a, b])
            equal = emit.standard("Equal", [a, b])
            emit.standard("Or", [strict, equal], facts.output)
            return
        attrs = {"fmod": int(facts.attrs["fmod"])} if self.op == "Mod" else {}
        emit.standard(self.op, [a, b], facts.output, **attrs)

    def _align_pdpd(self, emit: Emitter, facts: NodeFacts, b: str) -> str:
        rank_a, rank_b = facts.rank(0), facts.rank(1)
        if rank_a is None or rank_b is None:
            raise self._fail(facts, "converting pdpd needs the ranks of A and B; give the model's inputs static "
                                    "ranks (onnx shape inference found none)")
        axis = int(facts.attrs["axis"])
        start = rank_a - rank_b if axis == -1 else axis
        if rank_b > rank_a or axis < -1 or start > rank_a:
            raise self._fail(facts, f"B of rank {rank_b} cannot align with A of rank {rank_a} at axis {axis}")
        squeeze, unsqueeze = pdpd_axes_plan(rank_a, rank_b, axis)
        if not squeeze and unsqueeze == tuple(range(start)):
            return b  # numpy's right alignment already is the pdpd one
        if squeeze:
            b = emit.squeeze(b, squeeze)
        if unsqueeze:
            b = emit.unsqueeze(b, unsqueeze)
        return b


RULES = [ElementwiseRule(op, mode) for op in ARITHMETIC for mode in AUTO_BROADCAST_RULES]
