"""Legacy ONNX (default-domain opsets 1-6): import, run and convert, against oracles independent of onnx-bcast.

* The 112 opset-6 models that the onnx package ships with recorded outputs (``onnx/backend/test/data``
  ``pytorch-converted`` and ``pytorch-operator``) reproduce them, with ONNX's backend tolerances, through
  ``InferenceSession`` (both backends) and through ``convert`` + plain ONNX Runtime. onnx's own
  ``version_converter`` + ONNX Runtime is measured on the same models (the README quotes the figures).
* A table of legacy broadcast forms (each of the 11 binary ops at opsets 1 and 6; suffix, ``axis=0``, the NCHW
  bias ``axis=1``, scalar and one-element B, ``broadcast=0``; PRelu of ranks 2-4; a small Caffe2-style block) is
  compared with numpy formulas written here from ONNX's Changelog text, on every path, and the formulas are
  cross-checked with OpenVINO's ONNX frontend where it reads the form.
* Invalid legacy nodes are a ``BroadcastError`` naming the node and its legacy attributes: at import when the
  shapes are known, at run time (both backends) when they are not.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast
from onnx_bcast.importers.legacy_onnx import DEFAULT_OPSET, import_with_report
from onnx_bcast.importers.upgrade import UpgradeError

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
RTOL, ATOL = 1e-3, 1e-7  # ONNX's backend test runner for these model tests (TestCase.rtol / .atol)
PATHS = ("numpy", "native", "converted")


# ---------------------------------------------------------------------------------------------------------------
# The models shipped in the onnx package


def _shipped() -> list[Path]:
    cases = []
    for folder in ("pytorch-converted", "pytorch-operator"):
        for case in sorted((DATA / folder).iterdir()):
            model = onnx.load(str(case / "model.onnx"), load_external_data=False)
            version = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
            if version <= 6 and list(case.glob("test_data_set_*")):
                cases.append(case)
    return cases


SHIPPED = _shipped()


def _data_sets(case: Path) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    sets = []
    for folder in sorted(case.glob("test_data_set_*")):
        read = [[numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(folder.glob(f"{kind}_*.pb"))]
                for kind in ("input", "output")]
        sets.append((read[0], read[1]))
    return sets


def _session(model: onnx.ModelProto, path: str) -> ort.InferenceSession:
    if path == "converted":
        return ort.InferenceSession(onnx_bcast.convert(model).SerializeToString(), providers=["CPUExecutionProvider"])
    return onnx_bcast.InferenceSession(model, backend=path)


def _reproduces(session: ort.InferenceSession, case: Path) -> None:
    names = [i.name for i in session.get_inputs()]
    for inputs, expected in _data_sets(case):
        got = session.run(None, dict(zip(names, inputs, strict=False)))  # IR 3: the weights are inputs too
        assert len(got) == len(expected)
        for value, want in zip(got, expected, strict=True):
            np.testing.assert_allclose(value, want, rtol=RTOL, atol=ATOL)


def test_the_onnx_package_ships_112_legacy_models() -> None:
    assert len(SHIPPED) == 112
    assert {onnx.load(str(c / "model.onnx")).opset_import[0].version for c in SHIPPED} == {6}


@pytest.mark.parametrize("case", SHIPPED, ids=lambda c: c.name)
def test_shipped_legacy_model_reproduces_its_recorded_outputs(case: Path) -> None:
    model = onnx.load(str(case / "model.onnx"))
    for path in PATHS:
        _reproduces(_session(model, path), case)


def test_version_converter_on_the_same_models() -> None:
    """onnx.version_converter to opset 17 + ONNX Runtime, as a user would: 109 of 112 reproduce; the 3 failures
    are PRelu's multi-parameter tests (its slope left numpy-aligned). The README's comparison quotes this."""
    failures = {}
    for case in SHIPPED:
        try:
            upgraded = onnx.version_converter.convert_version(onnx.load(str(case / "model.onnx")), DEFAULT_OPSET)
            options = ort.SessionOptions()
            options.log_severity_level = 4
            _reproduces(ort.InferenceSession(upgraded.SerializeToString(), options,
                                             providers=["CPUExecutionProvider"]), case)
        except Exception as err:
            failures[case.name] = str(err)
    assert sorted(failures) == ["test_PReLU_1d_multiparam", "test_PReLU_2d_multiparam", "test_PReLU_3d_multiparam"]
    assert all("Attempting to broadcast an axis by a dimension other than 1" in m for m in failures.values())


def test_version_converter_on_legacy_broadcast_forms() -> None:
    """The README's rows: onnx's converter stops on the NCHW bias add, gives ORT a model it refuses for axis=0, and
    leaves PRelu-6's slope on the last axis (a wrong answer where the last dim equals C); onnx-bcast is right."""
    options = ort.SessionOptions()
    options.log_severity_level = 4
    with pytest.raises(Exception, match="assert_numpy_multibroadcastable"):  # noqa: B017 - onnx's RuntimeError-like
        onnx.version_converter.convert_version(_one_node((2, 3, 4, 5), (3,), 1, 1), 17)
    upgraded = onnx.version_converter.convert_version(_one_node((2, 3, 4, 5), (2,), 1, 0), 17)
    with pytest.raises(Exception, match="Invalid tensor data type 0"):  # noqa: B017 - ORT's own error type
        ort.InferenceSession(upgraded.SerializeToString(), options)
    rng = np.random.default_rng(5)
    feeds = {"x": rng.standard_normal((2, 3, 3)).astype(np.float32), "slope": np.array([0.1, 0.2, 0.3], np.float32)}
    model = _prelu_model((2, 3, 3), (3,))
    upgraded = onnx.version_converter.convert_version(model, 17)
    theirs = ort.InferenceSession(upgraded.SerializeToString(), options).run(None, feeds)[0]
    want = prelu_oracle(feeds["x"], feeds["slope"])
    assert not np.allclose(theirs, want)
    np.testing.assert_allclose(theirs, np.where(feeds["x"] < 0, feeds["x"] * feeds["slope"], feeds["x"]), rtol=1e-6)
    np.testing.assert_allclose(onnx_bcast.InferenceSession(model).run(None, feeds)[0], want, rtol=1e-6)


