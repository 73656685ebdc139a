"""Run-time guards: the errors of docs/ops.md's rules that the converter cannot prove absent, checked in standard ONNX.

All open conditions of a node together become two probes in a row that fail unless they hold
(``Emitter.check_token``: an ``Expand`` that ONNX Runtime checks, then a ``Reshape`` of its output that OpenVINO
checks, docs/guards.md). The sum of what they pass on gives the *token*, ``[0]`` (a length minus 1), which the data
path carries (``x`` expanded on a leading axis of ``1 + token`` and squeezed back, ``Emitter.tied``; the rule's own
``Expand`` of its data): the values and the rank stay as they were (static for runtimes that need it), and no
optimizer can prune or fold the check without evaluating it. The failing node is named ``<our node>/guard: <its
rules>``, which runtimes quote.
"""

from __future__ import annotations

from onnx import TensorProto

from onnx_bcast.converters.empty_vectors import empty_unless_long
from onnx_bcast.converters.guard_facts import GuardFacts
from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.check_forms import check_name
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.ops.common import MAX_ELEMENTS, MAX_RANK, nonzero_product

GUARD_OPSET = 11  # Equal/Less/Greater on int64, ScatterElements-era Slice and ConstantOfShape
_FOLDABLE = frozenset({"Shape", "Add", "Sub"})  # 1-D int64 arithmetic of lengths (``Guard._fold_lengths``)


