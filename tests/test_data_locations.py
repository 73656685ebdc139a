"""Where external data is read from and written to: folders reached through symbolic links or ``..``, locations
through links; the fast path of ``data_files.checked_file`` (no resolving) must agree with the kernel's view.

Expected values: the bytes written here, read back by plain ONNX Runtime from the saved model.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from onnx_bcast.model import external_data
from onnx_bcast.model.files import UnsafeModel, load_model

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symbolic links as POSIX makes them")
DOMAIN = "onnx_bcast"


def _model(folder: Path, location: str, values: np.ndarray) -> Path:
    """``y = Add<pdpd>(x, w)`` with w [4] float32 in ``folder / location``; returns the model's path."""
    data = folder / location
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_bytes(values.astype(np.float32).tobytes())
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    w.external_data.add(key="location", value=location)
    node = helper.make_node("Add", ["x", "w"], ["y"], domain=DOMAIN, auto_broadcast="pdpd")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
                              ir_version=10)
    path = folder / "model.onnx"
    onnx.save(model, path)
    return path


def _converted_output(source: str, out: Path) -> np.ndarray:
    """``source`` converted and saved to ``out``, then run by plain ONNX Runtime from that file."""
    onnx_bcast.save_model(onnx_bcast.convert(source), out)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": np.zeros((2, 4), np.float32)})[0]


def test_a_model_in_a_linked_folder(tmp_path: Path) -> None:
    values = np.array([1, 2, 3, 4], np.float32)
    _model(tmp_path / "real", "w.bin", values)
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    (tmp_path / "out").mkdir()
    got = _converted_output(str(tmp_path / "alias" / "model.onnx"), tmp_path / "out" / "c.onnx")
    np.testing.assert_array_equal(got, np.broadcast_to(values, (2, 4)))
    assert (tmp_path / "out" / "w.bin").read_bytes() == values.tobytes()


def test_a_model_path_through_link_dot_dot_reads_beside_the_file_the_kernel_opens(tmp_path: Path) -> None:
    """``a/link/../model.onnx`` with ``link`` -> ``b/c`` opens ``b/model.onnx``: its data is ``b/w.bin``, not the
    ``a/w.bin`` that the path's lexical form points to."""
    values = np.array([5, 6, 7, 8], np.float32)
    _model(tmp_path / "b", "w.bin", values)
    (tmp_path / "b" / "c").mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "w.bin").write_bytes(np.full(4, -1, np.float32).tobytes())  # the decoy
    (tmp_path / "a" / "link").symlink_to(tmp_path / "b" / "c")
    source = f"{tmp_path}/a/link/../model.onnx"
    assert external_data.folder_of(load_model(source)) == (tmp_path / "b").resolve()
    (tmp_path / "out").mkdir()
    got = _converted_output(source, tmp_path / "out" / "c.onnx")
    np.testing.assert_array_equal(got, np.broadcast_to(values, (2, 4)))


@pytest.mark.parametrize("inside", [False, True])
def test_a_location_through_a_linked_subfolder(tmp_path: Path, inside: bool) -> None:
    """``sub/w.bin`` where ``sub`` is a link: refused when it leads out of the model's folder, read when it stays
    in (as resolving the path decides)."""
    values = np.array([9, 10, 11, 12], np.float32)
    folder = tmp_path / "model"
    path = _model(folder, "data/w.bin", values)
    (folder / "sub").symlink_to(folder / "data" if inside else tmp_path / "outside")
    if not inside:
        (tmp_path / "outside").mkdir()
        (tmp_path / "outside" / "w.bin").write_bytes(values.tobytes())
    model = onnx.load(path, load_external_data=False)
    model.graph.initializer[0].external_data[0].value = "sub/w.bin"
    onnx.save(model, path)
    if not inside:
        with pytest.raises(UnsafeModel, match="points outside the model's folder"):
            load_model(path)
        return
    (tmp_path / "out").mkdir()
    got = _converted_output(str(path), tmp_path / "out" / "c.onnx")
    np.testing.assert_array_equal(got, np.broadcast_to(values, (2, 4)))


@pytest.mark.parametrize(("location", "allowed"), [("sub/../w.bin", True), ("../w.bin", False),
                                                    ("sub/../../w.bin", False), ("./w.bin", True)])
def test_dot_dot_in_a_location(tmp_path: Path, location: str, allowed: bool) -> None:
    values = np.array([1, 3, 5, 7], np.float32)
    folder = tmp_path / "model"
    (folder / "sub").mkdir(parents=True)
    path = _model(folder, "w.bin", values)
    (tmp_path / "w.bin").write_bytes(values.tobytes())
    model = onnx.load(path, load_external_data=False)
    model.graph.initializer[0].external_data[0].value = location
    onnx.save(model, path)
    if not allowed:
        with pytest.raises(UnsafeModel, match="points outside the model's folder"):
            load_model(path)
        return
    model = load_model(path)
    assert external_data.folder_of(model) == folder.resolve()


def _external(name: str, location: str = "w.bin") -> TensorProto:
    tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    tensor.external_data.add(key="location", value=location)
    return tensor


