"""onnx_bcast.openvino: our ops read by OpenVINO's ONNX frontend, compiled for CPU, equal to InferenceSession.

Every bundled model and a one-node model per op x mode is read with ``openvino.Core().read_model`` plus
``extensions()``, compiled for CPU and run on the inputs ``onnx_bcast.InferenceSession`` gets: data movement must
be bit-identical; arithmetic as the OpenVINO elementwise oracle tests compare it. The backprop ops (not run by
InferenceSession yet) are compared with numpy formulas written here. Statically invalid models must fail when read,
with our ``BroadcastError`` naming the node.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast
from onnx_bcast.models import bundled_models
from onnx_bcast.ops import OP_SPECS
from onnx_bcast.random_inputs import random_feeds
from tests.elementwise_util import COMPARISON_OPS, LOGICAL_OPS, assert_values_equal
from tests.elementwise_util import values as scalar_or_array

ov = pytest.importorskip("openvino")

import onnx_bcast.openvino as ov_ext  # noqa: E402
from onnx_bcast.openvino import converter_for, converters, extensions, read_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: Compile for exact float32 arithmetic (on CPUs with bf16 support the plugin's default precision may be lower).
COMPILE_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32,
        np.dtype(np.int64): TensorProto.INT64, np.dtype(np.bool_): TensorProto.BOOL,
        np.dtype(np.float16): TensorProto.FLOAT16}
#: Standard ops that compute new float values (the bundled models' others only move data).
ARITHMETIC = {"Add", "Sub", "Mul", "Div", "Pow", "MatMul", "Gemm", "Sum", "Mean"}
BACKPROP_OPS = ("BroadcastBackprop", "BroadcastV0Backprop", "Unbroadcast")
NODE = "node_under_test"  # the name of every one-node model's node
ELEMENTWISE_OPS = tuple(spec.name for spec in OP_SPECS if spec.family == "elementwise")


@cache
def core() -> ov.Core:
    c = ov.Core()
    c.add_extension(extensions())
    return c


def run_openvino(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """OpenVINO CPU's outputs by name, the model read with ``core.read_model`` plus our extensions."""
    compiled = core().compile_model(core().read_model(model.SerializeToString()), "CPU", COMPILE_CONFIG)
    results = compiled(feeds)
    return {o.name: np.asarray(results[compiled.output(o.name)]) for o in model.graph.output}


