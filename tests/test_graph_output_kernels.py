"""The numpy backend's fast paths where its kernel moves the data: a kernel writes an unread graph output itself (its
check beside it), and a broadcast's output structure is planned once per node and input signature. Expected values:
``np.broadcast_to``.

The kernel moves the data of types ORT's ``Expand`` lacks (and of BroadcastV0 and the gradients); a Broadcast of
other types is checked by the kernel and moved by ``Expand`` (``CheckedBroadcast``). Here every type takes the
kernel's path (``EXPAND_TYPES`` emptied), so that float32 exercises it."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from onnx_bcast.ops.memory_guard import ENV_VAR

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


@pytest.fixture(autouse=True)
def _kernel_moves_the_data(monkeypatch: pytest.MonkeyPatch) -> None:
    from onnx_bcast.ort import rule_set

    monkeypatch.setattr(rule_set, "EXPAND_TYPES", frozenset())


def _model(read_too: bool = False, elem: int = F32) -> onnx.ModelProto:
    """y = Broadcast<numpy>(x, t), a graph output; with ``read_too`` a Relu reads y as well (output r)."""
    nodes = [helper.make_node("Broadcast", ["x", "t"], ["y"], domain="onnx_bcast", name="bc", mode="numpy")]
    outputs = [helper.make_tensor_value_info("y", elem, None)]
    if read_too:
        nodes.append(helper.make_node("Relu", ["y"], ["r"]))
        outputs.append(helper.make_tensor_value_info("r", elem, None))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem, None),
                                           helper.make_tensor_value_info("t", I64, [None])], outputs)
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17),
                                                                 helper.make_opsetid("onnx_bcast", 1)])


def _plain(model: onnx.ModelProto) -> ort.InferenceSession:
    options = onnx_bcast.session_options()
    options.log_severity_level = 4
    return ort.InferenceSession(onnx_bcast.prepare(model, quiet=True, direct_outputs=True).SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def _kernel_and_check(prepared: onnx.ModelProto) -> tuple[onnx.NodeProto, onnx.NodeProto]:
    """The guarded kernel and the Reshape that reads its status."""
    (kernel,) = [n for n in prepared.graph.node if n.domain == "onnx_bcast.ort" and n.op_type == "Broadcast"]
    (check,) = [n for n in prepared.graph.node if n.op_type == "Reshape" and n.input[1] == kernel.output[1]]
    return kernel, check


def test_the_kernel_writes_an_unread_graph_output_and_its_check_reads_it() -> None:
    prepared = onnx_bcast.prepare(_model(), direct_outputs=True)
    kernel, check = _kernel_and_check(prepared)
    assert kernel.output[0] == "y" and list(check.input) == ["y", kernel.output[1]]
    assert not any(check.output[0] in n.input for n in prepared.graph.node)
    assert check.output[0] not in {v.name for v in prepared.graph.output}


def test_public_prepare_keeps_every_check_on_the_data_path() -> None:
    """``prepare`` as users call it (their optimizers delete dead ends): the graph output is the check's output."""
    kernel, check = _kernel_and_check(onnx_bcast.prepare(_model()))
    assert "y" not in kernel.output and check.output[0] == "y"


def test_a_graph_output_that_a_node_reads_keeps_its_check_on_the_data_path() -> None:
    kernel, check = _kernel_and_check(onnx_bcast.prepare(_model(read_too=True), direct_outputs=True))
    assert "y" not in kernel.output and check.output[0] == "y" and check.input[0] == kernel.output[0]


@pytest.mark.parametrize("read_too", [False, True])
def test_plain_ort_on_prepare_still_fails_an_invalid_run(read_too: bool) -> None:
    """ONNX Runtime runs the check nothing reads: if a version ever drops it, the invalid runs return values here."""
    session = _plain(_model(read_too))
    x = np.array([1.0, -2.0, 3.0], np.float32)
    for target in ([2, 4], [3, 2], [2, 3, 5]):
        with pytest.raises(Exception, match="Reshape"):
            session.run(None, {"x": x, "t": np.array(target, np.int64)})
        got = session.run(None, {"x": x, "t": np.array([2, 3], np.int64)})  # the session survives
        np.testing.assert_array_equal(got[0], np.broadcast_to(x, (2, 3)))


