"""Interpolate-11 through the IR route: its cubic coefficient reaches ONNX's Resize, and antialias, which onnxifier's
pass drops, is refused by name. The oracle is OpenVINO's CPU plugin running the IR."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino", reason="the IR route's oracle is OpenVINO's CPU plugin (onnx-bcast[openvino])")
pytest.importorskip("onnxifier", reason="the IR route needs onnxifier (onnx-bcast[onnxifier], Python >= 3.11)")
ort = pytest.importorskip("onnxruntime", reason="the written models run in ONNX Runtime")

import openvino.opset11 as ops  # noqa: E402

from onnx_bcast.onnxifier import IRNotConvertible, ir_to_onnx  # noqa: E402
from tests.ir_oracle import assert_close, openvino_cpu  # noqa: E402


def _interpolate(folder: Path, **attrs: object) -> tuple[Path, ov.Model]:
    image = ops.parameter([1, 1, 4, 4], np.float32, name="image")
    scales = ops.constant(np.array([1, 1, 1.5, 0.75], np.float32))
    resized = ops.interpolate(image, scales, "cubic", "scales", **attrs)
    resized.output(0).set_names({"resized"})
    model = ov.Model([resized.output(0)], [image], "interpolate")
    path = folder / "interpolate.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path, model


@pytest.mark.parametrize("cube_coeff", (-0.5, -0.75, -0.3))
def test_cubic_coefficient_is_the_irs(cube_coeff: float, tmp_path: Path) -> None:
    path, model = _interpolate(tmp_path, cube_coeff=cube_coeff)
    feeds = {"image": np.random.default_rng(3).standard_normal((1, 1, 4, 4)).astype(np.float32)}
    written = ir_to_onnx(path)
    session = ort.InferenceSession(written.SerializeToString(), providers=["CPUExecutionProvider"])
    assert_close(session.run(None, feeds), openvino_cpu(model, feeds), atol=1e-5)


def test_antialias_is_refused_by_name(tmp_path: Path) -> None:
    path, _ = _interpolate(tmp_path, antialias=True)
    with pytest.raises(IRNotConvertible, match=r"Interpolate-11 .*antialias"):
        ir_to_onnx(path)
