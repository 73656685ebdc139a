"""The CLI's messages as issue 24 found them wanting: each names the path, option or input at fault, in one line."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from onnx_bcast.cli import main as cli
from onnx_bcast.model import files
from onnx_bcast.models import MODELS_DIR

DOMAIN = "onnx_bcast"
EXPAND_MODES = MODELS_DIR / "expand_modes.onnx"
NCHW_BIAS = MODELS_DIR / "nchw_bias_explicit.onnx"
SHAPE_IF = MODELS_DIR / "runtime_shape_if.onnx"


def _cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "onnx_bcast", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_line_error(proc: subprocess.CompletedProcess, status: int = 1) -> str:
    assert proc.returncode == status, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def _runtime_target(folder: Path) -> Path:
    """Broadcast numpy of x [a, b] to a target t [3] fed at run time: random inputs hardly ever fit."""
    node = helper.make_node("Broadcast", ["x", "t"], ["y"], domain=DOMAIN, name="bcast", mode="numpy")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b"]),
                                            helper.make_tensor_value_info("t", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
                              ir_version=10)
    onnx.save(model, folder / "runtime_target.onnx")
    return folder / "runtime_target.onnx"


# ------------------------------------------------------------------------------------------------ paths


@pytest.mark.parametrize("command", ["run", "check", "convert"])
def test_a_directory_given_as_the_model_is_called_a_directory(command: str, tmp_path: Path) -> None:
    (tmp_path / "folder.onnx").mkdir()
    extra = ["-o", "out.onnx"] if command == "convert" else []
    line = _one_line_error(_cli(command, "folder.onnx", *extra, cwd=tmp_path))
    assert line == f"onnx-bcast {command}: folder.onnx: is a directory, not an ONNX model file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.onnx"]


def test_output_that_is_a_directory_is_named(tmp_path: Path) -> None:
    source = tmp_path / "model.onnx"
    source.write_bytes(EXPAND_MODES.read_bytes())
    before = _sha256(source)
    (tmp_path / "out").mkdir()
    line = _one_line_error(_cli("convert", "model.onnx", "-o", "out", cwd=tmp_path))
    assert line.startswith("onnx-bcast convert: out: is a directory; give the path of the file to write"), line
    assert ".tmp" not in line and "Error" not in line
    assert list((tmp_path / "out").iterdir()) == [] and _sha256(source) == before


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder nobody can write in, root included (chattr +i), writable again at the end."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    immutable = subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
    try:
        writable = (folder / "probe").open("w")
    except OSError:
        writable = None
    if writable is not None:
        writable.close()
        (folder / "probe").unlink()
        pytest.skip("cannot make a read-only folder here (root without chattr)")
    yield folder
    if immutable:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    folder.chmod(0o755)


def test_read_only_output_folder_is_one_line_naming_the_output(read_only_folder: Path, tmp_path: Path) -> None:
    source = tmp_path / "model.onnx"
    source.write_bytes(EXPAND_MODES.read_bytes())
    before = _sha256(source)
    line = _one_line_error(_cli("convert", "model.onnx", "-o", "ro/out.onnx", cwd=tmp_path))
    assert line.startswith("onnx-bcast convert: ro/out.onnx: cannot write"), line
    assert ".tmp" not in line and "Error" not in line
    assert list(read_only_folder.iterdir()) == [] and _sha256(source) == before


def test_a_failed_write_names_the_output_not_the_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture) -> None:
    """The write itself failing (the folder became read-only after the check): still the user's path."""
    source = tmp_path / "model.onnx"
    source.write_bytes(EXPAND_MODES.read_bytes())
    before = _sha256(source)

    def refuse(*args: object, **kwargs: object) -> str:
        raise PermissionError(13, "Permission denied", str(tmp_path / ".out.onnx.84_6u2im.tmp"))

    monkeypatch.setattr(files, "write_graph", refuse)
    assert cli.main(["convert", str(source), "-o", str(tmp_path / "out.onnx")]) == 1
    err = capsys.readouterr().err
    assert err == f"onnx-bcast convert: {tmp_path / 'out.onnx'}: cannot write the model (permission denied); " \
                  "nothing written\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"] and _sha256(source) == before