def test_one_node_planned_per_signature_gives_each_signature_its_own_output() -> None:
    """Calls of one node alternate between shapes, types of target, valid and invalid, small (gathered) and large
    (viewed) outputs: every value is np.broadcast_to's, every invalid call raises."""
    session = onnx_bcast.InferenceSession(_model())
    rng = np.random.default_rng(0)
    calls = [((3,), (2, 3)), ((1, 3), (4, 3)), ((3,), (2, 4)), ((3, 1), (3, 5000)), ((3,), (2, 3)),
             ((1, 3), (4, 3)), ((3, 1), (3, 5000)), ((3,), (4, 3)), ((1, 3), (2, 4)), ((3, 1), (3, 2))]
    for _ in range(2):
        for data_shape, target in calls:
            x = rng.standard_normal(data_shape).astype(np.float32)
            feed = {"x": x, "t": np.array(target, np.int64)}
            try:
                want = np.broadcast_to(x, target)
            except ValueError:
                with pytest.raises(onnx_bcast.BroadcastError, match=r"Broadcast\(mode=numpy\) node 'bc'"):
                    session.run(None, feed)
                continue
            (got,) = session.run(None, feed)
            assert got.shape == want.shape and got.flags.c_contiguous
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mover", ["kernel", "Expand"])
def test_a_planned_signature_still_sees_a_changed_output_limit(mover: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's plans and ``BroadcastCheck``'s remembered shapes alike."""
    if mover == "Expand":
        from onnx_bcast.ort import rule_set

        monkeypatch.setattr(rule_set, "EXPAND_TYPES", frozenset({F32}))
    session = onnx_bcast.InferenceSession(_model())
    python_ops = {n.op_type for n in session.prepared_model.graph.node if n.domain == "onnx_bcast.ort"}
    assert ("BroadcastCheck" in python_ops, "Broadcast" in python_ops) == (mover == "Expand", mover == "kernel")
    feed = {"x": np.arange(3, dtype=np.float32), "t": np.array([4, 3], np.int64)}
    for _ in range(3):  # planned by now
        np.testing.assert_array_equal(session.run(None, feed)[0], np.broadcast_to(feed["x"], (4, 3)))
    monkeypatch.setenv(ENV_VAR, "47")  # 4 * 3 * 4 bytes = 48
    with pytest.raises(onnx_bcast.BroadcastError, match="over the limit of 47 bytes"):
        session.run(None, feed)
    monkeypatch.setenv(ENV_VAR, "48")
    np.testing.assert_array_equal(session.run(None, feed)[0], np.broadcast_to(feed["x"], (4, 3)))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float64, np.uint64])
def test_planned_outputs_of_other_types(dtype: type) -> None:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    session = onnx_bcast.InferenceSession(_model(elem=elem))
    for shape, target in [((2, 1), (2, 3)), ((2, 1), (2, 3000)), ((2, 1), (2, 3))]:
        x = (np.arange(np.prod(shape)).reshape(shape) % 2 if dtype is np.bool_ else np.arange(np.prod(shape)) + 7
             ).reshape(shape).astype(dtype)
        for _ in range(2):
            (got,) = session.run(None, {"x": x, "t": np.array(target, np.int64)})
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, np.broadcast_to(x, target))


def test_inference_session_raises_a_kernel_error_even_where_no_check_failed_the_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Should ONNX Runtime ever drop the check nothing reads, the session still raises the kernel's error."""
    from onnx_bcast.ort import session as session_module

    def without_checks(model: onnx.ModelProto, **kwargs: object) -> onnx.ModelProto:
        prepared = onnx_bcast.prepare(model, **kwargs)
        kernel, check = _kernel_and_check(prepared)
        prepared.graph.node.remove(check)
        return prepared

    monkeypatch.setattr(session_module, "prepare", without_checks)
    session = onnx_bcast.InferenceSession(_model())
    x = np.arange(3, dtype=np.float32)
    with pytest.raises(onnx_bcast.BroadcastError, match=r"node 'bc'.*target \(2, 4\)"):
        session.run(None, {"x": x, "t": np.array([2, 4], np.int64)})
    np.testing.assert_array_equal(session.run(None, {"x": x, "t": np.array([2, 3], np.int64)})[0],
                                  np.broadcast_to(x, (2, 3)))


def test_the_environment_is_read_as_os_environ_gives_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from onnx_bcast.ops.memory_guard import environment_text

    monkeypatch.delenv(ENV_VAR, raising=False)
    assert environment_text() is None
    for text in ("12", " 1_000 ", "1.2e10", "é", ""):
        monkeypatch.setenv(ENV_VAR, text)
        assert environment_text() == text
    monkeypatch.delenv(ENV_VAR)
    assert environment_text() is None
