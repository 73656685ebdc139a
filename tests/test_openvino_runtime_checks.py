"""onnx_bcast.openvino (issue 24): backprop preconditions checked in the graph at run time; 8-bit arithmetic wraps."""

from __future__ import annotations

from functools import cache

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bcast

ov = pytest.importorskip("openvino")

from onnx_bcast.openvino import extensions  # noqa: E402

OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
        np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8}
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


@cache
def core() -> ov.Core:
    c = ov.Core()
    c.add_extension(extensions())
    return c


def one_node(op: str, attrs: dict, feeds: dict[str, np.ndarray], outputs: int = 1) -> onnx.ModelProto:
    """``op(*feeds)`` with every dim fed at run time (1-D int64 inputs of known length)."""
    infos = [helper.make_tensor_value_info(k, ELEM[v.dtype], [len(v)] if v.dtype == np.int64 else
                                           [f"{k}{i}" for i in range(v.ndim)]) for k, v in feeds.items()]
    elem = ELEM[next(iter(feeds.values())).dtype]
    outs = [helper.make_tensor_value_info(f"out{i}", elem, None) for i in range(outputs)]
    node = helper.make_node(op, list(feeds), [o.name for o in outs], domain="onnx_bcast", name="n", **attrs)
    return helper.make_model(helper.make_graph([node], "g", infos, outs), opset_imports=OPSETS)


def compiled(proto: onnx.ModelProto) -> ov.CompiledModel:
    return core().compile_model(core().read_model(proto.SerializeToString()), "CPU", CONFIG)


def delta_of(shape: tuple[int, ...]) -> np.ndarray:
    return np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)


def i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


# --- run-time preconditions of the backprop ops -------------------------------------------------------------------

