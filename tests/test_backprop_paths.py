"""The backprop ops (issue 13) through every runner, against the brute-force oracle (tests/backprop_oracles.py).

Runners (tests/backprop_models.py): ``onnx_bcast.InferenceSession`` with the numpy backend and the native one,
``onnx.reference.ReferenceEvaluator`` with our reference ops, and ``onnx_bcast.convert(model)`` run in plain ONNX
Runtime and in ``onnx.reference``. One-node models with opset 18 and onnx_bcast 1; the shape inputs are initializers,
or int64 graph inputs fed at run time, then also with delta's dims unknown. Invalid cases must fail in every runner
and never return a value; they run in one child process (an ONNX Runtime abort must fail the tests, not end the test
session).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import onnx_bcast
from tests import backprop_oracles as oracles
from tests.backprop_cases import (
    BROADCAST_BACKPROP,
    INVALID,
    UNBROADCAST,
    V0_BACKPROP,
    VALID,
    BpCase,
    cases_of,
)
from tests.backprop_models import (
    RAISES_OURS,
    RUNNERS,
    VARIANTS,
    as_delta_type,
    build_model,
    feeds,
    node_name,
    run_native,
    shape_inputs,
)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(onnx_bcast.__file__)))
CHILD_TIMEOUT = 300
NUMERIC = [np.dtype(t) for t in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.int16, np.int32,
                                 np.int64, np.uint8, np.uint16, np.uint32, np.uint64)]


def variants_of(case: BpCase) -> tuple[str, ...]:
    """Every variant; the v0 op has no shape inputs, so only its static and its dynamic-delta forms differ."""
    return VARIANTS if shape_inputs(case) else (VARIANTS[0], VARIANTS[2])


def run(case: BpCase, dtype: np.dtype, variant: str, runner: str, delta: np.ndarray) -> tuple[np.ndarray, ...]:
    model = build_model(case, dtype, variant)
    fed = feeds(case, delta, variant)
    if runner == "native":
        outs = run_native(model, fed, expect_native=True)
    else:
        outs = RUNNERS[runner](model, fed)
    return as_delta_type(outs, dtype)


# --- valid cases ------------------------------------------------------------------------------------------------

def _valid_params() -> list:
    params = []
    for case in VALID:
        for variant in variants_of(case):  # float32 here; test_every_numeric_type sweeps the types
            for runner in RUNNERS:
                params.append(pytest.param(case, variant, np.dtype(np.float32), runner,
                                           id=f"{case.op}-{case.name}-{variant}-{runner}"))
    return params


@pytest.mark.parametrize(("case", "variant", "dtype", "runner"), _valid_params())
def test_valid_case(case: BpCase, variant: str, dtype: np.dtype, runner: str) -> None:
    delta = oracles.case_delta(case, dtype)
    oracles.assert_case_outputs(case, run(case, dtype, variant, runner, delta), delta, what=f"{runner}: ")


SWEEP_CASES = {BROADCAST_BACKPROP: "numpy_31_to_236", V0_BACKPROP: "v0_234_axes02",
               UNBROADCAST: "pdpd_234_31_default_axis"}


def _sweep_params() -> list:
    params = []
    for op, name in SWEEP_CASES.items():
        case = next(c for c in cases_of(op) if c.name == name)
        for dtype in NUMERIC:
            for runner in RUNNERS:
                params.append(pytest.param(case, dtype, runner, id=f"{op}-{dtype.name}-{runner}"))
    return params


@pytest.mark.parametrize(("case", "dtype", "runner"), _sweep_params())
def test_every_numeric_type(case: BpCase, dtype: np.dtype, runner: str) -> None:
    """SPEC §1: T is every numeric type; the outputs have delta's type."""
    delta = oracles.case_delta(case, dtype)
    oracles.assert_case_outputs(case, run(case, dtype, "initializers", runner, delta), delta, what=f"{runner}: ")


# delta (5, 2) summed over its first axis: column [big, 1, 1, 1, 1] sums to big + 4 in float32 (representable in the
# narrow type), but to big when added up in the narrow type (big + 1 is a tie that rounds back to big)
NARROW_CASES = {
    BROADCAST_BACKPROP: BpCase("narrow", BROADCAST_BACKPROP, "numpy", (5, 2), data_shape=(2,), target=(5, 2)),
    V0_BACKPROP: BpCase("narrow", V0_BACKPROP, "", (5, 2), broadcast_axes=(0,)),
    UNBROADCAST: BpCase("narrow", UNBROADCAST, "numpy", (5, 2), a_shape=(5, 2), b_shape=(2,)),
}


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize(("dtype", "big"), [pytest.param(np.dtype(np.float16), 2048.0, id="float16"),
                                            pytest.param(np.dtype(ml_dtypes.bfloat16), 256.0, id="bfloat16")])
