"""Legacy ONNX (default-domain opsets 1-6) imported: its broadcasts as onnx_bcast ops, every other op upgraded."""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field

import onnx
from onnx import ModelProto, NodeProto, helper

from onnx_bcast.errors import BroadcastError
from onnx_bcast.importers.legacy_nodes import (
    HELD_GEMM_DOMAIN,
    binary_node,
    gemm_node,
    gemm_nodes,
    prelu_node,
    release_gemm,
)
from onnx_bcast.importers.legacy_rules import BINARY, LAST_LEGACY_OPSET, Dims, LegacyNode
from onnx_bcast.importers.upgrade import upgrade
from onnx_bcast.model.claims import restore_outputs, set_claims_aside
from onnx_bcast.model.files import load_model
from onnx_bcast.model.walk import NameGenerator, opset_version, subgraphs
from onnx_bcast.onnx_defs import schemas

logger = logging.getLogger("onnx_bcast.importers.legacy_onnx")

# The default-domain opset a legacy model is upgraded to when none is asked for: ONNX 1.12's (2022), which every
# maintained runtime reads (ONNX Runtime >= 1.12, OpenVINO >= 2022.3, TensorRT >= 8.6, onnx.reference).
DEFAULT_OPSET = 17
_DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclass
class Imported:
    """A legacy model imported, and what the import did."""

    model: ModelProto
    source_opset: int
    opset: int
    nodes: dict[str, LegacyNode] = field(default_factory=dict)  # by the label of its node of ours in ``model``
    rewritten: Counter = field(default_factory=Counter)  # (legacy form, what it became) -> count
    upgraded: int = 0  # the other nodes, upgraded by onnx's version converter

    def lines(self) -> list[str]:
        """What the import did, one line per legacy form, e.g. ``legacy Add-6(broadcast=1, axis=1) -> Add(
        auto_broadcast=pdpd, axis=1): 4``."""
        head = [f"legacy ONNX: default-domain opset {self.source_opset} imported at opset {self.opset}"]
        body = [f"legacy {form} -> {result}: {count}" for (form, result), count in sorted(self.rewritten.items())]
        tail = [f"{self.upgraded} other node(s) upgraded by onnx.version_converter"]
        return head + body + tail

    def explain(self, err: BroadcastError) -> BroadcastError:
        """A run-time error of one of our nodes, said of the legacy node it came from (others as they are)."""
        legacy = self.nodes.get(err.node or "")
        if legacy is None:
            return err
        how = f"{err.op}({err.mode_attr}={err.mode})" if err.mode else err.op
        return legacy.fail(f"{err.detail} (imported as {how})")


def legacy_opset(model: ModelProto) -> int | None:
    """The model's default-domain opset when it is a legacy one (1-6), else None."""
    version = opset_version(list(model.opset_import), "")
    return version if version is not None and version <= LAST_LEGACY_OPSET else None


def import_legacy(model: str | os.PathLike | bytes | ModelProto, *, opset: int | None = None) -> ModelProto:
    """A legacy model (default-domain opset 1-6) with its broadcasts as onnx_bcast ops and every other node
    upgraded to default-domain ``opset`` (default ``DEFAULT_OPSET``) by onnx's version converter.

    ``Add Sub Mul Div Pow And Or Xor Equal Greater Less`` become our op of the same name (``broadcast=1``:
    ``auto_broadcast="pdpd"`` with the node's ``axis``; ``broadcast=0``: ``"none"``), ``PRelu``'s slope a
    ``Broadcast(mode="explicit", axes_mapping=[1])`` to X's channels, and Gemm loses its ``broadcast``. A legacy
    node that the known shapes show invalid is a ``BroadcastError`` naming it and its legacy attributes.
    """
    return import_with_report(model, opset=opset).model


def imported_if_legacy(model: ModelProto, opset: int | None = None) -> tuple[ModelProto, Imported | None]:
    """``model`` imported when it is a legacy one (with what the import did), else itself and None."""
    if legacy_opset(model) is None:
        return model, None
    imported = import_with_report(model, opset=opset)
    return imported.model, imported


