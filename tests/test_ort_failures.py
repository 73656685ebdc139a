"""Failure paths in ONNX Runtime, each in a subprocess: errors are raised or logged, the process never aborts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import onnx_bcast

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(onnx_bcast.__file__)))
TIMEOUT = 120

PRELUDE = '''
import json
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

vi = helper.make_tensor_value_info
F32, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32


def model(nodes, inputs, outputs, inits=(), opsets=(), functions=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    imports = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1), *opsets]
    return helper.make_model(graph, opset_imports=imports, functions=list(functions), ir_version=10)


def error_record(exc):
    ours = sys.modules.get("onnx_bcast")
    return {"ok": False, "type": type(exc).__name__, "module": type(exc).__module__,
            "broadcast_error": bool(ours is not None and isinstance(exc, ours.BroadcastError)),
            "value_error": isinstance(exc, ValueError), "message": str(exc)}


def output_record(out):
    out = np.asarray(out)
    return {"ok": True, "shape": list(out.shape), "dtype": str(out.dtype), "values": out.tolist()}


def attempt(fn):
    """One call as a record: the output (shape, dtype, values) or the exception."""
    try:
        out = fn()
    except Exception as exc:
        return error_record(exc)
    return output_record(out)


def emit(obj):
    print("RESULT " + json.dumps(obj), flush=True)
'''


def run_child(code: str) -> Any:
    """Run PRELUDE + code in a fresh interpreter; the value it emitted. Death by a signal fails with stderr."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, cwd=REPO_ROOT)
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        pytest.fail(f"child process died with {name} (return code {proc.returncode})\n"
                    f"--- stderr ---\n{proc.stderr}\n--- stdout ---\n{proc.stdout}", pytrace=False)
    assert proc.returncode == 0, f"child exited with {proc.returncode}\n--- stderr ---\n{proc.stderr}"
    results = [line[len("RESULT "):] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(results) == 1, f"expected one RESULT line\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    return json.loads(results[0])


def assert_output(record: dict, expected: np.ndarray) -> None:
    assert record["ok"], record
    assert record["dtype"] == str(expected.dtype), record
    assert tuple(record["shape"]) == expected.shape, record
    np.testing.assert_array_equal(np.array(record["values"], dtype=expected.dtype).reshape(expected.shape), expected)


def assert_broadcast_error(record: dict, *fragments: str) -> None:
    assert not record["ok"], f"expected a BroadcastError, got an output: {record}"
    assert record["broadcast_error"], f"expected a BroadcastError, got {record['type']}: {record['message']}"
    assert record["value_error"], record
    for fragment in fragments:
        assert fragment in record["message"], f"{fragment!r} not in {record['message']!r}"


def is_clean_error(record: dict) -> bool:
    """A BroadcastError or an error raised by ONNX Runtime (or onnx) as a Python exception."""
    return not record["ok"] and (record["broadcast_error"] or record["module"].split(".")[0] in ("onnxruntime", "onnx"))


# ------------------------------------------------------------------------------------------------ (a) (b)

X23 = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5


def test_invalid_runtime_target_shape_alternates_with_valid_runs() -> None:
    result = run_child('''
        import onnx_bcast
        node = helper.make_node("Broadcast", ["x", "t"], ["y"], domain="onnx_bcast", name="bcast_under_test",
                                mode="numpy")
        m = model([node], [vi("x", F32, None), vi("t", I64, [None])], [vi("y", F32, None)])
        s = onnx_bcast.InferenceSession(m)
        x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
        bad = [[2, 4], [3], [2, -3], [4, 2, 2]]
        good = [[2, 3], [4, 2, 3], [1, 2, 3], [0, 2, 3]]
        records = []
        for i in range(20):
            for target in (bad[i % 4], good[i % 4]):
                records.append(attempt(lambda: s.run(None, {"x": x, "t": np.array(target, np.int64)})[0]))
        emit(records)
    ''')
    assert len(result) == 40
    bad = [((2, 4), ["(2, 3)", "(2, 4)"]), ((3,), ["(2, 3)", "(3,)"]), ((2, -3), ["-3", "(2, -3)"]),
           ((4, 2, 2), ["(2, 3)", "(4, 2, 2)"])]
    good = [(2, 3), (4, 2, 3), (1, 2, 3), (0, 2, 3)]
    for i in range(20):
        _, fragments = bad[i % 4]
        assert_broadcast_error(result[2 * i], "Broadcast", "bcast_under_test", "numpy", *fragments)
        assert_output(result[2 * i + 1], np.broadcast_to(X23, good[i % 4]))


def test_invalid_runtime_axes_mapping_alternates_with_valid_runs() -> None:
    result = run_child('''
        import onnx_bcast
        node = helper.make_node("Broadcast", ["x", "t", "a"], ["y"], domain="onnx_bcast", name="explicit_under_test",
                                mode="explicit")
        m = model([node], [vi("x", F32, None), vi("t", I64, [None]), vi("a", I64, [None])], [vi("y", F32, None)])
        s = onnx_bcast.InferenceSession(m)
        x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
        bad = [([2, 4, 3], [2, 0]), ([2, 3, 3], [1, 1]), ([2, 4, 3], [0, 5]), ([2, 4, 3], [-1, 2]),
               ([2, 4, 3], [0]), ([2, 4, 3], [0, 1])]
        good = [([2, 4, 3], [0, 2]), ([5, 2, 3], [1, 2]), ([2, 3], [0, 1])]
        records = []
        for i in range(20):
            for target, axes in (bad[i % 6], good[i % 3]):
                feed = {"x": x, "t": np.array(target, np.int64), "a": np.array(axes, np.int64)}
                records.append(attempt(lambda: s.run(None, feed)[0]))
        emit(records)
    ''')
    assert len(result) == 40
    bad = [["[2, 0]", "increasing"], ["[1, 1]", "increasing"], ["[0, 5]", "outside"], ["[-1, 2]"], ["[0]"],
           ["[0, 1]", "(2, 4, 3)"]]
    good = [X23.reshape(2, 1, 3) * np.ones((2, 4, 3), np.float32), np.tile(X23, (5, 1, 1)), X23]
    for i in range(20):
        assert_broadcast_error(result[2 * i], "Broadcast", "explicit_under_test", "explicit", "(2, 3)", *bad[i % 6])
        assert_output(result[2 * i + 1], good[i % 3])


def test_broadcast_v0_invalid_arg_shape_alternates_with_valid_runs() -> None:
    result = run_child('''
        import onnx_bcast
        node = helper.make_node("BroadcastV0", ["x"], ["y"], domain="onnx_bcast", name="v0_under_test",
                                shape=[2, 3, 4], broadcast_axes=[0, 2])
        s = onnx_bcast.InferenceSession(model([node], [vi("x", F32, None)], [vi("y", F32, None)]))
        bad = [np.zeros((4,), np.float32), np.zeros((3, 1), np.float32), np.float32(1.0)]
        good = np.array([1.5, -2.0, 4.25], np.float32)
        records = []
        for i in range(20):
            for arg in (bad[i % 3], good):
                records.append(attempt(lambda: s.run(None, {"x": np.asarray(arg)})[0]))
        emit(records)
    ''')
    assert len(result) == 40
    bad = ["(4,)", "(3, 1)", "()"]
    good = np.broadcast_to(np.array([1.5, -2.0, 4.25], np.float32).reshape(1, 3, 1), (2, 3, 4))
    for i in range(20):
        assert_broadcast_error(result[2 * i], "BroadcastV0", "v0_under_test", "(2, 3, 4)", bad[i % 3])
        assert_output(result[2 * i + 1], good)


def test_broadcast_like_v0_invalid_like_shape_alternates_with_valid_runs() -> None:
    result = run_child('''
        import onnx_bcast
        node = helper.make_node("BroadcastLikeV0", ["x", "like"], ["y"], domain="onnx_bcast", name="like_under_test",
                                initial_broadcast_axes=[0, 2])
        m = model([node], [vi("x", F32, None), vi("like", TensorProto.BOOL, None)], [vi("y", F32, None)])
        s = onnx_bcast.InferenceSession(m)
        x = np.array([1.5, -2.0, 4.25], np.float32)
        bad = [(2, 5, 4), (3,), (2, 3)]
        good = [(2, 3, 4), (7, 3, 1)]
        records = []
        for i in range(20):
            for like in (bad[i % 3], good[i % 2]):
                records.append(attempt(lambda: s.run(None, {"x": x, "like": np.zeros(like, bool)})[0]))
        emit(records)
    ''')
    x = np.array([1.5, -2.0, 4.25], np.float32).reshape(1, 3, 1)
    bad = ["(2, 5, 4)", "(3,)", "(2, 3)"]
    good = [np.broadcast_to(x, (2, 3, 4)), np.broadcast_to(x, (7, 3, 1))]
    for i in range(20):
        assert_broadcast_error(result[2 * i], "BroadcastLikeV0", "like_under_test", "(3,)", bad[i % 3])
        assert_output(result[2 * i + 1], good[i % 2])


# ------------------------------------------------------------------------------------------------ (c)


def test_rank_two_target_shape_at_runtime_is_an_error_not_an_abort() -> None:
    result = run_child('''
        import onnxruntime
        import onnx_bcast
        records = {}
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        for declared in ("unknown", "rank2"):
            t_info = vi("t", I64, None if declared == "unknown" else [None, None])
            node = helper.make_node("Broadcast", ["x", "t"], ["y"], domain="onnx_bcast", name="rank_under_test")
            m = model([node], [vi("x", F32, None), t_info], [vi("y", F32, None)])
            if declared == "rank2":  # a declared rank 2 is refused when the session is made
                records["rank2/create"] = attempt(lambda: onnx_bcast.InferenceSession(m))
                continue
            s = onnx_bcast.InferenceSession(m)
            plain = onnxruntime.InferenceSession(onnx_bcast.prepare(m).SerializeToString(),
                                                 sess_options=onnx_bcast.session_options())
            for name, sess in (("ours", s), ("plain", plain)):
                for shape in ([[2, 3]], [[2], [3]]):
                    key = f"{declared}/{name}/{shape}"
                    records[key] = attempt(lambda: sess.run(None, {"x": x, "t": np.array(shape, np.int64)})[0])
                if declared == "unknown":  # the same session then runs a valid (1-D) target
                    records[f"{declared}/{name}/after"] = attempt(
                        lambda: sess.run(None, {"x": x, "t": np.array([2, 2, 3], np.int64)})[0])
        emit(records)
    ''')
    expected_after = np.broadcast_to(np.arange(6, dtype=np.float32).reshape(2, 3), (2, 2, 3))
    assert_broadcast_error(result["rank2/create"], "rank_under_test", "1-D")
    for declared in ("unknown",):
        for shape in ([[2, 3]], [[2], [3]]):
            assert_broadcast_error(result[f"{declared}/ours/{shape}"], "rank_under_test", "1-D")
            plain = result[f"{declared}/plain/{shape}"]
            # a plain session has no way to raise: ORT's own error, or the kernel's empty output (error logged)
            assert is_clean_error(plain) or (plain["ok"] and plain["shape"] == [0]), plain
    for name in ("ours", "plain"):
        assert_output(result[f"unknown/{name}/after"], expected_after)


@pytest.mark.parametrize("input_name", ["target_shape", "axes_mapping"])
def test_float_shape_input_is_rejected_not_aborted(input_name: str) -> None:
    """SPEC: target_shape and axes_mapping must be 1-D integer tensors; a float32 one is an error (never a crash)."""
    result = run_child(f'''
        import onnx_bcast
        input_name = {input_name!r}
        x = np.arange(3, dtype=np.float32)
        if input_name == "target_shape":
            node = helper.make_node("Broadcast", ["x", "t"], ["y"], domain="onnx_bcast", name="float_under_test")
            inputs = [vi("x", F32, None), vi("t", F32, [None])]
            feeds = [{{"x": x, "t": np.array([2.0, 3.0], np.float32)}},
                     {{"x": x, "t": np.array([2.7, 3.2], np.float32)}}]
        else:
            node = helper.make_node("Broadcast", ["x", "t", "a"], ["y"], domain="onnx_bcast", name="float_under_test",
                                    mode="explicit")
            inputs = [vi("x", F32, None), vi("t", F32, [None]), vi("a", F32, [None])]
            feeds = [{{"x": x, "t": np.array([3.0, 2.0], np.float32), "a": np.array([0.0], np.float32)}},
                     {{"x": x, "t": np.array([3.0, 2.0], np.float32), "a": np.array([0.4], np.float32)}}]
        m = model([node], inputs, [vi("y", F32, None)])
        try:
            s = onnx_bcast.InferenceSession(m)
        except Exception as exc:
            emit({{"created": error_record(exc)}})
            sys.exit(0)
        emit({{"created": {{"ok": True}}, "runs": [attempt(lambda: s.run(None, feed)[0]) for feed in feeds]}})
    ''')
    if not result["created"]["ok"]:
        assert is_clean_error(result["created"]), result
        return
    for run in result["runs"]:
        assert is_clean_error(run), f"a float32 {input_name} was accepted: {run}"


# ------------------------------------------------------------------------------------------------ (d)


def test_reload_keeps_sessions_and_errors_working() -> None:
    result = run_child('''
        import importlib
        import onnxruntime
        import onnx_bcast
        node = helper.make_node("Broadcast", ["x", "t"], ["y"], domain="onnx_bcast", name="reload_under_test")
        m = model([node], [vi("x", F32, None), vi("t", I64, [None])], [vi("y", F32, None)])
        x = np.array([[1.0], [2.0]], np.float32)
        good = {"x": x, "t": np.array([2, 3], np.int64)}
        bad = {"x": x, "t": np.array([3, 3], np.int64)}

        def check(tag, sessions):
            out = {}
            for name, sess in sessions.items():
                out[f"{tag}/{name}/good"] = attempt(lambda: sess.run(None, good)[0])
                out[f"{tag}/{name}/bad"] = attempt(lambda: sess.run(None, bad)[0])
                out[f"{tag}/{name}/good_again"] = attempt(lambda: sess.run(None, good)[0])
            return out

        records = {}
        before = onnx_bcast.InferenceSession(m)
        records.update(check("start", {"before": before}))
        importlib.reload(onnx_bcast)
        records.update(check("reload", {"before": before, "new": onnx_bcast.InferenceSession(m)}))
        plain = onnxruntime.InferenceSession(onnx_bcast.prepare(m).SerializeToString(),
                                             sess_options=onnx_bcast.session_options())
        records["reload/plain/good"] = attempt(lambda: plain.run(None, good)[0])
        importlib.reload(onnx_bcast)
        records.update(check("reload2", {"new": onnx_bcast.InferenceSession(m)}))
        submodules = sorted(n for n, mod in sys.modules.items()
                            if n.startswith("onnx_bcast.") and getattr(mod, "__spec__", None) is not None)
        for name in submodules + ["onnx_bcast"]:
            importlib.reload(sys.modules[name])
        records["deep_reloaded"] = submodules
        records.update(check("deep", {"before": before, "new": onnx_bcast.InferenceSession(m)}))
        emit(records)
    ''')
    expected = np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], np.float32)
    checked = 0
    reloaded = result.pop("deep_reloaded")
    must_reload = {"onnx_bcast.errors", "onnx_bcast.ort.kernels", "onnx_bcast.ort.session",
                   "onnx_bcast.ort.process_state"}
    assert must_reload <= set(reloaded), reloaded
    for key, record in result.items():
        if key.endswith("/bad"):
            assert_broadcast_error(record, "reload_under_test", "numpy", "(2, 1)", "(3, 3)")
        else:
            assert_output(record, expected)
        checked += 1
    assert checked == 1 + 3 * 6


