"""Benchmark what the run-time checks cost: guarded converted models against their guards=False form, per call.

For the models of issue 18's example 9 and the bundled models (with their dynamic dims), it prints the node counts
(guarded / bare) and, per call in plain ONNX Runtime and with ``backend="native"``, the ratio guarded / bare. The
two sessions are timed in alternating rounds in the same run; each ratio is the median of the rounds' ratios. Where
every check is proven, the guarded model is byte for byte the bare one, and is reported so instead of timed.
Goals: at most 1.05x in plain ORT, 1.1x with the native backend.

    python bench/bench_guards.py [--rounds 9] [--calls 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

try:
    import onnx_bcast
except ImportError:  # a checkout that is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import onnx_bcast
from onnx_bcast.model.walk import node_lists

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
GOAL_ORT, GOAL_NATIVE = 1.05, 1.1
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)]
F32 = np.float32


def _model(nodes: list, inputs: list, initializers: list) -> onnx.ModelProto:
    outputs = [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)]
    graph = helper.make_graph(nodes, "bench", inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10)


def _ew(mode: str, **attrs: int) -> onnx.ModelProto:
    node = helper.make_node("Add", ["A", "B"], ["y"], domain="onnx_bcast", auto_broadcast=mode, **attrs)
    return _model([node], [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["N", 32])],
                  [numpy_helper.from_array(np.linspace(-1, 1, 32, dtype=F32), "B")])


def _explicit_bias() -> onnx.ModelProto:
    nodes = [helper.make_node("Shape", ["f"], ["s"]),
             helper.make_node("Broadcast", ["bias", "s", "axes"], ["bb"], domain="onnx_bcast", mode="explicit"),
             helper.make_node("Add", ["f", "bb"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("f", TensorProto.FLOAT, ["N", 16, "H", "W"])],
                  [numpy_helper.from_array(np.linspace(-1, 1, 16, dtype=F32), "bias"),
                   numpy_helper.from_array(np.array([1], np.int64), "axes")])


def _matmul_bias() -> onnx.ModelProto:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("Add", ["m", "bias"], ["s"], domain="onnx_bcast", auto_broadcast="pdpd", axis=1),
             helper.make_node("Relu", ["s"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                  [numpy_helper.from_array(np.eye(16, dtype=F32), "w"),
                   numpy_helper.from_array(np.linspace(-1, 1, 16, dtype=F32), "bias")])


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "numpy Add [N,32]+[32]": lambda: _ew("numpy"),
    "pdpd Add [N,32]+[32], axis 1": lambda: _ew("pdpd", axis=1),
    "explicit bias [16] to Shape(f), f [N,16,H,W]": _explicit_bias,
    "MatMul + pdpd bias + Relu [batch,16]": _matmul_bias,
    **{f"bundled {p.stem}": (lambda p=p: onnx.load(p)) for p in sorted(MODELS_DIR.glob("*.onnx"))},
}


def feeds_for(model: onnx.ModelProto, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random inputs: each symbolic dim 64 (batch-like, first) or 32, bool inputs True."""
    feeds = {}
    initializers = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else (64 if k == 0 else 32)
                for k, d in enumerate(tensor.shape.dim)]
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        feeds[value.name] = np.ones(dims, dtype) if dtype == np.bool_ else rng.standard_normal(dims).astype(dtype)
    return feeds


def node_count(model: onnx.ModelProto) -> int:
    return sum(len(entry.container.node) for entry in node_lists(model))


def per_call(run: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - start) / calls


def ratio(guarded: Callable[[], object], bare: Callable[[], object], rounds: int, calls: int) -> list[float]:
    """Per round: guarded per-call time over bare per-call time, the two timed back to back (order alternating)."""
    for run in (guarded, bare):  # warm-up
        per_call(run, max(1, calls // 10))
    ratios = []
    for r in range(rounds):
        if r % 2:
            b, g = per_call(bare, calls), per_call(guarded, calls)
        else:
            g, b = per_call(guarded, calls), per_call(bare, calls)
        ratios.append(g / b)
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    print("| model | nodes guarded / bare | plain ORT guarded / bare | native backend / bare |")
    print("|---|---|---|---|")
    holds = True
    for name, make in MODELS.items():
        model = make()
        guarded, bare = onnx_bcast.convert(model), onnx_bcast.convert(model, guards=False)
        feeds = feeds_for(model, np.random.default_rng(0))
        plain_g = ort.InferenceSession(guarded.SerializeToString(), options, providers=["CPUExecutionProvider"])
        plain_b = ort.InferenceSession(bare.SerializeToString(), options, providers=["CPUExecutionProvider"])
        native = onnx_bcast.InferenceSession(model, backend="native")
        identical = guarded.SerializeToString() == bare.SerializeToString()
        if identical:  # every check proven: the same bytes, so the same run (timing it would measure noise)
            ort_ratios = [1.0]
        else:
            ort_ratios = ratio(lambda s=plain_g, f=feeds: s.run(None, f), lambda s=plain_b, f=feeds: s.run(None, f),
                               args.rounds, args.calls)
        native_ratios = ratio(lambda s=native, f=feeds: s.run(None, f), lambda s=plain_b, f=feeds: s.run(None, f),
                              args.rounds, args.calls)
        r_ort, r_native = statistics.median(ort_ratios), statistics.median(native_ratios)
        holds &= r_ort <= GOAL_ORT and r_native <= GOAL_NATIVE
        plain = "1.00x (identical bytes)" if identical else \
            f"**{r_ort:.2f}x** ({min(ort_ratios):.2f}-{max(ort_ratios):.2f})"
        print(f"| {name} | {node_count(guarded)} / {node_count(bare)} | {plain} | **{r_native:.2f}x** "
              f"({min(native_ratios):.2f}-{max(native_ratios):.2f}) |")
    print(f"goals: plain ORT <= {GOAL_ORT}x, native <= {GOAL_NATIVE}x per model: {'HOLD' if holds else 'FAIL'}")
    return 0 if holds else 1


if __name__ == "__main__":
    sys.exit(main())
