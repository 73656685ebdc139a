"""The lowering pass's working copy of a model: our opset checked, functions inlined where needed, an opset set."""

from __future__ import annotations

from collections.abc import Callable

import onnx
import onnx.inliner
from onnx import ModelProto, helper

from onnx_bcast.errors import BroadcastError
from onnx_bcast.model.walk import opset_version
from onnx_bcast.onnx_defs import schemas

DOMAIN = schemas.DOMAIN


def _check_our_opsets(model: ModelProto) -> None:
    """The model and its functions import a version of our domain that we know, or none."""
    wheres = [("the model", list(model.opset_import))]
    wheres += [(f"function {f.name!r}", list(f.opset_import)) for f in model.functions]
    for where, opsets in wheres:
        version = opset_version(opsets, DOMAIN)
        if version is not None and version != schemas.VERSION:
            raise BroadcastError(DOMAIN, "", f"{where} imports opset version {version} of domain {DOMAIN!r}; "
                                             f"this onnx-bcast knows version {schemas.VERSION} only")


def working_copy(model: ModelProto, opset: int | None, inline: bool, default_opset: Callable[[int | None], int]
                 ) -> ModelProto:
    """A copy of ``model`` for the pass: our opset checked, the local functions that hold our nodes inlined where
    ``inline`` (their values are typed per call site), a default-domain opset imported (``default_opset``)."""
    _check_our_opsets(model)
    copy = ModelProto()
    copy.CopyFrom(model)
    if inline and any(n.domain == DOMAIN for f in copy.functions for n in f.node):
        copy = _inline_functions_with_our_nodes(copy)
    current = opset_version(list(copy.opset_import), "")
    if current is None:
        copy.opset_import.append(helper.make_opsetid("", opset if opset is not None else default_opset(None)))
    elif opset is not None and opset != current:
        raise ValueError(f"the model already uses default-domain opset {current}; converting its standard nodes to "
                         f"opset {opset} is not done here (onnx's version converter drops model-local functions)")
    return copy


def _inline_functions_with_our_nodes(model: ModelProto) -> ModelProto:
    """The model with every local function that holds a node of ours inlined at its call sites (others kept)."""
    ours = [(f.domain, f.name) for f in model.functions if any(n.domain == DOMAIN for n in f.node)]
    try:
        inlined = onnx.inliner.inline_selected_functions(model, ours, exclude=False)
    except Exception as err:  # onnx's own message, in our one-line form
        raise BroadcastError(DOMAIN, "", f"cannot inline the model-local functions {ours} that hold our nodes: "
                                         f"{str(err).strip().splitlines()[0]}") from None
    _name_by_call_site(model, inlined, set(ours))
    return inlined


def _name_by_call_site(model: ModelProto, inlined: ModelProto, selected: set[tuple[str, str]]) -> None:
    """The inlined nodes named ``<call site>.<the function's node>`` (errors name both), in place of onnx's
    ``<the function's node>__<k>``, where k counts the main graph's calls of the inlined functions (1, 2, ...).
    Only where each such name is one the call's function has and the new name is free; else onnx's name stays."""
    bodies = {(f.domain, f.name): {n.name for n in f.node if n.name} for f in model.functions}
    calls = [(index, node) for index, node in enumerate(model.graph.node) if (node.domain, node.op_type) in selected]
    taken = {n.name for n in inlined.graph.node}
    for node in inlined.graph.node:
        base, _, k = node.name.rpartition("__")
        if not base or not k.isdigit() or not 1 <= int(k) <= len(calls):
            continue
        index, call = calls[int(k) - 1]
        name = f"{call.name or f'{call.op_type}#{index}'}.{base}"
        if base in bodies.get((call.domain, call.op_type), ()) and name not in taken:
            taken.add(name)
            node.name = name
