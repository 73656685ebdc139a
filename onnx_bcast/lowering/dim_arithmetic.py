"""The arithmetic of dims that shape vectors compute (``Shape(x)[2] * Shape(x)[3]``, ``Max([1], ...)``): ints where
known, else a ``Product`` of one value's symbols or an ``AtLeastOne`` of one, which proofs compare structurally."""

from __future__ import annotations

from collections.abc import Callable

Element = int | tuple | None
Value = tuple[Element, ...] | None


class Product(tuple):
    """The product of dims of one value at distinct axes (its symbols, sorted): never negative, and at most that
    value's element count where none of its dims is 0, as a symbol is a dim that exists."""


class AtLeastOne(tuple):
    """``max(1, e)`` for a symbol or ``Product`` ``e`` (the one element): its non-zero dims multiply as ``e``'s."""


def _factors(e: Element) -> list | None:
    if isinstance(e, Product):
        return list(e)
    if isinstance(e, tuple) and not isinstance(e, AtLeastOne) and len(e) == 2 and isinstance(e[1], int):
        return [e]
    return None


def elementwise(a: Value, b: Value, op: Callable[[Element, Element], Element]) -> Value:
    """``op`` on two vectors of elements, one of length 1 broadcast to the other's; None where they cannot meet."""
    if a is None or b is None:
        return None
    if len(a) == len(b):
        return tuple(op(x, y) for x, y in zip(a, b, strict=True))
    if len(b) == 1:
        return tuple(op(x, b[0]) for x in a)
    if len(a) == 1:
        return tuple(op(a[0], y) for y in b)
    return None


def times(a: Element, b: Element) -> Element:
    """``a * b`` for dims: ints multiplied, 1 yields, a product of symbols of one value at distinct axes."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b if abs(a * b) < 2**63 else None
    if a == 1 or b == 1:
        return b if a == 1 else a
    fa, fb = _factors(a), _factors(b)
    if fa is None or fb is None:
        return None
    factors = fa + fb
    if len({f[0] for f in factors}) != 1 or len(set(factors)) != len(factors):
        return None
    return Product(sorted(factors, key=lambda f: f[1]))


def at_least(a: Element, b: Element) -> Element:
    """``max(a, b)`` for dims: ints compared, an int <= 0 yields to a dim, 1 makes ``AtLeastOne`` of one."""
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    if a == b:
        return a
    if isinstance(b, int):
        a, b = b, a
    if not isinstance(a, int) or _factors(b) is None:
        return None
    return b if a <= 0 else AtLeastOne((b,)) if a == 1 else None
