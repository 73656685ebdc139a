"""The IR route's tests' oracle: OpenVINO's CPU plugin running an ov.Model, and the comparison of outputs by dtype."""

from __future__ import annotations

import numpy as np
import openvino as ov


def openvino_cpu(model: ov.Model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs on OpenVINO's CPU plugin (inference precision f32)."""
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return [np.asarray(value) for value in compiled(feeds).values()]


def assert_close(got: list[np.ndarray], want: list[np.ndarray], atol: float = 1e-6) -> None:
    """Same count, dtypes and shapes; integers and bools exactly, floats within rtol 1e-5 and ``atol`` (float16
    1e-3)."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=atol if g.dtype != np.float16 else 1e-3)
        else:
            np.testing.assert_array_equal(g, w)
