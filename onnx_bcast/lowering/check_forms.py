"""The emitter's check forms: a run-time condition as a token that fails the run, tied into the data path."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from onnx import NodeProto, TensorProto, helper

from onnx_bcast.lowering.node_build import int64_tensor, make_node
from onnx_bcast.ops.common import MAX_RANK

_POISON = 2**28  # a failed check's token, per probe value: fits int32 (OpenVINO's int64), 3x no dim but 1 meets
_FALSE = helper.make_tensor("value", TensorProto.BOOL, [1], [False])  # the lead's tensor: a byte an element
_DIMS_KEPT = frozenset({"Gather", "Slice", "Squeeze", "Unsqueeze"})  # some of a tensor's dims in, dims out
PROBE_PAIR_SUFFIX = " (reshaped)"  # the second probe of a check's pair (``check_token``)
GUARD_MARK = "/guard: "  # between our node's label and the rules, in the name of a check's probe (``check_name``)


def check_name(label: str, rules: str) -> str:
    """The name of the node that fails a run where our node ``label`` breaks ``rules``: ONNX Runtime's message
    names it, and ``ort/run_failures`` reads the label and rules back from it."""
    return f"{label}{GUARD_MARK}{rules}"


def run_time_checks(names: Iterable[str]) -> int:
    """How many run-time checks nodes with these names hold: each check is one probe pair, ``<node>/guard: <rules>``
    and the same name with ``PROBE_PAIR_SUFFIX``, and counts once."""
    return sum(1 for name in names if GUARD_MARK in name and not name.endswith(PROBE_PAIR_SUFFIX))


class CheckForms:
    """The guard forms of ``Emitter`` (its base): built from its op methods (``standard``, ``const_i64``, ...)."""

    def rank_checked(self, x: str, limit: int = MAX_RANK) -> str:
        """``x`` itself after a check that fails the run when its rank is over ``limit`` (``check_token``, ``tied``)."""
        self.require(9, "a run-time rank check")
        shape = self.shape(x)
        over = self.standard("Greater", [self.shape(shape), self.const_i64([limit], "rank_limit")])
        token = self.check_token([self.standard("Not", [over])],
                                 check_name(self.node_name, f"ranks are at most {limit}"))
        return self.tied(x, shape, token)

    def const_f64(self, values: Sequence[float], hint: str = "const") -> str:
        """A float64 1-D constant (never shared), placed as ``const_i64`` places one."""
        return self.place_constant(TensorProto(name=self.names(f"{self.node_name}_{hint}"),
                                               data_type=TensorProto.DOUBLE, dims=[len(values)],
                                               raw_data=struct.pack(f"<{len(values)}d", *values)))

    def fold_to_constant(self, node: NodeProto, values: Sequence[int]) -> None:
        """``node`` (one of ours, one int64 1-D output whose elements are all known) replaced by an initializer of
        its output's name; only where initializers are allowed (a function body keeps its node)."""
        self.nodes.remove(node)
        self.known_constants[node.output[0]] = tuple(values)
        self.place_constant(int64_tensor(node.output[0], values))

    def check_token(self, conditions: Sequence[str], name: str) -> str:
        """``[0]`` (int64, 1-D), computed only when every condition (a bool tensor) holds everywhere.

        With ``bad`` the number of false elements (the conditions, 1-D vectors, joined), three values
        ``[k, k, k]`` (``k = 2**28`` if bad else 0, a ``Where``) go through two probes in a row: ``Expand`` to
        ``[3 + bad]`` (named ``name``), which ONNX Runtime and ``onnx.reference`` check, then ``Reshape`` to
        ``[1, 3 + bad]`` (named ``name (reshaped)``), which OpenVINO's CPU plugin checks (it runs an incompatible
        ``Expand`` in shape arithmetic unchecked, returning its input, and drops a 1-D to 1-D ``Reshape``): three
        values take neither shape unless bad is 0. Their sum is 0 when every condition holds. Where a runtime
        checked neither, it is ``3 * 2**28``, which a tie's leading axis cannot take (its ``Squeeze`` fails). Its
        values fit int32 (OpenVINO computes int64 as int32: ``2**40`` was 0 there) and are never negative (OpenVINO's
        reader refuses a ``ConstantOfShape`` that could be, and its ``Broadcast`` moved past an elementwise op takes
        the larger of two shapes). The count is a ``ReduceSum`` with its axes (OpenVINO 2026.0 fuses a ``ReduceMin``
        of a ``Concat`` wrongly).

        The tie's leading length, ``1 + sum``, is the length of a tensor of that many elements (``Shape`` of a
        ``ConstantOfShape``; the token is it minus 1, ``self.leads`` keeps the pair): symbolic shape inference
        (``onnxruntime.tools.symbolic_shape_infer``, which ``quant_pre_process`` runs; onnxslim's copy) sees a dim
        there, a symbol of its own, where it stopped at an ``Expand`` to the sum, a value it cannot compute (every
        converted model with a check was refused). What the conditions compare it does not see
        (``_hide_compared_dims``).
        """
        self._hide_compared_dims(conditions)
        joined = conditions[0] if len(conditions) == 1 else self.standard("Concat", list(conditions), axis=0)
        failures = self.cast(self.standard("Not", [joined]), TensorProto.INT64)
        # a leading 0: never an empty vector, which a folding tool would make an initializer OpenVINO reads as one
        # element
        bad = self.reduce_sum(self.standard("Concat", [self.const_i64([0], "zero"), failures], axis=0), [0],
                              keepdims=True)
        size = self.standard("Add", [bad, self.const_i64([3], "three")])
        triple = self.standard("Where", [self.cast(bad, TensorProto.BOOL), self.const_i64([_POISON] * 3, "poison"),
                                         self.const_i64([0, 0, 0], "zeros")])
        probe = self.named("Expand", [triple, size], name)
        # OpenVINO runs the Expand unchecked but checks a Reshape's element count (2-D: it drops 1-D to 1-D ones)
        reshaped = self.named("Reshape", [probe, self.standard("Concat", [self.const_i64([1], "one"), size], axis=0)],
                              f"{name}{PROBE_PAIR_SUFFIX}")
        total = self.reduce_sum(reshaped, [0, 1], keepdims=False)  # a scalar: a 1-D sum's length OpenVINO cannot see
        return self.lead_token(total)

    def lead_token(self, total: str) -> str:
        """The token ``[0]`` of a check whose failures add up to ``total`` (an int64 scalar, 0 where it holds):
        ``1 + total`` taken as the length of a tensor (``Shape(ConstantOfShape([1 + total]))``, which ``self.leads``
        keeps for ``tied``), minus 1."""
        one = self.const_i64([1], "one")
        lead = self.shape(self.standard("ConstantOfShape", [self.standard("Add", [one, total])], value=_FALSE))
        token = self.standard("Sub", [lead, one])  # read only by a tie that adds it to a vector; else pruned
        self.leads[token] = lead
        return token

    def _hide_compared_dims(self, conditions: Sequence[str]) -> None:
        """Each ``Equal`` the conditions read compares a tensor's dims through an ``Abs`` (of a dim: the dim).

        Symbolic shape inference evaluates ``Equal`` of dims as sympy's structural equality, and onnxslim, which
        runs it, writes what it evaluated into the model as a constant: false for two symbols (72 of 228 valid case
        table runs then failed), true for two it merged because an op broadcasts them (2 of 37 invalid ones
        returned values); it never finished on a guarded model before. It evaluates nothing after an ``Abs``, which
        no tool folds while the dims are unknown.
        """
        producers = {out: node for node in self.nodes for out in node.output}
        cone: set[int] = set()
        todo = list(conditions)
        while todo:
            node = producers.get(todo.pop())
            if node is not None and id(node) not in cone:
                cone.add(id(node))
                todo.extend(node.input)
        hidden: dict[str, str] = {}
        for node in [n for n in self.nodes if id(n) in cone and n.op_type == "Equal"]:
            # both sides where both are dims: onnxslim folds an Abs of static dims, and compares the constant
            for k in [k for k, value in enumerate(node.input) if _dims(value, producers)]:
                value = node.input[k]
                if value not in hidden:
                    hidden[value] = self.names(f"{self.node_name}_abs")
                    self.nodes.insert(self.nodes.index(node), make_node(
                        "Abs", [value], [hidden[value]], name=self.names(f"{self.node_name}/Abs"),
                        doc_string=self.doc))
                node.input[k] = hidden[value]

    def tied(self, x: str, shape: str | None, token: str) -> str:
        """``x`` (whose shape is ``shape``) after a check: ``Squeeze(Expand(Unsqueeze(x, 0), [1 + token, *shape]),
        0)`` (``1 + token``: the check's leading length, ``self.leads``), the same values and rank for a token of 0,
        whatever ``x``'s rank; the data path reads it, so no pass can remove the check without changing the output.
        ``shape`` None: ``x`` is known to be rank 0, and the target is ``[1 + token]`` alone (``Shape(x)`` would be
        an empty vector, which folding tools make a zero-element constant, read by OpenVINO as one element).

        Measured against the alternatives: a ``Reshape`` to itself (free) is rewritten to a constant shape by
        onnxscript's ``MaterializeReshapeShape`` when the output has at most one unknown dim, dropped by OpenVINO
        when 1-D, and fused with a following ``Reshape`` by onnxsim; a tie in the values (``x * (1 + token)``) is
        skipped by OpenVINO for an empty ``x``, whose output shape does not depend on it. An ``Expand``'s output
        shape does, for every runtime and every size. It copies ``x`` (once, where a condition stays open).

        The token rides on a leading axis of 1, whose size no pass knows, rather than on ``x``'s own dims
        (``Expand(x, shape + token)``): OpenVINO takes a known dim of ``x`` other than 1 for the output's (a valid
        bidirectional ``Expand`` keeps it), finds that ``Expand`` a no-op and removes it with the whole check, and
        fuses it into an elementwise op that reads it (a none-rule ``Add`` of a ``[2, 3]`` B returned values for an
        A of ``(1, 3)``: 12 of 18 one-node cases); and for a rank-0 ``x``, ``[] + token`` is ``[]`` whatever the
        token, which a pass that knows the rank folds away. Not a ``Gather`` of index 0 in place of the
        ``Squeeze``: ONNX Runtime 1.32 gathers strings wrong (only the first element survives), and OpenVINO
        computes the gathered slice without the ``Expand``, token unchecked.
        """
        self.require(8, "Expand")
        lead = self.leads[token]
        target = lead if shape is None else self.standard("Concat", [lead, shape], axis=0)
        return self.squeeze(self._node("Expand", [self.unsqueeze(x, [0]), target], None), [0])


def _dims(value: str, producers: dict[str, NodeProto]) -> bool:
    """Whether ``value`` holds dims of a tensor the rule computes on: ``Shape`` of it (not of a ``Shape``: a rank,
    which symbolic shape inference knows), then ``Gather``/``Slice``/``Squeeze``/``Unsqueeze``."""
    node = producers.get(value)
    while node is not None and node.op_type in _DIMS_KEPT:
        node = producers.get(node.input[0])
    if node is None or node.op_type != "Shape":
        return False
    source = producers.get(node.input[0])
    return source is None or source.op_type != "Shape"
