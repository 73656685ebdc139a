"""Every element type, 0-d and zero-size shapes and runtime shape inputs through ONNX Runtime, against numpy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast

# --------------------------------------------------------------------------------------------- element types

#: name -> (ONNX element type, numpy dtype of the graph's input/output)
DTYPES: dict[str, tuple[int, Any]] = {
    "int8": (TensorProto.INT8, np.int8),
    "int16": (TensorProto.INT16, np.int16),
    "int32": (TensorProto.INT32, np.int32),
    "int64": (TensorProto.INT64, np.int64),
    "uint8": (TensorProto.UINT8, np.uint8),
    "uint16": (TensorProto.UINT16, np.uint16),
    "uint32": (TensorProto.UINT32, np.uint32),
    "uint64": (TensorProto.UINT64, np.uint64),
    "bool": (TensorProto.BOOL, np.bool_),
    "float32": (TensorProto.FLOAT, np.float32),
    "float64": (TensorProto.DOUBLE, np.float64),
    "float16": (TensorProto.FLOAT16, np.float16),
    "string": (TensorProto.STRING, object),
    # bfloat16 has no numpy dtype: the graph takes and returns float32 and Casts around our op
    "bfloat16": (TensorProto.BFLOAT16, np.float32),
}

#: values exactly representable in bfloat16 (8 significant bits, float32's exponent range)
BF16_VALUES = [1.5, -0.0, np.inf, -np.inf, 2.0**127, 2.0**-126, -2.25, 3.0, 0.15625, -7.0, 1024.0, np.nan]


def sample_values(name: str) -> list[Any]:
    """Distinctive values of a type: extremes, signed zero, infinities, NaN, subnormals, odd strings."""
    _, dtype = DTYPES[name]
    if name == "bfloat16":
        return BF16_VALUES
    if name == "bool":
        return [True, False, False, True, True, False, True, False]
    if name == "string":
        return ["", "a", "Zürich", "x" * 40, "with space", "日本語", "b", "c\td", "0", "last"]
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return list(dict.fromkeys([int(info.min), int(info.max), 0, 1, 2, int(info.max) - 1, 3, 4, 5, 6, 7, 8]))
    info = np.finfo(dtype)
    return [1.5, -0.0, np.inf, -np.inf, float(info.max), float(info.smallest_subnormal), -2.25, np.nan, 3.0, 0.5,
            -float(info.tiny), 7.0]


def sample(name: str, shape: tuple[int, ...], shift: int = 0) -> np.ndarray:
    """An array of ``shape`` filled with the type's sample values (cycled from ``shift``)."""
    _, dtype = DTYPES[name]
    values = sample_values(name)
    size = int(np.prod(shape, dtype=np.int64))
    flat = [values[(i + shift) % len(values)] for i in range(size)]
    return np.array(flat, dtype=dtype).reshape(shape)


def assert_exact(actual: Any, expected: np.ndarray) -> None:
    """Same shape, same dtype, same values bit for bit (NaN and -0.0 included)."""
    assert isinstance(actual, np.ndarray), type(actual)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype == object:
        assert actual.dtype == object, actual.dtype
        assert actual.tolist() == expected.tolist()
        return
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert np.ascontiguousarray(actual).tobytes() == np.ascontiguousarray(expected).tobytes(), (actual, expected)


