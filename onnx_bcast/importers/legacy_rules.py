"""The broadcast rules of legacy ONNX (default-domain opsets 1-6) on static shapes: binary ops, PRelu, Gemm."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from onnx_bcast.errors import BroadcastError, fmt_shape

LAST_LEGACY_OPSET = 6  # opset 7 moved every op to numpy broadcasting
# the ops whose opsets 1-6 broadcast B into A by ``broadcast=1, axis=k`` (``Add`` and ``Equal``'s documents)
BINARY = ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less")

Dims = Sequence[int | None]


@dataclass(frozen=True)
class LegacyNode:
    """A legacy node as the model wrote it: what errors name (its label, op, opset and broadcast attributes)."""

    label: str  # its name, or ``<op>#<index in the legacy graph>``
    op: str
    opset: int  # the model's default-domain opset
    broadcast: int | None = None  # None: the op has no broadcast attribute (PRelu)
    axis: int | None = None

    @property
    def form(self) -> str:
        """The legacy op and attributes, e.g. ``Add-6(broadcast=1, axis=1)``."""
        return f"{self.op}-{self.opset}" + (f"({self.mode_text})" if self.broadcast is not None else "")

    @property
    def mode_text(self) -> str:
        axis = f", axis={self.axis}" if self.axis is not None and self.broadcast else ""
        return f"broadcast={self.broadcast}{axis}" if self.broadcast is not None else ""

    def fail(self, detail: str) -> BroadcastError:
        """A BroadcastError naming this node, the legacy op and its attributes, e.g. ``Add-6(broadcast=1, axis=1)
        node 'add1': ...``."""
        mode = self.mode_text.removeprefix("broadcast=")
        return BroadcastError(f"{self.op}-{self.opset}", mode, detail, self.label, mode_attr="broadcast")


def _known(dims: Dims | None) -> bool:
    return dims is not None and all(d is not None for d in dims)


def _count(dims: Dims) -> int:
    count = 1
    for d in dims:
        count *= int(d)  # type: ignore[arg-type]
    return count


def binary_start(rank_a: int, rank_b: int, axis: int | None) -> int:
    """Where B's first axis meets A: ``axis``, or suffix matching (``rank(A) - rank(B)``) when absent or -1."""
    return rank_a - rank_b if axis is None or axis == -1 else axis


def binary_error(a: Dims | None, b: Dims | None, broadcast: int, axis: int | None) -> str | None:
    """Why ``Op(A, B, broadcast, axis)`` is invalid under the legacy rule, as far as the known dims tell (None: not
    shown invalid).

    ``broadcast=0``: equal shapes. ``broadcast=1``: ``0 <= axis <= rank(A) - rank(B)`` (suffix matching when
    ``axis`` is absent or -1); B's leading and trailing size-1 dims meet any dim of A (so a one-element B is
    shared), and the dims between them equal A's dims there exactly: no other 1-dim expansion. This is how Caffe2,
    the backend of these opsets, computed it, and what PyTorch's opset-6 exports rely on; ONNX's text ("1-dim
    expansion doesn't work yet") would refuse B ``(2, 1)`` at axis 0 of A ``(2, 3)``, which they write.
    """
    if a is None or b is None:
        return None
    if not broadcast:
        if len(a) != len(b) or any(x is not None and y is not None and x != y for x, y in zip(a, b, strict=True)):
            return f"broadcast=0 needs equal shapes; A {_fmt(a)}, B {_fmt(b)}"
        return None
    if len(b) > len(a):
        return f"B's rank {len(b)} exceeds A's rank {len(a)}; A {_fmt(a)}, B {_fmt(b)}"
    start = binary_start(len(a), len(b), axis)
    if start < 0 or start > len(a) - len(b):
        return f"axis {axis} is outside [0, {len(a) - len(b)}] (rank(A) - rank(B)); A {_fmt(a)}, B {_fmt(b)}"
    first, last = core(b)
    for k in range(len(b)):
        x, y = a[start + k], b[k]
        if x is None or y is None or x == y:
            continue
        if y != 1:
            return f"B dim {k} (size {y}) differs from A dim {start + k} (size {x}); A {_fmt(a)}, B {_fmt(b)}"
        if _known(b) and first <= k < last:
            return (f"B dim {k} (size 1) lies between B's dims {first} and {last - 1}, where the legacy rule has "
                    f"no 1-dim expansion: it must equal A dim {start + k} (size {x}); A {_fmt(a)}, B {_fmt(b)}")
    return None


