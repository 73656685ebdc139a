"""One case table for every onnx_bcast op family, with expected outputs from an oracle written here from SPEC §2.

The oracle never calls onnx_bcast: it decides validity by the rules of SPEC §2, computes the output shape, and fills
the output element by element (a brute-force loop over output indices, mapping each to its source element and, for
elementwise ops, applying the standard op's scalar arithmetic in plain Python). A case marked ``invalid`` must also be
invalid for the oracle, a valid one valid: the hand marking and the oracle check each other when the table is built.
"""

from __future__ import annotations

import itertools
import math
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.numpy_dims import ARRAY_DIMS

DOMAIN = "onnx_bcast"
BROADCAST_OPS = ("Broadcast", "Expand")
BROADCAST_MODES = ("numpy", "explicit", "bidirectional", "pdpd")
V0_OPS = ("BroadcastV0", "BroadcastLikeV0")
ARITHMETIC_OPS = ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod")
COMPARISON_OPS = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")
LOGICAL_OPS = ("And", "Or", "Xor")
ELEMENTWISE_OPS = ARITHMETIC_OPS + COMPARISON_OPS + LOGICAL_OPS
ELEMENTWISE_RULES = ("none", "numpy", "pdpd")
BACKPROP_OPS = ("BroadcastBackprop", "BroadcastV0Backprop", "Unbroadcast")
MAX_RANK = 64

# every (op, mode) pair the table must cover; mode "" for the nGraph v0 ops
OP_MODES: tuple[tuple[str, str], ...] = (
    tuple((op, m) for op in BROADCAST_OPS for m in BROADCAST_MODES)
    + tuple((op, "") for op in V0_OPS)
    + tuple((op, r) for op in ELEMENTWISE_OPS for r in ELEMENTWISE_RULES)
    + tuple(("BroadcastBackprop", m) for m in BROADCAST_MODES) + (("BroadcastV0Backprop", ""),)
    + tuple(("Unbroadcast", r) for r in ELEMENTWISE_RULES)
)
INTS_ATTRS = ("shape", "broadcast_axes", "initial_broadcast_axes")


class Invalid(Exception):
    """The oracle's verdict: SPEC §2 rejects these inputs."""


# ---------------------------------------------------------------------------------------------------------------------
# The oracle
# ---------------------------------------------------------------------------------------------------------------------

def _gather(out_shape: tuple[int, ...], dtype: Any, value_at) -> np.ndarray:
    """An array of ``out_shape`` whose element at each output index ``o`` is ``value_at(o)``."""
    out = np.empty(out_shape, dtype=dtype)
    for o in itertools.product(*(range(n) for n in out_shape)):
        out[o] = value_at(o)
    return out


def _copy_from(data: np.ndarray, out_shape: tuple[int, ...], src_axes: list[int]) -> np.ndarray:
    """out[o] = data[i] with i[k] = 0 where data dim k is 1, else o[src_axes[k]] (data axis k lands on src_axes[k])."""
    d = data.shape
    return _gather(out_shape, data.dtype,
                   lambda o: data[tuple(0 if d[k] == 1 else o[src_axes[k]] for k in range(len(d)))])


def _check_target(t: tuple[int, ...]) -> None:
    if len(t) > MAX_RANK:
        raise Invalid("rank over 64")
    if any(x < 0 for x in t):
        raise Invalid("negative target dim")


def oracle_broadcast(data: np.ndarray, target: Any, axes: Any, *, mode: str, axis: int) -> np.ndarray:
    """Broadcast/Expand of SPEC §2 (``axes`` None: no axes_mapping input)."""
    d, t = data.shape, tuple(int(x) for x in np.asarray(target).reshape(-1))
    r, big_r = len(d), len(t)
    _check_target(t)
    mode = mode.lower()
    mode = "explicit" if mode == "none" else mode
    if mode not in BROADCAST_MODES:
        raise Invalid("unknown mode")
    if mode != "explicit" and axes is not None:
        raise Invalid("axes_mapping outside explicit mode")
    if mode == "numpy":
        if big_r < r:
            raise Invalid("target rank smaller than data rank")
        for k in range(r):
            if d[k] != 1 and d[k] != t[k + big_r - r]:
                raise Invalid("dim mismatch")
        return _copy_from(data, t, [k + big_r - r for k in range(r)])
    if mode == "bidirectional":
        rank = max(r, big_r)
        dp, tp = (1,) * (rank - r) + d, (1,) * (rank - big_r) + t
        out = []
        for x, y in zip(dp, tp, strict=True):
            if x != y and x != 1 and y != 1:
                raise Invalid("dim mismatch")
            out.append(y if x == 1 else x)
        return _copy_from(data, tuple(out), [k + rank - r for k in range(r)])
    if mode == "explicit":
        if axes is None:
            raise Invalid("explicit mode needs axes_mapping")
        a = [int(x) for x in np.asarray(axes).reshape(-1)]
        if r == 0:
            if len(a) > 1 or (a and not (0 <= a[0] < big_r and t[a[0]] == 1)):
                raise Invalid("scalar axes_mapping")
            return _copy_from(data, t, [])
        if len(a) != r or any(a[i] >= a[i + 1] for i in range(r - 1)) or any(not 0 <= x < big_r for x in a):
            raise Invalid("axes_mapping")
        if any(d[i] != 1 and d[i] != t[a[i]] for i in range(r)):
            raise Invalid("dim mismatch")
        return _copy_from(data, t, a)
    # pdpd
    start = big_r - r if axis == -1 else axis
    if not 0 <= start <= big_r or r != big_r - start:
        raise Invalid("pdpd axis / coverage")
    out = list(t)
    for k in range(r):
        x, y = d[k], t[start + k]
        if x == 1:
            out[start + k] = y
        elif y == 1 or x == y:
            out[start + k] = x
        else:
            raise Invalid("dim mismatch")
    return _copy_from(data, tuple(out), [start + k for k in range(r)])