# --------------------------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One op call; ``expect`` is an independent numpy expression of the result."""

    id: str
    op: str
    data_shape: tuple[int, ...]
    expect: Callable[[np.ndarray], np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    target: tuple[int, ...] | None = None  # Broadcast/Expand: target_shape
    axes: tuple[int, ...] | None = None  # Broadcast/Expand: axes_mapping (explicit mode)
    like_shape: tuple[int, ...] | None = None  # BroadcastLikeV0: the shape of like_arg


def _full(shape: tuple[int, ...]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: np.full(shape, x.item(), dtype=x.dtype)


CASES = [
    Case("broadcast_default", "Broadcast", (4,), lambda x: np.tile(x, (3, 1)), target=(3, 4)),
    Case("broadcast_numpy", "Broadcast", (3, 1), lambda x: np.broadcast_to(x, (2, 3, 4)), {"mode": "numpy"},
         target=(2, 3, 4)),
    Case("broadcast_explicit", "Broadcast", (3,), lambda x: np.broadcast_to(x.reshape(1, 3, 1), (2, 3, 4)),
         {"mode": "explicit"}, target=(2, 3, 4), axes=(1,)),
    Case("broadcast_none_stretch", "Broadcast", (1, 4), lambda x: np.tile(x.reshape(1, 1, 4), (3, 2, 1)),
         {"mode": "NONE"}, target=(3, 2, 4), axes=(0, 2)),
    Case("broadcast_bidirectional", "Broadcast", (3, 1), lambda x: np.tile(x, (2, 1, 4)),
         {"mode": "bidirectional"}, target=(2, 1, 4)),
    Case("broadcast_pdpd_axis1", "Broadcast", (3, 1), lambda x: np.broadcast_to(x.reshape(1, 3, 1), (2, 3, 4)),
         {"mode": "pdpd", "axis": 1}, target=(2, 3, 4)),
    Case("broadcast_pdpd_target_one", "Broadcast", (1, 4), lambda x: np.tile(x.reshape(1, 1, 4), (2, 3, 1)),
         {"mode": "pdpd"}, target=(2, 3, 1)),
    Case("expand_default", "Expand", (3, 1), lambda x: np.tile(x, (2, 1, 4)), target=(2, 1, 4)),
    Case("expand_explicit", "Expand", (3,), lambda x: np.tile(x.reshape(3, 1), (1, 2)), {"mode": "explicit"},
         target=(3, 2), axes=(0,)),
    Case("v0_inner", "BroadcastV0", (3,), lambda x: np.broadcast_to(x.reshape(1, 3, 1), (2, 3, 4)),
         {"shape": [2, 3, 4], "broadcast_axes": [0, 2]}),
    Case("v0_leading", "BroadcastV0", (2, 3), lambda x: np.tile(x, (4, 1, 1)),
         {"shape": [4, 2, 3], "broadcast_axes": [0]}),
    Case("like_v0_given", "BroadcastLikeV0", (3,), lambda x: np.broadcast_to(x.reshape(1, 3, 1), (2, 3, 4)),
         {"initial_broadcast_axes": [0, 2]}, like_shape=(2, 3, 4)),
    Case("like_v0_deduced", "BroadcastLikeV0", (2,), lambda x: np.tile(x.reshape(2, 1, 1), (1, 3, 4)),
         like_shape=(2, 3, 4)),
]

EDGE_CASES = [
    # zero-size shapes
    Case("numpy_0x3_to_2x0x3", "Broadcast", (0, 3), lambda x: np.zeros((2, 0, 3), x.dtype), target=(2, 0, 3)),
    Case("numpy_1_to_0", "Broadcast", (1,), lambda x: np.zeros((0,), x.dtype), target=(0,)),
    Case("bidirectional_0x1_with_1x4", "Broadcast", (0, 1), lambda x: np.zeros((0, 4), x.dtype),
         {"mode": "bidirectional"}, target=(1, 4)),
    Case("bidirectional_2x1_with_0", "Expand", (2, 1), lambda x: np.zeros((2, 0), x.dtype), target=(0,)),
    Case("explicit_0_to_2x0", "Broadcast", (0,), lambda x: np.zeros((2, 0), x.dtype), {"mode": "explicit"},
         target=(2, 0), axes=(1,)),
    Case("pdpd_0_with_3x1", "Broadcast", (0,), lambda x: np.zeros((3, 0), x.dtype), {"mode": "pdpd"},
         target=(3, 1)),
    Case("v0_0_to_2x0", "BroadcastV0", (0,), lambda x: np.zeros((2, 0), x.dtype),
         {"shape": [2, 0], "broadcast_axes": [0]}),
    Case("v0_0x3_to_0x3x2", "BroadcastV0", (0, 3), lambda x: np.zeros((0, 3, 2), x.dtype),
         {"shape": [0, 3, 2], "broadcast_axes": [2]}),
    Case("like_v0_0_to_0x4", "BroadcastLikeV0", (0,), lambda x: np.zeros((0, 4), x.dtype), like_shape=(0, 4)),
    Case("like_v0_3_to_0x3", "BroadcastLikeV0", (3,), lambda x: np.zeros((0, 3), x.dtype),
         {"initial_broadcast_axes": [0]}, like_shape=(0, 3)),
    # 0-d scalars
    Case("numpy_scalar_to_2x2", "Broadcast", (), _full((2, 2)), target=(2, 2)),
    Case("numpy_scalar_to_scalar", "Broadcast", (), lambda x: x.copy(), target=()),
    Case("numpy_identity", "Broadcast", (2, 3), lambda x: x.copy(), target=(2, 3)),
    Case("bidirectional_scalar", "Broadcast", (), _full((3,)), {"mode": "bidirectional"}, target=(3,)),
    Case("explicit_scalar_no_axes", "Broadcast", (), _full((2, 3)), {"mode": "explicit"}, target=(2, 3), axes=()),
    Case("explicit_scalar_one_axis", "Broadcast", (), _full((2, 1, 3)), {"mode": "explicit"}, target=(2, 1, 3),
         axes=(1,)),
    Case("pdpd_scalar", "Broadcast", (), _full((2, 3)), {"mode": "pdpd"}, target=(2, 3)),
    Case("expand_scalar", "Expand", (), _full((2, 2)), target=(2, 2)),
    Case("v0_scalar", "BroadcastV0", (), _full((2, 3)), {"shape": [2, 3], "broadcast_axes": [0, 1]}),
    Case("v0_identity", "BroadcastV0", (2, 3), lambda x: x.copy(), {"shape": [2, 3], "broadcast_axes": []}),
    Case("like_v0_scalar", "BroadcastLikeV0", (), _full((2, 3)), like_shape=(2, 3)),
]

RUNTIME_CASES = [c for c in CASES if c.op in ("Broadcast", "Expand")]
EDGE_DTYPES = ["float32", "float16", "bfloat16", "string", "bool", "uint64"]
RUNTIME_DTYPES = ["float32", "float16", "bfloat16", "string", "int8", "uint64"]


# --------------------------------------------------------------------------------------------- models


def build(case: Case, dtype: str, shape_input: int | None = None) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The model of one case and its feeds.

    ``shape_input`` None: target_shape/axes_mapping are int64 initializers and the data shape is declared;
    else they are graph inputs of that element type and every shape is left dynamic.
    """
    elem, _ = DTYPES[dtype]
    graph_elem = TensorProto.FLOAT if elem == TensorProto.BFLOAT16 else elem
    static = shape_input is None
    inputs = [helper.make_tensor_value_info("x", graph_elem, list(case.data_shape) if static else None)]
    feeds = {"x": sample(dtype, case.data_shape)}
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def typed(name: str) -> str:
        if elem != TensorProto.BFLOAT16:
            return name
        nodes.append(helper.make_node("Cast", [name], [f"{name}_bf16"], name=f"{name}_to_bf16", to=elem))
        return f"{name}_bf16"

    def shape_value(name: str, values: tuple[int, ...]) -> str:
        if static:
            inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64).reshape(-1), name))
        else:
            inputs.append(helper.make_tensor_value_info(name, shape_input, [None]))
            np_type = helper.tensor_dtype_to_np_dtype(shape_input)
            feeds[name] = np.array(values, dtype=np_type).reshape(-1)
        return name

    op_inputs = [typed("x")]
    if case.op in ("Broadcast", "Expand"):
        op_inputs.append(shape_value("target", case.target))
        if case.axes is not None:
            op_inputs.append(shape_value("axes", case.axes))
    elif case.op == "BroadcastLikeV0":
        inputs.append(helper.make_tensor_value_info("like", graph_elem, list(case.like_shape) if static else None))
        feeds["like"] = sample(dtype, case.like_shape, shift=3)
        op_inputs.append(typed("like"))
    out = "y_bf16" if elem == TensorProto.BFLOAT16 else "y"
    node = helper.make_node(case.op, op_inputs, [out], domain=onnx_bcast.DOMAIN, name=f"{case.id}_node")
    for key, value in case.attrs.items():
        kind = onnx.AttributeProto.INTS if isinstance(value, list) else None
        node.attribute.append(helper.make_attribute(key, value, attr_type=kind))
    nodes.append(node)
    if elem == TensorProto.BFLOAT16:
        nodes.append(helper.make_node("Cast", [out], ["y"], name="y_to_f32", to=TensorProto.FLOAT))
    graph = helper.make_graph(nodes, f"g_{case.id}_{dtype}", inputs,
                              [helper.make_tensor_value_info("y", graph_elem, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(onnx_bcast.DOMAIN, 1)], ir_version=10)
    return model, feeds


def run_both(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The output through onnx_bcast.InferenceSession and through a plain ORT session on the prepared model."""
    ours = onnx_bcast.InferenceSession(model).run(None, feeds)
    plain_session = onnxruntime.InferenceSession(onnx_bcast.prepare(model).SerializeToString(),
                                                 sess_options=onnx_bcast.session_options())
    plain = plain_session.run(None, feeds)
    assert len(ours) == len(plain) == 1
    return ours[0], plain[0]


def check(case: Case, dtype: str, shape_input: int | None = None) -> None:
    model, feeds = build(case, dtype, shape_input)
    expected = case.expect(feeds["x"])
    ours, plain = run_both(model, feeds)
    assert_exact(ours, expected)
    assert_exact(plain, expected)


# --------------------------------------------------------------------------------------------- tests


def test_sample_values_are_what_they_claim() -> None:
    """The inputs really carry the awkward values (so a lossy path cannot pass by accident)."""
    assert sample("uint64", (2,))[1] == np.uint64(2**64 - 1)
    assert sample("int64", (1,))[0] == np.iinfo(np.int64).min
    assert np.signbit(sample("float16", (2,))[1])
    assert sample("float16", (6,))[5] == np.finfo(np.float16).smallest_subnormal
    bf16 = np.array(BF16_VALUES, dtype=np.float32)
    finite = bf16[np.isfinite(bf16)]
    assert not np.any(finite.view(np.uint32) & 0xFFFF), "bfloat16 sample values must be exact in bfloat16"


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_dtype(case: Case, dtype: str) -> None:
    check(case, dtype)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", EDGE_CASES, ids=lambda c: c.id)
def test_scalars_and_zero_size(case: Case, dtype: str) -> None:
    check(case, dtype)


@pytest.mark.parametrize("dtype", EDGE_DTYPES)
@pytest.mark.parametrize("case", EDGE_CASES, ids=lambda c: c.id)
def test_scalars_and_zero_size_dynamic(case: Case, dtype: str) -> None:
    """The same with every shape unknown to the model (and runtime int64 shape inputs)."""
    check(case, dtype, TensorProto.INT64)


@pytest.mark.parametrize("shape_type", [TensorProto.INT64, TensorProto.INT32], ids=["int64", "int32"])
@pytest.mark.parametrize("dtype", RUNTIME_DTYPES)
@pytest.mark.parametrize("case", RUNTIME_CASES, ids=lambda c: c.id)
def test_runtime_target_shape_and_axes(case: Case, dtype: str, shape_type: int) -> None:
    check(case, dtype, shape_type)


@pytest.mark.parametrize("shape_type", [TensorProto.INT64, TensorProto.INT32], ids=["int64", "int32"])
def test_one_session_many_runtime_shapes(shape_type: int) -> None:
    """One session, target and axes_mapping changing from run to run (also their lengths)."""
    case = Case("explicit_runtime", "Broadcast", (3,), lambda x: x, {"mode": "explicit"}, target=(3,), axes=(0,))
    model, _ = build(case, "float32", shape_type)
    np_type = helper.tensor_dtype_to_np_dtype(shape_type)
    ours = onnx_bcast.InferenceSession(model)
    plain = onnxruntime.InferenceSession(onnx_bcast.prepare(model).SerializeToString(),
                                         sess_options=onnx_bcast.session_options())
    x = np.array([1.5, -2.0, 7.25], dtype=np.float32)
    runs = [
        ((3,), (0,), x),
        ((2, 3), (1,), np.tile(x, (2, 1))),
        ((3, 2), (0,), np.tile(x.reshape(3, 1), (1, 2))),
        ((2, 3, 4), (1,), np.broadcast_to(x.reshape(1, 3, 1), (2, 3, 4))),
        ((4, 1, 3), (2,), np.broadcast_to(x, (4, 1, 3))),
        ((0, 3), (1,), np.zeros((0, 3), np.float32)),
    ]
    for target, axes, expected in runs:
        feeds = {"x": x, "target": np.array(target, np_type), "axes": np.array(axes, np_type)}
        assert_exact(ours.run(None, feeds)[0], np.ascontiguousarray(expected))
        assert_exact(plain.run(None, feeds)[0], np.ascontiguousarray(expected))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "string", "int32"])
