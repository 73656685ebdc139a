"""Legacy nodes rewritten one at a time: binary ops, PRelu and Gemm as our ops or as standard ones, checked on the
shapes the runtime enforces."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto, helper, numpy_helper

from onnx_bcast.importers import legacy_rules
from onnx_bcast.importers.legacy_rules import Dims, LegacyNode
from onnx_bcast.model.walk import NameGenerator
from onnx_bcast.onnx_defs import schemas


def _attrs(node: NodeProto) -> dict[str, object]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def binary_node(node: NodeProto, label: str, version: int, shapes: dict[str, Dims | None]
            ) -> tuple[LegacyNode, NodeProto]:
    """``Op(A, B, broadcast, axis)`` -> ``onnx_bcast::Op(A, B, auto_broadcast=pdpd|none, axis)``, checked on the
    known shapes."""
    attrs = _attrs(node)
    broadcast, axis = attrs.get("broadcast", 0), attrs.get("axis")
    legacy = LegacyNode(label, node.op_type, version, int(broadcast) if isinstance(broadcast, int) else -1,
                        int(axis) if isinstance(axis, int) else None)
    unknown = sorted(set(attrs) - {"broadcast", "axis", "consumed_inputs"})
    if unknown:
        raise legacy.fail(f"attribute(s) {', '.join(unknown)} are not those of legacy {node.op_type}")
    if legacy.broadcast not in (0, 1):
        raise legacy.fail(f"broadcast must be 0 or 1, got {broadcast!r}")
    if axis is not None and legacy.axis is None:
        raise legacy.fail(f"axis must be an int, got {axis!r}")
    if legacy.broadcast and legacy.axis is not None and legacy.axis < -1:
        raise legacy.fail(f"axis {legacy.axis} is negative; legacy axes count from 0 (-1 and no axis: suffix "
                          "matching)")
    if len(node.input) != 2 or not all(node.input) or len(node.output) != 1:
        raise legacy.fail(f"needs inputs A and B and one output; got inputs {list(node.input)}")
    reason = legacy_rules.binary_error(shapes.get(node.input[0]), shapes.get(node.input[1]), legacy.broadcast,
                                       legacy.axis)
    if reason is not None:
        raise legacy.fail(reason)
    mode = "pdpd" if legacy.broadcast else "none"
    new = helper.make_node(node.op_type, list(node.input), list(node.output), name=node.name or None,
                           domain=schemas.DOMAIN, auto_broadcast=mode,
                           axis=legacy.axis if legacy.broadcast and legacy.axis is not None else -1)
    new.doc_string = node.doc_string or f"onnx-bcast: imported from legacy {legacy.form}"
    return legacy, new


def prelu_node(node: NodeProto, legacy: LegacyNode, shapes: dict[str, Dims | None], names: NameGenerator
           ) -> tuple[list[NodeProto], str]:
    """``PRelu(X, slope)`` with a per-channel slope -> ``PRelu(X, Broadcast<explicit>(slope, [1, C, 1...], [1]))``
    (a one-element slope is shared: kept, or squeezed to a scalar when its rank is over 1). Also returns what it
    became, for the report (``<opset>`` stands for the target opset)."""
    unknown = sorted(set(_attrs(node)) - {"consumed_inputs"})
    if unknown:
        raise legacy.fail(f"attribute(s) {', '.join(unknown)} are not those of legacy PRelu")
    if len(node.input) != 2 or not all(node.input) or len(node.output) != 1:
        raise legacy.fail(f"needs inputs X and slope and one output; got inputs {list(node.input)}")
    x, slope = node.input
    x_shape, slope_shape = shapes.get(x), shapes.get(slope)
    reason = legacy_rules.prelu_error(x_shape, slope_shape)
    if reason is not None:
        raise legacy.fail(reason)
    prelu = helper.make_node("PRelu", [x, slope], list(node.output), name=node.name or None)
    prelu.doc_string = node.doc_string
    if slope_shape is not None and all(d is not None for d in slope_shape) and int(np.prod(slope_shape)) == 1:
        if len(slope_shape) <= 1:
            return [prelu], "PRelu-<opset> (one-element slope, shared)"
        scalar = names(f"{slope}_shared")
        prelu.input[1] = scalar
        squeeze = helper.make_node("Squeeze", [slope], [scalar], axes=list(range(len(slope_shape))))
        return [squeeze, prelu], "PRelu-<opset> (one-element slope squeezed to a scalar, shared)"
    made: list[NodeProto] = []

    def constant(hint: str, values: list[int]) -> str:
        name = names(hint)
        made.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
            np.array(values, np.int64), name)))
        return name

    shape = names(f"{x}_shape")
    made.append(helper.make_node("Shape", [x], [shape]))
    target = shape
    rank = None if x_shape is None else len(x_shape)
    if rank is not None:  # [1, C, 1, ...]: the slope stays small, PRelu broadcasts it (numpy) to X
        channels = names(f"{x}_channels")
        made.append(helper.make_node("Gather", [shape, constant(f"{x}_channel_axis", [1])], [channels], axis=0))
        parts = [constant(f"{x}_one", [1]), channels]
        if rank > 2:
            parts.append(constant(f"{x}_ones", [1] * (rank - 2)))
        target = names(f"{slope}_target")
        made.append(helper.make_node("Concat", parts, [target], axis=0))
    broadcast = names(f"{slope}_per_channel")
    label = f"{legacy.label}.slope"  # no "/": ONNX Runtime's names of guards are "<label>/guard: ..."
    made.append(helper.make_node("Broadcast", [slope, target, constant(f"{slope}_axes", [1])], [broadcast],
                                 name=names(label), domain=schemas.DOMAIN, mode="explicit",
                                 doc_string=f"onnx-bcast: the per-channel slope of legacy PRelu '{legacy.label}'"))
    prelu.input[1] = broadcast
    made.append(prelu)
    return made, "PRelu-<opset>(X, Broadcast(mode=explicit, axes_mapping=[1]) of the slope)"


def gemm_node(node: NodeProto, label: str, version: int, shapes: dict[str, Dims | None]) -> LegacyNode:
    """Gemm-1/6 checked on the known shapes; onnx's version converter then drops ``broadcast`` (Gemm-7 on
    broadcasts C unidirectionally, which is what ``broadcast=1`` did, and ``broadcast=0``'s C is a case of it)."""
    attrs = _attrs(node)
    broadcast = attrs.get("broadcast", 0)
    legacy = LegacyNode(label, "Gemm", version, int(broadcast) if isinstance(broadcast, int) else -1)
    if legacy.broadcast not in (0, 1):
        raise legacy.fail(f"broadcast must be 0 or 1, got {broadcast!r}")
    if len(node.input) != 3 or not all(node.input):
        raise legacy.fail(f"needs inputs A, B and C; got inputs {list(node.input)}")
    reason = legacy_rules.gemm_error(*(shapes.get(name) for name in node.input), legacy.broadcast,
                                     int(attrs.get("transA", 0)), int(attrs.get("transB", 0)))  # type: ignore[arg-type]
    if reason is not None:
        raise legacy.fail(reason)
    for name in ("consumed_inputs",):  # Gemm has none in opsets 1-6; a writer that added one meant nothing by it
        kept = [a for a in node.attribute if a.name != name]
        if len(kept) != len(node.attribute):
            del node.attribute[:]
            node.attribute.extend(kept)
    return legacy


