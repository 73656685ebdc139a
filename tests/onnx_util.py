"""Small builders of one-node models that use our ops, for the tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.cases import Case

IR_VERSION = 10
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]


def case_model(case: Case, dtype: int = TensorProto.FLOAT, constant_shapes: bool = False,
               data_shape: list | None = None, any_rank: bool = False, opset: int = 17) -> onnx.ModelProto:
    """Data shape defaults to dynamic dims of the case's rank (no shape at all with ``any_rank``)."""
    inputs = ["data", "target_shape"] + (["axes_mapping"] if case.axes is not None else [])
    node = helper.make_node(case.op, inputs, ["output"], domain="onnx_bcast", name=f"{case.op.lower()}_node",
                            mode=case.mode, axis=case.axis)
    if data_shape is None:
        data_shape = [None] * len(case.data_shape)
    graph_inputs = [helper.make_tensor_value_info("data", dtype, None if any_rank else data_shape)]
    out_rank = len(case.expected_shape) if case.expected_shape is not None else len(case.target)
    initializers = []
    values = {"target_shape": np.array(case.target, np.int64)}
    if case.axes is not None:
        values["axes_mapping"] = np.array(case.axes, np.int64)
    for name, value in values.items():
        if constant_shapes:
            initializers.append(numpy_helper.from_array(value, name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, [None]))
    output = helper.make_tensor_value_info("output", dtype, [None] * out_rank)
    graph = helper.make_graph([node], "case", graph_inputs, [output], initializer=initializers)
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("onnx_bcast", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)


def case_feeds(case: Case, data: np.ndarray, constant_shapes: bool = False) -> dict[str, np.ndarray]:
    """The feeds of ``case_model``."""
    feeds = {"data": data}
    if not constant_shapes:
        feeds["target_shape"] = np.array(case.target, np.int64)
        if case.axes is not None:
            feeds["axes_mapping"] = np.array(case.axes, np.int64)
    return feeds


def skip_unless_ort_reads(opset: int) -> None:
    """Skip the calling test when the installed onnxruntime reads only older opsets: a test's needs never raise the
    product's minimum onnxruntime."""
    import pytest

    from onnx_bcast.model.runtime_limits import max_opset

    if opset > max_opset():
        pytest.skip(f"runs default-domain opset {opset}; the installed onnxruntime reads up to opset {max_opset()}")
