"""OpenVINO If-8 through the IR route as ONNX If, against OpenVINO's CPU plugin running the same IR (both branches
taken, bodies reading several outer values, broadcasts inside a body, an If inside an If); Loop, TensorIterator and
an If whose body cannot be written refused by name; the real silero VAD IRs against ONNX Runtime on the originals."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino", reason="the IR route's oracle is OpenVINO's CPU plugin (onnx-bcast[openvino])")
pytest.importorskip("onnxifier", reason="the IR route needs onnxifier (onnx-bcast[onnxifier], Python >= 3.11)")
ort = pytest.importorskip("onnxruntime", reason="the written models run in ONNX Runtime")

import onnx  # noqa: E402
import openvino.opset8 as opset8  # noqa: E402
import openvino.opset13 as ops  # noqa: E402
from openvino.utils.node_factory import NodeFactory  # noqa: E402

import onnx_bcast  # noqa: E402
from onnx_bcast.model.walk import all_graphs  # noqa: E402
from onnx_bcast.onnxifier import IRNotConvertible, ir_to_onnx  # noqa: E402
from tests.ir_oracle import assert_close, openvino_cpu  # noqa: E402

RNG = np.random.default_rng(8)


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _c(value: np.ndarray) -> ov.Output:
    return ops.constant(value).output(0)


def _body(outputs: list[ov.Output], params: list[ov.Node], name: str) -> ov.Model:
    return ov.Model([ops.result(o) for o in outputs], params, name)


def _if(cond: ov.Output, then: ov.Model, else_: ov.Model, inputs: list[tuple[ov.Output, int | None, int | None]],
        name: str) -> ov.Node:
    """An If-8 on ``cond``: each input feeds the then body's Parameter and the else body's (by index, or neither);
    output k is Result k of both bodies."""
    node = opset8.if_op(cond)
    node.set_then_body(then)
    node.set_else_body(else_)
    then_params, else_params = then.get_parameters(), else_.get_parameters()
    for value, t, e in inputs:
        node.set_input(value, None if t is None else then_params[t], None if e is None else else_params[e])
    for then_result, else_result in zip(then.get_results(), else_.get_results(), strict=True):
        node.set_output(then_result, else_result)
    node.set_friendly_name(name)
    return node


def _p(name: str, shape: list[int], dtype: type = np.float32) -> ov.Node:
    return ops.parameter(shape, dtype, name=name)


Feeds = list[dict[str, np.ndarray]]
Case = Callable[[], tuple[ov.Model, Feeds]]


def _several_outer_values() -> tuple[ov.Model, Feeds]:
    """The condition from an input; the then body reads three outer values (one of them computed only for the If,
    the dead-node trap), the else body two, in another order; two outputs."""
    x, y, flag = _p("x", [2, 3]), _p("y", [2, 3]), _p("flag", [], np.int64)
    scaled = ops.multiply(y, _c(np.float32(3)))  # read only inside the bodies
    cond = ops.greater(flag, _c(np.int64(0)))
    tx, ty, ts = _p("tx", [2, 3]), _p("ty", [2, 3]), _p("ts", [2, 3])
    then = _body([ops.add(ops.multiply(tx, ts), ty).output(0), ops.subtract(tx, ty).output(0)], [tx, ty, ts], "then")
    ea, eb = _p("ea", [2, 3]), _p("eb", [2, 3])
    else_ = _body([ops.divide(ea, ops.add(ops.abs(eb), _c(np.float32(1)))).output(0), ops.negative(ea).output(0)],
                  [ea, eb], "else")
    node = _if(cond.output(0), then, else_, [(x.output(0), 0, 1), (y.output(0), 1, None),
                                             (scaled.output(0), 2, 0)], "choose")
    model = ov.Model(list(node.outputs()), [x, y, flag], "several_outer_values")
    return model, [{"x": _f(2, 3), "y": _f(2, 3), "flag": np.array(v, np.int64)} for v in (1, -1)]


def _broadcasts_inside() -> tuple[ov.Model, Feeds]:
    """Broadcasts our passes own, inside the bodies: Broadcast-3 explicit and bidirectional, a pdpd Add with an axis,
    a numpy Divide by a per-channel value."""
    x, bias, cond = _p("x", [2, 3, 4]), _p("bias", [3]), _p("cond", [], bool)
    tx, tb = _p("tx", [2, 3, 4]), _p("tb", [3])
    explicit = ops.broadcast(tb, _c(np.array([2, 3, 4], np.int64)), _c(np.array([1], np.int64)), "explicit")
    pdpd = NodeFactory("opset1").create("Add", [tx.output(0), tb.output(0)],
                                        {"auto_broadcast": "pdpd", "auto_broadcast.auto_broadcast_axis": 1})
    then = _body([ops.multiply(explicit, tx).output(0), pdpd.output(0)], [tx, tb], "then")
    ex, eb = _p("ex", [2, 3, 4]), _p("eb", [3])
    tall = ops.broadcast(ops.reshape(eb, _c(np.array([3, 1], np.int64)), False), _c(np.array([2, 1, 4], np.int64)),
                         broadcast_spec="BIDIRECTIONAL")
    divided = ops.divide(ex, ops.add(ops.abs(ops.reshape(eb, _c(np.array([1, 3, 1], np.int64)), False)),
                                     _c(np.float32(1))))
    else_ = _body([ops.subtract(ex, tall).output(0), divided.output(0)], [ex, eb], "else")
    node = _if(cond.output(0), then, else_, [(x.output(0), 0, 0), (bias.output(0), 1, 1)], "broadcasting")
    model = ov.Model(list(node.outputs()), [x, bias, cond], "broadcasts_inside")
    return model, [{"x": _f(2, 3, 4), "bias": _f(3), "cond": np.array(v)} for v in (True, False)]


def _nested() -> tuple[ov.Model, Feeds]:
    """An If inside the then body of an If, its condition and values from the outer body's Parameters; the outer
    else body passes an input through and reads a constant."""
    x, y, mode = _p("x", [4]), _p("y", [4]), _p("mode", [], np.int32)
    ox, oy, om = _p("ox", [4]), _p("oy", [4]), _p("om", [], np.int32)
    ix, iy = _p("ix", [4]), _p("iy", [4])
    inner_then = _body([ops.multiply(ix, iy).output(0)], [ix, iy], "inner_then")
    jx = _p("jx", [4])
    inner_else = _body([ops.maximum(jx, _c(np.float32(0.25))).output(0)], [jx], "inner_else")
    doubled = ops.multiply(oy, _c(np.float32(2)))
    inner = _if(ops.equal(om, _c(np.int32(2))).output(0), inner_then, inner_else,
                [(ox.output(0), 0, 0), (doubled.output(0), 1, None)], "inner")
    outer_then = _body([ops.add(inner.output(0), ox).output(0)], [ox, oy, om], "outer_then")
    ex = _p("ex", [4])
    outer_else = _body([ex.output(0)], [ex], "outer_else")
    node = _if(ops.greater(mode, _c(np.int32(0))).output(0), outer_then, outer_else,
               [(x.output(0), 0, 0), (y.output(0), 1, None), (mode.output(0), 2, None)], "outer")
    model = ov.Model([node.output(0)], [x, y, mode], "nested")
    return model, [{"x": _f(4), "y": _f(4), "mode": np.array(v, np.int32)} for v in (2, 1, 0)]


def _integer_outputs() -> tuple[ov.Model, Feeds]:
    """Integer and bool outputs (compared exactly), one body value given to two If outputs, a constant output."""
    a, cond = _p("a", [3], np.int32), _p("cond", [1], bool)
    ta = _p("ta", [3], np.int32)
    twice = ops.multiply(ta, _c(np.int32(2)))
    then = _body([twice.output(0), twice.output(0), ops.less(ta, _c(np.int32(0))).output(0)], [ta], "then")
    ea = _p("ea", [3], np.int32)
    else_ = _body([ops.negative(ea).output(0), _c(np.array([7, 8, 9], np.int32)),
                   ops.greater(ea, _c(np.int32(1))).output(0)], [ea], "else")
    node = _if(cond.output(0), then, else_, [(a.output(0), 0, 0)], "integers")
    model = ov.Model(list(node.outputs()), [a, cond], "integer_outputs")
    return model, [{"a": np.array([-3, 1, 5], np.int32), "cond": np.array([v])} for v in (True, False)]


CASES: dict[str, Case] = {"several_outer_values": _several_outer_values, "broadcasts_inside": _broadcasts_inside,
                          "nested": _nested, "integer_outputs": _integer_outputs}


def _save(model: ov.Model, folder: Path) -> Path:
    path = folder / f"{model.get_friendly_name()}.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path


def _ifs(model: onnx.ModelProto) -> int:
    return sum(node.op_type == "If" for graph in all_graphs(model) for node in graph.node)


@pytest.mark.parametrize("name", list(CASES))
def test_if_equals_openvino_in_every_branch(name: str, tmp_path: Path) -> None:
    model, feeds_per_branch = CASES[name]()
    path = _save(model, tmp_path)
    written = ir_to_onnx(path)
    assert _ifs(written) == (2 if name == "nested" else 1)
    assert all(not g.input for g in all_graphs(written) if g is not written.graph), "a branch with graph inputs"
    session = ort.InferenceSession(written.SerializeToString(), providers=["CPUExecutionProvider"])
    kept = ir_to_onnx(path, keep_ops=True)
    backends = {backend: onnx_bcast.InferenceSession(kept, backend=backend) for backend in ("numpy", "native")}
    for feeds in feeds_per_branch:
        want = openvino_cpu(model, feeds)
        assert_close(session.run(None, feeds), want)
        for backend in backends.values():
            assert_close(backend.run(None, feeds), want)


def test_branches_differ_and_are_both_taken() -> None:
    """The cases' feeds do take each branch: OpenVINO's outputs differ between them (else the test proves little)."""
    for name, case in CASES.items():
        model, feeds_per_branch = case()
        outputs = [openvino_cpu(model, feeds) for feeds in feeds_per_branch]
        assert not all(np.array_equal(a, b) for a, b in zip(outputs[0], outputs[1], strict=True)), name


def test_broadcasts_inside_a_body_are_our_ops_when_kept(tmp_path: Path) -> None:
    model, _ = _broadcasts_inside()
    kept = ir_to_onnx(_save(model, tmp_path), keep_ops=True)
    inside = [node.op_type for graph in all_graphs(kept) if graph is not kept.graph for node in graph.node
              if node.domain == onnx_bcast.DOMAIN]
    assert "Broadcast" in inside and "Add" in inside, inside
    assert any(o.domain == onnx_bcast.DOMAIN for o in kept.opset_import)


def test_from_ir_counts_the_nodes_in_the_bodies(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``from-ir``'s summary line counts every graph's nodes, as it counts their checks and as ``convert`` does."""
    from onnx_bcast.cli.main import main

    path = _save(_broadcasts_inside()[0], tmp_path)
    assert main(["from-ir", str(path), "-o", str(tmp_path / "out.onnx")]) == 0
    written = onnx.load(str(tmp_path / "out.onnx"))
    every = sum(len(graph.node) for graph in all_graphs(written))
    assert every > len(written.graph.node)
    assert f": {every} ONNX nodes, " in capsys.readouterr().out


