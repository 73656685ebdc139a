"""The converted model fails where the original fails, after the tools users run on it (issue 18).

Every case of the case table, with every data input's dims symbolic and the shape-like inputs fed at run time (so
that its checks are emitted), is converted, then put through onnxscript's optimizer, onnx-ir's passes, onnxsim
(default, and with the inputs fixed to the failing shapes), onnxoptimizer and ONNX Runtime at every optimization
level, and read and run by OpenVINO. On the inputs the oracle rejects, each result must fail (or the tool refuse
the model); on the valid ones, each must give the oracle's values. The expected values and verdicts come from the
case table's numpy oracle, not from the code under test.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import pytest

import onnx_bcast
from tests import tool_pipelines as tools
from tests.case_table import CASES, Case
from tests.test_case_table import case_feeds, case_model

SHAPE_INPUTS = {"target_shape", "axes_mapping", "data_shape", "a_shape", "b_shape"}


def symbolic_model(case: Case) -> onnx.ModelProto:
    """The case's model with its shape-like inputs fed at run time and every other input's dims symbolic."""
    model = case_model(case, runtime_shapes=True)
    for value in model.graph.input:
        if value.name in SHAPE_INPUTS:
            continue
        for k, dim in enumerate(value.type.tensor_type.shape.dim):
            dim.ClearField("dim_value")
            dim.dim_param = f"{value.name}_{k}"
    return model


def _converted(case: Case) -> onnx.ModelProto:
    try:
        return onnx_bcast.convert(symbolic_model(case))
    except onnx_bcast.BroadcastError as err:
        if case.valid:  # a form that needs static facts (BroadcastLikeV0's deduced axes): not converted at all
            pytest.skip(f"not convertible with symbolic dims: {err}")
        pytest.skip("the converter proves the failure statically: nothing to run")


def _expect(case: Case, run: Callable[[], list[np.ndarray]], tool: str) -> None:
    """The run fails for an invalid case, or gives the oracle's values."""
    if not case.valid:
        with pytest.raises(Exception):  # noqa: B017 (any failure: what matters is that no value comes back)
            outputs = run()
            pytest.fail(f"{tool} returned {[o.shape for o in outputs]} for an input the original rejects")
        return
    outputs = run()
    expected = case.expected if isinstance(case.expected, tuple) else (case.expected,)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(got), want, strict=False, err_msg=f"{case.name} after {tool}")


OPTIMIZERS: dict[str, tuple[str, Callable[[onnx.ModelProto], onnx.ModelProto]]] = {
    "onnxscript": ("onnxscript", tools.onnxscript_optimize),
    "onnx_ir": ("onnx_ir.passes.common", tools.onnx_ir_passes),
    "onnxoptimizer": ("onnxoptimizer", tools.onnxoptimizer_optimize),
}
RUN_CASES = [pytest.param(c, id=c.name) for c in CASES]


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("case", RUN_CASES)
def test_optimized_converted_model(case: Case, optimizer: str) -> None:
    module, optimize = OPTIMIZERS[optimizer]
    pytest.importorskip(module, reason=f"{module} is not installed (pip install -e '.[tools]')")
    converted = _converted(case)
    feeds = case_feeds(case, runtime_shapes=True)
    optimized = optimize(converted)
    _expect(case, lambda: tools.ort_run(optimized, feeds), optimizer)


@pytest.mark.parametrize("fixed", [False, True], ids=["symbolic", "fixed_shapes"])
@pytest.mark.parametrize("case", RUN_CASES)
def test_onnxsim_converted_model(case: Case, fixed: bool) -> None:
    """onnxsim, and onnxsim with the inputs fixed to the run's shapes: it folds what it can evaluate, so a failing
    check must make it refuse the model or stay in it."""
    pytest.importorskip("onnxsim", reason="onnxsim is not installed (pip install -e '.[tools]')")
    converted = tools.with_output_shapes(_converted(case))
    if converted is None:
        pytest.skip("onnx infers no output shape, which onnxsim needs")
    feeds = case_feeds(case, runtime_shapes=True)
    shapes = {name: list(value.shape) for name, value in feeds.items()} if fixed else None

    def run() -> list[np.ndarray]:
        return tools.ort_run(tools.onnxsim_simplify(converted, shapes), feeds)

    _expect(case, run, "onnxsim")


