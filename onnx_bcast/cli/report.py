"""What ``onnx-bcast convert`` prints besides its result: the op counts before and after, and the progress."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

import onnx

from onnx_bcast.model.walk import node_lists

if TYPE_CHECKING:
    from onnx_bcast.verify import Verification  # imports onnxruntime: not for ``ops`` or ``--version``

PROGRESS_FROM = 5000  # nodes of ours from which convert shows its progress


def all_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """Every node: the main graph's, its subgraphs' and the model-local functions'."""
    return [node for entry in node_lists(model) for node in entry.container.node]


def checks_text(nodes: list[onnx.NodeProto]) -> str:
    """"N run-time checks" ("1 run-time check") in ``nodes``: a model's ``all_nodes``."""
    from onnx_bcast.lowering.check_forms import run_time_checks  # (not at the command's start)

    count = run_time_checks(node.name for node in nodes)
    return f"{count} run-time check{'' if count == 1 else 's'}"


def _op_name(node: onnx.NodeProto) -> str:
    return f"{node.domain}.{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type


def op_counts(model: onnx.ModelProto) -> Counter[str]:
    """How many nodes of each op type (``domain.Op`` outside the default domain) the model holds."""
    return Counter(_op_name(node) for node in all_nodes(model))


def op_table(before: onnx.ModelProto, after: onnx.ModelProto) -> list[str]:
    """A table of nodes per op type before and after, as onnxsim prints it (other domains' op types first, each
    group in name order)."""
    old, new = op_counts(before), op_counts(after)
    names = sorted(set(old) | set(new), key=lambda name: ("." not in name, name.lower(), name))
    width = max([len("op type"), *map(len, names)])
    lines = [f"{'op type':<{width}}  before   after"]
    lines += [f"{name:<{width}}  {old[name]:>6}  {new[name]:>6}" for name in names]
    return lines


def verification_text(verification: Verification | None) -> str:
    """What ``wrote ...`` adds after a ``--verify``: what was compared."""
    if verification is None:
        return ""
    text = " (verified: outputs identical" + (
        f", {verification.rounded} of them up to summation-order rounding" if verification.rounded else "")
    if verification.invalid_inputs:
        text += f"; {verification.invalid_inputs} inputs the original rejects fail in the converted model too"
    return text + ")"


def progress_printer(stream: TextIO) -> Callable[[int, int], None]:
    """A progress line for large models (``PROGRESS_FROM`` nodes of ours and more) on ``stream``: rewritten in place
    with ``\\r`` on a terminal, one line per step in a log or a pipe."""
    terminal = stream.isatty()

    def show(done: int, total: int) -> None:
        if total < PROGRESS_FROM:
            return
        text = f"converting: {done}/{total} nodes of ours"
        if terminal:
            print(f"\r{text}", end="\n" if done == total else "", file=stream, flush=True)
        else:
            print(text, file=stream, flush=True)

    return show
