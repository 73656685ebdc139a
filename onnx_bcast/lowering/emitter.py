"""The one emitter of every rule set: one method per op form, each opset-dependent choice made here only."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING

from onnx import NodeProto, TensorProto

from onnx_bcast.errors import BroadcastError, NotLowerable
from onnx_bcast.lowering.check_forms import CheckForms
from onnx_bcast.lowering.elementwise_forms import ElementwiseForms
from onnx_bcast.lowering.node_build import int64_tensor, make_node
from onnx_bcast.lowering.shape_forms import ShapeForms
from onnx_bcast.model.walk import NameGenerator

if TYPE_CHECKING:
    from onnx_bcast.lowering.expand_elision import ExpandElision


class Emitter(CheckForms, ShapeForms, ElementwiseForms):
    """Collects the nodes (and initializers) that replace one onnx_bcast node (its bases: the check, shape and
    elementwise forms)."""

    def __init__(self, names: NameGenerator, opset: int, node_name: str, op: str, mode: str,
                 allow_initializers: bool, final_name: str | None = None, mode_attr: str = "mode",
                 doc: str | None = None) -> None:
        self.names = names
        self.doc = doc  # every node's doc_string
        self.reads: set[str] = set()  # the values the nodes read
        self.final_name = node_name if final_name is None else final_name  # "" keeps an unnamed node unnamed
        self.opset, self.node_name, self.op, self.mode, self.mode_attr = opset, node_name, op, mode, mode_attr
        self.allow_initializers = allow_initializers
        self.nodes: list[NodeProto] = []  # what the rule writes (prune and elision read them)
        self.serialized: list[bytes] = []  # what a replay writes instead: the same nodes, serialized
        self.initializers: list[TensorProto] = []
        self.domains: set[str] = set()  # the non-default domains of the nodes emitted
        self.elision: ExpandElision | None = None  # set where an Expand may be left out (standard ONNX)
        self.constants: dict[tuple[int, ...], str] | None = None  # int64 constants shared within one graph
        self.final_name_used = False
        self.known_constants: dict[str, tuple[int, ...]] = {}  # the int64 constants asked for, by name
        self.roots: set[str] = set()  # values the graph reads besides the node's outputs (Expand elision's sources)
        self.leads: dict[str, str] = {}  # a check's token -> the leading length its ties expand to (check_token)

    def written(self) -> list[NodeProto | bytes]:
        """The replacement: the nodes the rule wrote, or those a replay wrote serialized (graphs only, where
        constants are initializers: the two never mix)."""
        return [*self.nodes, *self.serialized] if self.serialized else list(self.nodes)

    @property
    def allowzero(self) -> bool:
        """Whether ``Reshape`` can take a 0 in its shape literally (``allowzero``, opset 14)."""
        return self.opset >= 14

    # -- helpers ---------------------------------------------------------------------------------------------
    def require(self, min_opset: int, what: str) -> None:
        """Fail with the minimum opset when the model's opset cannot express ``what``."""
        if self.opset < min_opset:
            raise self.limit(f"{what} needs default-domain opset >= {min_opset}; the model uses opset {self.opset}")

    def fail(self, detail: str) -> BroadcastError:
        """A BroadcastError naming the node being rewritten."""
        return BroadcastError(self.op, self.mode, detail, self.node_name, mode_attr=self.mode_attr)

    def limit(self, detail: str) -> NotLowerable:
        """A NotLowerable naming the node being rewritten: the lowering cannot write it (valid inputs may exist)."""
        return NotLowerable(self.op, self.mode, detail, self.node_name, mode_attr=self.mode_attr)

    def _node(self, op_type: str, inputs: Sequence[str], output: str | None, domain: str = "", **attrs) -> str:
        return self._multi(op_type, inputs, [output], domain, **attrs)[0]

    def _multi(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str | None], domain: str = "",
               **attrs) -> list[str]:
        outs = [out or self.names(f"{self.node_name}_{op_type.lower()}") for out in outputs]
        if outputs[0] is not None and not self.final_name_used:
            name = self.final_name  # the node that produces the original output keeps the original name
            self.final_name_used = True
        else:
            name = self.names(f"{self.node_name}/{op_type}")
        self.nodes.append(make_node(op_type, inputs, outs, name=name, domain=domain or None, doc_string=self.doc,
                                    **attrs))
        self.reads.update(inputs)
        if domain:
            self.domains.add(domain)
        return outs

    def named(self, op_type: str, inputs: Sequence[str], name: str, **attrs) -> str:
        """A standard node under a name of its own (a guard's name states its rule; runtimes quote it)."""
        out = self.names(f"{self.node_name}_{op_type.lower()}")
        self.nodes.append(make_node(op_type, inputs, [out], name=self.names(name), doc_string=self.doc, **attrs))
        self.reads.update(inputs)
        return out

    def const_i64(self, values: Sequence[int], hint: str = "const") -> str:
        """An int64 1-D constant: an initializer in graphs, a Constant node in functions."""
        key = values if type(values) is tuple else tuple(int(v) for v in values)  # (a replay's key is made so)
        if self.allow_initializers and self.constants is not None and key in self.constants:
            name = self.constants[key]
            self.known_constants[name] = key
            return name
        name = self.names(f"{self.node_name}_{hint}")
        self.known_constants[name] = key
        if self.allow_initializers and self.constants is not None:
            self.constants[key] = name
        return self.place_constant(int64_tensor(name, key))

    def place_constant(self, tensor: TensorProto) -> str:
        """``tensor`` as an initializer in graphs, as a ``Constant`` node in functions; its name."""
        if self.allow_initializers:
            self.initializers.append(tensor)
        else:
            self.nodes.append(make_node("Constant", [], [tensor.name], name=self.names(f"{self.node_name}/Constant"),
                                        doc_string=self.doc, value=tensor))
        return tensor.name

    def scalar(self, value: int, elem: int) -> str:
        """A 0-D integer constant of type ``elem`` (int32 or int64), as a ``Constant`` node: a scalar changes no
        operand's rank, and a replay writes it as it writes any node."""
        fmt = {TensorProto.INT32: "<i", TensorProto.INT64: "<q"}[elem]
        tensor = TensorProto(data_type=elem, raw_data=struct.pack(fmt, value))
        return self._node("Constant", [], None, value=tensor)

    def prune(self, outputs: Sequence[str]) -> None:
        """Only the nodes that ``outputs`` (and the values Expand elision rewired to) need are kept, e.g. not the
        checks that a guard proved statically; then ``prune_initializers``."""
        live = set(outputs) | self.roots
        kept: list[NodeProto] = []
        for node in reversed(self.nodes):
            if any(out in live for out in node.output):
                kept.append(node)
                live.update(node.input)
        if len(kept) != len(self.nodes):
            self.nodes = kept[::-1]
            self.reads = {name for node in self.nodes for name in node.input}
        self.prune_initializers()

    def prune_initializers(self) -> None:
        """The constants this node made that no node of it reads are dropped (and forgotten by the graph's shared
        ones, so that no later node refers to them)."""
        unused = [t for t in self.initializers if t.name not in self.reads]
        if not unused:
            return
        names = {t.name for t in unused}
        self.initializers = [t for t in self.initializers if t.name not in names]
        if self.constants is not None:
            for key in [k for k, name in self.constants.items() if name in names]:
                del self.constants[key]

    # -- op forms --------------------------------------------------------------------------------------------
    def identity(self, x: str, output: str) -> str:
        return self._node("Identity", [x], output)

    def expand(self, x: str, shape: str, output: str | None = None,
               static_out: Sequence[int] | None = None, checked: bool = False,
               shape_values: Sequence[int] | None = None, zero_ends: str | None = None) -> str:
        """``Expand(x, shape)``; an empty static output (``x``'s dims validated, or ``checked``: ``shape`` is
        ``static_out`` plus a guard's token, which stays on the path) is built without an ``Expand`` of ``x``.

        From opset 14, ``Reshape(Slice(Reshape(x, [-1]), 0, 0), shape)`` with ``allowzero``: no element is read,
        yet ``x`` stays an input (OpenVINO drops an input nothing reads, and feeding it then fails), and nothing
        broadcasts a 0 (OpenVINO refuses 0 to 1, and a static ``Expand`` of a 0 dim stops its process).
        Before, ``Slice(Expand(x, zeros as 1s))``: it runs in OpenVINO while ``x`` has no 0 dim, and onnxruntime
        1.31's ExpandElimination (1.32's too), which takes an Expand to a 0-size dim for a no-op, leaves it alone.
        An unknown output to a constant target with a 0 (``shape_values``, not checked): ``expand_to_zeros``.
        """
        self.require(8, "Expand")
        if output is not None and static_out is not None and self.elision is not None and 0 not in static_out \
                and self.elision.can_drop(output, tuple(static_out)):
            return self._elide(x, output)
        if static_out is None and shape_values is not None and 0 in shape_values:  # ``shape``'s constant values
            return self.expand_to_zeros(x, shape_values, output, zero_ends)  # (``zero_ends``: ``tie_expand``'s)
        if zero_ends is not None:  # (values not given: the token rides on the target, as ``tie_expand`` did before)
            shape = self.standard("Add", [shape, zero_ends])
        if static_out is None or 0 not in static_out:
            return self._node("Expand", [x, shape], output)
        if self.allowzero:
            flat = self._node("Reshape", [x, self.const_i64([-1], "flat")], None)
            zero = self.const_i64([0], "zero")
            none = self.zeros_where_empty(self._node("Slice", [flat, zero, zero], None), static_out)
            target = shape if checked else self.const_i64(static_out, "empty_shape")
            return self._node("Reshape", [none, target], output, allowzero=1)
        ones = [d if d != 0 else 1 for d in static_out]
        nonzero = self.const_i64(ones, "shape_nonzero")
        if checked:  # the token (shape - static_out) stays on the data path
            nonzero = self.standard("Add", [nonzero, self.standard("Sub", [shape, self.const_i64(static_out)])])
        expanded = self._node("Expand", [x, nonzero], None)
        return self.slice_to(expanded, static_out, output)

    def _elide(self, x: str, output: str) -> str:
        """No Expand: the node that made ``x`` makes ``output`` (keeping the original name), else consumers read x."""
        last = self.nodes[-1] if self.nodes else None
        if last is not None and list(last.output) == [x] and not self.final_name_used:
            last.output[0] = output
            last.name = self.final_name
            self.final_name_used = True
            self.elision.dropped.add(output)  # its value info, if any, gave the expanded shape
            return output
        self.elision.rewire(output, x)
        self.roots.add(x)
        return x

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

    def reduce_sum(self, x: str, axes: Sequence[int] | str, keepdims: bool, output: str | None = None) -> str:
        """``ReduceSum(x, axes)``: constant axes as the attribute before opset 13 and as an input from 13 on;
        axes known only at run time (a tensor's name, non-negative) need opset 13 and get a leading axis of 1 to
        sum, so they are never empty (ONNX Runtime < 1.31 sums a 0-size tensor over every axis despite
        ``noop_with_empty_axes``)."""
        if isinstance(axes, str):
            self.require(13, "ReduceSum over axes known only at run time")
            shifted = self.standard("Concat", [self.const_i64([0], "lead_axis"),
                                               self.standard("Add", [axes, self.const_i64([1], "one")])], axis=0)
            summed = self._node("ReduceSum", [self.unsqueeze(x, [0]), shifted], None if keepdims else output,
                                keepdims=int(keepdims))
            return self.squeeze(summed, [0], output) if keepdims else summed
        axes = sorted(int(a) for a in axes)
        if not axes:  # ReduceSum without axes would sum every axis
            return self.identity(x, output) if output is not None else x
        if self.opset < 13:
            return self._node("ReduceSum", [x], output, axes=axes, keepdims=int(keepdims))
        return self._node("ReduceSum", [x, self.const_i64(axes, "sum_axes")], output, keepdims=int(keepdims))

    def standard(self, op_type: str, inputs: Sequence[str], output: str | None = None, **attrs) -> str:
        """A standard op that needs no opset-dependent form (``Add``, ``Mod``, ``Equal``, ...)."""
        return self._node(op_type, inputs, output, **attrs)

    def custom(self, op_type: str, domain: str, inputs: Sequence[str], outputs: Sequence[str | None],
               **attrs) -> list[str]:
        """A node of another domain (our ORT kernels); ``None`` outputs get fresh names."""
        return self._multi(op_type, inputs, outputs, domain, **attrs)

    def cast(self, x: str, to: int, output: str | None = None) -> str:
        return self._node("Cast", [x], output, to=to)

    def cast_i64(self, x: str) -> str:
        return self.cast(x, TensorProto.INT64)

    def shape(self, x: str) -> str:
        return self._node("Shape", [x], None)
