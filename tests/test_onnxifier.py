"""The IR route (issue 22): OpenVINO IR -> onnxifier with our passes -> standard ONNX (or our ops), against OpenVINO.

Every case of ``tests/ir_cases.py`` (Broadcast-1/-3 in every mode with constant and run-time targets, every binary
op under none/numpy/pdpd with an axis, integer and float division and mod, JAX-frontend IRs) is saved as IR,
converted with ``ir_to_onnx``, run in plain ONNX Runtime and compared with OpenVINO's reference kernels (the IR with
its inputs as constants, ConstantFolding): bit for bit, or within 1e-5 for float arithmetic. A bad run-time target
fails in both. ``keep_ops`` models run in ``onnx_bcast.InferenceSession`` and, read back by OpenVINO through
``onnx_bcast.openvino.extensions()``, fold to the IR's values (the round trip). A sample goes through the CLI.
"""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
onnxifier = pytest.importorskip(
    "onnxifier", reason="onnxifier is not installed (the tools extra installs it on Python >= 3.11; the run at the "
                        "declared minimums, whose numpy 1.26.0 is below what onnxifier needs, does not)")
ort = pytest.importorskip("onnxruntime")

import onnx_bcast  # noqa: E402
from onnx_bcast.onnxifier import ir_to_onnx  # noqa: E402
from tests.ir_cases import IrCase, all_cases, binary_case  # noqa: E402
from tests.ov_reference import NotFolded, ov_reference  # noqa: E402

CASES = {case.name: case for case in all_cases()}


@pytest.fixture(scope="module")
def ir_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("irs")


def saved(case: IrCase, folder: Path) -> tuple[Path, dict[str, np.ndarray]]:
    path = folder / f"{case.name}.xml"
    model, feeds = case.build()
    if not path.exists():
        ov.save_model(model, str(path), compress_to_fp16=False)
    return path, feeds


def assert_matches(case: IrCase, got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert g.shape == w.shape, (case.name, g.shape, w.shape)
        if case.exact:
            assert g.dtype == w.dtype and np.array_equal(g, w), (case.name, g.ravel()[:8], w.ravel()[:8])
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=case.name)