def run_both(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(output name, InferenceSession's result, OpenVINO CPU's result) per output."""
    session = onnx_bcast.InferenceSession(model)
    ours = session.run(None, feeds)
    got = run_openvino(model, feeds)
    return [(o.name, mine, got[o.name]) for o, mine in zip(session.get_outputs(), ours, strict=True)]


def assert_identical(got: np.ndarray, expected: np.ndarray) -> None:
    np.testing.assert_array_equal(got, expected, strict=True)
    assert got.tobytes() == expected.tobytes()  # also the sign of zeros and NaN payloads


def values(op: str, shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator, operand: str) -> np.ndarray:
    return np.asarray(scalar_or_array(op, shape, dtype, rng, operand))  # OpenVINO takes no numpy scalars


def model(nodes: list, inputs: list, outputs: list, initializers: list | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=initializers or [])
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)


def dims(shape: tuple[int, ...], static: bool, prefix: str) -> list:
    return list(shape) if static else [f"{prefix}{i}" for i in range(len(shape))]


# --- the package: imports and completeness ------------------------------------------------------------------------


def _child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_import_onnx_bcast_does_not_import_openvino() -> None:
    done = _child("import sys, onnx_bcast; onnx_bcast.InferenceSession; assert 'openvino' not in sys.modules")
    assert done.returncode == 0, done.stderr


def test_without_openvino_the_import_error_names_the_extra() -> None:
    done = _child("import sys; sys.modules['openvino'] = None\n"
                  "try:\n    import onnx_bcast.openvino\n"
                  "except ImportError as err:\n    print(err)\nelse:\n    print('imported')")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("onnx_bcast.openvino needs OpenVINO, which is not installed: "
                                   "pip install 'onnx-bcast[openvino]'")


@pytest.mark.parametrize("spec", OP_SPECS, ids=lambda s: s.name)
def test_every_op_spec_has_a_mapping(spec) -> None:
    assert converter_for(spec) is not None, f"{spec.name}: no OpenVINO mapping in onnx_bcast.openvino"


def test_extensions_cover_the_domain() -> None:
    names = list(converters())
    assert names == [spec.name for spec in OP_SPECS]
    assert set(BACKPROP_OPS) <= set(names)
    assert len(extensions()) == len(names) == len(set(names))


def test_an_op_spec_without_a_mapping_is_reported(monkeypatch, caplog) -> None:
    unknown = replace(OP_SPECS[0], name="Frobnicate")
    monkeypatch.setattr(ov_ext, "OP_SPECS", (*OP_SPECS, unknown))
    assert converter_for(unknown) is None
    with caplog.at_level(logging.WARNING, logger="onnx_bcast.openvino"):
        assert "Frobnicate" not in converters()
    assert "no OpenVINO mapping for onnx_bcast op Frobnicate" in caplog.text


# --- bundled models ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", bundled_models(), ids=lambda p: p.stem)
def test_bundled_model(path: Path) -> None:
    proto = onnx.load(str(path))
    nodes = [n for g in [proto.graph, *(a.g for n in proto.graph.node for a in n.attribute if a.g.node)]
             for n in g.node]
    arithmetic = [n.op_type for n in nodes if n.op_type in ARITHMETIC]
    session = onnx_bcast.InferenceSession(proto)
    for seed in (0, 1):
        feeds = random_feeds(session, seed=seed)
        for name, ours, got in run_both(proto, feeds):
            if len(arithmetic) <= 1:  # data movement plus at most one rounding per element: bit-identical
                assert_identical(got, ours)
            else:  # a chain (e.g. Sub, Mul, Add; MatMul): the CPU plugin fuses it, as test_bundled_models says
                assert (got.dtype, got.shape) == (ours.dtype, ours.shape), name
                np.testing.assert_allclose(got, ours, rtol=1e-6, atol=1e-6 * float(np.abs(ours).max()))


# --- Broadcast / Expand ------------------------------------------------------------------------------------------

# (op, mode attribute or None for the default, axis, data shape, target, axes_mapping, dtype)
BROADCASTS = [
    ("Broadcast", None, -1, (3, 1), (2, 3, 4), None, np.float32),
    ("Broadcast", "numpy", -1, (4,), (2, 3, 4), None, np.int32),
    ("Expand", "NUMPY", -1, (3, 1), (2, 3, 4), None, np.bool_),
    ("Expand", None, -1, (3, 1), (2, 1, 4), None, np.float32),
    ("Broadcast", "bidirectional", -1, (1, 3, 1), (2, 1, 4), None, np.float32),
    ("Expand", "Bidirectional", -1, (2, 3), (3,), None, np.int64),
    ("Broadcast", "explicit", -1, (3,), (2, 3, 4), (1,), np.float32),
    ("Expand", "none", -1, (16,), (1, 16, 5, 5), (1,), np.float32),
    ("Broadcast", "EXPLICIT", -1, (3, 1), (2, 3, 4), (1, 2), np.int32),
    ("Broadcast", "explicit", -1, (), (2, 1, 3), (1,), np.float32),
    ("Broadcast", "explicit", -1, (), (2, 3), (), np.float32),
    ("Broadcast", "pdpd", 1, (3, 1), (2, 3, 5), None, np.float32),
    ("Expand", "pdpd", -1, (3, 4), (2, 1, 4), None, np.float32),
    ("Expand", "pdpd", 1, (3, 1), (2, 3, 4), None, np.int32),
    ("Broadcast", "Pdpd", 2, (), (2, 3), None, np.bool_),
    ("Broadcast", "pdpd", 0, (2, 3), (2, 3), None, np.float32),
    # zero-size and no-op broadcasts: with static shapes OpenVINO's Broadcast dies (SIGFPE, SIGSEGV) or errs on
    # several of them (the mapping builds reshapes); with run-time shapes pdpd dies unless aligned first
    ("Broadcast", "numpy", -1, (1,), (0,), None, np.float32),
    ("Broadcast", "numpy", -1, (0,), (0,), None, np.float32),
    ("Broadcast", "numpy", -1, (), (), None, np.float32),
    ("Expand", "bidirectional", -1, (1,), (0,), None, np.float32),
    ("Expand", "bidirectional", -1, (2, 0), (1, 1), None, np.int32),
    ("Expand", "bidirectional", -1, (), (), None, np.bool_),
    ("Broadcast", "explicit", -1, (0,), (2, 0), (1,), np.float32),
    ("Broadcast", "pdpd", 1, (0,), (2, 1), None, np.float32),
    ("Broadcast", "numpy", -1, (3,), (2, 0, 3), None, np.float32),
]


def broadcast_model(op: str, mode: str | None, axis: int, data_shape: tuple, target: tuple, axes: tuple | None,
                    dtype: type, static: bool, target_dtype: type = np.int64) -> tuple[onnx.ModelProto, dict]:
    """Constant target/axes and a static data shape, or everything at run time (dims unknown, lengths known)."""
    data = values("Add", data_shape, dtype, np.random.default_rng(len(data_shape)), "A")
    shape_inputs = {"target_shape": np.array(target, target_dtype)}
    if axes is not None:
        shape_inputs["axes_mapping"] = np.array(axes, np.int64)
    attrs = {"axis": axis} | ({"mode": mode} if mode is not None else {})
    node = helper.make_node(op, ["data", *shape_inputs], ["output"], domain="onnx_bcast", name=NODE, **attrs)
    inputs = [helper.make_tensor_value_info("data", ELEM[np.dtype(dtype)], dims(data_shape, static, "d"))]
    output = helper.make_tensor_value_info("output", ELEM[np.dtype(dtype)], None)
    feeds = {"data": data}
    if static:
        return model([node], inputs, [output], [numpy_helper.from_array(v, k) for k, v in shape_inputs.items()]), feeds
    inputs += [helper.make_tensor_value_info(k, ELEM[v.dtype], [len(v)]) for k, v in shape_inputs.items()]
    return model([node], inputs, [output]), feeds | shape_inputs


@pytest.mark.parametrize("static", [True, False], ids=["static", "runtime"])
@pytest.mark.parametrize("case", BROADCASTS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}-{c[4]}-{c[5]}")
def test_broadcast(case: tuple, static: bool) -> None:
    op, mode, axis, data_shape, target, axes, dtype = case
    proto, feeds = broadcast_model(op, mode, axis, data_shape, target, axes, dtype, static)
    for _, ours, got in run_both(proto, feeds):
        assert_identical(got, ours)


@pytest.mark.parametrize("static", [True, False], ids=["static", "runtime"])
def test_broadcast_int32_target(static: bool) -> None:
    proto, feeds = broadcast_model("Broadcast", "explicit", -1, (3,), (2, 3), (1,), np.float32, static, np.int32)
    for _, ours, got in run_both(proto, feeds):
        assert_identical(got, ours)


def test_target_from_shape_of_a_static_tensor_is_checked_when_reading() -> None:
    """``Shape`` of a static tensor folds to a constant target: the SPEC difference (duplicate axes) is caught.
    An unnamed node is named as OpenVINO names it: by its first output."""
    for name, shown in ((NODE, NODE), ("", "output")):
        nodes = [helper.make_node("Shape", ["like"], ["target"]),
                 helper.make_node("Broadcast", ["data", "target", "axes"], ["output"], domain="onnx_bcast",
                                  name=name, mode="explicit")]
        inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [3, 1]),
                  helper.make_tensor_value_info("like", TensorProto.FLOAT, [2, 3, 1])]
        proto = model(nodes, inputs, [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
                      [numpy_helper.from_array(np.array([1, 1], np.int64), "axes")])
        expected = _expected_error(lambda: onnx_bcast.broadcast_shape((3, 1), (2, 3, 1), (1, 1), mode="explicit"))
        with pytest.raises(onnx_bcast.BroadcastError) as err:
            read_model(proto)
        assert str(err.value) == str(expected.with_node(shown))


# --- BroadcastV0 / BroadcastLikeV0 -------------------------------------------------------------------------------

V0_CASES = [  # (arg shape, shape, broadcast_axes, dtype)
    ((8,), (2, 8, 3), (0, 2), np.float32),
    ((), (2, 3), (0, 1), np.int32),
    ((2, 3), (2, 3), (), np.float32),
    ((2, 3), (2, 4, 3), (1,), np.bool_),
    ((0,), (2, 0), (0,), np.float32),
]


@pytest.mark.parametrize("static", [True, False], ids=["static", "runtime"])
@pytest.mark.parametrize("case", V0_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_broadcast_v0(case: tuple, static: bool) -> None:
    arg_shape, shape, axes, dtype = case
    node = helper.make_node("BroadcastV0", ["arg"], ["output"], domain="onnx_bcast", shape=list(shape))
    node.attribute.append(helper.make_attribute("broadcast_axes", list(axes), attr_type=onnx.AttributeProto.INTS))
    elem = ELEM[np.dtype(dtype)]
    proto = model([node], [helper.make_tensor_value_info("arg", elem, dims(arg_shape, static, "a"))],
                  [helper.make_tensor_value_info("output", elem, None)])
    feeds = {"arg": values("Add", arg_shape, dtype, np.random.default_rng(0), "A")}
    for _, ours, got in run_both(proto, feeds):
        assert_identical(got, ours)


LIKE_CASES = [  # (arg shape, like shape, initial_broadcast_axes)
    ((2, 3), (2, 3, 4), ()),
    ((3,), (2, 3), (0,)),
    ((2, 1), (2, 1, 5), ()),
    ((2, 3), (2, 4, 3), (1,)),
]


@pytest.mark.parametrize("static", [True, False], ids=["static", "runtime"])
@pytest.mark.parametrize("case", LIKE_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_broadcast_like_v0(case: tuple, static: bool) -> None:
    arg_shape, like_shape, axes = case
    if not static and not axes:
        pytest.skip("deduced axes need static shapes (test_like_v0_deduced_axes_need_static_shapes)")
    node = helper.make_node("BroadcastLikeV0", ["arg", "like"], ["output"], domain="onnx_bcast")
    if axes:
        node.attribute.append(helper.make_attribute("initial_broadcast_axes", list(axes)))
    rng = np.random.default_rng(1)
    feeds = {"arg": values("Add", arg_shape, np.float32, rng, "A"), "like": np.zeros(like_shape, np.int32)}
    proto = model([node], [helper.make_tensor_value_info("arg", TensorProto.FLOAT, dims(arg_shape, static, "a")),
                           helper.make_tensor_value_info("like", TensorProto.INT32, dims(like_shape, static, "l"))],
                  [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)])
    for _, ours, got in run_both(proto, feeds):
        assert_identical(got, ours)


def test_like_v0_deduced_axes_need_static_shapes() -> None:
    node = helper.make_node("BroadcastLikeV0", ["arg", "like"], ["output"], domain="onnx_bcast")
    proto = model([node], [helper.make_tensor_value_info("arg", TensorProto.FLOAT, ["n", 3]),
                           helper.make_tensor_value_info("like", TensorProto.FLOAT, ["n", 3, 4])],
                  [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)])
    with pytest.raises(NotImplementedError, match="give initial_broadcast_axes or static shapes"):
        read_model(proto)


# --- elementwise -------------------------------------------------------------------------------------------------

# (rule spelling, axis, A shape, B shape): pdpd right-aligned, at an axis, with trailing 1s past A's end, scalar B
ELEMENTWISE_SHAPES = [
    ("none", -1, (2, 3), (2, 3)),
    ("Explicit", -1, (2, 3), (2, 3)),
    ("numpy", -1, (2, 1, 3), (4, 1)),
    ("pdpd", -1, (2, 3, 4), (3, 4)),
    ("PDPD", 1, (2, 3, 4, 2), (3, 4)),
    ("pdpd", 1, (2, 3), (3, 1)),
    ("pdpd", 0, (2, 3, 4), (2, 1, 4)),
    ("pdpd", -1, (2, 3), ()),
]


def op_dtypes(op: str) -> list[tuple[np.dtype, np.dtype, dict]]:
    """(A's dtype, B's dtype, attributes) compared for ``op``."""
    if op in LOGICAL_OPS:
        return [(np.dtype(np.bool_),) * 2 + ({},)]
    if op == "Mod":
        return [(np.dtype(np.int32),) * 2 + ({"fmod": 0},), (np.dtype(np.int32),) * 2 + ({"fmod": 1},),
                (np.dtype(np.float32),) * 2 + ({"fmod": 1},), (np.dtype(np.float32),) * 2 + ({"fmod": 0},)]
    if op == "Pow":
        return [(np.dtype(np.float32),) * 2 + ({},), (np.dtype(np.int32),) * 2 + ({},),
                (np.dtype(np.float32), np.dtype(np.int32), {}), (np.dtype(np.int32), np.dtype(np.float32), {})]
    return [(np.dtype(np.float32),) * 2 + ({},), (np.dtype(np.int32),) * 2 + ({},)]


@pytest.mark.parametrize("static", [True, False], ids=["static", "runtime"])
@pytest.mark.parametrize("shapes", ELEMENTWISE_SHAPES, ids=lambda s: f"{s[0]}-{s[1]}-{s[2]}-{s[3]}")
@pytest.mark.parametrize("op", ELEMENTWISE_OPS)
def test_elementwise(op: str, shapes: tuple, static: bool) -> None:
    """One model per op x rule x shapes, a node per element type (one compile, one session)."""
    rule, axis, a_shape, b_shape = shapes
    nodes, inputs, outputs, feeds, firsts = [], [], [], {}, {}
    rng = np.random.default_rng(7)
    for k, (a_dtype, b_dtype, attrs) in enumerate(op_dtypes(op)):
        nodes.append(helper.make_node(op, [f"A{k}", f"B{k}"], [f"C{k}"], domain="onnx_bcast", auto_broadcast=rule,
                                      axis=axis, **attrs))
        out_elem = TensorProto.BOOL if op in COMPARISON_OPS or op in LOGICAL_OPS else ELEM[a_dtype]
        inputs += [helper.make_tensor_value_info(f"A{k}", ELEM[a_dtype], dims(a_shape, static, "a")),
                   helper.make_tensor_value_info(f"B{k}", ELEM[b_dtype], dims(b_shape, static, "b"))]
        outputs.append(helper.make_tensor_value_info(f"C{k}", out_elem, None))
        feeds[f"A{k}"] = values(op, a_shape, a_dtype, rng, "A")
        feeds[f"B{k}"] = values(op, b_shape, b_dtype, rng, "B")
        if op == "Pow" and a_dtype != b_dtype and b_dtype.kind == "f":
            feeds[f"B{k}"] = np.asarray(feeds[f"B{k}"] + np.float32(0.5))  # ONNX Runtime's double pow, truncated
        firsts[f"C{k}"] = feeds[f"A{k}"]
    for name, ours, got in run_both(model(nodes, inputs, outputs), feeds):
        assert_values_equal(op, got, ours, firsts[name])


@pytest.mark.parametrize("op", ["Add", "Less", "Mod"])
def test_elementwise_zero_size(op: str) -> None:
    """SPEC's pdpd 0-size rule: a size-1 B dim meets a 0-size A dim (OpenVINO's own pdpd rejects that)."""
    attrs = {"fmod": 1} if op == "Mod" else {}
    node = helper.make_node(op, ["A", "B"], ["C"], domain="onnx_bcast", auto_broadcast="pdpd", axis=0, **attrs)
    out_elem = TensorProto.BOOL if op == "Less" else TensorProto.FLOAT
    proto = model([node], [helper.make_tensor_value_info("A", TensorProto.FLOAT, [2, 0, 3]),
                           helper.make_tensor_value_info("B", TensorProto.FLOAT, [2, 1])],
                  [helper.make_tensor_value_info("C", out_elem, None)])
    feeds = {"A": np.zeros((2, 0, 3), np.float32), "B": np.ones((2, 1), np.float32)}
    for _, ours, got in run_both(proto, feeds):
        assert_identical(got, ours)


# --- backprop ops: numpy formulas written here (and the kernels agree with them) ----------------------------------


def backprop_model(op: str, attrs: dict, delta_shape: tuple, dtype: type, shape_inputs: dict[str, tuple],
                   static: bool, outputs: int = 1) -> tuple[onnx.ModelProto, dict]:
    """``op(delta, *shape_inputs)``: shape inputs as initializers and delta's dims static, or all at run time."""
    node = helper.make_node(op, ["delta", *shape_inputs], [f"grad{i}" for i in range(outputs)], domain="onnx_bcast",
                            name=NODE, **attrs)
    elem = ELEM[np.dtype(dtype)]
    arrays = {k: np.array(v, np.int64) for k, v in shape_inputs.items()}
    delta = np.random.default_rng(3).integers(-4, 5, delta_shape).astype(dtype)  # sums exact in any order
    inputs = [helper.make_tensor_value_info("delta", elem, dims(delta_shape, static, "d"))]
    outs = [helper.make_tensor_value_info(f"grad{i}", elem, None) for i in range(outputs)]
    if static:
        return model([node], inputs, outs, [numpy_helper.from_array(v, k) for k, v in arrays.items()]), {"delta": delta}
    inputs += [helper.make_tensor_value_info(k, TensorProto.INT64, [len(v)]) for k, v in arrays.items()]
    return model([node], inputs, outs), {"delta": delta} | arrays


