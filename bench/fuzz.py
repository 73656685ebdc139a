"""Seeded random fuzzing of the broadcast ops: shape rules, kernels, the ORT path and the converter must agree.

Each case (random shapes incl. 0-size and scalars, modes, axes, dtypes; valid and invalid) is checked against an
expectation written here from SPEC.md, independently of onnx_bcast's code:
* the shape rule and the numpy kernel give the expected shape and values, or a BroadcastError;
* valid cases: onnx_bcast.InferenceSession (one run-time-shape session per op/mode/dtype, and batches of cases in
  one static model) and the converted batch model in plain onnxruntime give identical outputs;
* invalid cases: the run-time session raises BroadcastError from run, and the one-node static model is rejected
  with BroadcastError by both InferenceSession and convert.

Adding an op family = a ``Family`` (generator, expectation, kernel, rule, node builders) in ``FAMILIES``.

    python bench/fuzz.py --cases 10000 --seed 0
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import AttributeProto, TensorProto, helper, numpy_helper

import onnx_bcast
from onnx_bcast.convert import convert
from onnx_bcast.ops.broadcast_v0 import broadcast_like_v0_shape, broadcast_v0_shape

DTYPES = (np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.uint8, np.bool_)
ONNX_TYPE = {np.dtype(t): helper.np_dtype_to_tensor_dtype(np.dtype(t)) for t in DTYPES}
MAX_DIM = 5
BATCH = 64
OPSET = 17


# ------------------------------------------------------------------------------------------------ cases


@dataclass
class Case:
    """One fuzz case: an op of a family, its data and parameters."""

    family: str
    op: str
    data: np.ndarray
    params: dict[str, Any]
    index: int = 0

    def describe(self) -> str:
        return f"#{self.index} {self.op} data {self.data.dtype}{tuple(self.data.shape)} {self.params}"


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


def static_broadcast(case: Case, i: int) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    p = case.params
    inits = [numpy_helper.from_array(np.array(p["target"], np.int64), f"t{i}")]
    inputs = [f"x{i}", f"t{i}"]
    if p["axes"] is not None:
        inits.append(numpy_helper.from_array(np.array(p["axes"], np.int64), f"a{i}"))
        inputs.append(f"a{i}")
    node = helper.make_node(case.op, inputs, [f"y{i}"], domain="onnx_bcast", name=f"node{i}", mode=p["mode"],
                            axis=p["axis"])
    return node, inits


def runtime_key_broadcast(case: Case) -> tuple:
    return (case.op, case.params["mode"], case.params["axis"], case.data.dtype.str)


def runtime_broadcast(key: tuple) -> tuple[onnx.NodeProto, list[onnx.ValueInfoProto]]:
    op, mode, axis, _ = key
    node = helper.make_node(op, ["x", "t", "a"], ["y"], domain="onnx_bcast", name="runtime_node", mode=mode, axis=axis)
    return node, [helper.make_tensor_value_info("t", TensorProto.INT64, [None]),
                  helper.make_tensor_value_info("a", TensorProto.INT64, [None])]


def runtime_feeds_broadcast(case: Case) -> dict[str, np.ndarray]:
    axes = case.params["axes"]
    return {"x": case.data, "t": np.array(case.params["target"], np.int64),
            "a": np.array(axes if axes is not None else [], np.int64)}


# ------------------------------------------------------------------------------------------------ BroadcastV0


def gen_v0(rng: np.random.Generator) -> Case:
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
    return Case("v0", "BroadcastV0", random_data(rng, tuple(data_shape)), {"shape": shape, "broadcast_axes": new})


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


def static_v0(case: Case, i: int) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    p = case.params
    node = helper.make_node("BroadcastV0", [f"x{i}"], [f"y{i}"], domain="onnx_bcast", name=f"node{i}")
    return with_ints(node, shape=p["shape"], broadcast_axes=p["broadcast_axes"]), []


def runtime_v0(key: tuple) -> tuple[onnx.NodeProto, list[onnx.ValueInfoProto]]:
    node = helper.make_node("BroadcastV0", ["x", "s", "b"], ["y"], domain="onnx_bcast", name="runtime_node")
    with_ints(node, shape=[], broadcast_axes=[])  # the ORT form: the inputs win
    return node, [helper.make_tensor_value_info("s", TensorProto.INT64, [None]),
                  helper.make_tensor_value_info("b", TensorProto.INT64, [None])]


def runtime_feeds_v0(case: Case) -> dict[str, np.ndarray]:
    p = case.params
    return {"x": case.data, "s": np.array(p["shape"], np.int64), "b": np.array(p["broadcast_axes"], np.int64)}


# ------------------------------------------------------------------------------------------------ BroadcastLikeV0


def gen_like(rng: np.random.Generator) -> Case:
    base = gen_v0(rng)
    like = list(base.params["shape"])
    axes = base.params["broadcast_axes"] if rng.random() < 0.7 else []  # empty: deduced left-aligned
    if any(v < 0 for v in like):
        like = [abs(v) for v in like]
    return Case("like", "BroadcastLikeV0", base.data, {"like_shape": like, "initial_broadcast_axes": axes})


def expect_like(case: Case) -> np.ndarray | None:
    d, like = tuple(case.data.shape), case.params["like_shape"]
    axes = list(case.params["initial_broadcast_axes"])
    if not axes:
        axes = [i for i, t in enumerate(like) if i >= len(d) or (d[i] == 1 and t > 1)]
    mapped = _v0_out(d, like, axes)
    return None if mapped is None else place(case.data, *mapped)


def like_array(case: Case) -> np.ndarray:
    return np.zeros(case.params["like_shape"], np.float32)


def static_like(case: Case, i: int) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    node = helper.make_node("BroadcastLikeV0", [f"x{i}", f"l{i}"], [f"y{i}"], domain="onnx_bcast", name=f"node{i}")
    with_ints(node, initial_broadcast_axes=case.params["initial_broadcast_axes"])
    return node, [numpy_helper.from_array(like_array(case), f"l{i}")]


def runtime_like(key: tuple) -> tuple[onnx.NodeProto, list[onnx.ValueInfoProto]]:
    node = helper.make_node("BroadcastLikeV0", ["x", "l", "b"], ["y"], domain="onnx_bcast", name="runtime_node")
    return node, [helper.make_tensor_value_info("l", TensorProto.FLOAT, None),
                  helper.make_tensor_value_info("b", TensorProto.INT64, [None])]


def runtime_feeds_like(case: Case) -> dict[str, np.ndarray]:
    return {"x": case.data, "l": like_array(case), "b": np.array(case.params["initial_broadcast_axes"], np.int64)}


# ------------------------------------------------------------------------------------------------ families


@dataclass(frozen=True)
class Family:
    """Everything the fuzz loop needs for one op family."""

    name: str
    weight: float
    generate: Callable[[np.random.Generator], Case]
    expect: Callable[[Case], np.ndarray | None]  # independent of onnx_bcast; None: the case is invalid
    kernel: Callable[[Case], np.ndarray]
    rule: Callable[[Case], tuple[int, ...]]
    static_node: Callable[[Case, int], tuple[onnx.NodeProto, list[onnx.TensorProto]]]
    runtime_key: Callable[[Case], tuple]
    runtime_node: Callable[[tuple], tuple[onnx.NodeProto, list[onnx.ValueInfoProto]]]
    runtime_feeds: Callable[[Case], dict[str, np.ndarray]]


def _dtype_key(op: str) -> Callable[[Case], tuple]:
    return lambda case: (op, case.data.dtype.str)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("broadcast", 0.6, gen_broadcast, expect_broadcast, kernel_broadcast, rule_broadcast, static_broadcast,
           runtime_key_broadcast, runtime_broadcast, runtime_feeds_broadcast),
    Family("v0", 0.2, gen_v0, expect_v0,
           lambda c: onnx_bcast.broadcast_v0(c.data, c.params["shape"], c.params["broadcast_axes"]),
           lambda c: broadcast_v0_shape(c.data.shape, c.params["shape"], c.params["broadcast_axes"]),
           static_v0, _dtype_key("BroadcastV0"), runtime_v0, runtime_feeds_v0),
    Family("like", 0.2, gen_like, expect_like,
           lambda c: onnx_bcast.broadcast_like_v0(c.data, like_array(c), c.params["initial_broadcast_axes"]),
           lambda c: broadcast_like_v0_shape(c.data.shape, c.params["like_shape"], c.params["initial_broadcast_axes"]),
           static_like, _dtype_key("BroadcastLikeV0"), runtime_like, runtime_feeds_like),
)}


# ------------------------------------------------------------------------------------------------ checking


@dataclass
class Summary:
    """Counts and the disagreements found."""

    cases: int = 0
    valid: int = 0
    invalid: int = 0
    checks: Counter = field(default_factory=Counter)
    disagreements: list[str] = field(default_factory=list)

    def disagree(self, case: Case, path: str, detail: str) -> None:
        self.disagreements.append(f"{path}: {case.describe()}: {detail}")


def identical(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except onnx_bcast.BroadcastError as err:
        return "rejected", err
    except Exception as err:  # anything else is a disagreement (a crash of that path)
        return "crashed", err


def check_numpy_paths(family: Family, case: Case, want: np.ndarray | None, summary: Summary) -> None:
    for path, fn in (("rule", lambda: family.rule(case)), ("kernel", lambda: family.kernel(case))):
        status, got = _outcome(fn)
        summary.checks[path] += 1
        if want is None and status != "rejected":
            summary.disagree(case, path, f"expected a BroadcastError, got {status}: {got!r:.200}")
        elif want is not None and status != "ok":
            summary.disagree(case, path, f"expected {want.shape}, got {status}: {got}")
        elif want is not None and path == "rule" and tuple(got) != want.shape:
            summary.disagree(case, path, f"shape {tuple(got)} != expected {want.shape}")
        elif want is not None and path == "kernel" and not identical(got, want):
            summary.disagree(case, path, f"values differ: got {np.asarray(got).dtype}{np.shape(got)}")


class Runner:
    """Sessions reused across cases: one run-time-shape session per family key; valid cases batched."""

    def __init__(self, summary: Summary) -> None:
        self.summary = summary
        self.sessions: dict[tuple, onnx_bcast.InferenceSession] = {}
        self.pending: list[tuple[Family, Case, np.ndarray]] = []

    def runtime_session(self, family: Family, case: Case) -> onnx_bcast.InferenceSession:
        key = (family.name, *family.runtime_key(case))
        if key not in self.sessions:
            node, extra = family.runtime_node(family.runtime_key(case))
            elem = ONNX_TYPE[case.data.dtype]
            graph = helper.make_graph([node], "fuzz_runtime", [helper.make_tensor_value_info("x", elem, None), *extra],
                                      [helper.make_tensor_value_info("y", elem, None)])
            self.sessions[key] = onnx_bcast.InferenceSession(_model(graph))
        return self.sessions[key]

    def check_runtime(self, family: Family, case: Case, want: np.ndarray | None) -> None:
        session = self.runtime_session(family, case)
        status, got = _outcome(lambda: session.run(None, family.runtime_feeds(case))[0])
        self.summary.checks["ort_runtime"] += 1
        if want is None and status != "rejected":
            self.summary.disagree(case, "ort_runtime", f"expected a BroadcastError, got {status}: {got!r:.200}")
        elif want is not None and (status != "ok" or not identical(got, want)):
            self.summary.disagree(case, "ort_runtime", f"expected {want.shape}, got {status}: {got!r:.200}")

    def check_invalid_static(self, family: Family, case: Case) -> None:
        model = batch_model(family_cases=[(family, case)])
        paths = (("ort_static", lambda: onnx_bcast.InferenceSession(model)), ("convert", lambda: convert(model)))
        for path, fn in paths:
            status, got = _outcome(fn)
            self.summary.checks[path] += 1
            if status != "rejected":
                self.summary.disagree(case, path, f"expected a BroadcastError, got {status}: {got!r:.200}")

    def add_valid(self, family: Family, case: Case, want: np.ndarray) -> None:
        self.pending.append((family, case, want))
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        batch, self.pending = self.pending, []
        if batch and not self._check_batch(batch) and len(batch) > 1:
            for item in batch:  # find the culprit: every case on its own
                self._check_batch([item])

    def _check_batch(self, batch: list[tuple[Family, Case, np.ndarray]]) -> bool:
        model = batch_model([(f, c) for f, c, _ in batch])
        feeds = {f"x{i}": case.data for i, (_, case, _) in enumerate(batch)}
        ok = True
        for path in ("ort_static", "converted_plain_ort"):
            self.summary.checks[path] += len(batch)
            status, outs = _outcome(lambda path=path: self._run_static(path, model, feeds))
            if status != "ok":
                if len(batch) == 1:
                    self.summary.disagree(batch[0][1], path, f"{status}: {outs!r:.300}")
                ok = False
                continue
            for (_, case, want), got in zip(batch, outs, strict=True):
                if not identical(got, want):
                    self.summary.disagree(case, path, f"expected {want.dtype}{want.shape}, got "
                                                      f"{np.asarray(got).dtype}{np.shape(got)}")
        return ok

    @staticmethod
    def _run_static(path: str, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        if path == "ort_static":
            return onnx_bcast.InferenceSession(model).run(None, feeds)
        options = ort.SessionOptions()
        options.log_severity_level = 4
        plain = ort.InferenceSession(convert(model).SerializeToString(), options, providers=["CPUExecutionProvider"])
        return plain.run(None, feeds)


def _model(graph: onnx.GraphProto) -> onnx.ModelProto:
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("onnx_bcast", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def batch_model(family_cases: list[tuple[Family, Case]]) -> onnx.ModelProto:
    """One model with a node per case: static data shapes, constant shape inputs, outputs y0, y1, ..."""
    nodes, inits, inputs, outputs = [], [], [], []
    for i, (family, case) in enumerate(family_cases):
        node, node_inits = family.static_node(case, i)
        nodes.append(node)
        inits += node_inits
        elem = ONNX_TYPE[case.data.dtype]
        inputs.append(helper.make_tensor_value_info(f"x{i}", elem, list(case.data.shape)))
        outputs.append(helper.make_tensor_value_info(f"y{i}", elem, None))
    return _model(helper.make_graph(nodes, "fuzz_batch", inputs, outputs, initializer=inits))


def run_fuzz(cases: int, seed: int, families: tuple[str, ...] | None = None) -> Summary:
    """Generate and check ``cases`` cases from ``seed``; the summary of what disagreed."""
    rng = np.random.default_rng(seed)
    chosen = [FAMILIES[name] for name in (families or tuple(FAMILIES))]
    weights = np.array([f.weight for f in chosen]) / sum(f.weight for f in chosen)
    summary = Summary()
    runner = Runner(summary)
    for index in range(cases):
        family = chosen[rng.choice(len(chosen), p=weights)]
        case = family.generate(rng)
        case.index = index
        want = family.expect(case)
        summary.cases += 1
        if want is None:
            summary.invalid += 1
        else:
            summary.valid += 1
        check_numpy_paths(family, case, want, summary)
        runner.check_runtime(family, case, want)
        if want is None:
            runner.check_invalid_static(family, case)
        else:
            runner.add_valid(family, case, want)
    runner.flush()
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), help="only these op families")
    parser.add_argument("--show", type=int, default=20, help="disagreements to print")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    summary = run_fuzz(args.cases, args.seed, tuple(args.family) if args.family else None)
    elapsed = time.perf_counter() - start
    for line in summary.disagreements[: args.show]:
        print(line)
    checks = ", ".join(f"{k} {v}" for k, v in sorted(summary.checks.items()))
    print(f"cases {summary.cases} (valid {summary.valid}, invalid {summary.invalid}), seed {args.seed}; "
          f"checks: {checks}; disagreements {len(summary.disagreements)}; elapsed {elapsed:.1f} s")
    return 1 if summary.disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
