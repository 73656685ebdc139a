"""A bounded slice of ``bench/fuzz.py``'s scenario paths (issue 18): the fuzz's cases inside realistic models
(opsets 9-21, declared output shapes and value_info true and stale, dim_params shared between inputs, chains of our
nodes), through both backends, the converted model and the tools (optimizers and runtimes) users run on it.

Fails on any disagreement that is not a known issue's symptom; each known issue has a strict xfail reproducer.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tests.test_fuzz_slice import fuzz  # noqa: F401 - the fixture that loads bench/fuzz.py

TOOL_MODULES = ("onnxscript", "onnx_ir", "onnxsim", "onnxoptimizer", "onnxslim", "onnx_graphsurgeon", "sympy",
                "openvino")
KNOWN: tuple[str, ...] = ("ssi-zero-target-token",)  # reproduced in tests/test_empty_constant_targets.py


@pytest.mark.slow  # 24 s (docs/testing.md)
def test_scenario_slice_has_no_new_disagreement(fuzz) -> None:  # noqa: F811
    """Every case of a small seed as a scenario model on the core paths, a tenth of them through the tools too."""
    missing = [m for m in TOOL_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (pip install -e '.[tools]' and openvino)")
    summary = fuzz.run_fuzz(120, seed=20260618, scenario_fraction=1.0, tools_fraction=0.1)
    assert summary.new == [], "\n".join(summary.new[:20])
    assert set(summary.known) <= set(KNOWN)
    for path in fuzz.SCENARIOS.CORE_PATHS + fuzz.SCENARIOS.TOOL_PATHS:
        assert summary.checks[(path, "valid")] > 0, path
        assert summary.checks[(path, "invalid")] > 0, path
    assert summary.checks[("scenario_numpy", "valid")] + summary.checks[("scenario_numpy", "invalid")] == 120


def test_scenario_paths_check_chains_and_claims(fuzz) -> None:  # noqa: F811
    """A hand-made scenario: a valid Broadcast whose declared output is stale, then an invalid chain (the second
    node rejects): both backends must name the second node."""
    case = fuzz.Case("broadcast", "Broadcast", np.arange(3, dtype=np.float32),
                     {"mode": "numpy", "axis": -1, "axes": None, "target": [2, 3], "x_decl": "unknown",
                      "t_decl": "dynamic", "a_input": False}, index=0)
    scenarios = fuzz.SCENARIOS
    found = None
    for seed in range(400):  # a seed whose draw is a 3-node chain ending in a rejection by the second node
        scenario = scenarios.build(fuzz.FAMILIES["broadcast"], case, fuzz.expect_broadcast(case), seed, 1.0, 0.0)
        if scenario is not None and scenario.failing_node == "second" and scenario.opset >= scenarios.GUARD_OPSET:
            found = scenario
            break
    assert found is not None
    summary = fuzz.Summary()
    fuzz.Runner(summary).check_scenario(found)
    assert summary.disagreements == [], "\n".join(summary.disagreements)
    assert summary.checks[("scenario_native", "invalid")] == 1 and summary.checks[("scenario_converted_ort",
                                                                                  "invalid")] == 1


def test_the_fuzz_knows_these_issues(fuzz) -> None:  # noqa: F811
    assert set(fuzz.KNOWN_ISSUES) <= set(KNOWN)


def test_openvino_enforces_the_none_guard() -> None:
    """Elementwise Pow auto_broadcast=none, A (2,), B (1,), dims dynamic: the guarded converted model must fail in
    OpenVINO as it does in ONNX Runtime (found by the scenario paths as "openvino-guard-not-enforced": OpenVINO
    computes int64 as int32, where the check's token, then 2**40 after a failure, was 0)."""
    pytest.importorskip("openvino", reason="openvino is not installed")
    import onnx
    from onnx import TensorProto, helper

    import onnx_bcast
    from tests import tool_pipelines as tools

    node = helper.make_node("Pow", ["x", "b"], ["y"], domain="onnx_bcast", name="first", auto_broadcast="none")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None]),
                                            helper.make_tensor_value_info("b", TensorProto.FLOAT, [None])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("onnx_bcast", 1)],
                              ir_version=10)
    converted: onnx.ModelProto = onnx_bcast.convert(model)
    with pytest.raises(Exception):  # noqa: B017
        tools.openvino_run(converted, {"x": np.float32([2, 3]), "b": np.float32([2])})


def test_openvino_runs_a_valid_chain() -> None:
    """Expand<explicit>(x, [3, 4], [0, 1]) then Greater<none> with c, dims dynamic, x (3, 1) and c (3, 4): valid, so
    OpenVINO must return (3, 4) as the guards=False form does (bench/fuzz.py seed 0, case 25261). It failed while
    the first check's token rode on the constant target (``Expand(x, [3, 4] + token)``): OpenVINO then computed the
    second check's ``Shape`` of that output wrong. Fixed by tying the data instead (``Guard.tie_expand``)."""
    pytest.importorskip("openvino", reason="openvino is not installed")
    from onnx import TensorProto, helper, numpy_helper

    import onnx_bcast
    from tests import tool_pipelines as tools

    nodes = [helper.make_node("Expand", ["x", "t", "a"], ["y1"], domain="onnx_bcast", name="first", mode="explicit"),
             helper.make_node("Greater", ["y1", "c"], ["y"], domain="onnx_bcast", name="second",
                              auto_broadcast="none")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [None, None]),
                                           helper.make_tensor_value_info("c", TensorProto.DOUBLE, [None, None])],
                              [helper.make_tensor_value_info("y", TensorProto.BOOL, None)],
                              [numpy_helper.from_array(np.array([3, 4], np.int64), "t"),
                               numpy_helper.from_array(np.array([0, 1], np.int64), "a")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("onnx_bcast", 1)])
    feeds = {"x": np.ones((3, 1)), "c": np.zeros((3, 4))}
    (out,) = tools.openvino_run(onnx_bcast.convert(model), feeds)
    assert out.shape == (3, 4) and out.all()