def test_openvino_reads_the_written_model(tmp_path: Path) -> None:
    model, feeds_per_branch = _nested()
    written = ir_to_onnx(_save(model, tmp_path))
    compiled = ov.Core().compile_model(ov.Core().read_model(written.SerializeToString(), b""), "CPU",
                                       {"INFERENCE_PRECISION_HINT": "f32"})
    for feeds in feeds_per_branch:
        assert_close([np.asarray(v) for v in compiled(feeds).values()], openvino_cpu(model, feeds))


def _loop_model() -> ov.Model:
    x = _p("x", [3])
    bx, bi = _p("bx", [3]), _p("bi", [], np.int64)
    step = ops.add(bx, _c(np.float32(1)))
    body = ov.Model([ops.result(_c(np.array(True))), ops.result(step)], [bi, bx], "body")
    loop = opset8.loop(_c(np.int64(3)), _c(np.array(True)))
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(bx, x.output(0), step.output(0))
    out = loop.get_iter_value(step.output(0), -1)
    loop.set_friendly_name("count_up")
    return ov.Model([out], [x], "loop")


def _tensor_iterator_model() -> ov.Model:
    x = _p("x", [4, 3])
    bx = _p("bx", [1, 3])
    body = ov.Model([ops.result(ops.relu(bx))], [bx], "body")
    iterator = opset8.tensor_iterator()
    iterator.set_body(body)
    iterator.set_sliced_input(bx, x.output(0), 0, 1, 1, -1, 0)
    out = iterator.get_concatenated_slices(body.get_results()[0].input_value(0), 0, 1, 1, -1, 0)
    iterator.set_friendly_name("per_row")
    return ov.Model([out], [x], "tensor_iterator")