def summed(delta: np.ndarray, axes: tuple[int, ...], shape: tuple[int, ...] | None, keepdims: bool = True
           ) -> np.ndarray:
    """``delta`` summed over ``axes`` (float16 in float32, rounded once), reshaped to ``shape``."""
    acc = np.float32 if delta.dtype == np.float16 else delta.dtype
    total = np.sum(delta, axis=axes, dtype=acc, keepdims=keepdims).astype(delta.dtype)
    return total if shape is None else total.reshape(shape)


# (mode, axis, delta shape, data_shape, axes_mapping, the axes summed, written by hand, dtype)
BACKPROPS = [
    ("numpy", -1, (2, 3, 4), (3, 1), None, (0, 2), np.float32),
    ("numpy", -1, (2, 3), (2, 3), None, (), np.int32),
    ("bidirectional", -1, (2, 3, 4), (1, 3, 1), None, (0, 2), np.float32),
    ("explicit", -1, (2, 3, 4), (3,), (1,), (0, 2), np.float32),
    ("explicit", -1, (2, 3, 4), (3, 1), (1, 2), (0, 2), np.float16),
    ("pdpd", 1, (2, 3, 5), (3, 1), None, (0, 2), np.float32),
    ("pdpd", -1, (2, 3, 4), (3, 4), None, (0,), np.int32),
    ("numpy", -1, (2, 0), (1, 0), None, (0,), np.float32),
    ("numpy", -1, (0, 3), (1, 3), None, (0,), np.float32),
]


