"""The one lowering pass: our nodes validated, static facts gathered once, each node rewritten by its rule set."""

from __future__ import annotations

import contextlib
import gc
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from onnx import GraphProto, ModelProto, NodeProto

from onnx_bcast.errors import BroadcastError
from onnx_bcast.importers.legacy_onnx import Imported, imported_if_legacy
from onnx_bcast.lowering.binding import Bound, bind
from onnx_bcast.lowering.declaring import Declared, labelled
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.lowering.fast import hidden_inference
from onnx_bcast.lowering.fast.replay import Replays
from onnx_bcast.lowering.lowered_model import finish_model, replace_nodes
from onnx_bcast.lowering.rules import Rule, RuleSet
from onnx_bcast.lowering.scalar_inputs import check_scalar_inputs, scalars_reaching_ours
from onnx_bcast.lowering.shape_values import ShapeValues
from onnx_bcast.lowering.static_facts import StaticFacts
from onnx_bcast.lowering.survey import survey_nodes, walked_node_lists
from onnx_bcast.lowering.working_copy import working_copy
from onnx_bcast.model.claims import restore_outputs, set_claims_aside
from onnx_bcast.model.scan_bodies import rank_scan_outputs
from onnx_bcast.model.walk import NameGenerator, node_lists, opset_version
from onnx_bcast.onnx_defs import schemas
from onnx_bcast.ops import SPEC_BY_NAME

DOMAIN = schemas.DOMAIN
logger = logging.getLogger("onnx_bcast.lowering.engine")


@dataclass
class Lowered:
    """A lowered model and what the pass rewrote: counts per (op, mode)."""

    model: ModelProto
    rewritten: Counter = field(default_factory=Counter)
    imported: Imported | None = None  # a legacy model (default-domain opset 1-6): what its import did

    def lines(self) -> list[str]:
        """What a legacy model's import did, if any, then one line per op type and rule, e.g.
        ``Broadcast(mode=explicit): 2 rewritten``."""
        return (self.imported.lines() if self.imported is not None else []) + self._rewrite_lines()

    def _rewrite_lines(self) -> list[str]:
        def label(op: str) -> str:
            spec = SPEC_BY_NAME.get(op)
            return spec.mode_attr if spec is not None else "mode"

        return [f"{op}{f'({label(op)}={mode})' if mode else ''}: {count} rewritten"
                for (op, mode), count in sorted(self.rewritten.items())]


def _bound_with_rule(declared: Declared, facts: StaticFacts, in_function: bool, rule_set: RuleSet,
                     shape_values: Callable[[], ShapeValues | None] | None = None) -> tuple[Bound, Rule]:
    try:
        rule = rule_set.rule_for(declared)
        bound = bind(declared, facts, in_function)
        if shape_values is not None and not in_function:
            computed_shapes(bound, shape_values)
        reason = rule.check(bound)
        if reason is not None:
            raise bound.fail(reason)
    except BroadcastError as err:
        err.in_function = in_function  # a function's call sites may tell what its body does not: inline, retry
        raise
    return bound, rule


def bind_model(model: ModelProto, rule_set: RuleSet) -> list[Bound]:
    """Every node of ours bound and checked against ``rule_set``, nothing rewritten (``onnx-bcast check``)."""
    schemas.register()
    model, _ = imported_if_legacy(model)
    copy = working_copy(model, None, rule_set.inline_functions, rule_set.default_opset)
    lists = list(node_lists(copy))
    set_claims_aside(copy, [e.container for e in lists if isinstance(e.container, GraphProto)])
    survey = survey_nodes(lists, NameGenerator())
    declared = survey.declared
    with labelled(declared):
        facts = StaticFacts(copy, raise_broadcast_errors=True)
    values = _shape_values(copy, facts, survey.redefined)  # as ``_lower`` decides it: check and convert agree
    return [_bound_with_rule(d, facts, entry.in_function, rule_set, values)[0]
            for entry, found in zip(lists, declared, strict=True) for _, d in found]


