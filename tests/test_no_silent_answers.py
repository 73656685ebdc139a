"""The examples of "no silent answers" with run-time shapes: every path fails, none returns a value.

Each example is a one-node model whose shape-like inputs are graph inputs. The original raises BroadcastError
through both backends (the native one with the numpy one's message, word for word), and the converted model fails
in plain ONNX Runtime and in onnx.reference. Plain ONNX Runtime with session_options() refuses the spec form when the
session is made, also when a ReduceSum or Concat follows the invalid node (which once turned the empty tensor of a
failed node into 0.0 or dropped rows).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.helper import np_dtype_to_tensor_dtype
from onnx.reference import ReferenceEvaluator

import onnx_bcast

F32 = np.float32


def _i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


# name -> (op, attributes, feeds in input order); every feed is a graph input (nothing is known when converting)
EXAMPLES = {
    "numpy_is_unidirectional": ("Broadcast", {"mode": "numpy"},
                                {"x": np.zeros((3, 1), F32), "t": _i64(1, 4)}),
    "explicit_axes_not_increasing": ("Broadcast", {"mode": "explicit"},
                                     {"x": np.zeros((3, 2), F32), "t": _i64(2, 3), "a": _i64(1, 0)}),
    "explicit_axis_negative": ("Broadcast", {"mode": "explicit"},
                               {"x": np.zeros((3,), F32), "t": _i64(2, 3), "a": _i64(-1)}),
    "pdpd_output_is_a": ("Add", {"auto_broadcast": "pdpd", "axis": 0},
                         {"A": np.zeros((1, 3), F32), "B": np.zeros((4,), F32)}),
    "none_needs_equal_shapes": ("Add", {"auto_broadcast": "none"},
                                {"A": np.zeros((2, 3), F32), "B": np.zeros((2, 4), F32)}),
}


def _model(op: str, attrs: dict, feeds: dict[str, np.ndarray], after: str | None = None) -> onnx.ModelProto:
    nodes = [helper.make_node(op, list(feeds), ["y"], domain="onnx_bcast", name="ours", **attrs)]
    out = "y"
    if after == "ReduceSum":
        nodes.append(helper.make_node("ReduceSum", ["y"], ["total"], keepdims=0))
        out = "total"
    elif after == "Concat":
        nodes.append(helper.make_node("Concat", ["y", "y"], ["both"], axis=0))
        out = "both"
    inputs = [helper.make_tensor_value_info(name, np_dtype_to_tensor_dtype(v.dtype), [None] * v.ndim)
              for name, v in feeds.items()]
    graph = helper.make_graph(nodes, "example", inputs, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                             ir_version=10)


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_path_fails(name: str) -> None:
    op, attrs, feeds = EXAMPLES[name]
    model = _model(op, attrs, feeds)
    with pytest.raises(onnx_bcast.BroadcastError) as numpy_error:
        onnx_bcast.InferenceSession(model).run(None, feeds)
    assert "'ours'" in str(numpy_error.value) and op in str(numpy_error.value)
    with pytest.raises(onnx_bcast.BroadcastError) as native_error:
        onnx_bcast.InferenceSession(model, backend="native").run(None, feeds)
    assert str(native_error.value) == str(numpy_error.value)
    converted = onnx_bcast.convert(model)
    options = ort.SessionOptions()
    options.log_severity_level = 4
    plain = ort.InferenceSession(converted.SerializeToString(), options, providers=["CPUExecutionProvider"])
    with pytest.raises(Exception):  # noqa: B017  (any error: what matters is that no value comes back)
        plain.run(None, feeds)
    with pytest.raises(Exception):  # noqa: B017
        ReferenceEvaluator(converted).run(None, feeds)


@pytest.mark.parametrize("after", [None, "ReduceSum", "Concat"])
@pytest.mark.parametrize("name", ["numpy_is_unidirectional", "none_needs_equal_shapes"])
def test_plain_ort_refuses_the_spec_form(name: str, after: str | None) -> None:
    op, attrs, feeds = EXAMPLES[name]
    model = _model(op, attrs, feeds, after)
    with pytest.raises(Exception) as refused:  # noqa: B017  (a session error, never a value)
        ort.InferenceSession(model.SerializeToString(), onnx_bcast.session_options(),
                             providers=["CPUExecutionProvider"])
    # ORT names the attribute that says to prepare the model, or first what else the bridge's form lacks: an
    # attribute left at its default, or an absent optional input (the bridge has a fixed arity)
    reasons = ("run_onnx_bcast_prepare_on_this_model_first", "input size", "Unable to find attribute")
    assert any(reason in str(refused.value) for reason in reasons), refused.value
