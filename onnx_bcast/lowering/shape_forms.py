"""The emitter's shape forms: reshapes exact for zero-size dims at every opset, and shape arithmetic at run time."""

from __future__ import annotations

from collections.abc import Sequence

from onnx import TensorProto, helper

from onnx_bcast.ops.common import zeros_inferred_dims


class ShapeForms:
    """The shape forms of ``Emitter`` (its base): built from its op methods (``standard``, ``const_i64``, ...)."""

    def reshape(self, x: str, shape: str, output: str | None = None, may_hold_zero: bool = True) -> str:
        """``Reshape(x, shape)`` with a 0 in ``shape`` meaning a zero-size dim: ``allowzero`` from opset 14; before
        it (a 0 there copies the input's dim), a shape that may hold a 0 is applied as
        ``Expand(Reshape(x, zeros_inferred(shape)), shape)``, exact for the empty ``x`` such a shape reshapes."""
        self.require(5, "Reshape with a shape input")
        if may_hold_zero and self.allowzero:
            return self._node("Reshape", [x, shape], output, allowzero=1)
        constant = self.known_constants.get(shape)
        if not may_hold_zero or (constant is not None and 0 not in constant):
            return self._node("Reshape", [x, shape], output)
        if constant is not None:
            flat = self._node("Reshape", [x, self.const_i64(zeros_inferred_dims(constant), "shape_inferred")], None)
        else:
            flat = self._node("Reshape", [x, self.zeros_inferred(shape)], None)
        self.require(8, "Expand")
        return self._node("Expand", [flat, shape], output)

    def zeros_inferred(self, shape: str) -> str:
        """A run-time int64 shape for a ``Reshape`` before opset 14 (a 0 there copies the input's dim) of data that
        an ``Expand`` to the real target follows: the first 0 becomes -1, which ``Reshape`` infers as 0 (the data
        is empty), and any other 0 becomes 1, which the ``Expand`` stretches to the target's 0."""
        self.require(11, "zero-size data with run-time shapes (CumSum)")
        zero, one = self.const_i64([0], "zero"), self.const_i64([1], "one")
        is_zero = self.standard("Equal", [shape, zero])
        axis = self.standard("Constant", [], value=helper.make_tensor("axis", TensorProto.INT64, [], [0]))  # 0-d
        count = self.standard("CumSum", [self.cast_i64(is_zero), axis])
        first = self.standard("And", [is_zero, self.standard("Equal", [count, one])])
        ones = self.standard("Where", [is_zero, one, shape])
        return self.standard("Where", [first, self.const_i64([-1], "minus_one"), ones])

    def ones_like_shape(self, shape: str) -> str:
        self.require(9, "ConstantOfShape")
        one = helper.make_tensor("one", TensorProto.INT64, [1], [1])
        return self._node("ConstantOfShape", [shape], None, value=one)

    def prefix(self, values: str, length_of: str) -> str:
        """``values[:len(length_of)]`` for 1-D tensors, with the length known only at run time."""
        self.require(10, "Slice with tensor bounds")
        length = self._node("Shape", [length_of], None)
        return self._node("Slice", [values, self.const_i64([0], "zero"), length], None)

    def nonzero(self, mask: str, minus_one: str | None = None) -> str:
        """The indices where the 1-D ``mask`` is true, a 1-D int64 tensor (``NonZero``, flattened by a ``Reshape``
        to ``minus_one``, an int64 [-1]: made here when not given)."""
        where = self._node("NonZero", [mask], None)
        return self.reshape(where, minus_one or self.const_i64([-1], "flat"), may_hold_zero=False)

    def scatter(self, data: str, indices: str, updates: str) -> str:
        self.require(11, "ScatterElements (runtime explicit axes)")
        return self._node("ScatterElements", [data, indices, updates], None, axis=0)

    def zeros_where_empty(self, none: str, static_out: Sequence[int]) -> str:
        """``none`` (shape ``[0]``) as a tensor of ``static_out``'s rank, 0 wherever ``static_out`` holds a 0 and 1
        elsewhere: ONNX Runtime's symbolic shape inference ignores ``allowzero`` and reads a 0 in a ``Reshape``'s
        shape as the input's dim there (an ``IndexError`` past a 1-D input's rank)."""
        zeros = [k for k, d in enumerate(static_out) if d == 0]
        if len(static_out) == 1:
            return none
        lifted = self.unsqueeze(none, [k for k in range(len(static_out)) if k != zeros[0]])
        if len(zeros) == 1:
            return lifted
        rest = self.const_i64([0] * (len(zeros) - 1), "zero_ends")
        return self._node("Slice", [lifted, rest, rest, self.const_i64(zeros[1:], "zero_axes")], None)

    def expand_to_zeros(self, x: str, target: Sequence[int], output: str | None, token: str | None = None) -> str:
        """``Expand(x, target)`` for a constant ``target`` with a 0 dim while the output shape is not known:
        ``Slice(Expand(x, target with 1 for 0), 0:0 on those axes)``. ONNX Runtime's ExpandElimination (basic level
        and up) removes an ``Expand`` whose constant target dims are each at most 1 or x's, so the plain form gave
        x's 1 where the target says 0 (fuzz seed 17, case 5512, ``guards=False`` and the native backend). The axes
        count from the end, as Expand aligns (Slice-1 takes them too in ONNX Runtime, onnx and OpenVINO).

        ``token``: a guard's ``[0]``, the zero-size dims' end in place of a constant 0 (one each): the output's shape
        then depends on the check, so no tool folds the empty result and the check with it, and with the check
        proven (onnxsim with the input shapes fixed) what is left is no ``Expand`` to a 0 (fuzz seed 22, case
        5372). Not for a rule that the ``Expand`` itself checks (bidirectional): ``Guard.tie_expand``."""
        ones = self._node("Expand", [x, self.const_i64([d if d != 0 else 1 for d in target], "shape_nonzero")],
                          None)
        axes = [k - len(target) for k, d in enumerate(target) if d == 0]
        if token is not None:
            self.require(10, "a run-time check of a broadcast to a constant shape with a 0")
            ends = token if len(axes) == 1 else self._node("Expand", [token, self.const_i64([len(axes)], "count")],
                                                           None)
            starts = self.const_i64([0] * len(axes), "starts")
            return self._node("Slice", [ones, starts, ends, self.const_i64(axes, "slice_axes")], output)
        if self.opset < 10:
            return self._node("Slice", [ones], output, starts=[0] * len(axes), ends=[0] * len(axes), axes=axes)
        zeros = self.const_i64([0] * len(axes), "starts")
        return self._node("Slice", [ones, zeros, zeros, self.const_i64(axes, "slice_axes")], output)