def _shape_values(model: ModelProto, facts: StaticFacts, redefined: bool) -> Callable[[], ShapeValues | None]:
    """A maker of the model's ``ShapeValues``, built on first use (most models never need it)."""
    made: list[ShapeValues | None] = []

    def make() -> ShapeValues | None:
        if not made:
            if redefined:
                made.append(None)
            else:
                producers = {out: node for entry in node_lists(model) if not entry.in_function
                             for node in entry.container.node for out in node.output if out}
                made.append(ShapeValues(producers, facts.shapes.get, facts.values.get, facts.types.get))
        return made[0]
    return make


def computed_shapes(bound: Bound, shape_values: Callable[[], ShapeValues | None]) -> None:
    """The elements of shape-like inputs that the graph computes from ``Shape`` (``ShapeValues``), where they are
    not constants, and the dims of data inputs that come from other values; then the input names that the facts'
    symbols use (the real inputs, also under a replay's placeholders). Nothing where everything is known."""
    shapes, values, names = bound.shapes, bound.values, bound.inputs
    wanted = None
    for i, is_shape in enumerate(bound.spec.value_inputs):  # (a tight loop: it runs once per node of ours)
        if names[i] and ((values[i] is None) if is_shape else (shapes[i] is None or None in shapes[i])):
            wanted = [i] if wanted is None else [*wanted, i]
    if wanted is None:
        return
    found = shape_values()
    if found is None:
        return
    computed: list = [None] * len(names)
    derived: list = [None] * len(names)
    for i in wanted:
        name = names[i]
        if bound.spec.value_inputs[i]:
            computed[i] = found(name)
        else:  # an unknown dim may be another value's, followed through the ops that keep it
            dims = found.dims(name)
            if dims is not None and any(isinstance(d, tuple) and d[0] != name for d in dims):
                derived[i] = dims
    if any(v is not None for v in (*computed, *derived)):
        bound.computed, bound.derived_dims, bound.fact_names = computed, derived, list(names)


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Python's cyclic garbage collector paused (if it ran), and resumed afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


Progress = Callable[[int, int], None]  # (nodes of ours rewritten, all of them)
PROGRESS_EVERY = 1000


def lower(model: ModelProto, rule_set: RuleSet, *, opset: int | None = None, progress: Progress | None = None,
          speedups: bool = True) -> Lowered:
    """A copy of ``model`` with every node of ours rewritten by ``rule_set`` (subgraphs and functions included).

    ``speedups`` (the default) lets ``lowering/fast/`` work: nodes hidden from onnx's inference callbacks, facts
    shared between alike nodes, rewrites replayed. Off, every node's facts come from onnx and every rule runs; the
    bytes written are the same (a test compares them).

    A function whose nodes of ours cannot be rewritten without knowing its values (pdpd needs ranks, say) is
    inlined at its call sites, where shape inference knows them, and the pass runs again. A legacy model
    (default-domain opset 1-6) is imported first (``importers.legacy_onnx``), at ``opset`` when given.
    """
    model, imported = imported_if_legacy(model, opset)
    if imported is not None:
        opset = None
    lowered = _lower_imported(model, rule_set, opset, progress, speedups)
    lowered.imported = imported
    return lowered


def _lower_imported(model: ModelProto, rule_set: RuleSet, opset: int | None, progress: Progress | None,
                    speedups: bool) -> Lowered:
    with no_cycle_collection():  # many small objects, few cycles: collecting as it goes costs 10-15%
        try:
            return _lower(model, rule_set, opset, False, progress, speedups)
        except BroadcastError as err:
            if not getattr(err, "in_function", False):
                raise
            logger.debug("inlining the functions that hold our nodes: %s", err)
        return _lower(model, rule_set, opset, True, progress, speedups)


