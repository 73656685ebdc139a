"""IR nodes mended before one of onnxifier's own passes reads them, or refused where that pass would lose what they
say."""

from __future__ import annotations

from collections.abc import Callable

import onnx
from onnx import helper

from onnx_bcast.onnxifier.refusals import ir_attributes, ir_flag


def _interpolate_attributes(node: onnx.NodeProto) -> str | None:
    """Interpolate-4/-11 before onnxifier's pass: ``cube_coeff`` under the name that pass reads (``cubic_coeff``,
    which no IR writes: it wrote ONNX's default -0.75 for every cubic resize), as a float; a reason to refuse
    ``antialias``, which that pass drops."""
    attrs = ir_attributes(node)
    if ir_flag(attrs.get("antialias", "false")):
        return "antialias is not carried to ONNX's Resize by onnxifier's interpolate pass"
    if "cube_coeff" in attrs:
        kept = [a for a in node.attribute if a.name != "cubic_coeff"]
        del node.attribute[:]
        node.attribute.extend([*kept, helper.make_attribute("cubic_coeff", float(attrs["cube_coeff"]))])
    return None


#: onnxifier's passes whose IR node is mended first (or refused with the reason given) by these
MENDED_FIRST: dict[str, Callable[[onnx.NodeProto], str | None]] = {"interpolate": _interpolate_attributes}