# ------------------------------------------------------------------------------------------------ messages


def test_onnx_runtime_multi_line_message_is_kept_whole(tmp_path: Path) -> None:
    np.save(tmp_path / "f8.npy", np.ones((1, 8, 50, 50), np.float32))
    line = _one_line_error(_cli("run", NCHW_BIAS, "--input", "features=f8.npy", cwd=tmp_path))
    assert "Got invalid dimensions for input: features" in line
    assert "index: 1 Got: 8 Expected: 16" in line, line


def test_verify_on_invalid_random_inputs_names_them_and_the_option(tmp_path: Path) -> None:
    model = _runtime_target(tmp_path)
    np.save(tmp_path / "t.npy", np.array([4, 2, 5], np.int64))
    line = _one_line_error(_cli("convert", model, "-o", "out.onnx", "--verify", cwd=tmp_path))
    assert line.startswith("onnx-bcast convert: --verify needs inputs the original model accepts, and it rejects "
                           "the random inputs 'x', 't' (--seed 0): Broadcast(mode=numpy) node 'bcast': "), line
    assert line.endswith("give them with --input NAME=FILE.npy (a .npy file of valid values)."), line
    one = _one_line_error(_cli("convert", model, "-o", "out.onnx", "--verify", "--input", "t=t.npy", cwd=tmp_path))
    assert "rejects the random input 'x' (--seed 0)" in one and one.endswith(
        "give it with --input x=FILE.npy (a .npy file of valid values)."), one
    assert not (tmp_path / "out.onnx").exists()


def test_verify_with_some_inputs_given_makes_the_others() -> None:
    """--input for some inputs only: the rest are random (it used to fail: 'Required inputs are missing')."""
    proc = _cli("convert", SHAPE_IF, "-o", "/dev/null", "--verify", "--input", "use_bias=/dev/null")
    assert proc.returncode == 1 and "use_bias" in proc.stderr  # /dev/null is no .npy: named, not a crash
    with tempfile.TemporaryDirectory() as folder:
        np.save(Path(folder) / "b.npy", np.array(True))
        done = _cli("convert", SHAPE_IF, "-o", Path(folder) / "o.onnx", "--verify", "--input",
                    f"use_bias={Path(folder) / 'b.npy'}")
    assert done.returncode == 0 and "(verified: outputs identical" in done.stdout, done.stderr


def test_run_says_the_failing_inputs_were_random(tmp_path: Path) -> None:
    model = _runtime_target(tmp_path)
    line = _one_line_error(_cli("run", model, "--seed", "0"))
    assert line.startswith("onnx-bcast run: Broadcast(mode=numpy) node 'bcast': ")
    assert line.endswith(". The inputs 'x', 't' were random (--seed 0): give them with --input NAME=FILE.npy or "
                         "fix their shapes with --input-shapes."), line


def test_check_errors_start_like_every_other_command(tmp_path: Path) -> None:
    node = helper.make_node("Broadcast", ["x", "t"], ["y"], domain=DOMAIN, name="bad_bcast", mode="sideways")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[onnx.numpy_helper.from_array(np.array([2, 3], np.int64), "t")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]),
              tmp_path / "bad.onnx")
    line = _one_line_error(_cli("check", tmp_path / "bad.onnx"))
    assert line.startswith("onnx-bcast check: Broadcast(mode=sideways) node 'bad_bcast'"), line


# ------------------------------------------------------------------------------------------------ usage


@pytest.mark.parametrize(("args", "option"), [
    (["convert", str(EXPAND_MODES), "-o", "o.onnx", "--input", "x=x.npy"], "--input"),
    (["convert", str(EXPAND_MODES), "-o", "o.onnx", "--input-shapes", "x:[3,1]"], "--input-shapes"),
    (["convert", str(EXPAND_MODES), "-o", "o.onnx", "--seed", "3"], "--seed"),
    (["run", str(EXPAND_MODES), "--runtime", "openvino", "--backend", "native"], "--backend"),
    (["run", str(EXPAND_MODES), "--seed", "-3"], "--seed"),
    (["run", str(EXPAND_MODES), "--input-shapes", "x:3,1"], "--input-shapes"),
    (["run", str(EXPAND_MODES), "-q", "-v"], "-v/--verbose: not allowed with argument -q/--quiet"),
], ids=["convert-input", "convert-input-shapes", "convert-seed", "openvino-backend", "seed-negative",
        "input-shapes-syntax", "quiet-verbose"])