@pytest.mark.parametrize("static", [True, False], ids=["static", "runtime"])
@pytest.mark.parametrize("case", BACKPROPS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}-{c[4]}")
def test_broadcast_backprop(case: tuple, static: bool) -> None:
    mode, axis, delta_shape, data_shape, axes, summed_axes, dtype = case
    shape_inputs = {"data_shape": data_shape} | ({"axes_mapping": axes} if axes is not None else {})
    proto, feeds = backprop_model("BroadcastBackprop", {"mode": mode, "axis": axis}, delta_shape, dtype,
                                  shape_inputs, static)
    expected = summed(feeds["delta"], summed_axes, data_shape)
    assert_identical(onnx_bcast.broadcast_backprop(feeds["delta"], data_shape, axes, mode=mode, axis=axis), expected)
    assert_identical(run_openvino(proto, feeds)["grad0"], expected)


@pytest.mark.parametrize("case", [((2, 8, 3), (0, 2)), ((2, 3), ()), ((4,), (0,))], ids=str)
def test_broadcast_v0_backprop(case: tuple) -> None:
    delta_shape, axes = case
    node_attrs = {"broadcast_axes": list(axes)} if axes else {}
    proto, feeds = backprop_model("BroadcastV0Backprop", node_attrs, delta_shape, np.float32, {}, True)
    if not axes:  # an empty ints attribute needs its type spelled out
        empty = helper.make_attribute("broadcast_axes", [], attr_type=onnx.AttributeProto.INTS)
        proto.graph.node[0].attribute.append(empty)
    expected = summed(feeds["delta"], axes, None, keepdims=False)
    assert_identical(onnx_bcast.broadcast_v0_backprop(feeds["delta"], axes), expected)
    assert_identical(run_openvino(proto, feeds)["grad0"], expected)