def import_with_report(model: str | os.PathLike | bytes | ModelProto, *, opset: int | None = None) -> Imported:
    """``import_legacy`` that also says what it did (``Imported.lines()``)."""
    schemas.register()
    source = load_model(model)
    version = legacy_opset(source)
    if version is None:
        raise ValueError(f"not a legacy ONNX model: it imports default-domain opset "
                         f"{opset_version(list(source.opset_import), '')}; legacy models use opsets 1-"
                         f"{LAST_LEGACY_OPSET}")
    target = DEFAULT_OPSET if opset is None else int(opset)
    newest = onnx.defs.onnx_opset_version()
    if not LAST_LEGACY_OPSET < target <= newest:
        raise ValueError(f"a legacy model is imported at a default-domain opset from {LAST_LEGACY_OPSET + 1} to "
                         f"{newest}, not {target}")
    _refuse_nested(source, version)
    work = ModelProto()
    work.CopyFrom(source)
    declared = set_claims_aside(work, [work.graph])  # shapes the runtime does not enforce prove nothing
    shapes = _legacy_shapes(work)
    result = Imported(work, version, target)
    by_output: dict[str, LegacyNode] = {}
    names = NameGenerator(work)
    nodes: list[NodeProto] = []
    for index, node in enumerate(work.graph.node):
        if node.domain not in _DEFAULT_DOMAINS:
            nodes.append(node)
            continue
        label = node.name or f"{node.op_type}#{index}"
        if node.op_type in BINARY:
            legacy, new = binary_node(node, label, version, shapes)
            nodes.append(new)
            by_output[new.output[0]] = legacy
            mode = "none" if not legacy.broadcast else "pdpd" + (f", axis={legacy.axis}" if legacy.axis not in
                                                                    (None, -1) else "")
            result.rewritten[(legacy.form, f"{node.op_type}(auto_broadcast={mode})")] += 1
        elif node.op_type == "PRelu":
            legacy = LegacyNode(label, "PRelu", version)
            made, how = prelu_node(node, legacy, shapes, names)
            nodes.extend(made)
            if len(made) > 1:
                by_output[made[-2].output[0]] = legacy
            result.rewritten[(legacy.form, how.replace("<opset>", str(target)))] += 1
        elif node.op_type == "Gemm":
            legacy = gemm_node(node, label, version, shapes)
            made = gemm_nodes(node, legacy, shapes, names)
            nodes.extend(made)
            if len(made) > 1:
                by_output[made[-1].output[0]] = legacy
            how = "C broadcast unidirectionally to [M, N]" + (", checked to be [M, N]" if len(made) > 1 else "")
            result.rewritten[(legacy.form, f"Gemm-{target} ({how})")] += 1
        else:
            nodes.append(node)
            result.upgraded += 1
    del work.graph.node[:]
    work.graph.node.extend(nodes)
    if by_output and opset_version(list(work.opset_import), schemas.DOMAIN) is None:
        work.opset_import.append(helper.make_opsetid(schemas.DOMAIN, schemas.VERSION))
    held = any(node.domain == HELD_GEMM_DOMAIN for node in nodes)
    if held:
        work.opset_import.append(helper.make_opsetid(HELD_GEMM_DOMAIN, 1))
    upgraded = upgrade(work, version, target)
    if held:
        for node in upgraded.graph.node:
            if node.domain == HELD_GEMM_DOMAIN:
                release_gemm(node)
        kept = [o for o in upgraded.opset_import if o.domain != HELD_GEMM_DOMAIN]
        del upgraded.opset_import[:]
        upgraded.opset_import.extend(kept)
    restore_outputs(upgraded, declared)
    needed = helper.find_min_ir_version_for(list(upgraded.opset_import), ignore_unknown=True)
    upgraded.ir_version = max(upgraded.ir_version, needed)  # opset 17 needs IR 8; a legacy file says 3
    for index, node in enumerate(upgraded.graph.node):
        legacy = by_output.get(node.output[0]) if node.domain == schemas.DOMAIN and node.output else None
        if legacy is not None:
            result.nodes[node.name or f"{node.op_type}#{index}"] = legacy
    result.model = upgraded
    logger.info("legacy opset %d model imported at opset %d: %s", version, target, "; ".join(result.lines()[1:]))
    return result


def _refuse_nested(model: ModelProto, version: int) -> None:
    """Legacy broadcasts inside subgraphs (If/Loop bodies) are not imported: an error rather than a half import."""
    for graph in subgraphs(model.graph):
        for node in graph.node:
            if node.domain in _DEFAULT_DOMAINS and node.op_type in (*BINARY, "PRelu", "Gemm"):
                raise ValueError(f"legacy ONNX: the {node.op_type} node {node.name or '(unnamed)'!r} is inside a "
                                 f"subgraph of graph {graph.name!r}; legacy broadcasts in subgraphs are not imported")
    if model.functions:
        raise ValueError(f"legacy ONNX: opset {version} model with model-local functions; not imported")


def _legacy_shapes(model: ModelProto) -> dict[str, Dims | None]:
    """Shapes by name, as the runtime enforces them: graph inputs' declared dims, initializers', and what onnx's
    shape inference of the legacy opset derives (the model's claims already set aside)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception as err:  # only a source of facts: unknown shapes are checked at run time
        logger.debug("legacy shape inference failed: %s", err)
        inferred = model
    shapes: dict[str, Dims | None] = {t.name: tuple(t.dims) for t in model.graph.initializer}
    graph = inferred.graph
    for info in (*graph.value_info, *graph.output, *graph.input):  # a graph input's type wins over its initializer
        tensor = info.type.tensor_type
        if info.type.HasField("tensor_type") and tensor.HasField("shape"):
            shapes[info.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim)
    return shapes
