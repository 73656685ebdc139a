"""The gradient ops' float sums on each path: the numpy backend (numpy's pairwise summation) and the native backend
and converted model (ONNX Runtime's ``ReduceSum``) each lie within 64 ulps of the largest magnitude of the exact sum
(computed in float64 here), the bound the README states and ``--verify`` allows; integer sums agree exactly."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast


def _model(elem: int) -> onnx.ModelProto:
    """``BroadcastBackprop(delta [N, 3, 4096], data_shape [3, 1], mode=pdpd, axis=1)``: B's dims sum over N, 4096."""
    node = helper.make_node("BroadcastBackprop", ["delta", "data_shape"], ["grad"], domain="onnx_bcast", name="bp",
                            mode="pdpd", axis=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("delta", elem, ["n", 3, 4096])],
                              [helper.make_tensor_value_info("grad", elem, None)],
                              [numpy_helper.from_array(np.array([3, 1], np.int64), "data_shape")])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 18),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


def _paths(model: onnx.ModelProto, delta: np.ndarray) -> dict[str, np.ndarray]:
    feeds = {"delta": delta}
    converted = ort.InferenceSession(onnx_bcast.convert(model).SerializeToString(), providers=["CPUExecutionProvider"])
    return {"numpy": onnx_bcast.InferenceSession(model).run(None, feeds)[0],
            "native": onnx_bcast.InferenceSession(model, backend="native").run(None, feeds)[0],
            "converted": converted.run(None, feeds)[0]}


def test_float_sums_lie_within_64_ulps_of_the_exact_sum_on_every_path() -> None:
    delta = np.random.default_rng(5).standard_normal((8, 3, 4096)).astype(np.float32)
    exact = delta.astype(np.float64).sum(axis=(0, 2)).reshape(3, 1)
    bound = 64 * float(np.finfo(np.float32).eps) * max(float(np.abs(exact).max()), 1.0)
    for path, got in _paths(_model(TensorProto.FLOAT), delta).items():
        assert got.dtype == np.float32 and got.shape == (3, 1), path
        assert float(np.abs(got.astype(np.float64) - exact).max()) <= bound, path


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_sums_agree_exactly(dtype: str) -> None:
    delta = np.random.default_rng(6).integers(-1000, 1000, (8, 3, 4096)).astype(dtype)
    want = delta.sum(axis=(0, 2), dtype=dtype).reshape(3, 1)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    for path, got in _paths(_model(elem), delta).items():
        np.testing.assert_array_equal(got, want, err_msg=path)