# (auto_broadcast, axis, A shape, B shape, delta shape, A's summed axes, B's summed axes, written by hand)
UNBROADCASTS = [
    ("numpy", -1, (2, 1, 3), (4, 1), (2, 4, 3), (1,), (0, 2)),
    ("none", -1, (2, 3), (2, 3), (2, 3), (), ()),
    ("pdpd", 1, (2, 3, 4, 2), (3, 4), (2, 3, 4, 2), (), (0, 3)),
    ("pdpd", 1, (2, 3), (3, 1), (2, 3), (), (0,)),
    ("pdpd", -1, (2, 3), (), (2, 3), (), (0, 1)),
]


@pytest.mark.parametrize("static", [True, False], ids=["static", "runtime"])
@pytest.mark.parametrize("case", UNBROADCASTS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}")
def test_unbroadcast(case: tuple, static: bool) -> None:
    rule, axis, a_shape, b_shape, delta_shape, summed_a, summed_b = case
    proto, feeds = backprop_model("Unbroadcast", {"auto_broadcast": rule, "axis": axis}, delta_shape, np.float32,
                                  {"a_shape": a_shape, "b_shape": b_shape}, static, outputs=2)
    expected = [summed(feeds["delta"], summed_a, a_shape), summed(feeds["delta"], summed_b, b_shape)]
    for kernel, formula in zip(onnx_bcast.unbroadcast(feeds["delta"], a_shape, b_shape, auto_broadcast=rule,
                                                      axis=axis), expected, strict=True):
        assert_identical(kernel, formula)
    got = run_openvino(proto, feeds)
    assert_identical(got["grad0"], expected[0])
    assert_identical(got["grad1"], expected[1])


