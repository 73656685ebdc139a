"""ONNX Runtime's own model tools take converted models (issue 33): symbolic shape inference
(``onnxruntime.tools.symbolic_shape_infer``, with and without ``auto_merge``) and the quantization users run after
it (``quant_pre_process``, then ``quantize_dynamic`` with its default settings).

Every case of the case table in two forms that keep its checks open (every data dim symbolic with the shape-like
inputs constant; every dim static with the shape-like inputs fed at run time), and legacy ``broadcast=1`` nodes with
symbolic dims. A tool must take the guarded model wherever it takes the ``guards=False`` one (where it refuses that
too, the limit is the tool's: an ``Expand`` to a fed target, two symbols broadcast without ``auto_merge``); the
quantized model fails on the inputs the original rejects and gives the converted model's values on the others.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnx_bcast
from tests import tool_pipelines as tools
from tests.case_table import CASES, Case
from tests.test_case_table import case_feeds, case_model
from tests.test_legacy_onnx import _one_node

pytest.importorskip("sympy", reason="symbolic shape inference needs sympy (pip install sympy)")

FORMS = ("symbolic_dims", "fed_shapes")
# tested with a check open, not skipped: each op family and mode, valid and invalid inputs
MUST_RUN = {
    "bc_numpy_31_to_236-symbolic_dims", "bc_numpy_dim_mismatch-fed_shapes", "bc_explicit_3_to_132-symbolic_dims",
    "bc_bidi_20_with_11-fed_shapes", "bc_bidi_3_vs_2-fed_shapes", "bc_pdpd_default_axis-symbolic_dims",
    "bc_pdpd_dim_mismatch-symbolic_dims", "ex_pdpd_axis1-symbolic_dims", "ew_add_none_float32-symbolic_dims",
    "ew_mul_pdpd_float32-symbolic_dims", "ew_div_pdpd_dim_mismatch-symbolic_dims", "bp_numpy_236_to_31-fed_shapes",
    "bp_bidirectional_mismatch-symbolic_dims", "ub_none_same-symbolic_dims", "ub_pdpd_delta_not_a-fed_shapes",
    "v0_3_to_23_axis0-symbolic_dims", "like_given_mismatch-symbolic_dims", "legacy_bias_axis1", "legacy_bias_mismatch",
}
# legacy Add nodes (default-domain opset 6), dims symbolic: name -> (A, B, broadcast, axis)
LEGACY = {
    "legacy_bias_axis1": ((2, 3, 4, 5), (3, 4), 1, 1),
    "legacy_bias_mismatch": ((2, 3, 4, 5), (4,), 1, 1),
    "legacy_broadcast0": ((2, 3), (2, 3), 0, None),
    "legacy_broadcast0_unequal": ((2, 3), (2, 4), 0, None),
}
LEGACY_VALID = {"legacy_bias_axis1", "legacy_broadcast0"}


class Subject:
    """A model with its feeds and whether the original accepts them."""

    def __init__(self, name: str, model: Callable[[], onnx.ModelProto], feeds: dict[str, np.ndarray],
                 valid: bool) -> None:
        self.name, self.model, self.feeds, self.valid = name, model, feeds, valid

    def converted(self) -> tuple[onnx.ModelProto, onnx.ModelProto]:
        """The converted model and its ``guards=False`` form; skips where no check stays open."""
        try:
            guarded = onnx_bcast.convert(self.model())
        except onnx_bcast.BroadcastError:
            self.skip("the converter decides the case statically")
        if not any("/guard:" in node.name for node in guarded.graph.node):
            self.skip("every check is proven statically")
        return guarded, onnx_bcast.convert(self.model(), guards=False)

    def skip(self, reason: str, required: bool = True) -> None:
        """Skips the test; a subject of ``MUST_RUN`` fails instead where it is ``required``."""
        assert not required or self.name not in MUST_RUN, f"{self.name} must be tested: {reason}"
        pytest.skip(reason)


def _table_model(case: Case, form: str) -> onnx.ModelProto:
    if form == "fed_shapes":
        return case_model(case, runtime_shapes=True)
    model = case_model(case)
    for value in model.graph.input:
        for k, dim in enumerate(value.type.tensor_type.shape.dim):
            dim.ClearField("dim_value")
            dim.dim_param = f"{value.name}_{k}"
    return model


def _subjects() -> list[Subject]:
    subjects = [Subject(f"{case.name}-{form}", partial(_table_model, case, form),
                        case_feeds(case, runtime_shapes=form == "fed_shapes"), case.valid)
                for case in CASES for form in FORMS]
    for name, (a_shape, b_shape, broadcast, axis) in LEGACY.items():
        feeds = {"a": np.ones(a_shape, np.float32), "b": np.full(b_shape, 2, np.float32)}
        model = partial(_one_node, a_shape, b_shape, broadcast, axis, dynamic=True)
        subjects.append(Subject(name, model, feeds, name in LEGACY_VALID))
    return subjects


SUBJECTS = [pytest.param(subject, id=subject.name) for subject in _subjects()]


def _refusal(run: Callable[[], object]) -> str | None:
    try:
        run()
    except Exception as err:  # noqa: BLE001 - whether the tool takes the model is the question
        return f"{type(err).__name__}: {err}"
    return None


@pytest.mark.parametrize("auto_merge", [False, True], ids=["plain", "auto_merge"])
@pytest.mark.parametrize("subject", SUBJECTS)
def test_symbolic_shape_inference_takes_guards(subject: Subject, auto_merge: bool, tmp_path: Path) -> None:
    guarded, bare = subject.converted()
    refused = _refusal(lambda: tools.symbolic_shape_infer(bare, auto_merge, tmp_path))
    if refused:  # without auto_merge, where a symbol meets another dim (every symbolic_dims model of a target)
        subject.skip(f"symbolic shape inference refuses the guards=False form too: {refused}", required=auto_merge)
    tools.symbolic_shape_infer(guarded, auto_merge, tmp_path)


def _outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(out) for out in tools.ort_run(model, feeds)]


def _quantized(model: onnx.ModelProto, folder: Path, auto_merge: bool) -> onnx.ModelProto | str:
    """The quantized model, or why the tools refuse it."""
    try:
        return tools.quantized(model, folder, auto_merge)
    except Exception as err:  # noqa: BLE001 - whether the tools take the model is the question
        return f"{type(err).__name__}: {err}"


@pytest.mark.parametrize("subject", SUBJECTS)
def test_quantized_model_fails_where_the_original_fails(subject: Subject, tmp_path: Path) -> None:
    """With ``quant_pre_process``'s default settings, or ``auto_merge`` where those refuse the guards=False form."""
    guarded, bare = subject.converted()
    auto_merge = False
    bare_quantized = _quantized(bare, tmp_path, auto_merge)
    if isinstance(bare_quantized, str):
        auto_merge = True
        bare_quantized = _quantized(bare, tmp_path, auto_merge)
    if isinstance(bare_quantized, str):
        subject.skip(f"quantization refuses the guards=False form too: {bare_quantized}")
    quantized = tools.quantized(guarded, tmp_path, auto_merge)
    if not subject.valid:
        with pytest.raises(Exception):  # noqa: B017 - any failure: what matters is that no value comes back
            outputs = tools.ort_run(quantized, subject.feeds)
            pytest.fail(f"the quantized model returned {[o.shape for o in outputs]} for inputs the original rejects")
        return
    if _refusal(lambda: tools.ort_run(bare_quantized, subject.feeds)):  # auto_merge wrote a merged constant
        subject.skip("auto_merge fixed an input dim that these inputs do not have", required=False)  # into an input
    for got, want in zip(_outputs(quantized, subject.feeds), _outputs(guarded, subject.feeds), strict=True):
        np.testing.assert_array_equal(got, want, strict=True)  # nothing here is quantized: the same values