@pytest.mark.parametrize("op", list(NARROW_CASES))
def test_narrow_floats_summed_in_float32(op: str, dtype: np.dtype, big: float, runner: str) -> None:
    case = NARROW_CASES[op]
    column = np.array([big, 1, 1, 1, 1])
    delta = np.stack([column, 2 * column], axis=1).astype(dtype)
    outs = run(case, dtype, "initializers", runner, delta)
    summed = outs[-1]  # Unbroadcast: grad B; the others: their one output
    assert summed.dtype == dtype and summed.reshape(-1).tolist() == [big + 4, 2 * big + 8], summed


INTEGER_SUMS = {  # id -> (dtype, values)
    "int8": (np.dtype(np.int8), [100, 100, 100, -128]),
    "int32": (np.dtype(np.int32), [2**31 - 1, 1, 2**31 - 1]),
    "int64": (np.dtype(np.int64), [2**63 - 1, 1, 2**63 - 1]),
    "int64_exact_beyond_2**53": (np.dtype(np.int64), [2**53, 1]),  # no overflow: exactness only
    "uint64": (np.dtype(np.uint64), [2**64 - 1, 2]),
    "uint64_exact_beyond_2**53": (np.dtype(np.uint64), [2**53, 1]),
}
# ONNX Runtime 1.32's CPU ReduceSum adds int32/int64 up in double and saturates on overflow (ORT PR #28743 made
# the saturation deliberate): [2**53, 1] sums to 2**53, [2**31 - 1, 1] to 2**31 - 1. The standard rule therefore sums
# integers with MatMul where the axes are known (these cases), which wraps as the kernels do.
INTEGER_XFAILS: dict[tuple[str, str], str] = {}


def _integer_params() -> list:
    params = []
    for op in NARROW_CASES:
        for name, (dtype, values) in INTEGER_SUMS.items():
            for runner in RUNNERS:
                reason = INTEGER_XFAILS.get((name, runner))
                marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                params.append(pytest.param(op, dtype, values, runner, id=f"{op}-{name}-{runner}", marks=marks))
    return params


@pytest.mark.parametrize(("op", "dtype", "values", "runner"), _integer_params())
def test_integers_wrap_in_their_type(op: str, dtype: np.dtype, values: list, runner: str) -> None:
    """Integer sums are exact, modulo 2**bits as numpy's (and C's unsigned) integer sums are."""
    n = len(values)
    case = {BROADCAST_BACKPROP: BpCase("wrap", BROADCAST_BACKPROP, "numpy", (n, 1), data_shape=(1,), target=(n, 1)),
            V0_BACKPROP: BpCase("wrap", V0_BACKPROP, "", (n, 1), broadcast_axes=(0,)),
            UNBROADCAST: BpCase("wrap", UNBROADCAST, "numpy", (n, 1), a_shape=(n, 1), b_shape=(1,))}[op]
    bits = 8 * dtype.itemsize
    exact = sum(values) % 2**bits
    if dtype.kind == "i" and exact >= 2 ** (bits - 1):
        exact -= 2**bits
    outs = run(case, dtype, "initializers", runner, np.array(values, dtype=dtype).reshape(n, 1))
    assert outs[-1].dtype == dtype and outs[-1].reshape(-1).tolist() == [exact], outs[-1]


# --- invalid cases: one child process runs them all ----------------------------------------------------------------

CHILD = r'''
import json
import sys

import numpy as np

from tests import backprop_models as bm
from tests.backprop_cases import INVALID

records = {}
for case in INVALID:
    delta = (np.arange(int(np.prod(case.out))) - 1.5).astype(np.float32).reshape(case.out)
    for variant in (bm.VARIANTS if bm.shape_inputs(case) else (bm.VARIANTS[0], bm.VARIANTS[2])):
        model = bm.build_model(case, np.float32, variant)
        fed = bm.feeds(case, delta, variant)
        for runner, fn in bm.RUNNERS.items():
            key = f"{case.op}/{case.name}/{variant}/{runner}"
            print("TRY " + key, file=sys.stderr, flush=True)
            try:
                outs = fn(model, fed)
            except Exception as exc:
                import onnx_bcast
                records[key] = {"ok": False, "type": type(exc).__name__, "module": type(exc).__module__,
                                "broadcast_error": isinstance(exc, onnx_bcast.BroadcastError),
                                "message": str(exc)}
            else:
                records[key] = {"ok": True, "shapes": [list(np.shape(o)) for o in outs],
                                "values": [np.asarray(o, dtype=np.float64).ravel()[:8].tolist() for o in outs]}
print("RESULT " + json.dumps(records), flush=True)
'''


