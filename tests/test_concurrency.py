"""One ``onnx_bcast.InferenceSession`` shared by threads: right results, and each error raised in its own call only.

Every scenario runs in a child process (a crash in the Python-op bridge must not take pytest down); the child
compares outputs with numpy formulas and reports what went wrong, the parent asserts there was nothing.
"""

from __future__ import annotations

import pytest

from tests.test_ort_failures import run_child

CHILD = '''
import logging
import threading

import onnxruntime as ort
import onnx_bcast

class Count(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []
    def emit(self, record):
        self.records.append(record.getMessage())

logged = Count()
logging.getLogger("onnx_bcast").addHandler(logged)


def two_node_model():
    """y = Broadcast<numpy>(x, t); z = Broadcast<explicit>(x, s, axes [1])."""
    nodes = [helper.make_node("Broadcast", ["x", "t"], ["y"], domain="onnx_bcast", name="numpy_node", mode="numpy"),
             helper.make_node("Broadcast", ["x", "s", "a"], ["z"], domain="onnx_bcast", name="explicit_node",
                              mode="explicit")]
    a = numpy_helper.from_array(np.array([1], np.int64), "a")
    return model(nodes, [vi("x", F32, [None]), vi("t", I64, [2]), vi("s", I64, [3])],
                 [vi("y", F32, None), vi("z", F32, None)], inits=[a])


def branches_model(k):
    """k independent branches, each Broadcast<numpy>(x_i, t_i) then Mul by 2 (parallel under ORT_PARALLEL)."""
    nodes, inputs, outputs = [], [], []
    for i in range(k):
        nodes.append(helper.make_node("Broadcast", [f"x{i}", f"t{i}"], [f"b{i}"], domain="onnx_bcast",
                                      name=f"branch{i}", mode="numpy"))
        nodes.append(helper.make_node("Mul", [f"b{i}", f"b{i}"], [f"y{i}"], name=f"square{i}"))
        inputs += [vi(f"x{i}", F32, [None]), vi(f"t{i}", I64, [2])]
        outputs.append(vi(f"y{i}", F32, None))
    return model(nodes, inputs, outputs)


def in_threads(count, work):
    """Run work(i) in ``count`` threads started together; the list of their problem lists."""
    barrier = threading.Barrier(count)
    problems = [[] for _ in range(count)]
    def body(i):
        barrier.wait()
        try:
            work(i, problems[i])
        except BaseException as exc:
            problems[i].append(f"thread {i} died: {type(exc).__name__}: {exc}")
    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    return [p for ps in problems for p in ps]
'''


def _assert_clean(result: dict) -> None:
    assert result["problems"] == [], "\n".join(result["problems"][:20])
    assert result["valid"] > 0


def test_eight_threads_share_one_session() -> None:
    result = run_child(CHILD + '''
session = onnx_bcast.InferenceSession(two_node_model())
RUNS = 50

def work(i, problems):
    n = i + 1
    x = (np.arange(n, dtype=np.float32) + 100 * i)
    for r in range(RUNS):
        rows, depth = 1 + (r + i) % 4, 1 + r % 3
        y, z = session.run(None, {"x": x, "t": np.array([rows, n], np.int64), "s": np.array([2, n, depth], np.int64)})
        want_y = np.tile(x, (rows, 1))
        want_z = x.reshape(1, n, 1) * np.ones((2, n, depth), np.float32)
        if y.shape != want_y.shape or not np.array_equal(y, want_y):
            problems.append(f"thread {i} run {r}: y {y.shape} != {want_y.shape}")
        if z.shape != want_z.shape or not np.array_equal(z, want_z):
            problems.append(f"thread {i} run {r}: z {z.shape} != {want_z.shape}")

problems = in_threads(8, work)
emit({"problems": problems, "valid": 8 * RUNS, "logged": logged.records})
''')
    _assert_clean(result)
    assert result["logged"] == []


def _interleaved(mode: str) -> dict:
    """8 threads x 60 runs of a 4-branch model, every third call invalid in one branch; the child's record."""
    return run_child(CHILD + f'''
MODE = {mode!r}
K = 4
options = ort.SessionOptions()
options.log_severity_level = 4
if MODE == "parallel":
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    options.inter_op_num_threads = 4
    options.intra_op_num_threads = 1
session = onnx_bcast.InferenceSession(branches_model(K), sess_options=options)
RUNS = 60
counts = {{"valid": 0, "invalid": 0}}
lock = threading.Lock()

def work(i, problems):
    n = i + 2  # thread i's data length: its errors name "(n,)", unique to the thread
    for r in range(RUNS):
        invalid = (r + i) % 3 == 0
        bad_branch = (r + i) % K
        feeds, want = {{}}, []
        for b in range(K):
            x = np.arange(n, dtype=np.float32) + 1000 * i + b
            rows = 1 + (r + b) % 3
            width = n + 1 + r if invalid and b == bad_branch else n
            feeds[f"x{{b}}"], feeds[f"t{{b}}"] = x, np.array([rows, width], np.int64)
            want.append(np.tile(x * x, (rows, 1)))
        try:
            out = session.run(None, feeds)
        except onnx_bcast.BroadcastError as err:
            text = str(err)
            if not invalid:
                problems.append(f"thread {{i}} run {{r}}: a valid call raised {{text}}")
            expect = f"data ({{n}},), target ({{1 + (r + bad_branch) % 3}}, {{n + 1 + r}})"
            if invalid and (expect not in text or f"branch{{bad_branch}}" not in text):
                problems.append(f"thread {{i}} run {{r}}: got someone else's error: {{text}} (expected {{expect}})")
            with lock:
                counts["invalid"] += 1
            continue
        except Exception as err:
            problems.append(f"thread {{i}} run {{r}}: not a BroadcastError: {{type(err).__name__}}: {{err}}")
            continue
        if invalid:
            problems.append(f"thread {{i}} run {{r}}: an invalid call returned outputs")
            continue
        with lock:
            counts["valid"] += 1
        for b, (got, exp) in enumerate(zip(out, want)):
            if got.shape != exp.shape or not np.array_equal(got, exp):
                problems.append(f"thread {{i}} run {{r}} branch {{b}}: {{got.shape}} != {{exp.shape}}")

problems = in_threads(8, work)
from onnx_bcast.ort.process_state import state
emit({{"problems": problems, "valid": counts["valid"], "invalid": counts["invalid"],
       "left_recorded": len(state().errors), "logged": len(logged.records)}})
''')


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
def test_invalid_run_raises_only_in_its_own_thread(mode: str) -> None:
    """Threads interleave valid and invalid runs; every invalid call raises its own error, no valid call raises."""
    result = _interleaved(mode)
    _assert_clean(result)
    assert result["invalid"] == 8 * 60 // 3
    assert result["valid"] == 8 * 60 - result["invalid"]
    assert result["left_recorded"] == 0, "errors recorded by kernels but never taken by a run"


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
def test_raised_errors_are_not_also_logged(mode: str) -> None:
    assert _interleaved(mode)["logged"] == 0
