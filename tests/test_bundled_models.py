"""Every bundled model converts, and the result runs in onnx.reference and OpenVINO with the custom-op outputs."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

import onnx_bcast
from onnx_bcast.convert import convert
from onnx_bcast.models import MODELS_DIR, bundled_models
from onnx_bcast.models.build import build
from onnx_bcast.random_inputs import random_feeds

BUNDLED = bundled_models()

#: Standard ops that compute new float values. Everything else in the bundled models only moves data.
ARITHMETIC = {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "MatMul", "Gemm", "Sum", "Mean", "Exp",
              "Log", "Tanh", "Sigmoid", "Softmax", "ReduceSum", "ReduceMean", "Conv", "BatchNormalization"}


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            subgraphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in subgraphs:
                yield from _graphs(sub)


def _nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    nodes = [n for g in _graphs(model.graph) for n in g.node]
    nodes += [n for f in model.functions for n in f.node]
    return nodes


def _feed_variants(session: onnx_bcast.InferenceSession) -> list[dict[str, np.ndarray]]:
    """The demo's random feeds, and each True/False combination of bool scalar inputs (If conditions)."""
    base = random_feeds(session, seed=0)
    flags = [i.name for i in session.get_inputs() if i.type == "tensor(bool)" and len(i.shape) == 0]
    variants = [base]
    for values in itertools.product([False, True], repeat=len(flags)):
        variants.append({**base, **{name: np.array(v) for name, v in zip(flags, values, strict=True)}})
    return variants


def _custom_and_converted(path: Path) -> tuple[onnx.ModelProto, onnx.ModelProto, onnx_bcast.InferenceSession]:
    model = onnx.load(str(path))
    converted = convert(model)
    assert not [n for n in _nodes(converted) if n.domain == onnx_bcast.DOMAIN], "our nodes left after convert"
    onnx.checker.check_model(converted, full_check=True)
    return model, converted, onnx_bcast.InferenceSession(model)


def test_there_are_bundled_models() -> None:
    assert {"batchnorm_v0", "expand_modes", "nchw_bias_explicit", "runtime_shape_if"} <= {p.stem for p in BUNDLED}


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_converted_runs_in_reference_evaluator_bit_identical(path: Path) -> None:
    """Bit for bit, but where a MatMul sums floats: numpy (onnx.reference) and ONNX Runtime add in other orders (with
    onnxruntime 1.20 and numpy 1.26 the last bits of paddle_matmul_bias differ), so there within float32 rounding."""
    model, converted, session = _custom_and_converted(path)
    names = [o.name for o in session.get_outputs()]
    reference = ReferenceEvaluator(converted)
    sums = any(n.op_type == "MatMul" for n in _nodes(model))
    for feeds in _feed_variants(session):
        for name, ours, ref in zip(names, session.run(None, feeds), reference.run(None, feeds), strict=True):
            ref = np.asarray(ref)
            assert (ref.dtype, ref.shape) == (ours.dtype, ours.shape), name
            if sums:
                np.testing.assert_allclose(ref, ours, rtol=1e-5, atol=1e-5 * float(np.abs(ours).max(initial=1)))
            else:
                assert ref.tobytes() == ours.tobytes(), name


