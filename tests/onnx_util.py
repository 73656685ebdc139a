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


_KERNEL_PROBES: dict[tuple, bool] = {}


def missing_standard_kernels(model: onnx.ModelProto) -> list[str]:
    """The standard nodes of ``model`` (local functions inlined) that the installed onnxruntime's CPU provider has no
    kernel for, as ``Op(since version) on types``: each node probed alone, in a one-node model of its own (a session
    that cannot be made with NOT_IMPLEMENTED). Independent of onnx-bcast: for telling a missing kernel of a standard op
    (ONNX Runtime's build) from a fault of ours."""
    import onnxruntime as ort
    from onnx import inliner, shape_inference

    model = shape_inference.infer_shapes(inliner.inline_local_functions(model))
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    elems = {v.name: v.type.tensor_type.elem_type for v in [*model.graph.input, *model.graph.value_info,
                                                             *model.graph.output] if v.type.HasField("tensor_type")}
    elems.update({t.name: t.data_type for t in model.graph.initializer})
    missing = []
    for node in model.graph.node:
        names = [name for name in [*node.input, *node.output] if name]
        if node.domain not in ("", "ai.onnx") or not all(elems.get(name) for name in names):
            continue
        key = (node.op_type, opset, tuple(elems.get(n, 0) for n in node.input),
               tuple(elems[n] for n in node.output), tuple(a.SerializeToString() for a in node.attribute))
        if key not in _KERNEL_PROBES:
            alone = helper.make_node(node.op_type, [f"i{k}" if n else "" for k, n in enumerate(node.input)],
                                     [f"o{k}" for k in range(len(node.output))])
            alone.attribute.extend(node.attribute)
            graph = helper.make_graph(
                [alone], "probe", [helper.make_tensor_value_info(f"i{k}", elems[n], None)
                                   for k, n in enumerate(node.input) if n],
                [helper.make_tensor_value_info(f"o{k}", elems[n], None) for k, n in enumerate(node.output)])
            probe = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
            try:
                ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
                _KERNEL_PROBES[key] = True
            except Exception as err:  # noqa: BLE001 - onnxruntime's pybind exception types are not importable
                _KERNEL_PROBES[key] = "NOT_IMPLEMENTED" not in str(err)
        if not _KERNEL_PROBES[key]:
            types = ", ".join(TensorProto.DataType.Name(elems[n]).lower() for n in node.input if n)
            since = onnx.defs.get_schema(node.op_type, opset).since_version
            missing.append(f"{node.op_type}({since}) on {types}")
    return sorted(set(missing))


def plain_session(model: onnx.ModelProto):  # noqa: ANN201 - onnxruntime is imported here only
    """A plain ``onnxruntime.InferenceSession`` of a standard model (CPU provider); the calling test skips when the
    session cannot be made because a standard op of it has no kernel in the installed build (the op alone fails)."""
    import onnxruntime as ort
    import pytest

    try:
        return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - onnxruntime's pybind exception types are not importable
        missing = missing_standard_kernels(model) if "NOT_IMPLEMENTED" in str(err) else []
        if not missing:
            raise
        pytest.skip(f"the installed onnxruntime's CPU provider has no kernel for the standard {'; '.join(missing)}")