def oracle_broadcast_v0(arg: np.ndarray, shape: Any, broadcast_axes: Any) -> np.ndarray:
    """nGraph v0 Broadcast: ``shape`` without ``broadcast_axes`` equals arg's shape exactly."""
    t, axes = tuple(int(x) for x in shape), [int(x) for x in broadcast_axes]
    _check_target(t)
    if any(not 0 <= x < len(t) for x in axes) or len(set(axes)) != len(axes):
        raise Invalid("broadcast_axes")
    kept = [i for i in range(len(t)) if i not in axes]
    if tuple(t[i] for i in kept) != arg.shape:
        raise Invalid("shape without broadcast_axes differs from arg")
    return _gather(t, arg.dtype, lambda o: arg[tuple(o[i] for i in kept)])


def oracle_broadcast_like_v0(arg: np.ndarray, like: np.ndarray, initial_broadcast_axes: Any = ()) -> np.ndarray:
    """nGraph v0 BroadcastLike: like's shape; axes given, or deduced left-aligned."""
    axes = [int(x) for x in initial_broadcast_axes]
    if not axes:
        axes = [i for i, n in enumerate(like.shape) if i >= arg.ndim or (arg.shape[i] == 1 and n > 1)]
    return oracle_broadcast_v0(arg, like.shape, axes)


def _trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _scalar(op: str, x: Any, y: Any, fmod: int) -> Any:
    """The standard ONNX op on two Python scalars (ints for integer tensors, floats for float tensors)."""
    if op == "Add":
        return x + y
    if op == "Sub":
        return x - y
    if op == "Mul":
        return x * y
    if op == "Div":
        return _trunc_div(x, y) if isinstance(x, int) else x / y
    if op == "Pow":
        return x**y
    if op == "Max":
        return max(x, y)
    if op == "Min":
        return min(x, y)
    if op == "Mod":
        if isinstance(x, float):
            assert fmod, "ONNX Mod of floats needs fmod=1"
            return math.fmod(x, y)
        return x - _trunc_div(x, y) * y if fmod else x % y  # fmod=0: floor-mod, the sign of the divisor
    if op == "Equal":
        return x == y
    if op == "Less":
        return x < y
    if op == "LessOrEqual":
        return x <= y
    if op == "Greater":
        return x > y
    if op == "GreaterOrEqual":
        return x >= y
    if op == "And":
        return x and y
    if op == "Or":
        return x or y
    if op == "Xor":
        return x != y
    raise AssertionError(op)


def output_dtype(op: str, dtype: Any) -> np.dtype:
    """The element type of an op's output for input element type ``dtype``."""
    return np.dtype(np.bool_) if op in COMPARISON_OPS or op in LOGICAL_OPS else np.dtype(dtype)


def oracle_elementwise(op: str, a: np.ndarray, b: np.ndarray, *, auto_broadcast: str = "numpy", axis: int = -1,
                       fmod: int = 0) -> np.ndarray:
    """An elementwise op of SPEC §2 under none/numpy/pdpd: shape rule, index mapping, scalar arithmetic."""
    rule = auto_broadcast.lower()
    rule = "none" if rule == "explicit" else rule
    sa, sb = a.shape, b.shape
    ra, rb = len(sa), len(sb)
    if rule == "none":
        if sa != sb:
            raise Invalid("shapes differ")
        out_shape = sa

        def a_index(o):
            return o

        def b_index(o):
            return o
    elif rule == "numpy":
        rank = max(ra, rb)
        ap, bp = (1,) * (rank - ra) + sa, (1,) * (rank - rb) + sb
        if any(x != y and x != 1 and y != 1 for x, y in zip(ap, bp, strict=True)):
            raise Invalid("not multidirectionally broadcastable")
        out_shape = tuple(y if x == 1 else x for x, y in zip(ap, bp, strict=True))

        def a_index(o):
            return tuple(0 if sa[k] == 1 else o[k + rank - ra] for k in range(ra))

        def b_index(o):
            return tuple(0 if sb[k] == 1 else o[k + rank - rb] for k in range(rb))
    elif rule == "pdpd":
        if rb > ra:
            raise Invalid("rank(B) > rank(A)")
        start = ra - rb if axis == -1 else axis
        if start < 0:
            raise Invalid("axis below -1")
        kept = rb
        while kept and sb[kept - 1] == 1:
            kept -= 1
        if start + kept > ra:
            raise Invalid("trimmed B does not fit")
        for k in range(kept):
            if sb[k] != 1 and sb[k] != sa[start + k]:
                raise Invalid("B dim neither 1 nor A's")
        out_shape = sa

        def a_index(o):
            return o

        def b_index(o):
            return tuple(o[start + k] if k < kept and sb[k] != 1 else 0 for k in range(rb))
    else:
        raise Invalid("unknown auto_broadcast")
    if a.dtype != b.dtype and op != "Pow":
        raise Invalid("element types differ")
    out_dtype = output_dtype(op, a.dtype)
    return _gather(out_shape, out_dtype, lambda o: _scalar(op, a[a_index(o)].item(), b[b_index(o)].item(), fmod))


