"""The ONNX Runtime error texts ``onnx_bcast/ort/run_failures.py`` reads, pinned on the installed onnxruntime.

ONNX Runtime hands a failed run or load back as an exception whose only content is its message: the failing node's
name and, for a ``Reshape``, the shape it was asked for are found nowhere else. ``run_failures.py`` reads three forms;
each is provoked here in plain ONNX Runtime, on models built by hand (no onnx-bcast code makes them), and must give
back the node name and error id the test put in. ``.ci/run`` runs this file on the newest and on the oldest
supported onnxruntime (and the GPU build), so a release that rewords one fails here, not in users' hands.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from onnx_bcast.ort import kernels, run_failures

GUARD = "Expand_3/guard: no target dimension may be negative; ranks are at most 64"


def _model(node: helper.NodeProto, inputs: list, initializers: list | None = None) -> bytes:
    graph = helper.make_graph([node], "texts", inputs, [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
                              initializers or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def _session(model: bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _ints(name: str, size: int) -> object:
    return helper.make_tensor_value_info(name, TensorProto.INT64, [size])


def test_a_failed_run_names_its_node() -> None:
    """``Name:'<node>' Status Message``: the guard (an ``Expand``) that failed at run time."""
    model = _model(helper.make_node("Expand", ["x", "s"], ["y"], name=GUARD), [_ints("x", 3), _ints("s", 1)])
    with pytest.raises(Exception) as failed:
        _session(model).run(None, {"x": np.ones(3, np.int64), "s": np.array([4], np.int64)})
    assert run_failures.failed_node(failed.value) == GUARD, str(failed.value)
    assert run_failures.failed_guard(failed.value) == ("Expand_3", GUARD.split("/guard: ", 1)[1])


@pytest.mark.parametrize("constant", [True, False], ids=["folded", "inferred"])
def test_a_refused_load_names_its_node(constant: bool) -> None:
    """``Node (<node>) Op (``: a guard that ONNX Runtime's load-time inference (or constant folding) finds failing."""
    target = helper.make_tensor("s", TensorProto.INT64, [1], [4])
    if constant:
        model = _model(helper.make_node("Expand", ["x", "s"], ["y"], name=GUARD), [],
                       [helper.make_tensor("x", TensorProto.INT64, [3], [1, 1, 1]), target])
    else:
        model = _model(helper.make_node("Expand", ["x", "s"], ["y"], name=GUARD), [_ints("x", 3)], [target])
    with pytest.raises(Exception) as failed:
        _session(model)
    assert run_failures.failed_node(failed.value) == GUARD, str(failed.value)


@pytest.mark.parametrize(("error_id", "size"), [(7, 1), (7, 14), (123456, 5)])
def test_a_failed_status_reshape_gives_the_error_id(error_id: int, size: int) -> None:
    """``requested shape:{2,<id>}`` (or ``{2,<id>,3}``): the status of a failed kernel, which no tensor can take."""
    shape = kernels.failure_shape(error_id, size)
    assert shape.tolist() == ([2, error_id, 3] if size == 2 * error_id else [2, error_id])
    model = _model(helper.make_node("Reshape", ["x", "s"], ["y"], name="status"), [_ints("x", size),
                                                                                   _ints("s", len(shape))])
    with pytest.raises(Exception) as failed:
        _session(model).run(None, {"x": np.zeros(size, np.int64), "s": shape})
    match = run_failures._FAILURE.search(str(failed.value))
    assert match is not None and int(match.group(1)) == error_id, str(failed.value)
    assert run_failures.failed_node(failed.value) == "status"
