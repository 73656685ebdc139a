"""Converting elementwise ops: a model with every op in every rule becomes standard ONNX with identical outputs."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import onnx_bcast
from onnx_bcast.convert import convert_with_report
from tests.elementwise_util import ALL_OPS, COMPARISON_OPS, LOGICAL_OPS, elementwise_model, values
from tests.onnx_util import plain_session, skip_unless_ort_reads

A_SHAPE = (2, 3, 4, 5)
B_SHAPES = {"none": ((2, 3, 4, 5), -1), "numpy": ((4, 1), -1), "pdpd": ((3, 4), 1)}
OPERAND = {"float": (TensorProto.FLOAT, np.float32), "int": (TensorProto.INT32, np.int32),
           "bool": (TensorProto.BOOL, np.bool_)}


def _kind(op: str) -> str:
    if op in LOGICAL_OPS:
        return "bool"
    return "int" if op in ("Mod", "Div") else "float"  # integer Div truncates, Mod fmod=0 is integer-only


def every_op_model(opset: int, static: bool) -> onnx.ModelProto:
    """Every elementwise op under every rule, 48 nodes reading shared graph inputs."""
    nodes, inputs, outputs = [], [], []
    for kind, (elem, _) in OPERAND.items():
        dims = list(A_SHAPE) if static else ["n", "c", "h", "w"]
        inputs.append(helper.make_tensor_value_info(f"A_{kind}", elem, dims))
        for rule, (b_shape, _) in B_SHAPES.items():
            b_dims = list(b_shape) if static else [f"{rule}{i}" for i in range(len(b_shape))]
            inputs.append(helper.make_tensor_value_info(f"B_{rule}_{kind}", elem, b_dims))
    for op in ALL_OPS:
        kind = _kind(op)
        for rule, (_, axis) in B_SHAPES.items():
            out = f"{op}_{rule}"
            extra = {"fmod": 0} if op == "Mod" else {}
            nodes.append(helper.make_node(op, [f"A_{kind}", f"B_{rule}_{kind}"], [out], domain="onnx_bcast",
                                          name=f"{op}_{rule}_node", auto_broadcast=rule, axis=axis, **extra))
            boolean = op in COMPARISON_OPS or op in LOGICAL_OPS
            outputs.append(helper.make_tensor_value_info(out, TensorProto.BOOL if boolean else OPERAND[kind][0],
                                                         [None] * len(A_SHAPE)))
    graph = helper.make_graph(nodes, "every_elementwise_op", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                   helper.make_opsetid("onnx_bcast", 1)], ir_version=10)


def every_op_feeds(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for kind, (_, dtype) in OPERAND.items():
        op = "Div" if kind == "int" else "Add"  # B values without zeros for the integer divisions
        feeds[f"A_{kind}"] = values(op, A_SHAPE, dtype, rng, "A")
        for rule, (b_shape, _) in B_SHAPES.items():
            feeds[f"B_{rule}_{kind}"] = values(op, b_shape, dtype, rng, "B")
    return feeds


@pytest.mark.parametrize("opset", [11, 13, 17, 26])
@pytest.mark.parametrize("static", [True, False], ids=["static", "runtime"])
def test_every_op_in_every_rule_converts_to_identical_standard_onnx(opset: int, static: bool) -> None:
    skip_unless_ort_reads(opset)
    model = every_op_model(opset, static)
    converted, report = convert_with_report(model)
    assert sum(report.rewritten.values()) == 48
    assert not [n for n in converted.graph.node if n.domain == "onnx_bcast"]
    assert all(o.domain != "onnx_bcast" for o in converted.opset_import)
    assert converted.ir_version <= 13
    onnx.checker.check_model(converted, full_check=True)
    feeds = every_op_feeds()
    custom = onnx_bcast.InferenceSession(model).run(None, feeds)
    plain = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for meta, ours, theirs in zip(model.graph.output, custom, plain, strict=True):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, meta.name
        np.testing.assert_array_equal(theirs, ours, err_msg=meta.name)
        a_shape = A_SHAPE if "numpy" not in meta.name else np.broadcast_shapes(A_SHAPE, B_SHAPES["numpy"][0])
        assert ours.shape == tuple(a_shape), meta.name


def test_rewrites_are_the_standard_op_and_an_unsqueeze_for_pdpd() -> None:
    converted = onnx_bcast.convert(every_op_model(17, static=True))
    counts = Counter(n.op_type for n in converted.graph.node)
    # pdpd B (3,4) at axis 1 of a rank-4 A needs one Unsqueeze (axes [0, 3]); numpy and none need nothing
    assert counts.pop("Unsqueeze") == 16
    # each signed int32/int64 Div of a run-time divisor is wrapped (docs/ops.md): Where(b == -1, -a, Div(a, b'))
    # each such Mod divides by Where(b == -1, 1, b)
    wrapped = Counter({"Constant": 6, "Equal": 3, "Where": 6, "Neg": 3}) + Counter({"Constant": 6, "Equal": 3,
                                                                                    "Where": 3})
    assert counts == Counter({op: 3 for op in ALL_OPS}) + wrapped
    report_lines = convert_with_report(every_op_model(17, static=True))[1].lines()
    assert "Add(auto_broadcast=pdpd): 1 rewritten" in report_lines


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "axis", "aligned"),
    [  # aligned: B's shape as numpy must see it, from SPEC §2 (trailing 1s of B ignored)
        ((2, 3, 4, 5), (4, 5, 1, 1), 2, (1, 1, 4, 5)),
        ((2, 3, 4, 5), (3, 1, 1), 1, (1, 3, 1, 1)),
        ((2, 3, 4, 5), (1, 3), 0, (1, 3, 1, 1)),
        ((2, 3, 4, 5), (), -1, ()),
        ((2, 0, 4), (1, 4), 1, (1, 1, 4)),
        ((2, 3, 4), (2, 3, 4), -1, (2, 3, 4)),
    ],
)
@pytest.mark.parametrize("opset", [11, 13, 17])
def test_pdpd_alignments_with_runtime_dims(a_shape: tuple, b_shape: tuple, axis: int, aligned: tuple,
                                           opset: int) -> None:
    model = elementwise_model("Sub", "pdpd", axis, [f"a{i}" for i in range(len(a_shape))],
                              [f"b{i}" for i in range(len(b_shape))], TensorProto.FLOAT, opset=opset)
    converted = onnx_bcast.convert(model)
    rng = np.random.default_rng(3)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = np.asarray(rng.standard_normal(b_shape).astype(np.float32))
    expected = a - b.reshape(aligned)
    got = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"A": a, "B": b})[0]
    ours = onnx_bcast.InferenceSession(model).run(None, {"A": a, "B": b})[0]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(ours, expected)


def test_static_none_mismatch_is_refused_naming_the_node() -> None:
    model = elementwise_model("Mul", "none", -1, [2, 3], [3], TensorProto.FLOAT)
    with pytest.raises(onnx_bcast.BroadcastError, match=r"Mul\(auto_broadcast=none\) node 'mul_node'.*identical"):
        onnx_bcast.convert(model)


def test_static_pdpd_mismatch_is_refused_naming_the_node() -> None:
    model = elementwise_model("Add", "pdpd", 1, [2, 3, 4], [4], TensorProto.FLOAT)
    with pytest.raises(onnx_bcast.BroadcastError, match=r"Add\(auto_broadcast=pdpd\) node 'add_node'.*A dim 1"):
        onnx_bcast.convert(model)


def test_pdpd_with_unknown_ranks_is_refused_clearly() -> None:
    model = elementwise_model("Add", "pdpd", 1, None, None, TensorProto.FLOAT)
    with pytest.raises(onnx_bcast.BroadcastError, match="needs the ranks of A and B"):
        onnx_bcast.convert(model)


def test_float_mod_without_fmod_is_refused_before_opset_28() -> None:
    """ONNX defines float Mod with fmod=0 from Mod-28 on; before it the converter names the opset needed."""
    model = elementwise_model("Mod", "numpy", -1, [2], [2], TensorProto.FLOAT, fmod=0)
    with pytest.raises(onnx_bcast.BroadcastError, match="fmod=0 needs default-domain opset >= 28"):
        onnx_bcast.convert(model)


def test_converting_twice_changes_nothing_and_keeps_the_input() -> None:
    model = every_op_model(17, static=False)
    before = model.SerializeToString()
    once = onnx_bcast.convert(model)
    assert model.SerializeToString() == before
    assert onnx_bcast.convert(once).SerializeToString() == once.SerializeToString()


@pytest.mark.parametrize("op", ["LessOrEqual", "GreaterOrEqual"])
def test_or_equal_comparisons_before_opset_12_are_exact_with_nan(op: str) -> None:
    model = elementwise_model(op, "pdpd", 0, [3, 4], [3], TensorProto.FLOAT, opset=11)
    a = np.array([[1, np.nan, 3, -np.inf]] * 3, dtype=np.float32)
    b = np.array([1, np.nan, 5], dtype=np.float32)
    numpy_op = np.less_equal if op == "LessOrEqual" else np.greater_equal
    expected = numpy_op(a, b.reshape(3, 1))
    converted = onnx_bcast.convert(model)
    assert "Or" in {n.op_type for n in converted.graph.node}
    got = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"A": a, "B": b})[0]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(onnx_bcast.InferenceSession(model).run(None, {"A": a, "B": b})[0], expected)


def test_a_type_the_standard_op_takes_only_later_names_the_opset() -> None:
    model = elementwise_model("Max", "numpy", -1, [2], [2], TensorProto.INT32, opset=11)
    with pytest.raises(onnx_bcast.BroadcastError, match=r"Max\(auto_broadcast=numpy\) node 'max_node'.*opset >= 12"):
        onnx_bcast.convert(model)
    # InferenceSession has our numpy kernel to fall back on: the op is valid at opset 11, so it runs
    session = onnx_bcast.InferenceSession(model)
    assert [n.domain for n in session.prepared_model.graph.node if n.op_type == "Max"] == ["onnx_bcast.ort"]
    a, b = np.array([3, -7], np.int32), np.array([-2, 5], np.int32)
    np.testing.assert_array_equal(session.run(None, {"A": a, "B": b})[0], np.array([3, 5], np.int32))


def test_shape_inference_keeps_symbolic_dims_and_gives_bool_for_comparisons() -> None:
    inferred = onnx.shape_inference.infer_shapes(every_op_model(17, static=False), strict_mode=True)
    types = {v.name: v.type.tensor_type for v in [*inferred.graph.value_info, *inferred.graph.output]}
    for op in ALL_OPS:
        for rule in B_SHAPES:
            tensor = types[f"{op}_{rule}"]
            boolean = op in COMPARISON_OPS or op in LOGICAL_OPS
            assert tensor.elem_type == (TensorProto.BOOL if boolean else OPERAND[_kind(op)][0]), (op, rule)
            dims = [d.dim_param or d.dim_value for d in tensor.shape.dim]
            if rule == "numpy":  # A [n,c,h,w] with B [numpy0, numpy1]: only the ranks meet for sure
                assert len(dims) == 4, (op, rule, dims)
            else:  # none and pdpd: A's shape
                assert dims == ["n", "c", "h", "w"], (op, rule, dims)


@pytest.mark.parametrize(("op", "elem", "opset"), [
    ("Add", TensorProto.UINT8, 13), ("Sub", TensorProto.UINT8, 13), ("Mul", TensorProto.INT8, 13),
    ("Div", TensorProto.INT8, 13), ("Mul", TensorProto.UINT16, 13), ("Equal", TensorProto.UINT8, 10)])
def test_a_type_the_opset_predates_is_computed_on_a_wider_type_and_cast_back(op: str, elem: int, opset: int) -> None:
    """uint8 Add before opset 14: Cast to int32, Add, Cast back: the same wrapped values as uint8 arithmetic."""
    model = elementwise_model(op, "pdpd", 1, [2, 3, 4], [3], elem, opset=opset)
    converted = onnx_bcast.convert(model)
    ops = [n.op_type for n in converted.graph.node]
    assert op in ops and "Cast" in ops, ops
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    info = np.iinfo(dtype)
    a = np.linspace(info.min, info.max, 24).astype(dtype).reshape(2, 3, 4)
    b = np.array([info.max, 3, info.min if op != "Div" else -1 if info.min < 0 else 7], dtype)
    b_aligned = b.reshape(1, 3, 1)
    wide_a, wide_b = a.astype(np.int64), b_aligned.astype(np.int64)
    formulas = {"Add": lambda: wide_a + wide_b, "Sub": lambda: wide_a - wide_b, "Mul": lambda: wide_a * wide_b,
                "Equal": lambda: wide_a == wide_b, "Div": lambda: np.trunc(wide_a / wide_b).astype(np.int64)}
    exact = formulas[op]()
    expected = exact if op == "Equal" else exact.astype(dtype)  # astype wraps, as C's cast does
    plain = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(plain.run(None, {"A": a, "B": b})[0], expected)
    np.testing.assert_array_equal(onnx_bcast.InferenceSession(model).run(None, {"A": a, "B": b})[0], expected)


@pytest.mark.parametrize("op", ["Max", "Min"])
@pytest.mark.parametrize("elem", [TensorProto.INT16, TensorProto.UINT16])
def test_max_min_of_16_bit_integers_run_in_plain_ort(op: str, elem: int) -> None:
    """ONNX Runtime has no Max/Min kernel for int16/uint16 though the standard op takes them: the converted model
    computes them on int32 and runs; values: numpy's maximum/minimum written here."""
    model = elementwise_model(op, "pdpd", 1, [2, 3, 4], [3], elem, opset=13)
    converted = onnx_bcast.convert(model)
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    info = np.iinfo(dtype)
    a = np.linspace(info.min, info.max, 24).astype(dtype).reshape(2, 3, 4)
    b = np.array([info.max, 3, info.min], dtype)
    expected = (np.maximum if op == "Max" else np.minimum)(a, b.reshape(1, 3, 1))
    plain = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
    got = plain.run(None, {"A": a, "B": b})[0]
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("exponent", [TensorProto.INT8, TensorProto.INT16, TensorProto.UINT8, TensorProto.UINT16,
                                      TensorProto.UINT32, TensorProto.UINT64])