# (op, attributes, invalid feeds, valid feeds of the same ranks and lengths, what the message must say)
INVALID = [
    ("Unbroadcast", {}, {"delta": delta_of((3, 2)), "a_shape": i64(2, 3), "b_shape": i64(2, 3)},
     {"delta": delta_of((2, 3)), "a_shape": i64(2, 3), "b_shape": i64(1, 3)},
     r"Unbroadcast\(auto_broadcast=numpy\): delta's shape is not the output shape"),
    ("Unbroadcast", {"auto_broadcast": "numpy"}, {"delta": delta_of((2, 3)), "a_shape": i64(2, 3),
                                                  "b_shape": i64(2, 2)},
     {"delta": delta_of((2, 3)), "a_shape": i64(2, 1), "b_shape": i64(1, 3)}, "do not broadcast"),
    ("Unbroadcast", {"auto_broadcast": "pdpd", "axis": 0},
     {"delta": delta_of((2, 3)), "a_shape": i64(2, 3), "b_shape": i64(3, 2)},
     {"delta": delta_of((2, 3)), "a_shape": i64(2, 3), "b_shape": i64(2, 1)}, "B does not fit A from axis 0"),
    ("Unbroadcast", {"auto_broadcast": "pdpd", "axis": 1},
     {"delta": delta_of((2, 3)), "a_shape": i64(2, 3), "b_shape": i64(3, 2)},
     {"delta": delta_of((2, 3)), "a_shape": i64(2, 3), "b_shape": i64(3, 1)}, "B's dims past A's end 1"),
    ("Unbroadcast", {"auto_broadcast": "pdpd"}, {"delta": delta_of((3, 2)), "a_shape": i64(2, 3),
                                                 "b_shape": i64(3)},
     {"delta": delta_of((2, 3)), "a_shape": i64(2, 3), "b_shape": i64(3)}, "not the output shape"),
    ("Unbroadcast", {"auto_broadcast": "pdpd"}, {"delta": delta_of((2, 1)), "a_shape": i64(2, 1),
                                                 "b_shape": i64(0)},
     {"delta": delta_of((2, 1)), "a_shape": i64(2, 1), "b_shape": i64(1)}, "B does not fit A"),
    ("Unbroadcast", {"auto_broadcast": "none"}, {"delta": delta_of((2, 3)), "a_shape": i64(2, 3),
                                                 "b_shape": i64(-1, 3)},
     {"delta": delta_of((2, 3)), "a_shape": i64(2, 3), "b_shape": i64(2, 3)}, "negative dim"),
    ("Unbroadcast", {"auto_broadcast": "none"}, {"delta": delta_of((2, 3)), "a_shape": i64(2, 3),
                                                 "b_shape": i64(1, 3)},
     {"delta": delta_of((2, 3)), "a_shape": i64(2, 3), "b_shape": i64(2, 3)}, "one shape"),
    ("BroadcastBackprop", {"mode": "explicit"},
     {"delta": delta_of((2, 3, 3)), "data_shape": i64(3, 3), "axes_mapping": i64(2, 1)},
     {"delta": delta_of((2, 3, 3)), "data_shape": i64(3, 3), "axes_mapping": i64(1, 2)}, "strictly increasing"),
    ("BroadcastBackprop", {"mode": "explicit"},
     {"delta": delta_of((2, 3, 3)), "data_shape": i64(3, 3), "axes_mapping": i64(1, 1)},
     {"delta": delta_of((2, 3, 3)), "data_shape": i64(3, 1), "axes_mapping": i64(1, 2)}, "strictly increasing"),
    ("BroadcastBackprop", {"mode": "explicit"},
     {"delta": delta_of((2, 3)), "data_shape": i64(3), "axes_mapping": i64(2)},
     {"delta": delta_of((2, 3)), "data_shape": i64(3), "axes_mapping": i64(1)}, "inside delta's rank 2"),
    ("BroadcastBackprop", {"mode": "explicit"},
     {"delta": delta_of((2, 3)), "data_shape": i64(2), "axes_mapping": i64(1)},
     {"delta": delta_of((2, 3)), "data_shape": i64(2), "axes_mapping": i64(0)}, "neither 1 nor delta's dim"),
    ("BroadcastBackprop", {"mode": "explicit"},
     {"delta": delta_of((2, 3)), "data_shape": i64(), "axes_mapping": i64(1)},
     {"delta": delta_of((2, 1)), "data_shape": i64(), "axes_mapping": i64(1)}, "a scalar's axis must have size 1"),
    ("BroadcastBackprop", {}, {"delta": delta_of((2, 3)), "data_shape": i64(3, 2)},
     {"delta": delta_of((2, 3)), "data_shape": i64(1, 3)}, r"BroadcastBackprop\(mode=numpy\): delta's shape is not"),
    ("BroadcastBackprop", {}, {"delta": delta_of((2, 3)), "data_shape": i64(-1, 3)},
     {"delta": delta_of((2, 3)), "data_shape": i64(2, 3)}, "negative dim"),
    ("BroadcastBackprop", {"mode": "bidirectional"}, {"delta": delta_of((2, 1)), "data_shape": i64(2, 0)},
     {"delta": delta_of((2, 1)), "data_shape": i64(2, 1)}, "not a bidirectional broadcast"),
    ("BroadcastBackprop", {"mode": "pdpd", "axis": 0}, {"delta": delta_of((2, 3)), "data_shape": i64(2, 2)},
     {"delta": delta_of((2, 3)), "data_shape": i64(2, 1)}, "not a pdpd broadcast"),
]


