"""An IR op's optional outputs that nothing reads are left out of the written model (MaxPool-8's indices): ONNX
Runtime computes a named output even when unread, and its NCHWc layout takes no MaxPool with indices (a real
detector's SPP block ran 1.4x slower than the original ONNX). Read ones are kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino", reason="the IR route's oracle is OpenVINO's CPU plugin (onnx-bcast[openvino])")
pytest.importorskip("onnxifier", reason="the IR route needs onnxifier (onnx-bcast[onnxifier], Python >= 3.11)")
ort = pytest.importorskip("onnxruntime", reason="the written models run in ONNX Runtime")

import openvino.opset8 as ops  # noqa: E402

from onnx_bcast.onnxifier import ir_to_onnx  # noqa: E402
from tests.ir_oracle import assert_close, openvino_cpu  # noqa: E402


def _pooled(tmp_path: Path, indices_out: bool) -> tuple[Path, ov.Model]:
    x = ops.parameter([1, 8, 9, 9], np.float32, name="x")
    pool = ops.max_pool(x, [1, 1], [1, 1], [2, 2], [2, 2], [5, 5], index_element_type="i64")
    relu = ops.relu(pool.output(0))
    relu.output(0).set_names({"y"})
    outputs = [relu.output(0)] + ([pool.output(1)] if indices_out else [])
    model = ov.Model(outputs, [x], "pool")
    path = tmp_path / "pool.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path, model


@pytest.mark.parametrize("indices_out", [False, True], ids=["indices_unread", "indices_read"])
def test_unread_max_pool_indices_are_left_out(tmp_path: Path, indices_out: bool) -> None:
    path, model = _pooled(tmp_path, indices_out)
    written = ir_to_onnx(path)
    (pool,) = [n for n in written.graph.node if n.op_type == "MaxPool"]
    assert len([o for o in pool.output if o]) == (2 if indices_out else 1)
    feeds = {"x": np.random.default_rng(3).standard_normal((1, 8, 9, 9)).astype(np.float32)}
    got = ort.InferenceSession(written.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    want = openvino_cpu(model, feeds)
    assert_close(got[:1], want[:1], atol=0)
    if indices_out:  # OpenVINO's indices count over the whole input, as ONNX's do (storage order 0)
        np.testing.assert_array_equal(got[1], want[1])
