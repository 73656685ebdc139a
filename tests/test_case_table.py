"""The shared case table (tests/case_table.py) through every runner, public API only.

Runners: the numpy kernel, onnx_bcast.InferenceSession, plain ORT on prepare(model) with session_options(),
onnx.reference.ReferenceEvaluator with our reference ops, and plain ORT on convert(model). Models have one node with
static input shapes and target_shape/axes_mapping as initializers; the run-time-shapes variant feeds those two.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import AttributeProto, helper, numpy_helper
from onnx.helper import np_dtype_to_tensor_dtype
from onnx.reference import ReferenceEvaluator

import onnx_bcast
from onnx_bcast.onnx_defs.reference_ops import reference_ops
from tests.case_table import (
    BROADCAST_OPS,
    CASES,
    DOMAIN,
    INTS_ATTRS,
    LEFT_OUT_BY_NUMPY,
    OP_MODES,
    VALID_CASES,
    Case,
    cases_for,
)
from tests.numpy_dims import numpy_1_reason

IR_VERSION = 10
OPSET = 17
CPU = ["CPUExecutionProvider"]


def case_model(case: Case, runtime_shapes: bool = False) -> onnx.ModelProto:
    """One node, every graph input with its static shape; target_shape/axes_mapping are initializers (constants)
    unless ``runtime_shapes`` makes them graph inputs too."""
    attributes = [helper.make_attribute(k, v, attr_type=AttributeProto.INTS) if k in INTS_ATTRS
                  else helper.make_attribute(k, v) for k, v in case.attrs.items()]
    outputs = output_names(case)
    node = helper.make_node(case.op, list(case.input_names), outputs, domain=DOMAIN, name=case.node_name)
    node.attribute.extend(attributes)
    n_graph = len(case.inputs) - (0 if runtime_shapes else case.shape_input_count)
    graph_inputs = [helper.make_tensor_value_info(name, np_dtype_to_tensor_dtype(value.dtype), list(value.shape))
                    for name, value in zip(case.input_names[:n_graph], case.inputs[:n_graph], strict=True)]
    initializers = [numpy_helper.from_array(value, name)
                    for name, value in zip(case.input_names[n_graph:], case.inputs[n_graph:], strict=True)]
    values = [helper.make_tensor_value_info(name, np_dtype_to_tensor_dtype(case.output_dtype), None)
              for name in outputs]
    graph = helper.make_graph([node], case.name, graph_inputs, values, initializer=initializers)
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(DOMAIN, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)


def output_names(case: Case) -> list[str]:
    """``out``, or ``out0``, ``out1``, ... for an op of several outputs."""
    return ["out0", "out1"] if case.op == "Unbroadcast" else ["out"]


def _outputs(case: Case, outputs: list) -> object:
    """The run's output, or all of them (a tuple) for an op of several outputs."""
    return tuple(outputs) if len(output_names(case)) > 1 else outputs[0]


def case_feeds(case: Case, runtime_shapes: bool = False) -> dict[str, np.ndarray]:
    n_graph = len(case.inputs) - (0 if runtime_shapes else case.shape_input_count)
    return dict(zip(case.input_names[:n_graph], case.inputs[:n_graph], strict=True))


# --- runners: each takes a case and returns the output, or raises ---------------------------------------------------

def run_kernel(case: Case) -> np.ndarray:
    inputs, attrs = case.inputs, dict(case.attrs)
    if case.op == "Broadcast":
        return onnx_bcast.broadcast(*inputs, **attrs)
    if case.op == "Expand":
        return onnx_bcast.expand(*inputs, **attrs)
    if case.op == "BroadcastV0":
        return onnx_bcast.broadcast_v0(inputs[0], attrs["shape"], attrs["broadcast_axes"])
    if case.op == "BroadcastLikeV0":
        return onnx_bcast.broadcast_like_v0(*inputs, **attrs)
    if case.op == "BroadcastBackprop":
        return onnx_bcast.broadcast_backprop(*inputs, **attrs)
    if case.op == "BroadcastV0Backprop":
        return onnx_bcast.broadcast_v0_backprop(inputs[0], attrs["broadcast_axes"])
    if case.op == "Unbroadcast":
        return onnx_bcast.unbroadcast(*inputs, **attrs)
    return onnx_bcast.elementwise(case.op, *inputs, **attrs)


def run_session(case: Case, runtime_shapes: bool = False) -> np.ndarray:
    session = onnx_bcast.InferenceSession(case_model(case, runtime_shapes))
    return _outputs(case, session.run(None, case_feeds(case, runtime_shapes)))


def run_prepared_ort(case: Case, runtime_shapes: bool = False) -> np.ndarray:
    prepared = onnx_bcast.prepare(case_model(case, runtime_shapes))
    options = onnx_bcast.session_options()
    options.log_severity_level = 4  # invalid runs fail by design: keep ORT's error log out of the test output
    session = ort.InferenceSession(prepared.SerializeToString(), sess_options=options, providers=CPU)
    return _outputs(case, session.run(None, case_feeds(case, runtime_shapes)))


def run_reference(case: Case) -> np.ndarray:
    evaluator = ReferenceEvaluator(case_model(case), new_ops=reference_ops())
    return _outputs(case, evaluator.run(None, case_feeds(case)))


def run_converted_ort(case: Case, runtime_shapes: bool = False) -> np.ndarray:
    converted = onnx_bcast.convert(case_model(case, runtime_shapes))
    assert all(n.domain != DOMAIN for n in converted.graph.node)
    options = ort.SessionOptions()
    options.log_severity_level = 4
    session = ort.InferenceSession(converted.SerializeToString(), sess_options=options, providers=CPU)
    return _outputs(case, session.run(None, case_feeds(case, runtime_shapes)))


