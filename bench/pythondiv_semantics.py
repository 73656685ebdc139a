"""What OpenVINO's ``Divide m_pythondiv`` computes on int32: its reference (ConstantFolding) and its CPU plugin, per
auto_broadcast, and what its ONNX and JAX frontends write for a truncating division (docs/ops.md shows the table)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import openvino.opset13 as ops
from onnx import TensorProto, helper
from openvino import passes
from openvino.utils.node_factory import NodeFactory

A = np.array([7, -7, 7, -7, -2147483647, -2147483648, 5, -5, 0, -1], np.int32)
B = np.array([2, 2, -2, -2, -1, 3, -2147483648, -2147483648, -3, 2], np.int32)


def divide(x: ov.Node, y: ov.Node, pythondiv: bool, rule: str) -> ov.Node:
    return NodeFactory("opset1").create("Divide", [x.output(0), y.output(0)],
                                        {"m_pythondiv": pythondiv, "auto_broadcast": rule})


def reference(pythondiv: bool, rule: str) -> np.ndarray:
    model = ov.Model([divide(ops.constant(A), ops.constant(B), pythondiv, rule)], [])
    manager = passes.Manager()
    manager.register_pass(passes.ConstantFolding())
    manager.run_passes(model)
    return model.get_results()[0].input_value(0).get_node().get_data()


def cpu(pythondiv: bool, rule: str) -> np.ndarray:
    x, y = ops.parameter(A.shape, np.int32), ops.parameter(B.shape, np.int32)
    compiled = ov.Core().compile_model(ov.Model([divide(x, y, pythondiv, rule)], [x, y]), "CPU")
    return compiled({0: A, 1: B})[0]


def frontends() -> None:
    graph = helper.make_graph([helper.make_node("Div", ["x", "y"], ["z"])], "g",
                              [helper.make_tensor_value_info(n, TensorProto.INT32, [2]) for n in "xy"],
                              [helper.make_tensor_value_info("z", TensorProto.INT32, [2])])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "div.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        model = ov.convert_model(str(path))
    print("ONNX frontend, Div:", [op.get_attributes() for op in model.get_ordered_ops()
                                  if op.get_type_name() == "Divide"])
    try:
        import jax
        from jax import lax
    except ImportError:
        return
    model = ov.convert_model(jax.make_jaxpr(lax.div)(A[:2], B[:2]))
    print("JAX frontend, lax.div:", [op.get_attributes() for op in model.get_ordered_ops()
                                     if op.get_type_name() == "Divide"])


if __name__ == "__main__":
    print("A:", A.tolist())
    print("B:", B.tolist())
    print("floor:", (A.astype(np.int64) // B).tolist())
    for rule in ("numpy", "none", "pdpd"):
        for pythondiv in (True, False):
            print(f"m_pythondiv={pythondiv} {rule}: reference {reference(pythondiv, rule).tolist()}, "
                  f"CPU {cpu(pythondiv, rule).tolist()}")
    frontends()