class Guard:
    """Builds one node's checks with ``emit``; ``token()`` ties them together."""

    def __init__(self, emit: Emitter, bound: Bound) -> None:
        emit.require(GUARD_OPSET, "run-time checks (convert with guards=False to drop them)")
        self.emit, self.bound = emit, bound
        self.conditions: list[tuple[str, str]] = []  # (bool tensor, rule)

    # -- small int64 vector helpers ----------------------------------------------------------------------------
    def i64(self, *values: int) -> str:
        return self.emit.const_i64(values, "guard_const")

    def length(self, vector: str) -> str:
        """``[len(vector)]``."""
        return self.emit.shape(vector)

    def rank(self, x: str) -> str:
        return self.length(self.emit.shape(x))

    def op(self, op_type: str, *inputs: str, **attrs: int) -> str:
        return self.emit.standard(op_type, list(inputs), None, **attrs)

    def at_least(self, x: str, y: str) -> str:
        """``x >= y`` as ``Not(x < y)`` (GreaterOrEqual is opset 12); ``x > y - 1`` where ``y`` is a one-element
        integer constant (one node)."""
        known = self.emit.known_constants.get(y)
        if known is not None and len(known) == 1:
            return self.op("Greater", x, self.i64(known[0] - 1))
        return self.op("Not", self.op("Less", x, y))

    def at_most(self, x: str, y: str) -> str:
        return self.op("Not", self.op("Greater", x, y))

    def slice(self, vector: str, start: str, end: str) -> str:
        return self.op("Slice", vector, start, end)

    # -- conditions ----------------------------------------------------------------------------------------------
    def require(self, condition: str, rule: str) -> None:
        """``condition`` (a bool tensor) must hold everywhere."""
        self.conditions.append((condition, rule))

    def no_negative_dims(self, target: str) -> None:
        self.require(self.at_least(target, self.i64(0)), "no target dimension may be negative")

    def representable(self, target: str) -> None:
        """The output (``target``'s dims, 0s skipped) holds at most ``MAX_ELEMENTS``, as in the shape rule. Only a
        target with elements the graph feeds needs the check: ints are judged now, and a tensor's own dims (a
        symbol) are a shape that exists."""
        value = self.facts().value(target)
        if value is not None and None not in value:
            count = nonzero_product([e for e in value if isinstance(e, int)])  # symbols: dims that exist
            if count > MAX_ELEMENTS:
                raise self.bound.fail(f"the output cannot exist: its non-zero dims multiply to {count:.2e} elements, "
                                      f"over 2**60 - 1 "
                                      f"(8-byte elements must fit int64 sizes); {known_shapes(self.bound)}")
            return
        double = TensorProto.DOUBLE
        count = self.op("ReduceProd", self.op("Max", self.emit.cast(target, double), self.emit.const_f64([1.0], "one")),
                        keepdims=1)
        limit = self.emit.const_f64([float(MAX_ELEMENTS + 1)], "max_elements")  # 2**60 exactly, in float64
        self.require(self.op("Less", count, limit), "the output's non-zero dims multiply to at most 2**60 - 1")

    def settle(self) -> None:
        """Each condition judged on what is known before the run (``GuardFacts``): proven ones are dropped (their
        nodes are pruned when the rule is done), a disproven one fails the conversion, the open ones stay."""
        facts = self.facts()
        kept = []
        for condition, rule in self.conditions:
            verdict = facts.verdict(condition)
            if verdict is False:
                raise self.bound.fail(f"{rule}; {known_shapes(self.bound)}")
            if verdict is None:
                kept.extend((c, rule) for c in self._without_empty_vectors(facts, condition))
        self.conditions = kept
        if kept:
            self._fold_lengths(facts)

    def _without_empty_vectors(self, facts: GuardFacts, condition: str) -> list[str]:
        """``condition``, or where it is empty in every run, ``Size(v) < 2`` for each vector ``v`` it broadcasts
        against an empty one: the run fails exactly where one is longer than 1 (``empty_unless_long``)."""
        long = empty_unless_long(facts, condition)
        if long is None:
            return [condition]
        return [self.op("Less", self.op("Size", v), self.i64(2)) for v in dict.fromkeys(long)]

    def _fold_lengths(self, facts: GuardFacts) -> None:
        """Lengths and their arithmetic whose every element is known (a rank, a shape input's length, their
        differences) become int64 constants: a node fewer each at run time. Never a ``Shape`` of data: a tie reads
        those, and a data path on a constant shape is what tools fold (``tie_expand``)."""
        if not self.emit.allow_initializers:
            return
        lengths = set(self.emit.known_constants) | {name for i, name in enumerate(self.bound.inputs)
                                                     if name and self.bound.spec.inputs[i].type_param == "T_SHAPE"}
        shapes = {n.output[0] for n in self.emit.nodes if n.op_type == "Shape"}
        for node in list(self.emit.nodes):
            if len(node.output) != 1 or node.op_type not in _FOLDABLE:
                continue
            if node.op_type == "Shape":
                foldable = node.input[0] in shapes or node.input[0] in lengths
            else:
                foldable = all(name in lengths for name in node.input)
            value = facts.value(node.output[0]) if foldable else None
            if value is not None and all(type(e) is int for e in value):
                self.emit.fold_to_constant(node, value)
                lengths.add(node.output[0])

    def token(self) -> str:
        """``[0]`` (int64, 1-D), computed only when every open condition held: the run fails otherwise.

        One check per node (a few nodes, whatever the number of conditions): its name lists the rules it checks.
        """
        rules = "; ".join(dict.fromkeys(rule for _, rule in self.conditions))
        return self.emit.check_token([condition for condition, _ in self.conditions],
                                     check_name(self.bound.label, rules))

    def facts(self) -> GuardFacts:
        """What the emitted nodes are known to hold before the run."""
        return GuardFacts(self.emit.nodes, self.emit.known_constants, self.bound)

    def tie(self, shape: str) -> str:
        """``shape`` itself (plus the token's 0), available only after every open check passed. Only for a
        ``shape`` that cannot be empty, such as a rank (``[] + token`` is ``[]``: a pass that knows the length folds
        it away); ``tie_expand`` takes any ``Expand`` target."""
        self.settle()
        return self.op("Add", shape, self.token()) if self.conditions else shape

    def tie_expand(self, data: str, target: str, shape: str | None = None, slice_zeros: bool = False
                   ) -> tuple[str, str, str | None]:
        """``Expand``'s ``(data, target)`` with the data carrying the token (``tied``: a copy of the data, which is
        at most the output's size).

        Not the target: ``[] + token`` is ``[]`` whatever the token, so a pass that knows an empty target's length
        (onnxsim with the inputs fixed, OpenVINO) folds the check away; and OpenVINO 2026.4's CPU plugin, given
        ``Expand(x, constant + token)``, computes a later ``Shape`` of the output wrong (a valid chain then fails
        its next check: tests/test_fuzz_scenarios.py). ``shape``: the data's ``Shape``, where the rule has it.

        A constant target with a 0 carries the token too: ONNX Runtime's ExpandElimination removes an ``Expand`` of
        data whose dims it cannot see to such a constant as a no-op (x (1, 1, 1) to [1, 1, 0] came back (1, 1, 1):
        fuzz case 35428 of seed 0); a target computed at run time is out of its reach. With ``slice_zeros`` (a rule
        whose own conditions cover every dim, and whose ``expand`` is given the target's values), the token is
        instead the third value, the end of a ``Slice`` of the zero-size dims off an ``Expand`` to 1s
        (``Emitter.expand``'s ``zero_ends``, ``expand_to_zeros``); else it is None. As a dim of the target, symbolic
        shape inference without ``auto_merge`` stopped at it, and onnxsim with the shapes fixed folded it away and
        left an ``Expand`` to a constant 0 for ORT to drop.
        """
        self.settle()
        if not self.conditions:
            return data, target, None
        token = self.token()
        tied = self.emit.tied(data, self._shape_unless_rank_0(data, shape), token)
        value = self.facts().value(target)
        if value is not None and any(e == 0 and not isinstance(e, bool) for e in value):
            if slice_zeros:
                return tied, target, token
            target = self.op("Add", target, token)
        return tied, target, None

    def tied(self, x: str, shape: str | None = None) -> str:
        """``x`` itself, available only after every open check passed (``Emitter.tied``); ``shape``: its
        ``Shape``, where the rule has it."""
        self.settle()
        if not self.conditions:
            return x
        return self.emit.tied(x, self._shape_unless_rank_0(x, shape), self.token())

    def _shape_unless_rank_0(self, x: str, shape: str | None) -> str | None:
        """``x``'s ``Shape`` (``shape`` where the rule made it) for a tie, or None where ``x`` is known to be rank 0:
        the tie then needs no shape (``Emitter.tied``)."""
        shape = shape or self.emit.shape(x)
        return None if self.facts().value(shape) == () else shape


