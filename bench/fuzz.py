"""Seeded random fuzzing of the broadcast and elementwise ops: rules, kernels, both backends and the converter agree.

Each case (random shapes incl. 0-size and scalars, modes, axes, dtypes; about a quarter invalid) is checked against
an expectation written here from SPEC.md §2, independently of onnx_bcast's code:
* Broadcast/Expand, BroadcastV0, BroadcastLikeV0: the expected output is gathered index by index from the data;
* the 16 elementwise ops (none/numpy/pdpd): the output shape comes from the SPEC §2 rules written here, the values
  from plain ONNX Runtime running the standard op on operands broadcast beforehand by numpy (and, for the ops with
  a numpy formula, from that formula too: ``oracle_formula`` checks the oracle itself).

Paths, each counted per valid and invalid case:
* ``rule`` and ``kernel``: the shape rule and the numpy kernel give the expected shape and values, or a
  BroadcastError;
* run time (shapes, target_shape and axes_mapping fed at run time): ``session_numpy`` and ``session_native``
  (``InferenceSession`` with each backend), the guarded converted model in plain onnxruntime (``converted_ort``) and
  in ``onnx.reference`` (``converted_reference``). Valid: the oracle's values (elementwise: also the kernel's bits,
  except onnx.reference, which computes its own way). Invalid: both backends raise BroadcastError, the native one
  with the numpy one's message word for word, and both converted runs fail (any error, no value returned).
  Broadcast/Expand and elementwise none/numpy share one model per signature (op, mode, axis, dtype, and the ranks
  when declared) across all its cases; BroadcastV0/BroadcastLikeV0 (attributes) and elementwise pdpd (ranks and
  axis) get a node per case: valid ones run in batches of one model, each invalid one alone, in a worker process
  (its attributes are constants ORT sees when it loads the model: one made ORT abort the process);
* static shapes: valid cases in batches of one model per 64 cases through both backends and the converted model
  in plain onnxruntime (``static_*``); an invalid case's one-node model is refused with BroadcastError by both
  backends (same message) and by ``convert`` (``static_convert``);
* ``ortform_session_numpy``: BroadcastV0/BroadcastLikeV0 in their ONNX Runtime form (the list attributes fed as
  inputs at run time) through the numpy backend; ``--ort-form-native`` runs that form natively and converted too;
* ``scenario_*`` (``bench/fuzz_scenarios.py``): for ``--scenario-fraction`` of the cases (drawn from the seed and
  the case's index alone), the case inside a realistic model: opsets 9-21, declared output shapes and value_info
  (true, stale, symbolic), dim_params shared between inputs (fed consistently or not), constant or fed shape
  inputs, chains (our node, a standard unary op, our elementwise op). Both backends (invalid: a BroadcastError
  naming the first node that fails), the converted model in plain ORT, and for ``--tools-fraction`` of those
  models the optimizers and runtimes of tests/tool_pipelines.py (onnxscript, onnx-ir, onnxslim, onnx-graphsurgeon,
  onnxsim default and with fixed shapes, onnxoptimizer, ORT at every level, OpenVINO). A path that does not apply
  is counted as skipped, with its reason.

Disagreements that are symptoms of a known, unfixed issue (``KNOWN_ISSUES``) are tagged and counted apart; they
still fail the run unless ``--allow-known``. Exit status 1 on any other disagreement.
Adding an op family = a ``Family`` (generator, expectation, kernel, rule, node builders) in ``FAMILIES``.

    python bench/fuzz.py --cases 10000 --seed 0 [--progress 1000]
    python bench/fuzz.py --cases 10000 --seed 0 --only 1234     # one case, traced, with its values
"""

from __future__ import annotations

import argparse
import atexit
import functools
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import AttributeProto, TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnx_bcast
from onnx_bcast.convert import convert
from onnx_bcast.ops.broadcast_v0 import broadcast_like_v0_shape, broadcast_v0_shape


def _load_scenarios() -> Any:
    """bench/fuzz_scenarios.py under a fixed module name (the worker unpickles its classes by that name)."""
    import importlib.util

    name = "onnx_bcast_bench_fuzz_scenarios"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "fuzz_scenarios.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


SCENARIOS = _load_scenarios()
SCENARIO_FRACTION = 0.08  # of the cases: a scenario model each (100k cases: about 8000 models)
TOOLS_FRACTION = 0.15  # of the scenario models: also through the tools (100k cases: about 1200 models)

DTYPES = (np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.uint8, np.bool_)
ONNX_TYPE = {np.dtype(t): helper.np_dtype_to_tensor_dtype(np.dtype(t)) for t in DTYPES}
MAX_DIM = 5
BATCH = 64
OPSET = 17
NodeParts = tuple[onnx.NodeProto, list[onnx.ValueInfoProto], dict[str, np.ndarray]]  # node, its inputs, feeds
MAX_SESSIONS = 2000  # run-time signatures kept (least recently used dropped): about 2 MB each

ort.set_default_logger_severity(4)  # failed runs are expected: no ORT error log lines


# ------------------------------------------------------------------------------------------------ cases


@dataclass
class Case:
    """One fuzz case: an op of a family, its data (A for the elementwise ops) and parameters."""

    family: str
    op: str
    data: np.ndarray
    params: dict[str, Any]
    index: int = 0

    def describe(self) -> str:
        shown = {k: (f"{v.dtype}{tuple(v.shape)}" if isinstance(v, np.ndarray) else v) for k, v in self.params.items()}
        return f"#{self.index} {self.op} data {self.data.dtype}{tuple(self.data.shape)} {shown}"


def random_data(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    dtype = np.dtype(DTYPES[rng.integers(len(DTYPES))])
    if dtype == np.bool_:
        values = rng.integers(0, 2, shape)
    elif dtype.kind in "iu":
        values = rng.integers(0, 100, shape)
    else:
        values = rng.standard_normal(shape) * 10
    return np.asarray(values).astype(dtype)  # a 0-d array, never a numpy scalar


def random_shape(rng: np.random.Generator, rank: int, zero_p: float = 0.08) -> tuple[int, ...]:
    return tuple(0 if rng.random() < zero_p else int(rng.integers(1, MAX_DIM + 1)) for _ in range(rank))


def perturb(rng: np.random.Generator, values: list[int], allow_negative: bool = True) -> list[int]:
    """One random change of a list of ints: a value changed, one dropped or added, or a negative one."""
    values = list(values)
    choice = rng.integers(4 if allow_negative else 3)
    if choice == 0 and values:
        i = int(rng.integers(len(values)))
        values[i] = int(values[i] + rng.integers(1, 3))
    elif choice == 1 and values:
        values.pop(int(rng.integers(len(values))))
    elif choice == 2 or not values:
        values.insert(int(rng.integers(len(values) + 1)), int(rng.integers(0, MAX_DIM + 1)))
    else:
        values[int(rng.integers(len(values)))] = -int(rng.integers(1, 3))
    return values


def with_ints(node: onnx.NodeProto, **lists: list[int]) -> onnx.NodeProto:
    """Add ints attributes (also empty ones, which make_node cannot type)."""
    for name, values in lists.items():
        node.attribute.append(helper.make_attribute(name, list(values), attr_type=AttributeProto.INTS))
    return node


def value_info(name: str, dtype: np.dtype, dims: tuple[int | None, ...] | None) -> onnx.ValueInfoProto:
    """A graph input/output: ``dims`` None is an unknown rank, a None dim a dynamic one."""
    return helper.make_tensor_value_info(name, ONNX_TYPE[np.dtype(dtype)], None if dims is None else list(dims))


def model_of(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
             inits: list[onnx.TensorProto] | None = None, name: str = "fuzz") -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits or [])
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("onnx_bcast", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def dims_of(shape: tuple[int, ...], declared: str) -> tuple[int | None, ...] | None:
    """How a run-time model declares an input of this shape: unknown rank, its rank with dynamic dims, or static."""
    return None if declared == "unknown" else tuple(shape) if declared == "static" else (None,) * len(shape)


def session_options() -> ort.SessionOptions:
    """One thread per session: thousands of sessions live at once here, and each ORT thread pool costs."""
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return options


def plain_session(model: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), session_options(), providers=["CPUExecutionProvider"])


def our_session(model: onnx.ModelProto, backend: str) -> onnx_bcast.InferenceSession:
    return onnx_bcast.InferenceSession(model, session_options(), backend=backend)