@pytest.mark.parametrize("base", [TensorProto.FLOAT, TensorProto.INT32])
def test_pow_with_exponents_ort_lacks_runs_in_plain_ort(base: int, exponent: int) -> None:
    """ONNX Runtime has no Pow kernel for these exponent types; the standard op, and our kernel, compute an integer
    exponent as a double (C's pow, cast back to the base's type). The converted model runs in plain ORT; values:
    numpy's float64 power written here, cast to the base type (x ** 2 and x ** 3 are exact either way)."""
    model = elementwise_model("Pow", "numpy", -1, [2, 3], [3], base, opset=15, b_elem=exponent)
    converted = onnx_bcast.convert(model)
    base_dtype, exp_dtype = helper.tensor_dtype_to_np_dtype(base), helper.tensor_dtype_to_np_dtype(exponent)
    a = np.array([[-2, -1, 0], [1, 2, 3]], base_dtype)
    b = np.array([5, np.iinfo(exp_dtype).max if exp_dtype.kind == "u" else 3, 2], exp_dtype)
    with np.errstate(all="ignore"):
        wide = np.power(a.astype(np.float64), b.astype(np.float64))
        expected = wide.astype(np.float32) if base_dtype == np.float32 else None
    plain = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
    got = plain.run(None, {"A": a, "B": b})[0]
    assert got.dtype == base_dtype
    kernel = onnx_bcast.elementwise("Pow", a, b)
    if expected is not None:
        np.testing.assert_array_equal(got, expected)
    else:  # int32: huge powers leave int32's range, where C's cast gives the minimum; the small ones are exact
        np.testing.assert_array_equal(got[:, 0], wide[:, 0].astype(np.int32))
        np.testing.assert_array_equal(got[:, 2], wide[:, 2].astype(np.int32))
    np.testing.assert_array_equal(got, kernel)


