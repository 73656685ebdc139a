"""Our ops inside ONNX ``Scan`` bodies (issue 33 item 7): the numpy backend, the native backend and the converted
model in plain ONNX Runtime give a numpy formula's values per slice, and a slice the rules refuse fails every path.

Body outputs are declared without a shape (the lowering sets declared shapes aside anyway): ONNX Runtime's Scan
needs each body output's rank, which the numpy backend's Python kernels do not tell it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast
from tests import tool_pipelines as tools
from tests.onnx_util import skip_unless_ort_reads

F32 = np.float32
FLOAT = TensorProto.FLOAT


def _vi(name: str, dims: list | None = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, FLOAT, dims)


def _i64(name: str, *values: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def _body(nodes: list[onnx.NodeProto], inputs: list[str], outputs: list[str]) -> onnx.GraphProto:
    """A Scan body; its inputs and outputs declare their element type only."""
    return helper.make_graph(nodes, "body", [_vi(n) for n in inputs], [_vi(n) for n in outputs])


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, int], outputs: list[str], opset: int,
           initializers: tuple = ()) -> onnx.ModelProto:
    """Graph inputs of the given ranks, every dim unknown (ONNX Runtime's Scan needs its body outputs' ranks when
    the session is made: inputs of unknown rank fail a body of standard ops too)."""
    graph = helper.make_graph(nodes, "g", [_vi(n, [None] * rank) for n, rank in inputs.items()],
                              [_vi(n) for n in outputs], list(initializers))
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("onnx_bcast", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _broadcast(x: str, target: str, y: str, name: str = "bc") -> onnx.NodeProto:
    return helper.make_node("Broadcast", [x, target], [y], domain="onnx_bcast", name=name, mode="numpy")


def _add(a: str, b: str, y: str, rule: str, name: str = "add", **attrs: int) -> onnx.NodeProto:
    return helper.make_node("Add", [a, b], [y], domain="onnx_bcast", name=name, auto_broadcast=rule, **attrs)


def _broadcast_per_slice(opset: int) -> onnx.ModelProto:
    """y[i] = Broadcast<numpy>(x[i], [2, 3])."""
    body = _body([_broadcast("xi", "t", "yi")], ["xi"], ["yi"])
    scan = helper.make_node("Scan", ["x"], ["y"], name="scan", num_scan_inputs=1, body=body)
    return _model([scan], {"x": 2}, ["y"], opset, [_i64("t", 2, 3)])


def _rank_one_output(opset: int) -> onnx.ModelProto:
    """y[i] = Broadcast<numpy>(x[i], [4]): a body output of rank 1."""
    body = _body([_broadcast("xi", "t", "yi")], ["xi"], ["yi"])
    scan = helper.make_node("Scan", ["x"], ["y"], name="scan", num_scan_inputs=1, body=body)
    return _model([scan], {"x": 2}, ["y"], opset, [_i64("t", 4)])


def _none_add(opset: int) -> onnx.ModelProto:
    """y[i] = Add<none>(a[i], b[i]), then Relu: the body output is a standard op's, after ours."""
    body = _body([_add("ai", "bi", "si", "none"), helper.make_node("Relu", ["si"], ["yi"])], ["ai", "bi"], ["yi"])
    scan = helper.make_node("Scan", ["a", "b"], ["y"], name="scan", num_scan_inputs=2, body=body)
    return _model([scan], {"a": 3, "b": 3}, ["y"], opset)


def _pdpd_add(opset: int) -> onnx.ModelProto:
    """y[i] = Add<pdpd, axis=0>(a[i], b[i]): B's dims meet A's from axis 0."""
    body = _body([_add("ai", "bi", "yi", "pdpd", axis=0)], ["ai", "bi"], ["yi"])
    scan = helper.make_node("Scan", ["a", "b"], ["y"], name="scan", num_scan_inputs=2, body=body)
    return _model([scan], {"a": 3, "b": 2}, ["y"], opset)


def _state_and_axes(opset: int) -> onnx.ModelProto:
    """A state s and x scanned over axis 1: b = Broadcast<numpy>(x[:, i], [2, 3]), s' = Add<none>(s, b); the scan
    output b is stacked on axis 1."""
    body = _body([_broadcast("xi", "t", "bi"), _add("s", "bi", "s_next", "none")], ["s", "xi"], ["s_next", "bi"])
    scan = helper.make_node("Scan", ["s0", "x"], ["s_last", "y"], name="scan", num_scan_inputs=1, body=body,
                            scan_input_axes=[1], scan_output_axes=[1])
    return _model([scan], {"s0": 2, "x": 2}, ["s_last", "y"], opset, [_i64("t", 2, 3)])


def _two_scans_alike_names(opset: int) -> onnx.ModelProto:
    """Two Scans whose bodies use the same names for outputs of different ranks (2 and 1)."""
    first = helper.make_node("Scan", ["x"], ["y"], name="scan", num_scan_inputs=1,
                             body=_body([_broadcast("xi", "t", "yi")], ["xi"], ["yi"]))
    second = helper.make_node("Scan", ["z"], ["w"], name="scan2", num_scan_inputs=1,
                              body=_body([_broadcast("xi", "u", "yi", name="bc2")], ["xi"], ["yi"]))
    return _model([first, second], {"x": 2, "z": 2}, ["y", "w"], opset, [_i64("t", 2, 3), _i64("u", 4)])


def _f(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape) + len(shape)).standard_normal(shape).astype(F32)