def test_ignored_or_invalid_options_are_usage_errors_naming_the_option(args: list[str], option: str,
                                                                       tmp_path: Path) -> None:
    proc = _cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"onnx-bcast {args[0]}: error: argument {option}"), proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_debug_quiet_and_verbose_after_the_subcommand(tmp_path: Path) -> None:
    debug = _cli("run", "missing.onnx", "--debug", cwd=tmp_path)
    assert debug.returncode == 1 and debug.stderr.startswith("Traceback (most recent call last):"), debug.stderr
    assert debug.stderr.strip().splitlines()[-1].endswith("missing.onnx: no such file")
    quiet = _cli("convert", EXPAND_MODES, "-o", "out.onnx", "-q", cwd=tmp_path)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "") and (tmp_path / "out.onnx").exists()


# ------------------------------------------------------------------------------------------------ -q / -v


def test_quiet_prints_errors_only(tmp_path: Path) -> None:
    for args in (["-q", "convert", EXPAND_MODES, "-o", "a.onnx", "--verify"], ["run", NCHW_BIAS, "-q"],
                 ["check", EXPAND_MODES, "--quiet"], ["-q", "ops"]):
        proc = _cli(*args, cwd=tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), (args, proc)
    failed = _cli("-q", "run", "missing.onnx", cwd=tmp_path)
    assert _one_line_error(failed) == "onnx-bcast run: missing.onnx: no such file" and failed.stdout == ""


def test_verbose_logs_from_the_library_loggers(tmp_path: Path) -> None:
    info = _cli("convert", SHAPE_IF, "-o", "out.onnx", "--verify", "-v", cwd=tmp_path)
    assert info.returncode == 0, info.stderr
    assert f"INFO onnx_bcast.model.files: read {SHAPE_IF}: IR version" in info.stderr
    assert "INFO onnx_bcast.verify: verifying on inputs features [2, 8, 3, 4] (random), use_bias [] (random)" \
           in info.stderr
    assert "INFO onnx_bcast.model.files: wrote out.onnx" in info.stderr and "DEBUG" not in info.stderr
    assert info.stdout.splitlines()[-1].startswith("wrote out.onnx (verified")
    debug = _cli("-vv", "run", SHAPE_IF, cwd=tmp_path)
    assert debug.returncode == 0 and "INFO onnx_bcast.cli.main: random input features: float32 [2, 8, 3, 4] (seed 0)" \
        in debug.stderr, debug.stderr


# ------------------------------------------------------------------------------------------------ progress


