"""IRs at the edge of the interface: an output that is an input (OpenVINO folded every op between them), and an
input of dynamic rank, which onnxifier's reader cannot read (refused naming the Parameter)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino", reason="the IRs are built with OpenVINO's Python API (onnx-bcast[openvino])")
pytest.importorskip("onnxifier", reason="the IR route needs onnxifier (onnx-bcast[onnxifier], Python >= 3.11)")
ort = pytest.importorskip("onnxruntime", reason="the written models run in ONNX Runtime")

import openvino.opset13 as ops  # noqa: E402

from onnx_bcast.onnxifier import IRNotConvertible, ir_to_onnx  # noqa: E402


def _save(model: ov.Model, folder: Path) -> Path:
    path = folder / "model.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path


def test_an_output_that_is_an_input(tmp_path: Path) -> None:
    """One tensor named 'result' is the IR's input and output: the input takes its Parameter's name."""
    x = ops.parameter([3], np.float32, name="data_0")
    x.output(0).set_names({"result"})
    written = ir_to_onnx(_save(ov.Model([x.output(0)], [x], "through"), tmp_path))
    assert [i.name for i in written.graph.input] == ["data_0"]
    assert [o.name for o in written.graph.output] == ["result"]
    value = np.array([1.5, -2.0, 3.0], np.float32)
    got = ort.InferenceSession(written.SerializeToString(), providers=["CPUExecutionProvider"]).run(None,
                                                                                                   {"data_0": value})
    np.testing.assert_array_equal(got[0], value)


def test_an_input_of_dynamic_rank_is_refused_by_name(tmp_path: Path) -> None:
    x = ops.parameter(ov.PartialShape.dynamic(), np.float32, name="x")
    path = _save(ov.Model([ops.relu(x).output(0)], [x], "dynamic"), tmp_path)
    with pytest.raises(IRNotConvertible, match=r"Parameter-1 'x': a dynamic rank"):
        ir_to_onnx(path)
