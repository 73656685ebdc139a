"""``onnx-bcast from-ir`` as a user runs it: refusals name the IR ops and write nothing, ``--verify`` against
OpenVINO's CPU plugin with the IR's inputs (given, shaped or random), ``--keep-failed``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino", reason="from-ir --verify runs OpenVINO's CPU plugin (onnx-bcast[openvino])")
pytest.importorskip("onnxifier", reason="the IR route needs onnxifier (onnx-bcast[onnxifier], Python >= 3.11)")
pytest.importorskip("onnxruntime", reason="the written models run in ONNX Runtime")

import onnx  # noqa: E402
import openvino.opset13 as ops  # noqa: E402
from openvino.utils.node_factory import NodeFactory  # noqa: E402

from onnx_bcast.cli.main import main  # noqa: E402


def _save(model: ov.Model, folder: Path, name: str) -> Path:
    path = folder / f"{name}.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path


def _dynamic_mvn(folder: Path) -> Path:
    x = ops.parameter(ov.PartialShape([-1, 8]), np.float32, name="features")
    y = ops.mvn(x, ops.constant(np.array([-1], np.int64)), True, 1e-5, "inside_sqrt")
    y.output(0).set_names({"normalized"})
    return _save(ov.Model([y.output(0)], [x], "dynamic"), folder, "dynamic")


def _integer_divide(folder: Path) -> Path:
    a, b = ops.parameter([4], np.int32, name="a"), ops.parameter([4], np.int32, name="b")
    divide = NodeFactory("opset1").create("Divide", [a.output(0), b.output(0)], {"m_pythondiv": True})
    return _save(ov.Model([divide.output(0)], [a, b], "div"), folder, "div")


def test_verify_with_shapes_and_given_inputs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    xml, out = _dynamic_mvn(tmp_path), tmp_path / "out.onnx"
    assert main(["from-ir", str(xml), "-o", str(out), "--verify", "--input-shapes", "features:[5,8]"]) == 0
    printed = capsys.readouterr().out
    assert "equal to OpenVINO's CPU plugin on random inputs ['features']" in printed and "normalized" in printed
    given = tmp_path / "features.npy"
    np.save(given, np.arange(24, dtype=np.float32).reshape(3, 8))
    assert main(["from-ir", str(xml), "-o", str(out), "--force", "--verify", "--input", f"features={given}"]) == 0
    assert "on the given inputs" in capsys.readouterr().out
    assert [o.name for o in onnx.load(out).graph.output] == ["normalized"]


def test_verify_failure_writes_nothing_unless_kept(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``--pythondiv reference`` floors what the CPU plugin truncates: --verify cannot agree, exit 1, nothing
    written; ``--keep-failed`` writes OUT.unverified.onnx and still exits 1."""
    xml, out = _integer_divide(tmp_path), tmp_path / "out.onnx"
    assert main(["from-ir", str(xml), "-o", str(out), "--verify", "--pythondiv", "reference"]) == 1
    assert "truncates" in capsys.readouterr().err and not out.exists()
    assert main(["from-ir", str(xml), "-o", str(out), "--verify", "--pythondiv", "reference", "--keep-failed"]) == 1
    assert "(--keep-failed)" in capsys.readouterr().err
    assert not out.exists() and (tmp_path / "out.unverified.onnx").exists()
    assert main(["from-ir", str(xml), "-o", str(out), "--verify"]) == 0  # the default follows the CPU plugin
    capsys.readouterr()


def test_refusal_names_each_op_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    x = ops.parameter([2, 3, 4], np.float32, name="x")
    first = ops.reverse_sequence(x, ops.constant(np.array([3, 1], np.int32)), 0, 1)
    first.set_friendly_name("first_reverse")
    second = ops.reverse_sequence(first, ops.constant(np.array([2, 2], np.int32)), 0, 1)
    second.set_friendly_name("second_reverse")
    xml, out = _save(ov.Model([second.output(0)], [x], "refused"), tmp_path, "refused"), tmp_path / "out.onnx"
    assert main(["from-ir", str(xml), "-o", str(out)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert "nothing was written" in err[0] and len(err) == 3  # no log line of onnxifier's besides
    assert [line.split(":")[0].strip() for line in err[1:]] == ["ReverseSequence-1 'first_reverse'",
                                                                "ReverseSequence-1 'second_reverse'"], err
    assert not out.exists()


def test_options_of_verify_need_verify(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A usage error (exit status 2), as the same mistake is with convert; nothing written."""
    xml = _dynamic_mvn(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["from-ir", str(xml), "-o", str(tmp_path / "o.onnx"), "--input-shapes", "features:[5,8]"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "onnx-bcast from-ir: error: argument --input-shapes: only used with --verify (what the verification runs)")
    assert not (tmp_path / "o.onnx").exists()