def run_native(case: Case, runtime_shapes: bool = False) -> np.ndarray:
    session = onnx_bcast.InferenceSession(case_model(case, runtime_shapes), backend="native")
    if case.valid:  # no Python in the run loop (a model that fails for every input may run the numpy backend)
        assert session.backend == "native" and all(n.domain == "" for n in session.prepared_model.graph.node)
    return _outputs(case, session.run(None, case_feeds(case, runtime_shapes)))


RUNNERS: dict[str, Callable[[Case], np.ndarray]] = {
    "kernel": run_kernel,
    "session": run_session,
    "native": run_native,
    "prepared_ort": run_prepared_ort,
    "reference": run_reference,
    "converted_ort": run_converted_ort,
}
RUNTIME_RUNNERS: dict[str, Callable[..., np.ndarray]] = {
    "session_runtime_shapes": run_session,
    "native_runtime_shapes": run_native,
    "prepared_ort_runtime_shapes": run_prepared_ort,
    "converted_ort_runtime_shapes": run_converted_ort,
}
# runners whose failure is onnx_bcast's own BroadcastError naming the node (the kernel has no node to name)
NAMES_THE_NODE = ("session", "native", "reference", "converted_ort")

# (case name, runner) -> why it fails today; strict: an unexpected pass shows the bug fixed
XFAILS: dict[tuple[str, str], str] = {}


def _params(cases: list[Case], runners: dict[str, Callable], xfails: dict[tuple[str, str], str]) -> list:
    """One pytest param per (case, runner), id ``<case name>-<runner>``, strict xfail where ``xfails`` says."""
    params = []
    for case in cases:
        for runner in runners:
            reason = xfails.get((case.name, runner))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(case, runner, id=f"{case.name}-{runner}", marks=marks))
    return params


def assert_exactly(got: object, expected: np.ndarray | tuple[np.ndarray, ...]) -> None:
    """Same dtype, shape and bytes (of each output, for several)."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), f"{len(expected)} outputs expected, got {got!r}"
        for one, want in zip(got, expected, strict=True):
            assert_exactly(one, want)
        return
    got = np.asarray(got)
    assert got.dtype == expected.dtype, f"dtype {got.dtype}, expected {expected.dtype}"
    assert got.shape == expected.shape, f"shape {got.shape}, expected {expected.shape}"
    np.testing.assert_array_equal(got, expected)
    if expected.dtype != object:  # strings: object arrays, whose bytes are pointers
        assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


@pytest.mark.parametrize(("case", "runner"), _params(CASES, RUNNERS, XFAILS))
def test_case(case: Case, runner: str) -> None:
    if case.valid:
        assert_exactly(RUNNERS[runner](case), case.expected)
        return
    if runner == "prepared_ort":  # plain ORT cannot raise our error type: any exception, and no value
        with pytest.raises(Exception):  # noqa: B017
            RUNNERS[runner](case)
        return
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        RUNNERS[runner](case)
    message = str(info.value)
    for word in case.error_words + ((f"'{case.node_name}'",) if runner in NAMES_THE_NODE else ()):
        assert word in message, f"{word!r} not in {message!r}"


SHAPE_INPUT_OPS = (*BROADCAST_OPS, "BroadcastBackprop", "Unbroadcast")  # their shape-like inputs may come at run time
RUNTIME_CASES = [c for c in VALID_CASES if c.op in SHAPE_INPUT_OPS]


@pytest.mark.parametrize(("case", "runner"), _params(RUNTIME_CASES, RUNTIME_RUNNERS, {}))
def test_case_runtime_shapes(case: Case, runner: str) -> None:
    assert_exactly(RUNTIME_RUNNERS[runner](case, runtime_shapes=True), case.expected)


RUNTIME_INVALID_CASES = [c for c in CASES if not c.valid and c.op in SHAPE_INPUT_OPS]
RUNTIME_XFAILS: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize(("case", "runner"), _params(RUNTIME_INVALID_CASES, RUNTIME_RUNNERS, RUNTIME_XFAILS))
def test_case_runtime_shapes_invalid(case: Case, runner: str) -> None:
    """Invalid shape values fed at run time: InferenceSession raises our error naming the node; plain ORT (prepared
    or converted) raises something and returns no value. None of these aborts (checked in a child process first)."""
    if runner not in ("session_runtime_shapes", "native_runtime_shapes"):
        with pytest.raises(Exception):  # noqa: B017
            RUNTIME_RUNNERS[runner](case, runtime_shapes=True)
        return
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        RUNTIME_RUNNERS[runner](case, runtime_shapes=True)
    for word in case.error_words + (f"'{case.node_name}'",):
        assert word in str(info.value), f"{word!r} not in {str(info.value)!r}"
    if runner == "native_runtime_shapes":  # the same message as the numpy backend's, word for word
        with pytest.raises(onnx_bcast.BroadcastError) as numpy_info:
            run_session(case, runtime_shapes=True)
        assert str(info.value) == str(numpy_info.value)


@pytest.mark.parametrize(("name", "rank"), LEFT_OUT_BY_NUMPY or [pytest.param("", 0, marks=pytest.mark.skip(
    reason="no case is left out: the installed numpy makes arrays of every rank in the table"))])
def test_case_left_out_by_numpy(name: str, rank: int) -> None:
    """A valid case whose output the installed numpy cannot make (numpy 1: over 32 dims) is not in the table; it
    says so here (tests/test_numpy1_ranks.py tests that the kernels refuse such ranks cleanly)."""
    pytest.skip(f"{name}: {numpy_1_reason(rank)}")


def test_every_op_and_mode_has_valid_cases() -> None:
    assert not [pair for pair in OP_MODES if not any(c.valid for c in cases_for(*pair))]
    assert len({c.name for c in CASES}) == len(CASES)