# ------------------------------------------------------------------------------------------------ (e)


def test_foreign_python_ops_run_beside_ours() -> None:
    result = run_child('''
        import onnxruntime
        import onnxruntime_extensions
        from onnxruntime_extensions import PyCustomOpDef, onnx_op

        import onnx_bcast


        @onnx_op(op_type="foreign_test::Upper", inputs=[PyCustomOpDef.dt_string], outputs=[PyCustomOpDef.dt_string])
        def upper(x):
            return np.array([s.upper() for s in x.reshape(-1)], dtype=object).reshape(x.shape)


        @onnx_op(op_type="foreign_test::Scale", inputs=[PyCustomOpDef.dt_float], outputs=[PyCustomOpDef.dt_float])
        def scale(x):
            return x.astype(np.float64) * 2.5  # float64 values for a declared float output


        @onnx_op(op_type="foreign_test::ScaleToInts", inputs=[PyCustomOpDef.dt_float],
                 outputs=[PyCustomOpDef.dt_float])
        def scale_to_ints(x):
            return np.trunc(x * 3).astype(np.int64).tolist()  # a nested list of Python ints


        options = onnx_bcast.session_options()  # after the foreign ops were registered
        F = "foreign_test"
        nodes = [
            helper.make_node("Upper", ["s"], ["su"], domain=F),
            helper.make_node("Broadcast", ["su", "t"], ["y_str"], domain="onnx_bcast", name="mixed_str"),
            helper.make_node("Scale", ["f"], ["fs"], domain=F),
            helper.make_node("Broadcast", ["fs", "t"], ["y_scaled"], domain="onnx_bcast", name="mixed_float"),
            helper.make_node("ScaleToInts", ["f"], ["y_ints"], domain=F),
            helper.make_node("Expand", ["f", "t"], ["fe"], domain="onnx_bcast", name="mixed_expand"),
            helper.make_node("Upper", ["s"], ["y_upper"], domain=F),
            helper.make_node("Scale", ["fe"], ["y_expand_scaled"], domain=F),
        ]
        outs = [vi("y_str", TensorProto.STRING, None), vi("y_scaled", F32, None), vi("y_ints", F32, None),
                vi("y_upper", TensorProto.STRING, None), vi("y_expand_scaled", F32, None)]
        m = model(nodes, [vi("s", TensorProto.STRING, None), vi("f", F32, None), vi("t", I64, [None])], outs,
                  opsets=[helper.make_opsetid(F, 1)])
        feeds = {"s": np.array([["ab"], ["cD"]], dtype=object), "f": np.array([[1.5], [2.2]], np.float32),
                 "t": np.array([2, 3], np.int64)}
        bad = dict(feeds, t=np.array([3, 3], np.int64))
        ours = onnx_bcast.InferenceSession(m)
        plain = onnxruntime.InferenceSession(onnx_bcast.prepare(m).SerializeToString(), sess_options=options)
        records = {}
        for name, sess in (("ours", ours), ("plain", plain)):
            try:
                records[name] = [output_record(g) for g in sess.run(None, feeds)]
            except Exception as exc:
                records[name] = [error_record(exc)]
        records["ours_bad"] = attempt(lambda: ours.run(["y_str"], bad)[0])
        records["ours_after"] = [output_record(g) for g in ours.run(None, feeds)]
        # a foreign-only model in a session of onnxruntime-extensions' own options, after ours were registered
        foreign_only = model([helper.make_node("Upper", ["s"], ["u"], domain=F),
                              helper.make_node("Scale", ["f"], ["v"], domain=F)],
                             [vi("s", TensorProto.STRING, None), vi("f", F32, None)],
                             [vi("u", TensorProto.STRING, None), vi("v", F32, None)],
                             opsets=[helper.make_opsetid(F, 1)])
        ext = onnxruntime.SessionOptions()
        ext.register_custom_ops_library(onnxruntime_extensions.get_library_path())
        sess = onnxruntime.InferenceSession(foreign_only.SerializeToString(), sess_options=ext)
        records["foreign_only"] = [output_record(g) for g in sess.run(None, {"s": feeds["s"], "f": feeds["f"]})]
        emit(records)
    ''')
    f = np.array([[1.5], [2.2]], np.float32)
    upper = np.array([["AB"], ["CD"]], dtype=object)
    scaled = (f.astype(np.float64) * 2.5).astype(np.float32)
    expected = [np.tile(upper, (1, 3)), np.tile(scaled, (1, 3)), np.array([[4.0], [6.0]], np.float32), upper,
                (np.tile(f, (1, 3)).astype(np.float64) * 2.5).astype(np.float32)]
    for name in ("ours", "plain", "ours_after"):
        assert len(result[name]) == len(expected), result[name]
        for record, want in zip(result[name], expected, strict=True):
            assert_output(record, want)
    # two of our nodes fail on this input: either may be the one reported
    assert_broadcast_error(result["ours_bad"], "(2, 1)", "(3, 3)")
    assert "'mixed_str'" in result["ours_bad"]["message"] or "'mixed_expand'" in result["ours_bad"]["message"]
    assert_output(result["foreign_only"][0], np.array([["AB"], ["CD"]], dtype=object))
    assert_output(result["foreign_only"][1], scaled)