def core(b: Dims) -> tuple[int, int]:
    """B's dims without its leading and trailing size-1 ones, as ``[first, last)``: the part the legacy rule
    matches to A exactly (empty for a one-element B)."""
    first, last = 0, len(b)
    while first < last and b[first] == 1:
        first += 1
    while last > first and b[last - 1] == 1:
        last -= 1
    return first, last


def prelu_error(x: Dims | None, slope: Dims | None) -> str | None:
    """Why ``PRelu(X, slope)`` of opsets 1-6 is invalid: the slope is ``[C]`` with C X's dim 1 (per channel), or
    has one element (shared); None where the known dims do not show it invalid."""
    if slope is None:
        return None
    if _known(slope) and _count(slope) == 1:
        return None
    if len(slope) != 1:
        return f"slope must be [C] (per channel) or have one element; X {_fmt(x)}, slope {_fmt(slope)}"
    if x is None:
        return None
    if len(x) < 2:
        return f"a per-channel slope needs X of rank >= 2 (channels on axis 1); X {_fmt(x)}, slope {_fmt(slope)}"
    if x[1] is not None and slope[0] is not None and slope[0] != x[1]:
        return f"slope size {slope[0]} must equal X's channels (dim 1, size {x[1]}); X {_fmt(x)}, slope {_fmt(slope)}"
    return None


def gemm_mn(a: Dims | None, b: Dims | None, trans_a: int, trans_b: int) -> tuple[int | None, int | None] | None:
    """Gemm's ``[M, N]`` from A's and B's known dims (a dim None where unknown); None where a rank is not 2."""
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return None
    return a[1] if trans_a else a[0], b[0] if trans_b else b[1]


def gemm_error(a: Dims | None, b: Dims | None, c: Dims | None, broadcast: int, trans_a: int, trans_b: int
               ) -> str | None:
    """Why Gemm-1/6's C is invalid: ``broadcast=0``: C is ``[M, N]``; ``broadcast=1``: C broadcasts to ``[M, N]``
    unidirectionally (numpy). None where the known dims do not show it."""
    mn = gemm_mn(a, b, trans_a, trans_b)
    if mn is None or c is None:
        return None
    m, n = mn
    shapes = f"A {_fmt(a)}, B {_fmt(b)}, C {_fmt(c)}, [M, N] {_fmt((m, n))}"
    if not broadcast:
        if len(c) != 2 or any(x is not None and y is not None and x != y for x, y in zip(c, (m, n), strict=True)):
            return f"broadcast=0 needs C of shape [M, N]; {shapes}"
        return None
    if len(c) > 2:
        return f"C's rank {len(c)} exceeds 2; {shapes}"
    for y, x in zip(c, (m, n)[2 - len(c):], strict=True):
        if x is not None and y is not None and y not in (1, x):
            return f"C does not broadcast to [M, N] (each C dim 1 or equal); {shapes}"
    return None


def gemm_c_is_exact(a: Dims | None, b: Dims | None, c: Dims | None, trans_a: int, trans_b: int) -> bool:
    """Whether the known dims prove C is ``[M, N]`` (fixed dims, equal; a shared ``dim_param`` proves nothing)."""
    mn = gemm_mn(a, b, trans_a, trans_b)
    return mn is not None and c is not None and None not in (*mn, *c) and tuple(c) == mn


def _fmt(dims: Dims | None) -> str:
    if dims is None:
        return "(rank unknown)"
    if all(d is not None for d in dims):
        return fmt_shape(dims)  # type: ignore[arg-type]
    return "(" + ", ".join("?" if d is None else str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
