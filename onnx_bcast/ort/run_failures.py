"""ONNX Runtime's messages of a failed run read back: the failing node, the guard, the kernel error recorded."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
from onnx import ModelProto

from onnx_bcast.errors import BroadcastError, fmt_shape
from onnx_bcast.lowering.check_forms import GUARD_MARK
from onnx_bcast.lowering.declaring import declare, node_label
from onnx_bcast.lowering.scalar_inputs import RULE as SCALAR_RULE
from onnx_bcast.model.walk import node_lists
from onnx_bcast.onnx_defs import schemas
from onnx_bcast.ort.kernels import ERROR_SHAPE_MARK
from onnx_bcast.ort.process_state import take_error

_FAILED_NODE = re.compile(r"Name:'(.+?)' Status Message|Node \((.+?)\) Op \(")  # ORT names the failing node
_RULE_HEAD, _RULE_TAIL = SCALAR_RULE.split("{name}")  # a guard's rule about a graph input (a declared scalar)
_INPUT_RULE = re.compile(re.escape(_RULE_HEAD) + "(.+?)" + re.escape(_RULE_TAIL))
# the guard's or the elementwise check's failure shape: [2, error id] or [2, error id, 3]
_FAILURE = re.compile(r"requested shape:\{" + str(ERROR_SHAPE_MARK) + r",(\d+)(?:,\d+)?\}")


def failed_node(exc: BaseException) -> str | None:
    """The name of the node whose failure ONNX Runtime reports (at run time, or in its run-time inference); in a
    subgraph, the innermost one (``Node (scan) Op (Scan) ... Node (second) Op (Min) ...``: ``second``)."""
    matches = list(_FAILED_NODE.finditer(str(exc)))
    return (matches[-1].group(1) or matches[-1].group(2)) if matches else None


def failed_guard(exc: BaseException) -> tuple[str, str] | None:
    """(node, rule) of the run-time check that failed, from ONNX Runtime's message naming the guard node."""
    name = failed_node(exc)
    if name is None or GUARD_MARK not in name:
        return None
    label, rule = name.split(GUARD_MARK, 1)
    return label, rule


def guard_error(model: ModelProto, label: str, rule: str, feeds: Mapping[str, Any] | None = None) -> BroadcastError:
    """A BroadcastError for a failed guard of our node ``label``: its op and mode from the model; a rule about an
    input says the shape it was fed (from ``feeds``)."""
    fed = _INPUT_RULE.match(rule)
    if fed and feeds is not None and fed.group(1) in feeds:
        rule = f"{rule}; '{fed.group(1)}' fed {fmt_shape(np.shape(feeds[fed.group(1)]))}"
    for entry in node_lists(model):
        for index, node in enumerate(entry.container.node):
            if node.domain == schemas.DOMAIN and node_label(node, index) == label:
                declared = declare(node, index)
                return declared.fail(f"run-time check failed: {rule}")
    return BroadcastError(schemas.DOMAIN, "", f"run-time check failed: {rule}", label)


def recorded_error(exc: BaseException, this_thread_error: int | None) -> BaseException | None:
    """The kernel error behind a failed run: named in the guard's message, else recorded on this thread."""
    match = _FAILURE.search(str(exc))
    if match:
        return take_error(int(match.group(1)))
    return take_error(this_thread_error) if this_thread_error is not None else None