# ------------------------------------------------------------------------------------------------ (f)


def test_plain_session_refuses_a_spec_form_model_and_runs_its_prepared_form() -> None:
    """A spec-form node could not fail a run cleanly in plain ORT (an exception in the bridge aborts), so the model
    is refused when the session is made, with a message that says what to do; prepare(model) runs and fails each
    invalid run cleanly: no value is ever handed back for invalid input."""
    result = run_child('''
        import logging
        import onnxruntime
        import onnx_bcast

        logged = []

        class Collect(logging.Handler):
            def emit(self, record):
                logged.append({"level": record.levelname, "name": record.name, "message": record.getMessage()})

        logging.getLogger("onnx_bcast").addHandler(Collect())
        empty = numpy_helper.from_array(np.zeros((0,), np.int64), "no_axes")
        axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
        nodes = [
            helper.make_node("Broadcast", ["x", "t", "no_axes"], ["y_numpy"], domain="onnx_bcast", name="spec_numpy",
                             mode="numpy", axis=-1),
            helper.make_node("Expand", ["x", "t", "no_axes"], ["y_expand"], domain="onnx_bcast", name="spec_expand",
                             mode="bidirectional", axis=-1),
            helper.make_node("Broadcast", ["x", "t", "axes"], ["y_explicit"], domain="onnx_bcast",
                             name="spec_explicit", mode="explicit", axis=-1),
        ]
        outs = [vi("y_numpy", F32, None), vi("y_expand", F32, None), vi("y_explicit", F32, None)]
        m = model(nodes, [vi("x", F32, None), vi("t", I64, [None])], outs, inits=[empty, axes])
        records = {"created": attempt(lambda: onnxruntime.InferenceSession(
            m.SerializeToString(), sess_options=onnx_bcast.session_options()))}
        s = onnxruntime.InferenceSession(onnx_bcast.prepare(m).SerializeToString(),
                                         sess_options=onnx_bcast.session_options())
        x = np.array([1.0, -2.0, 3.5], np.float32)
        runs = []
        for _ in range(5):
            for target in ([2, 3], [2, 4]):
                try:
                    outs = [output_record(g) for g in s.run(None, {"x": x, "t": np.array(target, np.int64)})]
                except Exception as exc:
                    outs = [error_record(exc)]
                runs.append({"target": target, "outputs": outs})
        records["runs"] = runs
        emit(records)
    ''')
    created = result["created"]
    assert not created.get("ok") and "run_onnx_bcast_prepare_on_this_model_first" in created["message"], created
    x = np.array([1.0, -2.0, 3.5], np.float32)
    assert len(result["runs"]) == 10
    for record in result["runs"]:
        if record["target"] == [2, 3]:
            assert len(record["outputs"]) == 3
            for out in record["outputs"]:
                assert_output(out, np.tile(x, (2, 1)))
        else:  # the run fails: one error, no output
            assert len(record["outputs"]) == 1 and not record["outputs"][0].get("ok", False), record


