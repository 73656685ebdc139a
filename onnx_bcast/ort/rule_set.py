"""The ONNX Runtime rule set: broadcasts as guarded Python kernels, elementwise ops as ORT's own standard ops."""

from __future__ import annotations

import functools

from onnx import TensorProto, helper

from onnx_bcast.converters.elementwise import ElementwiseRule
from onnx_bcast.errors import BroadcastError
from onnx_bcast.lowering.binding import Bound
from onnx_bcast.lowering.emitter import Emitter
from onnx_bcast.lowering.rules import RuleSet
from onnx_bcast.onnx_defs.schemas import BROADCAST_CHECK, ELEMENTWISE_CHECK, GUARDED_DOMAIN, RANK_CHECK
from onnx_bcast.ops import OP_SPECS
from onnx_bcast.ops.broadcast import MODES
from onnx_bcast.ops.common import MAX_RANK, NUMPY_MAX_DIMS
from onnx_bcast.ops.elementwise import RULES as AUTO_BROADCAST_RULES
from onnx_bcast.ops.memory_guard import check_output_size
from onnx_bcast.ort.tensor_types import carrier_problem, carrier_type, native_elementwise_runs, type_name

DEFAULT_OPSET = 13  # for a model that imports no default-domain opset
#: data types whose broadcast ORT's own Expand moves (``CheckedBroadcast``); the numpy kernel moves any other
EXPAND_TYPES = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BOOL,
                          TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
                          TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64})
#: the ops ``CheckedBroadcast`` takes: data, target_shape, axes_mapping
EXPANDED_OPS = ("Broadcast", "Expand")


def _limit_attr(max_output_bytes: int | None) -> int:
    return -1 if max_output_bytes is None else int(max_output_bytes)


class GuardedKernel:
    """``Op(x, s, a) -> Op<onnx_bcast.ort>(x, int64(s), int64(a)) -> (y..., status...)``, then ``Reshape(y, status)``.

    Each output's status is its own shape, or ``[2, error id]`` when the kernel failed, which the empty stand-in
    cannot take: the ``Reshape`` on the data path (free in ORT) fails the run right after the failed kernel, so no
    later node sees the stand-in, no optimizer can drop the check, and ``InferenceSession`` raises the recorded
    error. List attributes
    travel as int64 constant inputs, a shape-only input (``like_arg``) as its ``Shape``. A value of a type the
    bridge cannot carry travels as the type that holds it exactly (float16/float8 as float32, int4 as int8:
    ``Cast`` there and back), and a value of a rank numpy may not hold first passes a check (``_rank_checked``).
    """

    def __init__(self, op: str, mode: str, quiet: bool, max_output_bytes: int | None) -> None:
        self.op, self.mode = op, mode
        self.quiet, self.max_output_bytes = int(quiet), max_output_bytes

    def check(self, bound: Bound) -> str | None:
        return None  # what the bridge cannot carry depends on the opset: ``rewrite`` says so

    @staticmethod
    def _value_inputs(bound: Bound) -> list[int]:
        return [i for i, formal in enumerate(bound.spec.inputs) if formal.type_param != "T_SHAPE"
                and not formal.shape_only]

    def _operands(self, emit: Emitter, bound: Bound) -> list[str]:
        operands = []
        for i, formal in enumerate(bound.spec.inputs):
            name = bound.inputs[i]
            if formal.shape_only:
                operands.append(emit.shape(name))
            elif formal.type_param != "T_SHAPE":
                elem = bound.types[i]
                carrier = carrier_type(elem) if elem is not None else None
                value = emit.cast(name, carrier) if carrier is not None and carrier != elem else name
                operands.append(self._rank_checked(emit, bound, i, value))
            elif name:
                operands.append(name if bound.is_int64(i) else emit.cast_i64(name))
            else:  # the ORT form of a list attribute (``shape_input`` carries ``shape``), else empty
                attr = formal.name.removesuffix("_input")
                operands.append(emit.const_i64(bound.attrs.get(attr, ()), f"{attr}_in"))
        return operands

    def _rank_checked(self, emit: Emitter, bound: Bound, i: int, value: str) -> str:
        """The value input ``i`` (``value``, of the carried type) checked to have a rank the kernel takes.

        The bridge aborts the process on a value of more dims than numpy makes (64; numpy 1: 32). A rank unknown
        until run time fails a check in standard ops when over 64: an ``Expand`` of the value, on the carried type,
        which ORT's Expand takes (bfloat16 not). With numpy 1 such a rank, and with any numpy a known rank over its
        limit (a ``Reshape`` to a constant shape of rank 65), passes ``RankCheck`` instead: the value is reshaped
        to the shape it gives back, its own or a failure shape carrying the recorded error, which names the rule.
        """
        rank = bound.rank(i)
        if (rank is None and NUMPY_MAX_DIMS < MAX_RANK) or (rank is not None and rank > NUMPY_MAX_DIMS):
            (checked,) = emit.custom(RANK_CHECK, GUARDED_DOMAIN, [emit.shape(value)], [None], op=self.op,
                                     node=bound.label, quiet=self.quiet, mode=self.mode,
                                     mode_attr=bound.spec.mode_attr, input=bound.spec.inputs[i].name)
            return emit.reshape(value, checked, may_hold_zero=False)  # its own shape: a 0 there is its own 0
        return emit.rank_checked(value) if rank is None else value

    def rewrite(self, emit: Emitter, bound: Bound) -> None:
        for i in self._value_inputs(bound):
            problem = carrier_problem(bound.types[i], emit.opset) if bound.types[i] is not None else None
            if problem is not None:
                raise emit.fail(problem)
        out_type = bound.types[0] if bound.spec.output_type_param == bound.spec.inputs[0].type_param else None
        carrier = carrier_type(out_type) if out_type is not None else None
        cast_back = carrier is not None and carrier != out_type
        n = len(bound.outputs)
        raws = [emit.names(f"{bound.label}_raw") for _ in bound.outputs]
        scalar_attrs = {a.name: bound.attrs[a.name] for a in bound.spec.attrs if a.kind != "ints"}
        results = emit.custom(self.op, GUARDED_DOMAIN, self._operands(emit, bound), [*raws, *[None] * n],
                              op=self.op, node=bound.label, quiet=self.quiet,
                              max_output_bytes=_limit_attr(self.max_output_bytes), **scalar_attrs)
        for raw, status, out in zip(raws, results[n:], bound.outputs, strict=True):
            # the status is the output's own shape: a 0 there, read as "copy" before opset 14, copies that 0
            if cast_back:
                emit.cast(emit.reshape(raw, status, may_hold_zero=False), out_type, out)
            else:
                emit.reshape(raw, status, out, may_hold_zero=False)


