"""Models with external data (issue 20): converted and run without reading, copying or serializing the weights.

Expected values come from numpy formulas written here and from plain ONNX Runtime on a hand-written standard model
that reads the same data file; never from onnx-bcast itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnx_bcast
from onnx_bcast.model import external_data, files
from onnx_bcast.model.mapped_weights import mapped_weights

DOMAIN = "onnx_bcast"
OURS = [helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]
STANDARD = [helper.make_opsetid("", 17)]
F32 = np.float32


def _refer(name: str, dtype: int, dims: list[int], location: str, offset: int, length: int) -> TensorProto:
    tensor = TensorProto(name=name, data_type=dtype, dims=dims, data_location=TensorProto.EXTERNAL)
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def _digests(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file's sha256 and modification time (ns)."""
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.iterdir()) if p.is_file()}


def _stats(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every file's size, modification time (ns) and inode: for files too big to hash in a test."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_ino) for p in sorted(folder.iterdir())}


class Layers:
    """x [2, C] through layers ``Add<pdpd>(h, Broadcast<explicit>(bias_i to [2, C], axes [1]))``, ``Mul(., W_i)``;
    every W_i [2, C] and bias_i [C] in ``weights.bin``, the target and axes of the broadcast too (exporters put
    small tensors there when their threshold is low). ``standard.onnx`` is the hand-written equivalent."""

    def __init__(self, folder: Path, c: int = 256, layers: int = 4, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.folder, self.c = folder, c
        self.weights = [rng.standard_normal((2, c)).astype(F32) for _ in range(layers)]
        self.biases = [rng.standard_normal(c).astype(F32) for _ in range(layers)]
        target, axes = np.array([2, c], np.int64), np.array([1], np.int64)
        tensors, offset, blob = {}, 0, b""
        for name, value, dtype in ([(f"W{i}", w, TensorProto.FLOAT) for i, w in enumerate(self.weights)]
                                   + [(f"bias{i}", b, TensorProto.FLOAT) for i, b in enumerate(self.biases)]
                                   + [("target", target, TensorProto.INT64), ("axes", axes, TensorProto.INT64)]):
            data = value.tobytes()
            tensors[name] = _refer(name, dtype, list(value.shape), "weights.bin", offset, len(data))
            blob += data
            offset += len(data)
        (folder / "weights.bin").write_bytes(blob)
        ours, standard, h = [], [], "x"
        for i in range(layers):
            ours += [helper.make_node("Broadcast", [f"bias{i}", "target", "axes"], [f"b{i}"], domain=DOMAIN,
                                      name=f"bcast{i}", mode="explicit"),
                     helper.make_node("Add", [h, f"b{i}"], [f"a{i}"], domain=DOMAIN, name=f"add{i}",
                                      auto_broadcast="pdpd"),
                     helper.make_node("Mul", [f"a{i}", f"W{i}"], [f"h{i}"])]
            standard += [helper.make_node("Add", [h, f"bias{i}"], [f"a{i}"]),
                         helper.make_node("Mul", [f"a{i}", f"W{i}"], [f"h{i}"])]
            h = f"h{i}"
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c])
        y = helper.make_tensor_value_info(h, TensorProto.FLOAT, [2, c])
        names = [f"W{i}" for i in range(layers)] + [f"bias{i}" for i in range(layers)]
        self.path, self.standard = folder / "ours.onnx", folder / "standard.onnx"
        onnx.save(helper.make_model(helper.make_graph(ours, "ours", [x], [y], [tensors[n] for n in
                                                                              [*names, "target", "axes"]]),
                                    opset_imports=OURS, ir_version=10), self.path)
        onnx.save(helper.make_model(helper.make_graph(standard, "standard", [x], [y], [tensors[n] for n in names]),
                                    opset_imports=STANDARD, ir_version=10), self.standard)
        self.x = rng.standard_normal((2, c)).astype(F32)

    def formula(self) -> np.ndarray:
        h = self.x
        for w, b in zip(self.weights, self.biases, strict=True):
            h = (h + b[None, :]) * w
        return h

    def plain(self) -> np.ndarray:
        session = ort.InferenceSession(str(self.standard), providers=["CPUExecutionProvider"])
        return session.run(None, {"x": self.x})[0]


@pytest.fixture()
def layers(tmp_path: Path) -> Layers:
    (tmp_path / "in").mkdir()
    return Layers(tmp_path / "in")