def test_progress_in_a_log_has_no_carriage_return(tmp_path: Path) -> None:
    count = 5000  # the counter shows from 5000 nodes of ours
    nodes = [helper.make_node("BroadcastV0", ["x"], [f"y{i}"], domain=DOMAIN, name=f"v0_{i}", shape=[2, 3],
                              broadcast_axes=[0]) for i in range(count)]
    graph = helper.make_graph(nodes, "many", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [2, 3]) for i in range(count)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]),
              tmp_path / "many.onnx")
    with (tmp_path / "log.txt").open("wb") as log:  # a file: bytes kept as written (no newline translation)
        proc = subprocess.run([sys.executable, "-m", "onnx_bcast", "convert", "many.onnx", "-o", "out.onnx"],
                              stdout=subprocess.DEVNULL, stderr=log, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0
    assert (tmp_path / "log.txt").read_bytes() == b"".join(
        f"converting: {done}/5000 nodes of ours\n".encode() for done in range(1000, 6000, 1000))


class _Stream(io.StringIO):
    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


def test_progress_rewrites_its_line_on_a_terminal_only() -> None:
    from onnx_bcast.cli.report import progress_printer

    for terminal in (True, False):
        stream = _Stream(terminal)
        show = progress_printer(stream)
        for done in (1000, 2000, 3000, 4000, 5000, 6000):
            show(done, 6000)
        show(10, 10)  # small models: nothing
        lines = [f"converting: {done}/6000 nodes of ours" for done in range(1000, 7000, 1000)]
        if terminal:
            assert stream.getvalue() == "".join(f"\r{line}" for line in lines) + "\n"
        else:
            assert stream.getvalue() == "".join(f"{line}\n" for line in lines)


# ------------------------------------------------------------------------------------------------ the API


def test_prepare_takes_a_path_as_convert_does() -> None:
    from_path = onnx_bcast.prepare(str(EXPAND_MODES))
    from_proto = onnx_bcast.prepare(onnx.load(str(EXPAND_MODES)))
    assert from_path.SerializeToString() == from_proto.SerializeToString()
    assert onnx_bcast.prepare(EXPAND_MODES).SerializeToString() == from_proto.SerializeToString()
    with pytest.raises(TypeError, match="expected an onnx.ModelProto, a path or serialized bytes, got int"):
        onnx_bcast.prepare(3)


def test_inference_session_on_a_directory_or_a_truncated_file_names_it(tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.onnx"
    data = NCHW_BIAS.read_bytes()
    truncated.write_bytes(data[:len(data) // 2])
    for path, what in ((tmp_path, "is a directory, not an ONNX model file"), (truncated, "not an ONNX model")):
        with pytest.raises(files.UnsafeModel) as caught:
            onnx_bcast.InferenceSession(path)
        assert str(caught.value).startswith(f"{path}: {what}"), caught.value
        assert isinstance(caught.value, ValueError)
    with pytest.raises(FileNotFoundError, match="missing.onnx: no such file"):
        onnx_bcast.InferenceSession(tmp_path / "missing.onnx")


# ------------------------------------------------------------------------------------------------ inputs, outputs


def test_input_shapes_fix_the_dynamic_dims_of_random_inputs(tmp_path: Path) -> None:
    done = _cli("run", SHAPE_IF, "--input-shapes", "features:[3,8,5,6]", "use_bias:[]")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("shifted: float32 [3, 8, 5, 6]  ["), done.stdout
    verified = _cli("convert", SHAPE_IF, "-o", "out.onnx", "--verify", "-v", "--input-shapes", "features:[3,8,5,6]",
                    cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert "verifying on inputs features [3, 8, 5, 6] (random)" in verified.stderr
    wrong = _one_line_error(_cli("run", SHAPE_IF, "--input-shapes", "features:[3,9,5,6]"))
    assert wrong == "onnx-bcast run: input 'features': shape [3, 9, 5, 6] does not fit the declared shape " \
                    "[N, 8, H, W] (only its unknown or named dims may be chosen)", wrong
    unknown = _one_line_error(_cli("run", SHAPE_IF, "--input-shapes", "nope:[1]"))
    assert unknown.startswith("onnx-bcast run: --input-shapes names ['nope'] are not inputs of the model"), unknown


def test_run_saves_its_outputs(tmp_path: Path) -> None:
    done = _cli("run", EXPAND_MODES, "--save-outputs", "outputs.npz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].endswith("; outputs saved in outputs.npz")
    saved = np.load(tmp_path / "outputs.npz")
    assert sorted(saved.files) == sorted(line.split(":")[0] for line in lines[:-1])
    for line in lines[:-1]:  # the values saved are those printed
        name = line.split(":")[0]
        assert line.startswith(f"{name}: {saved[name].dtype} {list(saved[name].shape)}  [")
    assert saved["numpy_out"].shape == (2, 3, 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs.npz"]
    missing = _one_line_error(_cli("run", EXPAND_MODES, "--save-outputs", "nowhere/o.npz", cwd=tmp_path))
    assert missing == "onnx-bcast run: --save-outputs nowhere/o.npz: folder 'nowhere' does not exist"