def _adjoint(delta: np.ndarray, source: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The sum of ``delta`` over the output positions whose source (a flat index into ``shape``) is each element;
    16-bit floats summed in float32 and rounded once, integers in their own type (wrapping)."""
    if source.shape != delta.shape:
        raise Invalid(f"delta {delta.shape} is not the forward output {source.shape}")
    acc = np.float32 if delta.dtype == np.float16 else delta.dtype
    total = np.zeros(math.prod(shape), dtype=acc)
    np.add.at(total, source.reshape(-1), delta.reshape(-1).astype(acc))
    return total.astype(delta.dtype).reshape(shape)


def _positions(shape: tuple[int, ...]) -> np.ndarray:
    """Each element's own flat index: broadcast it forward to learn every output position's source."""
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)


def oracle_backprop(op: str, attrs: dict, inputs: tuple[np.ndarray, ...]) -> np.ndarray | tuple[np.ndarray, ...]:
    """The adjoint of the forward op, brute force: forward-broadcast each element's index, then sum ``delta`` per
    source index. The forward target is ``delta``'s shape; a forward output of another shape is invalid."""
    delta = inputs[0]
    if op == "BroadcastBackprop":
        d = tuple(int(x) for x in inputs[1])
        if any(x < 0 for x in d):
            raise Invalid("negative data_shape dim")
        axes = inputs[2] if len(inputs) > 2 else None
        source = oracle_broadcast(_positions(d), delta.shape, axes, mode=attrs.get("mode", "numpy"),
                                  axis=attrs.get("axis", -1))
        return _adjoint(delta, source, d)
    if op == "BroadcastV0Backprop":
        axes = [int(a) for a in attrs["broadcast_axes"]]
        if any(not 0 <= a < delta.ndim for a in axes) or len(set(axes)) != len(axes):
            raise Invalid("broadcast_axes")
        kept = tuple(n for i, n in enumerate(delta.shape) if i not in axes)
        return _adjoint(delta, oracle_broadcast_v0(_positions(kept), delta.shape, axes), kept)
    a, b = (tuple(int(x) for x in v) for v in inputs[1:3])
    if any(x < 0 for x in a + b):
        raise Invalid("negative dim")
    rule = {k: v for k, v in attrs.items() if k in ("auto_broadcast", "axis")}
    from_a = oracle_elementwise("Add", _positions(a), np.zeros(b, np.int64), **rule)  # A's index at each output
    from_b = oracle_elementwise("Add", np.zeros(a, np.int64), _positions(b), **rule)
    return _adjoint(delta, from_a, a), _adjoint(delta, from_b, b)


def oracle(op: str, attrs: dict, inputs: tuple[np.ndarray, ...]) -> np.ndarray | tuple[np.ndarray, ...]:
    """The expected output (a tuple for several) of one node (raises Invalid)."""
    if op in BACKPROP_OPS:
        return oracle_backprop(op, attrs, inputs)
    if op in BROADCAST_OPS:
        default_mode = "numpy" if op == "Broadcast" else "bidirectional"
        axes = inputs[2] if len(inputs) > 2 else None
        return oracle_broadcast(inputs[0], inputs[1], axes, mode=attrs.get("mode", default_mode),
                                axis=attrs.get("axis", -1))
    if op == "BroadcastV0":
        return oracle_broadcast_v0(inputs[0], attrs["shape"], attrs["broadcast_axes"])
    if op == "BroadcastLikeV0":
        return oracle_broadcast_like_v0(inputs[0], inputs[1], attrs.get("initial_broadcast_axes", ()))
    return oracle_elementwise(op, inputs[0], inputs[1], **attrs)


# ---------------------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Case:
    """One node: op, attributes, inputs; ``expected`` is the oracle's output, None when the case must fail."""

    name: str
    op: str
    attrs: dict[str, Any]
    inputs: tuple[np.ndarray, ...]
    expected: np.ndarray | tuple[np.ndarray, ...] | None  # a tuple for several outputs
    error_words: tuple[str, ...] = field(default_factory=tuple)

    @property
    def valid(self) -> bool:
        return self.expected is not None

    @property
    def mode(self) -> str:
        """The canonical mode of the case: broadcast mode, elementwise auto_broadcast, or "" for the v0 ops."""
        if self.op in BROADCAST_OPS:
            default = "numpy" if self.op == "Broadcast" else "bidirectional"
            return canonical_mode(self.op, self.attrs.get("mode", default))
        if self.op in ELEMENTWISE_OPS or self.op == "Unbroadcast":
            return canonical_mode(self.op, self.attrs.get("auto_broadcast", "numpy"))
        if self.op == "BroadcastBackprop":
            return canonical_mode(self.op, self.attrs.get("mode", "numpy"))
        return ""

    @property
    def input_names(self) -> tuple[str, ...]:
        if self.op in BROADCAST_OPS:
            return ("data", "target_shape", "axes_mapping")[: len(self.inputs)]
        if self.op == "BroadcastV0":
            return ("arg",)
        if self.op == "BroadcastLikeV0":
            return ("arg", "like_arg")
        if self.op in BACKPROP_OPS:
            return {"BroadcastBackprop": ("delta", "data_shape", "axes_mapping"), "BroadcastV0Backprop": ("delta",),
                    "Unbroadcast": ("delta", "a_shape", "b_shape")}[self.op][: len(self.inputs)]
        return ("A", "B")

    @property
    def shape_input_count(self) -> int:
        """How many trailing inputs are shape-like (target_shape, axes_mapping): initializers of the static model."""
        return len(self.inputs) - 1 if self.op in BROADCAST_OPS + ("BroadcastBackprop", "Unbroadcast") else 0

    @property
    def output_dtype(self) -> np.dtype:
        return output_dtype(self.op, self.inputs[0].dtype)

    @property
    def node_name(self) -> str:
        return f"n_{self.name}"


def sample(shape: tuple[int, ...], dtype: Any = np.float32, seed: str = "") -> np.ndarray:
    """Distinct values (bool: a pattern) so that a misplaced element shows; negatives for signed types."""
    n = math.prod(shape)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        bits = np.random.default_rng(zlib.crc32(seed.encode())).integers(0, 2, size=n)
        return bits.astype(np.bool_).reshape(shape)
    values = np.arange(n) + 1
    if np.issubdtype(dtype, np.signedinteger) or np.issubdtype(dtype, np.floating):
        values = values - n // 2
    if np.issubdtype(dtype, np.floating):
        values = values * 0.5
    return values.astype(dtype).reshape(shape)


def _ints(values: Any, dtype: Any = np.int64) -> np.ndarray:
    return np.array(list(values), dtype=dtype).reshape(-1)


CASES: list[Case] = []
# valid cases whose output numpy cannot make (numpy 1: more than 32 dims), left out of CASES: (name, output rank)
LEFT_OUT_BY_NUMPY: list[tuple[str, int]] = []


def _add(name: str, op: str, attrs: dict, inputs: tuple[np.ndarray, ...], invalid: tuple[str, ...] | None) -> None:
    assert all(c.name != name for c in CASES), name
    try:
        expected = oracle(op, attrs, inputs)
    except Invalid as verdict:
        assert invalid is not None, f"{name}: the oracle rejects a case marked valid ({verdict})"
        CASES.append(Case(name, op, attrs, inputs, None, invalid))
        return
    assert invalid is None, f"{name}: the oracle accepts a case marked invalid"
    CASES.append(Case(name, op, attrs, inputs, expected))


def bcast(name: str, op: str, data_shape: tuple[int, ...], target: tuple[int, ...], axes: tuple[int, ...] | None = None,
          *, dtype: Any = np.float32, index_dtype: Any = np.int64, invalid: tuple[str, ...] | None = None,
          **attrs: Any) -> None:
    """A Broadcast/Expand case: data of ``data_shape``, target_shape (and axes_mapping) of ``index_dtype``."""
    if invalid is None and len(target) > ARRAY_DIMS:  # the output has at least the target's rank
        LEFT_OUT_BY_NUMPY.append((name, len(target)))
        return
    inputs = (sample(data_shape, dtype, name), _ints(target, index_dtype))
    if axes is not None:
        inputs += (_ints(axes, index_dtype),)
    _add(name, op, attrs, inputs, invalid)


# Broadcast, mode numpy
bcast("bc_numpy_31_to_236", "Broadcast", (3, 1), (2, 3, 6), mode="numpy")
bcast("bc_numpy_default_mode", "Broadcast", (3,), (2, 3))
bcast("bc_numpy_scalar_to_23_int64", "Broadcast", (), (2, 3), dtype=np.int64, mode="numpy")
bcast("bc_numpy_scalar_scalar_bool", "Broadcast", (), (), dtype=np.bool_, mode="numpy")
bcast("bc_numpy_1_to_30", "Broadcast", (1,), (3, 0), mode="numpy")
bcast("bc_numpy_float16_int32_target", "Broadcast", (2, 1), (2, 2, 3), dtype=np.float16, index_dtype=np.int32,
      mode="NumPy")
bcast("bc_numpy_rank64", "Broadcast", (2,), (1,) * 63 + (2,), mode="numpy")
bcast("bc_numpy_dim_mismatch", "Broadcast", (2, 3), (2, 4), mode="numpy",
      invalid=("Broadcast(mode=numpy)", "data dim 1 (size 3)", "target dim 1 (size 4)"))
bcast("bc_numpy_rank_too_small", "Broadcast", (2, 3), (3,), mode="numpy", invalid=("rank", "(2, 3)"))
bcast("bc_numpy_negative_target", "Broadcast", (1,), (2, -1), mode="numpy", invalid=("negative",))
bcast("bc_numpy_rank65", "Broadcast", (), (1,) * 65, mode="numpy", invalid=("64", "65"))
# Broadcast, mode explicit
bcast("bc_explicit_3_to_132", "Broadcast", (3,), (1, 3, 2), (1,), mode="explicit")
bcast("bc_explicit_stretch_31_to_233", "Broadcast", (3, 1), (2, 3, 3), (1, 2), mode="explicit")
bcast("bc_explicit_gap_int64_int32_axes", "Broadcast", (2, 3), (2, 4, 3), (0, 2), dtype=np.int64,
      index_dtype=np.int32, mode="explicit")
bcast("bc_explicit_scalar_no_axes", "Broadcast", (), (2, 3), (), mode="explicit")
bcast("bc_explicit_scalar_one_axis_bool", "Broadcast", (), (1, 2), (0,), dtype=np.bool_, mode="explicit")
bcast("bc_explicit_1_to_02", "Broadcast", (1,), (0, 2), (0,), mode="explicit")
bcast("bc_explicit_none_alias", "Broadcast", (2,), (2, 3), (0,), mode="NONE")
bcast("bc_explicit_not_increasing", "Broadcast", (3, 2), (2, 3), (1, 0), mode="explicit",
      invalid=("strictly increasing",))
bcast("bc_explicit_axis_outside", "Broadcast", (3,), (3,), (1,), mode="explicit", invalid=("outside", "[0]=1"))
bcast("bc_explicit_no_axes_mapping", "Broadcast", (3,), (2, 3), mode="explicit", invalid=("axes_mapping", "required"))
bcast("bc_explicit_scalar_no_axes_mapping", "Broadcast", (), (2, 3), mode="explicit",
      invalid=("axes_mapping", "required"))
bcast("bc_explicit_scalar_axis_not_1", "Broadcast", (), (2, 2), (0,), mode="explicit", invalid=("size 1",))
# Broadcast, mode bidirectional
bcast("bc_bidi_31_to_216", "Broadcast", (3, 1), (2, 1, 6), mode="bidirectional")
bcast("bc_bidi_grows_beyond_target_int64", "Broadcast", (3, 4), (1,), dtype=np.int64, mode="bidirectional")
bcast("bc_bidi_20_with_11", "Broadcast", (2, 0), (1, 1), mode="bidirectional")
bcast("bc_bidi_1_to_0_bool", "Broadcast", (1,), (0,), dtype=np.bool_, mode="bidirectional")
_add("bc_bidi_strings", "Broadcast", {"mode": "bidirectional"},
     (np.array([["a"], ["bc"]], dtype=object), _ints((1, 3))), None)  # strings where practical (SPEC §1)
bcast("bc_bidi_3_vs_2", "Broadcast", (3,), (2,), mode="bidirectional", invalid=("size 3", "size 2"))
bcast("bc_bidi_0_vs_3", "Broadcast", (0,), (3,), mode="bidirectional", invalid=("size 0", "size 3"))
# Broadcast, mode pdpd
bcast("bc_pdpd_default_axis", "Broadcast", (3, 1), (2, 3, 4), mode="pdpd")
bcast("bc_pdpd_axis1", "Broadcast", (3, 4), (2, 3, 4), mode="pdpd", axis=1)
bcast("bc_pdpd_target_1_takes_data_int64", "Broadcast", (3, 5), (2, 3, 1), dtype=np.int64, mode="pdpd", axis=1)
bcast("bc_pdpd_scalar_at_end", "Broadcast", (), (2, 3), mode="pdpd", axis=2)
bcast("bc_pdpd_1_to_20", "Broadcast", (1,), (2, 0), mode="pdpd", axis=1)
bcast("bc_pdpd_not_covering", "Broadcast", (3,), (2, 3, 4), mode="pdpd", axis=1, invalid=("cover",))
bcast("bc_pdpd_axis_too_big", "Broadcast", (), (2, 3), mode="pdpd", axis=3, invalid=("outside",))
bcast("bc_pdpd_dim_mismatch", "Broadcast", (4,), (2, 3), mode="pdpd", axis=1, invalid=("size 4", "size 3"))
bcast("bc_pdpd_axes_mapping_given", "Broadcast", (3,), (2, 3), (1,), mode="pdpd",
      invalid=("axes_mapping", "explicit"))

# Expand, every mode
bcast("ex_default_is_onnx_expand", "Expand", (3, 1), (2, 1, 6))
bcast("ex_bidi_scalar_to_22_int64", "Expand", (), (2, 2), dtype=np.int64, mode="bidirectional")
bcast("ex_bidi_0_with_1", "Expand", (0, 1), (1, 3), mode="bidirectional")
bcast("ex_numpy_3_to_23_bool", "Expand", (3,), (2, 3), dtype=np.bool_, mode="numpy")
bcast("ex_numpy_10_to_40", "Expand", (1, 0), (4, 0), mode="numpy")
bcast("ex_explicit_3_to_132", "Expand", (3,), (1, 3, 2), (1,), mode="explicit")
bcast("ex_explicit_scalar_no_axes_int64", "Expand", (), (2, 2), (), dtype=np.int64, mode="explicit")
bcast("ex_explicit_0_to_20", "Expand", (0,), (2, 0), (1,), mode="explicit")
bcast("ex_pdpd_axis1", "Expand", (3, 4), (2, 3, 4), mode="pdpd", axis=1)
bcast("ex_pdpd_axis0_stretch", "Expand", (2, 1), (2, 3), mode="pdpd", axis=0)
bcast("ex_bidi_mismatch", "Expand", (3,), (4,), invalid=("Expand(mode=bidirectional)", "size 3", "size 4"))
bcast("ex_numpy_rank_too_small", "Expand", (2, 3), (3,), mode="numpy", invalid=("Expand(mode=numpy)", "rank"))
bcast("ex_explicit_duplicate_axes", "Expand", (3, 1), (2, 3, 1), (1, 1), mode="explicit",
      invalid=("Expand(mode=explicit)", "strictly increasing"))
bcast("ex_pdpd_axis_below_minus1", "Expand", (3,), (2, 3), mode="pdpd", axis=-2, invalid=("Expand(mode=pdpd)",))


def v0(name: str, arg_shape: tuple[int, ...], shape: tuple[int, ...], axes: tuple[int, ...], *, dtype: Any = np.float32,
       invalid: tuple[str, ...] | None = None) -> None:
    _add(name, "BroadcastV0", {"shape": list(shape), "broadcast_axes": list(axes)}, (sample(arg_shape, dtype, name),),
         invalid)


v0("v0_3_to_23_axis0", (3,), (2, 3), (0,))
v0("v0_2_to_23_axis1_int64", (2,), (2, 3), (1,), dtype=np.int64)
v0("v0_scalar_to_22", (), (2, 2), (0, 1), dtype=np.bool_)
v0("v0_identity_no_axes", (2, 3), (2, 3), ())
v0("v0_0_to_04", (0,), (0, 4), (1,))
v0("v0_2_to_20", (2,), (2, 0), (1,))
v0("v0_axis_outside", (3,), (2, 3), (2,), invalid=("BroadcastV0", "outside"))
v0("v0_duplicate_axes", (3,), (2, 2, 3), (0, 0), invalid=("BroadcastV0", "duplicates"))
v0("v0_no_size1_stretching", (1,), (2, 3), (0,), invalid=("BroadcastV0", "(1,)", "(3,)"))


def like(name: str, arg_shape: tuple[int, ...], like_shape: tuple[int, ...], axes: tuple[int, ...] | None = None, *,
         dtype: Any = np.float32, like_dtype: Any = np.float32, invalid: tuple[str, ...] | None = None) -> None:
    attrs = {} if axes is None else {"initial_broadcast_axes": list(axes)}
    inputs = (sample(arg_shape, dtype, name), sample(like_shape, like_dtype, name + "like"))
    _add(name, "BroadcastLikeV0", attrs, inputs, invalid)


like("like_given_axis0", (3,), (2, 3), (0,))
like("like_given_axes_int64_like_bool", (3,), (2, 4, 3), (0, 1), dtype=np.int64, like_dtype=np.bool_)
like("like_deduced_trailing", (2,), (2, 3))
like("like_deduced_scalar_like_int64", (), (2, 2), like_dtype=np.int64)
like("like_deduced_identity_bool", (2, 3), (2, 3), dtype=np.bool_)
like("like_explicit_empty_axes", (2,), (2, 4), ())
like("like_deduced_zero", (0,), (0, 3))
like("like_given_mismatch", (3,), (2, 4), (0,), invalid=("BroadcastLikeV0", "(3,)", "(4,)"))
like("like_deduced_size1_no_stretch", (1, 3), (2, 3), invalid=("BroadcastLikeV0", "(1, 3)"))
like("like_given_axis_outside", (3,), (2, 3), (5,), invalid=("BroadcastLikeV0", "outside"))


def _operands(op: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...], dtype: Any,
              seed: str) -> tuple[np.ndarray, np.ndarray]:
    """A and B for ``op``: small values, negatives where the type has them, divisors never 0, exponents 0..3."""
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return (rng.integers(0, 2, size=a_shape).astype(np.bool_), rng.integers(0, 2, size=b_shape).astype(np.bool_))
    if op == "Pow":  # exact in float32: small bases (halves included), small non-negative integer exponents
        a = rng.integers(-6, 7, size=a_shape) * (0.5 if dtype.kind == "f" else 1)
        return a.astype(dtype), rng.integers(0, 4, size=b_shape).astype(dtype)
    a, b = rng.integers(-9, 10, size=a_shape), rng.integers(-9, 10, size=b_shape)
    if op in ("Div", "Mod"):
        b = np.where(b == 0, 4, b)
    if dtype.kind == "f":
        a = a + rng.choice([0.0, 0.25, 0.5], size=a_shape)
        b = b + rng.choice([0.0, 0.25, 0.5], size=b_shape)
    return np.asarray(a).astype(dtype), np.asarray(b).astype(dtype)


