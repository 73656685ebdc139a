"""The memory guard: a limit on one broadcast output's bytes, from the keyword, the environment or physical memory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from onnx_bcast.convert import convert as convert_model
from onnx_bcast.ops import memory_guard
from onnx_bcast.random_inputs import random_feeds
from tests.test_ort_failures import REPO_ROOT, assert_broadcast_error, assert_output, run_child

ENV = "ONNX_BCAST_MAX_OUTPUT_BYTES"


@pytest.fixture(autouse=True)
def _no_env_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)


def _meminfo_total_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal in /proc/meminfo")


# ------------------------------------------------------------------------------------------------ the limit


@pytest.mark.skipif(not Path("/proc/meminfo").exists(), reason="needs Linux /proc/meminfo as the independent source")
def test_default_limit_is_half_of_physical_memory() -> None:
    half = _meminfo_total_bytes() / 2
    limit, source = memory_guard.output_limit()
    assert abs(limit - half) <= 0.02 * half, (limit, half)
    assert "physical memory" in source


def test_fallback_when_memory_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_sysconf(name: str) -> int:
        raise ValueError(name)

    memory_guard.physical_memory_bytes.cache_clear()
    monkeypatch.setattr(memory_guard.os, "sysconf", no_sysconf)
    monkeypatch.setattr(memory_guard, "_meminfo_total", lambda: None)
    try:
        assert memory_guard.default_limit() == 4 * 1024**3
    finally:
        monkeypatch.undo()
        memory_guard.physical_memory_bytes.cache_clear()


def test_meminfo_is_read_when_sysconf_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "meminfo"
    fake.write_text("MemTotal:       1000 kB\nMemFree:         10 kB\n")
    assert memory_guard._meminfo_total(str(fake)) == 1024000
    fake.write_text("garbage\n")
    assert memory_guard._meminfo_total(str(fake)) is None
    assert memory_guard._meminfo_total(str(tmp_path / "absent")) is None


@pytest.mark.parametrize(("text", "expected"), [("12000000000", 12_000_000_000), ("12_000", 12000),
                                                ("1.2e10", 12 * 10**9), (" 0 ", 0)])
def test_env_values_accepted(text: str, expected: int) -> None:
    assert memory_guard.parse_limit(text) == expected


@pytest.mark.parametrize("text", ["abc", "-5", "1.5", "inf", "nan", "12GB"])
def test_invalid_env_value_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv(ENV, text)
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        onnx_bcast.broadcast(np.zeros(3, np.float32), [2, 3])
    message = str(info.value)
    assert message.startswith("Broadcast(mode=numpy): ")
    assert ENV in message and repr(text) in message


@pytest.mark.parametrize("value", [-1, 1.5, "100", True])
def test_invalid_keyword_is_a_clear_error(value: object) -> None:
    with pytest.raises(onnx_bcast.BroadcastError, match="max_output_bytes"):
        onnx_bcast.broadcast(np.zeros(3, np.float32), [2, 3], max_output_bytes=value)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------ the kernels


def test_example_message_from_the_issue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1.2e10")
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        onnx_bcast.broadcast(np.zeros((1,), np.float32), [100000, 100000, 100])
    assert str(info.value) == ("Broadcast(mode=numpy): output (100000, 100000, 100) of float32 would take 4.0e+12 "
                               "bytes, over the limit of 1.2e+10 bytes (ONNX_BCAST_MAX_OUTPUT_BYTES)")


def test_env_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    data = np.arange(3, dtype=np.float64)  # output (4, 3) of float64: 96 bytes
    monkeypatch.setenv(ENV, "96")
    assert onnx_bcast.broadcast(data, [4, 3]).shape == (4, 3)
    monkeypatch.setenv(ENV, "95")
    with pytest.raises(onnx_bcast.BroadcastError, match=r"\(4, 3\) of float64 would take 96 bytes.*limit of 95"):
        onnx_bcast.broadcast(data, [4, 3])


def test_keyword_overrides_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    out = onnx_bcast.broadcast(np.int8(7), [10, 10], max_output_bytes=100)
    np.testing.assert_array_equal(out, np.full((10, 10), 7, np.int8))
    with pytest.raises(onnx_bcast.BroadcastError, match=r"100 bytes, over the limit of 99 bytes \(max_output_bytes\)"):
        onnx_bcast.broadcast(np.int8(7), [10, 10], max_output_bytes=99)


@pytest.mark.parametrize("mode", ["numpy", "bidirectional", "explicit", "pdpd"])
def test_every_broadcast_mode_is_guarded(mode: str) -> None:
    axes = [1] if mode == "explicit" else None
    data = np.ones((5,) if mode == "explicit" else (1, 5), np.int32)
    target = [1000, 5, 1000] if mode == "explicit" else [1000, 1000, 5]
    expected_bytes = 1000 * 1000 * 5 * 4
    for op, kernel in (("Broadcast", onnx_bcast.broadcast), ("Expand", onnx_bcast.expand)):
        with pytest.raises(onnx_bcast.BroadcastError) as info:
            kernel(data, target, axes, mode=mode, max_output_bytes=expected_bytes - 1)
        assert str(info.value).startswith(f"{op}(mode={mode}): output ")
        assert f"of int32 would take {expected_bytes:.1e} bytes" in str(info.value)
        assert kernel(data, target, axes, mode=mode, max_output_bytes=expected_bytes).nbytes == expected_bytes


def test_v0_kernels_are_guarded() -> None:
    arg = np.arange(4, dtype=np.float64)
    with pytest.raises(onnx_bcast.BroadcastError, match=r"^BroadcastV0: output \(3, 4, 5\) of float64 would take 480"):
        onnx_bcast.broadcast_v0(arg, [3, 4, 5], [0, 2], max_output_bytes=479)
    assert onnx_bcast.broadcast_v0(arg, [3, 4, 5], [0, 2], max_output_bytes=480).shape == (3, 4, 5)
    like = np.zeros((3, 4, 5), bool)
    with pytest.raises(onnx_bcast.BroadcastError, match=r"^BroadcastLikeV0: output \(3, 4, 5\) of float64"):
        onnx_bcast.broadcast_like_v0(arg, like, [0, 2], max_output_bytes=479)
    expected = np.broadcast_to(arg.reshape(1, 4, 1), (3, 4, 5))
    np.testing.assert_array_equal(onnx_bcast.broadcast_like_v0(arg, like, [0, 2], max_output_bytes=480), expected)


def test_size_does_not_overflow() -> None:
    """2**32 * 2**32 int8 elements wrap to 0 bytes in int64 arithmetic; the guard must see 2**64."""
    with pytest.raises(onnx_bcast.BroadcastError) as info:
        onnx_bcast.broadcast(np.zeros((1,), np.int8), [2**32, 2**32])
    assert f"would take {float(2**64):.1e} bytes" in str(info.value)
    with pytest.raises(onnx_bcast.BroadcastError, match="would take"):
        onnx_bcast.broadcast_v0(np.zeros((), np.int64), [2**31, 2**31, 2**31], [0, 1, 2])


def test_zero_size_output_is_never_over_the_limit() -> None:
    out = onnx_bcast.broadcast(np.zeros((1,), np.float32), [0, 10**12], max_output_bytes=0)
    assert out.shape == (0, 10**12)


def test_rule_checks_come_first() -> None:
    """An invalid broadcast keeps its own error, whatever its size."""
    with pytest.raises(onnx_bcast.BroadcastError, match="cannot be broadcast"):
        onnx_bcast.broadcast(np.zeros((3,), np.float32), [10**9, 10**9, 4], max_output_bytes=1)


# ------------------------------------------------------------------------------------------------ ONNX Runtime


def test_ort_path_uses_the_env_limit() -> None:
    """Runtime target_shape too large -> BroadcastError from run; the session keeps working (in a child process)."""
    result = run_child('''
        import os
        import onnx_bcast
        os.environ["ONNX_BCAST_MAX_OUTPUT_BYTES"] = "1000"
        b = helper.make_node("Broadcast", ["x", "t"], ["y"], domain="onnx_bcast", name="big_bcast", mode="numpy")
        like = helper.make_node("BroadcastLikeV0", ["x", "l"], ["z"], domain="onnx_bcast", name="big_like",
                                initial_broadcast_axes=[0])
        m = model([b, like], [vi("x", F32, [3]), vi("t", I64, [None]), vi("l", F32, [None, 3])],
                  [vi("y", F32, None), vi("z", F32, None)])
        s = onnx_bcast.InferenceSession(m)
        x = np.array([1.0, 2.0, 3.0], np.float32)
        def run(target, rows):
            return s.run(None, {"x": x, "t": np.array(target, np.int64), "l": np.zeros((rows, 3), np.float32)})
        records = {
            "huge": attempt(lambda: run([100000, 100000, 100, 3], 1)[0]),
            "fits": attempt(lambda: run([83, 3], 1)[0]),
            "over": attempt(lambda: run([84, 3], 1)[0]),
            "like_over": attempt(lambda: run([1, 3], 84)[1]),
        }
        os.environ["ONNX_BCAST_MAX_OUTPUT_BYTES"] = "not-a-number"
        records["invalid_env"] = attempt(lambda: run([2, 3], 1)[0])
        del os.environ["ONNX_BCAST_MAX_OUTPUT_BYTES"]
        records["after"] = attempt(lambda: run([2, 3], 2)[1])
        emit(records)
    ''')
    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert_broadcast_error(result["huge"], "Broadcast(mode=numpy) node 'big_bcast'", "(100000, 100000, 100, 3)",
                           f"{100000 * 100000 * 100 * 3 * 4:.1e} bytes", "limit of 1000 bytes", ENV)
    assert_output(result["fits"], np.tile(x, (83, 1)))  # 83 * 3 * 4 = 996 bytes
    assert_broadcast_error(result["over"], "big_bcast", "(84, 3) of float32 would take 1008 bytes")
    assert_broadcast_error(result["like_over"], "BroadcastLikeV0", "big_like", "(84, 3)", "1008 bytes")
    assert_broadcast_error(result["invalid_env"], ENV, "not-a-number")  # both nodes fail; either may come first
    assert_output(result["after"], np.tile(x, (2, 1)))


# ------------------------------------------------------------------------------------------------ generated inputs


def _huge_input_model() -> onnx.ModelProto:
    node = helper.make_node("Broadcast", ["x", "t"], ["y"], domain="onnx_bcast", name="b", mode="numpy")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [100000, 100000])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[onnx.numpy_helper.from_array(np.array([100000, 100000], np.int64), "t")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                             ir_version=10)


def test_random_feeds_refuse_an_input_over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    session = ort.InferenceSession(convert_model(_huge_input_model()).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    monkeypatch.setenv(ENV, "1e9")
    with pytest.raises(ValueError) as info:
        random_feeds(session)
    assert str(info.value) == ("input 'x': generating (100000, 100000) of float32 would take 4.0e+10 bytes, over the "
                               f"limit of 1.0e+09 bytes ({ENV}); pass --input x=FILE.npy")


def test_convert_verify_refuses_a_huge_generated_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = tmp_path / "huge_input.onnx", tmp_path / "out.onnx"
    onnx.save(_huge_input_model(), source)
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, **{ENV: "1e9"})
    proc = subprocess.run([sys.executable, "-m", "onnx_bcast", "convert", str(source), "-o", str(target),
                           "--verify"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc
    assert proc.stderr.strip() == ("onnx-bcast convert: input 'x': generating (100000, 100000) of float32 would take "
                                   f"4.0e+10 bytes, over the limit of 1.0e+09 bytes ({ENV}); pass --input x=FILE.npy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge_input.onnx"]
    monkeypatch.setenv(ENV, "1e9")
    with pytest.raises(ValueError, match="input 'x': generating"):
        convert_model(_huge_input_model(), verify=True)
