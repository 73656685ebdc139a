"""The shared case table through ONNX Runtime: onnx_bcast.InferenceSession and plain ORT with session_options."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import onnx_bcast
from tests.cases import INVALID_CASES, VALID_CASES, Case, expected_values, sample
from tests.onnx_util import case_feeds, case_model


@pytest.mark.parametrize("constant_shapes", [False, True], ids=["runtime_shapes", "constant_shapes"])
@pytest.mark.parametrize("case", VALID_CASES, ids=lambda c: c.name)
def test_ort_values(case: Case, constant_shapes: bool) -> None:
    data = sample(case.data_shape)
    session = onnx_bcast.InferenceSession(case_model(case, constant_shapes=constant_shapes))
    (out,) = session.run(None, case_feeds(case, data, constant_shapes))
    assert out.shape == case.expected_shape
    np.testing.assert_array_equal(out, expected_values(data, case))


@pytest.mark.parametrize("case", VALID_CASES[::3], ids=lambda c: c.name)
def test_plain_ort_runs_prepared_model(case: Case) -> None:
    data = sample(case.data_shape)
    prepared = onnx_bcast.prepare(case_model(case))
    session = ort.InferenceSession(prepared.SerializeToString(), sess_options=onnx_bcast.session_options(),
                                   providers=["CPUExecutionProvider"])
    (out,) = session.run(None, case_feeds(case, data))
    np.testing.assert_array_equal(out, expected_values(data, case))


@pytest.mark.parametrize("case", [c for c in INVALID_CASES if c.name != "mode_unknown"], ids=lambda c: c.name)
def test_ort_invalid_runtime_input_raises_and_session_survives(case: Case) -> None:
    session = onnx_bcast.InferenceSession(case_model(case, any_rank=True))
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        session.run(None, case_feeds(case, sample(case.data_shape)))
    message = str(info.value)
    assert f"node '{case.op.lower()}_node'" in message
    for word in case.error_words:
        assert word in message, message
    follow_up = _valid_follow_up(case)
    if follow_up is None:  # no input is valid for this node (e.g. pdpd axis -2): it keeps failing cleanly
        with pytest.raises(onnx_bcast.BroadcastError):
            session.run(None, case_feeds(case, sample(case.data_shape)))
        return
    feeds, expected = follow_up
    (out,) = session.run(None, feeds)
    np.testing.assert_array_equal(out, expected)


def _valid_follow_up(case: Case) -> tuple[dict[str, np.ndarray], np.ndarray] | None:
    """Valid feeds for the failing case's node (same mode and axis) and the numpy result they must give."""
    data = sample((3,))
    mode = case.mode.lower()
    if mode == "pdpd":
        if case.axis < -1:
            return None
        target = (2, 3) if case.axis == -1 else (2,) * case.axis + (3,)
    else:
        target = (2, 3)
    feeds = {"data": data, "target_shape": np.array(target, np.int64)}
    if case.axes is not None:
        feeds["axes_mapping"] = np.array([len(target) - 1] if mode in ("explicit", "none") else [], np.int64)
    return feeds, np.broadcast_to(data, target)


def test_unknown_mode_fails_when_the_session_is_created() -> None:
    case = next(c for c in INVALID_CASES if c.name == "mode_unknown")
    with pytest.raises(onnx_bcast.BroadcastError, match="unknown mode 'sideways'"):
        onnx_bcast.InferenceSession(case_model(case))
