"""The native backend's fast path (``ort/prechecked.py``): inputs our shape rules prove valid in Python run the
unguarded form; every other input runs the guarded form, with the same values and the same errors as before.

Expected values are the case table's oracles (numpy formulas) and ``np.broadcast_to``; expected errors are the
numpy backend's, word for word.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from tests.case_table import CASES
from tests.test_case_table import SHAPE_INPUT_OPS, assert_exactly, case_feeds, case_model

RUNTIME_VALID = [c for c in CASES if c.valid and c.op in SHAPE_INPUT_OPS]


def _broadcast_model(x_dims: list, extra_input: list | None = None) -> onnx.ModelProto:
    """``Broadcast(x, s)`` in numpy mode with ``s`` fed; ``extra_input`` adds an input ``y`` of these dims."""
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims),
              helper.make_tensor_value_info("s", TensorProto.INT64, [2])]
    nodes = [helper.make_node("Broadcast", ["x", "s"], ["out"], domain="onnx_bcast", name="bc", mode="numpy")]
    outputs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)]
    if extra_input is not None:
        inputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, extra_input))
        nodes.append(helper.make_node("Neg", ["y"], ["neg"]))
        outputs.append(helper.make_tensor_value_info("neg", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "bc", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                             ir_version=10)


class _Counted:
    """Counts the runs of the fast path's unguarded session."""

    def __init__(self, session: onnx_bcast.InferenceSession) -> None:
        self.calls = 0
        fast = session._prechecked._session  # noqa: SLF001 - what this test is about
        run = fast.run

        def counted(*args: object, **kwargs: object) -> object:
            self.calls += 1
            return run(*args, **kwargs)
        fast.run = counted


def test_valid_runtime_cases_run_unguarded() -> None:
    """Every valid case of the table with its shapes fed at run time gives the oracle's value; those whose
    unguarded form is smaller run it."""
    fast = 0
    for case in RUNTIME_VALID:
        session = onnx_bcast.InferenceSession(case_model(case, runtime_shapes=True), backend="native")
        counted = _Counted(session) if session._prechecked is not None else None  # noqa: SLF001
        outputs = session.run(None, case_feeds(case, runtime_shapes=True))
        assert_exactly(tuple(outputs) if len(outputs) > 1 else outputs[0], case.expected)
        if counted is not None:
            assert counted.calls == 1, case.name
            fast += 1
    assert fast >= len(RUNTIME_VALID) // 2, (fast, len(RUNTIME_VALID))


def _numpy_error(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> str:
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        onnx_bcast.InferenceSession(model).run(None, feeds)
    return str(info.value)


def test_a_proven_signature_does_not_prove_other_values() -> None:
    """Target values are part of what was proven: a valid run, then an invalid target and data shape, then valid."""
    model = _broadcast_model([None])
    session = onnx_bcast.InferenceSession(model, backend="native")
    assert session._prechecked is not None  # noqa: SLF001
    x3 = np.arange(3, dtype=np.float32)
    valid = {"x": x3, "s": np.array([2, 3], np.int64)}
    np.testing.assert_array_equal(session.run(None, valid)[0], np.broadcast_to(x3, (2, 3)))
    for invalid in ({"x": x3, "s": np.array([2, 4], np.int64)}, {"x": x3, "s": np.array([3, 1], np.int64)},
                    {"x": np.arange(4, dtype=np.float32), "s": np.array([2, 3], np.int64)}):
        with pytest.raises(onnx_bcast.BroadcastError) as info:
            session.run(None, invalid)
        assert str(info.value) == _numpy_error(model, invalid)
    np.testing.assert_array_equal(session.run(None, valid)[0], np.broadcast_to(x3, (2, 3)))


def test_dim_params_that_disagree_run_guarded() -> None:
    """The unguarded form may rely on declared dims: inputs that break them (``N`` of 1 and of 3, which ONNX Runtime
    does not check) run the guarded form."""
    session = onnx_bcast.InferenceSession(_broadcast_model(["N"], ["N"]), backend="native")
    fast = session._prechecked  # noqa: SLF001
    s = np.array([2, 3], np.int64)
    agree = {"x": np.ones(3, np.float32), "s": s, "y": np.ones(3, np.float32)}
    disagree = {"x": np.ones(1, np.float32), "s": s, "y": np.ones(3, np.float32)}
    assert fast.run(None, agree, None) is not None
    assert fast.run(None, disagree, None) is None
    out, neg = session.run(None, disagree)
    np.testing.assert_array_equal(out, np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(neg, -np.ones(3, np.float32))


def test_other_feeds_run_guarded() -> None:
    """OrtValues, a wrong dtype, a missing input: the guarded session answers, as without the fast path."""
    ort = pytest.importorskip("onnxruntime")
    session = onnx_bcast.InferenceSession(_broadcast_model([3]), backend="native")
    fast = session._prechecked  # noqa: SLF001
    x, s = np.arange(3, dtype=np.float32), np.array([2, 3], np.int64)
    as_values = {"x": ort.OrtValue.ortvalue_from_numpy(x), "s": ort.OrtValue.ortvalue_from_numpy(s)}
    assert fast.run(None, as_values, None) is None
    np.testing.assert_array_equal(session.run(None, as_values)[0], np.broadcast_to(x, (2, 3)))
    assert fast.run(None, {"x": x.astype(np.float64), "s": s}, None) is None
    with pytest.raises(Exception, match="x"):  # ONNX Runtime's own error
        session.run(None, {"x": x.astype(np.float64), "s": s})
    assert fast.run(None, {"x": x}, None) is None


def test_not_built_where_it_would_not_help_or_would_change_files(tmp_path: Path) -> None:
    """No fast path for a target known when converting (nothing left to check), for the numpy backend, or where
    ONNX Runtime writes a file per session (the optimized model)."""
    static = _broadcast_model([3])
    static.graph.input.pop()  # s becomes an initializer
    static.graph.initializer.append(onnx.numpy_helper.from_array(np.array([2, 3], np.int64), "s"))
    assert onnx_bcast.InferenceSession(static, backend="native")._prechecked is None  # noqa: SLF001
    assert onnx_bcast.InferenceSession(_broadcast_model([3]))._prechecked is None  # noqa: SLF001
    options = onnx_bcast.session_options()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    session = onnx_bcast.InferenceSession(_broadcast_model([3]), options, backend="native")
    assert session._prechecked is None  # noqa: SLF001
    assert len(onnx.load(tmp_path / "optimized.onnx").graph.node) > 1  # the guarded form
