"""``onnx_bcast.LowerToStandard``: the lowering as an onnx-ir pass gives what ``convert`` gives."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import onnx_bcast
from onnx_bcast.models import bundled_models
from onnx_bcast.random_inputs import random_feeds

ir = pytest.importorskip("onnx_ir")
CPU = ["CPUExecutionProvider"]


@pytest.mark.parametrize("path", bundled_models(), ids=lambda p: p.stem)
def test_the_pass_runs_in_plain_ort_identically_to_convert(path) -> None:
    source = onnx.load(path)
    lower = onnx_bcast.LowerToStandard()
    result = ir.passes.PassManager([lower])(ir.from_proto(source))
    lower.ensures(result.model)
    assert result.modified
    lowered = ir.to_proto(result.model)
    assert not [n for n in lowered.graph.node if n.domain == onnx_bcast.DOMAIN]
    converted = onnx_bcast.convert(source)
    ours = ort.InferenceSession(lowered.SerializeToString(), providers=CPU)
    theirs = ort.InferenceSession(converted.SerializeToString(), providers=CPU)
    feeds = random_feeds(theirs, seed=3)
    for got, want in zip(ours.run(None, feeds), theirs.run(None, feeds), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def test_ensures_refuses_a_model_with_our_nodes_left() -> None:
    model = ir.from_proto(onnx.load(bundled_models()[0]))
    with pytest.raises(ir.passes.PostconditionError, match="onnx_bcast nodes are left"):
        onnx_bcast.LowerToStandard().ensures(model)


def test_a_model_without_our_nodes_is_not_modified() -> None:
    plain = onnx_bcast.convert(onnx.load(bundled_models()[0]))
    result = onnx_bcast.LowerToStandard()(ir.from_proto(plain))
    assert not result.modified