def ew(name: str, op: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...], *, dtype: Any = np.float32,
       invalid: tuple[str, ...] | None = None, **attrs: Any) -> None:
    _add(name, op, attrs, _operands(op, a_shape, b_shape, dtype, name), invalid)


# per rule, shape variants (A shape, B shape, attributes), handed out to the 16 ops in turn
EW_SHAPES: dict[str, list[tuple[tuple[int, ...], tuple[int, ...], dict]]] = {
    "none": [((2, 3), (2, 3), {}), ((), (), {}), ((0, 3), (0, 3), {}), ((3, 1, 2), (3, 1, 2), {})],
    "numpy": [((2, 1, 3), (4, 1), {}), ((), (2, 2), {}), ((0, 1), (1, 3), {}), ((3,), (2, 1), {}),
              ((2, 3), (), {})],
    "pdpd": [((2, 3, 4), (3,), {"axis": 1}), ((2, 3, 4), (3, 1), {}), ((2, 3), (), {}),
             ((2, 0, 3), (1, 3), {"axis": 1}), ((2, 3, 4), (4, 1), {"axis": 2}), ((2, 3), (2, 3), {"axis": 0}),
             ((2, 3, 4), (2, 3), {"axis": 0})],
}


def _ew_dtype(op: str, index: int) -> tuple[Any, dict]:
    """The element type (and Mod's fmod) of the ``index``-th case of ``op``: float32, int64, bool where allowed."""
    if op in LOGICAL_OPS:
        return np.bool_, {}
    if op == "Mod":
        return [(np.int64, {"fmod": 0}), (np.float32, {"fmod": 1}), (np.int64, {"fmod": 1})][index % 3]
    if op == "Equal":
        return [np.float32, np.int64, np.bool_][index % 3], {}
    return [np.float32, np.int64][index % 2], {}