def test_import_says_what_it_did_and_keeps_the_interface() -> None:
    model = onnx.load(str(DATA / "pytorch-converted" / "test_PReLU_2d_multiparam" / "model.onnx"))
    imported = import_with_report(model)
    assert imported.lines() == [
        "legacy ONNX: default-domain opset 6 imported at opset 17",
        "legacy PRelu-6 -> PRelu-17(X, Broadcast(mode=explicit, axes_mapping=[1]) of the slope): 1",
        "0 other node(s) upgraded by onnx.version_converter"]
    out = imported.model
    assert [(o.domain, o.version) for o in out.opset_import] == [("", 17), ("onnx_bcast", 1)]
    assert [v.name for v in out.graph.input] == [v.name for v in model.graph.input]
    assert [v.SerializeToString() for v in out.graph.output] == [v.SerializeToString() for v in model.graph.output]
    onnx.checker.check_model(out, full_check=True)
    assert onnx_bcast.convert(model, opset=13).opset_import[0].version == 13


def test_input_model_is_not_modified() -> None:
    model = onnx.load(str(DATA / "pytorch-operator" / "test_operator_add_size1_broadcast" / "model.onnx"))
    before = model.SerializeToString()
    onnx_bcast.import_legacy(model)
    onnx_bcast.convert(model)
    onnx_bcast.InferenceSession(model, backend="native")
    assert model.SerializeToString() == before


# ---------------------------------------------------------------------------------------------------------------
# The table of legacy broadcast forms, against numpy formulas written from ONNX's Changelog text

NUMPY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power,
         "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor, "Equal": np.equal,
         "Greater": np.greater, "Less": np.less}
BOOL_OUT = {"And", "Or", "Xor", "Equal", "Greater", "Less"}
# the opset-1 types: Equal-1 takes bool/int32/int64, the logical ops bool, the others floats
ELEM = {"And": TensorProto.BOOL, "Or": TensorProto.BOOL, "Xor": TensorProto.BOOL, "Equal": TensorProto.INT64}

