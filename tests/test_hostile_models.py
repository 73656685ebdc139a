"""Hostile model files through the CLI (``convert``, ``check``, ``run``) and the Python API: a one-line error, no
crash, nothing written. CLI runs are subprocesses; API runs happen in a child process (an abort must not kill pytest).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_bcast.cli import main as cli
from onnx_bcast.model import files
from tests.test_ort_failures import REPO_ROOT, run_child

vi = helper.make_tensor_value_info
F32, I64 = TensorProto.FLOAT, TensorProto.INT64
X3 = [vi("x", F32, [3])]
Y = [vi("y", F32, None)]
T23 = numpy_helper.from_array(np.array([2, 3], np.int64), "t")
TIMEOUT = 120


def _model(nodes: list, inputs: list, inits: tuple = (), our_version: int = 1) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "hostile_graph", inputs, Y, initializer=list(inits))
    imports = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", our_version)]
    return helper.make_model(graph, opset_imports=imports, ir_version=10)


def _node(op: str, inputs: list[str], **attrs: object) -> onnx.NodeProto:
    return helper.make_node(op, inputs, ["y"], domain="onnx_bcast", name="hostile_node", **attrs)


def _external(location: str) -> onnx.ModelProto:
    """A model whose data tensor 'w' lives in an external file at ``location``."""
    weight = numpy_helper.from_array(np.ones(3, np.float32), "w")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "12")):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    return _model([_node("Broadcast", ["w", "t"])], [], (weight, T23))


@dataclass(frozen=True)
class Hostile:
    """One hostile model file, the fragments its error must contain, and known failures per path."""

    name: str
    fragments: tuple[str, ...]
    xfail: dict[str, str] = field(default_factory=dict)  # path ("convert", "check", "run", "api") -> reason


HOSTILE = [
    Hostile("truncated", ("not",)),
    Hostile("empty_file", ("not an ONNX model",)),
    Hostile("not_onnx", ("not",)),
    Hostile("float_target_init", ("hostile_node", "target_shape", "integer")),
    Hostile("float_target_input", ("hostile_node", "target_shape", "integer")),
    Hostile("rank2_target_init", ("hostile_node", "target_shape", "1-D")),
    Hostile("rank2_target_input", ("hostile_node", "target_shape", "1-D")),
    Hostile("unknown_mode", ("Broadcast(mode=sideways)", "hostile_node", "unknown mode 'sideways'")),
    Hostile("unknown_auto_broadcast", ("Add", "hostile_node", "unknown auto_broadcast 'sideways'")),
    Hostile("mode_int", ("Broadcast", "hostile_node", "mode", "int")),
    Hostile("axis_string", ("Broadcast", "hostile_node", "axis")),
    Hostile("axes_float", ("BroadcastV0", "hostile_node", "broadcast_axes")),
    Hostile("zero_inputs", ("Broadcast", "hostile_node", "got 0")),
    Hostile("four_inputs", ("Broadcast", "hostile_node", "got 4")),
    Hostile("like_one_input", ("BroadcastLikeV0", "hostile_node", "got 1")),
    Hostile("our_opset_2", ("opset version 2", "onnx_bcast")),
    Hostile("external_parent", ("outside",)),
    Hostile("external_absolute", ("/etc/hostname",)),
    Hostile("external_symlink", ("data.bin",)),
    Hostile("over_2gib", ("over protobuf's limit",)),
]
BY_NAME = {h.name: h for h in HOSTILE}


def _write_models(folder: Path) -> dict[str, Path]:
    """Every hostile model in its own folder (so external data and hashes are per case)."""
    float_t = numpy_helper.from_array(np.array([2.0, 3.0], np.float32), "t")
    rank2_t = numpy_helper.from_array(np.array([[2, 3]], np.int64), "t")
    add = helper.make_node("Add", ["x", "x"], ["y"], domain="onnx_bcast", name="hostile_node",
                           auto_broadcast="sideways")
    models = {
        "float_target_init": _model([_node("Broadcast", ["x", "t"])], X3, (float_t,)),
        "float_target_input": _model([_node("Broadcast", ["x", "t"])], X3 + [vi("t", F32, [2])]),
        "rank2_target_init": _model([_node("Broadcast", ["x", "t"])], X3, (rank2_t,)),
        "rank2_target_input": _model([_node("Broadcast", ["x", "t"])], X3 + [vi("t", I64, [1, 2])]),
        "unknown_mode": _model([_node("Broadcast", ["x", "t"], mode="sideways")], X3, (T23,)),
        "unknown_auto_broadcast": _model([add], X3),
        "mode_int": _model([_node("Broadcast", ["x", "t"], mode=3)], X3, (T23,)),
        "axis_string": _model([_node("Broadcast", ["x", "t"], mode="pdpd", axis="one")], X3, (T23,)),
        "axes_float": _model([_node("BroadcastV0", ["x"], shape=[2, 3], broadcast_axes=[0.0])], X3),
        "zero_inputs": _model([_node("Broadcast", [])], X3),
        "four_inputs": _model([_node("Broadcast", ["x", "t", "t", "t"])], X3, (T23,)),
        "like_one_input": _model([_node("BroadcastLikeV0", ["x"])], X3),
        "our_opset_2": _model([_node("Broadcast", ["x", "t"])], X3, (T23,), our_version=2),
        "external_parent": _external("../x.bin"),
        "external_absolute": _external("/etc/hostname"),
        "external_symlink": _external("data.bin"),
    }
    paths = {}
    for name, model in models.items():
        (folder / name).mkdir()
        paths[name] = folder / name / "model.onnx"
        onnx.save(model, paths[name])
    (folder / "x.bin").write_bytes(np.ones(3, np.float32).tobytes())
    (folder / "external_symlink" / "data.bin").symlink_to(folder / "x.bin")
    valid = models["unknown_mode"].SerializeToString()
    for name, content in (("truncated", valid[: len(valid) // 3]), ("empty_file", b""),
                          ("not_onnx", b"PK\x03\x04 this is a zip header, then text\n")):
        (folder / name).mkdir()
        paths[name] = folder / name / "model.onnx"
        paths[name].write_bytes(content)
    (folder / "over_2gib").mkdir()
    paths["over_2gib"] = folder / "over_2gib" / "model.onnx"
    paths["over_2gib"].write_bytes(valid)
    os.truncate(paths["over_2gib"], files.PROTOBUF_LIMIT + 2)  # sparse: no disk blocks, never read
    return paths


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _write_models(tmp_path_factory.mktemp("hostile"))


def _snapshot(folder: Path) -> dict[str, str]:
    """Names and content hashes of a folder's files (links not followed; sparse files by size only)."""
    snap = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            snap[str(path)] = "link:" + os.readlink(path)
        elif path.is_file():
            size = path.stat().st_size
            snap[str(path)] = f"size:{size}" if size > files.PROTOBUF_LIMIT else hashlib.sha256(
                path.read_bytes()).hexdigest()
    return snap