@pytest.mark.parametrize(("op", "opset"), [("Add", 11), ("Add", 13), ("Add", 17), ("Max", 13), ("Max", 17)])
def test_narrow_types_inside_a_model_local_function(op: str, opset: int) -> None:
    """uint8 Add (and int16 Max) inside a model-local function: the body gives no element type, and before opset 14
    the standard Add has no uint8 (ORT has no int16 Max): the function is inlined at its call site, where the type
    is known, and written widened. It failed with onnx's raw InferenceError. Values: numpy's wrapping uint8 sum and
    int16 maximum, written here."""
    elem, dtype = (TensorProto.UINT8, np.uint8) if op == "Add" else (TensorProto.INT16, np.int16)
    body = helper.make_node(op, ["a", "b"], ["y"], domain="onnx_bcast", name="inner", auto_broadcast="numpy")
    function = helper.make_function("local", "fn", ["a", "b"], ["y"], [body],
                                    [helper.make_opsetid("", opset), helper.make_opsetid("onnx_bcast", 1)])
    graph = helper.make_graph([helper.make_node("fn", ["A", "B"], ["C"], domain="local", name="call")], "g",
                              [helper.make_tensor_value_info("A", elem, [2, 3]),
                               helper.make_tensor_value_info("B", elem, [3])],
                              [helper.make_tensor_value_info("C", elem, None)])
    model = helper.make_model(graph, functions=[function], ir_version=8, opset_imports=[
        helper.make_opsetid("", opset), helper.make_opsetid("onnx_bcast", 1), helper.make_opsetid("local", 1)])
    a, b = np.array([[250, 1, 2], [3, 4, 5]], dtype), np.array([10, 20, 3], dtype)
    expected = (a.astype(np.int64) + b).astype(dtype) if op == "Add" else np.maximum(a, b)
    plain = plain_session(onnx_bcast.convert(model))  # Add(14) on uint8: no kernel in onnxruntime 1.20
    np.testing.assert_array_equal(plain.run(None, {"A": a, "B": b})[0], expected)