# name: (A, B, broadcast, axis); ONNX's examples for broadcast=1 and B's placement
FORMS = {
    "suffix": ((2, 3, 4, 5), (4, 5), 1, None),
    "suffix_one_dim": ((2, 3, 4, 5), (5,), 1, None),
    "axis0": ((2, 3, 4, 5), (2,), 1, 0),
    "nchw_bias_axis1": ((2, 3, 4, 5), (3,), 1, 1),
    "axis1_two_dims": ((2, 3, 4, 5), (3, 4), 1, 1),
    "scalar": ((2, 3, 4, 5), (), 1, None),
    "one_element": ((2, 3, 4, 5), (1, 1), 1, None),
    "broadcast0": ((2, 3, 4), (2, 3, 4), 0, None),
    # B's leading/trailing 1s, as PyTorch's opset-6 exports write them (test_operator_add_size1_*)
    "trailing_one_axis0": ((2, 3), (2, 1), 1, 0),
    "leading_one_axis0": ((2, 3), (1, 3), 1, 0),
}
# OpenVINO's frontend reads broadcast+axis for these ops (handle_opset6_binary_op); for the others it broadcasts
# B numpy-style, which is the legacy rule exactly where right alignment places B where the axis does
OV_AXIS_OPS = {"Add", "Sub", "Mul", "Div", "And"}
OV_NUMPY_FORMS = {"suffix", "suffix_one_dim", "scalar", "one_element", "broadcast0", "trailing_one_axis0",
                  "leading_one_axis0"}


def legacy_oracle(op: str, a: np.ndarray, b: np.ndarray, broadcast: int, axis: int | None) -> np.ndarray:
    """ONNX's Changelog for Add-1/6 (and the others, which refer to it): with broadcast=1, B's shape is a
    contiguous run of A's dims starting at ``axis`` (suffix matching without it), or B has one element; the result
    has A's shape. Leading/trailing size-1 dims of B meet any dim of A (Caffe2's reading, which PyTorch's
    exports use). broadcast=0: equal shapes."""
    if not broadcast:
        assert a.shape == b.shape
        return NUMPY[op](a, b)
    start = a.ndim - b.ndim if axis is None else axis
    placed = b.reshape((1,) * start + b.shape + (1,) * (a.ndim - start - b.ndim))
    return NUMPY[op](a, np.broadcast_to(placed, a.shape))


