"""What an owned translation sees of one IR node (as onnxifier's reader gives it), and the helpers it builds with."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from onnx import NodeProto, TensorProto, helper, numpy_helper

from onnx_bcast.onnxifier.refusals import ir_flag, op_label


class Unsupported(ValueError):
    """An IR node whose meaning an owned translation cannot express in ONNX (named in from-ir's refusal)."""


@dataclass
class IrNode:
    """One IR node: its name (the IR layer's), type, opset version, tensor names, attributes as the IR writes them
    (strings), look-ups of the graph around it (a constant's value, a tensor's shape and ONNX element type), and the
    conversion's options (``context``: what was prepared from the whole IR, e.g. If bodies)."""

    name: str
    op_type: str
    version: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, str]
    const: Callable[[str], np.ndarray | None] = field(repr=False)
    shape: Callable[[str], list[int | str] | None] = field(repr=False)
    elem: Callable[[str], int] = field(repr=False)
    context: Mapping[str, object] = field(default_factory=dict, repr=False)

    def label(self) -> str:
        return op_label(self.op_type, self.version, self.name)

    def refuse(self, why: str) -> Unsupported:
        return Unsupported(f"{self.label()}: {why}")

    def attr(self, key: str, default: str = "") -> str:
        return self.attrs.get(key, default)

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.attrs.get(key)
        return default if value is None else ir_flag(value)

    def ints(self, key: str) -> list[int]:
        value = self.attrs.get(key, "").strip()
        return [int(v) for v in value.replace(" ", "").split(",") if v] if value else []

    def rank(self, tensor: str) -> int:
        shape = self.shape(tensor)
        if shape is None:
            raise self.refuse(f"the rank of {tensor!r} is not known")
        return len(shape)

    def const_or_refuse(self, index: int, what: str) -> np.ndarray:
        value = self.const(self.inputs[index]) if index < len(self.inputs) else None
        if value is None:
            raise self.refuse(f"its {what} (input {index}) is not a constant")
        return value


class Builder:
    """Nodes for one IR node's translation: names under the IR node's name, the last node takes the name itself."""

    def __init__(self, node: IrNode) -> None:
        self.node = node
        self.nodes: list[NodeProto] = []

    def op(self, op_type: str, inputs: Sequence[str], tag: str, *, outputs: int = 1, **attrs: object) -> list[str]:
        names = [f"{self.node.name}/{tag}" + (f":{i}" if outputs > 1 else "") for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=f"{self.node.name}/{tag}", **attrs))
        return names

    def one(self, op_type: str, inputs: Sequence[str], tag: str, **attrs: object) -> str:
        return self.op(op_type, inputs, tag, **attrs)[0]

    def const(self, value: np.ndarray, tag: str) -> str:
        name = f"{self.node.name}/{tag}"
        self.nodes.append(helper.make_node("Constant", [], [name], name=name,
                                           value=numpy_helper.from_array(np.asarray(value), name)))
        return name

    def i64(self, values: Sequence[int] | int, tag: str) -> str:
        return self.const(np.asarray(values, np.int64), tag)

    def finish(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str] | None = None,
               **attrs: object) -> list[NodeProto]:
        """The last node, writing the IR node's outputs under its name."""
        outs = list(self.node.outputs if outputs is None else outputs)
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=self.node.name, **attrs))
        return self.nodes


FLOATS = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)