def _stack(values: list[np.ndarray], axis: int = 0) -> np.ndarray:
    return np.stack(values, axis=axis)


def _state_oracle(f: dict[str, np.ndarray]) -> list[np.ndarray]:
    s, outs = f["s0"], []
    for i in range(f["x"].shape[1]):
        b = np.broadcast_to(f["x"][:, i], (2, 3))
        s = s + b
        outs.append(b)
    return [s, _stack(outs, axis=1)]


@dataclass(frozen=True)
class ScanCase:
    name: str
    model: Callable[[int], onnx.ModelProto]
    valid: dict[str, np.ndarray] | None  # None: the case only fails
    oracle: Callable[[dict[str, np.ndarray]], list[np.ndarray]] | None
    invalid: dict[str, np.ndarray]
    node: str  # the node the invalid feed breaks


CASES = [
    ScanCase("broadcast", _broadcast_per_slice, {"x": _f(4, 3)},
             lambda f: [_stack([np.broadcast_to(v, (2, 3)) for v in f["x"]])], {"x": _f(4, 2)}, "bc"),
    ScanCase("broadcast_rank_one", _rank_one_output, {"x": _f(3, 1)},
             lambda f: [_stack([np.broadcast_to(v, (4,)) for v in f["x"]])], {"x": _f(3, 3)}, "bc"),
    ScanCase("none_add", _none_add, {"a": _f(3, 2, 4), "b": _f(3, 2, 4)},
             lambda f: [np.maximum(f["a"] + f["b"], 0)],
             {"a": _f(3, 2, 4), "b": _f(3, 1, 4)}, "add"),  # numpy would broadcast; none refuses
    ScanCase("pdpd_add", _pdpd_add, {"a": _f(3, 2, 4), "b": _f(3, 2)},
             lambda f: [_stack([a + b[:, None] for a, b in zip(f["a"], f["b"], strict=True)])],
             {"a": _f(3, 2, 4), "b": _f(3, 4)}, "add"),  # numpy would broadcast (4,); pdpd at axis 0 refuses
    ScanCase("state_and_axes", _state_and_axes, {"s0": _f(2, 3), "x": _f(3, 5)}, _state_oracle,
             {"s0": _f(2, 3), "x": _f(2, 5)}, "bc"),
    ScanCase("state_mismatch", _state_and_axes, None, None,
             {"s0": _f(1, 3), "x": _f(3, 5)}, "add"),  # numpy broadcasts s (1, 3) and b (2, 3); none refuses
    ScanCase("two_scans_alike_names", _two_scans_alike_names, {"x": _f(2, 3), "z": _f(5, 1)},
             lambda f: [_stack([np.broadcast_to(v, (2, 3)) for v in f["x"]]),
                        _stack([np.broadcast_to(v, (4,)) for v in f["z"]])], {"x": _f(2, 3), "z": _f(5, 2)}, "bc2"),
]
VALID = [c for c in CASES if c.valid is not None]
OPSETS = [16, 21]


def _paths(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, list[np.ndarray]]:
    """Every path's outputs: both backends, and the converted model in plain ORT at two optimization levels."""
    outputs = {backend: onnx_bcast.InferenceSession(model, backend=backend).run(None, feeds)
               for backend in ("numpy", "native")}
    converted = onnx_bcast.convert(model)
    for level in ("ort_disabled", "ort_all"):
        outputs[f"converted {level}"] = tools.ort_run(converted, feeds, level)
    return outputs


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in VALID])
def test_valid_slices_give_the_formula(case: ScanCase, opset: int) -> None:
    skip_unless_ort_reads(opset)
    assert case.valid is not None and case.oracle is not None
    expected = case.oracle(case.valid)
    for path, got in _paths(case.model(opset), case.valid).items():
        assert len(got) == len(expected), path
        for value, want in zip(got, expected, strict=True):
            assert value.shape == want.shape, (path, value.shape, want.shape)
            np.testing.assert_array_equal(value, want, err_msg=path)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_a_refused_slice_fails_every_path(case: ScanCase, opset: int) -> None:
    skip_unless_ort_reads(opset)
    model = case.model(opset)
    for backend in ("numpy", "native"):
        session = onnx_bcast.InferenceSession(model, backend=backend)
        with pytest.raises(onnx_bcast.BroadcastError) as err:
            session.run(None, case.invalid)
        assert f"'{case.node}'" in str(err.value), (backend, str(err.value))
        if case.valid is not None and case.oracle is not None:  # the session stays usable
            for value, want in zip(session.run(None, case.valid), case.oracle(case.valid), strict=True):
                np.testing.assert_array_equal(value, want, err_msg=backend)
    converted = onnx_bcast.convert(model)
    for level in ("ort_disabled", "ort_all"):
        with pytest.raises(Exception):  # noqa: B017 - any failure: no value may come back
            outputs = tools.ort_run(converted, case.invalid, level)
            pytest.fail(f"plain ORT ({level}) returned {[o.shape for o in outputs]}")


def test_scan_outputs_get_their_inferred_rank_only() -> None:
    """The numpy backend's form declares each Scan body output's rank, every dim unknown (no dim for an optimizer
    to write into the status Reshape's shape); the two bodies with alike names each get their own."""
    prepared = onnx_bcast.prepare(_two_scans_alike_names(16))
    ranks = [[[d.HasField("dim_value") or d.HasField("dim_param") for d in out.type.tensor_type.shape.dim]
              for out in node.attribute[0].g.output] for node in prepared.graph.node if node.op_type == "Scan"]
    assert ranks == [[[False, False]], [[False]]]