class Reference:
    """``onnx.reference.ReferenceEvaluator`` with numpy's overflow warnings silenced."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.evaluator = ReferenceEvaluator(model)

    def run(self, output_names: list[str] | None, feeds: dict[str, np.ndarray]) -> list[Any]:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.evaluator.run(output_names, feeds)


# ------------------------------------------------------------------------------------------------ Broadcast / Expand


def gen_broadcast(rng: np.random.Generator) -> Case:
    """A Broadcast or Expand in a random mode, built valid and then perturbed in about a third of the cases."""
    op = "Broadcast" if rng.random() < 0.6 else "Expand"
    mode = ["numpy", "bidirectional", "explicit", "pdpd"][rng.integers(4)]
    out_rank = int(rng.choice(5, p=[0.08, 0.23, 0.23, 0.23, 0.23]))
    out = random_shape(rng, out_rank)
    params: dict[str, Any] = {"mode": mode, "axis": -1, "axes": None}
    if mode == "explicit":
        r = 0 if out_rank == 0 or rng.random() < 0.1 else int(rng.integers(1, out_rank + 1))
        axes = sorted(rng.choice(out_rank, size=r, replace=False).tolist()) if r else []
        data_shape = tuple(1 if rng.random() < 0.3 else out[a] for a in axes)
        params["axes"] = axes
    else:
        start = out_rank if out_rank == 0 or rng.random() < 0.1 else int(rng.integers(0, out_rank))  # 10% scalars
        data_shape = tuple(1 if rng.random() < 0.3 else d for d in out[start:])
        if mode == "pdpd" and rng.random() < 0.5:
            params["axis"] = start
        if mode in ("bidirectional", "pdpd") and rng.random() < 0.3:  # stretch the target instead of the data
            data_shape = tuple(int(rng.integers(2, MAX_DIM + 1)) if d == 1 and rng.random() < 0.5 else d
                               for d in data_shape)
        if mode == "numpy" and params["axis"] == -1 and rng.random() < 0.1:
            params["axes"] = []  # an empty axes_mapping counts as absent
    target = list(out)
    if mode in ("bidirectional", "pdpd") and rng.random() < 0.3:
        k = len(target) - len(data_shape)
        target = [1 if rng.random() < 0.5 and i >= k else t for i, t in enumerate(target)]
    if rng.random() < 0.35:
        what = rng.integers(4)
        if what == 0 or params["axes"] is None and what == 1:
            target = perturb(rng, target)
        elif what == 1:
            params["axes"] = perturb(rng, params["axes"], allow_negative=True)
            if len(params["axes"]) >= 2 and rng.random() < 0.5:
                params["axes"][1] = params["axes"][0]  # a duplicate (OpenVINO accepts it; SPEC rejects it)
        elif what == 2:
            data_shape = tuple(perturb(rng, list(data_shape), allow_negative=False))
        else:
            params["axis"] = int(rng.integers(-2, out_rank + 2))
    params["target"] = target
    # how the run-time model declares its inputs: data of unknown rank or of its rank with dynamic dims; a target
    # of unknown length or of its length; axes_mapping fed as an input (empty outside explicit mode) or absent
    params["x_decl"] = "rank" if rng.random() < 0.15 else "unknown"
    params["t_decl"] = "length" if rng.random() < 0.15 else "dynamic"
    params["a_input"] = params["axes"] is not None or rng.random() < 0.5
    return Case("broadcast", op, random_data(rng, data_shape), params)


def _broadcast_mapping(d: tuple[int, ...], p: dict[str, Any]) -> tuple[tuple[int, ...], list[int]] | None:
    """SPEC §2, written out: the output shape and the output axis of each data axis, or None when invalid."""
    t, mode, axes, axis = list(p["target"]), p["mode"], p["axes"], p["axis"]
    r, big_r = len(d), len(t)
    if any(v < 0 for v in t) or (mode != "explicit" and axes):
        return None
    if mode == "numpy":
        ok = big_r >= r and all(d[k] in (1, t[k + big_r - r]) for k in range(r))
        return (tuple(t), [k + big_r - r for k in range(r)]) if ok else None
    if mode == "bidirectional":
        n = max(r, big_r)
        dd, tt = [1] * (n - r) + list(d), [1] * (n - big_r) + t
        if any(a != b and 1 not in (a, b) for a, b in zip(dd, tt, strict=True)):
            return None
        return tuple(b if a == 1 else a for a, b in zip(dd, tt, strict=True)), [k + n - r for k in range(r)]
    if mode == "explicit":
        a = list(axes or [])
        if axes is None or not (len(a) == r or (r == 0 and len(a) == 1)):
            return None
        if any(a[i] >= a[i + 1] for i in range(len(a) - 1)) or any(not 0 <= v < big_r for v in a):
            return None
        if r == 0:
            return (tuple(t), []) if not a or t[a[0]] == 1 else None
        return (tuple(t), a) if all(d[i] in (1, t[a[i]]) for i in range(r)) else None
    start = big_r - r if axis == -1 else axis
    if not 0 <= start <= big_r or r != big_r - start:
        return None
    out = list(t)
    for k in range(r):
        a, b = d[k], t[start + k]
        if a != b and 1 not in (a, b):
            return None
        out[start + k] = b if a == 1 else a
    return tuple(out), [start + k for k in range(r)]


def place(data: np.ndarray, out_shape: tuple[int, ...], mapping: list[int]) -> np.ndarray:
    """out[o] = data[i], i[k] = o[mapping[k]] (or 0 where the data dim is 1), by explicit index gathering."""
    index = []
    for k, m in enumerate(mapping):
        shape = [1] * len(out_shape)
        shape[m] = out_shape[m]
        positions = np.zeros(out_shape[m], np.intp) if data.shape[k] == 1 else np.arange(out_shape[m])
        index.append(positions.reshape(shape))
    if not mapping:
        return np.full(out_shape, data.reshape(()) if data.size else 0, dtype=data.dtype)
    gathered = data[tuple(index)]
    return np.ascontiguousarray(np.broadcast_to(gathered, out_shape)) if gathered.shape != out_shape else gathered


def expect_broadcast(case: Case) -> np.ndarray | None:
    mapped = _broadcast_mapping(tuple(case.data.shape), case.params)
    return None if mapped is None else place(case.data, *mapped)


def kernel_broadcast(case: Case) -> np.ndarray:
    p = case.params
    fn = onnx_bcast.broadcast if case.op == "Broadcast" else onnx_bcast.expand
    return fn(case.data, p["target"], p["axes"], mode=p["mode"], axis=p["axis"])


def rule_broadcast(case: Case) -> tuple[int, ...]:
    p = case.params
    return onnx_bcast.broadcast_shape(case.data.shape, p["target"], p["axes"], mode=p["mode"], axis=p["axis"],
                                      op=case.op)


def static_broadcast(case: Case, i: int) -> tuple[onnx.NodeProto, list[onnx.TensorProto], dict[str, np.ndarray]]:
    p = case.params
    inits = [numpy_helper.from_array(np.array(p["target"], np.int64), f"t{i}")]
    inputs = [f"x{i}", f"t{i}"]
    if p["axes"] is not None:
        inits.append(numpy_helper.from_array(np.array(p["axes"], np.int64), f"a{i}"))
        inputs.append(f"a{i}")
    node = helper.make_node(case.op, inputs, [f"y{i}"], domain="onnx_bcast", name=f"node{i}", mode=p["mode"],
                            axis=p["axis"])
    return node, inits, {f"x{i}": case.data}


def runtime_key_broadcast(case: Case) -> tuple:
    p = case.params
    x_dims = dims_of(case.data.shape, "rank" if p["x_decl"] == "rank" else "unknown")
    t_dims = (len(p["target"]),) if p["t_decl"] == "length" else (None,)
    return (case.op, p["mode"], p["axis"], case.data.dtype.str, x_dims, t_dims, p["a_input"])


def runtime_broadcast(key: tuple) -> onnx.ModelProto:
    op, mode, axis, dtype, x_dims, t_dims, a_input = key
    inputs = [value_info("x", np.dtype(dtype), x_dims), value_info("t", np.int64, t_dims)]
    if a_input:
        inputs.append(value_info("a", np.int64, (None,)))
    node = helper.make_node(op, [i.name for i in inputs], ["y"], domain="onnx_bcast", name="runtime_node", mode=mode,
                            axis=axis)
    return model_of([node], inputs, [value_info("y", np.dtype(dtype), None)])


def runtime_feeds_broadcast(case: Case) -> dict[str, np.ndarray]:
    axes = case.params["axes"]
    feeds = {"x": case.data, "t": np.array(case.params["target"], np.int64)}
    if case.params["a_input"]:
        feeds["a"] = np.array(axes if axes is not None else [], np.int64)
    return feeds


# ------------------------------------------------------------------------------------------------ BroadcastV0


def _gen_v0_parts(rng: np.random.Generator) -> tuple[np.ndarray, list[int], list[int]]:
    out_rank = int(rng.integers(0, 5))
    shape = list(random_shape(rng, out_rank))
    count = out_rank if out_rank == 0 or rng.random() < 0.1 else int(rng.integers(0, out_rank))  # 10%: all new
    new = sorted(rng.choice(out_rank, size=count, replace=False).tolist()) if out_rank else []
    data_shape = [d for i, d in enumerate(shape) if i not in new]
    if rng.random() < 0.35:
        what = rng.integers(3)
        if what == 0:
            shape = perturb(rng, shape)
        elif what == 1:
            new = perturb(rng, new) if new else [out_rank]
            if rng.random() < 0.3 and new:
                new.append(new[0])  # a duplicate
        else:
            data_shape = [1 if d > 1 and rng.random() < 0.5 else d + 1 for d in data_shape] or [2]
    rng.shuffle(new)  # broadcast_axes are a set: order does not matter
    return random_data(rng, tuple(data_shape)), shape, new


def gen_v0(rng: np.random.Generator) -> Case:
    data, shape, new = _gen_v0_parts(rng)
    declared = "rank" if rng.random() < 0.5 else "unknown"
    return Case("v0", "BroadcastV0", data, {"shape": shape, "broadcast_axes": new, "x_decl": declared})


def _v0_out(d: tuple[int, ...], shape: list[int], axes: list[int]) -> tuple[tuple[int, ...], list[int]] | None:
    """nGraph v0 Broadcast: axes in range and unique, shape without them equals the data shape exactly."""
    if any(s < 0 for s in shape) or any(not 0 <= a < len(shape) for a in axes) or len(set(axes)) != len(axes):
        return None
    kept = [i for i in range(len(shape)) if i not in set(axes)]
    if tuple(shape[i] for i in kept) != tuple(d):
        return None
    return tuple(shape), kept


def expect_v0(case: Case) -> np.ndarray | None:
    mapped = _v0_out(tuple(case.data.shape), case.params["shape"], case.params["broadcast_axes"])
    return None if mapped is None else place(case.data, *mapped)


def _v0_node(inputs: list[str], output: str, name: str, p: dict[str, Any]) -> onnx.NodeProto:
    node = helper.make_node("BroadcastV0", inputs, [output], domain="onnx_bcast", name=name)
    return with_ints(node, shape=p["shape"], broadcast_axes=p["broadcast_axes"])


def static_v0(case: Case, i: int) -> tuple[onnx.NodeProto, list[onnx.TensorProto], dict[str, np.ndarray]]:
    return _v0_node([f"x{i}"], f"y{i}", f"node{i}", case.params), [], {f"x{i}": case.data}


def runtime_node_v0(case: Case, i: int) -> NodeParts:
    """The spec form (shape and broadcast_axes are attributes) with the data's dims dynamic."""
    node = _v0_node([f"x{i}"], f"y{i}", f"node{i}", case.params)
    return node, [value_info(f"x{i}", case.data.dtype, dims_of(case.data.shape, case.params["x_decl"]))], \
        {f"x{i}": case.data}