def _unwritable_body() -> ov.Model:
    x, cond = _p("x", [2, 3, 4]), _p("cond", [], bool)
    tx = _p("tx", [2, 3, 4])
    reversed_ = ops.reverse_sequence(tx, _c(np.array([3, 1], np.int32)), 0, 1)
    reversed_.set_friendly_name("reverse_me")
    ex = _p("ex", [2, 3, 4])
    node = _if(cond.output(0), _body([reversed_.output(0)], [tx], "then"), _body([ex.output(0)], [ex], "else"),
               [(x.output(0), 0, 0)], "guarded")
    return ov.Model([node.output(0)], [x, cond], "unwritable_body")


@pytest.mark.parametrize(("make", "starts", "says"), [
    (_loop_model, "Loop-5 'count_up'", "loops are not translated"),
    (_tensor_iterator_model, "TensorIterator-1 'per_row'", "loops are not translated"),
    (_unwritable_body, "If-8 'guarded'", "its then body cannot be written: ReverseSequence-"),
])
def test_what_cannot_be_expressed_is_refused_by_name(make: Callable[[], ov.Model], starts: str, says: str,
                                                     tmp_path: Path) -> None:
    model = make()
    feeds = {p.get_friendly_name(): (_f(*p.get_partial_shape().to_shape()) if p.get_element_type() == ov.Type.f32
                                     else np.array(True)) for p in model.get_parameters()}
    openvino_cpu(model, feeds)  # OpenVINO runs it: the IR is valid, only its ONNX translation is refused
    with pytest.raises(IRNotConvertible) as caught:
        ir_to_onnx(_save(model, tmp_path))
    assert any(line.startswith(starts) and says in line for line in caught.value.lines), caught.value.lines