HELD_GEMM_DOMAIN = "onnx_bcast.legacy_gemm"  # a Gemm-1/6 during onnx's version converter (see ``gemm_nodes``)


def gemm_nodes(node: NodeProto, legacy: LegacyNode, shapes: dict[str, Dims | None], names: NameGenerator
               ) -> list[NodeProto]:
    """Gemm-1/6 (checked by ``gemm_node``) held out of onnx's version converter, whose Gemm 6 -> 7 adapter asserts
    that every dim is fixed: the node is put in ``HELD_GEMM_DOMAIN`` and ``release_gemm`` makes it the default
    domain's Gemm again, without ``broadcast``. Gemm-7 on broadcasts C unidirectionally to ``[M, N]``: what
    ``broadcast=1`` did. ``broadcast=0`` needs C of exactly ``[M, N]``: where the known dims do not prove it, the
    output is ``Broadcast(Y, Shape(C), axes_mapping=[0, 1], mode="explicit")``, which fails unless each ``[M, N]``
    dim equals C's or is 1, and Gemm-7 fails unless each C dim equals ``[M, N]``'s or is 1: both hold only when C is
    ``[M, N]``, and then the output is Y itself."""
    held = helper.make_node("Gemm", list(node.input), list(node.output), name=node.name or None,
                            domain=HELD_GEMM_DOMAIN)
    held.attribute.extend(node.attribute)
    held.doc_string = node.doc_string
    a, b, c = (shapes.get(name) for name in node.input)
    attrs = _attrs(node)
    if legacy.broadcast or legacy_rules.gemm_c_is_exact(a, b, c, int(attrs.get("transA", 0)),
                                                        int(attrs.get("transB", 0))):
        return [held]
    y = node.output[0]
    raw, shape, axes = names(f"{y}_unchecked"), names(f"{node.input[2]}_shape"), names(f"{y}_axes")
    held.output[0] = raw
    label = f"{legacy.label}.C"  # no "/": ONNX Runtime's names of guards are "<label>/guard: ..."
    return [held, helper.make_node("Shape", [node.input[2]], [shape]),
            helper.make_node("Constant", [], [axes], value=numpy_helper.from_array(np.array([0, 1], np.int64), axes)),
            helper.make_node("Broadcast", [raw, shape, axes], [y], name=names(label), domain=schemas.DOMAIN,
                             mode="explicit", doc_string=f"onnx-bcast: legacy Gemm '{legacy.label}' with broadcast=0: "
                                                         "C must be [M, N]")]


def release_gemm(node: NodeProto) -> None:
    """A Gemm ``gemm_nodes`` held, after the version converter: the default domain's Gemm, without ``broadcast``."""
    node.domain = ""
    kept = [a for a in node.attribute if a.name != "broadcast"]
    del node.attribute[:]
    node.attribute.extend(kept)