@pytest.mark.parametrize("level", tools.ORT_LEVELS)
@pytest.mark.parametrize("case", RUN_CASES)
def test_ort_levels(case: Case, level: str) -> None:
    converted = _converted(case)
    feeds = case_feeds(case, runtime_shapes=True)
    _expect(case, lambda: tools.ort_run(converted, feeds, level), level)


def _openvino_loads(model: onnx.ModelProto) -> bool:
    """Whether OpenVINO's ONNX reader reads the model and its CPU plugin compiles it."""
    import openvino as ov

    core = ov.Core()
    try:
        core.compile_model(core.read_model(model.SerializeToString(), b""), "CPU")
    except Exception:  # noqa: BLE001 - whether OpenVINO takes it is the question
        return False
    return True


@pytest.mark.parametrize("case", RUN_CASES)
def test_openvino_loads_guarded_models(case: Case) -> None:
    """OpenVINO reads and compiles the guarded model wherever it does the guards=False form; there the guarded
    model fails on the inputs the original rejects (the bare form may not) and gives the bare form's values on the
    others (OpenVINO's own arithmetic, e.g. its float Div, is not what is tested here)."""
    pytest.importorskip("openvino", reason="openvino is not installed")
    converted = _converted(case)
    bare = onnx_bcast.convert(symbolic_model(case), guards=False)
    if not _openvino_loads(bare):
        pytest.skip("OpenVINO does not read or compile the guards=False form either")
    assert _openvino_loads(converted), "OpenVINO takes the bare form but not the guarded one"
    feeds = case_feeds(case, runtime_shapes=True)
    if not case.valid:
        with pytest.raises(Exception):  # noqa: B017
            outputs = tools.openvino_run(converted, feeds)
            pytest.fail(f"OpenVINO returned {[o.shape for o in outputs]} for an input the original rejects")
        return
    try:
        expected = tools.openvino_run(bare, feeds)
    except Exception:  # noqa: BLE001
        pytest.skip("OpenVINO's runtime cannot run the bare form on this input (zero-size dims, docs/ops.md)")
    try:
        outputs = tools.openvino_run(converted, feeds)
    except Exception:
        if any(0 in value.shape for value in feeds.values()):  # an empty A (2, 0, 3) meets the checked B (1, 1, 3):
            pytest.skip("OpenVINO fuses the check's Expand into the op and computes max(0, 1) = 1 for the output dim")
        raise
    for got, want in zip(outputs, expected, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", RUN_CASES)
def test_lower_to_standard_then_onnxscript(case: Case) -> None:
    """The README's onnx-ir pipeline: ``LowerToStandard`` as a pass, then onnxscript's optimizer on the IR."""
    pytest.importorskip("onnxscript", reason="onnxscript is not installed (pip install -e '.[tools]')")
    import onnx_ir as ir
    import onnxscript.optimizer

    model = ir.serde.deserialize_model(symbolic_model(case))
    try:
        lowered = ir.passes.PassManager([onnx_bcast.LowerToStandard()])(model).model
    except ir.passes.PassError as err:  # onnx-ir wraps the pass's own error
        cause = err
        while cause is not None and not isinstance(cause, onnx_bcast.BroadcastError):
            cause = cause.__cause__
        assert cause is not None, err
        if case.valid:
            pytest.skip(f"not convertible with symbolic dims: {cause}")
        return  # the failure is proven statically
    optimized = tools.quiet(lambda: ir.serde.serialize_model(onnxscript.optimizer.optimize(lowered)))
    feeds = case_feeds(case, runtime_shapes=True)
    _expect(case, lambda: tools.ort_run(optimized, feeds), "LowerToStandard + onnxscript")


def _openvino_reads_allowzero() -> bool:
    """Whether OpenVINO's ONNX reader takes ``Reshape(x, [2, 0], allowzero=1)`` of an empty ``x`` (0 is a size)."""
    import openvino as ov
    from onnx import helper, numpy_helper

    graph = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=1)], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [0])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([2, 0], np.int64), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    try:
        ov.Core().read_model(model.SerializeToString(), b"")
    except Exception:  # noqa: BLE001 - the reader's verdict is the question
        return False
    return True