def _no_inline_weights(model: onnx.ModelProto) -> None:
    """Every float tensor still refers to its file: no weight bytes in the proto."""
    floats = [t for t in external_data.all_tensors(model) if t.data_type == TensorProto.FLOAT]
    assert floats and all(t.data_location == TensorProto.EXTERNAL and not t.raw_data for t in floats)


def test_the_hand_written_model_is_the_formula(layers: Layers) -> None:
    np.testing.assert_allclose(layers.plain(), layers.formula(), rtol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_sessions_run_from_the_file(layers: Layers, backend: str) -> None:
    before = _digests(layers.folder)
    session = onnx_bcast.InferenceSession(str(layers.path), backend=backend)
    np.testing.assert_array_equal(session.run(None, {"x": layers.x})[0], layers.plain())
    _no_inline_weights(session.prepared_model)
    assert _digests(layers.folder) == before


def test_the_folder_option_probe_says_what_was_measured() -> None:
    """onnxruntime 1.20 ignores ``session.model_external_initializers_file_folder_path``; 1.21 on honour it
    (docs/versions.md: measured on 1.20.0, 1.20.1, 1.21.1 and 1.22.1)."""
    version = tuple(int(part) for part in ort.__version__.split(".")[:2])
    assert external_data.ort_reads_folder_option() == (version >= (1, 21))


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_sessions_run_from_a_graph_file_where_the_option_is_ignored(layers: Layers, backend: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ONNX Runtime ignores the folder option (1.20; forced here on any version), the session is made from a
    hidden graph file beside the data, removed once made: the folder is left as it was, the working folder (which
    holds no weights) is not read, and the session runs after the file is gone."""
    monkeypatch.setattr(external_data, "ort_reads_folder_option", lambda: False)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    before = _digests(layers.folder)
    made: list[Path] = []
    real_graph_file = external_data.graph_file

    @contextlib.contextmanager
    def spy(model: onnx.ModelProto) -> Iterator[Path]:
        with real_graph_file(model) as path:
            made.append(path)
            yield path

    monkeypatch.setattr(external_data, "graph_file", spy)
    session = onnx_bcast.InferenceSession(str(layers.path), backend=backend)
    assert [p.parent for p in made] == [layers.folder.resolve()] and not made[0].exists()
    assert _digests(layers.folder) == before
    np.testing.assert_array_equal(session.run(None, {"x": layers.x})[0], layers.plain())
    _no_inline_weights(session.prepared_model)


def test_load_reads_only_the_small_int_constants(layers: Layers) -> None:
    model = files.load_model(layers.path)
    _no_inline_weights(model)
    read = {t.name: numpy_helper.to_array(t).tolist() for t in model.graph.initializer if t.raw_data}
    assert read == {"target": [2, layers.c], "axes": [1]}
    assert external_data.folder_of(model) == layers.folder.resolve()


def test_convert_never_reads_the_weights(layers: Layers) -> None:
    """The weights' file may even be missing: only the small constants' bytes are read (moved to another file)."""
    model = onnx.load(str(layers.path), load_external_data=False)
    small = {t.name: t for t in model.graph.initializer if t.name in ("target", "axes")}
    blob = layers.folder / "weights.bin"
    data = blob.read_bytes()
    offsets = {name: int(next(e.value for e in t.external_data if e.key == "offset")) for name, t in small.items()}
    start = min(offsets.values())
    (layers.folder / "small.bin").write_bytes(data[start:])
    for name, tensor in small.items():
        next(e for e in tensor.external_data if e.key == "location").value = "small.bin"
        next(e for e in tensor.external_data if e.key == "offset").value = str(offsets[name] - start)
    onnx.save(model, str(layers.path))
    blob.unlink()
    converted = onnx_bcast.convert(str(layers.path))
    assert all(n.domain != DOMAIN for n in converted.graph.node)
    _no_inline_weights(converted)


def test_external_values_are_never_read_from_the_working_folder(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A target left in its file (no small constant read) is unknown when converting: a file of the same name in
    the working folder, holding another target, is not read (onnx's helpers would look there). The converted model
    with its own data: ``Broadcast<numpy>(x [3], [2, 3])`` is numpy's ``broadcast_to``."""
    monkeypatch.setattr(external_data, "SMALL_CONSTANT_BYTES", -1)
    folder, elsewhere = tmp_path / "model", tmp_path / "cwd"
    folder.mkdir()
    elsewhere.mkdir()
    (folder / "t.bin").write_bytes(np.array([2, 3], np.int64).tobytes())
    (elsewhere / "t.bin").write_bytes(np.array([2, 4], np.int64).tobytes())  # x [3] cannot meet 4
    node = helper.make_node("Broadcast", ["x", "t"], ["y"], domain=DOMAIN, name="b", mode="numpy")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [_refer("t", TensorProto.INT64, [2], "t.bin", 0, 16)])
    onnx.save(helper.make_model(graph, opset_imports=OURS, ir_version=10), folder / "m.onnx")
    monkeypatch.chdir(elsewhere)
    x = np.array([1.0, 2.0, 3.0], F32)
    converted = onnx_bcast.convert(str(folder / "m.onnx"))
    assert converted.graph.initializer[0].data_location == TensorProto.EXTERNAL
    # ORT's own shape inference cannot read an external shape either: give it the data, read from the model's folder
    session = ort.InferenceSession(external_data.with_data(converted).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], np.broadcast_to(x, (2, 3)))


