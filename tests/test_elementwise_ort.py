"""Elementwise ops through ONNX Runtime: every op x rule x representative dtypes, and the full dtype matrix.

The expected value of every case is the standard ONNX op run by plain ORT on inputs that the test itself
pre-broadcasts (B reshaped to the shape written in ``SHAPES``), so the arithmetic is ORT's by construction.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.helper import np_dtype_to_tensor_dtype

import onnx_bcast
from onnx_bcast.ops.elementwise import standard_types
from onnx_bcast.ort.kernels import elementwise_bridge_types
from tests.elementwise_util import (
    ALL_OPS,
    COMPARISON_OPS,
    LOGICAL_OPS,
    SHAPES,
    dynamic,
    elementwise_model,
    op_attrs,
    output_type,
    standard_result,
    standard_session,
    values,
)

CANDIDATE_DTYPES = (np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8, np.bool_)


def representative_dtypes(op: str) -> list[np.dtype]:
    """The candidate dtypes the standard op accepts and ORT's CPU provider runs."""
    allowed = set(standard_types(op))
    picked = []
    for dtype in map(np.dtype, CANDIDATE_DTYPES):
        elem = np_dtype_to_tensor_dtype(dtype)
        type_str = f"tensor({helper.tensor_dtype_to_string(elem).removeprefix('TensorProto.').lower()})"
        type_str = {"tensor(float32)": "tensor(float)", "tensor(float64)": "tensor(double)"}.get(type_str, type_str)
        if type_str in allowed and standard_session(op, elem, 1, 1, **op_attrs(op, dtype)) is not None:
            picked.append(dtype)
    return picked


CASES = [(op, rule, dtype) for op in ALL_OPS for rule in SHAPES for dtype in representative_dtypes(op)]


def test_every_op_has_representative_dtypes() -> None:
    for op in ALL_OPS:
        dtypes = representative_dtypes(op)
        expected_min = 1 if op in LOGICAL_OPS else 3
        assert len(dtypes) >= expected_min, (op, dtypes)


@pytest.mark.parametrize(("op", "rule", "dtype"), CASES, ids=[f"{o}-{r}-{d.name}" for o, r, d in CASES])
def test_kernel_and_ort_paths_equal_the_standard_op(op: str, rule: str, dtype: np.dtype) -> None:
    a_shape, b_shape, axis, aligned = SHAPES[rule]
    rng = np.random.default_rng(abs(hash((op, rule, dtype.name))) % 2**32)
    a, b = values(op, a_shape, dtype, rng, "A"), values(op, b_shape, dtype, rng, "B")
    attrs = op_attrs(op, dtype)
    expected = standard_result(op, a, b.reshape(aligned), **attrs)
    assert expected.dtype == output_type(op, dtype)
    elem = np_dtype_to_tensor_dtype(dtype)
    feeds = {"A": a, "B": b}

    results = {"kernel": onnx_bcast.elementwise(op, a, b, auto_broadcast=rule, axis=axis, **attrs)}
    static = elementwise_model(op, rule, axis, list(a_shape), list(b_shape), elem, **attrs)
    results["session, static shapes"] = onnx_bcast.InferenceSession(static).run(None, feeds)[0]
    runtime = elementwise_model(op, rule, axis, dynamic(a_shape, "a"), dynamic(b_shape, "b"), elem, **attrs)
    session = onnx_bcast.InferenceSession(runtime)
    # the shapes are checked at run time: by the shape check before ORT's op, or by our kernel where it runs
    assert any(n.op_type in ("ElementwiseCheck", op) and n.domain == "onnx_bcast.ort"
               for n in session.prepared_model.graph.node)
    results["session, run-time shapes"] = session.run(None, feeds)[0]
    plain = ort.InferenceSession(onnx_bcast.prepare(static).SerializeToString(), onnx_bcast.session_options(),
                                 providers=["CPUExecutionProvider"])
    results["plain ORT, prepared"] = plain.run(None, feeds)[0]
    for path, got in results.items():
        assert got.dtype == expected.dtype, path
        np.testing.assert_array_equal(got, expected, err_msg=path)


# --- every type the standard op accepts ---------------------------------------------------------------------

def _numpy_dtype(type_str: str) -> np.dtype | None:
    name = type_str[len("tensor("):-1]
    if name == "bfloat16":
        return None  # numpy has no bfloat16: the matrix feeds float32 and casts inside the graph
    if name == "string":
        return np.dtype(object)
    return np.dtype({"float": "float32", "double": "float64"}.get(name, name))


