"""Scenario models for ``bench/fuzz.py`` (issue 18): a fuzz case inside a realistic model, run on every path.

For a fraction of the fuzz's cases (drawn from their own seed, so the other paths see the same cases), the case's
node becomes the first node of a model that varies what real models vary:

* the default-domain **opset**, 9..21 (a draw whose standard ops the opset cannot hold is redrawn among those that
  can; converted paths need the guards' opset, 11);
* how the data inputs are **declared**: static, dynamic dims, unknown rank, or symbolic with ``dim_param`` names
  shared across inputs, either by value (dims equal in the fed draw share a name: fed consistently) or by position
  (right-aligned dims share a name whatever they are fed: inconsistent where the values differ);
* shape-like inputs (target_shape, axes_mapping) as constants or fed at run time;
* **chains** of nodes: our node, then a standard Identity/Relu/Neg/Abs, then our elementwise op (none/numpy/pdpd)
  with a new input; the chain's oracle is the composition of the fuzz's own oracles and numpy;
* **declared scalars fed rank 1**: half the cases whose x is a scalar declared as one feed it as ``(1,)`` or
  ``(2,)`` (ONNX Runtime does not check a declared scalar's rank); the model must then fail at the first node;
* **Scan bodies**: for some models with ranked inputs, the chain is the body of a one-iteration ``Scan`` (each input
  fed with a leading axis of 1, the output's squeezed off);
* the tools include ONNX Runtime's symbolic shape inference and its quantization (``quant_pre_process`` then
  ``quantize_dynamic``), run as users run them;
* **claims**: the graph output declared with no shape, its true shape, a stale static shape (another draw's, or the
  valid shape while the invalid input is fed) or ``dim_param`` names; the intermediates' ``value_info`` none, true
  or stale.

Paths: ``scenario_numpy``/``scenario_native`` (InferenceSession; invalid: a BroadcastError naming the first node
that fails), ``scenario_converted_ort`` (the guarded converted model in plain ORT; invalid: any failure) and, for a
sampled fraction, the tools users run on converted models (``TOOL_PATHS``: tests/tool_pipelines.py's helpers,
loaded from its file so that both suites run the very same tool calls). Invalid models run in the fuzz's worker
process (an invalid constant can make ORT abort).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnx_bcast.convert import convert

OPSETS = tuple(range(9, 22))
GUARD_OPSET = 11  # SPEC §3 convert(guards=True): the run-time checks are written with opset-11 ops
SCALAR_CHECK_OPSET = 12  # a declared scalar's rank is checked with Einsum (docs/limits.md)
SCAN_FRACTION = 0.15  # of the scenario models whose inputs have ranks: the chain inside a Scan body
CORE_PATHS = ("scenario_numpy", "scenario_native", "scenario_converted_ort")
ORT_LEVEL_PATHS = ("scenario_ort_disabled", "scenario_ort_basic", "scenario_ort_extended", "scenario_ort_all")
TOOL_PATHS = ("scenario_onnxscript", "scenario_onnx_ir", "scenario_onnxsim", "scenario_onnxsim_fixed",
              "scenario_onnxoptimizer", "scenario_onnxslim", "scenario_graphsurgeon", "scenario_symbolic_shapes",
              "scenario_quantized", *ORT_LEVEL_PATHS, "scenario_openvino")
TOOL_MODULES = {"scenario_onnxscript": "onnxscript", "scenario_onnx_ir": "onnx_ir", "scenario_onnxsim": "onnxsim",
                "scenario_onnxsim_fixed": "onnxsim", "scenario_onnxoptimizer": "onnxoptimizer",
                "scenario_onnxslim": "onnxslim", "scenario_graphsurgeon": "onnx_graphsurgeon",
                "scenario_symbolic_shapes": "sympy", "scenario_quantized": "sympy",
                "scenario_openvino": "openvino"}
DECLARATIONS = ("static", "dynamic", "unknown", "by_value", "by_position")
MIDDLE_OPS = ("Identity", "Relu", "Neg", "Abs")
MIDDLE_FORMULA: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Identity": lambda x: x, "Relu": lambda x: np.where(x < 0, np.zeros((), x.dtype), x),  # ORT keeps -0.0, NaN
    "Neg": np.negative, "Abs": np.abs}

fz: ModuleType  # bench/fuzz.py, bound by ``bind`` (it imports this module: no import cycle at load time)


def bind(fuzz_module: ModuleType) -> None:
    global fz
    fz = fuzz_module


@functools.cache
def tools() -> ModuleType:
    """tests/tool_pipelines.py, loaded from its file (it imports only onnx, onnxruntime and numpy)."""
    path = Path(__file__).resolve().parent.parent / "tests" / "tool_pipelines.py"
    spec = importlib.util.spec_from_file_location("onnx_bcast_bench_tool_pipelines", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------------ what ORT holds


@functools.cache
def std_supported(op: str, dtype_str: str, opset: int, fmod: int | None = None) -> bool:
    """Whether the standard op exists at ``opset`` for this dtype and plain ORT runs it (a draw it cannot hold is
    redrawn: e.g. LessOrEqual is opset 12+, Max/Min on integers 12+, Equal on floats 11+, Relu on ints 14+)."""
    dtype = np.dtype(dtype_str)
    try:
        schema = onnx.defs.get_schema(op, opset, "")
    except Exception:  # noqa: BLE001 - not defined at that opset
        return False
    allowed = {s for c in schema.type_constraints for s in c.allowed_type_strs}
    name = onnx.TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(dtype)).lower()
    if f"tensor({name})" not in allowed:
        return False
    binary = op not in MIDDLE_OPS
    out = fz.ew_out_dtype(op, dtype) if binary else dtype
    node = helper.make_node(op, ["A", "B"] if binary else ["A"], ["Y"], **({"fmod": fmod} if fmod is not None else {}))
    inputs = [fz.value_info("A", dtype, None)] + ([fz.value_info("B", dtype, None)] if binary else [])
    graph = helper.make_graph([node], "probe", inputs, [fz.value_info("Y", out, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    try:
        ones = np.ones((2, 3), dtype)
        fz.plain_session(model).run(None, {"A": ones, "B": ones} if binary else {"A": ones})
    except Exception:  # noqa: BLE001 - no kernel in plain ORT: nothing to compare with
        return False
    return True


def first_node_opsets(case: Any) -> list[int]:
    """The opsets that hold the case's first node: the elementwise ops need their standard op (its converted form
    and the oracle); Broadcast/Expand/BroadcastV0/BroadcastLikeV0 convert to Expand (opset 8+) and run anywhere."""
    if case.family != "elementwise":
        return list(OPSETS)
    return [o for o in OPSETS if std_supported(case.op, case.data.dtype.str, o, case.params["fmod"])]


# ------------------------------------------------------------------------------------------------ scenarios


@dataclass
class Scenario:
    """One scenario model around a case, its feeds and what every path must do."""

    case: Any
    opset: int
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    want: np.ndarray | None  # None: the model must fail
    compare_op: str  # the op whose comparison rule applies to the final output (values_differ's op argument)
    failing_node: str | None  # the first node whose rule rejects the run
    tools: bool
    symbolic_like: bool  # BroadcastLikeV0 with deduced axes and dims not static: convert refuses (documented)
    notes: list[str] = field(default_factory=list)
    also_failing: str | None = None  # another node an error may name (refused from the declared ranks alone)

    @property
    def feeds_contradict_dims(self) -> bool:
        """Whether the feeds give one ``dim_param`` two sizes: ONNX Runtime does not check that, and its memory
        planner trusts it (a buffer of one input's shape reused for the other's: "Shape mismatch attempting to
        re-use buffer"), so a run may fail even where the ops' rules hold; it may never return wrong values."""
        sizes: dict[str, int] = {}
        for value in self.model.graph.input:
            fed = self.feeds.get(value.name)
            if fed is None or not value.type.tensor_type.HasField("shape"):
                continue
            for dim, size in zip(value.type.tensor_type.shape.dim, fed.shape, strict=False):
                if dim.dim_param and sizes.setdefault(dim.dim_param, size) != size:
                    return True
        return False

    def describe(self) -> str:
        return f"scenario opset {self.opset}, {', '.join(self.notes)}"


def nominal_shape(case: Any) -> tuple[int, ...]:
    """The shape the case's node would produce if it were valid (a claim for an invalid run)."""
    p = case.params
    if case.family == "broadcast":
        return tuple(abs(int(v)) for v in p["target"])
    if case.family == "elementwise":
        return tuple(case.data.shape)
    if case.family == "v0":
        return tuple(abs(int(v)) for v in p["shape"])
    return tuple(p["like_shape"])


def stale(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A static shape that is not ``shape``."""
    for _ in range(10):
        other = tuple(fz.perturb(rng, list(shape), allow_negative=False))
        if other != shape:
            return other
    return (*shape, 7)


def declare(name: str, dtype: np.dtype, shape: tuple[int, ...], how: str, out_rank: int) -> onnx.ValueInfoProto:
    """A data input declared as ``how`` says (DECLARATIONS); symbolic names are shared across inputs."""
    if how == "static":
        dims: list[Any] | None = list(shape)
    elif how == "dynamic":
        dims = [None] * len(shape)
    elif how == "unknown":
        dims = None
    elif how == "by_value":
        dims = [f"D{d}" for d in shape]  # equal fed dims share one name, across inputs
    else:
        dims = [f"N{out_rank - len(shape) + k}" for k in range(len(shape))]  # right-aligned positions share names
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), dims)


def claim(name: str, dtype: np.dtype, how: str, true: tuple[int, ...], rng: np.random.Generator
          ) -> onnx.ValueInfoProto | None:
    """A declared output or value_info entry: none (no shape), true, stale, or symbolic names."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    if how == "none":
        return helper.make_tensor_value_info(name, elem, None)
    if how == "true":
        return helper.make_tensor_value_info(name, elem, list(true))
    if how == "stale":
        return helper.make_tensor_value_info(name, elem, list(stale(rng, true)))
    return helper.make_tensor_value_info(name, elem, [f"N{k}" if rng.random() < 0.5 else f"O{k}"
                                                      for k in range(len(true))])


def _first_node(case: Any, rng: np.random.Generator, decl: str, out_rank: int
                ) -> tuple[list[onnx.NodeProto], list[onnx.ValueInfoProto], list[onnx.TensorProto],
                           dict[str, np.ndarray], list[str]]:
    """The case's node (named ``first``), its declared inputs, constants and feeds, writing y1."""
    p, notes = case.params, []
    inputs, inits, feeds = [], [], {"x": case.data}
    if case.family == "elementwise" and p["mode"] == "pdpd" and decl == "unknown":
        decl = "dynamic"  # pdpd converts only with ranks known (a documented refusal otherwise)
    if case.family == "like" and not p["initial_broadcast_axes"] and decl not in ("static", "by_value"):
        decl = "by_value"  # deduced axes: symbolic dims are refused by convert (documented), keep some of them
    notes.append(f"inputs {decl}")
    inputs.append(declare("x", case.data.dtype, case.data.shape, decl, out_rank))
    if case.family == "broadcast":
        shape_like = [("t", p["target"])] + ([("a", p["axes"] if p["axes"] is not None else [])]
                                             if p["axes"] is not None or p["a_input"] else [])
        const = rng.random() < 0.5
        notes.append("shape inputs constant" if const else "shape inputs fed")
        for name, values in shape_like:
            array = np.array(values, np.int64)
            if const:
                inits.append(numpy_helper.from_array(array, name))
            else:
                inputs.append(fz.value_info(name, np.int64, (len(values),) if rng.random() < 0.3 else (None,)))
                feeds[name] = array
        names = ["x", *(n for n, _ in shape_like)]
        node = helper.make_node(case.op, names, ["y1"], domain="onnx_bcast", name="first", mode=p["mode"],
                                axis=p["axis"])
    elif case.family == "elementwise":
        inputs.append(declare("b", p["B"].dtype, p["B"].shape, decl, out_rank))
        feeds["b"] = p["B"]
        node = fz._ew_node(case.op, ["x", "b"], "y1", "first", p)
    elif case.family == "v0":
        node = fz._v0_node(["x"], "y1", "first", p)
    else:
        like = fz.like_array(case)
        inputs.append(declare("l", like.dtype, like.shape, decl, out_rank))
        feeds["l"] = like
        node = fz._like_node(["x", "l"], "y1", "first", p["initial_broadcast_axes"])
    return [node], inputs, inits, feeds, notes


def _feed_a_declared_scalar_rank_1(case: Any, x: onnx.ValueInfoProto, opset: int, feeds: dict[str, np.ndarray],
                                    rng: np.random.Generator) -> bool:
    """For half the cases whose x is a scalar declared as one: x fed with rank 1 instead, (1,) or (2,), which the
    declaration refuses (ONNX Runtime does not check it; our models do where the opset has Einsum, 12)."""
    tensor = x.type.tensor_type
    if case.data.ndim or not tensor.HasField("shape") or opset < SCALAR_CHECK_OPSET or rng.random() >= 0.5:
        return False
    feeds["x"] = np.stack([case.data] * int(rng.integers(1, 3)))
    return True


def _body_output_ranked(model: onnx.ModelProto) -> bool:
    """Whether onnx's shape inference gives the Scan body's output a rank: ONNX Runtime's Scan runs no body output
    without one, and the numpy backend's body has only the ranks onnx infers (docs/limits.md)."""
    from onnx_bcast.onnx_defs import schemas

    schemas.register()
    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    body = bare.graph.node[0].attribute[0].g
    del body.value_info[:]  # (onnx hands a declared shape back as inferred)
    try:
        inferred = onnx.shape_inference.infer_shapes(bare)
    except Exception:  # noqa: BLE001 - a model inference refuses is not put in a Scan
        return False
    return inferred.graph.node[0].attribute[0].g.output[0].type.tensor_type.HasField("shape")


def _in_scan_body(graph: onnx.GraphProto, feeds: dict[str, np.ndarray], opset: int
                  ) -> tuple[onnx.GraphProto, dict[str, np.ndarray]]:
    """The scenario's graph as the body of a one-iteration ``Scan``: each input is fed with a leading axis of 1,
    which the Scan slices off; the stacked output's leading axis is squeezed away (constants stay outside, read
    from the outer scope)."""
    body = onnx.GraphProto()
    body.CopyFrom(graph)
    body.name = "scan_body"
    del body.initializer[:]
    body.output[0].name = graph.output[0].name
    body.output[0].type.tensor_type.ClearField("shape")  # the claim stays on the main graph's output
    outer_inputs = []
    for value in graph.input:
        outer = onnx.ValueInfoProto()
        outer.CopyFrom(value)
        dims = outer.type.tensor_type.shape.dim
        dims.insert(0, onnx.TensorShapeProto.Dimension(dim_value=1))
        outer.name = f"{value.name}_stack"
        outer_inputs.append(outer)
    nodes = [helper.make_node("Scan", [v.name for v in outer_inputs], ["stacked"], name="scan", body=body,
                              num_scan_inputs=len(outer_inputs))]
    inits = list(graph.initializer)
    if opset >= 13:
        inits.append(numpy_helper.from_array(np.array([0], np.int64), "axis_0"))
        nodes.append(helper.make_node("Squeeze", ["stacked", "axis_0"], ["out"], name="unstack"))
    else:
        nodes.append(helper.make_node("Squeeze", ["stacked"], ["out"], name="unstack", axes=[0]))
    output = onnx.ValueInfoProto()
    output.CopyFrom(graph.output[0])
    output.name = "out"
    outer = helper.make_graph(nodes, graph.name, outer_inputs, [output], initializer=inits)
    return outer, {f"{name}_stack": value[None] for name, value in feeds.items()}


def _second_operand(rng: np.random.Generator, a: tuple[int, ...], mode: str) -> tuple[tuple[int, ...], int]:
    """B's shape (and the pdpd axis) for the chain's elementwise node on an A of shape ``a``: built valid, changed
    in about a quarter of the draws."""
    axis = -1
    if mode == "none":
        b = a
    elif mode == "numpy":
        b = fz._suffix_with_ones(rng, a)
    else:
        start = int(rng.integers(0, len(a) + 1))
        b = tuple(1 if rng.random() < 0.3 else a[start + k] for k in range(int(rng.integers(0, len(a) - start + 1))))
        if start + len(b) != len(a) or rng.random() < 0.5:
            axis = start
    if rng.random() < 0.25:
        b = tuple(fz.perturb(rng, list(b), allow_negative=False))
    return b, axis


def build(family: Any, case: Any, want1: np.ndarray | None, seed: int, fraction: float, tools_fraction: float
          ) -> Scenario | None:
    """The case's scenario model, for ``fraction`` of the cases (None for the others)."""
    rng = np.random.default_rng([seed, case.index, 18])
    if rng.random() >= fraction:
        return None
    use_tools = rng.random() < tools_fraction
    opsets = first_node_opsets(case)
    if not opsets:
        return None
    opset = int(opsets[rng.integers(len(opsets))])
    nominal1 = tuple(want1.shape) if want1 is not None else nominal_shape(case)
    dtype1 = np.dtype(family.out_dtype(case))
    decl = DECLARATIONS[rng.integers(len(DECLARATIONS))]
    length = int(rng.choice(3, p=[0.3, 0.3, 0.4])) + 1
    mode2 = ("none", "numpy", "pdpd")[rng.integers(3)]
    if length == 3 and mode2 == "pdpd" and decl == "unknown":
        decl = "dynamic"  # pdpd converts only with ranks known (a documented refusal otherwise)
    nodes, inputs, inits, feeds, notes = _first_node(case, rng, decl, len(nominal1))
    failing = None if want1 is not None else "first"
    own = np.random.default_rng([seed, case.index, 33])  # (draws of their own: the other draws stay as they were)
    scan = decl != "unknown" and own.random() < SCAN_FRACTION  # a Scan slices off a leading axis: ranks needed
    rank_1 = not scan and _feed_a_declared_scalar_rank_1(case, inputs[0], opset, feeds, own)
    if rank_1:
        notes.append(f"x declared scalar, fed {feeds['x'].shape}")
    value, shape, dtype, last = want1, nominal1, dtype1, "y1"
    compare_op = case.op if case.family == "elementwise" else ""
    claims: list[tuple[str, np.dtype, tuple[int, ...]]] = []
    if length >= 2:
        middles = [m for m in MIDDLE_OPS if std_supported(m, dtype.str, opset)]
        middle = middles[rng.integers(len(middles))]  # Identity holds every dtype at every opset
        claims.append((last, dtype, shape))
        nodes.append(helper.make_node(middle, [last], ["y2"], name="middle"))
        notes.append(middle)
        if value is not None:
            with np.errstate(all="ignore"):
                value = MIDDLE_FORMULA[middle](value)
        last = "y2"
    if length == 3:
        ops = [o for o in fz.EW_OPS if std_supported(o, dtype.str, opset, fz.ew_fmod_default(o, dtype))]
        # ORT runs consecutive float16 nodes that lack a float16 kernel in float32 (its InsertCastTransformer drops
        # the Cast pairs between them): after an elementwise float16 op the chain's value is not the composition
        # of float16 ops. Its values are compared within a few ulps, and no comparison follows (it could flip).
        fused = dtype == np.float16 and case.family == "elementwise" and case.op not in fz.BOOL_OUT
        if fused:
            ops = [o for o in ops if o not in fz.BOOL_OUT]
        if ops:
            op2 = ops[rng.integers(len(ops))]
            b_shape, axis2 = _second_operand(rng, shape, mode2)
            c = fz.ew_values(rng, op2, dtype, b_shape, "B")
            p2 = {"B": c, "mode": mode2, "axis": axis2, "fmod": fz.ew_fmod_default(op2, dtype), "x_decl": decl}
            c_decl = "dynamic" if mode2 == "pdpd" and decl == "unknown" else decl
            inputs.append(declare("c", dtype, c.shape, c_decl, len(shape)))
            feeds["c"] = c
            claims.append((last, dtype, shape))
            nodes.append(fz._ew_node(op2, [last, "c"], "y3", "second", p2))
            notes.append(f"{op2}<{mode2}, axis {axis2}> with c {c.dtype}{c.shape}")
            aligned = fz.ew_alignment(shape, tuple(c.shape), mode2, axis2)
            if value is not None:
                second = fz.Case("elementwise", op2, value, p2)
                value = fz.expect_elementwise(second)
                failing = None if value is not None else "second"
            shape = aligned[0] if aligned is not None else shape
            dtype, compare_op, last = fz.ew_out_dtype(op2, dtype), "Pow" if fused else op2, "y3"
    out_how = ("none", "true", "stale", "symbolic")[rng.integers(4)]
    vi_how = ("none", "true", "stale")[rng.integers(3)]
    notes.append(f"output {out_how}, value_info {vi_how}")
    output = claim(last, dtype, out_how, tuple(value.shape) if value is not None else shape, rng)
    value_infos = [] if vi_how == "none" else [claim(n, d, vi_how, s, rng) for n, d, s in claims]
    graph = helper.make_graph(nodes, "scenario", inputs, [output], initializer=inits, value_info=value_infos)
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("onnx_bcast", 1)]
    if scan:
        wrapped, wrapped_feeds = _in_scan_body(graph, feeds, opset)
        if _body_output_ranked(helper.make_model(wrapped, opset_imports=opsets, ir_version=10)):
            graph, feeds = wrapped, wrapped_feeds
            notes.append("in a Scan body")
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10)
    symbolic_like = case.family == "like" and not case.params["initial_broadcast_axes"] and decl != "static"
    scenario = Scenario(case, opset, model, feeds, value, compare_op, failing, use_tools, symbolic_like, notes)
    if rank_1:  # the check fails first; a node the declared ranks alone refuse fails when the session is made
        scenario.want, scenario.failing_node, scenario.also_failing = None, "first", failing
    return scenario


