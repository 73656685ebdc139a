"""The contract between the lowering engine and rule authors: ``Rule``, ``RuleSet``, and what a rule may do.

A rule set is a target form (standard ONNX with guards, bare standard ONNX, the ONNX Runtime form): one ``Rule``
per (op, mode). The engine binds each node of ours to what is statically known (``binding.Bound``), asks the rule
whether it takes the node (``check``), then lets it write the node's replacement through an ``Emitter``
(``rewrite``). Several speed-ups (``lowering/fast/``) rely on the following; a rule that breaks it writes wrong
models only where alike nodes meet, so the replay fuzz and the fast-vs-plain digest test are there to catch it.

What a rule may read:
  * the bound node: its op, mode, attributes, inputs' and outputs' names, the static facts bound to it
    (shapes, types, constant values, what the guard facts prove), its label;
  * the emitter's answers (a fresh name, a constant's name, whether Expand elision takes an Expand).

How it names things: only through the emitter (``emit.fresh``, ``emit.const`` and the op methods). A rule never
builds a name from text of its own, never branches on the text of a name, and never reads the graph outside its
node.

What it must not do:
  * keep state between calls, or depend on anything but the bound node and the emitter's answers: a rule is a
    pure function of them (``lowering/fast/replay.py`` replays its recorded output for an alike node);
  * touch the graph except through the emitter (Expand elision included);
  * raise anything but ``BroadcastError`` (through ``bound.fail``) for a node it cannot take: ``check`` says so
    before anything is written, and ``rewrite`` raises only for what ``check`` cannot know.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from onnx import GraphProto

if TYPE_CHECKING:
    from onnx_bcast.lowering.binding import Bound
    from onnx_bcast.lowering.declaring import Declared
    from onnx_bcast.lowering.emitter import Emitter
    from onnx_bcast.lowering.expand_elision import ExpandElision
    from onnx_bcast.lowering.static_facts import StaticFacts


class Rule(Protocol):
    """One rewrite for one (op, mode): ``check`` says why it cannot take a node (None: it can)."""

    op: str
    mode: str

    def check(self, bound: Bound) -> str | None: ...

    def rewrite(self, emit: Emitter, bound: Bound) -> None: ...


Elision = Callable[[GraphProto, set[str], "StaticFacts", list[tuple[str, ...]], bool], "ExpandElision"]


@dataclass(frozen=True)
class RuleSet:
    """The rules of one target form, and what the pass does around them for it."""

    name: str
    rules: Mapping[tuple[str, str], Rule]
    inline_functions: bool  # a function's values are typed per call site: inline it to know them
    default_opset: Callable[[int | None], int]  # the default-domain opset of a model that imports none
    elision: Elision | None = None  # where an Expand its consumers do not need is left out (per graph)

    def rule_for(self, declared: Declared) -> Rule:
        rule = self.rules.get((declared.op, declared.mode))
        if rule is None:
            raise declared.limit(f"no {self.name} rule takes this op and mode")
        return rule