_turn = 0
for _rule_index, _rule in enumerate(ELEMENTWISE_RULES):
    for _op_index, _op in enumerate(ELEMENTWISE_OPS):
        _a, _b, _extra = EW_SHAPES[_rule][_turn % len(EW_SHAPES[_rule])]
        _turn += 1
        _dtype, _fmod = _ew_dtype(_op, _op_index + _rule_index)
        _spelling = "EXPLICIT" if (_rule, _op) == ("none", "Xor") else _rule  # the alias, once
        ew(f"ew_{_op.lower()}_{_rule}_{np.dtype(_dtype).name}", _op, _a, _b, dtype=_dtype,
           auto_broadcast=_spelling, **_extra, **_fmod)

_base, _exponent = _operands("Pow", (2, 1), (3,), np.float32, "ew_pow_numpy_float32_int64_exponent")
_add("ew_pow_numpy_float32_int64_exponent", "Pow", {"auto_broadcast": "numpy"},
     (_base, _exponent.astype(np.int64)), None)  # Pow's B is T1: its own type

ew("ew_add_none_shapes_differ", "Add", (2, 3), (3,), auto_broadcast="none",
   invalid=("Add(auto_broadcast=none)", "(2, 3)", "(3,)"))
ew("ew_sub_numpy_not_broadcastable", "Sub", (2, 3), (4, 3), auto_broadcast="numpy",
   invalid=("Sub(auto_broadcast=numpy)", "(2, 3)", "(4, 3)"))