def _assert_fragments(name: str, message: str) -> None:
    for fragment in BY_NAME[name].fragments:
        assert fragment.lower() in message.lower(), f"{fragment!r} not in {message!r}"


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    return subprocess.run([sys.executable, "-m", "onnx_bcast", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, cwd=REPO_ROOT)


def _params(paths: tuple[str, ...]) -> list:
    params = []
    for case in HOSTILE:
        for path in paths:
            marks = [pytest.mark.xfail(strict=True, reason=case.xfail[path])] if path in case.xfail else []
            params.append(pytest.param(case.name, path, marks=marks, id=f"{case.name}-{path}"))
    return params


@pytest.mark.parametrize(("name", "command"), _params(("convert", "check", "run")))
def test_cli_one_line_error_nothing_written(models: dict[str, Path], tmp_path: Path, name: str, command: str) -> None:
    source = models[name]
    before = _snapshot(source.parent.parent)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = [command, str(source)] + (["-o", str(out_dir / "converted.onnx")] if command == "convert" else [])
    proc = _cli(*args)
    assert proc.returncode == 1, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    prefix = "error: " if command == "check" and not lines[0].startswith("onnx-bcast") else f"onnx-bcast {command}: "
    assert lines[0].startswith(prefix), lines
    _assert_fragments(name, lines[0])
    assert list(out_dir.iterdir()) == []
    assert _snapshot(source.parent.parent) == before


API_CHILD = '''
import sys
import onnx_bcast
from onnx_bcast.model import files
from onnx_bcast.convert import convert
from onnx_bcast.random_inputs import random_feeds

def session_then_run(path):
    session = onnx_bcast.InferenceSession(path)
    return session.run(None, random_feeds(session))[0]

records = {}
for name, path in PATHS.items():
    if name == "over_2gib":  # a real 2 GiB read would take seconds: the same check on a small file
        files.PROTOBUF_LIMIT = 100
        path = PATHS["unknown_mode"]
    records[name] = {"api_session": attempt(lambda: session_then_run(path)),
                     "api_convert": attempt(lambda: len(convert(path).graph.node))}
    files.PROTOBUF_LIMIT = 2 * 1024**3 - 1
emit(records)
'''


@pytest.fixture(scope="module")
def api_records(models: dict[str, Path]) -> dict:
    before = _snapshot(next(iter(models.values())).parent.parent)
    paths = {name: str(path) for name, path in models.items()}
    records = run_child(f"PATHS = {json.dumps(paths)}\n" + API_CHILD)
    assert _snapshot(next(iter(models.values())).parent.parent) == before
    return records


CLEAR_TYPES = {"BroadcastError", "UnsafeModel", "ModelTooLarge", "DecodeError", "ValidationError", "InferenceError"}


@pytest.mark.xdist_group("hostile_models_api_records")  # api_records: one child for them all, once per worker
@pytest.mark.parametrize(("name", "path"), _params(("api_session", "api_convert")))
def test_api_clear_error(api_records: dict, name: str, path: str) -> None:
    record = api_records[name][path]
    assert not record["ok"], f"accepted: {record}"
    assert record["type"] in CLEAR_TYPES or record["module"].startswith("onnxruntime"), record
    first = record["message"].strip().splitlines()[0] if record["message"].strip() else ""
    if record["type"] in ("BroadcastError", "UnsafeModel", "ModelTooLarge"):
        _assert_fragments(name, first)
    else:
        assert first, record


# ------------------------------------------------------------------------------------------------ over 2 GiB on save


def _big_weight_model() -> onnx.ModelProto:
    weight = numpy_helper.from_array(np.arange(5000, dtype=np.float32), "w")
    node = _node("Broadcast", ["w", "t"])
    target = numpy_helper.from_array(np.array([2, 5000], np.int64), "t")
    return _model([node], [], (weight, target))


def test_convert_over_limit_writes_external_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture) -> None:
    """A result over protobuf's limit (lowered here: no 2 GiB model in memory) is saved with external data."""
    source, target = tmp_path / "in" / "model.onnx", tmp_path / "out" / "converted.onnx"
    source.parent.mkdir()
    target.parent.mkdir()
    onnx.save(_big_weight_model(), source)
    monkeypatch.setattr(files, "PROTOBUF_LIMIT", 10_000)
    monkeypatch.setattr(files, "_check_file_size", lambda path: None)  # the input is over the lowered limit too
    assert cli.main(["convert", str(source), "-o", str(target)]) == 0
    assert sorted(p.name for p in target.parent.iterdir()) == ["converted.onnx", "converted.onnx.data"]
    assert target.stat().st_size < 10_000
    converted = onnx.load(str(target))
    weights = {t.name: numpy_helper.to_array(t) for t in converted.graph.initializer}
    np.testing.assert_array_equal(weights["w"], np.arange(5000, dtype=np.float32))
    assert all(n.domain != "onnx_bcast" for n in converted.graph.node)
    capsys.readouterr()