@pytest.mark.parametrize("where", ["same", "other"])
def test_cli_convert_refers_to_the_weights(layers: Layers, tmp_path: Path, where: str) -> None:
    """Same folder: the output refers to the input's data file itself; another folder: a copy of it. The input's
    files are untouched either way; the converted model runs to plain ORT's values."""
    out_dir = layers.folder if where == "same" else tmp_path / "out"
    out_dir.mkdir(exist_ok=True)
    target = out_dir / "converted.onnx"
    before = _digests(layers.folder)
    proc = subprocess.run([sys.executable, "-m", "onnx_bcast", "convert", str(layers.path), "-o", str(target),
                           "--verify"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    after = _digests(layers.folder)
    assert {name: after[name] for name in before} == before
    written = sorted(p.name for p in out_dir.iterdir())
    if where == "same":
        assert written == sorted([*before, "converted.onnx"])
    else:
        assert written == ["converted.onnx", "weights.bin"]
        assert not os.path.samefile(out_dir / "weights.bin", layers.folder / "weights.bin")
        assert (out_dir / "weights.bin").read_bytes() == (layers.folder / "weights.bin").read_bytes()
    assert target.stat().st_size < 8192  # the graph only
    _no_inline_weights(onnx.load(str(target), load_external_data=False))
    session = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"x": layers.x})[0], layers.plain())


def test_python_api_returns_references_and_save_model_writes_the_data(layers: Layers, tmp_path: Path) -> None:
    converted = onnx_bcast.convert(str(layers.path), verify=True, feeds={"x": layers.x})
    _no_inline_weights(converted)
    target = tmp_path / "saved" / "model.onnx"
    target.parent.mkdir()
    onnx_bcast.save_model(converted, target)
    loaded = onnx.load(str(target))  # with its data: the weights are the bytes written by the test
    weights = {t.name: numpy_helper.to_array(t) for t in loaded.graph.initializer}
    for i, w in enumerate(layers.weights):
        assert weights[f"W{i}"].tobytes() == w.tobytes()
    assert not any(p.key == external_data.FOLDER_KEY for p in loaded.metadata_props)
    np.testing.assert_array_equal(onnx_bcast.InferenceSession(converted).run(None, {"x": layers.x})[0],
                                  layers.plain())


def test_save_model_refuses_a_different_file_of_the_same_name(layers: Layers, tmp_path: Path) -> None:
    converted = onnx_bcast.convert(str(layers.path))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "weights.bin").write_bytes(b"someone else's data")
    with pytest.raises(OSError, match="exists and is not the input's data file"):
        onnx_bcast.save_model(converted, out_dir / "model.onnx")
    assert sorted(p.name for p in out_dir.iterdir()) == ["weights.bin"]
    assert (out_dir / "weights.bin").read_bytes() == b"someone else's data"