# ------------------------------------------------------------------------------------------------ (g)
# Our ops where prepare() cannot see the data's type, or inside subgraphs: results or clean errors, never an abort.

CONTAINER_CHILD = '''
import onnx_bcast
where, elem_name = {where!r}, {elem!r}
elem = getattr(TensorProto, elem_name)
ops = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]


def body(suffix):
    return [helper.make_node("Cast", ["x"], [f"xc{{suffix}}"], to=elem),
            helper.make_node("Broadcast", [f"xc{{suffix}}", "t"], [f"yc{{suffix}}"], domain="onnx_bcast",
                             name=f"inner{{suffix}}"),
            helper.make_node("Cast", [f"yc{{suffix}}"], [f"y{{suffix}}"], to=F32)]


if where == "function":
    fn = helper.make_function("local", "Bc", ["x", "t"], ["y"], body(""), ops)
    m = model([helper.make_node("Bc", ["x", "t"], ["y"], domain="local")], [vi("x", F32, None), vi("t", I64, [None])],
              [vi("y", F32, None)], opsets=[helper.make_opsetid("local", 1)], functions=[fn])
elif where == "if_branch":
    def branch(suffix):
        return helper.make_graph(body(suffix), "b" + suffix, [], [vi("y" + suffix, F32, None)])
    m = model([helper.make_node("If", ["c"], ["y"], then_branch=branch("_then"), else_branch=branch("_else"))],
              [vi("c", TensorProto.BOOL, []), vi("x", F32, None), vi("t", I64, [None])], [vi("y", F32, None)])
else:  # a statically invalid broadcast: data shape declared, target constant
    target = numpy_helper.from_array(np.array([2, 4], np.int64), "t")
    m = model(body(""), [vi("x", F32, [2, 3])], [vi("y", F32, None)], inits=[target])
feeds = {{"x": np.arange(6, dtype=np.float32).reshape(2, 3)}}
if where != "static_invalid":
    feeds["t"] = np.array([2, 2, 3], np.int64)
if where == "if_branch":
    feeds["c"] = np.array(True)
try:
    s = onnx_bcast.InferenceSession(m)
except Exception as exc:
    emit({{"created": error_record(exc)}})
    sys.exit(0)
records = {{"created": {{"ok": True}}, "good": attempt(lambda: s.run(None, feeds)[0])}}
if where != "static_invalid":
    records["bad"] = attempt(lambda: s.run(None, dict(feeds, t=np.array([2, 4], np.int64)))[0])
    records["good_again"] = attempt(lambda: s.run(None, feeds)[0])
emit(records)
'''