# --- statically invalid models: our BroadcastError when reading ---------------------------------------------------


def _expected_error(check) -> onnx_bcast.BroadcastError:
    with pytest.raises(onnx_bcast.BroadcastError) as err:
        check()
    return err.value


INVALID = [
    # (id, model, the same check with onnx-bcast's rule), where SPEC §2 deliberately differs from OpenVINO
    ("explicit-duplicate-axes", broadcast_model("Broadcast", "explicit", -1, (3, 1), (2, 3, 1), (1, 1), np.float32,
                                                True)[0],
     lambda: onnx_bcast.broadcast_shape((3, 1), (2, 3, 1), (1, 1), mode="explicit")),
    ("negative-target-dim", broadcast_model("Broadcast", "numpy", -1, (3,), (-1, 3), None, np.float32, True)[0],
     lambda: onnx_bcast.broadcast_shape((3,), (-1, 3))),
    ("pdpd-data-past-target", broadcast_model("Expand", "pdpd", 1, (3, 4, 5), (2, 3, 4), None, np.float32, True)[0],
     lambda: onnx_bcast.broadcast_shape((3, 4, 5), (2, 3, 4), mode="pdpd", axis=1, op="Expand")),
    ("pdpd-scalar-axis-past-target", broadcast_model("Broadcast", "pdpd", 5, (), (2, 3), None, np.float32, True)[0],
     lambda: onnx_bcast.broadcast_shape((), (2, 3), mode="pdpd", axis=5)),
    ("unknown-mode", broadcast_model("Broadcast", "bogus", -1, (3,), (2, 3), None, np.float32, True)[0],
     lambda: onnx_bcast.broadcast_shape((3,), (2, 3), mode="bogus")),
]