def _values(elem: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if elem == TensorProto.BOOL:
        return np.asarray(rng.random(shape) > 0.5)
    if elem == TensorProto.INT64:
        return np.asarray(rng.integers(0, 3, shape), np.int64)
    return np.asarray(rng.random(shape) * 3 + 0.5, np.float32)


def _table_model(op: str, opset: int, forms: dict, dynamic: bool = False, consumed: bool = True
                 ) -> tuple[onnx.ModelProto, dict]:
    """One model per (op, opset) holding every form as a node of its own: ``c_<form> = Op(a_<form>, b_<form>)``;
    with ``dynamic``, the inputs' dims are symbols (only the ranks are known); ``consumed``: opset 1's Add Sub Mul
    Div carry ``consumed_inputs``."""
    elem = ELEM.get(op, TensorProto.FLOAT)
    rng = np.random.default_rng(opset)
    nodes, inputs, outputs, feeds = [], [], [], {}
    for name, (a_shape, b_shape, broadcast, axis) in forms.items():
        attrs = {"broadcast": broadcast} if broadcast or opset == 6 else {}
        if axis is not None:
            attrs["axis"] = axis
        if consumed and opset == 1 and op in ("Add", "Sub", "Mul", "Div"):
            attrs["consumed_inputs"] = [0, 0]  # opset 1's legacy optimization attribute: means nothing
        nodes.append(helper.make_node(op, [f"a_{name}", f"b_{name}"], [f"c_{name}"], name=f"{op}_{name}", **attrs))
        for side, shape in (("a", a_shape), ("b", b_shape)):
            dims = [f"{side}_{name}_{k}" for k in range(len(shape))] if dynamic else list(shape)
            inputs.append(helper.make_tensor_value_info(f"{side}_{name}", elem, dims))
            feeds[f"{side}_{name}"] = _values(elem, shape, rng)
        outputs.append(helper.make_tensor_value_info(f"c_{name}", TensorProto.BOOL if op in BOOL_OUT else elem, None))
    graph = helper.make_graph(nodes, f"legacy_{op}_{opset}", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=3), feeds


def _run_path(model: onnx.ModelProto, path: str, feeds: dict) -> dict[str, np.ndarray]:
    session = _session(model, path)
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


TABLE = [(op, opset) for op in NUMPY for opset in (1, 6)]


@pytest.mark.parametrize(("op", "opset"), TABLE, ids=[f"{op}-{v}" for op, v in TABLE])
def test_legacy_form_table(op: str, opset: int) -> None:
    model, feeds = _table_model(op, opset, FORMS)
    imported = onnx_bcast.import_legacy(model)
    modes = {n.name: (n.domain, {a.name: helper.get_attribute_value(a) for a in n.attribute})
             for n in imported.graph.node}
    assert modes[f"{op}_nchw_bias_axis1"] == ("onnx_bcast", {"auto_broadcast": b"pdpd", "axis": 1})
    assert modes[f"{op}_suffix"] == ("onnx_bcast", {"auto_broadcast": b"pdpd", "axis": -1})
    assert modes[f"{op}_broadcast0"] == ("onnx_bcast", {"auto_broadcast": b"none", "axis": -1})
    for path in PATHS:
        got = _run_path(model, path, feeds)
        for name, (_, _, broadcast, axis) in FORMS.items():
            want = legacy_oracle(op, feeds[f"a_{name}"], feeds[f"b_{name}"], broadcast, axis)
            assert got[f"c_{name}"].dtype == want.dtype, (path, name)
            np.testing.assert_allclose(got[f"c_{name}"], want, rtol=1e-6, err_msg=f"{path} {name}")


def _openvino_run(model: onnx.ModelProto, feeds: dict, tmp_path: Path) -> dict[str, np.ndarray]:
    ov = pytest.importorskip("openvino")
    path = tmp_path / "legacy.onnx"
    onnx.save(model, str(path))
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    results = compiled(feeds)
    return {o.name: np.asarray(results[compiled.output(o.name)]) for o in model.graph.output}


@pytest.mark.parametrize(("op", "opset"), TABLE, ids=[f"{op}-{v}" for op, v in TABLE])
def test_oracle_agrees_with_openvino_where_it_reads_the_form(op: str, opset: int, tmp_path: Path) -> None:
    """OpenVINO's ONNX frontend reads the legacy model itself (not onnx-bcast's import): every form it reads gives
    the oracle's values; the axis forms of Pow/Or/Xor/Equal/Greater/Less it refuses (it broadcasts them numpy).
    It also refuses opset 1's ``consumed_inputs``, which the models here then leave out."""
    read = {name: form for name, form in FORMS.items() if op in OV_AXIS_OPS or name in OV_NUMPY_FORMS}
    model, feeds = _table_model(op, opset, read, consumed=False)
    got = _openvino_run(model, feeds, tmp_path)
    for name, (_, _, broadcast, axis) in read.items():
        want = legacy_oracle(op, feeds[f"a_{name}"], feeds[f"b_{name}"], broadcast, axis)
        np.testing.assert_allclose(got[f"c_{name}"], want, rtol=1e-6, err_msg=name)
    if op not in OV_AXIS_OPS:
        unread, unread_feeds = _table_model(op, opset, {"nchw_bias_axis1": FORMS["nchw_bias_axis1"]})
        with pytest.raises(Exception):  # noqa: B017 - OpenVINO's own error type
            _openvino_run(unread, unread_feeds, tmp_path)


@pytest.mark.parametrize("op", ["Add", "Pow", "Less"])
def test_table_runs_with_dims_known_only_at_run_time(op: str) -> None:
    """The same forms with symbolic dims: checked at run time, same values."""
    model, feeds = _table_model(op, 6, FORMS, dynamic=True)
    for path in PATHS:
        got = _run_path(model, path, feeds)
        for name, (_, _, broadcast, axis) in FORMS.items():
            want = legacy_oracle(op, feeds[f"a_{name}"], feeds[f"b_{name}"], broadcast, axis)
            np.testing.assert_allclose(got[f"c_{name}"], want, rtol=1e-6, err_msg=f"{path} {name}")


# ---------------------------------------------------------------------------------------------------------------
# PRelu and a Caffe2-style block


def prelu_oracle(x: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """PRelu-6: ``slope * x`` for x < 0; a slope of size C is per channel (X's axis 1), a size-1 slope shared."""
    per_channel = slope.reshape(-1)
    if per_channel.size > 1:
        per_channel = per_channel.reshape((1, -1) + (1,) * (x.ndim - 2))
    return np.where(x < 0, x * per_channel, x)


PRELU = [((2, 3), (3,)), ((2, 3, 4), (3,)), ((2, 3, 4, 5), (3,)), ((2, 3, 4, 5), (1,)), ((2, 3, 4), ()),
         ((2, 3, 4), (1, 1))]


def _prelu_model(x_shape: tuple, slope_shape: tuple, opset: int = 6, dynamic: bool = False,
                 any_rank: bool = False) -> onnx.ModelProto:
    """PRelu of X and slope; ``dynamic``: symbolic dims (ranks known); ``any_rank``: X of unknown rank."""
    attrs = {"consumed_inputs": [0, 0]} if opset == 1 else {}
    node = helper.make_node("PRelu", ["x", "slope"], ["y"], name="prelu", **attrs)
    dims = None if any_rank else [f"x{k}" for k in range(len(x_shape))] if dynamic else list(x_shape)
    graph = helper.make_graph([node], "prelu", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, dims),
        helper.make_tensor_value_info("slope", TensorProto.FLOAT, ["s"] if dynamic else list(slope_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=3)


@pytest.mark.parametrize(("x_shape", "slope_shape"), PRELU, ids=str)
@pytest.mark.parametrize("opset", [1, 6])
def test_prelu_slope_per_channel(x_shape: tuple, slope_shape: tuple, opset: int, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32),
             "slope": np.asarray(rng.random(slope_shape), np.float32)}
    want = prelu_oracle(feeds["x"], feeds["slope"])
    model = _prelu_model(x_shape, slope_shape, opset)
    for path in PATHS:
        np.testing.assert_allclose(_run_path(model, path, feeds)["y"], want, rtol=1e-6, err_msg=path)
    if slope_shape == (3,):  # OpenVINO's PRelu is per channel for a [C] slope: a cross-check of the oracle
        np.testing.assert_allclose(_openvino_run(model, feeds, tmp_path)["y"], want, rtol=1e-6)
    if len(slope_shape) == 1:  # the slope's size, and then X's rank too, known only at run time
        for dynamic in (_prelu_model(x_shape, slope_shape, opset, dynamic=True),
                        _prelu_model(x_shape, slope_shape, opset, dynamic=True, any_rank=True)):
            for path in PATHS:
                np.testing.assert_allclose(_run_path(dynamic, path, feeds)["y"], want, rtol=1e-6, err_msg=path)


GEMM = [((2, 5), (5, 4), (2, 4), 0, 0), ((2, 5), (5, 4), (4,), 1, 0), ((2, 5), (5, 4), (1,), 1, 0),
        ((2, 5), (5, 4), (), 1, 0), ((2, 5), (4, 5), (2, 1), 1, 1)]


@pytest.mark.parametrize(("a_shape", "b_shape", "c_shape", "broadcast", "trans_b"), GEMM, ids=str)
@pytest.mark.parametrize("opset", [1, 6])
def test_gemm_c(a_shape: tuple, b_shape: tuple, c_shape: tuple, broadcast: int, trans_b: int, opset: int) -> None:
    """Gemm-1/6: ``Y = alpha * A @ B + beta * C``; broadcast=0: C is [M, N]; broadcast=1: C broadcasts to it."""
    rng = np.random.default_rng(11)
    feeds = {name: np.asarray(rng.standard_normal(shape), np.float32)
             for name, shape in (("a", a_shape), ("b", b_shape), ("c", c_shape))}
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="fc", broadcast=broadcast, transB=trans_b,
                            alpha=0.5, beta=2.0)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
                                            for k, v in feeds.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=3)
    b = feeds["b"].T if trans_b else feeds["b"]
    want = 0.5 * feeds["a"] @ b + 2.0 * feeds["c"]
    for path in PATHS:
        np.testing.assert_allclose(_run_path(model, path, feeds)["y"], want, rtol=1e-5, err_msg=path)