def test_chained_ops_keep_the_type(dtype: str) -> None:
    """Two of our nodes in a row (the second reads the first's output) keep values and type."""
    elem, _ = DTYPES[dtype]
    graph_elem = TensorProto.FLOAT if elem == TensorProto.BFLOAT16 else elem
    nodes = []
    x = "x"
    if elem == TensorProto.BFLOAT16:
        nodes.append(helper.make_node("Cast", ["x"], ["xb"], to=elem))
        x = "xb"
    nodes += [
        helper.make_node("Broadcast", [x, "t1"], ["mid"], domain=onnx_bcast.DOMAIN, name="first"),
        helper.make_node("BroadcastV0", ["mid"], ["yb" if elem == TensorProto.BFLOAT16 else "y"],
                         domain=onnx_bcast.DOMAIN, name="second", shape=[2, 3, 5], broadcast_axes=[2]),
    ]
    if elem == TensorProto.BFLOAT16:
        nodes.append(helper.make_node("Cast", ["yb"], ["y"], to=TensorProto.FLOAT))
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", graph_elem, [3])],
                              [helper.make_tensor_value_info("y", graph_elem, None)],
                              initializer=[numpy_helper.from_array(np.array([2, 3], np.int64), "t1")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(onnx_bcast.DOMAIN, 1)], ir_version=10)
    data = sample(dtype, (3,))
    expected = np.tile(data.reshape(1, 3, 1), (2, 1, 5))
    ours, plain = run_both(model, {"x": data})
    assert_exact(ours, expected)
    assert_exact(plain, expected)


def test_model_as_path_and_bytes(tmp_path) -> None:
    """InferenceSession takes a path and serialized bytes as well as a ModelProto."""
    model, feeds = build(CASES[1], "float16")
    expected = CASES[1].expect(feeds["x"])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    for source in (str(path), path, model.SerializeToString()):
        assert_exact(onnx_bcast.InferenceSession(source).run(None, feeds)[0], expected)
