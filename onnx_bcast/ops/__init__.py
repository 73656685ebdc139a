"""The table of onnx-bcast ops: one OpSpec per op, from the op-family modules."""

from __future__ import annotations

from onnx_bcast.ops import backprop_specs, broadcast, broadcast_v0, elementwise
from onnx_bcast.ops.common import OpSpec

OP_SPECS: tuple[OpSpec, ...] = broadcast.SPECS + broadcast_v0.SPECS + elementwise.SPECS + backprop_specs.SPECS
SPEC_BY_NAME: dict[str, OpSpec] = {spec.name: spec for spec in OP_SPECS}