ew("ew_mul_pdpd_b_rank_above_a", "Mul", (3,), (2, 3), auto_broadcast="pdpd", invalid=("Mul(auto_broadcast=pdpd)",
                                                                                       "rank"))
ew("ew_div_pdpd_dim_mismatch", "Div", (2, 3, 4), (4,), auto_broadcast="pdpd", axis=1,
   invalid=("Div(auto_broadcast=pdpd)", "size 4", "size 3"))
ew("ew_less_pdpd_b0_on_a1", "Less", (2, 1), (0,), auto_broadcast="pdpd", axis=1, invalid=("size 0", "size 1"))
ew("ew_max_pdpd_trimmed_b_does_not_fit", "Max", (2, 3), (3, 2), auto_broadcast="pdpd", axis=1,
   invalid=("Max(auto_broadcast=pdpd)", "fit"))



def _delta(name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Small integers (as floats too): every sum is exact in any order, so every path must agree bit for bit."""
    values = (np.arange(math.prod(shape)) % 7) - 3
    return values.astype(dtype).reshape(shape)


def grad(name: str, delta_shape: tuple[int, ...], data_shape: tuple[int, ...], axes: tuple[int, ...] | None = None,
         *, dtype: Any = np.float32, invalid: tuple[str, ...] | None = None, **attrs: Any) -> None:
    """A BroadcastBackprop case: ``delta`` of the forward output's shape, ``data_shape`` (and axes_mapping)."""
    inputs = (_delta(name, delta_shape, dtype), _ints(data_shape))
    if axes is not None:
        inputs += (_ints(axes),)
    _add(name, "BroadcastBackprop", attrs, inputs, invalid)


grad("bp_numpy_236_to_31", (2, 3, 6), (3, 1), mode="numpy")
grad("bp_numpy_default_scalar_int64", (2, 3), (), dtype=np.int64)
grad("bp_numpy_zero_size", (3, 0), (1,), mode="numpy")
grad("bp_numpy_identity", (2, 3), (2, 3), mode="numpy")
grad("bp_numpy_float16", (4, 3), (1, 3), dtype=np.float16, mode="numpy")
grad("bp_numpy_not_the_output", (2, 4), (2, 3), mode="numpy",
     invalid=("BroadcastBackprop(mode=numpy)", "(2, 3)", "(2, 4)"))
grad("bp_numpy_negative_dim", (2, 3), (-1, 3), mode="numpy", invalid=("BroadcastBackprop(mode=numpy)", "negative"))
grad("bp_explicit_132_to_3", (1, 3, 2), (3,), (1,), mode="explicit")
grad("bp_explicit_stretch", (2, 3, 3), (3, 1), (1, 2), mode="explicit")
grad("bp_explicit_scalar_no_axes_int32", (2, 2), (), (), dtype=np.int32, mode="explicit")
grad("bp_explicit_duplicate_axes", (2, 3, 1), (3, 1), (1, 1), mode="explicit",
     invalid=("BroadcastBackprop(mode=explicit)", "strictly increasing"))
grad("bp_bidirectional_stretch", (2, 3, 4), (3, 1), mode="bidirectional")
grad("bp_bidirectional_alias_case", (2, 3), (2, 1), mode="BIDIRECTIONAL")
grad("bp_bidirectional_mismatch", (2, 3), (4,), mode="bidirectional",
     invalid=("BroadcastBackprop(mode=bidirectional)", "(4,)"))
grad("bp_pdpd_axis1", (2, 3, 4), (3, 1), mode="pdpd", axis=1)
grad("bp_pdpd_default_axis", (2, 3), (1, 3), mode="pdpd")
grad("bp_pdpd_not_covering", (2, 3, 4), (3,), mode="pdpd", axis=1, invalid=("BroadcastBackprop(mode=pdpd)",))


def grad_v0(name: str, delta_shape: tuple[int, ...], axes: tuple[int, ...], *, dtype: Any = np.float32,
            invalid: tuple[str, ...] | None = None) -> None:
    _add(name, "BroadcastV0Backprop", {"broadcast_axes": list(axes)}, (_delta(name, delta_shape, dtype),), invalid)


grad_v0("bpv0_23_axis0", (2, 3), (0,))
grad_v0("bpv0_234_axes02_int64", (2, 3, 4), (0, 2), dtype=np.int64)
grad_v0("bpv0_no_axes", (2, 3), ())
grad_v0("bpv0_zero_size_axis", (0, 3), (0,))
grad_v0("bpv0_all_to_scalar", (2, 2), (0, 1))
grad_v0("bpv0_axis_outside", (2, 3), (2,), invalid=("BroadcastV0Backprop", "outside"))


def ungrad(name: str, delta_shape: tuple[int, ...], a: tuple[int, ...], b: tuple[int, ...], *, dtype: Any = np.float32,
           invalid: tuple[str, ...] | None = None, **attrs: Any) -> None:
    _add(name, "Unbroadcast", attrs, (_delta(name, delta_shape, dtype), _ints(a), _ints(b)), invalid)


ungrad("ub_numpy_both_stretch", (2, 3), (2, 1), (3,), auto_broadcast="numpy")
ungrad("ub_numpy_default_int64", (2, 3, 4), (2, 3, 4), (3, 1), dtype=np.int64)
ungrad("ub_numpy_zero_size", (0, 3), (0, 1), (1, 3), auto_broadcast="numpy")
ungrad("ub_numpy_not_the_output", (2, 4), (2, 1), (3,), auto_broadcast="numpy",
       invalid=("Unbroadcast(auto_broadcast=numpy)", "(2, 4)"))
ungrad("ub_none_same", (2, 3), (2, 3), (2, 3), auto_broadcast="none")
ungrad("ub_none_differ", (2, 3), (2, 3), (3,), auto_broadcast="explicit",
       invalid=("Unbroadcast(auto_broadcast=none)", "(2, 3)", "(3,)"))
ungrad("ub_pdpd_axis1_trailing_one", (2, 3, 4), (2, 3, 4), (3, 1), auto_broadcast="pdpd", axis=1)
ungrad("ub_pdpd_default_axis_float16", (2, 3), (2, 3), (3,), dtype=np.float16, auto_broadcast="pdpd")
ungrad("ub_pdpd_delta_not_a", (2, 3), (2, 1), (1,), auto_broadcast="pdpd",
       invalid=("Unbroadcast(auto_broadcast=pdpd)", "(2, 3)"))

VALID_CASES = [c for c in CASES if c.valid]
INVALID_CASES = [c for c in CASES if not c.valid]


def canonical_mode(op: str, mode: str | None) -> str:
    """``mode`` as Case.mode spells it: lower case; explicit (alias none) for broadcasts, none (alias explicit) for
    elementwise ops, "" for the v0 ops."""
    mode = (mode or "").lower()
    if op in BROADCAST_OPS or op == "BroadcastBackprop":
        return "explicit" if mode == "none" else mode
    if op in ELEMENTWISE_OPS or op == "Unbroadcast":
        return "none" if mode == "explicit" else mode
    return mode


def cases_for(op: str, mode: str | None) -> list[Case]:
    """The cases (valid and invalid) of ``op`` in ``mode`` (aliases and case accepted; "" or None for the v0 ops)."""
    mode = canonical_mode(op, mode)
    return [c for c in CASES if c.op == op and c.mode == mode]