def ortform_key_v0(case: Case) -> tuple:
    return ("BroadcastV0", case.data.dtype.str)


def ortform_v0(key: tuple) -> onnx.ModelProto:
    """The ONNX Runtime form: the list attributes travel as inputs (fed at run time), the attributes are empty."""
    dtype = np.dtype(key[1])
    node = helper.make_node("BroadcastV0", ["x", "s", "b"], ["y"], domain="onnx_bcast", name="runtime_node")
    with_ints(node, shape=[], broadcast_axes=[])
    inputs = [value_info("x", dtype, None), value_info("s", np.int64, (None,)), value_info("b", np.int64, (None,))]
    return model_of([node], inputs, [value_info("y", dtype, None)])


def ortform_feeds_v0(case: Case) -> dict[str, np.ndarray]:
    p = case.params
    return {"x": case.data, "s": np.array(p["shape"], np.int64), "b": np.array(p["broadcast_axes"], np.int64)}


# ------------------------------------------------------------------------------------------------ BroadcastLikeV0


def gen_like(rng: np.random.Generator) -> Case:
    data, shape, new = _gen_v0_parts(rng)
    axes = new if rng.random() < 0.7 else []  # empty: deduced left-aligned
    like = [abs(v) for v in shape]
    # deduced axes need static shapes to convert (a documented refusal otherwise): declared static then
    declared = "static" if not axes else "rank" if rng.random() < 0.5 else "unknown"
    return Case("like", "BroadcastLikeV0", data, {"like_shape": like, "initial_broadcast_axes": axes,
                                                   "x_decl": declared})


def expect_like(case: Case) -> np.ndarray | None:
    d, like = tuple(case.data.shape), case.params["like_shape"]
    axes = list(case.params["initial_broadcast_axes"])
    if not axes:
        axes = [i for i, t in enumerate(like) if i >= len(d) or (d[i] == 1 and t > 1)]
    mapped = _v0_out(d, like, axes)
    return None if mapped is None else place(case.data, *mapped)


def like_array(case: Case) -> np.ndarray:
    return np.zeros(case.params["like_shape"], np.float32)


def _like_node(inputs: list[str], output: str, name: str, axes: list[int]) -> onnx.NodeProto:
    node = helper.make_node("BroadcastLikeV0", inputs, [output], domain="onnx_bcast", name=name)
    return with_ints(node, initial_broadcast_axes=axes)


def static_like(case: Case, i: int) -> tuple[onnx.NodeProto, list[onnx.TensorProto], dict[str, np.ndarray]]:
    node = _like_node([f"x{i}", f"l{i}"], f"y{i}", f"node{i}", case.params["initial_broadcast_axes"])
    return node, [numpy_helper.from_array(like_array(case), f"l{i}")], {f"x{i}": case.data}


def runtime_node_like(case: Case, i: int) -> NodeParts:
    p = case.params
    node = _like_node([f"x{i}", f"l{i}"], f"y{i}", f"node{i}", p["initial_broadcast_axes"])
    inputs = [value_info(f"x{i}", case.data.dtype, dims_of(case.data.shape, p["x_decl"])),
              value_info(f"l{i}", np.float32, dims_of(tuple(p["like_shape"]), p["x_decl"]))]
    return node, inputs, {f"x{i}": case.data, f"l{i}": like_array(case)}


def ortform_key_like(case: Case) -> tuple:
    return ("BroadcastLikeV0", case.data.dtype.str)


def ortform_like(key: tuple) -> onnx.ModelProto:
    dtype = np.dtype(key[1])
    node = helper.make_node("BroadcastLikeV0", ["x", "l", "b"], ["y"], domain="onnx_bcast", name="runtime_node")
    inputs = [value_info("x", dtype, None), value_info("l", np.float32, None), value_info("b", np.int64, (None,))]
    return model_of([node], inputs, [value_info("y", dtype, None)])


def ortform_feeds_like(case: Case) -> dict[str, np.ndarray]:
    return {"x": case.data, "l": like_array(case), "b": np.array(case.params["initial_broadcast_axes"], np.int64)}


# ------------------------------------------------------------------------------------------------ elementwise

EW_OPS = ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Equal", "Less", "LessOrEqual", "Greater",
          "GreaterOrEqual", "And", "Or", "Xor")
BOOL_OUT = frozenset(("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"))
# the ops whose values numpy states in one call, bit for bit (Max/Min up to the sign of a zero tie)
FORMULAS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Max": np.maximum, "Min": np.minimum, "Equal": np.equal,
    "Less": np.less, "LessOrEqual": np.less_equal, "Greater": np.greater, "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor,
}


def ew_out_dtype(op: str, dtype: np.dtype) -> np.dtype:
    return np.dtype(np.bool_) if op in BOOL_OUT else np.dtype(dtype)


def _ew_attrs(op: str, mode: str, axis: int, fmod: int | None) -> dict[str, Any]:
    return {"auto_broadcast": mode, "axis": axis, **({"fmod": fmod} if fmod is not None else {})}


@functools.cache
def oracle_session(op: str, dtype_str: str, fmod: int | None) -> ort.InferenceSession:
    """Plain ORT running the standard op (default rule, no onnx_bcast anywhere) on inputs of any shape."""
    dtype = np.dtype(dtype_str)
    node = helper.make_node(op, ["A", "B"], ["Y"], **({"fmod": fmod} if fmod is not None else {}))
    graph = helper.make_graph([node], "oracle", [value_info("A", dtype, None), value_info("B", dtype, None)],
                              [value_info("Y", ew_out_dtype(op, dtype), None)])
    return plain_session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=10))


@functools.cache
def ew_dtypes(op: str) -> tuple[np.dtype, ...]:
    """The fuzz dtypes the standard op takes at OPSET and plain ORT runs (its oracle)."""
    schema = onnx.defs.get_schema(op, OPSET)
    first = schema.inputs[0].type_str
    allowed = next(c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == first)
    out = []
    for dtype in map(np.dtype, DTYPES):
        if f"tensor({TensorProto.DataType.Name(ONNX_TYPE[dtype]).lower()})" not in allowed:
            continue
        try:
            ones = np.ones((2, 3), dtype)
            oracle_session(op, dtype.str, ew_fmod_default(op, dtype)).run(None, {"A": ones, "B": ones})
        except Exception as err:  # plain ORT has no kernel: no oracle for it
            print(f"note: elementwise {op} {dtype} left out (plain ORT: {str(err)[:100]})", file=sys.stderr)
            continue
        out.append(dtype)
    return tuple(out)