class CheckedBroadcast:
    """``Broadcast/Expand(x, s, a) -> Expand(Reshape(x, aligned), out)``, where ``(aligned, out)`` is
    ``BroadcastCheck<onnx_bcast.ort>(Shape(x), int64(s), int64(a))``.

    The check runs the op's numpy kernel on a zero-copy stand-in of ``x``'s shape and dtype (every rule and limit,
    the same errors) and gives the shape ``x`` takes for ONNX's ``Expand`` and the output shape, or a failure shape
    ``x`` cannot take (carrying the error id), so that the ``Reshape`` fails the run right after the check. ORT's
    ``Expand`` then writes the output once; no data passes through Python. A data type ORT's ``Expand`` lacks, or
    one not known, runs the guarded kernel (``GuardedKernel``), which moves the data itself.
    """

    def __init__(self, op: str, mode: str, quiet: bool, max_output_bytes: int | None) -> None:
        self.op, self.mode = op, mode
        self.quiet, self.max_output_bytes = int(quiet), max_output_bytes
        self.kernel = GuardedKernel(op, mode, quiet, max_output_bytes)

    def check(self, bound: Bound) -> str | None:
        return None

    def rewrite(self, emit: Emitter, bound: Bound) -> None:
        elem = bound.types[0]
        if elem not in EXPAND_TYPES or emit.opset < 8:
            self.kernel.rewrite(emit, bound)
            return
        data, target, axes = (list(bound.inputs) + ["", ""])[:3]
        shapes = [name if not name or bound.is_int64(i) else emit.cast_i64(name)
                  for i, name in ((1, target), (2, axes))]
        aligned, out = emit.custom(BROADCAST_CHECK, GUARDED_DOMAIN,
                                   [emit.shape(data), shapes[0], shapes[1] or emit.const_i64((), "no_axes")],
                                   [None, None], op=self.op, node=bound.label, quiet=self.quiet,
                                   mode=str(bound.attrs["mode"]), axis=int(bound.attrs["axis"]),
                                   allowzero=int(emit.allowzero), elem_type=elem,
                                   max_output_bytes=_limit_attr(self.max_output_bytes))
        emit.expand(emit.reshape(data, aligned, may_hold_zero=emit.allowzero), out, bound.output)