@pytest.mark.parametrize("broadcast", [0, 1])
def test_gemm_with_a_symbolic_batch_imports_and_c_is_checked_at_run_time(broadcast: int) -> None:
    """A [N, 5], B [5, 4], C [N, 4] (broadcast=0) or [4] (broadcast=1): onnx's version converter alone refuses any
    dim_param in a Gemm. broadcast=0's C must be [M, N] exactly: a C of [1, 4] (which Gemm-7 would broadcast) fails
    on every path, naming the legacy node; a valid C gives numpy's formula."""
    c_dims = ["N", 4] if broadcast == 0 else [4]
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="fc", broadcast=broadcast, alpha=0.5, beta=2.0)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 5]),
                                            helper.make_tensor_value_info("b", TensorProto.FLOAT, [5, 4]),
                                            helper.make_tensor_value_info("c", TensorProto.FLOAT, c_dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)
    rng = np.random.default_rng(3)
    for n in (1, 3):
        feeds = {"a": rng.standard_normal((n, 5)).astype(np.float32), "b": rng.standard_normal((5, 4)).astype(
            np.float32), "c": rng.standard_normal((n, 4) if broadcast == 0 else (4,)).astype(np.float32)}
        want = 0.5 * feeds["a"] @ feeds["b"] + 2.0 * feeds["c"]
        for path in PATHS:
            np.testing.assert_allclose(_run_path(model, path, feeds)["y"], want, rtol=1e-5, err_msg=path)
    if broadcast == 0:
        feeds = {"a": np.ones((3, 5), np.float32), "b": np.ones((5, 4), np.float32), "c": np.ones((1, 4), np.float32)}
        for path in PATHS:
            error = onnx_bcast.BroadcastError if path != "converted" else Exception
            with pytest.raises(error) as failed:
                _run_path(model, path, feeds)
            if path != "converted":
                assert str(failed.value).startswith("Gemm-6(broadcast=0) node 'fc': "), path