def _everywhere(decoy: bytes) -> onnx.ModelProto:
    """External tensors as initializers, in a Constant node, in an If branch, in a function and as a sparse
    initializer's values; ``decoy``: an inline initializer's bytes (which may hold the external mark)."""
    constant = helper.make_node("Constant", [], ["c"], value=_external("c_value"))
    branch = helper.make_graph([helper.make_node("Constant", [], ["b"], value=_external("b_value", "sub/b.bin"))],
                               "branch", [], [helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])])
    if_node = helper.make_node("If", ["cond"], ["i"], then_branch=branch, else_branch=branch)
    sparse = onnx.SparseTensorProto(values=_external("s"), dims=[8])
    sparse.indices.CopyFrom(helper.make_tensor("s_indices", TensorProto.INT64, [4], [0, 1, 2, 3]))
    inline = TensorProto(name="inline", data_type=TensorProto.UINT8, dims=[len(decoy)], raw_data=decoy)
    graph = helper.make_graph([constant, if_node, helper.make_node("F", ["c"], ["f"], domain="local")], "g",
                              [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("f", TensorProto.FLOAT, [4])],
                              [_external("w"), inline], sparse_initializer=[sparse])
    function = helper.make_function("local", "F", ["x"], ["y"], [
        helper.make_node("Constant", [], ["k"], value=_external("f_value")),
        helper.make_node("Add", ["x", "k"], ["y"])], [helper.make_opsetid("", 17)])
    return helper.make_model(graph, functions=[function], opset_imports=[helper.make_opsetid("", 17),
                                                                         helper.make_opsetid("local", 1)])


@pytest.mark.parametrize("decoy", [b"", b"\x70\x01", b"\x70\x01" * 6, b"\x01\x70\x70\x01\x70"])
@pytest.mark.parametrize("where", ["everywhere", "initializers only", "none"])
def test_external_tensors_are_every_tensor_onnx_calls_external(decoy: bytes, where: str) -> None:
    """The oracle: onnx's own walk over every tensor (``_get_all_tensors``) and ``uses_external_data``, plus the
    sparse initializers' tensors, which onnx's walk leaves out. The decoys put the bytes of an external mark into
    an inline tensor: counting marks alone would be fooled."""
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    model = _everywhere(decoy)
    if where != "everywhere":
        model = onnx.ModelProto(ir_version=10, opset_import=[helper.make_opsetid("", 17)])
        model.graph.name = "g"
        model.graph.initializer.extend([_external("w"), _external("v")] if where == "initializers only" else [])
        model.graph.initializer.add().CopyFrom(TensorProto(name="inline", data_type=TensorProto.UINT8,
                                                           dims=[len(decoy)], raw_data=decoy))
    sparse = [t for s in model.graph.sparse_initializer for t in (s.values, s.indices)]
    want = sorted(t.name for t in [*_get_all_tensors(model), *sparse] if uses_external_data(t))
    got = sorted(t.name for t in external_data.external_tensors(model))
    assert got == want
    assert len(want) == {"everywhere": 6, "initializers only": 2, "none": 0}[where]  # (the If's two branches)


def _sparse(path: Path, size: int, writes: dict[int, bytes]) -> None:
    """A file of ``size`` bytes holding ``writes`` (offset -> bytes) and holes elsewhere."""
    with open(path, "wb") as file:
        for offset, data in writes.items():
            file.seek(offset)
            file.write(data)
        file.truncate(size)


@pytest.mark.parametrize(("second", "equal"), [
    ({5000: b"abc", 3_000_000: b"xyz"}, True),  # the same layout
    ({0: bytes(5000) + b"abc", 3_000_000: b"xyz"}, True),  # zeros written where the first has a hole
    ({5000: b"abc", 3_000_000: b"xyz", 1_000_000: b"\x01"}, False),  # a byte in the first's hole
    ({5000: b"abd", 3_000_000: b"xyz"}, False),
    ({5000: b"abc"}, False),  # the last region missing
])
def test_same_bytes_compares_sparse_files_as_their_bytes(tmp_path: Path, second: dict, equal: bool) -> None:
    """The oracle: the files' whole bytes, read here."""
    from onnx_bcast.model.data_files import same_bytes

    size = 4_000_000
    _sparse(tmp_path / "a", size, {5000: b"abc", 3_000_000: b"xyz"})
    _sparse(tmp_path / "b", size, second)
    assert ((tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()) is equal
    for chunk in (7, 4096, 16 * 1024 * 1024):
        assert same_bytes(tmp_path / "a", tmp_path / "b", chunk) is equal
        assert same_bytes(tmp_path / "b", tmp_path / "a", chunk) is equal
    _sparse(tmp_path / "c", size + 1, {5000: b"abc", 3_000_000: b"xyz"})
    assert not same_bytes(tmp_path / "a", tmp_path / "c")


@pytest.mark.parametrize("inline_bytes", [16, 1024 * 1024])
def test_external_tensors_never_serializes_inline_weights(inline_bytes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting marks serializes the model: only where its inline initializers are small (a model that holds its
    weights is walked instead: serializing it would copy them). Either way the answer is onnx's own walk's."""
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    from onnx_bcast.model import tensor_walk

    model = onnx.ModelProto(ir_version=10, opset_import=[helper.make_opsetid("", 17)])
    model.graph.name = "g"
    model.graph.initializer.extend([_external("w"), TensorProto(name="inline", data_type=TensorProto.UINT8,
                                                                 dims=[inline_bytes], raw_data=bytes(inline_bytes))])
    calls = []

    def spy(proto: onnx.ModelProto) -> bytes:
        calls.append(proto.ByteSize())
        return proto.SerializeToString()

    monkeypatch.setattr(tensor_walk, "serialized", spy)
    got = [t.name for t in external_data.external_tensors(model)]
    assert got == [t.name for t in _get_all_tensors(model) if uses_external_data(t)] == ["w"]
    assert len(calls) == (1 if inline_bytes < 64 * 1024 else 0)