# ------------------------------------------------------------------------------------------------ running paths


class Skip(Exception):
    """A path that does not apply to this model (its reason is the message)."""


_CONVERTED: dict[str, tuple[str, Any]] = {}


def _digest(model: onnx.ModelProto) -> str:
    return hashlib.sha1(model.SerializeToString()).hexdigest()


def converted(model: onnx.ModelProto, guards: bool = True) -> onnx.ModelProto:
    """``convert`` of the model (memoised for the model's paths; its error raised again each time)."""
    key = f"{_digest(model)}:{guards}"
    if key not in _CONVERTED:
        if len(_CONVERTED) > 8:
            _CONVERTED.clear()
        try:
            _CONVERTED[key] = ("ok", convert(model, guards=guards))
        except Exception as err:  # noqa: BLE001 - raised again on every path that needs it
            _CONVERTED[key] = ("error", err)
    status, value = _CONVERTED[key]
    if status != "ok":
        raise value
    return value


def _opset(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


# the optimizer paths: path -> the tool's function in tests/tool_pipelines.py (given that module)
_OPTIMIZE: dict[str, Callable[[ModuleType], Callable[[onnx.ModelProto], onnx.ModelProto]]] = {
    "scenario_onnxscript": lambda t: t.onnxscript_optimize, "scenario_onnx_ir": lambda t: t.onnx_ir_passes,
    "scenario_onnxoptimizer": lambda t: t.onnxoptimizer_optimize, "scenario_onnxslim": lambda t: t.onnxslim_slim,
    "scenario_graphsurgeon": lambda t: t.graphsurgeon_fold}
OPTIMIZER_PATHS = frozenset(_OPTIMIZE)


def run_path(model: onnx.ModelProto, path: str, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """One scenario path's outputs; raises where it fails, ``Skip`` where it does not apply. With ``FUZZ_DUMP``
    set to a folder, the scenario model and its feeds are written there first (for ``--only``)."""
    dump = os.environ.get("FUZZ_DUMP")
    if dump:
        onnx.save(model, os.path.join(dump, "scenario.onnx"))
        np.savez(os.path.join(dump, "feeds.npz"), **feeds)
    if path in ("scenario_numpy", "scenario_native"):
        return fz.our_session(model, path.removeprefix("scenario_")).run(None, feeds)
    if _opset(model) < GUARD_OPSET:
        raise Skip(f"guarded convert needs default-domain opset >= {GUARD_OPSET}")
    module = TOOL_MODULES.get(path)
    if module is not None and importlib.util.find_spec(module) is None:
        raise Skip(f"{module} is not installed (pip install -e '.[tools]', openvino)")
    guarded = converted(model)
    t = tools()
    if path == "scenario_converted_ort":
        return fz.plain_session(guarded).run(None, feeds)
    if path.startswith("scenario_ort_"):
        return t.ort_run(guarded, feeds, path.removeprefix("scenario_"))
    if path in ("scenario_onnxsim", "scenario_onnxsim_fixed"):
        if any(not i.type.tensor_type.HasField("shape") for i in guarded.graph.input):
            raise Skip("onnxsim needs every input's rank (it fails on an input with no shape field)")
        shaped = t.with_output_shapes(guarded)
        if shaped is None:
            raise Skip("onnx infers no output shape, which onnxsim needs")
        fixed = {n: list(v.shape) for n, v in feeds.items()} if path.endswith("fixed") else None
        return t.ort_run(t.onnxsim_simplify(shaped, fixed), feeds)
    if path == "scenario_openvino":
        return _openvino(model, guarded, feeds)
    if path in ("scenario_symbolic_shapes", "scenario_quantized"):
        return _ort_model_tool(model, guarded, feeds, path)
    optimize = _OPTIMIZE[path](t)
    try:
        optimized = optimize(guarded)
    except Exception as err:
        _skip_where_bare_refused(lambda: optimize(converted(model, guards=False)), err)
        raise
    try:
        return t.ort_run(optimized, _kept(optimized, feeds))
    except Exception as err:
        fixed = _dims_fixed(guarded, optimized)
        if fixed and "Got invalid dimensions for input" in str(err):
            # onnxslim writes a declared output's dims back into symbolic input dims (the guards=False form too):
            # ORT then refuses the feeds, loudly, valid or not
            raise Skip(f"the tool fixed input dims ({fixed}) and ONNX Runtime refuses the feeds") from err
        raise


def _ort_model_tool(model: onnx.ModelProto, guarded: onnx.ModelProto, feeds: dict[str, np.ndarray], path: str
                   ) -> list[np.ndarray]:
    """ONNX Runtime's symbolic shape inference (its default, no ``auto_merge``), or ``quant_pre_process`` then
    ``quantize_dynamic`` (defaults), then a run in plain ORT. Where the tool refuses the guards=False form too, or a
    tensor's rank is unknown (it fails on any ``Shape`` of it), the limit is the tool's: skipped with the reason."""
    import tempfile
    import traceback

    t = tools()

    def apply(form: onnx.ModelProto, folder: str) -> onnx.ModelProto:
        if path == "scenario_symbolic_shapes":
            return t.symbolic_shape_infer(form, False, Path(folder))
        return t.quantized(form, Path(folder))

    with tempfile.TemporaryDirectory() as folder:
        try:
            done = apply(guarded, folder)
        except Exception as err:
            if any(not v.type.tensor_type.HasField("shape") for v in guarded.graph.input) or any(
                    frame.name == "_get_sympy_shape" for frame in traceback.extract_tb(err.__traceback__)):
                # an input of unknown rank, or a broadcast to a fed target of unknown length: ORT's symbolic shape
                # inference fails on any Shape of such a tensor (our checks read one; the bare form may not)
                raise Skip("a tensor of unknown rank: ORT's symbolic shape inference fails on its Shape") from err
            _skip_where_bare_refused(lambda: apply(converted(model, guards=False), folder), err)
            raise
    return t.ort_run(done, _kept(done, feeds))


def _skip_where_bare_refused(apply_to_bare: Callable[[], object], err: Exception) -> None:
    """``Skip`` (from ``err``, the tool's failure on the guarded model) where the tool refuses the guards=False form
    too: the limit is the tool's (onnxslim on a stale declared output, say); else nothing."""
    try:
        apply_to_bare()
    except Exception:  # noqa: BLE001 - whether the tool takes the bare form is the question
        raise Skip("the tool refuses the guards=False form too") from err


def _bare_fails_after(scenario: Scenario, path: str) -> bool:
    """Whether the ``guards=False`` form, through the same tool, fails on the scenario's feeds too."""
    try:
        bare = _OPTIMIZE[path](tools())(converted(scenario.model, guards=False))
        tools().ort_run(bare, _kept(bare, scenario.feeds))
    except Exception:  # noqa: BLE001 - whether it fails is the question
        return True
    return False


def _kept(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The feeds of the inputs a tool kept (onnxslim and ORT's optimizer drop inputs no node reads, docs/limits.md)."""
    kept = {value.name for value in model.graph.input}
    return {name: value for name, value in feeds.items() if name in kept}


def _dims_fixed(before: onnx.ModelProto, after: onnx.ModelProto) -> str:
    """The graph inputs whose declared dims a tool changed, as ``name: before -> after`` (empty: none)."""
    def dims(model: onnx.ModelProto) -> dict[str, list]:
        return {v.name: [d.dim_value if d.HasField("dim_value") else d.dim_param or "?"
                         for d in v.type.tensor_type.shape.dim] for v in model.graph.input}

    old, new = dims(before), dims(after)
    return "; ".join(f"{n}: {old[n]} -> {new[n]}" for n in new if n in old and old[n] != new[n])


def _openvino(model: onnx.ModelProto, guarded: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """OpenVINO runs the guarded model where it reads and compiles the guards=False form; the answer is the pair
    (guarded outputs, bare outputs or None) so that the judge compares them (OpenVINO's own arithmetic is not
    under test)."""
    import openvino as ov

    bare = converted(model, guards=False)
    core = ov.Core()
    try:
        core.compile_model(core.read_model(bare.SerializeToString(), b""), "CPU")
    except Exception as err:  # noqa: BLE001 - whether OpenVINO takes the bare form is the question
        raise Skip("OpenVINO does not read or compile the guards=False form") from err
    try:
        bare_out: list[np.ndarray] | None = _openvino_run(bare, feeds)
    except Exception:  # noqa: BLE001 - OpenVINO's runtimes crash on several zero-size dims (SPEC §2)
        bare_out = None
    return [OpenVinoPair(_openvino_run(guarded, feeds), bare_out)]


def _openvino_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """tool_pipelines.openvino_run, fed only the inputs OpenVINO kept: its ONNX reader drops a graph input that no
    node reads (like_arg once its shape is static), and a feed for it is then an error."""
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(model.SerializeToString(), b""), "CPU")
    kept = {name for port in compiled.inputs for name in port.get_names()}
    results = compiled({k: v for k, v in feeds.items() if k in kept})
    return [np.asarray(results[out]) for out in compiled.outputs]


@dataclass
class OpenVinoPair:
    """OpenVINO's outputs of the guarded model and of the bare form on the same feeds."""

    guarded: list[np.ndarray]
    bare: list[np.ndarray] | None


def outcome(model: onnx.ModelProto, path: str, feeds: dict[str, np.ndarray]) -> tuple[str, Any, str]:
    """(status, outputs or error, stage) of one path: stage "convert" where ``convert`` failed, "skipped" with the
    reason where the path does not apply."""
    if path not in ("scenario_numpy", "scenario_native") and _opset(model) >= GUARD_OPSET:
        status, value = fz._outcome(lambda: converted(model))
        if status != "ok":
            return status, value, "convert"
    status, value = fz._outcome(lambda: run_path(model, path, feeds))
    if isinstance(value, Skip):
        return "skipped", str(value), "skipped"
    return status, value, "when built or run"


def paths_of(scenario: Scenario) -> tuple[str, ...]:
    return CORE_PATHS + (TOOL_PATHS if scenario.tools else ())


# ------------------------------------------------------------------------------------------------ judging


def _onnx_rule_fails(scenario: Scenario) -> bool:
    """Whether the first failing node is an elementwise op under ``auto_broadcast=numpy``, ONNX's own rule, which
    the converted model leaves to the runtime (the standard op, no check)."""
    node = next((n for n in scenario.model.graph.node if n.name == scenario.failing_node), None)
    if node is None or node.op_type in ("Broadcast", "Expand", "BroadcastV0", "BroadcastLikeV0"):
        return False
    modes = [a.s.decode() for a in node.attribute if a.name == "auto_broadcast"]
    return modes in ([], ["numpy"])


def known_issue(scenario: Scenario, path: str, status: str, got: Any) -> str | None:
    """The known issue (``fuzz.KNOWN_ISSUES``) a scenario path's disagreement is a symptom of, if any."""
    p = scenario.case.params
    target = p.get("target") if scenario.case.family == "broadcast" else p.get("shape")
    # its AssertionError in a Scan body too (seed 19, case 3155); only where the token rides on a target: a
    # bidirectional broadcast's, or a BroadcastV0's empty Reshape (seed 23, case 14435); the other modes slice their
    # zero-size dims with the token as the end (seed 22, case 5372)
    stopped = "Incomplete symbolic shape inference" in str(got) or type(got).__name__ == "AssertionError"
    if (path in ("scenario_symbolic_shapes", "scenario_quantized") and status == "crashed" and stopped
            and target is not None and 0 in list(target)
            and (p.get("mode") == "bidirectional" or scenario.case.family == "v0")):
        return "ssi-zero-target-token"
    return None


def _zeros_made_ones(got: tuple[int, ...], want: tuple[int, ...]) -> bool:
    """Whether ``got`` is ``want`` with some zero-size dims as 1 (OpenVINO's symptom above), and nothing else."""
    return len(got) == len(want) and got != want and all(g == w or (w == 0 and g == 1)
                                                          for g, w in zip(got, want, strict=True))


def judge(scenario: Scenario, path: str, status: str, got: Any, stage: str) -> tuple[str | None, str | None]:
    """(problem, skip reason) for one path's outcome: status "ok"/"rejected"/"crashed"/"skipped"."""
    want, converted_path = scenario.want, path not in ("scenario_numpy", "scenario_native")
    if status == "skipped":
        return None, str(got)
    zero_size = any(0 in v.shape for v in scenario.feeds.values()) or (want is not None and want.size == 0)
    if path == "scenario_openvino" and want is not None and status != "ok" and zero_size:
        # an empty A (2, 0, 3) meets a checked B (1, 1, 3): OpenVINO fuses the check's Expand into the op and
        # computes max(0, 1) = 1 for the output dim (test_openvino_loads_guarded_models skips it alike); an empty
        # result counts too (a broadcast to a constant target with a 0 read by a checked op: seed 22, case 27022)
        return None, "OpenVINO cannot run the guarded form on zero-size dims"
    if isinstance(got, fz.WorkerDied):
        return str(got), None
    error = fz._type_name(got)
    native_refused = path == "scenario_native" and error == "NotLowerable"  # as convert, it cannot write the node
    if native_refused or (converted_path and status != "ok" and error in ("BroadcastError", "NotLowerable")
                          and stage == "convert"):
        if want is None:
            return None, None  # the converter proves the failure statically: agreement
        if native_refused:
            return None, "the native backend cannot write this node: NotLowerable when made (documented refusal)"
        if scenario.symbolic_like:
            return None, "BroadcastLikeV0's deduced axes need static dims to convert (documented refusal)"
        if "converting pdpd needs the ranks of A and B" in str(got):
            return None, "elementwise pdpd with a rank unknown statically (documented refusal)"
        return f"convert refused a valid model: {str(got)[:300]}", None
    if want is None:
        if status == "ok":
            if isinstance(got, OpenVinoPair) and got.bare is not None and _onnx_rule_fails(scenario) \
                    and all(fz.identical(a, b) for a, b in zip(got.guarded, got.bare, strict=True)):
                return None, ("OpenVINO's CPU plugin does not check ONNX's own broadcast rule on dims it does not "
                              "know when compiling (the guards=False form, plain ONNX there, returns the same)")
            return f"returned {fz._short(status, got)} where the original fails", None
        if not converted_path:
            if status != "rejected":
                return f"expected a BroadcastError, got {fz._short(status, got)} {stage}", None
            if f"node '{scenario.failing_node}'" not in str(got) and (
                    scenario.also_failing is None or f"node '{scenario.also_failing}'" not in str(got)):
                return f"the error does not name node {scenario.failing_node!r}: {str(got)[:300]!r}", None
        return None, None
    if status != "ok":
        if scenario.feeds_contradict_dims:
            return None, "the feeds give a shared dim_param two sizes: ORT may fail (never return wrong values)"
        if path in OPTIMIZER_PATHS and stage != "convert" and _bare_fails_after(scenario, path):
            # onnxslim merges dim_params an op broadcasts (auto_merge) and ORT then fails a valid float16 Neg,
            # "Shape mismatch attempting to re-use buffer", the guards=False form alike (seed 44, case 24349)
            return None, "the tool's output fails on the guards=False form too"
        return f"expected {want.dtype}{want.shape}, got {fz._short(status, got)} {stage}", None
    if isinstance(got, OpenVinoPair):
        if want.size == 0:  # an empty output has no arithmetic to take from the bare form: the oracle's shape
            problem = fz.values_differ(got.guarded[0], want, "Max")
            if problem and got.bare is not None and fz.identical(got.guarded[0], got.bare[0]):
                return None, "OpenVINO's Expand broadcasts a 1 to a 0 as 1 (the guards=False form returns the same)"
            if problem and _zeros_made_ones(got.guarded[0].shape, want.shape):
                # Add(Expand(x (0,), [0, 0]), c (1, 1)) is (1, 0) in OpenVINO's CPU plugin, in plain ONNX too; the
                # guards=False form slices its zero-size dims instead (docs/limits.md; seed 18, case 11446)
                return None, "OpenVINO gives 1 where an Expand's 0 meets a 1 in an elementwise op (plain ONNX too)"
            return problem, None
        if got.bare is None:
            return None, "OpenVINO's runtime cannot run the bare form on this input (zero-size dims, SPEC §2)"
        if not fz.identical(got.guarded[0], got.bare[0]):
            if got.guarded[0].shape == want.shape and not fz.identical(got.bare[0], want):
                # OpenVINO's CPU plugin computes 8-bit integer Div/Mod inexactly, the guards=False form too, and
                # differently as its fusions differ (seed 0, cases 26801 and 88955): no exact reference there
                return None, "OpenVINO's arithmetic differs from ONNX's here (the guards=False form's values too)"
            if got.guarded[0].dtype == np.float64 and fz.identical(got.guarded[0],
                                                                   got.bare[0].astype(np.float32).astype(np.float64)):
                return None, ("OpenVINO's CPU plugin computes float64 in float32: the check's Expand on the data "
                              "path rounds where the guards=False form has no op")
            return f"OpenVINO: the guarded model's values differ from the bare form's: {got.guarded[0]!r:.200}", None
        return None, None
    if scenario.compare_op:
        return fz.values_differ(got, want, scenario.compare_op), None
    return fz.exactly(scenario.case, got, want), None