# --- the real model: silero VAD, whose IRs hold If (bench/real_models.py fetches them) ------------------------------

CORPUS = Path.home() / ".cache" / "onnx-bcast" / "corpus"
SILERO = ("silero_vad", "silero_vad_op15", "silero_vad_half")


def _corpus_pair(name: str) -> tuple[Path, Path]:
    irs = sorted(CORPUS.glob(f"ir/*/{name}.xml"))
    original = CORPUS / "models" / f"{name}.onnx"
    if not irs or not original.is_file():
        pytest.skip(f"the corpus model {name} is not fetched (bench/real_models.py fetch)")
    return irs[-1], original


@pytest.mark.parametrize("name", SILERO)
def test_silero_vad_equals_onnx_runtime_on_the_original(name: str) -> None:
    """The IR (written by OpenVINO's ONNX frontend) through from-ir, in plain ORT, against ORT on the original ONNX,
    at both sample rates where the model takes one (the If selects on it)."""
    xml, original = _corpus_pair(name)
    written = ir_to_onnx(xml)
    assert _ifs(written) >= 1
    ours = ort.InferenceSession(written.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = ort.InferenceSession(str(original), providers=["CPUExecutionProvider"])
    names = {i.name for i in theirs.get_inputs()}
    rng = np.random.default_rng(31)
    for rate in (16000, 8000) if "sr" in names else (None,):
        samples = 256 if rate == 8000 and name == "silero_vad" else 512  # the others' IRs are static
        feeds = {"input": rng.uniform(-0.5, 0.5, (1, samples)).astype(np.float32),
                 "state": rng.uniform(-0.5, 0.5, (2, 1, 128)).astype(np.float32)}
        if rate is not None:
            feeds["sr"] = np.array(rate, np.int64)
        for got, want in zip(ours.run(None, feeds), theirs.run(None, feeds), strict=True):
            assert got.shape == want.shape
            assert float(np.abs(got.astype(np.float64) - want).max()) <= 1e-4, (name, rate)


def test_onnxifier_passes_the_placeholder_relies_on() -> None:
    """Fails loudly when onnxifier changes what control_flow relies on: the default passes it excludes are named so,
    no onnxifier pass takes If (ours would not run), and its dead-node pass still ignores subgraph reads (the reason
    for the placeholder: if it changes, the placeholder may be dropped)."""
    import importlib.util
    import inspect

    from onnxifier import PassManager
    from onnxifier.domain.intel.openvino.passes.op import OP_CONVERT
    from onnxifier.graph import OnnxGraph

    from onnx_bcast.onnxifier.owned import control_flow

    defaults = {getattr(p, "__NAME__", None) for p in PassManager().activated}
    installed = {name for name, module in (("onnxsim", "onnxsim"), ("onnx_optimizer", "onnxoptimizer"))
                 if importlib.util.find_spec(module)}  # onnxifier registers each only where its package is
    assert installed <= set(control_flow.UNSAFE_PASSES)
    assert installed <= defaults, installed - defaults
    assert not [name for name in OP_CONVERT if name.lower() in ("if", "loop", "tensor_iterator")]
    assert "node.input" in inspect.getsource(OnnxGraph._build_edges)  # edges from explicit inputs only


def test_validate_finds_a_foreign_op_inside_a_branch(tmp_path: Path) -> None:
    """A node outside ONNX and onnx_bcast inside an If's branch is named by the checks, as one at the top would be."""
    from onnx import TensorProto, helper

    from onnx_bcast.onnxifier.validate import validate

    model, _ = _integer_outputs()
    xml = _save(model, tmp_path)
    foreign = helper.make_graph([helper.make_node("Negative", ["a"], ["y"], domain="ai.intel.openvino",
                                                  name="integers/then/neg")], "then", [],
                                [helper.make_tensor_value_info("y", TensorProto.INT32, [3])])
    plain = helper.make_graph([helper.make_node("Neg", ["a"], ["z"], name="integers/else/neg")], "else", [],
                              [helper.make_tensor_value_info("z", TensorProto.INT32, [3])])
    graph = helper.make_graph([helper.make_node("If", ["cond"], ["out"], name="integers", then_branch=foreign,
                                                else_branch=plain)], "g",
                              [helper.make_tensor_value_info("a", TensorProto.INT32, [3]),
                               helper.make_tensor_value_info("cond", TensorProto.BOOL, [1])],
                              [helper.make_tensor_value_info("out", TensorProto.INT32, [3])])
    written = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    lines = validate(written, xml, keep_ops=False)
    assert lines and lines[0].startswith("If-8 'integers': written as ai.intel.openvino.Negative"), lines