def test_converting_again_to_the_same_folder_keeps_the_copy(layers: Layers, tmp_path: Path) -> None:
    """The second ``convert`` to a folder that holds an earlier conversion's copy of the data keeps that copy
    (same bytes: not written again, not refused), also for another output name; the outputs run to plain ORT's
    values. A copy with one byte changed is refused and left as it was."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()

    def convert(name: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "onnx_bcast", "convert", str(layers.path), "-o",
                               str(out_dir / name), "--force"], capture_output=True, text=True, timeout=300)

    assert convert("a.onnx").returncode == 0
    copy = out_dir / "weights.bin"
    first = _stats(out_dir)["weights.bin"]
    for name in ("a.onnx", "b.onnx"):
        proc = convert(name)
        assert proc.returncode == 0, proc.stderr
        assert _stats(out_dir)["weights.bin"] == first  # the same file, not rewritten
        session = ort.InferenceSession(str(out_dir / name), providers=["CPUExecutionProvider"])
        np.testing.assert_array_equal(session.run(None, {"x": layers.x})[0], layers.plain())
    changed = bytearray(copy.read_bytes())
    changed[-1] ^= 1
    copy.write_bytes(bytes(changed))
    proc = convert("c.onnx")
    assert proc.returncode == 1 and "exists and is not the input's data file" in proc.stderr
    assert copy.read_bytes() == bytes(changed) and not (out_dir / "c.onnx").exists()


def test_cli_run_and_check(layers: Layers, tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", layers.x)
    for backend in ("numpy", "native"):
        saved = tmp_path / f"y_{backend}.npz"
        proc = subprocess.run([sys.executable, "-m", "onnx_bcast", "run", str(layers.path), "--backend", backend,
                               "--input", f"x={tmp_path / 'x.npy'}", "--save-outputs", str(saved)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_array_equal(np.load(saved)["h3"], layers.plain())
    proc = subprocess.run([sys.executable, "-m", "onnx_bcast", "check", str(layers.path)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "ok:" in proc.stdout, proc.stderr


def test_ir_pass_keeps_the_lazy_tensors(layers: Layers) -> None:
    ir = pytest.importorskip("onnx_ir")
    model = ir.load(str(layers.path))
    result = onnx_bcast.LowerToStandard()(model).model
    tensor = result.graph.initializers["W0"].const_value
    assert isinstance(tensor, ir.ExternalTensor) and tensor is model.graph.initializers["W0"].const_value
    assert tensor.numpy().tobytes() == layers.weights[0].tobytes()


def test_openvino_reads_a_converted_proto(layers: Layers) -> None:
    pytest.importorskip("openvino")
    import openvino

    from onnx_bcast.openvino import read_model

    compiled = openvino.Core().compile_model(read_model(onnx_bcast.convert(str(layers.path))), "CPU",
                                             {"INFERENCE_PRECISION_HINT": "f32"})
    np.testing.assert_allclose(compiled({"x": layers.x})[0], layers.formula(), rtol=1e-5, atol=1e-5)


# --- over 2 GiB: a sparse file -------------------------------------------------------------------------------------

def test_over_2_gib_converts_and_runs(tmp_path: Path) -> None:
    """A weight of 2.25 GiB in a sparse file (4 rows written): ``Gather`` reads rows picked by the input, then
    ``Add<pdpd>`` of a ``Broadcast<explicit>`` bias. convert (CLI) and both backends give the numpy formula."""
    rows, cols = 36 * 2**10, 2**14  # 36864 x 16384 float32 = 2.25 GiB
    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    out.mkdir()
    rng = np.random.default_rng(3)
    picked = np.array([0, 7, rows - 1], np.int64)
    values = rng.standard_normal((len(picked), cols)).astype(F32)
    bias = rng.standard_normal(cols).astype(F32)
    size = rows * cols * 4
    assert size > files.PROTOBUF_LIMIT
    with open(folder / "big.bin", "wb") as file:
        for row, value in zip(picked, values, strict=True):
            file.seek(int(row) * cols * 4)
            file.write(value.tobytes())
        file.seek(size)
        file.write(bias.tobytes())
    weight = _refer("W", TensorProto.FLOAT, [rows, cols], "big.bin", 0, size)
    bias_t = _refer("bias", TensorProto.FLOAT, [cols], "big.bin", size, cols * 4)
    target = numpy_helper.from_array(np.array([3, cols], np.int64), "target")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("Gather", ["W", "idx"], ["g"], axis=0),
             helper.make_node("Broadcast", ["bias", "target", "axes"], ["b"], domain=DOMAIN, mode="explicit"),
             helper.make_node("Add", ["g", "b"], ["y"], domain=DOMAIN, auto_broadcast="pdpd")]
    graph = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("idx", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, cols])],
                              [weight, bias_t, target, axes])
    path = folder / "big.onnx"
    onnx.save(helper.make_model(graph, opset_imports=OURS, ir_version=10), path)
    before = _stats(folder)
    want = values + bias[None, :]
    feeds = {"idx": picked}  # the rows written; the others are holes (zeros)
    proc = subprocess.run([sys.executable, "-m", "onnx_bcast", "convert", str(path), "-o",
                           str(out / "converted.onnx")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (out / "converted.onnx").stat().st_size < 8192
    session = ort.InferenceSession(str(out / "converted.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, feeds)[0], want)
    for backend in ("numpy", "native"):
        ours = onnx_bcast.InferenceSession(str(path), backend=backend)
        np.testing.assert_array_equal(ours.run(None, feeds)[0], want)
    converted = onnx_bcast.convert(str(path))
    _no_inline_weights(converted)
    assert _stats(folder) == before


def test_a_legacy_model_with_external_weights_converts_and_runs(tmp_path: Path) -> None:
    """A legacy (opset 6) model whose weights are in an external file: imported, converted and run from the file.

    onnx's version converter drops initializers whose data is external ("Input W is undefined!"): the import sets
    them aside while it upgrades, and our elementwise inference tolerates an input of unknown type meanwhile."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 8, 16)).astype(F32)
    b = rng.standard_normal(16).astype(F32)
    nodes = [helper.make_node("Add", ["x", "W"], ["y"], broadcast=1, axis=0, name="add_w"),
             helper.make_node("Mul", ["y", "b"], ["z"], broadcast=1, name="mul_b")]
    graph = helper.make_graph(nodes, "legacy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8, 16])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 8, 16])],
                              [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)
    source = tmp_path / "in"
    source.mkdir()
    onnx.save(model, source / "legacy.onnx", save_as_external_data=True, location="legacy.data", size_threshold=0)
    before = _digests(source)
    x = rng.standard_normal((4, 8, 16)).astype(F32)
    expected = (x + w) * b  # legacy broadcast: W at axis 0 (same shape), b on the last axis
    converted = onnx_bcast.convert(source / "legacy.onnx")
    assert all(t.data_location == TensorProto.EXTERNAL and not t.raw_data for t in converted.graph.initializer)
    (tmp_path / "out").mkdir()
    onnx_bcast.save_model(converted, tmp_path / "out" / "standard.onnx")
    plain = ort.InferenceSession(str(tmp_path / "out" / "standard.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(plain.run(None, {"x": x})[0], expected)
    for backend in ("numpy", "native"):
        session = onnx_bcast.InferenceSession(source / "legacy.onnx", backend=backend)
        np.testing.assert_array_equal(session.run(None, {"x": x})[0], expected)
    assert _digests(source) == before


def test_verify_checks_invalid_inputs_without_reading_the_weights(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``convert(verify=True)`` runs ``onnx.reference`` on the inputs the original rejects: the external weights are
    fed to it as memory maps, never read into the proto (onnx's loaders fail here). x [N, 4] + W [3, 4] (numpy
    rule): N = 3 is valid, the variant N = 4 is rejected by the original and must fail in both runtimes."""
    w = np.arange(12, dtype=F32).reshape(3, 4)
    (tmp_path / "w.bin").write_bytes(w.tobytes())
    node = helper.make_node("Add", ["x", "W"], ["y"], domain=DOMAIN, name="add", auto_broadcast="numpy")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [_refer("W", TensorProto.FLOAT, [3, 4], "w.bin", 0, 48)])
    onnx.save(helper.make_model(graph, opset_imports=OURS, ir_version=10), tmp_path / "m.onnx")
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(F32)
    seen: list[str] = []

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the weights were read into the proto")

    real_run = ReferenceEvaluator.run

    def run(self: ReferenceEvaluator, outputs: object, feeds: dict[str, np.ndarray]) -> list:
        if "W" in feeds:
            seen.append(type(feeds["W"]).__name__)
        return real_run(self, outputs, feeds)

    monkeypatch.setattr(onnx, "load_external_data_for_model", refuse)
    monkeypatch.setattr(onnx.external_data_helper, "load_external_data_for_tensor", refuse)
    monkeypatch.setattr(ReferenceEvaluator, "run", run)
    converted = onnx_bcast.convert(str(tmp_path / "m.onnx"), verify=True, feeds={"x": x})
    assert seen and set(seen) == {"memmap"}  # onnx.reference ran on a rejected input, W mapped
    _no_inline_weights(converted)
    graph_only, weights = mapped_weights(converted)
    monkeypatch.setattr(ReferenceEvaluator, "run", real_run)
    out = ReferenceEvaluator(graph_only).run(None, {"x": x, **weights})[0]
    np.testing.assert_array_equal(out, x + w)