@pytest.mark.parametrize("elem", ["FLOAT", "FLOAT16", "BFLOAT16"])
@pytest.mark.parametrize("where", ["function", "if_branch"])
def test_ops_in_functions_and_subgraphs(where: str, elem: str) -> None:
    result = run_child(CONTAINER_CHILD.format(where=where, elem=elem))
    assert result["created"]["ok"], f"the session was not created: {result['created']}"
    expected = np.broadcast_to(np.arange(6, dtype=np.float32).reshape(2, 3), (2, 2, 3))
    assert_output(result["good"], expected)
    assert_broadcast_error(result["bad"], "inner", "(2, 3)", "(2, 4)")
    assert_output(result["good_again"], expected)


@pytest.mark.parametrize("elem", ["FLOAT", "FLOAT16", "BFLOAT16"])
def test_statically_invalid_broadcast_is_an_error_not_an_abort(elem: str) -> None:
    result = run_child(CONTAINER_CHILD.format(where="static_invalid", elem=elem))
    if not result["created"]["ok"]:
        assert result["created"]["broadcast_error"], result
        assert "(2, 4)" in result["created"]["message"], result
        return
    assert_broadcast_error(result["good"], "inner", "(2, 3)", "(2, 4)")


def test_the_innermost_failing_node_of_a_subgraph_is_named() -> None:
    """ONNX Runtime names the Scan, then the node of its body that failed its inference when the session was made
    (fuzz seed 44, case 8977): the body's node is ours, so the native backend raises our node's BroadcastError (the
    numpy backend's), not ORT's load error."""
    from onnx_bcast.ort.run_failures import failed_node

    message = ("[ONNXRuntimeError] : 1 : FAIL : Node (scan) Op (Scan) [TypeInferenceError] Graph attribute "
               "inferencing failed: Node (second) Op (Min) [ShapeInferenceError] Incompatible dimensions")
    assert failed_node(RuntimeError(message)) == "second"
    assert failed_node(RuntimeError("Non-zero status code returned while running Expand node. Name:'bc/guard: x' "
                                    "Status Message: invalid")) == "bc/guard: x"