def _conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A plain 2-D convolution (no padding, stride 1), NCHW."""
    windows = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))  # N, C, H', W', kh, kw
    return np.einsum("nchwij,ocij->nohw", windows, w)


def _caffe2_block() -> tuple[onnx.ModelProto, dict[str, np.ndarray], np.ndarray]:
    """Conv, bias Add(axis=1), BatchNormalization-6, scale Mul(axis=1), Relu, Flatten, Gemm-6(broadcast=1)."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    values = {"w": w, "bias": rng.standard_normal(4), "bn_scale": rng.random(4) + 0.5, "bn_b": rng.standard_normal(4),
              "bn_mean": rng.standard_normal(4), "bn_var": rng.random(4) + 0.5, "scale": rng.random(4) + 0.5,
              "fc_w": rng.standard_normal((10, 4 * 6 * 6)), "fc_b": rng.standard_normal(10)}
    values = {k: v.astype(np.float32) for k, v in values.items()}
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["conv"], name="conv", kernel_shape=[3, 3]),
        helper.make_node("Add", ["conv", "bias"], ["biased"], name="conv_bias", broadcast=1, axis=1),
        helper.make_node("BatchNormalization", ["biased", "bn_scale", "bn_b", "bn_mean", "bn_var"], ["bn"],
                         name="bn", is_test=1, epsilon=1e-5),
        helper.make_node("Mul", ["bn", "scale"], ["scaled"], name="channel_scale", broadcast=1, axis=1),
        helper.make_node("Relu", ["scaled"], ["relu"], name="relu"),
        helper.make_node("Flatten", ["relu"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], name="fc", transB=1, broadcast=1),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in values.items()]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))] + [
        helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in values.items()]
    graph = helper.make_graph(nodes, "caffe2_block", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                                             None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)
    v = values
    per_channel = (1, 4, 1, 1)
    h = _conv(x, w) + v["bias"].reshape(per_channel)
    h = (h - v["bn_mean"].reshape(per_channel)) / np.sqrt(v["bn_var"].reshape(per_channel) + 1e-5)
    h = h * v["bn_scale"].reshape(per_channel) + v["bn_b"].reshape(per_channel)
    h = np.maximum(h * v["scale"].reshape(per_channel), 0).reshape(2, -1)
    return model, {"x": x}, h @ v["fc_w"].T + v["fc_b"]


def test_caffe2_style_block(tmp_path: Path) -> None:
    model, feeds, want = _caffe2_block()
    lines = import_with_report(model).lines()
    assert "legacy Add-6(broadcast=1, axis=1) -> Add(auto_broadcast=pdpd, axis=1): 1" in lines
    assert "legacy Mul-6(broadcast=1, axis=1) -> Mul(auto_broadcast=pdpd, axis=1): 1" in lines
    assert "legacy Gemm-6(broadcast=1) -> Gemm-17 (C broadcast unidirectionally to [M, N]): 1" in lines
    assert "4 other node(s) upgraded by onnx.version_converter" in lines
    for path in PATHS:
        np.testing.assert_allclose(_run_path(model, path, feeds)["y"], want, rtol=1e-4, atol=1e-4, err_msg=path)
    np.testing.assert_allclose(_openvino_run(model, feeds, tmp_path)["y"], want, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------------------------
# Invalid legacy nodes

INVALID = {  # (A, B, broadcast, axis): what the message says
    "not_a_run_at_axis": (((2, 3, 4, 5), (3, 5), 1, 1), "B dim 1 (size 5) differs from A dim 2 (size 4)"),
    "axis_out_of_range": (((2, 3, 4, 5), (4, 5), 1, 3), "axis 3 is outside [0, 2]"),
    "negative_axis": (((2, 3, 4, 5), (4, 5), 1, -2), "axis -2 is negative"),
    "b_rank_over_a": (((3, 4), (2, 3, 4), 1, None), "B's rank 3 exceeds A's rank 2"),
    "interior_one": (((2, 3, 4, 5), (3, 1, 5), 1, 1), "no 1-dim expansion"),
    "broadcast0_unequal": (((2, 3), (3,), 0, None), "broadcast=0 needs equal shapes"),
}


def _one_node(a_shape: tuple, b_shape: tuple, broadcast: int, axis: int | None, op: str = "Add",
              dynamic: bool = False) -> onnx.ModelProto:
    attrs = {"broadcast": broadcast} | ({"axis": axis} if axis is not None else {})
    node = helper.make_node(op, ["a", "b"], ["c"], name="legacy_node", **attrs)
    shapes = [[f"{s}{k}" for k in range(len(shape))] if dynamic else list(shape)
              for s, shape in (("a", a_shape), ("b", b_shape))]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, shapes[0]),
                                            helper.make_tensor_value_info("b", TensorProto.FLOAT, shapes[1])],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)