def test_convert_still_over_limit_without_tensors_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture) -> None:
    source, out_dir = tmp_path / "model.onnx", tmp_path / "out"
    out_dir.mkdir()
    onnx.save(_big_weight_model(), source)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    monkeypatch.setattr(files, "PROTOBUF_LIMIT", 50)
    monkeypatch.setattr(files, "_check_file_size", lambda path: None)
    assert cli.main(["convert", str(source), "-o", str(out_dir / "converted.onnx")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "over protobuf's limit of 50 bytes; nothing written" in err[0], err
    assert list(out_dir.iterdir()) == []
    assert hashlib.sha256(source.read_bytes()).hexdigest() == digest


def test_a_file_cut_right_after_the_graph_is_not_a_model(tmp_path: Path) -> None:
    """Protobuf parses a file that ends after the graph field: it has no opset import, so it is refused."""
    source = onnx.load(str(Path(REPO_ROOT) / "models" / "nchw_bias_explicit.onnx"))
    cut = onnx.ModelProto(ir_version=source.ir_version)
    cut.graph.CopyFrom(source.graph)
    path = tmp_path / "cut.onnx"
    path.write_bytes(cut.SerializeToString())
    with pytest.raises(files.UnsafeModel, match="not an ONNX model .no opset import"):
        files.load_model_file(path)
    command = [sys.executable, "-m", "onnx_bcast", "convert", str(path), "-o", str(tmp_path / "o.onnx")]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "no opset import" in proc.stderr
    assert not (tmp_path / "o.onnx").exists()