def expected(case: IrCase, path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """OpenVINO's reference on the IR; numpy's formula where that reference cannot serve (the case says why)."""
    if case.numpy_expected is not None:
        return [np.asarray(case.numpy_expected(feeds))]
    return ov_reference(str(path), feeds)


def run_ort(model: object, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString())
    names = {i.name for i in session.get_inputs()}
    return session.run(None, {k: v for k, v in feeds.items() if k in names})


@pytest.mark.parametrize("name", list(CASES))
def test_ir_route_equals_openvino_reference(name: str, ir_folder: Path) -> None:
    case = CASES[name]
    path, feeds = saved(case, ir_folder)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    converted = ir_to_onnx(path, pythondiv="reference")  # the oracle is OpenVINO's reference
    assert not [n.op_type for n in converted.graph.node if n.domain not in ("", "ai.onnx")]
    if case.fails:
        with pytest.raises(NotFolded):
            ov_reference(str(path), feeds)
        with pytest.raises(Exception, match="guard|Expand|Reshape|shape"):
            run_ort(converted, feeds)
    else:
        assert_matches(case, run_ort(converted, feeds), expected(case, path, feeds))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest  # the input is only read


@pytest.mark.parametrize("name", list(CASES))
def test_keep_ops_round_trip(name: str, ir_folder: Path) -> None:
    """IR -> ONNX with our ops: ``InferenceSession`` and OpenVINO reading it back (extensions) give the IR's values."""
    from onnx_bcast.openvino import extensions

    case = CASES[name]
    path, feeds = saved(case, ir_folder)
    kept = ir_to_onnx(path, keep_ops=True, pythondiv="reference")
    core = ov.Core()
    core.add_extension(extensions())
    if case.fails:
        with pytest.raises(onnx_bcast.BroadcastError):
            onnx_bcast.InferenceSession(kept).run(None, feeds)
        return
    want = expected(case, path, feeds)
    session = onnx_bcast.InferenceSession(kept)
    names = {i.name for i in session.get_inputs()}
    assert_matches(case, session.run(None, {k: v for k, v in feeds.items() if k in names}), want)
    # compiled for CPU: OpenVINO's ONNX frontend reads a plain integer Div as Divide m_pythondiv=true, which its
    # reference floors (docs/ops.md), and its reference has no f64 Convert (FloorMod's formula)
    if name.startswith("FloorMod_") and name.endswith("float32"):
        return  # its formula runs in double, which OpenVINO's CPU plugin computes as garbage (NaN, 1e-41)
    compiled = core.compile_model(core.read_model(kept.SerializeToString()), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    names = {i.get_any_name() for i in compiled.inputs}
    results = compiled({k: v for k, v in feeds.items() if k in names})
    assert_matches(case, [np.asarray(results[out]) for out in compiled.outputs], want)


def test_our_nodes_are_kept_where_the_meaning_differs(ir_folder: Path) -> None:
    """pdpd, none and Broadcast become our nodes; numpy Add stays the plain ONNX Add (onnxifier's fusions see it)."""
    ours = {}
    for name in ("Add_pdpd_float32", "Add_none_float32", "Add_numpy_float32", "broadcast1_none", "Mod_numpy_int32",
                 "FloorMod_numpy_int32", "Divide_numpy_int32"):
        kept = ir_to_onnx(saved(CASES[name], ir_folder)[0], keep_ops=True, pythondiv="reference")
        ours[name] = sorted(f"{n.domain or 'onnx'}.{n.op_type}" for n in kept.graph.node
                            if n.op_type not in ("Identity", "Constant"))
    assert ours["Add_pdpd_float32"] == ["onnx_bcast.Add"] and ours["Add_none_float32"] == ["onnx_bcast.Add"]
    assert ours["Add_numpy_float32"] == ["onnx.Add"] and ours["broadcast1_none"] == ["onnx_bcast.Broadcast"]
    assert ours["Divide_numpy_int32"] == ["onnx_bcast.Div"]  # floor division: not ONNX's Div


def test_pythondiv_switch_follows_the_cpu_plugin(ir_folder: Path) -> None:
    """``pythondiv="cpu"``: truncation under numpy broadcasting, floor under pdpd, as OpenVINO's CPU plugin computes
    (measured in docs/ops.md), and is the default; ``pythondiv="reference"`` floors as the reference does."""
    for rule in ("numpy", "pdpd"):
        case = binary_case("Divide", rule, np.int32, name=f"Divide_{rule}_int32")
        path, feeds = saved(case, ir_folder)
        a, b = feeds["a"], feeds["b"]
        b_aligned = b if rule == "numpy" else b.reshape(3, 1)
        truncated = (np.sign(a) * np.sign(b_aligned) * (np.abs(a) // np.abs(b_aligned))).astype(np.int32)
        floored = a // b_aligned
        got = run_ort(ir_to_onnx(path, pythondiv="cpu"), feeds)[0]
        assert np.array_equal(got, truncated if rule == "numpy" else floored)
        assert np.array_equal(run_ort(ir_to_onnx(path), feeds)[0], got)
        assert np.array_equal(run_ort(ir_to_onnx(path, pythondiv="reference"), feeds)[0], floored)
        assert not np.array_equal(truncated, floored)


@pytest.mark.parametrize("name", ["broadcast3_explicit_nchw_bias_shapeof", "Add_pdpd_float32", "FloorMod_numpy_int32",
                                  "jax_broadcast_in_dim_mul"])
def test_cli_from_ir(name: str, ir_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from onnx_bcast.cli.main import main

    case = CASES[name]
    path, feeds = saved(case, ir_folder)
    out = tmp_path / "out.onnx"
    assert main(["from-ir", str(path), "-o", str(out), "--verify"]) == 0
    assert "equal to OpenVINO's CPU plugin" in capsys.readouterr().out
    import onnx

    assert_matches(case, run_ort(onnx.load(out), feeds), expected(case, path, feeds))
    assert main(["from-ir", str(path), "-o", str(out), "--keep-ops", "--verify", "--force"]) == 0


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
                                 ) -> None:
    from onnx_bcast.cli.main import main

    assert main(["from-ir", str(tmp_path / "missing.xml"), "-o", str(tmp_path / "o.onnx")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such IR file" in err
    import sys

    import onnx_bcast.onnxifier

    monkeypatch.setitem(sys.modules, "onnx_bcast.onnxifier.internals", None)  # as if onnxifier were missing
    monkeypatch.delattr(onnx_bcast.onnxifier, "internals", raising=False)
    (tmp_path / "m.xml").write_text("<net/>")
    (tmp_path / "m.bin").write_bytes(b"")
    assert main(["from-ir", str(tmp_path / "m.xml"), "-o", str(tmp_path / "o.onnx")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'onnx-bcast[onnxifier]'" in err


def test_onnxifier_internals_we_use_are_there() -> None:
    """Fails loudly when onnxifier changes what onnx_bcast/onnxifier/internals.py relies on."""
    from onnxifier.domain.intel.openvino import xml_frontend
    from onnxifier.domain.intel.openvino.passes.op import OP_CONVERT, BaseNodeConversion
    from onnxifier.graph import OnnxGraph

    from onnx_bcast.onnxifier import internals

    for method in internals.REQUIRED["registry"]:
        assert hasattr(OP_CONVERT, method), method
    for method in internals.REQUIRED["BaseNodeConversion"]:
        assert hasattr(BaseNodeConversion, method), method
    for method in internals.REQUIRED["OnnxGraph"]:
        assert hasattr(OnnxGraph, method), method
    registered = set(OP_CONVERT)
    assert set(internals.REQUIRED["passes"]) <= registered, set(internals.REQUIRED["passes"]) - registered
    assert list(inspect.signature(BaseNodeConversion.replace).parameters) == ["self", "graph", "ori_node"]
    source = inspect.getsource(xml_frontend.openvino_xml_to_onnx_graph)
    assert "sorted(OP_CONVERT)" in source  # passes run in name order, z__trivial last
    assert "opset_import.remove" in source  # why the lowering runs inside the frontend
    # the originals are back after a conversion
    before = {name: OP_CONVERT.get_type(name) for name in internals.REQUIRED["passes"]}
    with internals.installed({"pythondiv": "reference"}, lambda m: m):
        assert OP_CONVERT.get_type("broadcast") is not before["broadcast"]
    assert {name: OP_CONVERT.get_type(name) for name in internals.REQUIRED["passes"]} == before


@pytest.mark.parametrize("name", list(CASES))
def test_every_ir_through_the_command(name: str, ir_folder: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture) -> None:
    """``onnx-bcast from-ir`` on every IR: the written model gives OpenVINO's reference values, or fails where
    OpenVINO fails."""
    import onnx

    from onnx_bcast.cli.main import main

    case = CASES[name]
    path, feeds = saved(case, ir_folder)
    out = tmp_path / "out.onnx"
    assert main(["from-ir", str(path), "-o", str(out), "-q", "--pythondiv", "reference"]) == 0, capsys.readouterr().err
    written = onnx.load(out)
    if case.fails:
        with pytest.raises(Exception, match="guard|Expand|Reshape|shape"):
            run_ort(written, feeds)
    else:
        assert_matches(case, run_ort(written, feeds), expected(case, path, feeds))