def ew_fmod_default(op: str, dtype: np.dtype) -> int | None:
    return (1 if dtype.kind == "f" else 0) if op == "Mod" else None


def ew_values(rng: np.random.Generator, op: str, dtype: np.dtype, shape: tuple[int, ...], role: str) -> np.ndarray:
    """Operand values: small integers often (ties, ±0), no integer division by zero, integer powers that fit."""
    if dtype == np.bool_:
        values = rng.integers(0, 2, shape)
    elif dtype.kind == "f":
        if op == "Pow" and role == "B" and rng.random() < 0.6:
            values = rng.choice(np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0]), size=shape)
        else:
            values = rng.standard_normal(shape) * (2 if op == "Pow" else 10)
            if rng.random() < 0.5:
                values = np.round(values / 4)  # small integers: equal values, ties, -0.0
    else:
        if op == "Pow":
            low, high = (0, 4) if role == "B" else (-5 if dtype.kind == "i" else 0, 6)
        else:
            low, high = (-50 if dtype.kind == "i" else 0), 51
        values = rng.integers(low, high, shape)
        if op in ("Div", "Mod") and role == "B":
            values = np.where(values == 0, 1, values)  # an integer division by zero traps in ORT
        if op in ("Div", "Mod") and dtype.kind == "i" and rng.random() < 0.25:  # the limits: INT_MIN / -1
            limit = -1 if role == "B" else np.iinfo(dtype).min
            values = np.where(rng.random(shape) < 0.5, limit, values)
    return np.asarray(values).astype(dtype)


def _suffix_with_ones(rng: np.random.Generator, out: tuple[int, ...]) -> tuple[int, ...]:
    rank = len(out) if rng.random() < 0.5 else int(rng.integers(0, len(out) + 1))
    return tuple(1 if rng.random() < 0.3 else d for d in out[len(out) - rank:])


def gen_elementwise(rng: np.random.Generator) -> Case:
    """One of the 16 ops, none/numpy/pdpd, shapes built valid and then changed in about a third of the cases."""
    op = EW_OPS[rng.integers(len(EW_OPS))]
    dtypes = ew_dtypes(op)
    dtype = dtypes[rng.integers(len(dtypes))]
    mode = ("none", "numpy", "pdpd")[rng.integers(3)]
    rank = int(rng.choice(5, p=[0.1, 0.2, 0.25, 0.25, 0.2]))
    out = random_shape(rng, rank)
    axis = -1
    if mode == "none":
        a, b = out, out
    elif mode == "numpy":
        a, b = _suffix_with_ones(rng, out), _suffix_with_ones(rng, out)
        if rng.random() < 0.5:
            a = out
    else:
        a = out
        start = int(rng.integers(0, rank + 1))
        length = int(rng.integers(0, rank - start + 1))
        b = tuple(1 if rng.random() < 0.3 else a[start + k] for k in range(length))
        if rng.random() < 0.25:
            b += (1,) * int(rng.integers(1, 3))  # trailing 1s are ignored (axis -1 counts them)
        if start + len(b) != rank or rng.random() < 0.5:
            axis = start
    if rng.random() < 0.4:
        what = rng.integers(4)
        shared = min(len(a), len(b))
        if mode == "numpy" and shared and rng.random() < 0.6:  # two aligned dims that neither match nor are 1
            k = len(a) - 1 - int(rng.integers(shared))
            x = int(rng.choice([0, 2, 3, 4, 5]))
            y = int(rng.choice([v for v in (0, 2, 3, 4, 5) if v != x]))
            a = a[:k] + (x,) + a[k + 1:]
            kb = k - len(a) + len(b)
            b = b[:kb] + (y,) + b[kb + 1:]
        elif what == 0:
            a = tuple(perturb(rng, list(a), allow_negative=False))
        elif what == 1:
            b = tuple(perturb(rng, list(b), allow_negative=False))
        elif what == 2 and mode == "pdpd":
            axis = int(rng.integers(-2, rank + 2))
        elif what == 2 and b:
            k = int(rng.integers(len(b)))
            b = b[:k] + (int(rng.integers(0, MAX_DIM + 1)),) + b[k + 1:]
        else:
            a, b = b, a
    fmod = ew_fmod_default(op, dtype)
    if op == "Mod" and dtype.kind != "f":
        fmod = int(rng.integers(2))
    # the run-time model declares A and B of unknown rank or of their ranks (dynamic dims); pdpd converts only
    # with ranks known (a documented refusal otherwise)
    declared = "rank" if mode == "pdpd" or rng.random() < 0.25 else "unknown"
    params = {"B": ew_values(rng, op, dtype, b, "B"), "mode": mode, "axis": axis, "fmod": fmod, "x_decl": declared}
    return Case("elementwise", op, ew_values(rng, op, dtype, a, "A"), params)


