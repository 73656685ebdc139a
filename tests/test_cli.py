"""The ``onnx-bcast`` command run as ``python -m onnx_bcast.cli.main`` in subprocesses: output, exit status, files."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast
import onnx_bcast.verify
from onnx_bcast.models import MODELS_DIR, bundled_models

DOMAIN = "onnx_bcast"
EXPAND_MODES = MODELS_DIR / "expand_modes.onnx"
NCHW_BIAS = MODELS_DIR / "nchw_bias_explicit.onnx"
SUBCOMMANDS = ("convert", "run", "check", "demo")


def _cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "onnx_bcast", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def _cli_all(arg_lists: Sequence[Sequence[str | Path]], cwd: Path | None = None) -> list[subprocess.CompletedProcess]:
    """Several independent invocations, two at a time (the machine has two cores)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda args: _cli(*args, cwd=cwd), arg_lists))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _all_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    nodes, graphs = [], [model.graph]
    while graphs:
        graph = graphs.pop()
        nodes += graph.node
        for node in graph.node:
            for attr in node.attribute:
                graphs += [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
    return nodes + [n for f in model.functions for n in f.node]


def _our_nodes(path: Path) -> list[onnx.NodeProto]:
    return [n for n in _all_nodes(onnx.load(str(path))) if n.domain == DOMAIN]


def _mode(node: onnx.NodeProto) -> str:
    return next(helper.get_attribute_value(a).decode() for a in node.attribute if a.name == "mode")


def _assert_one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    assert proc.returncode == 1, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def _invalid_model(path: Path) -> Path:
    """Broadcast numpy of data [3] to a constant target [2, 4]: dim 3 cannot stretch to 4."""
    node = helper.make_node("Broadcast", ["x", "target", "axes"], ["y"], domain=DOMAIN, name="bad_bcast",
                            mode="numpy", axis=-1)
    graph = helper.make_graph([node], "invalid", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(np.array([2, 4], np.int64), "target"),
                                           numpy_helper.from_array(np.array([], np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
                              ir_version=10)
    onnx.save(model, path)
    return path


# ---------------------------------------------------------------------------------------------------- success


def test_module_runs_as_main() -> None:
    proc = _cli("--help")
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: onnx-bcast")
    for command in SUBCOMMANDS:
        assert command in proc.stdout


def test_a_reader_that_stops_reading_ends_the_command_quietly(tmp_path: Path) -> None:
    """``onnx-bcast convert ... | head -1``: the pipe closes, and the command ends as SIGPIPE would end it (status
    141), without a message saying the model had a problem."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    proc = subprocess.run([sys.executable, "-m", "onnx_bcast", "convert", str(MODELS_DIR / "expand_modes.onnx"),
                           "-o", str(tmp_path / "out.onnx")], stdout=write_end, stderr=subprocess.PIPE, text=True,
                          timeout=300)
    os.close(write_end)
    assert (proc.returncode, proc.stderr) == (141, "")


def test_demo_says_yes_for_every_bundled_model() -> None:
    proc = _cli("demo")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()[2:-1]}
    assert sorted(rows) == [p.stem for p in bundled_models()]
    for path in bundled_models():
        ours = len(_our_nodes(path))
        name, nodes, rewritten, same, custom_ms, converted_ms = rows[path.stem]
        assert (int(nodes), int(rewritten), same) == (ours, ours, "yes"), rows[path.stem]
        assert float(custom_ms) > 0 and float(converted_ms) > 0
    assert proc.stdout.splitlines()[-1].startswith("outputs identical:")


def _expected_report(path: Path) -> list[str]:
    counts = Counter((n.op_type, _mode(n)) for n in _our_nodes(path))
    return sorted(f"{op}(mode={mode}): {count} rewritten" for (op, mode), count in counts.items())


def _assert_standard_expand_modes(path: Path) -> None:
    """No onnx_bcast node left, valid ONNX, and each output is x [3, 1] placed at axes 1, 2 of its shape."""
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert not [n for n in _all_nodes(model) if n.domain == DOMAIN]
    x = np.arange(3, dtype=np.float32).reshape(3, 1)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = {"bidirectional_out": (2, 3, 4), "numpy_out": (2, 3, 4), "explicit_out": (4, 3, 2),
                "pdpd_out": (2, 3, 5)}
    for meta, got in zip(session.get_outputs(), session.run(None, {"x": x}), strict=True):
        np.testing.assert_array_equal(got, np.broadcast_to(x[np.newaxis], expected[meta.name]))


@pytest.mark.parametrize("verify", [False, True])
def test_convert_reports_counts_and_writes_standard_onnx(tmp_path: Path, verify: bool) -> None:
    before = _sha256(EXPAND_MODES)
    out = tmp_path / "standard.onnx"
    proc = _cli("convert", EXPAND_MODES, "-o", out, *(["--verify"] if verify else []))
    assert proc.returncode == 0, proc.stderr
    suffix = " (verified: outputs identical)" if verify else ""
    lines = proc.stdout.splitlines()
    report = _expected_report(EXPAND_MODES)
    assert lines[:len(report)] == report and lines[-1] == f"wrote {out}{suffix}"
    # onnxsim's table: nodes per op type before and after (expand_modes: 4 of our Expand -> 4 standard Expand)
    assert [line.split() for line in lines[len(report):-2]] == [
        ["op", "type", "before", "after"], ["onnx_bcast.Expand", "4", "0"], ["Expand", "0", "4"]]
    # the summary: node counts (expand_modes holds its 4 Broadcast/Expand nodes only), checks and time
    assert re.fullmatch(r"4 nodes -> 4 nodes \(4 of ours rewritten, 0 run-time checks\), \d+\.\d\d s", lines[-2]), lines
    assert proc.stderr == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["standard.onnx"]
    _assert_standard_expand_modes(out)
    assert _sha256(EXPAND_MODES) == before


def _preview_numbers(line: str) -> list[float]:
    inside = line[line.rindex("[") + 1:line.rindex("]")]
    return [float(v) for v in inside.split(", ") if v != "..."]


def test_run_prints_each_output_with_given_input(tmp_path: Path) -> None:
    features = np.random.default_rng(7).standard_normal((1, 16, 50, 50)).astype(np.float32)
    np.save(tmp_path / "features.npy", features)
    bias = next(numpy_helper.to_array(t) for t in onnx.load(str(NCHW_BIAS)).graph.initializer if t.name == "bias")
    proc = _cli("run", NCHW_BIAS, "--input", "features=features.npy", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first, timing = proc.stdout.splitlines()
    assert first.startswith("biased: float32 [1, 16, 50, 50]  [")
    expected = (features + bias.reshape(1, 16, 1, 1)).reshape(-1)[:6]
    np.testing.assert_allclose(_preview_numbers(first), expected, rtol=1e-3)  # printed with 4 significant digits
    assert re.fullmatch(r"ran in \d+\.\d\d ms", timing)


def test_run_generates_inputs_for_symbolic_dims_and_a_bool() -> None:
    proc = _cli("run", MODELS_DIR / "runtime_shape_if.onnx", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("shifted: float32 [2, 8, 3, 4]  [")


def test_check_lists_our_nodes_and_says_ok() -> None:
    proc = _cli("check", EXPAND_MODES)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    nodes = _our_nodes(EXPAND_MODES)
    assert lines[0] == f"{len(nodes)} onnx_bcast node(s)"
    for node in nodes:
        assert any(line.startswith(f"{node.name}: Expand mode={_mode(node)}") for line in lines[1:-1]), node.name
    assert lines[-1].startswith("ok:")


# ------------------------------------------------------------------------------------------------------ help


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_help_of_each_subcommand_has_an_example(command: str) -> None:
    proc = _cli(command, "--help")
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"usage: onnx-bcast {command}")
    example = proc.stdout[proc.stdout.index("example:"):]
    assert f"onnx-bcast {command}" in example


# ---------------------------------------------------------------------------------------------------- errors


def test_missing_file_is_one_line_naming_it(tmp_path: Path) -> None:
    procs = _cli_all([("run", "missing.onnx"), ("check", "missing.onnx"),
                      ("convert", "missing.onnx", "-o", "out.onnx")], cwd=tmp_path)
    for proc in procs:
        _assert_one_line_error(proc, "missing.onnx")
        assert proc.stdout == ""
    assert list(tmp_path.iterdir()) == []


def _non_onnx_files(folder: Path) -> list[str]:
    data = NCHW_BIAS.read_bytes()
    files = {"text.onnx": b"this is not a model\n", "garbage.onnx": bytes(range(256)) * 3,
             "truncated.onnx": data[:len(data) // 2], "empty.onnx": b""}
    for name, content in files.items():
        (folder / name).write_bytes(content)
    return sorted(files)


def test_non_onnx_file_is_one_line_naming_it(tmp_path: Path) -> None:
    names = _non_onnx_files(tmp_path)
    before = {name: _sha256(tmp_path / name) for name in names}
    calls = [(cmd, name, *(["-o", f"out_{name}"] if cmd == "convert" else [])) for name in names
             for cmd in ("run", "check", "convert")]
    for call, proc in zip(calls, _cli_all(calls, cwd=tmp_path), strict=True):
        _assert_one_line_error(proc, call[1])
        assert "ONNX model" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == names  # convert wrote nothing
    assert {name: _sha256(tmp_path / name) for name in names} == before


def test_invalid_static_broadcast_fails_every_command(tmp_path: Path) -> None:
    bad = _invalid_model(tmp_path / "bad.onnx")
    before = _sha256(bad)
    calls = [("check", bad), ("run", bad), ("convert", bad, "-o", tmp_path / "out.onnx"),
             ("convert", bad, "-o", tmp_path / "out.onnx", "--verify")]
    check, *others = _cli_all(calls)
    _assert_one_line_error(check, "bad_bcast", "mode=numpy")
    assert check.stdout.splitlines() == ["1 onnx_bcast node(s)", "bad_bcast: Broadcast mode=numpy"]
    for proc in others:
        _assert_one_line_error(proc, "bad_bcast", "mode=numpy", "(2, 4)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx"]
    assert _sha256(bad) == before


def test_output_in_missing_folder_writes_nothing(tmp_path: Path) -> None:
    proc = _cli("convert", EXPAND_MODES, "-o", tmp_path / "nowhere" / "out.onnx")
    _assert_one_line_error(proc, str(tmp_path / "nowhere"))
    assert list(tmp_path.iterdir()) == []


def test_output_over_the_input_is_refused(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(EXPAND_MODES.read_bytes())
    before = _sha256(model)
    proc = _cli("convert", model, "-o", model)
    _assert_one_line_error(proc, str(model))
    assert _sha256(model) == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.onnx"]


@pytest.mark.parametrize("args", [
    [], ["frobnicate"], ["convert", "in.onnx"], ["run"], ["check"], ["run", "in.onnx", "--seed", "many"],
    ["check", "in.onnx", "--no-such-option"], ["demo", "extra"], ["convert", "in.onnx", "-o", "o.onnx", "--opset"],
], ids=lambda a: " ".join(a) or "nothing")
def test_usage_errors_exit_2(args: list[str], tmp_path: Path) -> None:
    proc = _cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc
    assert "usage: onnx-bcast" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    bad = _invalid_model(tmp_path / "bad.onnx")
    missing, invalid = _cli_all([("--debug", "run", "missing.onnx"), ("--debug", "convert", bad, "-o", "out.onnx")],
                                cwd=tmp_path)
    for proc, error in ((missing, "missing.onnx: no such file"), (invalid, "BroadcastError")):
        assert proc.returncode == 1, proc
        assert proc.stderr.startswith("Traceback (most recent call last):"), proc.stderr
        assert error in proc.stderr.strip().splitlines()[-1]


def _runtime_target_model(directory: Path) -> tuple[Path, Path, Path]:
    """Broadcast numpy of x [N,1] to a target fed at run time, with valid inputs saved beside it."""
    node = helper.make_node("Broadcast", ["x", "t"], ["y"], domain=DOMAIN, name="bcast", mode="numpy")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1]),
                                            helper.make_tensor_value_info("t", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
                              ir_version=10)
    path, t, x = directory / "rt.onnx", directory / "t.npy", directory / "x.npy"
    onnx.save(model, path)
    np.save(t, np.array([4, 2, 5], np.int64))
    np.save(x, np.ones((2, 1), np.float32))
    return path, t, x


def test_convert_verify_checks_that_inputs_the_original_rejects_fail_in_the_converted_model(tmp_path: Path) -> None:
    path, t, x = _runtime_target_model(tmp_path)
    guarded = _cli("convert", path, "-o", tmp_path / "guarded.onnx", "--verify", "--input", f"t={t}",
                   "--input", f"x={x}")
    assert guarded.returncode == 0, guarded.stderr
    assert "inputs the original rejects fail in the converted model too" in guarded.stdout, guarded.stdout
    # without guards the converted model returns a value for t = [4, 1, 5] (Expand is bidirectional)
    bare = onnx_bcast.convert(onnx.load(path), guards=False)
    with pytest.raises(onnx_bcast.verify.VerificationError, match=r"rejects t\[1\] = 1.*returns a value"):
        onnx_bcast.verify.verify_equal(onnx.load(path), bare, {"t": np.load(t), "x": np.load(x)})
    # --no-guards writes the bare graph and verifies values only
    no_guards = _cli("convert", path, "-o", tmp_path / "bare.onnx", "--verify", "--no-guards", "--input", f"t={t}",
                     "--input", f"x={x}")
    assert no_guards.returncode == 0, no_guards.stderr
    written = onnx.load(tmp_path / "bare.onnx")
    assert not any("/guard: " in n.name for n in written.graph.node)
    assert any("/guard: " in n.name for n in onnx.load(tmp_path / "guarded.onnx").graph.node)


def test_run_with_the_native_backend(tmp_path: Path) -> None:
    path, t, x = _runtime_target_model(tmp_path)
    done = _cli("run", path, "--backend", "native", "--input", f"t={t}", "--input", f"x={x}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("y: float32 [4, 2, 5]"), done.stdout
    np.save(tmp_path / "bad.npy", np.array([4, 3, 5], np.int64))
    bad = _cli("run", path, "--backend", "native", "--input", f"t={tmp_path / 'bad.npy'}", "--input", f"x={x}")
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [
        "onnx-bcast run: Broadcast(mode=numpy) node 'bcast': data dim 0 (size 2) cannot be broadcast to target dim 1 "
        "(size 3); data (2, 1), target (4, 3, 5)"], bad.stderr


def test_version_module_alias_and_ops_listing() -> None:
    version, alias, ops = _cli_all([["--version"], ["ops"], ["ops"]])
    assert version.returncode == 0 and re.fullmatch(
        r"onnx-bcast \d+\.\d+\.\d+ \(onnx(-weekly)? \S+, onnxruntime(-[a-z]+)? \S+"
        r"( with onnxruntime-ep-\S+ \S+(, onnxruntime-ep-\S+ \S+)*)?, onnxruntime-extensions \S+, numpy \S+, "
        r"openvino (\S+|not installed)\)\n", version.stdout), version.stdout  # one line; tests/test_installed_builds.py
    module = subprocess.run([sys.executable, "-m", "onnx_bcast", "ops"], capture_output=True, text=True, timeout=120)
    assert module.returncode == 0 and module.stdout == ops.stdout
    lines = ops.stdout.splitlines()
    assert lines[0] == "domain onnx_bcast, version 1"
    assert "Broadcast(data, target_shape, axes_mapping?)  mode: string = 'numpy' (numpy | explicit | bidirectional " \
           "| pdpd); axis: int = -1" in lines
    assert "BroadcastV0(arg, shape_input?, broadcast_axes_input?)  shape: ints = required; broadcast_axes: ints = " \
           "required" in lines
    assert "Mod(A, B)  auto_broadcast: string = 'numpy' (none | numpy | pdpd); axis: int = -1; fmod: int = 0" in lines
    assert "Unbroadcast(delta, a_shape, b_shape) -> (a_grad, b_grad)  auto_broadcast: string = 'numpy' (none | " \
           "numpy | pdpd); axis: int = -1" in lines
    assert len(lines) == 1 + 4 + 16 + 3


def test_convert_of_a_large_model_shows_progress_and_names_the_source_of_each_node(tmp_path: Path) -> None:
    count = 6000
    nodes = [helper.make_node("BroadcastV0", [f"x{i}"], [f"y{i}"], domain=DOMAIN, name=f"v0_{i}", shape=[2, 3],
                              broadcast_axes=[0]) for i in range(count)]
    graph = helper.make_graph(nodes, "many", [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [3])
                                              for i in range(count)],
                              [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [2, 3]) for i in range(count)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
                              ir_version=10)
    onnx.save(model, tmp_path / "many.onnx")
    proc = _cli("convert", tmp_path / "many.onnx", "-o", tmp_path / "out.onnx")
    assert proc.returncode == 0, proc.stderr
    assert "converting: 1000/6000 nodes of ours" in proc.stderr and proc.stderr.endswith("6000/6000 nodes of ours\n")
    converted = onnx.load(tmp_path / "out.onnx")
    assert converted.graph.node[0].doc_string == "onnx-bcast: from BroadcastV0 node 'v0_0', rule BroadcastV0Rule"
    assert all(n.doc_string.startswith("onnx-bcast: from BroadcastV0 node 'v0_") for n in converted.graph.node)


# ------------------------------------------------------------------------------------------------ run --runtime


def _cli_hiding_openvino(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The command in an interpreter where ``import openvino`` fails, as if it were not installed."""
    code = ("import sys; sys.modules['openvino'] = None\nfrom onnx_bcast.cli.main import main\n"
            "sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=300)


def test_run_with_openvino_prints_what_onnx_runtime_prints(tmp_path: Path) -> None:
    pytest.importorskip("openvino")
    features = np.random.default_rng(5).standard_normal((1, 16, 50, 50)).astype(np.float32)
    np.save(tmp_path / "features.npy", features)
    given = {NCHW_BIAS: ("--input", f"features={tmp_path / 'features.npy'}"), EXPAND_MODES: ("--seed", "4")}
    procs = _cli_all([("run", model, "--runtime", runtime, *extra) for model, extra in given.items()
                      for runtime in ("onnxruntime", "openvino")])
    for ort_run, ov_run in (procs[0:2], procs[2:4]):
        assert ort_run.returncode == ov_run.returncode == 0, (ort_run.stderr, ov_run.stderr)
        ort_lines, ov_lines = ort_run.stdout.splitlines(), ov_run.stdout.splitlines()
        assert ov_lines[:-1] == ort_lines[:-1] and len(ov_lines) > 1  # every output: name, type, shape, values
        assert re.fullmatch(r"ran in \d+\.\d\d ms", ov_lines[-1])
    expected = (features + next(numpy_helper.to_array(t) for t in onnx.load(str(NCHW_BIAS)).graph.initializer
                                if t.name == "bias").reshape(1, 16, 1, 1)).reshape(-1)[:6]
    np.testing.assert_allclose(_preview_numbers(procs[1].stdout.splitlines()[0]), expected, rtol=1e-3)


def test_run_with_openvino_names_the_invalid_node(tmp_path: Path) -> None:
    pytest.importorskip("openvino")
    bad = _invalid_model(tmp_path / "bad.onnx")
    path, t, x = _runtime_target_model(tmp_path)
    np.save(tmp_path / "bad_t.npy", np.array([4, 3, 5], np.int64))
    static, run_time = _cli_all([("run", bad, "--runtime", "openvino"),
                                 ("run", path, "--runtime", "openvino", "--input", f"t={tmp_path / 'bad_t.npy'}",
                                  "--input", f"x={x}")])
    _assert_one_line_error(static, "onnx-bcast run: Broadcast(mode=numpy) node 'bad_bcast': data dim 0 (size 3)")
    _assert_one_line_error(run_time, "onnx-bcast run: RuntimeError: OpenVINO: Input shape dimension equal 2 cannot be "
                                     "broadcasted (numpy mode) to 3")


def test_run_with_openvino_missing_names_the_extra() -> None:
    proc = _cli_hiding_openvino("run", NCHW_BIAS, "--runtime", "openvino")
    _assert_one_line_error(proc)
    assert proc.stderr == ("onnx-bcast run: onnx_bcast.openvino needs OpenVINO, which is not installed: "
                           "pip install 'onnx-bcast[openvino]'\n")
    assert proc.stdout == ""
    default = _cli_hiding_openvino("run", NCHW_BIAS)  # the default runtime never needs it
    assert default.returncode == 0 and default.stdout.startswith("biased: float32 [1, 16, 50, 50]"), default.stderr


def test_check_shows_each_nodes_inputs_as_known() -> None:
    """``check`` prints each node's constant inputs (axes_mapping, the target) and its data's static shape, read
    from the bundled model's own initializers: bias [16] mapped to axis 1 of [1, 16, 50, 50]."""
    path = Path(__file__).resolve().parent.parent / "models" / "nchw_bias_explicit.onnx"
    model = onnx.load(path)
    values = {t.name: numpy_helper.to_array(t).tolist() for t in model.graph.initializer}
    node = next(n for n in model.graph.node if n.domain == "onnx_bcast")
    out = subprocess.run([sys.executable, "-m", "onnx_bcast", "check", str(path)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    line = next(x for x in out if x.startswith(f"{node.name}:"))
    assert f"axes_mapping {values[node.input[2]]}" in line and "axes_mapping [1]" in line, line
    assert "data (16,)" in line, line
