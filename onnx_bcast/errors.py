"""The error types of onnx-bcast: BroadcastError (with its message template) and VerificationError."""

from __future__ import annotations

from collections.abc import Callable, Sequence


class VerificationError(ValueError):
    """The converted model does not reproduce the original's outputs bit for bit, or returns a value where the
    original fails (``convert(..., verify=True)``)."""


class BroadcastError(ValueError):
    """An invalid broadcast: names the op, the mode and the offending shapes or values."""

    def __init__(self, op: str, mode: str, detail: str, node: str | None = None, mode_attr: str = "mode") -> None:
        self.op = op
        self.mode = mode
        self.detail = detail
        self.node = node
        self.mode_attr = mode_attr
        super().__init__(self._format())

    def _format(self) -> str:
        head = f"{self.op}({self.mode_attr}={self.mode})" if self.mode else self.op
        where = f" node '{self.node}'" if self.node else ""
        return f"{head}{where}: {self.detail}"

    def __reduce__(self):  # keep the fields through pickling (multiprocessing, subprocess tests)
        return (BroadcastError, (self.op, self.mode, self.detail, self.node, self.mode_attr))

    def with_node(self, node: str | None) -> BroadcastError:
        """The same error, attributed to an ONNX node."""
        return BroadcastError(self.op, self.mode, self.detail, node, self.mode_attr)


class NotLowerable(BroadcastError):
    """A node the lowering cannot write as standard ONNX: a limit of the conversion (a rank or type onnx's shape
    inference did not find, an opset without the form), not a fault of the inputs, which may be valid."""

    def __reduce__(self):
        return (NotLowerable, (self.op, self.mode, self.detail, self.node, self.mode_attr))

    def with_node(self, node: str | None) -> NotLowerable:
        return NotLowerable(self.op, self.mode, self.detail, node, self.mode_attr)


class LazyText:
    """Text made when it is shown: the shapes part of a message that a valid call never shows (formatting it on
    every call costs more than the check)."""

    __slots__ = ("_make",)

    def __init__(self, make: Callable[[], str]) -> None:
        self._make = make

    def __str__(self) -> str:
        return self._make()


def fmt_shape(shape: Sequence[int]) -> str:
    """A shape as the message template writes it: ``(2, 3)``, ``()`` for a scalar."""
    dims = [int(d) for d in shape]
    if len(dims) == 1:
        return f"({dims[0]},)"
    return "(" + ", ".join(str(d) for d in dims) + ")"
