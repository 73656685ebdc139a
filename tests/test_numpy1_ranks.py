"""numpy 1 makes arrays of at most 32 dims; the contract allows 64. With numpy 1, every path that runs a numpy kernel
refuses a tensor of 33 to 64 dims with a BroadcastError naming the node, the op, the mode and the shapes ("numpy 1
holds at most 32 dims; numpy 2 needed for rank N"), never numpy's raw ValueError and never an abort of the process
(the onnxruntime-extensions bridge aborts on an input numpy cannot hold). The shape rules and the conversion do not
depend on numpy (tests/test_rank_limits.py, tests/test_rank_limits_paths.py); the native backend runs such tensors
inside ONNX Runtime, and only hands back none of more than 32 dims.

These tests run only with numpy 1 (the run at the declared minimums); with numpy 2 they skip, saying why.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest

import onnx_bcast
from tests import numpy1_models as models
from tests.numpy_dims import numpy_1_reason, only_numpy_1

pytestmark = only_numpy_1
REPO_ROOT = Path(__file__).resolve().parent.parent
RANKS = (33, 64)


def _refusal(rank: int) -> str:
    return f"rank {rank}: {numpy_1_reason(rank)}"


# ---- the Python API: kernels whose output would have more than 32 dims ------------------------------------------

def _api_calls(rank: int) -> list[tuple[str, object, str]]:
    shape = models.high_shape(rank)
    data = np.arange(3, dtype=np.float32)
    return [
        ("Broadcast(mode=numpy)", lambda: onnx_bcast.broadcast(data, shape), "data (3,), target (2, 1, "),
        ("Broadcast(mode=numpy)", lambda: onnx_bcast.broadcast(data, np.asarray(shape)), "data (3,)"),  # planned
        ("Broadcast(mode=bidirectional)", lambda: onnx_bcast.broadcast(data, shape, mode="bidirectional"), "data"),
        ("Broadcast(mode=explicit)", lambda: onnx_bcast.broadcast(data, shape, [rank - 1], mode="explicit"), "data"),
        ("Broadcast(mode=pdpd)", lambda: onnx_bcast.broadcast(data, shape, mode="pdpd", axis=rank - 1), "data"),
        ("Expand(mode=bidirectional)", lambda: onnx_bcast.expand(data, shape), "data (3,)"),
        ("BroadcastV0", lambda: onnx_bcast.broadcast_v0(data, shape, list(range(rank - 1))), "arg (3,), shape (2, "),
    ]


@pytest.mark.parametrize("rank", RANKS)
def test_kernels_refuse_outputs_numpy_1_cannot_hold(rank: int) -> None:
    for head, call, shapes in _api_calls(rank):
        with pytest.raises(onnx_bcast.BroadcastError) as info:
            call()
        message = str(info.value)
        assert message.startswith(f"{head}: output {_refusal(rank)}; "), message
        assert shapes in message and "output (2, 1, " in message or "shape (2, 1, " in message, message


def test_kernels_still_run_at_32_dims() -> None:
    got = onnx_bcast.broadcast(np.arange(3, dtype=np.float32), models.high_shape(32))
    assert got.shape == tuple(models.high_shape(32)) and got.reshape(2, 3).tolist() == [[0, 1, 2]] * 2


def test_conversion_does_not_depend_on_numpy() -> None:
    """A model whose tensors have 64 dims converts with numpy 1; the rule's own limit stays 64."""
    for constant in (True, False):
        converted = onnx_bcast.convert(models.kernel_input(64, constant))
        assert not any(n.domain == "onnx_bcast" for n in converted.graph.node)
    with pytest.raises(onnx_bcast.BroadcastError, match="target rank 65 exceeds the maximum rank 64"):
        onnx_bcast.broadcast_shape((3,), models.high_shape(65))


# ---- sessions: in a child process (an abort of the bridge must fail the test, not end pytest) -------------------

_SESSIONS = textwrap.dedent("""
    import json
    import logging
    import numpy as np
    import onnxruntime as ort
    import onnx_bcast
    from tests import numpy1_models as models
    logging.disable(logging.CRITICAL)
    report = {}
    def attempt(key, fn):
        try:
            report[key] = [float(v) for v in np.asarray(fn()[0]).reshape(-1)[:1]]
        except onnx_bcast.BroadcastError as err:
            report[key] = "BroadcastError: " + str(err)
        except Exception as err:
            report[key] = type(err).__name__ + ": " + str(err)
    def run(model, backend, feeds):
        return onnx_bcast.InferenceSession(model, backend=backend).run(None, feeds)
    for backend in ("numpy", "native"):
        for rank in (33, 64):
            for constant in (True, False):
                feeds = models.feeds(0 if constant else rank)
                attempt(f"input {backend} {rank} {constant}", lambda: run(models.kernel_input(rank, constant),
                                                                          backend, feeds))
            target = {"t": np.asarray(models.wide_target(rank), np.int64)}
            attempt(f"output {backend} {rank}", lambda: run(models.kernel_output(), backend, models.feeds(**target)))
            like = models.feeds(rank, B=np.ones(3, np.float32))
            attempt(f"like {backend} {rank}", lambda: run(models.like_arg(rank), backend, like))
            for op, extra in (("Expand", {}), ("Add", {"B": np.ones(3, np.float32)})):
                attempt(f"model output {op} {backend} {rank}", lambda: run(models.high_output(op), backend,
                                                                         models.feeds(rank, **extra)))
        session = onnx_bcast.InferenceSession(models.kernel_output(), backend=backend)
        attempt(f"again {backend} 33", lambda: session.run(None, models.feeds(t=np.asarray(models.wide_target(33)))))
        attempt(f"again {backend} 32", lambda: session.run(None, models.feeds(t=np.asarray(models.wide_target(32)))))
    plain = ort.InferenceSession(onnx_bcast.prepare(models.kernel_input(33, False)).SerializeToString(),
                                 onnx_bcast.session_options(), providers=["CPUExecutionProvider"])
    attempt("plain ORT on prepare", lambda: plain.run(None, models.feeds(33)))
    print(json.dumps(report))
""")


