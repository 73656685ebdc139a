"""The emitter's elementwise forms: a standard elementwise op written as the opset and the operand type allow."""

from __future__ import annotations

from onnx_bcast.ops.elementwise import COMPARISONS, standard_form


class ElementwiseForms:
    """The elementwise forms of ``Emitter`` (its base): built from its op methods (``standard``, ``cast``, ...)."""

    def elementwise_form(self, op: str, elem: int | None) -> str:
        """How the standard elementwise ``op`` on ``elem`` is written at this opset (see ``elementwise``)."""
        try:
            return standard_form(op, self.opset, elem)
        except ValueError as err:
            raise self.limit(str(err)) from None

    def elementwise(self, op: str, a: str, b: str, output: str, form: str, elem: int | None = None,
                    **attrs) -> str:
        """The standard ``op(a, b)`` in the ``form`` ``standard_form`` chose: direct; ``Or(strict, Equal)`` for
        ``LessOrEqual``/``GreaterOrEqual`` before opset 12; or on a wider type, cast back to ``elem``."""
        if form == "or_strict_equal":  # exact, NaN included: both parts are false for NaN
            strict = self.standard("Less" if op == "LessOrEqual" else "Greater", [a, b])
            equal = self.standard("Equal", [a, b])
            return self.standard("Or", [strict, equal], output)
        if form.startswith("widen:"):
            wide = int(form.split(":")[1])
            result = self.standard(op, [self.cast(a, wide), self.cast(b, wide)], None, **attrs)
            return self.identity(result, output) if op in COMPARISONS else self.cast(result, elem, output)
        return self.standard(op, [a, b], output, **attrs)