@pytest.mark.parametrize("name", INVALID)
def test_invalid_legacy_node_fails_at_import_on_every_entry_point(name: str) -> None:
    (a_shape, b_shape, broadcast, axis), detail = INVALID[name]
    model = _one_node(a_shape, b_shape, broadcast, axis)
    head = f"Add-6(broadcast={broadcast}" + (f", axis={axis}" if axis is not None and broadcast else "") + ")"
    calls = (onnx_bcast.import_legacy, onnx_bcast.convert, lambda m: onnx_bcast.InferenceSession(m),
             lambda m: onnx_bcast.InferenceSession(m, backend="native"))
    for call in calls:
        with pytest.raises(onnx_bcast.BroadcastError) as err:
            call(model)
        assert str(err.value).startswith(f"{head} node 'legacy_node': "), str(err.value)
        assert detail in str(err.value)


RUN_TIME_INVALID = {  # with only ranks known, the run-time check is the pdpd rule's
    "not_a_run_at_axis": (((2, 3, 4, 5), (3, 5), 1, 1), "B dim 1 (size 5) must be 1 or equal A dim 2 (size 4)"),
    "bias_mismatch": (((2, 3, 4, 5), (4,), 1, 1), "B dim 0 (size 4) must be 1 or equal A dim 1 (size 3)"),
    "broadcast0_unequal": (((2, 3), (2, 4), 0, None), "shapes must be identical"),
}


@pytest.mark.parametrize("name", RUN_TIME_INVALID)
@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_invalid_legacy_node_fails_at_run_time_naming_it(name: str, backend: str) -> None:
    (a_shape, b_shape, broadcast, axis), detail = RUN_TIME_INVALID[name]
    model = _one_node(a_shape, b_shape, broadcast, axis, dynamic=True)
    session = onnx_bcast.InferenceSession(model, backend=backend)
    feeds = {"a": np.ones(a_shape, np.float32), "b": np.ones(b_shape, np.float32)}
    with pytest.raises(onnx_bcast.BroadcastError) as err:
        session.run(None, feeds)
    head = f"Add-6(broadcast={broadcast}" + (f", axis={axis}" if axis is not None and broadcast else "") + ")"
    assert str(err.value).startswith(f"{head} node 'legacy_node': "), str(err.value)
    assert detail in str(err.value)
    converted = ort.InferenceSession(onnx_bcast.convert(model).SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="legacy_node"):  # noqa: B017 - ONNX Runtime's error, naming the guard
        converted.run(None, feeds)


def test_interior_one_is_wider_at_run_time_as_documented() -> None:
    """docs/ops.md: with B's dims unknown at import, the run-time rule is pdpd's, which also stretches a size-1 B
    dim between others (the legacy rule refuses it where the shapes are known at import)."""
    model = _one_node((2, 3, 4, 5), (3, 1, 5), 1, 1, dynamic=True)
    a, b = np.ones((2, 3, 4, 5), np.float32), np.arange(15, dtype=np.float32).reshape(3, 1, 5)
    got = onnx_bcast.InferenceSession(model).run(None, {"a": a, "b": b})[0]
    np.testing.assert_array_equal(got, a + b.reshape(1, 3, 1, 5))


