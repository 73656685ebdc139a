"""Our ops for ``onnx.reference.ReferenceEvaluator``: ``ReferenceEvaluator(model, new_ops=reference_ops())``."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx.reference.op_run import OpRun

from onnx_bcast.onnx_defs.schemas import DOMAIN
from onnx_bcast.ops import OP_SPECS
from onnx_bcast.ops.common import OpSpec


def _op_class(spec: OpSpec) -> type[OpRun]:
    def _run(self: OpRun, *inputs: Any, **overrides: Any) -> tuple[np.ndarray, ...]:
        attrs = spec.defaults()
        for name in attrs:
            value = overrides.get(name, getattr(self, name, None))
            if value is not None:
                attrs[name] = value.decode() if isinstance(value, bytes) else value
        padded = list(inputs) + [None] * (len(spec.inputs) - len(inputs))
        try:
            out = spec.kernel(padded, attrs)
        except Exception as err:  # name the node, as the ORT path does
            if hasattr(err, "with_node"):
                raise err.with_node(self.onnx_node.name or None) from None
            raise
        outs = out if isinstance(out, tuple) else (out,)
        return tuple(np.array(o, copy=True, order="C") for o in outs)  # ascontiguousarray makes a 0-d output 1-d

    return type(spec.name, (OpRun,), {"op_domain": DOMAIN, "_run": _run, "__doc__": spec.doc})


_CLASSES = tuple(_op_class(spec) for spec in OP_SPECS)


def reference_ops() -> list[type[OpRun]]:
    """The OpRun classes of every onnx_bcast op."""
    return list(_CLASSES)