@pytest.mark.parametrize("subject", SUBJECTS)
def test_onnxslim_keeps_the_checks(subject: Subject) -> None:
    """onnxslim runs a copy of the same inference, with ``auto_merge``, and writes the values it computes into the
    model: the slimmed model still fails on the inputs the original rejects, and gives the converted model's values
    on the others wherever it takes them (it may fix a symbolic input dim to the dim it met: the guards=False form
    then refuses those inputs too)."""
    pytest.importorskip("onnxslim", reason="onnxslim is not installed")
    guarded, bare = subject.converted()
    slimmed = tools.onnxslim_slim(guarded)

    def run(model: onnx.ModelProto) -> list[np.ndarray]:  # an input nothing reads is dropped
        names = {value.name for value in model.graph.input}
        return _outputs(model, {name: v for name, v in subject.feeds.items() if name in names})

    if not subject.valid:
        with pytest.raises(Exception):  # noqa: B017 - any failure: what matters is that no value comes back
            outputs = run(slimmed)
            pytest.fail(f"the slimmed model returned {[o.shape for o in outputs]} for inputs the original rejects")
        return
    if _refusal(lambda: run(tools.onnxslim_slim(bare))):
        subject.skip("onnxslim fixed an input dim that these inputs do not have", required=False)
    for got, want in zip(run(slimmed), _outputs(guarded, subject.feeds), strict=True):
        np.testing.assert_array_equal(got, want, strict=True)


def _bias_then_matmul() -> onnx.ModelProto:
    """``MatMul(Add<none>(x, b), w)``: x and b share the dim_param ``N``, which ONNX Runtime does not check, so the
    none rule's check stays open; the MatMul is what ``quantize_dynamic`` quantizes."""
    add = helper.make_node("Add", ["x", "b"], ["y"], domain="onnx_bcast", name="bias", auto_broadcast="none")
    matmul = helper.make_node("MatMul", ["y", "w"], ["z"], name="project")
    weights = numpy_helper.from_array(np.linspace(-1, 1, 16 * 8, dtype=np.float32).reshape(16, 8), "w")
    graph = helper.make_graph([add, matmul], "bias_then_matmul",
                              [helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, ["N", 16])
                               for name in ("x", "b")],
                              [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, ["N", 8])], [weights])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                             ir_version=10)


def test_quantized_matmul_after_a_check(tmp_path: Path) -> None:
    """The MatMul is quantized; the quantized model gives the converted one's values within quantization, and fails
    where b's rows are not x's."""
    converted = onnx_bcast.convert(_bias_then_matmul())
    for auto_merge in (False, True):
        tools.symbolic_shape_infer(converted, auto_merge, tmp_path)
    quantized = tools.quantized(converted, tmp_path)
    assert any(node.op_type in ("MatMulInteger", "DynamicQuantizeMatMul") for node in quantized.graph.node)
    rng = np.random.default_rng(0)
    x, b = rng.standard_normal((2, 16), np.float32), rng.standard_normal((2, 16), np.float32)
    want = _outputs(converted, {"x": x, "b": b})[0]
    got = _outputs(quantized, {"x": x, "b": b})[0]
    assert got.shape == want.shape == (2, 8)
    np.testing.assert_allclose(got, want, atol=0.1 * float(np.abs(want).max()))
    with pytest.raises(Exception, match="bias/guard"):
        tools.ort_run(quantized, {"x": x, "b": b[:1]})