def test_pdpd_inside_a_model_local_function_converts_where_its_call_site_gives_the_ranks() -> None:
    """Inside the function nothing is typed; inlined at its call site, the ranks are known and pdpd converts."""
    body = helper.make_node("Add", ["a", "b"], ["y"], domain="onnx_bcast", name="inner", auto_broadcast="pdpd", axis=1)
    function = helper.make_function("local", "BiasAdd", ["a", "b"], ["y"], [body],
                                    [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)])
    graph = helper.make_graph([helper.make_node("BiasAdd", ["A", "B"], ["Y"], domain="local", name="call")], "g",
                              [helper.make_tensor_value_info("A", TensorProto.FLOAT, [2, 3, 4]),
                               helper.make_tensor_value_info("B", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3, 4])])
    model = helper.make_model(graph, functions=[function], ir_version=10, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1), helper.make_opsetid("local", 1)])
    converted = onnx_bcast.convert(model)
    assert all(n.domain != "onnx_bcast" for n in converted.graph.node)
    a, b = np.arange(24, dtype=np.float32).reshape(2, 3, 4), np.array([10, 20, 30], np.float32)
    plain = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(plain.run(None, {"A": a, "B": b})[0], a + b.reshape(1, 3, 1))


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_64_bit_remainders_are_exact_past_2_to_the_53(dtype: str, fmod: int) -> None:
    """onnxruntime 1.20 to 1.30 compute ``Mod`` fmod=1 of 64-bit integers through double (``INT64_MAX fmod -2``
    gives 0): every path gives the exact remainder. Expected: Python's integers (C's fmod: the dividend's sign)."""
    info = np.iinfo(dtype)
    a = np.array([info.max, info.max - 2, info.min + 1, 2 ** 53 + 1], dtype)
    b = np.array([-2, 10, 7, 2] if dtype == "int64" else [2, 10, 7, 2], dtype)

    def remainder(x: int, y: int) -> int:
        if not fmod:
            return x % y
        r = abs(x) % abs(y)
        return -r if x < 0 else r

    want = np.array([remainder(int(x), int(y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)], dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("Mod", ["a", "b"], ["y"], domain="onnx_bcast", auto_broadcast="numpy", fmod=fmod)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", elem, ["n"]),
                                            helper.make_tensor_value_info("b", elem, ["n"])],
                              [helper.make_tensor_value_info("y", elem, None)])
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17),
                                                                  helper.make_opsetid("onnx_bcast", 1)])
    feeds = {"a": a, "b": b}
    converted = onnx_bcast.convert(model)
    runs = {backend: onnx_bcast.InferenceSession(model, backend=backend).run(None, feeds)[0]
            for backend in ("numpy", "native")}
    runs["converted in ORT"] = plain_session(converted).run(None, feeds)[0]
    for where, got in runs.items():
        np.testing.assert_array_equal(got, want, err_msg=where)