def _elementwise_model(op: str, rule: str, axis: int, a: list, b: list) -> onnx.ModelProto:
    node = helper.make_node(op, ["A", "B"], ["C"], domain="onnx_bcast", name=NODE, auto_broadcast=rule, axis=axis)
    return model([node], [helper.make_tensor_value_info("A", TensorProto.FLOAT, a),
                          helper.make_tensor_value_info("B", TensorProto.FLOAT, b)],
                 [helper.make_tensor_value_info("C", TensorProto.FLOAT, None)])


def _v0_model(arg: list, shape: list, axes: list) -> onnx.ModelProto:
    node = helper.make_node("BroadcastV0", ["arg"], ["output"], domain="onnx_bcast", name=NODE, shape=shape,
                            broadcast_axes=axes)
    return model([node], [helper.make_tensor_value_info("arg", TensorProto.FLOAT, arg)],
                 [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)])


INVALID += [
    ("pdpd-zero-b-vs-one-a", _elementwise_model("Mul", "pdpd", -1, [2, 1], [0]),
     lambda: onnx_bcast.elementwise_shape((2, 1), (0,), auto_broadcast="pdpd", op="Mul")),
    ("none-shapes-differ", _elementwise_model("Sub", "none", -1, [2, 3], [1, 3]),
     lambda: onnx_bcast.elementwise_shape((2, 3), (1, 3), auto_broadcast="none", op="Sub")),
    ("v0-no-size-1-stretching", _v0_model([1], [2, 3], [0]),
     lambda: onnx_bcast.broadcast_v0(np.zeros(1), [2, 3], [0])),
    ("v0-duplicate-axes", _v0_model([3], [2, 2, 3], [0, 0]),
     lambda: onnx_bcast.broadcast_v0(np.zeros(3), [2, 2, 3], [0, 0])),
    ("backprop-delta-not-an-output", backprop_model("BroadcastBackprop", {}, (2, 3), np.float32,
                                                    {"data_shape": (3, 2)}, True)[0],
     lambda: onnx_bcast.broadcast_backprop(np.zeros((2, 3), np.float32), (3, 2))),
    ("backprop-explicit-duplicate-axes", backprop_model("BroadcastBackprop", {"mode": "explicit"}, (2, 3, 1),
                                                        np.float32, {"data_shape": (3, 1), "axes_mapping": (1, 1)},
                                                        True)[0],
     lambda: onnx_bcast.broadcast_backprop(np.zeros((2, 3, 1), np.float32), (3, 1), (1, 1), mode="explicit")),
    ("v0-backprop-duplicate-axes", backprop_model("BroadcastV0Backprop", {"broadcast_axes": [0, 0]}, (2, 3),
                                                  np.float32, {}, True)[0],
     lambda: onnx_bcast.broadcast_v0_backprop(np.zeros((2, 3), np.float32), (0, 0))),
    ("unbroadcast-none-shapes-differ", backprop_model("Unbroadcast", {"auto_broadcast": "none"}, (2, 3), np.float32,
                                                      {"a_shape": (2, 3), "b_shape": (1, 3)}, True, 2)[0],
     lambda: onnx_bcast.unbroadcast(np.zeros((2, 3), np.float32), (2, 3), (1, 3), auto_broadcast="none")),
]


@pytest.mark.parametrize(("name", "proto", "check"), INVALID, ids=[c[0] for c in INVALID])
def test_statically_invalid_model_raises_our_error(name: str, proto: onnx.ModelProto, check) -> None:
    """The kernel's own error, naming the node: quoted by OpenVINO's read_model, re-raised by ours."""
    expected = _expected_error(check)
    op = proto.graph.node[0].op_type
    with pytest.raises(RuntimeError) as wrapped:  # OpenVINO's read_model wraps it, text and all
        core().read_model(proto.SerializeToString())
    assert f"ONNX node '<Node({op}): {NODE}>': BroadcastError: {expected}" in str(wrapped.value)
    with pytest.raises(onnx_bcast.BroadcastError) as err:  # onnx_bcast.openvino.read_model unwraps it
        read_model(proto)
    assert str(err.value) == str(expected.with_node(NODE))
    assert (err.value.op, err.value.mode, err.value.node) == (op, expected.mode, NODE)