def ew_alignment(a: tuple[int, ...], b: tuple[int, ...], mode: str, axis: int
                 ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """SPEC §2's elementwise rules, written out: (output shape, B's shape aligned for numpy) or None if invalid."""
    if mode == "none":
        return (a, b) if a == b else None
    if mode == "numpy":
        n = max(len(a), len(b))
        aa, bb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
        if any(x != y and 1 not in (x, y) for x, y in zip(aa, bb, strict=True)):
            return None
        return tuple(y if x == 1 else x for x, y in zip(aa, bb, strict=True)), b
    if len(b) > len(a) or axis < -1:
        return None
    start = len(a) - len(b) if axis == -1 else axis  # counted before the trailing 1s are dropped
    trimmed = list(b)
    while trimmed and trimmed[-1] == 1:
        trimmed.pop()
    if start + len(trimmed) > len(a) or any(d not in (1, a[start + k]) for k, d in enumerate(trimmed)):
        return None
    return a, (1,) * start + tuple(trimmed) + (1,) * (len(a) - start - len(trimmed))


def _ew_broadcast_inputs(case: Case) -> tuple[np.ndarray, np.ndarray] | None:
    p = case.params
    aligned = ew_alignment(tuple(case.data.shape), tuple(p["B"].shape), p["mode"], p["axis"])
    if aligned is None:
        return None
    out, b_shape = aligned
    return np.broadcast_to(case.data, out).copy(), np.broadcast_to(p["B"].reshape(b_shape), out).copy()


def expect_elementwise(case: Case) -> np.ndarray | None:
    """The standard op in plain ORT on operands broadcast beforehand (same shapes: no rule of ours involved)."""
    operands = _ew_broadcast_inputs(case)
    if operands is None:
        return None
    a, b = operands
    if case.op in ("Div", "Mod") and a.dtype.kind == "i":
        # SPEC: INT_MIN / -1 is INT_MIN and INT_MIN % -1 is 0, as with a divisor of 1 (plain ORT traps: SIGFPE)
        b = np.where((a == np.iinfo(a.dtype).min) & (b == -1), np.ones((), b.dtype), b)
    session = oracle_session(case.op, case.data.dtype.str, case.params["fmod"])
    return session.run(None, {"A": a, "B": b})[0]


def formula_elementwise(case: Case, want: np.ndarray) -> str | None:
    """The oracle itself against numpy's formula, for the ops that have one."""
    if case.op not in FORMULAS:
        return None
    a, b = _ew_broadcast_inputs(case)
    with np.errstate(all="ignore"):
        got = np.asarray(FORMULAS[case.op](a, b)).astype(want.dtype)
    return values_differ(got, want, case.op)


def values_differ(got: Any, want: np.ndarray, op: str) -> str | None:
    """None when ``got`` has ``want``'s dtype, shape and values; NaNs match NaNs, Max/Min ±0 ties either way,
    Pow within a few ulps (ORT squares and cubes by multiplication where the exponent is a repeated 2 or 3)."""
    got = np.asarray(got)
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"got {got.dtype}{got.shape}, expected {want.dtype}{want.shape}"
    if want.dtype.kind != "f":
        bad = got != want
    else:
        nan_g, nan_w = np.isnan(got), np.isnan(want)
        bad = nan_g != nan_w
        both = ~nan_g & ~nan_w
        if op == "Pow":
            g, w = got.astype(np.float64), want.astype(np.float64)
            with np.errstate(all="ignore"):
                close = np.isclose(g, w, rtol=8 * float(np.finfo(want.dtype).eps), atol=0)
            bad |= both & ~close
        else:
            bad |= both & (got != want)
            if op not in ("Max", "Min"):
                bad |= both & (np.signbit(got) != np.signbit(want))
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"{int(bad.sum())} of {bad.size} values differ, first at {first}: got {got[first]!r}, expected " \
           f"{want[first]!r}"


def kernel_elementwise(case: Case) -> np.ndarray:
    p = case.params
    extra = {"fmod": p["fmod"]} if p["fmod"] is not None else {}
    return onnx_bcast.elementwise(case.op, case.data, p["B"], auto_broadcast=p["mode"], axis=p["axis"], **extra)


def rule_elementwise(case: Case) -> tuple[int, ...]:
    p = case.params
    return onnx_bcast.elementwise_shape(case.data.shape, p["B"].shape, auto_broadcast=p["mode"], axis=p["axis"],
                                        op=case.op)


def _ew_node(op: str, inputs: list[str], output: str, name: str, p: dict[str, Any]) -> onnx.NodeProto:
    return helper.make_node(op, inputs, [output], domain="onnx_bcast", name=name,
                            **_ew_attrs(op, p["mode"], p["axis"], p["fmod"]))


def static_elementwise(case: Case, i: int) -> tuple[onnx.NodeProto, list[onnx.TensorProto], dict[str, np.ndarray]]:
    return _ew_node(case.op, [f"x{i}", f"b{i}"], f"y{i}", f"node{i}", case.params), [], \
        {f"x{i}": case.data, f"b{i}": case.params["B"]}


def runtime_key_elementwise(case: Case) -> tuple | None:
    """none/numpy: one model per op, rule, dtype (and ranks when declared); pdpd declares ranks and has an axis, too
    many signatures to share: a node per case (None)."""
    p = case.params
    if p["mode"] == "pdpd":
        return None
    return (case.op, p["mode"], p["axis"], p["fmod"], case.data.dtype.str,
            dims_of(case.data.shape, p["x_decl"]), dims_of(p["B"].shape, p["x_decl"]))


def runtime_elementwise(key: tuple) -> onnx.ModelProto:
    op, mode, axis, fmod, dtype, a_dims, b_dims = key
    node = _ew_node(op, ["A", "B"], "Y", "runtime_node", {"mode": mode, "axis": axis, "fmod": fmod})
    inputs = [value_info("A", np.dtype(dtype), a_dims), value_info("B", np.dtype(dtype), b_dims)]
    return model_of([node], inputs, [value_info("Y", ew_out_dtype(op, np.dtype(dtype)), None)])


def runtime_feeds_elementwise(case: Case) -> dict[str, np.ndarray]:
    return {"A": case.data, "B": case.params["B"]}


def runtime_node_elementwise(case: Case, i: int) -> NodeParts:
    p = case.params
    node = _ew_node(case.op, [f"x{i}", f"b{i}"], f"y{i}", f"node{i}", p)
    inputs = [value_info(f"x{i}", case.data.dtype, dims_of(case.data.shape, p["x_decl"])),
              value_info(f"b{i}", p["B"].dtype, dims_of(p["B"].shape, p["x_decl"]))]
    return node, inputs, {f"x{i}": case.data, f"b{i}": p["B"]}


# ------------------------------------------------------------------------------------------------ families

def identical(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def exactly(case: Case, got: Any, want: np.ndarray) -> str | None:
    if identical(got, want):
        return None
    return f"got {np.asarray(got).dtype}{np.shape(got)} with other values, expected {want.dtype}{want.shape}"


@dataclass(frozen=True)
class Family:
    """Everything the fuzz loop needs for one op family.

    Run time: a case whose ``runtime_key`` is not None shares one model (and its sessions) with the cases of its
    key, fed through ``runtime_feeds``; other cases (a family whose attributes carry the case, such as
    BroadcastV0's shape, or too many signatures) get a node of their own from ``runtime_node``: valid ones run in
    batches of one model, each invalid one alone.
    """

    name: str
    weight: float
    generate: Callable[[np.random.Generator], Case]
    expect: Callable[[Case], np.ndarray | None]  # independent of onnx_bcast; None: the case is invalid
    kernel: Callable[[Case], np.ndarray]
    rule: Callable[[Case], tuple[int, ...]]
    static_node: Callable[[Case, int], tuple[onnx.NodeProto, list[onnx.TensorProto], dict[str, np.ndarray]]]
    runtime_key: Callable[[Case], tuple | None] | None = None
    runtime_model: Callable[[tuple], onnx.ModelProto] | None = None
    runtime_feeds: Callable[[Case], dict[str, np.ndarray]] | None = None
    runtime_node: Callable[[Case, int], NodeParts] | None = None
    out_dtype: Callable[[Case], np.dtype] = lambda case: case.data.dtype
    compare: Callable[[Case, Any, np.ndarray], str | None] = exactly  # None: got is the expected value
    bitwise_kernel: bool = False  # the ORT paths must also give the kernel's bits (where compare is looser)
    self_check: Callable[[Case, np.ndarray], str | None] | None = None  # the oracle against a second one
    ortform_key: Callable[[Case], tuple] | None = None  # the ONNX Runtime form (list attributes as inputs)
    ortform_model: Callable[[tuple], onnx.ModelProto] | None = None
    ortform_feeds: Callable[[Case], dict[str, np.ndarray]] | None = None


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("broadcast", 0.45, gen_broadcast, expect_broadcast, kernel_broadcast, rule_broadcast, static_broadcast,
           runtime_key_broadcast, runtime_broadcast, runtime_feeds_broadcast),
    Family("elementwise", 0.35, gen_elementwise, expect_elementwise, kernel_elementwise, rule_elementwise,
           static_elementwise, runtime_key_elementwise, runtime_elementwise, runtime_feeds_elementwise,
           runtime_node_elementwise,
           out_dtype=lambda c: ew_out_dtype(c.op, c.data.dtype),
           compare=lambda c, got, want: values_differ(got, want, c.op), bitwise_kernel=True,
           self_check=formula_elementwise),
    Family("v0", 0.1, gen_v0, expect_v0,
           lambda c: onnx_bcast.broadcast_v0(c.data, c.params["shape"], c.params["broadcast_axes"]),
           lambda c: broadcast_v0_shape(c.data.shape, c.params["shape"], c.params["broadcast_axes"]),
           static_v0, runtime_node=runtime_node_v0,
           ortform_key=ortform_key_v0, ortform_model=ortform_v0, ortform_feeds=ortform_feeds_v0),
    Family("like", 0.1, gen_like, expect_like,
           lambda c: onnx_bcast.broadcast_like_v0(c.data, like_array(c), c.params["initial_broadcast_axes"]),
           lambda c: broadcast_like_v0_shape(c.data.shape, c.params["like_shape"], c.params["initial_broadcast_axes"]),
           static_like, runtime_node=runtime_node_like,
           ortform_key=ortform_key_like, ortform_model=ortform_like, ortform_feeds=ortform_feeds_like),
)}


# ------------------------------------------------------------------------------------------------ known issues

# Disagreements found by this fuzz and not fixed yet, each recognised by its symptom (narrowly: another symptom on
# the same cases is still new). They are counted and shown like every disagreement; ``allow_known`` (the CI slice)
# only keeps them from failing the run. Drop an entry when the library is fixed (test_fuzz_slice's strict xfails
# say when).
KNOWN_ISSUES: dict[str, str] = {
    "ssi-zero-target-token": "ONNX Runtime's symbolic shape inference (and quant_pre_process) stops at the check's "
                             "token in a bidirectional broadcast's constant target holding a 0, or in a BroadcastV0's "
                             "empty output's Reshape (docs/limits.md; fuzz_scenarios.known_issue)",
}
CONVERTED_PATHS = ("session_native", "converted_ort", "converted_reference")


def _type_name(error: Any) -> str:
    return getattr(error, "type_name", type(error).__name__)


def known_issue(case: Case, path: str, status: str, got: Any, stage: str) -> str | None:
    """The known issue this disagreement is a symptom of, if any."""
    base = path.removeprefix("ortform_")
    if base not in CONVERTED_PATHS or base != path:
        return None
    if case.family == "v0" and isinstance(got, WorkerDied) and "SIGABRT" in str(got) and "std::clamp" in str(got):
        return "v0-negative-shape-abort"
    axes, rank = case.params.get("broadcast_axes", ()), len(case.params.get("shape", ()))
    if (case.family == "v0" and (len(set(axes)) < len(axes) or any(not 0 <= a < rank for a in axes))
            and (status == "ok" or stage == "when built" and _type_name(got) == "IndexError")):
        return "v0-axes-unchecked"
    if (case.family == "elementwise" and case.op in ("LessOrEqual", "GreaterOrEqual") and base == "session_native"
            and case.data.dtype == np.float16 and status == "crashed" and "Name:''" in str(got)):
        return "fp16-compare-unnamed-node"
    if (case.family == "elementwise" and case.params["mode"] == "pdpd" and base == "session_native"
            and stage == "when built" and status == "rejected" and "cannot align with A of rank" in str(got)):
        return "pdpd-rank-message"
    return None


# ------------------------------------------------------------------------------------------------ checking

RUNTIME_PATHS = ("session_numpy", "session_native", "converted_ort", "converted_reference")
STATIC_VALID_PATHS = ("static_numpy", "static_native", "static_converted_ort")