def _matrix_model(op: str, type_str: str, ours: bool, a_dims: list, b_dims: list, **attrs) -> tuple:
    """A model computing ``op`` on ``type_str`` (bfloat16 through Casts from float32 inputs)."""
    name = type_str[len("tensor("):-1]
    elem = getattr(TensorProto, {"float": "FLOAT", "double": "DOUBLE"}.get(name, name.upper()))
    feed_elem = TensorProto.FLOAT if elem == TensorProto.BFLOAT16 else elem
    nodes, a, b = [], "A", "B"
    if feed_elem != elem:
        nodes += [helper.make_node("Cast", ["A"], ["A16"], to=elem), helper.make_node("Cast", ["B"], ["B16"], to=elem)]
        a, b = "A16", "B16"
    rule_attrs = {"auto_broadcast": "pdpd", "axis": 1} if ours else {}
    nodes.append(helper.make_node(op, [a, b], ["C0"], domain="onnx_bcast" if ours else "", **rule_attrs, **attrs))
    boolean = op in COMPARISON_OPS or op in LOGICAL_OPS
    out_elem = TensorProto.BOOL if boolean else feed_elem
    if not boolean and feed_elem != elem:
        nodes.append(helper.make_node("Cast", ["C0"], ["C"], to=TensorProto.FLOAT))
    else:
        nodes.append(helper.make_node("Identity", ["C0"], ["C"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("A", feed_elem, a_dims),
                                           helper.make_tensor_value_info("B", feed_elem, b_dims)],
                              [helper.make_tensor_value_info("C", out_elem, None)])
    opsets = [helper.make_opsetid("", 19)] + ([helper.make_opsetid("onnx_bcast", 1)] if ours else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


_WIDER = {"int8": TensorProto.INT32, "uint8": TensorProto.INT32, "int16": TensorProto.INT32,
          "uint16": TensorProto.INT32, "bfloat16": TensorProto.FLOAT, "float16": TensorProto.FLOAT}


def _in_wider_type(op: str, type_str: str, a: np.ndarray, b: np.ndarray, **attrs) -> np.ndarray | None:
    """ORT's standard op computed on a wider type that holds every value, cast back (ORT's Cast wraps integers and
    rounds floats to nearest even): exact for these ops, so an oracle for a type ORT has no kernel of."""
    name = type_str[len("tensor("):-1]
    wide = _WIDER.get(name)
    if wide is None:
        return None
    elem = getattr(TensorProto, name.upper())
    feed = TensorProto.FLOAT if elem == TensorProto.BFLOAT16 else elem
    boolean = op in COMPARISON_OPS or op in LOGICAL_OPS
    nodes = [helper.make_node("Cast", [x], [f"{x}_t"], to=elem) for x in "AB"]
    nodes += [helper.make_node("Cast", [f"{x}_t"], [f"{x}_w"], to=wide) for x in "AB"]
    nodes.append(helper.make_node(op, ["A_w", "B_w"], ["C_w"], **attrs))
    nodes.append(helper.make_node("Identity" if boolean else "Cast", ["C_w"], ["C_t"], **({} if boolean else {
        "to": elem})))
    nodes.append(helper.make_node("Identity" if boolean or feed == elem else "Cast", ["C_t"], ["C"],
                                  **({} if boolean or feed == elem else {"to": feed})))
    graph = helper.make_graph(nodes, "wide", [helper.make_tensor_value_info(x, feed, None) for x in "AB"],
                              [helper.make_tensor_value_info("C", TensorProto.BOOL if boolean else feed, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception:  # no kernel on the wider type either
        return None
    return session.run(None, {"A": a, "B": b})[0]


MATRIX = [(op, t) for op in ALL_OPS for t in standard_types(op)]


@pytest.mark.parametrize(("op", "type_str"), MATRIX, ids=[f"{o}-{t[7:-1]}" for o, t in MATRIX])
def test_every_standard_type_runs_exactly_where_plain_ort_runs_the_standard_op(op: str, type_str: str) -> None:
    """Ours runs every type of the standard op's T: equal to ORT's op where it has a kernel, else to ORT's op on a
    wider type (our numpy kernel runs then)."""
    dtype = _numpy_dtype(type_str)
    feed_dtype = np.dtype(np.float32) if dtype is None else dtype
    attrs = op_attrs(op, feed_dtype if dtype is not None else np.dtype(np.float32))
    rng = np.random.default_rng(7)
    a_shape, b_shape, aligned = (2, 3, 4), (3,), (1, 3, 1)
    if feed_dtype.kind == "O":
        a = rng.choice(np.array(["x", "y", "zz"], dtype=object), size=a_shape)
        b = rng.choice(np.array(["x", "y", "zz"], dtype=object), size=b_shape)
    else:
        a, b = values(op, a_shape, feed_dtype, rng, "A"), values(op, b_shape, feed_dtype, rng, "B")
    standard = _matrix_model(op, type_str, False, [None] * 3, [None] * 3, **attrs)
    try:
        plain = ort.InferenceSession(standard.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception:
        plain = None
    ours_model = _matrix_model(op, type_str, True, ["a0", "a1", "a2"], ["b0"], **attrs)
    b_full = np.ascontiguousarray(np.broadcast_to(b.reshape(aligned), a_shape))
    if plain is None:  # ORT has no CPU kernel for this type: ours runs our numpy kernel; the oracle is ORT's op
        expected = _in_wider_type(op, type_str, a, b_full, **attrs)  # on a wider type, exact, cast back
        if expected is None:
            pytest.skip(f"ORT has no {op} of {type_str} or of a wider type to check against")
    else:
        expected = plain.run(None, {"A": a, "B": b_full})[0]
    got = onnx_bcast.InferenceSession(ours_model).run(None, {"A": a, "B": b})[0]
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_bridge_registers_the_plain_ort_form_for_every_numeric_standard_type() -> None:
    for op in ALL_OPS:
        carried = set(elementwise_bridge_types(op))
        missing = set(standard_types(op)) - carried
        assert missing <= {"tensor(float16)", "tensor(bfloat16)", "tensor(string)"}, (op, missing)


# --- invalid run-time shapes ----------------------------------------------------------------------------------

_INVALID_SCRIPT = textwrap.dedent("""
    import json, logging
    import numpy as np, onnxruntime as ort
    from onnx import TensorProto
    import onnx_bcast
    from tests.elementwise_util import elementwise_model
    logging.disable(logging.CRITICAL)
    cases = [  # rule, axis, A, B (invalid), B (valid)
        ("none", -1, (2, 3), (3,), (2, 3)),
        ("numpy", -1, (2, 3), (4,), (3,)),
        ("pdpd", 1, (2, 3, 4), (4,), (3,)),
        ("pdpd", -1, (2, 3), (1, 2, 3), (3,)),
        ("pdpd", 0, (2, 3), (3,), (2,)),
    ]
    report = []
    for rule, axis, a_shape, bad, good in cases:
        model = elementwise_model("Sub", rule, axis, [f"a{i}" for i in range(len(a_shape))], None, TensorProto.FLOAT)
        session = onnx_bcast.InferenceSession(model)
        a = np.arange(np.prod(a_shape), dtype=np.float32).reshape(a_shape)
        for _ in range(3):
            try:
                session.run(None, {"A": a, "B": np.ones(bad, np.float32)})
                report.append([rule, "no error"])
            except onnx_bcast.BroadcastError as err:
                report.append([rule, str(err)])
            out = session.run(None, {"A": a, "B": np.ones(good, np.float32)})[0]
            report.append([rule, "valid ok" if out.shape == a_shape or rule == "numpy" else "valid wrong"])
        try:  # the spec form in plain ORT: refused when the session is made, never a value on invalid input
            plain = ort.InferenceSession(model.SerializeToString(), onnx_bcast.session_options(),
                                         providers=["CPUExecutionProvider"])
            got = plain.run(None, {"A": a, "B": np.ones(bad, np.float32)})[0]
            report.append([rule, f"plain shape {list(got.shape)}"])
        except Exception as err:
            refused = "run_onnx_bcast_prepare_on_this_model_first" in str(err)
            report.append([rule, "plain refused" if refused else f"plain error {type(err).__name__}"])
    print(json.dumps(report))
""")


def test_invalid_runtime_shapes_raise_broadcast_error_and_the_session_survives() -> None:
    proc = subprocess.run([sys.executable, "-c", _INVALID_SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    errors = [msg for rule, msg in report if not msg.startswith(("valid", "plain"))]
    assert len(errors) == 15
    for msg in errors:
        assert msg.startswith("Sub(auto_broadcast="), msg
        assert "node 'sub_node'" in msg and "A (" in msg and "B (" in msg, msg
    assert all(msg == "valid ok" for _, msg in report if msg.startswith("valid"))
    # the spec form cannot fail a run cleanly in plain ORT (the bridge would abort): it is refused instead
    assert [msg for _, msg in report if msg.startswith("plain")] == ["plain refused"] * 5


# child-process scripts: attempt() records an output's shape, or the BroadcastError's message
_REPORTING_PRELUDE = textwrap.dedent("""
    import json
    import numpy as np
    from onnx import TensorProto, helper
    import onnx_bcast
    from tests.elementwise_util import elementwise_model
    report = {}
    def attempt(key, fn):
        try:
            report[key] = list(fn().shape)
        except onnx_bcast.BroadcastError as err:
            report[key] = str(err)
""")


def _run_report(script: str, env: dict[str, str] | None = None) -> dict:
    """Run the prelude and ``script`` in a child process (a kernel abort cannot take pytest down); its report."""
    proc = subprocess.run([sys.executable, "-c", _REPORTING_PRELUDE + script], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


_MEMORY_SCRIPT = textwrap.dedent("""
    big_a, big_b = np.ones((1000, 1), np.float32), np.ones((1, 1000), np.float32)
    attempt("kernel", lambda: onnx_bcast.elementwise("Mul", big_a, big_b))
    attempt("kernel keyword", lambda: onnx_bcast.elementwise("Mul", big_a[:10], big_b[:, :10], max_output_bytes=100))
    session = onnx_bcast.InferenceSession(elementwise_model("Mul", "numpy", -1, ["a0", "a1"], ["b0", "b1"],
                                                            TensorProto.FLOAT))
    attempt("run-time", lambda: session.run(None, {"A": big_a, "B": big_b})[0])
    attempt("after", lambda: session.run(None, {"A": big_a[:100], "B": big_b[:, :100]})[0])
    attempt("static", lambda: onnx_bcast.InferenceSession(
        elementwise_model("Mul", "numpy", -1, [1000, 1], [1, 1000], TensorProto.FLOAT)))
    print(json.dumps(report))
""")


def test_memory_guard_applies_to_elementwise_outputs() -> None:
    report = _run_report(_MEMORY_SCRIPT, env={**os.environ, "ONNX_BCAST_MAX_OUTPUT_BYTES": "1000000"})
    size = "output (1000, 1000) of float32 would take 4.0e+06 bytes, over the limit of 1.0e+06 bytes"
    assert report["kernel"].startswith("Mul(auto_broadcast=numpy)") and size in report["kernel"]
    assert "(10, 10) of float32 would take 400 bytes, over the limit of 100 bytes" in report["kernel keyword"]
    assert "node 'mul_node'" in report["run-time"] and size in report["run-time"]
    assert report["after"] == [100, 100]
    assert "node 'mul_node'" in report["static"] and size in report["static"]


_SESSION_LIMIT_SCRIPT = textwrap.dedent("""
    node = helper.make_node("Broadcast", ["x", "t"], ["y"], domain="onnx_bcast", name="limited")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None]),
                                            helper.make_tensor_value_info("t", TensorProto.INT64, [None])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                              ir_version=10)
    x, big, small = np.ones(3, np.float32), np.array([100, 3], np.int64), np.array([2, 3], np.int64)
    limited = onnx_bcast.InferenceSession(model, max_output_bytes=1000)
    attempt("broadcast limited", lambda: limited.run(None, {"x": x, "t": big})[0])
    attempt("broadcast limited small", lambda: limited.run(None, {"x": x, "t": small})[0])
    attempt("broadcast default", lambda: onnx_bcast.InferenceSession(model).run(None, {"x": x, "t": big})[0])
    add = elementwise_model("Add", "numpy", -1, ["a0", "a1"], ["b0", "b1"], TensorProto.FLOAT)
    a, b = np.ones((100, 1), np.float32), np.ones((1, 100), np.float32)
    attempt("elementwise limited", lambda: onnx_bcast.InferenceSession(add, max_output_bytes=1000).run(
        None, {"A": a, "B": b})[0])
    attempt("elementwise default", lambda: onnx_bcast.InferenceSession(add).run(None, {"A": a, "B": b})[0])
    print(json.dumps(report))
""")


def test_session_keyword_limits_outputs_of_that_session_only() -> None:
    report = _run_report(_SESSION_LIMIT_SCRIPT)
    assert "node 'limited'" in report["broadcast limited"]
    assert "(100, 3) of float32 would take 1200 bytes, over the limit of 1000 bytes" in report["broadcast limited"]
    assert report["broadcast limited small"] == [2, 3]
    assert report["broadcast default"] == [100, 3]
    assert "(100, 100) of float32 would take 40000 bytes, over the limit of 1000" in report["elementwise limited"]
    assert report["elementwise default"] == [100, 100]
