"""OpenVINO IRs built with OpenVINO's Python API, for the IR route's tests and bench/onnxifier_alone.py.

Each case is a model, its feeds, and whether the values must be bit-exact (data movement, integers, comparisons,
logical ops) or are float arithmetic (compared within 1e-5). ``fails`` marks feeds OpenVINO's reference refuses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import openvino as ov
import openvino.opset13 as ops
from openvino.utils.node_factory import NodeFactory

RNG_SEED = 22
BINARY_OPS = ("Add", "Subtract", "Multiply", "Divide", "Power", "Maximum", "Minimum", "Mod", "FloorMod", "Equal",
              "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalXor",
              "SquaredDifference")
LOGICAL = ("LogicalAnd", "LogicalOr", "LogicalXor")
EXACT_OPS = ("Maximum", "Minimum", "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", *LOGICAL)
#: B's shape and the pdpd axis per rule, A being (2, 3, 3): pdpd's [3] at axis 1 also fits numpy's alignment
#: (at axis 2), so a converter that ignores the axis gives wrong values rather than an error.
RULES = {"none": ((2, 3, 3), None), "numpy": ((3, 1), None), "pdpd": ((3,), 1)}


@dataclass
class IrCase:
    name: str
    build: Callable[[], tuple[ov.Model, dict[str, np.ndarray]]]
    exact: bool = True
    fails: bool = False
    tags: tuple[str, ...] = field(default_factory=tuple)
    #: where OpenVINO's reference cannot serve as the oracle, numpy's formula on the feeds (and why)
    numpy_expected: Callable[[dict[str, np.ndarray]], np.ndarray] | None = None
    why_numpy: str = ""


def _param(name: str, shape: list[int], dtype: type) -> ov.Node:
    return ops.parameter(ov.PartialShape(shape), dtype, name=name)


def _i64(values: list[int]) -> ov.Output:
    return ops.constant(np.array(values, np.int64)).output(0)


def _broadcast(version: int, data: ov.Output, target: ov.Output, mode: str, axes: list[int] | None = None,
               axis: int | None = None) -> ov.Node:
    inputs = [data, target]
    attrs: dict[str, object] = {"mode": mode}
    if axes is not None:
        inputs.append(_i64(axes))
    elif version == 1 and mode != "numpy":
        inputs.append(_i64([0]))  # Broadcast-1 through the NodeFactory wants a third input; pdpd ignores it
    if axis is not None:
        attrs["mode.auto_broadcast_axis" if version == 1 else "mode.mode.axis"] = axis
    return NodeFactory(f"opset{version}").create("Broadcast", inputs, attrs)


def broadcast_cases() -> list[IrCase]:
    rng = np.random.default_rng(RNG_SEED)
    data3 = rng.standard_normal(3).astype(np.float32)
    data13 = rng.standard_normal((1, 3)).astype(np.float32)
    cases = []
    explicit = {1: "none", 3: "explicit"}
    for version in (1, 3):
        def const(version=version, mode="numpy", d=data13, target=(2, 4, 3), axes=None, axis=None):
            def build() -> tuple[ov.Model, dict[str, np.ndarray]]:
                x = _param("x", list(d.shape), np.float32)
                node = _broadcast(version, x.output(0), _i64(list(target)), mode, axes, axis)
                return ov.Model([node], [x]), {"x": d}
            return build
        cases += [IrCase(f"broadcast{version}_numpy", const()),
                  IrCase(f"broadcast{version}_{explicit[version]}", const(mode=explicit[version], d=data3,
                                                                           target=(2, 3, 4), axes=[1])),
                  IrCase(f"broadcast{version}_{explicit[version]}_axis0", const(mode=explicit[version], d=data3,
                                                                                 target=(3, 2, 4), axes=[0])),
                  IrCase(f"broadcast{version}_pdpd", const(mode="pdpd", d=data13, target=(2, 4, 3), axis=1))]
    cases.append(IrCase("broadcast3_bidirectional", const(mode="bidirectional", d=rng.standard_normal(
        (2, 1, 3)).astype(np.float32), target=(4, 1))))
    cases += [IrCase(f"broadcast{v}_{explicit[v]}_nchw_bias_shapeof", _nchw_bias(v, explicit[v])) for v in (1, 3)]
    cases += [IrCase(f"broadcast{v}_{explicit[v]}_axis0_runtime", _runtime_axis0(v, explicit[v])) for v in (1, 3)]
    cases += [IrCase(f"broadcast{v}_numpy_runtime", _runtime_numpy(v)) for v in (1, 3)]
    cases += [IrCase(f"broadcast{v}_{explicit[v]}_bad_runtime_target", _runtime_axis0(v, explicit[v], bad=True),
                     fails=True) for v in (1, 3)]
    return cases


def _nchw_bias(version: int, mode: str) -> Callable[[], tuple[ov.Model, dict[str, np.ndarray]]]:
    """features [?, 4, ?, ?] + Broadcast(bias [4], ShapeOf(features), axes [1]): the usual dynamic-NCHW bias."""
    def build() -> tuple[ov.Model, dict[str, np.ndarray]]:
        rng = np.random.default_rng(RNG_SEED)
        x, bias = _param("features", [-1, 4, -1, -1], np.float32), _param("bias", [4], np.float32)
        node = _broadcast(version, bias.output(0), ops.shape_of(x).output(0), mode, [1])
        out = ops.add(x, node)
        return ov.Model([out], [x, bias]), {"features": rng.standard_normal((2, 4, 3, 5)).astype(np.float32),
                                            "bias": rng.standard_normal(4).astype(np.float32)}
    return build


def _runtime_axis0(version: int, mode: str, bad: bool = False) -> Callable[[], tuple[ov.Model, dict]]:
    """data [3] on axis 0 of a target read at run time from ``shape`` (int64 [3]); ``bad``: a target whose axis 0
    is 4, which OpenVINO refuses."""
    def build() -> tuple[ov.Model, dict[str, np.ndarray]]:
        data, shape = _param("data", [3], np.float32), _param("shape", [3], np.int64)
        node = _broadcast(version, data.output(0), shape.output(0), mode, [0])
        return ov.Model([node], [data, shape]), {"data": np.array([1.5, -2.0, 3.25], np.float32),
                                                 "shape": np.array([4 if bad else 3, 2, 4], np.int64)}
    return build


def _runtime_numpy(version: int) -> Callable[[], tuple[ov.Model, dict[str, np.ndarray]]]:
    def build() -> tuple[ov.Model, dict[str, np.ndarray]]:
        data, shape = _param("data", [3, 1], np.float32), _param("shape", [3], np.int64)
        node = _broadcast(version, data.output(0), shape.output(0), "numpy")
        return ov.Model([node], [data, shape]), {"data": np.array([[1.5], [-2.0], [3.25]], np.float32),
                                                 "shape": np.array([2, 3, 4], np.int64)}
    return build


def _operands(op: str, dtype: type, a_shape: tuple, b_shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(RNG_SEED)
    if op in LOGICAL:
        return rng.random(a_shape) < 0.5, rng.random(b_shape) < 0.5
    if np.dtype(dtype).kind == "i":
        a = rng.integers(-20, 21, a_shape).astype(dtype)
        b = rng.integers(-6, 7, b_shape).astype(dtype)
        b[b == 0] = -3
        if op == "Power":
            a, b = np.abs(a) % 5, np.abs(b) % 4
        return a, b
    a = rng.standard_normal(a_shape).astype(dtype) * 4
    b = rng.standard_normal(b_shape).astype(dtype) * 3
    if op == "Power":
        a = np.abs(a) + 0.5
    return a, b


def binary_case(op: str, rule: str, dtype: type = np.float32, a_shape: tuple = (2, 3, 3),
                b_shape: tuple | None = None, axis: int | None = None, name: str | None = None,
                pythondiv: bool = True) -> IrCase:
    b_default, axis_default = RULES[rule]
    b_shape = b_default if b_shape is None else b_shape
    axis = axis_default if axis is None else axis
    dtype = np.bool_ if op in LOGICAL else dtype

    def build() -> tuple[ov.Model, dict[str, np.ndarray]]:
        a, b = _operands(op, dtype, a_shape, b_shape)
        pa, pb = _param("a", list(a_shape), dtype), _param("b", list(b_shape), dtype)
        attrs: dict[str, object] = {"auto_broadcast": rule}
        if rule == "pdpd":
            attrs["auto_broadcast.auto_broadcast_axis"] = axis
        if op == "Divide":
            attrs["m_pythondiv"] = pythondiv
        node = NodeFactory("opset1" if op != "SquaredDifference" else "opset1").create(
            op, [pa.output(0), pb.output(0)], attrs)
        return ov.Model([node], [pa, pb]), {"a": a, "b": b}
    exact = op in EXACT_OPS or np.dtype(dtype).kind != "f"
    case = IrCase(name or f"{op}_{rule}_{np.dtype(dtype).name}", build, exact=exact)
    aligned = _aligned(a_shape, b_shape, axis) if rule == "pdpd" else b_shape
    if op == "Mod" and np.dtype(dtype).kind == "f":  # OpenVINO's Mod: the sign of the dividend, C's fmod
        case.numpy_expected = lambda f: np.fmod(f["a"], f["b"].reshape(aligned))
        case.why_numpy = "OpenVINO's reference has no float Mod kernel (not folded)"
    if op in ("Greater", "GreaterEqual") and rule == "pdpd":
        fn = np.greater if op == "Greater" else np.greater_equal
        case.numpy_expected = lambda f: fn(f["a"], f["b"].reshape(aligned))
        case.why_numpy = f"OpenVINO's reference {op} under pdpd with an axis gives wrong values"
    return case


def _aligned(a_shape: tuple, b_shape: tuple, axis: int) -> tuple[int, ...]:
    """B's shape as pdpd aligns it inside A (trailing 1s dropped, 1s before axis and after B's end)."""
    trimmed = list(b_shape)
    while trimmed and trimmed[-1] == 1:
        trimmed.pop()
    start = len(a_shape) - len(b_shape) if axis == -1 else axis
    return (1,) * start + tuple(trimmed) + (1,) * (len(a_shape) - start - len(trimmed))


def binary_cases() -> list[IrCase]:
    cases = [binary_case(op, rule) for op in BINARY_OPS for rule in RULES]
    for op in ("Divide", "Mod", "FloorMod"):
        cases += [binary_case(op, rule, np.int32) for rule in RULES]
        cases.append(binary_case(op, "numpy", np.int64, name=f"{op}_numpy_int64"))
    cases.append(binary_case("Divide", "numpy", np.int32, pythondiv=False, name="Divide_numpy_int32_truncating"))
    cases.append(binary_case("Add", "pdpd", a_shape=(2, 3, 4), b_shape=(3, 1), axis=1, name="Add_pdpd_trailing_one"))
    cases.append(binary_case("Multiply", "pdpd", a_shape=(2, 3, 4, 5), b_shape=(3, 4), axis=1,
                             name="Multiply_pdpd_middle"))
    return cases


def jax_cases() -> list[IrCase]:
    """IRs from JAX through OpenVINO's JAX frontend (``lax.broadcast_in_dim`` becomes Broadcast explicit)."""
    def bias() -> tuple[ov.Model, dict[str, np.ndarray]]:
        from jax import lax

        def fn(x: np.ndarray, b: np.ndarray) -> np.ndarray:
            return x * lax.broadcast_in_dim(b, (2, 3, 4), (1,))
        x = np.random.default_rng(RNG_SEED).standard_normal((2, 3, 4)).astype(np.float32)
        b = np.array([1.5, -2.0, 0.25], np.float32)
        return _from_jax(fn, x, b), {"x": x, "b": b}

    def int_div() -> tuple[ov.Model, dict[str, np.ndarray]]:
        from jax import lax

        def fn(x: np.ndarray, b: np.ndarray) -> np.ndarray:
            return lax.div(x, lax.broadcast_in_dim(b, (2, 3), (0,)))
        x = np.array([[7, -7, 9], [-9, 5, -5]], np.int32)
        b = np.array([2, -3], np.int32)
        return _from_jax(fn, x, b), {"x": x, "b": b}
    return [IrCase("jax_broadcast_in_dim_mul", bias, exact=False), IrCase("jax_lax_div_int32", int_div)]


def _from_jax(fn: Callable, x: np.ndarray, b: np.ndarray) -> ov.Model:
    import jax

    model = ov.convert_model(jax.make_jaxpr(fn)(x, b))
    names = ("x", "b")
    for param, name in zip(model.get_parameters(), names, strict=True):
        param.set_friendly_name(name)
        param.output(0).get_tensor().set_names({name})
    return model


def all_cases() -> list[IrCase]:
    return broadcast_cases() + binary_cases() + jax_cases()
