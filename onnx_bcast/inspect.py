"""What ``onnx-bcast check`` reports: our nodes, their modes, and static validation."""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx

from onnx_bcast import schemas
from onnx_bcast.errors import BroadcastError
from onnx_bcast.model_walk import all_node_lists
from onnx_bcast.ops import SPEC_BY_NAME
from onnx_bcast.prepare import node_label, prepare, read_attributes


@dataclass
class CheckReport:
    """Lines to print and the errors found."""

    lines: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def check_model(model: onnx.ModelProto) -> CheckReport:
    """List the onnx_bcast nodes, then validate attributes, the ORT form and static shapes."""
    schemas.register()
    report = CheckReport()
    count = 0
    for container, _ in all_node_lists(model):
        for index, node in enumerate(container.node):
            if node.domain != schemas.DOMAIN:
                continue
            count += 1
            label = node_label(node, index)
            spec = SPEC_BY_NAME.get(node.op_type)
            detail = ""
            if spec is not None:
                try:
                    attrs = read_attributes(node, spec, label)
                    detail = " ".join(f"{k}={list(v) if isinstance(v, tuple) else v}" for k, v in attrs.items())
                except BroadcastError as err:
                    report.errors.append(str(err))
            report.lines.append(f"{label}: {node.op_type} {detail}".rstrip())
    report.lines.insert(0, f"{count} onnx_bcast node(s)")
    if report.errors:
        return report
    for step in (prepare, _strict_inference):
        try:
            step(model)
        except (BroadcastError, onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as err:
            report.errors.append(str(err).strip().splitlines()[0])
            return report
    report.lines.append("ok: attributes valid, static shapes consistent")
    return report


def _strict_inference(model: onnx.ModelProto) -> None:
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
