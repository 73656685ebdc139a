"""How the IR route records the IR ops it cannot express: one line each (type-version 'name': why), raised together."""

from __future__ import annotations

from typing import Any

import onnx
from onnx import helper


class NotExpressible(ValueError):
    """IR ops that have no ONNX translation here: one line per op (its type, version and name)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = list(dict.fromkeys(lines))
        super().__init__("; ".join(self.lines))


def ir_attributes(node: onnx.NodeProto) -> dict[str, str]:
    """An IR node's attributes as onnxifier's reader keeps them: strings (``version`` among them)."""
    values = {}
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        values[attribute.name] = value.decode() if isinstance(value, bytes) else str(value)
    return values


def ir_flag(value: str) -> bool:
    """An IR boolean attribute (a string, as onnxifier's reader keeps it): ``true`` or ``1``."""
    return str(value).strip().lower() in ("true", "1")


def record(options: dict[str, Any], node: onnx.NodeProto, line: str) -> onnx.NodeProto:
    """Note ``line`` against ``node`` (an IR node), which is kept; the conversion stops after the last op pass with
    every such line (``NotExpressible``), and later passes leave the node alone."""
    options.setdefault("refused", []).append(line)
    options.setdefault("refused_nodes", set()).add(node.name)
    return node


def op_label(op_type: str, version: str | None, name: str) -> str:
    """How a refusal names an IR op: ``Type-version 'name'`` (``Gather-8 'gather_1'``; ``?`` for no version)."""
    return f"{op_type}-{(version or '').removeprefix('opset') or '?'} {name!r}"


def refuse(options: dict[str, Any], node: onnx.NodeProto, why: str) -> onnx.NodeProto:
    """``record`` with the line made of the node's type, version and name."""
    return record(options, node, f"{op_label(node.op_type, ir_attributes(node).get('version'), node.name)}: {why}")
