"""Converted bidirectional broadcasts fail in OpenVINO where the original fails, also where the data's dims are
static and the target is fed at run time: the converter relied on the standard ``Expand`` to check the aligned
dims, and OpenVINO's CPU plugin does not check them there (a ``(2, 3)`` broadcast to ``[4, 3]`` returned ``(2, 3)``).
Expected values: ``np.broadcast_shapes`` / ``np.broadcast_to``."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bcast

ov = pytest.importorskip("openvino", reason="OpenVINO is the runtime under test (pip install 'onnx-bcast[openvino]')")

# (op, data dims as declared, data fed, target fed)
CASES = [("Broadcast", [2, 3], (2, 3), [4, 3]), ("Broadcast", [2, 3], (2, 3), [2, 2]),
         ("Broadcast", [2, 3], (2, 3), [5, 2, 3]), ("Broadcast", [2, 3], (2, 3), [2, 1]),
         ("Broadcast", [3], (3,), [2, 2]), ("Broadcast", [2, 1], (2, 1), [3, 4]), ("Broadcast", [2, 1], (2, 1), [2, 4]),
         ("Expand", [1, 3], (1, 3), [4, 3]), ("Expand", [1, 3], (1, 3), [4, 2]), ("Expand", [0, 3], (0, 3), [2, 3])]


def _model(op: str, dims: list[int], target_length: int) -> onnx.ModelProto:
    node = helper.make_node(op, ["x", "t"], ["y"], domain="onnx_bcast", name="bc", mode="bidirectional")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims),
                                            helper.make_tensor_value_info("t", TensorProto.INT64, [target_length])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


@pytest.mark.parametrize(("op", "dims", "fed", "target"), CASES, ids=str)
def test_openvino_checks_a_bidirectional_broadcast_of_static_data(op: str, dims: list, fed: tuple,
                                                                   target: list) -> None:
    core = ov.Core()  # a compiled model per run: OpenVINO keeps state between the runs of one (docs/limits.md)
    converted = onnx_bcast.convert(_model(op, dims, len(target)))
    compiled = core.compile_model(core.read_model(converted.SerializeToString(), b""), "CPU")
    x = np.arange(int(np.prod(fed)), dtype=np.float32).reshape(fed)
    feeds = {"x": x, "t": np.array(target, np.int64)}
    try:
        shape = np.broadcast_shapes(fed, tuple(target))
    except ValueError:
        with pytest.raises(RuntimeError):
            got = compiled(feeds)
            pytest.fail(f"OpenVINO returned {next(iter(got.values())).shape} where the original fails")
        return
    (got,) = compiled(feeds).values()
    np.testing.assert_array_equal(got, np.broadcast_to(x, shape))
