"""Opset-aware emission of standard ONNX nodes: one function per op form, decided here and nowhere else."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import NodeProto, TensorProto, helper, numpy_helper

from onnx_bcast.errors import BroadcastError


class Emitter:
    """Collects the nodes (and initializers) that replace one onnx_bcast node."""

    def __init__(self, names, opset: int, node_name: str, op: str, mode: str, allow_initializers: bool,
                 final_name: str | None = None) -> None:
        self.names = names
        self.final_name = node_name if final_name is None else final_name  # "" keeps an unnamed node unnamed
        self.opset = opset
        self.node_name = node_name
        self.op = op
        self.mode = mode
        self.allow_initializers = allow_initializers
        self.nodes: list[NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.final_name_used = False

    # -- helpers ---------------------------------------------------------------------------------------------
    def require(self, min_opset: int, what: str) -> None:
        """Fail with the minimum opset when the model's opset cannot express ``what``."""
        if self.opset < min_opset:
            raise BroadcastError(self.op, self.mode, f"{what} needs default-domain opset >= {min_opset}; "
                                                     f"the model uses opset {self.opset}", self.node_name)

    def _node(self, op_type: str, inputs: Sequence[str], output: str | None, **attrs) -> str:
        out = output or self.names(f"{self.node_name}_{op_type.lower()}")
        if output is not None and not self.final_name_used:
            name = self.final_name  # the node that produces the original output keeps the original name
            self.final_name_used = True
        else:
            name = self.names(f"{self.node_name}/{op_type}")
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=name, **attrs))
        return out

    def const_i64(self, values: Sequence[int], hint: str = "const") -> str:
        """An int64 1-D constant: an initializer in graphs, a Constant node in functions."""
        name = self.names(f"{self.node_name}_{hint}")
        tensor = numpy_helper.from_array(np.asarray(list(values), dtype=np.int64).reshape(-1), name)
        if self.allow_initializers:
            self.initializers.append(tensor)
            return name
        self.nodes.append(helper.make_node("Constant", [], [name], name=self.names(f"{self.node_name}/Constant"),
                                           value=tensor))
        return name

    # -- op forms --------------------------------------------------------------------------------------------
    def identity(self, x: str, output: str) -> str:
        return self._node("Identity", [x], output)

    def expand(self, x: str, shape: str, output: str | None = None,
               static_out: Sequence[int] | None = None) -> str:
        """``Expand(x, shape)``; an empty static output is built as ``Slice(Expand(x, zeros as 1s))``.

        onnxruntime 1.31's ExpandElimination drops an Expand to a 0-size dim as if it were a no-op (the
        output keeps the input's 1); slicing to the 0s afterwards gives the same result, which it leaves alone.
        """
        self.require(8, "Expand")
        if static_out is None or 0 not in static_out:
            return self._node("Expand", [x, shape], output)
        ones = [d if d != 0 else 1 for d in static_out]
        expanded = self._node("Expand", [x, self.const_i64(ones, "shape_nonzero")], None)
        return self.slice_to(expanded, static_out, output)

    def slice_to(self, x: str, ends: Sequence[int], output: str | None = None) -> str:
        """``x[0:ends[0], 0:ends[1], ...]`` in the op form of the opset."""
        axes = list(range(len(ends)))
        if self.opset < 10:
            return self._node("Slice", [x], output, starts=[0] * len(ends), ends=list(ends), axes=axes)
        return self._node("Slice", [x, self.const_i64([0] * len(ends), "starts"), self.const_i64(ends, "ends"),
                                    self.const_i64(axes, "slice_axes")], output)

    def unsqueeze(self, x: str, axes: Sequence[int], output: str | None = None) -> str:
        axes = sorted(int(a) for a in axes)
        if self.opset < 13:
            return self._node("Unsqueeze", [x], output, axes=axes)
        return self._node("Unsqueeze", [x, self.const_i64(axes, "axes")], output)

    def squeeze(self, x: str, axes: Sequence[int], output: str | None = None) -> str:
        axes = sorted(int(a) for a in axes)
        if self.opset < 13:
            return self._node("Squeeze", [x], output, axes=axes)
        return self._node("Squeeze", [x, self.const_i64(axes, "squeeze_axes")], output)

    def standard(self, op_type: str, inputs: Sequence[str], output: str | None = None, **attrs) -> str:
        """A standard op that needs no opset-dependent form (``Add``, ``Mod``, ``Equal``, ...)."""
        return self._node(op_type, inputs, output, **attrs)

    def reshape(self, x: str, shape: str, output: str | None = None, may_hold_zero: bool = True) -> str:
        self.require(5, "Reshape with a shape input")
        if may_hold_zero and self.opset >= 14:
            return self._node("Reshape", [x, shape], output, allowzero=1)
        return self._node("Reshape", [x, shape], output)

    def cast_i64(self, x: str) -> str:
        return self._node("Cast", [x], None, to=TensorProto.INT64)

    def shape(self, x: str) -> str:
        return self._node("Shape", [x], None)

    def ones_like_shape(self, shape: str) -> str:
        self.require(9, "ConstantOfShape")
        one = helper.make_tensor("one", TensorProto.INT64, [1], [1])
        return self._node("ConstantOfShape", [shape], None, value=one)

    def prefix(self, values: str, length_of: str) -> str:
        """``values[:len(length_of)]`` for 1-D tensors, with the length known only at run time."""
        self.require(10, "Slice with tensor bounds")
        length = self._node("Shape", [length_of], None)
        return self._node("Slice", [values, self.const_i64([0], "zero"), length], None)

    def scatter(self, data: str, indices: str, updates: str) -> str:
        self.require(11, "ScatterElements (runtime explicit axes)")
        return self._node("ScatterElements", [data, indices, updates], None, axis=0)