class CheckedElementwise:
    """``Op<auto_broadcast>(A, B) -> Op(A, Reshape(B, ElementwiseCheck<onnx_bcast.ort>(Shape(A), Shape(B))))``.

    ORT's standard op does the arithmetic. With static shapes the rule is checked here and the standard rule's
    ``Squeeze``/``Unsqueeze`` align B; otherwise the check gives, at run time, the shape B takes for numpy
    broadcasting, or a shape B cannot take (carrying the error id) so that the ``Reshape`` fails the run. Where
    ORT's standard op cannot serve (no kernel for the type, a type the model's opset predates, float ``Mod`` with
    fmod=0 before opset 28, or signed ``Div`` that traps on INT_MIN / -1) our numpy kernel runs instead, as a
    guarded kernel (``GuardedKernel``): the same values, as ORT computes them.
    """

    def __init__(self, op: str, mode: str, quiet: bool, max_output_bytes: int | None) -> None:
        self.op, self.mode = op, mode
        self.quiet, self.max_output_bytes = int(quiet), max_output_bytes
        self.standard = ElementwiseRule(op, mode)
        self.kernel = GuardedKernel(op, mode, quiet, max_output_bytes)

    def _native(self, emit: Emitter, bound: Bound) -> bool:
        return native_elementwise_runs(self.op, bound.types[0], bound.types[1], emit.opset, bound.attrs)

    def check(self, bound: Bound) -> str | None:
        return None  # what the standard op cannot do, the numpy kernel does

    def rewrite(self, emit: Emitter, bound: Bound) -> None:
        allowed = dict(bound.spec.type_constraints)[bound.spec.inputs[0].type_param]
        if bound.types[0] is not None and f"tensor({type_name(bound.types[0])})" not in allowed:
            raise emit.fail(f"takes the standard {self.op}'s types; {type_name(bound.types[0])} is not one of them")
        if not self._native(emit, bound):
            self.kernel.rewrite(emit, bound)
            return
        if _static(bound):
            if bound.types[0]:
                dtype = helper.tensor_dtype_to_np_dtype(bound.types[0])
                try:
                    check_output_size(self.op, self.mode, bound.out_shape, dtype, self.max_output_bytes,
                                      mode_attr="auto_broadcast")
                except BroadcastError as err:
                    raise err.with_node(bound.label) from None
            self.standard.rewrite(emit, bound)
            return
        form = emit.elementwise_form(self.op, bound.types[0])
        a, b = bound.inputs
        (aligned,) = emit.custom(ELEMENTWISE_CHECK, GUARDED_DOMAIN, [emit.shape(a), emit.shape(b)], [None],
                                 op=self.op, node=bound.label, quiet=self.quiet, auto_broadcast=self.mode,
                                 axis=int(bound.attrs["axis"]), allowzero=int(emit.allowzero),
                                 elem_type=bound.types[0] or 0, max_output_bytes=_limit_attr(self.max_output_bytes))
        # before opset 14 the check gives a zero-size aligned B a shape without 0s (the attribute allowzero tells it)
        self.standard.emit_standard(emit, bound, emit.reshape(b, aligned, may_hold_zero=emit.allowzero), form)


def _static(bound: Bound) -> bool:
    """Both operands' shapes known: the rule is checked here, not at run time."""
    return bound.static_shape(0) is not None and bound.static_shape(1) is not None


@functools.cache
def ort_rule_set(quiet: bool = False, max_output_bytes: int | None = None) -> RuleSet:
    """The rule set of ``prepare``: kernel errors raised by the caller (``quiet``) or logged; the output limit."""
    rules = {}
    for spec in OP_SPECS:
        if spec.family == "elementwise":
            for mode in AUTO_BROADCAST_RULES:
                rules[(spec.name, mode)] = CheckedElementwise(spec.name, mode, quiet, max_output_bytes)
        elif spec.name in EXPANDED_OPS:
            for mode in MODES:
                rules[(spec.name, mode)] = CheckedBroadcast(spec.name, mode, quiet, max_output_bytes)
        else:
            modes = {"mode": MODES, "auto_broadcast": AUTO_BROADCAST_RULES}[spec.mode_attr]
            for mode in modes if spec.mode_attr in spec.defaults() else ("",):
                rules[(spec.name, mode)] = GuardedKernel(spec.name, mode, quiet, max_output_bytes)
    return RuleSet("ONNX Runtime", rules, inline_functions=True, default_opset=lambda _: DEFAULT_OPSET)