def _openvino_outputs(converted: onnx.ModelProto, feeds: dict[str, np.ndarray], names: list[str]) -> list[np.ndarray]:
    ov = pytest.importorskip("openvino")
    hints = pytest.importorskip("openvino.properties.hint")
    core = ov.Core()
    # f32 inference: on CPUs with bf16 support OpenVINO's CPU plugin otherwise computes in bfloat16.
    compiled = core.compile_model(core.read_model(model=converted.SerializeToString()), "CPU",
                                  {hints.inference_precision: ov.Type.f32})
    results = compiled(feeds)
    return [np.asarray(results[compiled.output(name)]) for name in names]


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_converted_runs_in_openvino_with_custom_op_outputs(path: Path) -> None:
    pytest.importorskip("openvino")
    _, converted, session = _custom_and_converted(path)
    names = [o.name for o in session.get_outputs()]
    arithmetic = [n.op_type for n in _nodes(converted) if n.op_type in ARITHMETIC]
    for feeds in _feed_variants(session):
        for name, ours, got in zip(names, session.run(None, feeds), _openvino_outputs(converted, feeds, names),
                                   strict=True):
            assert (got.dtype, got.shape) == (ours.dtype, ours.shape), name
            if len(arithmetic) <= 1:
                # Data movement plus at most one IEEE operation per element (e.g. one Add): every runtime rounds
                # it the same way, so the outputs must be bit-identical.
                assert got.tobytes() == ours.tobytes(), name
            else:
                # A chain of arithmetic (e.g. Sub, Mul, Add): OpenVINO's CPU plugin fuses it (FMA), so the last
                # bits differ. Near-cancelling sums make the error relative to the operands' scale, not to the
                # result, hence atol scaled to the largest output.
                np.testing.assert_allclose(got, ours, rtol=1e-6, atol=1e-6 * float(np.abs(ours).max()),
                                           err_msg=f"{name}: ops {arithmetic}")


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_bundled_file_is_small_and_loadable_everywhere(path: Path) -> None:
    assert path.stat().st_size < 1024 * 1024
    model = onnx.load(str(path))
    assert model.ir_version <= 13
    onnx.checker.check_model(model, full_check=True)


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_our_nodes_give_every_schema_attribute(path: Path) -> None:
    ours = [n for n in _nodes(onnx.load(str(path))) if n.domain == onnx_bcast.DOMAIN]
    assert ours, "a bundled model without onnx_bcast nodes"
    for node in ours:
        schema = onnx.defs.get_schema(node.op_type, 1, onnx_bcast.DOMAIN)
        assert sorted(a.name for a in node.attribute) == sorted(schema.attributes), node.name


def test_builder_rewrites_the_bundled_files_byte_for_byte(tmp_path: Path) -> None:
    written = build(tmp_path)
    assert sorted(p.name for p in written) == [p.name for p in BUNDLED]
    for path in written:
        assert path.read_bytes() == (MODELS_DIR / path.name).read_bytes(), path.name


def _initializer(model: onnx.ModelProto, name: str) -> np.ndarray:
    return next(numpy_helper.to_array(t) for t in model.graph.initializer if t.name == name)


@pytest.mark.parametrize("shape", [(3, 8, 5, 2), (1, 8, 1, 1), (2, 8, 0, 4)])
@pytest.mark.parametrize("use_bias", [True, False])
def test_runtime_shape_if_adds_the_chosen_offset(shape: tuple[int, ...], use_bias: bool) -> None:
    model = onnx.load(str(MODELS_DIR / "runtime_shape_if.onnx"))
    features = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    if use_bias:
        expected = features + _initializer(model, "bias").reshape(1, 8, 1, 1)
    else:
        expected = features + _initializer(model, "shift")[np.newaxis]
    feeds = {"features": features, "use_bias": np.array(use_bias)}
    ours = onnx_bcast.InferenceSession(model).run(None, feeds)[0]
    converted = ReferenceEvaluator(convert(model)).run(None, feeds)[0]
    for got in (ours, converted):
        assert got.shape == shape
        assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("batch", [1, 3, 0])
def test_bias_grad_gives_the_forward_sums_and_the_bias_gradient(batch: int) -> None:
    """y = features + bias per channel (both forms); the bias gradient is dy summed over N, H, W (both forms); the
    features gradient of the pdpd Add is dy itself. Values from numpy written here; the sums up to rounding."""
    model = onnx.load(str(MODELS_DIR / "bias_grad.onnx"))
    rng = np.random.default_rng(batch)
    features, dy = (rng.standard_normal((batch, 16, 8, 8)).astype(np.float32) for _ in range(2))
    biased = features + _initializer(model, "bias").reshape(1, 16, 1, 1)
    bias_grad = dy.astype(np.float64).sum(axis=(0, 2, 3))
    feeds = {"features": features, "dy": dy}
    runs = [onnx_bcast.InferenceSession(model, backend=backend).run(None, feeds) for backend in ("numpy", "native")]
    runs.append(ReferenceEvaluator(convert(model)).run(None, feeds))
    for y, y_pdpd, grad, features_grad, grad_pdpd in runs:
        assert y.tobytes() == biased.tobytes() and y_pdpd.tobytes() == biased.tobytes()
        assert features_grad.tobytes() == dy.tobytes()
        for got in (grad, grad_pdpd):
            assert got.dtype == np.float32 and got.shape == (16,)
            np.testing.assert_allclose(got, bias_grad, rtol=0, atol=64 * np.finfo(np.float32).eps * batch * 64)