@dataclass
class Summary:
    """Counts per path (valid and invalid cases checked) and the disagreements found."""

    cases: int = 0
    valid: int = 0
    invalid: int = 0
    families: Counter = field(default_factory=Counter)  # (family, "valid"/"invalid") -> cases
    checks: Counter = field(default_factory=Counter)  # (path, "valid"/"invalid") -> cases checked
    failures: Counter = field(default_factory=Counter)  # path -> disagreements
    known: Counter = field(default_factory=Counter)  # known issue -> disagreements
    disagreements: list[str] = field(default_factory=list)
    skips: Counter = field(default_factory=Counter)  # (path, reason) -> scenario paths that did not apply
    trace: list[str] | None = None  # every path's outcome, when asked for (--only)

    @property
    def new(self) -> list[str]:
        """The disagreements that are not a known issue's symptom."""
        return [d for d in self.disagreements if not d.startswith("[known:")]

    def count(self, path: str, valid: bool, n: int = 1) -> None:
        self.checks[(path, "valid" if valid else "invalid")] += n

    def disagree(self, case: Case, path: str, detail: str, known: str | None = None) -> None:
        self.failures[path] += 1
        if known:
            self.known[known] += 1
        self.disagreements.append(f"{f'[known: {known}] ' if known else ''}{path}: {case.describe()}: {detail}")

    def note(self, case: Case, path: str, status: str, value: Any) -> None:
        if self.trace is not None:
            shown = f"{np.asarray(value).dtype}{np.shape(value)}" if status == "ok" else f"{value!r:.400}"
            self.trace.append(f"  {path}: {status}: {shown}")

    def paths(self) -> list[str]:
        return sorted({path for path, _ in self.checks}, key=_path_order)

    def line(self, seed: int | None, elapsed: float) -> str:
        per_path = ", ".join(f"{p} {self.checks[(p, 'valid')]}+{self.checks[(p, 'invalid')]}/{self.failures[p]}"
                             for p in self.paths())
        fams = ", ".join(f"{f} {self.families[(f, 'valid')]}/{self.families[(f, 'invalid')]}"
                         for f in FAMILIES if self.families[(f, "valid")] + self.families[(f, "invalid")])
        known = ", ".join(f"{k} {n}" for k, n in sorted(self.known.items())) or "none"
        rate = self.cases / elapsed if elapsed else 0.0
        seeded = "" if seed is None else f"seed {seed}; "
        skipped = Counter()
        for (path, _), n in self.skips.items():
            skipped[path] += n
        if skipped:
            per_path += "; scenario paths skipped: " + ", ".join(f"{p} {n}" for p, n in sorted(skipped.items()))
        return (f"cases {self.cases} (valid {self.valid}, invalid {self.invalid}; per family valid/invalid: {fams}), "
                f"{seeded}per path valid+invalid checked/disagreements: {per_path}; disagreements "
                f"{len(self.disagreements)} (new {len(self.new)}; known issues: {known}); elapsed {elapsed:.1f} s "
                f"({rate:.1f} cases/s)")


_ORDER = ("rule", "kernel", "oracle_formula", *RUNTIME_PATHS, "static", "ortform", *SCENARIOS.CORE_PATHS,
          *SCENARIOS.TOOL_PATHS)


def _path_order(path: str) -> tuple[int, str]:
    return next((i for i, p in enumerate(_ORDER) if path.startswith(p)), len(_ORDER)), path


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        with np.errstate(all="ignore"):
            return "ok", fn()
    except onnx_bcast.BroadcastError as err:
        return "rejected", err
    except Exception as err:  # anything else: a crash of that path (a failure where any failure is expected)
        return "crashed", err


def _short(status: str, value: Any) -> str:
    if status == "ok":
        return f"ok {np.asarray(value).dtype}{np.shape(value)}"
    return f"{status} {_type_name(value)}: {str(value)[:300]!r}"


def check_numpy_paths(family: Family, case: Case, want: np.ndarray | None, summary: Summary) -> np.ndarray | None:
    """The shape rule and the kernel; returns the kernel's output (None when it failed)."""
    kernel_out = None
    for path, fn in (("rule", lambda: family.rule(case)), ("kernel", lambda: family.kernel(case))):
        status, got = _outcome(fn)
        summary.count(path, want is not None)
        summary.note(case, path, status, got)
        if path == "kernel" and status == "ok":
            kernel_out = np.asarray(got)
        if want is None and status != "rejected":
            summary.disagree(case, path, f"expected a BroadcastError, got {_short(status, got)}")
        elif want is not None and status != "ok":
            summary.disagree(case, path, f"expected {want.dtype}{want.shape}, got {_short(status, got)}")
        elif want is not None and path == "rule" and tuple(got) != want.shape:
            summary.disagree(case, path, f"shape {tuple(got)} != expected {want.shape}")
        elif want is not None and path == "kernel" and (problem := family.compare(case, got, want)):
            summary.disagree(case, path, problem)
    if want is not None and family.self_check is not None:
        summary.count("oracle_formula", True)
        if problem := family.self_check(case, want):
            summary.disagree(case, "oracle_formula", f"the standard op in plain ORT and numpy's formula: {problem}")
    return kernel_out


class RuntimeSet:
    """One model and the ways to run it; a path that cannot even be built fails every case."""

    def __init__(self, model: onnx.ModelProto, paths: tuple[str, ...]) -> None:
        self.built: dict[str, tuple[str, Any]] = {}
        makers = {"session_numpy": lambda: our_session(model, "numpy"),
                  "session_native": lambda: our_session(model, "native")}
        for path in paths:
            if path in makers:
                self.built[path] = _outcome(makers[path])
        if "converted_ort" in paths or "converted_reference" in paths:
            converted = _outcome(lambda: convert(model))
            for path, make in (("converted_ort", plain_session), ("converted_reference", Reference)):
                if path in paths:
                    self.built[path] = converted if converted[0] != "ok" else _outcome(lambda m=make: m(converted[1]))

    def run(self, path: str, feeds: dict[str, np.ndarray]) -> tuple[str, Any, str]:
        """(status, every output or the error, "when built"/"when run")."""
        status, built = self.built[path]
        if status != "ok":
            return status, built, "when built"
        status, got = _outcome(lambda: built.run(None, feeds))
        return status, got, "when run"


Outcome = tuple[str, Any, str]  # status, value or error, stage