@pytest.mark.parametrize(("proto", "shown"), [
    (broadcast_model("Broadcast", "pdpd", 1, (3, 4, 5), (2, 3, 4), None, np.float32, False)[0],
     "data (?, ?, ?), 3 target_shape values known at run time"),
    (_elementwise_model("Add", "pdpd", 1, ["n", 3], [3, 2]), "A (?, 3), B (3, 2)"),
    (_v0_model(["n", 4], [2, 3, 5], [0]), "arg (?, 4)"),
], ids=["pdpd-ranks", "elementwise-pdpd-dims", "v0-dims"])
def test_invalid_whatever_the_unknown_dims_raises_when_reading(proto: onnx.ModelProto, shown: str) -> None:
    with pytest.raises(onnx_bcast.BroadcastError, match=re.escape(shown)):
        read_model(proto)


# --- run time: what OpenVINO does where only run-time values show the error ----------------------------------------


@pytest.mark.parametrize(("proto", "feeds", "valid"), [
    (broadcast_model("Broadcast", "numpy", -1, (3,), (2, 4), None, np.float32, False)[0],
     {"data": np.ones(3, np.float32), "target_shape": np.array([2, 4], np.int64)},
     {"data": np.ones(3, np.float32), "target_shape": np.array([2, 3], np.int64)}),
    (broadcast_model("Broadcast", "explicit", -1, (3, 2), (2, 3, 3), (1, 2), np.float32, False)[0],
     {"data": np.ones((3, 2), np.float32), "target_shape": np.array([2, 3, 3], np.int64),
      "axes_mapping": np.array([2, 1], np.int64)},
     {"data": np.ones((3, 2), np.float32), "target_shape": np.array([2, 3, 2], np.int64),
      "axes_mapping": np.array([1, 2], np.int64)}),
    (broadcast_model("Broadcast", "explicit", -1, (3, 1), (2, 3, 1), (1, 2), np.float32, False)[0],
     {"data": np.ones((3, 1), np.float32), "target_shape": np.array([2, 3, 1], np.int64),
      "axes_mapping": np.array([1, 1], np.int64)},
     {"data": np.ones((3, 1), np.float32), "target_shape": np.array([2, 3, 1], np.int64),
      "axes_mapping": np.array([1, 2], np.int64)}),
    (broadcast_model("Broadcast", "numpy", -1, (3,), (2, 3), None, np.float32, False)[0],
     {"data": np.ones(3, np.float32), "target_shape": np.array([-1, 3], np.int64)},
     {"data": np.ones(3, np.float32), "target_shape": np.array([1, 3], np.int64)}),
    (_elementwise_model("Add", "pdpd", 1, ["n", "m"], ["k", "j"]),
     {"A": np.ones((2, 3), np.float32), "B": np.ones((3, 2), np.float32)},
     {"A": np.ones((2, 3), np.float32), "B": np.ones((3, 1), np.float32)}),
], ids=["numpy-dims", "explicit-unsorted-axes", "explicit-duplicate-axes", "negative-dim", "pdpd-b-sticks-out"])
def test_invalid_at_run_time_raises_runtime_error(proto: onnx.ModelProto, feeds: dict, valid: dict) -> None:
    """Measured behaviour (bench/openvino_runtime.py): OpenVINO's RuntimeError, and the request stays usable.
    (Duplicate explicit axes: OpenVINO computes garbage; the mapping unsorts them so that OpenVINO's check fails.)"""
    session = onnx_bcast.InferenceSession(proto)
    with pytest.raises(onnx_bcast.BroadcastError):
        session.run(None, feeds)
    compiled = core().compile_model(read_model(proto), "CPU")
    request = compiled.create_infer_request()
    with pytest.raises(RuntimeError):
        request.infer(feeds)
    assert_identical(np.asarray(request.infer(valid)[0]), session.run(None, valid)[0])



def test_read_model_from_a_file_names_the_node(tmp_path: Path) -> None:
    """Read from a file, OpenVINO names a node by its first output; read_model finds the node's own name."""
    proto = INVALID[0][1]
    onnx.save(proto, tmp_path / "m.onnx")
    with pytest.raises(onnx_bcast.BroadcastError) as err:
        read_model(tmp_path / "m.onnx")
    assert err.value.node == NODE and proto.graph.node[0].output[0] != NODE