def _kernel(op: str, attrs: dict, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The reference semantics: onnx-bcast's numpy kernels (tested against formulas elsewhere)."""
    if op == "Unbroadcast":
        return list(onnx_bcast.unbroadcast(feeds["delta"], feeds["a_shape"], feeds["b_shape"], **attrs))
    return [onnx_bcast.broadcast_backprop(feeds["delta"], feeds["data_shape"], feeds.get("axes_mapping"), **attrs)]


@pytest.mark.parametrize(("op", "attrs", "feeds", "valid", "said"), INVALID,
                         ids=[f"{c[0]}-{'-'.join(map(str, c[1].values())) or 'numpy'}-{i}"
                              for i, c in enumerate(INVALID)])
def test_invalid_at_run_time_fails_the_run(op: str, attrs: dict, feeds: dict, valid: dict, said: str) -> None:
    """SPEC errs (the kernel raises); OpenVINO's run fails with a RuntimeError quoting our check (it returned a
    value before issue 24); the same request then runs valid feeds to the kernel's value."""
    with pytest.raises(onnx_bcast.BroadcastError):
        _kernel(op, attrs, feeds)
    outputs = 2 if op == "Unbroadcast" else 1
    request = compiled(one_node(op, attrs, feeds, outputs)).create_infer_request()
    with pytest.raises(RuntimeError, match=f"(?s){said}.*checked at run time"):
        request.infer(feeds)
    got = request.infer(valid)
    for k, expected in enumerate(_kernel(op, attrs, valid)):
        np.testing.assert_array_equal(np.asarray(got[k]), expected, strict=True)


# Valid at run time, at the edges the checks must let through: 0-size dims, scalars, pdpd trailing 1s.
VALID = [
    ("BroadcastBackprop", {}, {"delta": delta_of((0,)), "data_shape": i64(1)}),
    ("BroadcastBackprop", {"mode": "bidirectional"}, {"delta": delta_of((2, 0)), "data_shape": i64(1, 0)}),
    ("BroadcastBackprop", {"mode": "explicit"},
     {"delta": delta_of((2, 1, 4)), "data_shape": i64(1, 4), "axes_mapping": i64(1, 2)}),
    ("BroadcastBackprop", {"mode": "explicit"},
     {"delta": delta_of((2, 3, 4)), "data_shape": i64(1, 4), "axes_mapping": i64(0, 2)}),
    ("BroadcastBackprop", {"mode": "pdpd", "axis": 1}, {"delta": delta_of((2, 3, 4)), "data_shape": i64(3, 1)}),
    ("Unbroadcast", {}, {"delta": delta_of((2, 0)), "a_shape": i64(2, 1), "b_shape": i64(0)}),
    ("Unbroadcast", {"auto_broadcast": "pdpd", "axis": 1},
     {"delta": delta_of((2, 3)), "a_shape": i64(2, 3), "b_shape": i64(3, 1)}),
    ("Unbroadcast", {"auto_broadcast": "pdpd"}, {"delta": delta_of((2, 0)), "a_shape": i64(2, 0),
                                                 "b_shape": i64(1)}),
    ("Unbroadcast", {"auto_broadcast": "none"}, {"delta": delta_of((2, 3)), "a_shape": i64(2, 3),
                                                 "b_shape": i64(2, 3)}),
    ("BroadcastBackprop", {"mode": "explicit"},
     {"delta": delta_of((2, 3)), "data_shape": i64(), "axes_mapping": i64()}),
    ("BroadcastBackprop", {"mode": "explicit"},
     {"delta": delta_of((2, 1)), "data_shape": i64(), "axes_mapping": i64(1)}),
    ("BroadcastBackprop", {}, {"delta": delta_of((2, 3)), "data_shape": i64()}),
    ("Unbroadcast", {}, {"delta": delta_of(()), "a_shape": i64(), "b_shape": i64()}),
]


def _summed(delta: np.ndarray, axes: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    return np.sum(delta, axis=axes, keepdims=True).reshape(shape)


#: The same cases' values by numpy formulas written here (the summed axes by hand).
FORMULAS = [
    lambda f: [_summed(f["delta"], (0,), (1,))],
    lambda f: [_summed(f["delta"], (0,), (1, 0))],
    lambda f: [_summed(f["delta"], (0,), (1, 4))],
    lambda f: [_summed(f["delta"], (0, 1), (1, 4))],
    lambda f: [_summed(f["delta"], (0, 2), (3, 1))],
    lambda f: [_summed(f["delta"], (1,), (2, 1)), _summed(f["delta"], (0,), (0,))],
    lambda f: [f["delta"], _summed(f["delta"], (0,), (3, 1))],
    lambda f: [f["delta"], _summed(f["delta"], (0, 1), (1,))],
    lambda f: [f["delta"], f["delta"]],
    lambda f: [_summed(f["delta"], (0, 1), ())],
    lambda f: [_summed(f["delta"], (0, 1), ())],
    lambda f: [_summed(f["delta"], (0, 1), ())],
    lambda f: [f["delta"], f["delta"]],
]


@pytest.mark.parametrize("k", range(len(VALID)), ids=lambda k: f"{VALID[k][0]}-{k}")
def test_valid_at_run_time_passes_the_checks(k: int) -> None:
    op, attrs, feeds = VALID[k]
    expected = FORMULAS[k](feeds)
    for kernel, formula in zip(_kernel(op, attrs, feeds), expected, strict=True):
        np.testing.assert_array_equal(kernel, formula, strict=True)
    got = compiled(one_node(op, attrs, feeds, len(expected)))(feeds)
    for i, formula in enumerate(expected):
        np.testing.assert_array_equal(np.asarray(got[i]), formula.astype(np.float32), strict=True)


def test_known_lengths_wrong_axes_count_is_our_error_when_reading() -> None:
    """explicit axes fed at run time: their count against data_shape's length is known when reading."""
    feeds = {"delta": delta_of((2, 3)), "data_shape": i64(2, 3), "axes_mapping": i64(1)}
    with pytest.raises(onnx_bcast.BroadcastError, match="1 axes for 2 data_shape values"):
        onnx_bcast.openvino.read_model(one_node("BroadcastBackprop", {"mode": "explicit"}, feeds))


# --- 8-bit arithmetic wraps as ONNX Runtime's ---------------------------------------------------------------------


def _formula(op: str, a: np.ndarray, b: np.ndarray, fmod: int) -> np.ndarray:
    """The exact result in int64, wrapped to the input type by numpy's cast (two's complement)."""
    x, y = a.astype(np.int64), b.astype(np.int64)
    exact = {"Add": lambda: x + y, "Sub": lambda: x - y, "Mul": lambda: x * y,
             "Div": lambda: np.trunc(x / y).astype(np.int64), "Max": lambda: np.maximum(x, y),
             "Min": lambda: np.minimum(x, y), "Mod": lambda: np.fmod(x, y) if fmod else np.mod(x, y),
             "Pow": lambda: x ** y}[op]()
    return exact.astype(a.dtype)


EIGHT_BIT_RULES = [("none", -1, (4, 6), (4, 6)), ("numpy", -1, (4, 6), (6,)), ("pdpd", 0, (4, 6), (4,)),
                   ("pdpd", -1, (4, 6), (6,))]


@pytest.mark.parametrize("rule", EIGHT_BIT_RULES, ids=lambda r: f"{r[0]}{r[1]}")
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize(("op", "fmod"), [("Add", 0), ("Sub", 0), ("Mul", 0), ("Div", 0), ("Max", 0), ("Min", 0),
                                          ("Mod", 0), ("Mod", 1), ("Pow", 0)])
def test_eight_bit_arithmetic_wraps(op: str, fmod: int, dtype: type, rule: tuple) -> None:
    """Every rule compiles (8-bit Multiply/Divide/Maximum/Minimum/Power under pdpd did not) and wraps (OpenVINO's
    own 8-bit ops saturate: uint8 200 + 72 was 255). Pow: powers that fit 8 bits (past that ONNX Runtime's
    answer is a double cast out of range)."""
    name, axis, a_shape, b_shape = rule
    rng = np.random.default_rng(24)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, a_shape, endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, b_shape, endpoint=True).astype(dtype)
    if op in ("Div", "Mod"):
        b[b == 0] = 3
    if op == "Pow":
        a = rng.integers(0 if dtype == np.uint8 else -3, 4, a_shape).astype(dtype)
        b = rng.integers(0, 5, b_shape).astype(dtype)
    attrs = {"auto_broadcast": name, "axis": axis} | ({"fmod": fmod} if op == "Mod" else {})
    aligned = b.reshape(b.shape + (1,) * (a.ndim - b.ndim)) if name == "pdpd" and axis == 0 else b
    expected = _formula(op, a, aligned, fmod)
    np.testing.assert_array_equal(onnx_bcast.elementwise(op, a, b, **attrs), expected, strict=True)
    got = compiled(one_node(op, attrs, {"A": a, "B": b}))({"A": a, "B": b})[0]
    np.testing.assert_array_equal(np.asarray(got), expected, strict=True)


def test_uint8_add_wraps_where_openvino_saturated() -> None:
    a, b = np.array([200, 255, 3], np.uint8), np.array([72, 255, 4], np.uint8)
    got = compiled(one_node("Add", {}, {"A": a, "B": b}))({"A": a, "B": b})[0]
    np.testing.assert_array_equal(np.asarray(got), np.array([16, 254, 7], np.uint8), strict=True)


# --- shape inputs known when reading, delta's dims only at run time -----------------------------------------------


def constant_shapes(op: str, attrs: dict, consts: dict[str, list[int]], rank: int, outputs: int) -> onnx.ModelProto:
    """``op(delta, *consts)``: the shape inputs are initializers, delta's dims are fed at run time."""
    node = helper.make_node(op, ["delta", *consts], [f"out{i}" for i in range(outputs)], domain="onnx_bcast",
                            name="n", **attrs)
    delta = helper.make_tensor_value_info("delta", TensorProto.FLOAT, [f"d{i}" for i in range(rank)])
    outs = [helper.make_tensor_value_info(f"out{i}", TensorProto.FLOAT, None) for i in range(outputs)]
    inits = [onnx.numpy_helper.from_array(np.array(v, np.int64), k) for k, v in consts.items()]
    return helper.make_model(helper.make_graph([node], "g", [delta], outs, inits), opset_imports=OPSETS)


# (op, attributes, constant shape inputs, an invalid delta, a valid delta, the valid delta's values by formula)
CONSTANT_SHAPES = [
    ("BroadcastBackprop", {}, {"data_shape": [3, 2]}, (2, 3), (3, 2), lambda d: [d]),
    ("BroadcastBackprop", {}, {"data_shape": [3, 1]}, (3, 4, 2), (2, 3, 4), lambda d: [_summed(d, (0, 2), (3, 1))]),
    ("BroadcastBackprop", {"mode": "explicit"}, {"data_shape": [3], "axes_mapping": [1]}, (2, 4), (2, 3),
     lambda d: [_summed(d, (0,), (3,))]),
    ("Unbroadcast", {}, {"a_shape": [3, 2], "b_shape": [1, 2]}, (2, 3), (3, 2),
     lambda d: [d, _summed(d, (0,), (1, 2))]),
    ("Unbroadcast", {"auto_broadcast": "pdpd", "axis": 0}, {"a_shape": [2, 3], "b_shape": [2]}, (3, 2), (2, 3),
     lambda d: [d, _summed(d, (1,), (2,))]),
]


@pytest.mark.parametrize("case", CONSTANT_SHAPES, ids=lambda c: f"{c[0]}-{list(c[2].values())}")
def test_constant_shapes_check_delta_at_run_time(case: tuple) -> None:
    """Shape inputs known when reading, delta's dims not: a delta that is not the forward output fails the run (it
    returned delta reshaped before); a valid one gives the formula's values."""
    op, attrs, consts, bad_shape, good_shape, formula = case
    outputs = 2 if op == "Unbroadcast" else 1
    bad, good = delta_of(bad_shape), delta_of(good_shape)
    values = {k: np.array(v, np.int64) for k, v in consts.items()}
    with pytest.raises(onnx_bcast.BroadcastError):
        _kernel(op, attrs, {"delta": bad} | values)
    expected = formula(good)
    for kernel, value in zip(_kernel(op, attrs, {"delta": good} | values), expected, strict=True):
        np.testing.assert_array_equal(kernel, value, strict=True)
    request = compiled(constant_shapes(op, attrs, consts, len(bad_shape), outputs)).create_infer_request()
    with pytest.raises(RuntimeError, match=r"(?s)delta is not .*checked at run time"):
        request.infer({"delta": bad})
    got = request.infer({"delta": good})
    for i, value in enumerate(expected):
        np.testing.assert_array_equal(np.asarray(got[i]), value, strict=True)


@pytest.mark.parametrize("rule", [("numpy", -1, (400, 50), (50,)), ("pdpd", 0, (400, 50), (400,)),
                                  ("none", -1, (400, 50), (400, 50))], ids=lambda r: r[0])
def test_float32_div_is_correctly_rounded(rule: tuple) -> None:
    """numpy's float32 division is IEEE's, correctly rounded; OpenVINO's CPU plugin made a ``Divide`` into
    ``a * b**-1`` (1 ulp off for about a quarter of the quotients) until the mapping marked it."""
    name, axis, a_shape, b_shape = rule
    rng = np.random.default_rng(5)
    a = rng.uniform(-100, 100, a_shape).astype(np.float32)
    b = rng.uniform(-100, 100, b_shape).astype(np.float32)
    aligned = b.reshape(b.shape + (1,) * (a.ndim - b.ndim)) if name == "pdpd" else b
    expected = a / aligned
    attrs = {"auto_broadcast": name, "axis": axis}
    np.testing.assert_array_equal(onnx_bcast.elementwise("Div", a, b, **attrs), expected, strict=True)
    got = compiled(one_node("Div", attrs, {"A": a, "B": b}))({"A": a, "B": b})[0]
    np.testing.assert_array_equal(np.asarray(got), expected, strict=True)