def known_shapes(bound: Bound) -> str:
    """The inputs' shapes as known before the run, ``?`` for an unknown dim, e.g. ``A (?, 3), B (2,)``."""
    parts = []
    for i, (formal, name, dims) in enumerate(zip(bound.spec.inputs, bound.inputs, bound.shapes, strict=True)):
        if not name:
            continue
        if formal.type_param == "T_SHAPE":
            values, length = bound.ints(i), bound.length(i)
            if values is not None:
                parts.append(f"{formal.name} {list(values)}")
            elif length is not None:
                parts.append(f"{formal.name} [{', '.join('?' * length)}]")
            continue
        shown = "rank unknown" if dims is None else "(" + ", ".join("?" if d is None else str(d) for d in dims) + \
            ("," if len(dims) == 1 else "") + ")"
        parts.append(f"{formal.name} {shown}")
    return "statically: " + ", ".join(parts)


def checked_against_shape(emit: Emitter, bound: Bound, x: str, expected: str, rule: str,
                          tie_to: str | None = None) -> tuple[str, str | None]:
    """``(x, tie_to)`` after a check that ``x``'s shape equals ``expected`` exactly (rank and dims), one of them
    carrying the token: ``tie_to`` is an ``Expand`` target of ``x`` (``Guard.tie_expand``), or None (``x`` is
    tied itself: ``Guard.tied``)."""
    guard = Guard(emit, bound)
    actual = emit.shape(x)
    guard.require(guard.op("Equal", guard.length(actual), guard.length(expected)), rule)
    guard.require(guard.op("Equal", actual, expected), rule)
    if tie_to is not None:
        return guard.tie_expand(x, tie_to)[:2]
    return guard.tied(x, actual), None


def checked_b(emit: Emitter, bound: Bound, a: str, b: str) -> str:
    """B (already aligned to A's rank for pdpd) after the checks of its rule (ranks at most 64 for every rule; the
    shapes for ``none``/``pdpd``), tied into the data path (``Guard.tied``)."""
    guard = Guard(emit, bound)
    sa, sb = emit.shape(a), emit.shape(b)
    ranks = (bound.rank(0), bound.rank(1))
    if None in ranks or max(ranks) > MAX_RANK:  # known ranks are judged here (``b`` may be B aligned, unknown to facts)
        limit = guard.i64(MAX_RANK)
        rank_ok = guard.op("And", guard.at_most(guard.length(sa), limit), guard.at_most(guard.length(sb), limit))
        guard.require(rank_ok, f"ranks are at most {MAX_RANK}")
    if bound.mode == "numpy":
        pass  # the standard op's own broadcasting is the rule
    elif bound.mode == "none":
        guard.require(guard.op("Equal", guard.length(sa), guard.length(sb)), "none: A and B must have one shape")
        guard.require(guard.op("Equal", sa, sb), "none: A and B must have one shape")
    else:  # B is right-aligned to A for numpy broadcasting: its dims meet A's last ones
        ra = guard.length(sa)
        a_tail = guard.slice(sa, guard.op("Sub", ra, guard.length(sb)), ra)
        fits = guard.op("Or", guard.op("Equal", sb, guard.i64(1)), guard.op("Equal", sb, a_tail))
        guard.require(fits, "pdpd: each B dim must be 1 or equal the A dim it meets (the output is A's shape)")
    return guard.tied(b, sb)