@pytest.fixture(scope="module")
def sessions() -> dict:
    proc = subprocess.run([sys.executable, "-c", _SESSIONS], capture_output=True, text=True, timeout=600,
                          cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]  # an abort (-6) of the bridge fails here
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("constant", [True, False], ids=["constant shape", "run-time shape"])
@pytest.mark.parametrize("rank", RANKS)
def test_numpy_backend_refuses_a_kernel_input_over_32_dims(sessions: dict, rank: int, constant: bool) -> None:
    """The bridge would abort the process on such an input: a check before the kernel refuses it."""
    got = sessions[f"input numpy {rank} {constant}"]
    assert got.startswith(f"BroadcastError: Broadcast(mode=bidirectional) node 'n': data {_refusal(rank)}; "
                          f"data (2, 1, 1, "), got
    assert sessions[f"input native {rank} {constant}"] == [6.0]  # ORT holds it; no numpy kernel runs


@pytest.mark.parametrize("rank", RANKS)
def test_numpy_backend_refuses_a_kernel_output_over_32_dims(sessions: dict, rank: int) -> None:
    got = sessions[f"output numpy {rank}"]
    assert got.startswith(f"BroadcastError: Broadcast(mode=numpy) node 'n': output {_refusal(rank)}; data (2, 3), "
                          f"target (1, 1, "), got
    assert sessions[f"output native {rank}"] == [6.0]


@pytest.mark.parametrize("rank", RANKS)
def test_numpy_backend_refuses_a_shape_only_input_over_32_dims(sessions: dict, rank: int) -> None:
    got = sessions[f"like numpy {rank}"]
    assert got.startswith(f"BroadcastError: BroadcastLikeV0 node 'n': like_arg {_refusal(rank)}; like_arg (2, 1, "), got


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("rank", RANKS)
def test_no_model_output_over_32_dims_is_handed_back(sessions: dict, rank: int, backend: str) -> None:
    """ORT computes it but cannot hand it back as a numpy 1 array: the error names the output and its node."""
    expand = sessions[f"model output Expand {backend} {rank}"]
    assert expand.startswith(f"BroadcastError: Expand node 'n': output 'Y' {_refusal(rank)}; output 'Y' (2, 1, "), \
        expand
    add = sessions[f"model output Add {backend} {rank}"]
    assert add.startswith(f"BroadcastError: Add(auto_broadcast=numpy) node 'n': output 'Y' {_refusal(rank)}; "), add


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_session_stays_usable(sessions: dict, backend: str) -> None:
    if backend == "numpy":
        assert sessions["again numpy 33"].startswith(f"BroadcastError: Broadcast(mode=numpy) node 'n': output "
                                                     f"{_refusal(33)}; "), sessions["again numpy 33"]
    else:  # ORT holds the 33 dims of the Broadcast's output, which only the ReduceSum reads
        assert sessions["again native 33"] == [6.0]
    assert sessions[f"again {backend} 32"] == [6.0]


def test_plain_ort_on_prepare_fails_the_run_without_abort(sessions: dict) -> None:
    got = sessions["plain ORT on prepare"]
    assert not got.startswith("BroadcastError") and isinstance(got, str), got  # ORT's own error; no value


# ---- the command line ---------------------------------------------------------------------------------------------

def _cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "onnx_bcast", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=REPO_ROOT)


def test_cli_run_says_numpy_2_is_needed(tmp_path: Path) -> None:
    kernel = tmp_path / "kernel.onnx"
    onnx.save(models.kernel_input(33, True), kernel)
    declared = tmp_path / "declared.onnx"
    onnx.save(models.high_input(40), declared)
    refused = _cli("run", kernel)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused
    assert refused.stderr.strip().splitlines() == [refused.stderr.strip()], refused.stderr
    assert f"Broadcast(mode=bidirectional) node 'n': data {_refusal(33)}" in refused.stderr
    native = _cli("run", kernel, "--backend", "native")
    assert native.returncode == 0 and "Y: float32 []" in native.stdout, native
    random = _cli("run", declared)
    assert random.returncode == 1 and len(random.stderr.strip().splitlines()) == 1, random
    assert f"input 'X': {_refusal(40)}" in random.stderr, random.stderr