# the tests that read invalid_records (one child for them all, once per process) run in one pytest-xdist worker
INVALID_BATCH = pytest.mark.xdist_group("backprop_paths_invalid_records")


@pytest.fixture(scope="module")
def invalid_records() -> dict:
    """Every (invalid case, variant, runner) of the ops present, run in one child: key -> record."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=CHILD_TIMEOUT,
                          env=env, cwd=REPO_ROOT)
    last = [line for line in proc.stderr.splitlines() if line.startswith("TRY ")][-1:]
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        pytest.fail(f"the child died with {name} during {last}\n--- stderr ---\n{proc.stderr[-5000:]}", pytrace=False)
    assert proc.returncode == 0, f"child exited with {proc.returncode} after {last}\n{proc.stderr[-5000:]}"
    results = [line[len("RESULT "):] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(results) == 1, proc.stdout[-5000:]
    return json.loads(results[0])


def _invalid_params() -> list:
    return [pytest.param(case, variant, runner, id=f"{case.op}-{case.name}-{variant}-{runner}")
            for case in INVALID for variant in variants_of(case) for runner in RUNNERS]


@INVALID_BATCH
@pytest.mark.parametrize(("case", "variant", "runner"), _invalid_params())
def test_invalid_case_fails(case: BpCase, variant: str, runner: str, request: pytest.FixtureRequest) -> None:
    """No runner returns a value. InferenceSession (both backends) and the reference evaluator with our ops raise
    our BroadcastError naming op, mode, shapes and node; the converted model fails in plain ORT and in onnx.reference
    (by their own errors, or by convert() refusing with our BroadcastError when the failure is static)."""
    record = request.getfixturevalue("invalid_records")[f"{case.op}/{case.name}/{variant}/{runner}"]
    assert not record["ok"], f"{runner} returned a value for an invalid case: {record}"
    if runner not in RAISES_OURS and not record["broadcast_error"]:
        return
    assert record["broadcast_error"], f"{runner}: expected a BroadcastError, got {record['type']}: {record['message']}"
    message = record["message"]
    words = case.error_words
    if runner not in RAISES_OURS and variant == "dynamic_delta":
        # convert() refused the model: delta's dims were unknown then, so its message cannot hold the run-time shapes
        words = tuple(w for w in words if not w.startswith("("))
    if runner not in RAISES_OURS and "statically:" in message:
        words = ()  # convert() disproved a guard's rule from ranks and constants: the rule's words, not the kernel's
    for word in (case.head, *words, f"'{node_name(case)}'"):
        assert word in message, f"{word!r} not in {message!r}"


@INVALID_BATCH
@pytest.mark.parametrize(("case", "variant"), [pytest.param(c, v, id=f"{c.op}-{c.name}-{v}")
                                               for c in INVALID for v in variants_of(c)])
def test_invalid_native_message_is_the_numpy_backends(case: BpCase, variant: str,
                                                      request: pytest.FixtureRequest) -> None:
    records = request.getfixturevalue("invalid_records")
    numpy_backend, native = (records[f"{case.op}/{case.name}/{variant}/{r}"] for r in ("session", "native"))
    assert native["message"] == numpy_backend["message"]


@pytest.mark.parametrize(("dims", "shown"), [(["n", "m"], "(?, ?)"), ([2, "m"], "(2, ?)"), ([2, 3], "(2, 3)")])
def test_an_axis_out_of_range_names_only_known_dims(dims: list, shown: str) -> None:
    """``BroadcastV0Backprop`` with ``broadcast_axes`` [5] on a rank-2 delta: the message gives delta's dims as far
    as they are known, never the 1s that stand in for unknown ones while the axes are checked on the rank."""
    from onnx import TensorProto, helper

    node = helper.make_node("BroadcastV0Backprop", ["d"], ["g"], domain="onnx_bcast", broadcast_axes=[5])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("d", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("g", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                              ir_version=10)
    with pytest.raises(onnx_bcast.BroadcastError) as caught:
        onnx_bcast.convert(model)
    assert f"outside the output rank 2; arg {shown}, shape {shown}, broadcast_axes [5]" in str(caught.value)
    assert "node 'BroadcastV0Backprop#0'" in str(caught.value)  # unnamed: labelled as on every path
