"""Converted none-rule elementwise ops in OpenVINO (its CPU plugin reading the converted model): mismatched shapes
fail, matched ones give numpy's values. OpenVINO removed the check where one input had known dims other than 1
(it took ``Expand(x, Shape(x) + token)`` for a no-op, or fused it into the op): 12 of these 18 cases returned
numpy-broadcast values."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bcast

ov = pytest.importorskip("openvino", reason="OpenVINO is the runtime under test (pip install 'onnx-bcast[openvino]')")

# (A's declared dims, B's declared dims, A fed, B fed): the fed shapes differ, which the none rule refuses
CASES = [(["n", 3], [2, 3], (1, 3), (2, 3)), ([2, 3], ["m", 3], (2, 3), (1, 3)), (["n", "c"], [2, 3], (2, 1), (2, 3)),
         ([2, 3], ["m", "k"], (2, 3), (1, 1)), (["n", 3], [1, 3], (2, 3), (1, 3)), ([1, 3], ["m", 3], (1, 3), (2, 3))]
OPS = {"Add": np.add, "Mul": np.multiply, "Sub": np.subtract}


def _model(op: str, a_dims: list, b_dims: list) -> onnx.ModelProto:
    node = helper.make_node(op, ["a", "b"], ["y"], domain="onnx_bcast", name="n", auto_broadcast="none")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_dims),
                                            helper.make_tensor_value_info("b", TensorProto.FLOAT, b_dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize(("a_dims", "b_dims", "a_fed", "b_fed"), CASES, ids=str)
def test_openvino_fails_on_mismatched_shapes_and_computes_matched_ones(op: str, a_dims: list, b_dims: list,
                                                                     a_fed: tuple, b_fed: tuple) -> None:
    core = ov.Core()
    compiled = core.compile_model(core.read_model(onnx_bcast.convert(_model(op, a_dims, b_dims)).SerializeToString(),
                                                  b""), "CPU")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(a_fed).astype(np.float32), rng.standard_normal(b_fed).astype(np.float32)
    with pytest.raises(RuntimeError):
        compiled({"a": a, "b": b})
    # one shape both declarations take: each fixed dim, else 2
    shape = tuple(da if isinstance(da, int) else db if isinstance(db, int) else 2
                  for da, db in zip(a_dims, b_dims, strict=True))
    a, b = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    (got,) = compiled({"a": a, "b": b}).values()
    np.testing.assert_allclose(got, OPS[op](a, b), rtol=1e-6)
