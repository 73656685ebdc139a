"""OpenVINO runs converted models after constant folding (issue 33): no check may need an empty vector.

onnx-graphsurgeon's ``fold_constants`` and ONNX Runtime's optimizer (``optimized_model_filepath``) fold what they can
evaluate before the run, e.g. ``Shape`` of a rank-0 value, into initializers; OpenVINO's ONNX reader reads a
zero-element initializer as a one-element placeholder (a scalar 0, or ``False``). A check on each dim of a scalar's
shape once folded into one: a valid explicit broadcast of a scalar with one axis then failed in OpenVINO. Here each
converted model is folded both ways and run by OpenVINO's CPU plugin; valid inputs give the values of the numpy
formula written here, invalid ones fail, and no folded model holds a zero-element initializer.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from tests import tool_pipelines as tools

pytest.importorskip("openvino", reason="openvino is not installed (pip install -e '.[openvino]')")
gs = pytest.importorskip("onnx_graphsurgeon", reason="onnx-graphsurgeon is not installed (pip install -e '.[tools]')")

OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]


def graphsurgeon_fold(model: onnx.ModelProto) -> onnx.ModelProto:
    graph = gs.import_onnx(model)
    graph.fold_constants().cleanup()
    return gs.export_onnx(graph)


def ort_fold(level: str) -> Callable[[onnx.ModelProto], onnx.ModelProto]:
    """ONNX Runtime's optimizer at ``level`` on CPU, the model it writes (``optimized_model_filepath``)."""
    def fold(model: onnx.ModelProto) -> onnx.ModelProto:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "optimized.onnx")
            options = ort.SessionOptions()
            options.log_severity_level = 4
            options.graph_optimization_level = tools.ORT_LEVELS[level]
            options.optimized_model_filepath = path
            ort.InferenceSession(model.SerializeToString(), options, providers=tools.CPU)
            return onnx.load(path)
    return fold


FOLDS: dict[str, Callable[[onnx.ModelProto], onnx.ModelProto]] = {
    "graphsurgeon": graphsurgeon_fold, "ort_basic": ort_fold("ort_basic"),
    "ort_extended": ort_fold("ort_extended"), "ort_all": ort_fold("ort_all")}


@dataclass(frozen=True)
class Scalar:
    """A scalar broadcast to a target fed at run time (``axes`` too, for explicit mode); ``axes_len``: the declared
    length of axes_mapping (None: unknown)."""

    name: str
    op: str
    mode: str
    data: np.ndarray
    target: tuple[int, ...]
    axes: tuple[int, ...] | None = None
    axes_len: int | None = 1
    valid: bool = True

    def model(self) -> onnx.ModelProto:
        names = ["data", "target_shape"] + (["axes_mapping"] if self.axes is not None else [])
        node = helper.make_node(self.op, names, ["out"], domain="onnx_bcast", name="b", mode=self.mode)
        elem = helper.np_dtype_to_tensor_dtype(self.data.dtype)
        inputs = [helper.make_tensor_value_info("data", elem, []),
                  helper.make_tensor_value_info("target_shape", TensorProto.INT64, [len(self.target)])]
        if self.axes is not None:
            inputs.append(helper.make_tensor_value_info("axes_mapping", TensorProto.INT64,
                                                        [self.axes_len if self.axes_len is not None else "n"]))
        graph = helper.make_graph([node], self.name, inputs, [helper.make_tensor_value_info("out", elem, None)])
        return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)

    def feeds(self) -> dict[str, np.ndarray]:
        feeds = {"data": self.data, "target_shape": np.array(self.target, np.int64)}
        if self.axes is not None:
            feeds["axes_mapping"] = np.array(self.axes, np.int64).reshape(-1)
        return feeds

    def expected(self) -> np.ndarray:
        """A scalar broadcast to any target in any mode: the target's shape, every element the scalar."""
        return np.full(self.target, self.data, dtype=self.data.dtype)


CASES = [
    # the case that failed: graphsurgeon and ORT (every level) folded the scalar's per-dim check into
    # Equal([], [1]) -> a bool[0] initializer, which OpenVINO read as one False: the check failed a valid input
    Scalar("explicit_one_axis_bool", "Broadcast", "explicit", np.array(True), (1, 2), (0,)),
    Scalar("explicit_one_axis_float", "Broadcast", "explicit", np.array(2.5, np.float32), (3, 1), (1,)),
    Scalar("explicit_one_axis_unknown_length", "Broadcast", "explicit", np.array(7, np.int32), (1, 4), (0,), None),
    Scalar("numpy", "Broadcast", "numpy", np.array(1.5, np.float32), (2, 3)),
    Scalar("pdpd", "Broadcast", "pdpd", np.array(-3, np.int64), (2, 2)),
    Scalar("bidirectional", "Expand", "bidirectional", np.array(4, np.int64), (2, 2)),
    # invalid: a scalar's mapped target dim must be 1; a scalar takes at most one axis
    Scalar("explicit_mapped_dim_not_1", "Broadcast", "explicit", np.array(True), (2, 2), (0,), valid=False),
    Scalar("explicit_two_axes", "Broadcast", "explicit", np.array(1.0, np.float32), (1, 1), (0, 1), None, False),
]


def _zero_element_initializers(model: onnx.ModelProto) -> list[str]:
    found = [t.name for t in model.graph.initializer if 0 in t.dims]
    found += [n.output[0] for n in model.graph.node if n.op_type == "Constant"
              and any(a.name == "value" and 0 in a.t.dims for a in n.attribute)]
    return found


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_openvino_runs_the_folded_model(case: Scalar, fold: str) -> None:
    folded = FOLDS[fold](onnx_bcast.convert(case.model()))
    if case.valid:
        (got,) = tools.openvino_run(folded, case.feeds())
        assert got.shape == case.expected().shape
        np.testing.assert_array_equal(got, case.expected())
    else:
        with pytest.raises(Exception):  # noqa: B017 - any failure: no value may come back
            outputs = tools.openvino_run(folded, case.feeds())
            pytest.fail(f"OpenVINO returned {[o.shape for o in outputs]} for an input the original rejects")
    assert _zero_element_initializers(folded) == [], "a check left an empty vector to the folding tool"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_the_unfolded_model_agrees(case: Scalar) -> None:
    """The same models unfolded: ONNX Runtime and OpenVINO give the formula's values, or fail."""
    converted = onnx_bcast.convert(case.model())
    for run in (lambda: tools.ort_run(converted, case.feeds(), "ort_disabled"),
                lambda: tools.openvino_run(converted, case.feeds())):
        if not case.valid:
            with pytest.raises(Exception):  # noqa: B017
                run()
            continue
        (got,) = run()
        np.testing.assert_array_equal(got, case.expected())