class Runner:
    """Run-time sessions reused across cases (one per family key, or one per batch of valid cases); valid cases also
    batched into static models."""

    def __init__(self, summary: Summary, ort_form_native: bool = False) -> None:
        self.summary = summary
        self.ort_form_native = ort_form_native
        self.sessions: OrderedDict[tuple, RuntimeSet] = OrderedDict()
        self.pending: list[tuple[Family, Case, np.ndarray, np.ndarray | None]] = []  # static batch
        self.pending_runtime: list[tuple[Family, Case, np.ndarray, np.ndarray | None]] = []  # node-per-case batch
        self.worker = WORKER

    def runtime_set(self, key: tuple, make: Callable[[], onnx.ModelProto]) -> RuntimeSet:
        if key in self.sessions:
            self.sessions.move_to_end(key)
        else:
            self.sessions[key] = RuntimeSet(make(), RUNTIME_PATHS if key[1] == "" or self.ort_form_native
                                            else ("session_numpy",))
            if len(self.sessions) > MAX_SESSIONS:
                self.sessions.popitem(last=False)
        return self.sessions[key]

    # run time ---------------------------------------------------------------------------------------------------

    def check_runtime(self, family: Family, case: Case, want: np.ndarray | None, kernel_out: np.ndarray | None,
                      ort_form: bool = False) -> None:
        """The case fed at run time: every path as the module docstring says."""
        key = family.runtime_key(case) if family.runtime_key is not None and not ort_form else None
        if ort_form or key is not None:
            if ort_form:
                assert family.ortform_key and family.ortform_model and family.ortform_feeds
                tail, build, feeds = family.ortform_key(case), family.ortform_model, family.ortform_feeds(case)
            else:
                assert family.runtime_model and family.runtime_feeds
                tail, build, feeds = key, family.runtime_model, family.runtime_feeds(case)
            prefix = "ortform_" if ort_form else ""
            runtime = self.runtime_set((family.name, prefix, *tail), lambda: build(tail))
            outcomes = {path: _first(runtime.run(path, feeds)) for path in runtime.built}
            self._judge(family, case, want, kernel_out, outcomes, prefix)
        elif want is None:  # an invalid attribute is a constant ORT sees when it loads the model: in the worker
            model, feeds = runtime_batch_model([(family, case)]), family.runtime_node(case, 0)[2]
            self._judge(family, case, want, kernel_out, self.worker.run(model, feeds, RUNTIME_PATHS))
        else:
            self.pending_runtime.append((family, case, want, kernel_out))
            if len(self.pending_runtime) >= BATCH:
                self.flush_runtime()

    def flush_runtime(self, batch: list | None = None, paths: tuple[str, ...] = RUNTIME_PATHS) -> None:
        """Valid cases of node-per-case families: one model for the batch; a path that fails it runs each alone."""
        if batch is None:
            batch, self.pending_runtime = self.pending_runtime, []
        if not batch:
            return
        runtime = RuntimeSet(runtime_batch_model([(f, c) for f, c, _, _ in batch]), paths)
        feeds = {k: v for i, (f, c, _, _) in enumerate(batch) for k, v in f.runtime_node(c, i)[2].items()}
        failed = []
        for path in paths:
            status, outs, stage = runtime.run(path, feeds)
            if status == "ok" or len(batch) == 1:
                for i, (family, case, want, kernel_out) in enumerate(batch):
                    got = (status, outs[i] if status == "ok" else outs, stage)
                    self._judge(family, case, want, kernel_out, {path: got})
            else:
                failed.append(path)
        if failed and len(batch) > 1:
            for item in batch:
                self.flush_runtime([item], tuple(failed))

    def _judge(self, family: Family, case: Case, want: np.ndarray | None, kernel_out: np.ndarray | None,
               outcomes: dict[str, Outcome], prefix: str = "") -> None:
        numpy_status, numpy_error, _ = outcomes.get("session_numpy", ("", None, ""))
        for path, (status, got, stage) in outcomes.items():
            name = prefix + path
            self.summary.count(name, want is not None)
            self.summary.note(case, f"{name} ({stage})", status, got)
            problem = None
            if isinstance(got, WorkerDied):
                problem = str(got)
            elif want is None and path.startswith("session"):
                if status != "rejected":
                    problem = f"expected a BroadcastError, got {_short(status, got)} {stage}"
                elif path == "session_native" and numpy_status == "rejected" and str(got) != str(numpy_error):
                    problem = f"message {str(got)!r} ({stage}) differs from the numpy backend's {str(numpy_error)!r}"
            elif want is None:
                if status == "ok":
                    problem = f"returned {_short(status, got)} where the original fails"
            elif status != "ok":
                problem = f"expected {want.dtype}{want.shape}, got {_short(status, got)} {stage}"
            else:
                problem = family.compare(case, got, want)
                if (problem is None and family.bitwise_kernel and path != "converted_reference"
                        and kernel_out is not None and not identical(got, kernel_out)):
                    problem = f"values agree with the oracle but are not the kernel's bits: {np.asarray(got)!r:.300}"
            if problem:
                self.summary.disagree(case, name, problem, known_issue(case, name, status, got, stage))

    # scenario models ----------------------------------------------------------------------------------------------

    def check_scenario(self, scenario: Any) -> None:
        """The scenario model on its paths (an invalid one in the worker: an invalid constant may abort ORT)."""
        case, valid, paths = scenario.case, scenario.want is not None, SCENARIOS.paths_of(scenario)
        if self.summary.trace is not None:
            self.summary.trace.append(f"  {scenario.describe()}; expected: "
                                      f"{'invalid at ' + str(scenario.failing_node) if not valid else 'valid'}")
        if valid:
            outcomes = {p: _first(SCENARIOS.outcome(scenario.model, p, scenario.feeds)) for p in paths}
        else:
            outcomes = self.worker.run(scenario.model, scenario.feeds, paths)
        for path, (status, got, stage) in outcomes.items():
            problem, skip = SCENARIOS.judge(scenario, path, status, got, stage)
            self.summary.note(case, f"{path} ({stage})", status, got)
            if skip:
                self.summary.skips[(path, skip)] += 1
                continue
            self.summary.count(path, valid)
            if problem:
                self.summary.disagree(case, path, f"{scenario.describe()}: {problem}",
                                      SCENARIOS.known_issue(scenario, path, status, got))

    # static shapes ----------------------------------------------------------------------------------------------

    def check_invalid_static(self, family: Family, case: Case) -> None:
        """The one-node model with the case's static shapes: both backends and convert refuse it."""
        model = batch_model([(family, case)])
        outcomes = {"static_numpy": _outcome(lambda: our_session(model, "numpy")),
                    "static_native": _outcome(lambda: our_session(model, "native")),
                    "static_convert": _outcome(lambda: convert(model))}
        for path, (status, got) in outcomes.items():
            self.summary.count(path, False)
            self.summary.note(case, path, status, got)
            if status != "rejected":
                self.summary.disagree(case, path, f"expected a BroadcastError, got {_short(status, got)}")
            elif path == "static_native" and outcomes["static_numpy"][0] == "rejected" \
                    and str(got) != str(outcomes["static_numpy"][1]):
                self.summary.disagree(case, path, f"message {str(got)!r} differs from the numpy backend's "
                                                  f"{str(outcomes['static_numpy'][1])!r}")

    def add_valid(self, family: Family, case: Case, want: np.ndarray, kernel_out: np.ndarray | None) -> None:
        self.pending.append((family, case, want, kernel_out))
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        self.flush_runtime()
        batch, self.pending = self.pending, []
        failed = self._check_batch(batch, STATIC_VALID_PATHS) if batch else ()
        if failed and len(batch) > 1:
            for item in batch:  # find the culprit: every case on its own, on the paths that failed
                self._check_batch([item], failed)

    def _check_batch(self, batch: list[tuple[Family, Case, np.ndarray, np.ndarray | None]], paths: tuple[str, ...]
                     ) -> tuple[str, ...]:
        """Run the batch's model on ``paths``; the paths that failed to run (value disagreements are recorded)."""
        model = batch_model([(f, c) for f, c, _, _ in batch])
        feeds = {k: v for i, (f, c, _, _) in enumerate(batch) for k, v in f.static_node(c, i)[2].items()}
        failed = []
        for path in paths:
            status, outs = _outcome(lambda path=path: self._run_static(path, model, feeds))
            if status != "ok":
                if len(batch) == 1:
                    self.summary.count(path, True)
                    self.summary.note(batch[0][1], path, status, outs)
                    self.summary.disagree(batch[0][1], path, f"expected {batch[0][2].shape}, got "
                                                             f"{_short(status, outs)}")
                failed.append(path)
                continue
            self.summary.count(path, True, len(batch))
            for (family, case, want, kernel_out), got in zip(batch, outs, strict=True):
                self.summary.note(case, path, "ok", got)
                problem = family.compare(case, got, want)
                if (problem is None and family.bitwise_kernel and kernel_out is not None
                        and not identical(got, kernel_out)):
                    problem = f"values agree with the oracle but are not the kernel's bits: {np.asarray(got)!r:.300}"
                if problem:
                    self.summary.disagree(case, path, problem)
        return tuple(failed)

    @staticmethod
    def _run_static(path: str, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        if path in ("static_numpy", "static_native"):
            return our_session(model, path.removeprefix("static_")).run(None, feeds)
        return plain_session(convert(model)).run(None, feeds)


class RemoteError(Exception):
    """An error raised in the worker process: its type's name and its message (``str`` gives the message)."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name


class WorkerDied(Exception):
    """The worker process died (a signal or an exit) while it built or ran a path."""


def _send(stream: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    return pickle.loads(stream.read(struct.unpack("<Q", head)[0]))


class Worker:
    """A child process (this script with ``--worker``) that builds and runs models one path at a time, so that a
    model which makes ORT abort the process (a C++ assertion on a constant) is one path's outcome, not the end of
    the run; the next path gets a fresh child."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.stderr: IO[bytes] | None = None

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.stderr = tempfile.TemporaryFile()
            self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        return self.proc

    def run(self, model: onnx.ModelProto, feeds: dict[str, np.ndarray], paths: tuple[str, ...]
            ) -> dict[str, Outcome]:
        """Each path's outcome on the model's first output; a death is a "crashed" outcome of the path it hit."""
        outcomes: dict[str, Outcome] = {}
        while len(outcomes) < len(paths):
            todo = tuple(p for p in paths if p not in outcomes)
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                _send(proc.stdin, (model.SerializeToString(), feeds, todo))
                for _ in todo:
                    path, (status, value, stage) = _receive(proc.stdout)
                    outcomes[path] = (status, value if status == "ok" else RemoteError(*value), stage)
            except (EOFError, BrokenPipeError, OSError):
                code = proc.wait()
                assert self.stderr is not None
                self.stderr.seek(0)
                tail = self.stderr.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
                outcomes[todo[len(outcomes) - len(paths) + len(todo)]] = (
                    "crashed", WorkerDied(f"the process died ({_exit_name(code)}): {tail[0][:300]}"), "built or run")
        return outcomes

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait()


SCENARIOS.bind(sys.modules[__name__])
WORKER = Worker()  # one for the process, started when first needed
atexit.register(WORKER.close)


def _exit_name(code: int) -> str:
    if code < 0:
        import signal

        return f"signal {signal.Signals(-code).name}"
    return f"exit status {code}"


def worker_loop() -> None:
    """The ``--worker`` side: read (model, feeds, paths), answer each path's outcome as soon as it has one."""
    stdin = sys.stdin.buffer
    stdout = os.fdopen(os.dup(1), "wb")  # the answers' own channel: whatever else writes to fd 1 goes to stderr
    os.dup2(2, 1)
    while True:
        try:
            model_bytes, feeds, paths = _receive(stdin)
        except EOFError:
            return
        model = onnx.load_model_from_string(model_bytes)
        for path in paths:
            if path.startswith("scenario_"):
                status, value, stage = _first(SCENARIOS.outcome(model, path, feeds))
            else:
                status, value, stage = _first(RuntimeSet(model, (path,)).run(path, feeds))
            if status == "skipped":
                value = ("Skip", value)
            elif status != "ok":  # plain data only: the two sides may know this module by different names
                value = (type(value).__name__, str(value))
            _send(stdout, (path, (status, value, stage)))


def _first(outcome: Outcome) -> Outcome:
    status, value, stage = outcome
    return (status, value[0], stage) if status == "ok" else outcome


def batch_model(family_cases: list[tuple[Family, Case]]) -> onnx.ModelProto:
    """One model with a node per case: static data shapes, constant shape inputs, outputs y0, y1, ..."""
    nodes, inits, inputs, outputs = [], [], [], []
    for i, (family, case) in enumerate(family_cases):
        node, node_inits, feeds = family.static_node(case, i)
        nodes.append(node)
        inits += node_inits
        inputs += [value_info(name, value.dtype, value.shape) for name, value in feeds.items()]
        outputs.append(value_info(f"y{i}", family.out_dtype(case), None))
    return model_of(nodes, inputs, outputs, inits, name="fuzz_batch")


def runtime_batch_model(family_cases: list[tuple[Family, Case]]) -> onnx.ModelProto:
    """One model with a node per case (``runtime_node``: dims declared dynamic), outputs y0, y1, ..."""
    nodes, inputs, outputs = [], [], []
    for i, (family, case) in enumerate(family_cases):
        assert family.runtime_node is not None
        node, node_inputs, _ = family.runtime_node(case, i)
        nodes.append(node)
        inputs += node_inputs
        outputs.append(value_info(f"y{i}", family.out_dtype(case), None))
    return model_of(nodes, inputs, outputs, name="fuzz_runtime_batch")


def generate_cases(cases: int, seed: int, families: tuple[str, ...] | None = None) -> Iterator[tuple[Family, Case]]:
    """The cases of a seed, in order (generation never depends on what the checks found)."""
    rng = np.random.default_rng(seed)
    chosen = [FAMILIES[name] for name in (families or tuple(FAMILIES))]
    weights = np.array([f.weight for f in chosen]) / sum(f.weight for f in chosen)
    for index in range(cases):
        family = chosen[rng.choice(len(chosen), p=weights)]
        case = family.generate(rng)
        case.index = index
        yield family, case


def run_fuzz(cases: int, seed: int, families: tuple[str, ...] | None = None, *, ort_form_native: bool = False,
             only: int | None = None, progress: int = 0, scenario_fraction: float = SCENARIO_FRACTION,
             tools_fraction: float = TOOLS_FRACTION, scenario_only: bool = False,
             shard: tuple[int, int] = (0, 1)) -> Summary:
    """Generate and check ``cases`` cases from ``seed`` (or only case ``only`` of them, traced; or with
    ``scenario_only`` only those that get a scenario model; ``shard`` (k, n): the cases whose index is k mod n)."""
    generated = generate_cases(cases, seed, families)
    if shard != (0, 1):
        generated = ((family, case) for family, case in generated if case.index % shard[1] == shard[0])
    if only is not None:
        generated = ((family, case) for family, case in generated if case.index == only)
    if scenario_only:  # the cases that get a scenario model (SCENARIOS.build's first draw), on every path
        generated = ((family, case) for family, case in generated
                     if np.random.default_rng([seed, case.index, 18]).random() < scenario_fraction)
    return check_cases(generated, ort_form_native=ort_form_native, trace=only is not None, progress=progress,
                       scenario_seed=seed, scenario_fraction=scenario_fraction, tools_fraction=tools_fraction)


def check_cases(cases: Iterable[tuple[Family, Case]], *, ort_form_native: bool = False, trace: bool = False,
                progress: int = 0, scenario_seed: int | None = None, scenario_fraction: float = SCENARIO_FRACTION,
                tools_fraction: float = TOOLS_FRACTION) -> Summary:
    """Check these cases on every path; with ``trace``, record every path's outcome of each (for a few cases);
    ``progress``: a summary line on stderr every that many cases; with ``scenario_seed``, a scenario model for
    ``scenario_fraction`` of the cases (drawn from that seed and the case's index), ``tools_fraction`` of them also
    through the tools."""
    summary = Summary(trace=[] if trace else None)
    runner = Runner(summary, ort_form_native)
    start = time.perf_counter()
    for family, case in cases:
        if progress and summary.cases and summary.cases % progress == 0:
            print(f"progress: {summary.line(None, time.perf_counter() - start)}", file=sys.stderr, flush=True)
        mark = len(summary.trace) if summary.trace is not None else 0
        want = family.expect(case)
        valid = want is not None
        summary.cases += 1
        summary.valid += valid
        summary.invalid += not valid
        summary.families[(family.name, "valid" if valid else "invalid")] += 1
        kernel_out = check_numpy_paths(family, case, want, summary)
        runner.check_runtime(family, case, want, kernel_out)
        if family.ortform_key is not None:
            runner.check_runtime(family, case, want, kernel_out, ort_form=True)
        if want is None:
            runner.check_invalid_static(family, case)
        else:
            runner.add_valid(family, case, want, kernel_out)
        if scenario_seed is not None:
            scenario = SCENARIOS.build(family, case, want, scenario_seed, scenario_fraction, tools_fraction)
            if scenario is not None:
                runner.check_scenario(scenario)
        if trace:
            runner.flush()
            _trace_case(summary, case, want, mark)
    runner.flush()
    return summary


def _trace_case(summary: Summary, case: Case, want: np.ndarray | None, mark: int) -> None:
    assert summary.trace is not None
    arrays = {"data" if case.family != "elementwise" else "A": case.data,
              **{k: v for k, v in case.params.items() if isinstance(v, np.ndarray)}}
    summary.trace[mark:mark] = [case.describe(), *(f"  {k} = {np.array2string(v, threshold=10**6)!s}"
                                            for k, v in arrays.items()),
                         f"  expected: {'invalid' if want is None else f'{want.dtype}{want.shape}'}"]


def _shard(text: str) -> tuple[int, int]:
    k, n = (int(part) for part in text.split("/"))
    if not 0 <= k < n:
        raise SystemExit(f"--shard {text}: K must be in 0..N-1")
    return k, n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), help="only these op families")
    parser.add_argument("--show", type=int, default=20, help="disagreements to print (new ones first)")
    parser.add_argument("--only", type=int, help="check only this case index (of --cases from --seed), traced")
    parser.add_argument("--allow-known", action="store_true",
                        help="exit 0 when every disagreement is a known issue's symptom (they are still counted)")
    parser.add_argument("--ort-form-native", action="store_true",
                        help="also run the ONNX Runtime form of BroadcastV0/BroadcastLikeV0 (list attributes fed as "
                             "inputs) through the native backend and the converted model")
    parser.add_argument("--progress", type=int, default=0, metavar="N", help="a summary line on stderr every N cases")
    parser.add_argument("--scenario-fraction", type=float, default=SCENARIO_FRACTION,
                        help="the fraction of cases that also run as a scenario model (bench/fuzz_scenarios.py)")
    parser.add_argument("--tools-fraction", type=float, default=TOOLS_FRACTION,
                        help="the fraction of scenario models also run through the optimizers and runtimes")
    parser.add_argument("--tools", action="store_true", help="every scenario model through the tools too")
    parser.add_argument("--scenario-only", action="store_true",
                        help="check only the cases that get a scenario model (on every path): a fast rerun")
    parser.add_argument("--shard", default="0/1", metavar="K/N",
                        help="check only the cases whose index is K mod N (the same cases, split across processes: "
                             "run K = 0..N-1 side by side)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker_loop()
        return 0
    start = time.perf_counter()
    summary = run_fuzz(args.cases, args.seed, tuple(args.family) if args.family else None,
                       ort_form_native=args.ort_form_native, only=args.only, progress=args.progress,
                       scenario_fraction=args.scenario_fraction,
                       tools_fraction=1.0 if args.tools else args.tools_fraction, scenario_only=args.scenario_only,
                       shard=_shard(args.shard))
    elapsed = time.perf_counter() - start
    for line in summary.trace or []:
        print(line)
    ordered = summary.new + [d for d in summary.disagreements if d.startswith("[known:")]
    for line in ordered[: args.show]:
        print(line)
    if len(ordered) > args.show:
        print(f"... and {len(ordered) - args.show} more")
    for (path, reason), n in sorted(summary.skips.items()):
        print(f"skipped: {path}: {n}: {reason}")
    print(summary.line(args.seed, elapsed))
    return 1 if summary.new or (summary.disagreements and not args.allow_known) else 0


if __name__ == "__main__":
    sys.exit(main())
