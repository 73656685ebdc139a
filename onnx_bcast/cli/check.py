"""What ``onnx-bcast check`` reports: our nodes, their modes, their inputs as known statically, and validation."""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx

from onnx_bcast.converters.guards import known_shapes
from onnx_bcast.errors import BroadcastError
from onnx_bcast.importers.legacy_onnx import imported_if_legacy
from onnx_bcast.lowering.declaring import declare
from onnx_bcast.lowering.engine import bind_model
from onnx_bcast.model.walk import node_lists
from onnx_bcast.onnx_defs import schemas
from onnx_bcast.ort.rule_set import ort_rule_set


@dataclass
class CheckReport:
    """Lines to print and the errors found."""

    lines: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def check_model(model: onnx.ModelProto) -> CheckReport:
    """List the onnx_bcast nodes, then bind each (attributes, static shapes, the ORT rule) and infer strictly.
    A legacy model (default-domain opset 1-6) is imported first: what the import did, then its nodes of ours."""
    schemas.register()
    report = CheckReport()
    try:
        model, imported = imported_if_legacy(model)
    except BroadcastError as err:
        report.errors.append(str(err))
        return report
    head = imported.lines() if imported is not None else []
    nodes: list[tuple[str | None, str]] = []  # (the node's label where it was declared, its line)
    for entry in node_lists(model):
        for index, node in enumerate(entry.container.node):
            if node.domain != schemas.DOMAIN:
                continue
            try:
                declared = declare(node, index)
            except BroadcastError as err:
                report.errors.append(str(err))
                nodes.append((None, f"{node.name or f'{node.op_type}#{index}'}: {node.op_type}"))
                continue
            attrs = {k: v for k, v in declared.attrs.items() if k != "axis" or declared.mode == "pdpd"}
            detail = " ".join(f"{k}={list(v) if isinstance(v, tuple) else v}" for k, v in attrs.items())
            legacy = imported.nodes.get(declared.label) if imported is not None else None
            origin = f" (from legacy {legacy.form} '{legacy.label}')" if legacy is not None else ""
            nodes.append((declared.label, f"{declared.label}: {node.op_type} {detail}".rstrip() + origin))
    report.lines = [*head, f"{len(nodes)} onnx_bcast node(s)", *(line for _, line in nodes)]
    if report.errors:
        return report
    try:
        bound = bind_model(model, ort_rule_set())
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except (BroadcastError, onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as err:
        report.errors.append(str(err).strip().splitlines()[0])
        return report
    inputs = {b.label: known_shapes(b).removeprefix("statically: ") for b in bound}
    report.lines = [*head, f"{len(nodes)} onnx_bcast node(s)",
                    *(f"{line}; {inputs[label]}" if label in inputs else line for label, line in nodes)]
    report.lines.append("ok: attributes valid, static shapes consistent")
    return report
