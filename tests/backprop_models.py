"""One-node models of the backprop ops (issue 13) and the runners that run them, for tests/test_backprop_paths.py
(and its child process, which imports only this module). No tests here.

A model has ``delta`` as a graph input, and the shape inputs (``data_shape``/``axes_mapping``, ``a_shape``/
``b_shape``, int64) as initializers (variant ``initializers``), as graph inputs fed at run time (``graph_inputs``),
or as graph inputs with delta's dims unknown to the model too, its rank known (``dynamic_delta``). numpy has no
bfloat16 ONNX Runtime can take, so a bfloat16 model takes and returns float32 and Casts around the op (exact both
ways for bfloat16 values).
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import AttributeProto, TensorProto, helper, numpy_helper
from onnx.helper import np_dtype_to_tensor_dtype
from onnx.reference import ReferenceEvaluator

import onnx_bcast
from onnx_bcast.onnx_defs.reference_ops import reference_ops
from tests.backprop_cases import BROADCAST_BACKPROP, UNBROADCAST, V0_BACKPROP, BpCase

DOMAIN = "onnx_bcast"
OPSET = 18
IR_VERSION = 10
CPU = ["CPUExecutionProvider"]
# shape inputs as initializers; as int64 graph inputs; as graph inputs with delta's dims unknown too (rank known)
VARIANTS = ("initializers", "graph_inputs", "dynamic_delta")
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def node_name(case: BpCase) -> str:
    return f"n_{case.op}_{case.name}"


def output_names(case: BpCase) -> list[str]:
    return ["grad_a", "grad_b"] if case.op == UNBROADCAST else ["grad"]


def shape_inputs(case: BpCase) -> list[tuple[str, np.ndarray]]:
    """The op's shape-like inputs after ``delta``, in order, as int64 vectors."""
    def ints(values):
        return np.asarray(list(values), dtype=np.int64).reshape(-1)

    if case.op == BROADCAST_BACKPROP:
        axes = [] if case.axes is None else [("axes_mapping", ints(case.axes))]
        return [("data_shape", ints(case.data_shape)), *axes]
    if case.op == UNBROADCAST:
        return [("a_shape", ints(case.a_shape)), ("b_shape", ints(case.b_shape))]
    return []


def attributes(case: BpCase) -> dict:
    """The node's attributes; defaults (mode/auto_broadcast "numpy", axis -1) are left out so they are exercised."""
    if case.op == V0_BACKPROP:
        return {"broadcast_axes": list(case.broadcast_axes)}
    mode_attr = "mode" if case.op == BROADCAST_BACKPROP else "auto_broadcast"
    attrs = {} if case.mode == "numpy" else {mode_attr: case.mode}
    if case.axis != -1:
        attrs["axis"] = case.axis
    return attrs


def build_model(case: BpCase, dtype: np.dtype, variant: str = "initializers") -> onnx.ModelProto:
    """One node ``case.op`` on ``delta`` of ``dtype`` and shape ``case.out``."""
    assert variant in VARIANTS, variant
    dtype = np.dtype(dtype)
    narrow = dtype == BFLOAT16
    elem = TensorProto.BFLOAT16 if narrow else np_dtype_to_tensor_dtype(dtype)
    io_elem = TensorProto.FLOAT if narrow else elem
    shapes = shape_inputs(case)
    outs = output_names(case)
    node = helper.make_node(case.op, ["delta_in" if narrow else "delta", *(n for n, _ in shapes)],
                            [f"{o}_bf16" for o in outs] if narrow else outs, domain=DOMAIN, name=node_name(case))
    for key, value in attributes(case).items():
        kind = AttributeProto.INTS if key == "broadcast_axes" else None
        node.attribute.append(helper.make_attribute(key, value, attr_type=kind))
    nodes = [node]
    if narrow:
        nodes.insert(0, helper.make_node("Cast", ["delta"], ["delta_in"], to=TensorProto.BFLOAT16))
        nodes += [helper.make_node("Cast", [f"{o}_bf16"], [o], to=TensorProto.FLOAT) for o in outs]
    delta_dims = [None] * len(case.out) if variant == "dynamic_delta" else list(case.out)
    graph_inputs = [helper.make_tensor_value_info("delta", io_elem, delta_dims)]
    initializers = []
    for name, value in shapes:
        if variant != "initializers":
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, [len(value)]))
        else:
            initializers.append(numpy_helper.from_array(value, name))
    graph_outputs = [helper.make_tensor_value_info(o, io_elem, None) for o in outs]
    graph = helper.make_graph(nodes, f"{case.op}_{case.name}", graph_inputs, graph_outputs, initializer=initializers)
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(DOMAIN, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)


def feeds(case: BpCase, delta: np.ndarray, variant: str = "initializers") -> dict[str, np.ndarray]:
    fed = {"delta": delta.astype(np.float32) if delta.dtype == BFLOAT16 else delta}
    if variant != "initializers":
        fed.update(shape_inputs(case))
    return fed


def as_delta_type(outputs: list, dtype: np.dtype) -> tuple[np.ndarray, ...]:
    """A runner's outputs, bfloat16 ones cast back from the float32 the model returns (exact)."""
    outs = tuple(np.asarray(o) for o in outputs)
    if np.dtype(dtype) == BFLOAT16:
        assert all(o.dtype == np.float32 for o in outs), [o.dtype for o in outs]
        return tuple(o.astype(BFLOAT16) for o in outs)
    return outs


# --- runners: (model, feeds) -> outputs, or raise ---------------------------------------------------------------

def run_session(model: onnx.ModelProto, fed: dict) -> list:
    return onnx_bcast.InferenceSession(model).run(None, fed)


def run_native(model: onnx.ModelProto, fed: dict, *, expect_native: bool = False) -> list:
    session = onnx_bcast.InferenceSession(model, backend="native")
    if expect_native:  # a valid model runs in plain ORT with no Python in the run loop
        assert session.backend == "native", "the native backend fell back to the numpy backend"
        assert all(n.domain == "" for n in session.prepared_model.graph.node)
    return session.run(None, fed)


def run_reference(model: onnx.ModelProto, fed: dict) -> list:
    return ReferenceEvaluator(model, new_ops=reference_ops()).run(None, fed)


def converted(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx_bcast.convert(model)
    left = [n.op_type for n in out.graph.node if n.domain == DOMAIN]
    assert not left, f"onnx_bcast nodes left after convert: {left}"
    return out


def run_converted_ort(model: onnx.ModelProto, fed: dict) -> list:
    options = ort.SessionOptions()
    options.log_severity_level = 4  # invalid runs fail by design: keep ORT's log out of the output
    return ort.InferenceSession(converted(model).SerializeToString(), sess_options=options, providers=CPU).run(None,
                                                                                                             fed)


def run_converted_reference(model: onnx.ModelProto, fed: dict) -> list:
    return ReferenceEvaluator(converted(model)).run(None, fed)


RUNNERS: dict[str, Callable[[onnx.ModelProto, dict], list]] = {
    "session": run_session,
    "native": run_native,
    "reference": run_reference,
    "converted_ort": run_converted_ort,
    "converted_reference": run_converted_reference,
}
# runners whose failure must be onnx_bcast's BroadcastError naming the node (the converted model runs standard ops
# only: plain ORT and onnx.reference raise their own errors, and convert() itself may raise a BroadcastError)
RAISES_OURS = ("session", "native", "reference")