@pytest.mark.parametrize(("x_shape", "slope_shape", "detail"), [
    ((2, 3, 4), (4,), "slope size 4 must equal X's channels (dim 1, size 3)"),
    ((2, 3, 4), (3, 4), "slope must be [C] (per channel) or have one element"),
    ((3,), (3,), "a per-channel slope needs X of rank >= 2"),
])
def test_invalid_prelu_slope(x_shape: tuple, slope_shape: tuple, detail: str) -> None:
    with pytest.raises(onnx_bcast.BroadcastError) as err:
        onnx_bcast.import_legacy(_prelu_model(x_shape, slope_shape))
    assert str(err.value).startswith("PRelu-6 node 'prelu': ") and detail in str(err.value)


def test_invalid_prelu_slope_at_run_time() -> None:
    model = _prelu_model((2, 3, 4), (3,), dynamic=True)
    feeds = {"x": np.ones((2, 3, 4), np.float32), "slope": np.ones(4, np.float32)}
    for backend in ("numpy", "native"):
        with pytest.raises(onnx_bcast.BroadcastError, match=r"^PRelu-6 node 'prelu': data dim 0 \(size 4\)"):
            onnx_bcast.InferenceSession(model, backend=backend).run(None, feeds)


@pytest.mark.parametrize(("c_shape", "broadcast", "detail"), [
    ((3,), 1, "C does not broadcast to [M, N]"), ((4,), 0, "broadcast=0 needs C of shape [M, N]")])
def test_invalid_gemm_c(c_shape: tuple, broadcast: int, detail: str) -> None:
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="fc", broadcast=broadcast)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 5]),
                                            helper.make_tensor_value_info("b", TensorProto.FLOAT, [5, 4]),
                                            helper.make_tensor_value_info("c", TensorProto.FLOAT, list(c_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)
    with pytest.raises(onnx_bcast.BroadcastError) as err:
        onnx_bcast.convert(model)
    assert str(err.value).startswith(f"Gemm-6(broadcast={broadcast}) node 'fc': ") and detail in str(err.value)


def test_an_op_the_version_converter_cannot_upgrade_is_named() -> None:
    node = helper.make_node("Upsample", ["x"], ["y"], name="up", scales=[1.0, 1.0, 2.0, 2.0])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)
    with pytest.raises(UpgradeError, match=r"cannot upgrade Upsample node 'up' \(opset 6 to 17\) at step 6 -> 7"):
        onnx_bcast.import_legacy(model)


def test_not_a_legacy_model() -> None:
    model = _one_node((2, 3), (3,), 1, None)
    model.opset_import[0].version = 7
    with pytest.raises(ValueError, match="not a legacy ONNX model"):
        onnx_bcast.import_legacy(model)
    with pytest.raises(ValueError, match="from 7 to"):
        onnx_bcast.import_legacy(_one_node((2, 3), (3,), 1, None), opset=6)


# ---------------------------------------------------------------------------------------------------------------
# The command line


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "onnx_bcast", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)


def test_cli_convert_run_check_take_legacy_models(tmp_path: Path) -> None:
    model, feeds, want = _caffe2_block()
    path, out = tmp_path / "block.onnx", tmp_path / "block_standard.onnx"
    onnx.save(model, str(path))
    np.save(tmp_path / "x.npy", feeds["x"])
    before = path.read_bytes()
    done = _cli("convert", str(path), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "legacy Add-6(broadcast=1, axis=1) -> Add(auto_broadcast=pdpd, axis=1): 1" in done.stdout
    assert "Add(auto_broadcast=pdpd): 1 rewritten" in done.stdout
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    done = _cli("check", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("legacy ONNX: default-domain opset 6 imported at opset 17\n"), done.stdout
    assert "\n2 onnx_bcast node(s)\n" in done.stdout
    assert "conv_bias: Add auto_broadcast=pdpd axis=1 (from legacy Add-6(broadcast=1, axis=1) 'conv_bias')" in \
        done.stdout
    done = _cli("run", str(path), "--input", f"x={tmp_path / 'x.npy'}")
    assert done.returncode == 0 and done.stdout.startswith("y: float32 [2, 10]"), done.stderr
    assert path.read_bytes() == before
    bad = tmp_path / "bad.onnx"
    onnx.save(_one_node((2, 3, 4, 5), (4,), 1, 1), str(bad))
    for command in (["convert", str(bad), "-o", str(tmp_path / "bad_out.onnx")], ["check", str(bad)],
                    ["run", str(bad)]):
        done = _cli(*command)
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        assert "Add-6(broadcast=1, axis=1) node 'legacy_node': B dim 0 (size 4) differs from A dim 1 (size 3)" in \
            done.stderr, done.stderr
    assert not (tmp_path / "bad_out.onnx").exists()