def _lower(model: ModelProto, rule_set: RuleSet, opset: int | None, inline: bool, progress: Progress | None,
           speedups: bool) -> Lowered:
    schemas.register()
    copy = working_copy(model, opset, inline or rule_set.inline_functions, rule_set.default_opset)
    lists = walked_node_lists(copy)
    declared_outputs = set_claims_aside(copy, [e.container for e in lists if isinstance(e.container, GraphProto)])
    names = NameGenerator()
    survey = survey_nodes(lists, names)
    declared = survey.declared
    result = Lowered(copy)
    nested = len(lists) != 1 + len(copy.functions)  # subgraphs somewhere
    facts = StaticFacts.empty()
    if speedups and any(declared) and not nested and not survey.redefined:  # our nodes may skip onnx's callbacks
        facts = hidden_inference.static_facts(copy, declared[0], survey.inputs[0], survey.produced, survey.read)
    elif any(declared):
        with labelled(declared):
            facts = StaticFacts(copy, raise_broadcast_errors=True, subgraphs=nested)
    model_opset = opset_version(list(copy.opset_import), "")
    values = _shape_values(copy, facts, survey.redefined)
    domains: set[str] = set()
    freed: set[str] = set()
    read = set(survey.read)  # by the nodes that stay, and (below) by the new ones and where elision rewires
    done, total = 0, sum(len(found) for found in declared)
    hows: dict[tuple[str, str], str] = {}  # (op, mode) -> the doc_string's mode and rule
    replays = Replays() if speedups else None  # (replay needs the signatures that hidden inference gives)
    scalar_checks = scalars_reaching_ours(copy.graph, declared, facts.shapes.get)  # (before nodes are replaced)
    # children first: rewriting a graph copies its nodes, and with them the subgraphs they hold
    for entry, found, inputs in reversed(list(zip(lists, declared, survey.inputs, strict=True))):
        if not found:
            continue
        container_opset = opset_version(entry.opsets, "") or model_opset
        replacements: dict[int, list[NodeProto | bytes]] = {}
        elision = None
        if rule_set.elision is not None and not entry.in_function:
            elision = rule_set.elision(entry.container, {d.output for _, d in found}, facts, inputs, nested)
        constants: dict[tuple[int, ...], str] = {}
        for index, decl in found:
            bound, rule = _bound_with_rule(decl, facts, entry.in_function, rule_set, values)
            # each node's doc_string says where it came from (a viewer such as Netron shows it)
            how = hows.get(rule_key := (bound.op, bound.mode))
            if how is None:
                how = hows[rule_key] = (f" ({bound.spec.mode_attr}={bound.mode})" if bound.mode else "") + \
                    f", rule {type(rule).__name__}"
            doc = f"onnx-bcast: from {bound.op} node '{bound.label}'{how}"
            emit = Emitter(names, container_opset, bound.label, bound.op, bound.mode,
                           allow_initializers=not entry.in_function, final_name=bound.node.name,
                           mode_attr=bound.spec.mode_attr, doc=doc)
            emit.elision, emit.constants = elision, constants
            try:
                if replays is None or not replays.rewrite(rule, bound, emit):
                    rule.rewrite(emit, bound)
                    emit.prune(bound.outputs)
            except BroadcastError as err:
                err.in_function = entry.in_function  # as in ``_bound_with_rule``: inline, retry
                raise
            read |= emit.reads
            replacements[index] = emit.written()
            done += 1
            if progress is not None and (done % PROGRESS_EVERY == 0 or done == total):
                progress(done, total)
            domains |= emit.domains
            if emit.initializers:
                entry.container.initializer.extend(emit.initializers)
            result.rewritten[rule_key] += 1
            freed.update(bound.inputs)
        replace_nodes(entry.container, replacements)
        if elision is not None:
            elision.finish()
            read |= elision.sources
    freed.discard("")
    if scalar_checks:
        read |= check_scalar_inputs(copy, scalar_checks, model_opset, names)
    finish_model(copy, freed, domains, model_opset, None if nested else read)
    restore_outputs(copy, declared_outputs, facts.shapes.get)
    if nested and facts.inferred is not None:  # ONNX Runtime's Scan runs no body output of unknown rank
        rank_scan_outputs(copy, facts.inferred)
    return result