def _empty_output(case: Case) -> bool:
    expected = case.expected if isinstance(case.expected, tuple) else (case.expected,)
    return case.valid and any(0 in np.shape(e) for e in expected)


@pytest.mark.parametrize("opset", [11, 17])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES if _empty_output(c)])
def test_openvino_runs_static_empty_outputs(case: Case, opset: int) -> None:
    """An empty output of static shape (issue 18): OpenVINO runs the converted model on the case's inputs, fed by
    their names, and gives the oracle's empty output. From opset 14 in every case; before it, where the data has no
    0 dim (the form there broadcasts the data's dims to 1s, which OpenVINO refuses for a 0)."""
    pytest.importorskip("openvino", reason="openvino is not installed")
    import openvino as ov

    if opset >= 14 and not _openvino_reads_allowzero():
        pytest.skip(f"OpenVINO {ov.__version__} reads Reshape's allowzero=1 as 0 = copy (2026.4 reads it right)")
    model = case_model(case)
    model.opset_import[0].version = opset
    feeds = case_feeds(case)
    if opset < 14 and any(0 in value.shape for value in feeds.values()):
        pytest.skip("before opset 14 the empty form is Slice(Expand(x, 1s)): OpenVINO cannot broadcast a 0 to 1")
    converted = onnx_bcast.convert(model)
    core = ov.Core()
    compiled = core.compile_model(core.read_model(converted.SerializeToString(), b""), "CPU")
    names = {name for port in compiled.inputs for name in port.get_names()}
    if case.op == "BroadcastLikeV0":  # like_arg gives only its static shape: no path reads it, OpenVINO drops it
        feeds = {name: value for name, value in feeds.items() if name in names}
    results = compiled(feeds)
    expected = case.expected if isinstance(case.expected, tuple) else (case.expected,)
    for port, want in zip(compiled.outputs, expected, strict=True):
        got = np.asarray(results[port])
        assert got.shape == np.shape(want) and got.dtype == np.asarray(want).dtype, (got.shape, got.dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.float32])
def test_openvino_fails_a_check_tied_to_one_element(dtype: type) -> None:
    """BroadcastV0 to shape [3] without new axes needs arg of shape (3,); arg (1,) must fail in OpenVINO too (found by
    the fuzz's scenario paths: the check tied to a 1-D one-element arg once stretched it to 3 * 2**28 values there,
    as OpenVINO does not check an Expand in shape arithmetic; the Reshape probe fails)."""
    pytest.importorskip("openvino", reason="openvino is not installed")
    node = onnx.helper.make_node("BroadcastV0", ["x"], ["y"], domain="onnx_bcast", name="v0", shape=[3])
    node.attribute.append(onnx.helper.make_attribute("broadcast_axes", [], attr_type=onnx.AttributeProto.INTS))
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = onnx.helper.make_graph([node, onnx.helper.make_node("Neg", ["y"], ["z"])], "g",
                                   [onnx.helper.make_tensor_value_info("x", elem, ["N"])],
                                   [onnx.helper.make_tensor_value_info("z", elem, None)])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18),
                                                         onnx.helper.make_opsetid("onnx_bcast", 1)])
    converted = onnx_bcast.convert(model)
    with pytest.raises(Exception, match="v0/guard"):
        outputs = tools.openvino_run(converted, {"x": np.ones(1, dtype)})
        pytest.fail(f"OpenVINO returned {[o.shape for o in outputs]}")
    np.testing.assert_array_equal(tools.openvino_run(converted, {"x": np.arange(3, dtype=dtype)})[0],
                                  -np.arange(3, dtype=dtype))
