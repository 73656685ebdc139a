"""The child process of tests/test_division_limits.py: one signed division at the type's limits through one path.

``python -m tests.division_limits_child PATH OP DTYPE RULE ATTR`` builds ``OP(a, b)`` (our op, ``auto_broadcast``
RULE, ATTR ``name=value`` or ``-``) of DTYPE, runs it on PATH with ``A`` and ``B`` below and prints the output as
one JSON list. A path that kills the process (SIGFPE) prints nothing: the parent sees the signal.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

# A (2, 5); B (5,) meets it under numpy and pdpd (axis -1); none gets B tiled to (2, 5). Five columns: ONNX
# Runtime divides int32 in packets of 4 through doubles, which do not trap, and the fifth alone, which does
A_ROWS = [["min", "min", 7, -7, "min"], ["min", 5, "max", "min", -9]]
B_ROW = [-1, 3, -2, -1, -1]


def operands(dtype: str, rule: str) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    a = np.array([[info.min if v == "min" else info.max if v == "max" else v for v in row] for row in A_ROWS], dtype)
    b = np.array(B_ROW, dtype)
    return a, (np.tile(b, (2, 1)) if rule == "none" else b)


def model(op: str, dtype: str, rule: str, attr: str, opset: int = 17) -> onnx.ModelProto:
    attrs: dict = {"auto_broadcast": rule}
    if attr != "-":
        name, value = attr.split("=")
        attrs[name] = int(value)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    b_dims = ["n", 5] if rule == "none" else [5]
    node = helper.make_node(op, ["a", "b"], ["y"], domain="onnx_bcast", name="div", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", elem, ["n", 5]),
                                            helper.make_tensor_value_info("b", elem, b_dims)],
                              [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                   helper.make_opsetid("onnx_bcast", 1)], ir_version=10)


def _converted_through(tool: str, converted: onnx.ModelProto, feeds: dict) -> list:
    from tests import tool_pipelines as tools

    if tool in tools.ORT_LEVELS:
        return tools.ort_run(converted, feeds, tool)
    if tool == "openvino_reader":
        return tools.openvino_run(converted, feeds)
    optimize = {"onnxscript": tools.onnxscript_optimize,
                "onnxsim": lambda m: tools.onnxsim_simplify(tools.with_output_shapes(m)),
                "onnxoptimizer": tools.onnxoptimizer_optimize}[tool]
    return tools.ort_run(optimize(converted), feeds, "ort_disabled")


def run(path: str, op: str, dtype: str, rule: str, attr: str) -> list:
    import onnx_bcast

    m = model(op, dtype, rule, attr)
    a, b = operands(dtype, rule)
    feeds = {"a": a, "b": b}
    if path in ("numpy", "native"):
        return onnx_bcast.InferenceSession(m, backend=path).run(None, feeds)
    if path == "cli_native":
        with tempfile.TemporaryDirectory() as folder:
            where = Path(folder)
            onnx.save(m, where / "m.onnx")
            np.save(where / "a.npy", a)
            np.save(where / "b.npy", b)
            done = subprocess.run([sys.executable, "-m", "onnx_bcast", "run", str(where / "m.onnx"), "--backend",
                                   "native", "--input", f"a={where / 'a.npy'}", "--input", f"b={where / 'b.npy'}",
                                   "--save-outputs", str(where / "y.npz")], capture_output=True, text=True)
            if done.returncode != 0:  # a signal is a negative status: say so as the child's own death
                raise SystemExit(f"onnx-bcast run: status {done.returncode}: {done.stderr}")
            with np.load(where / "y.npz") as saved:
                return [saved["y"]]
    if path == "openvino":
        import openvino as ov

        import onnx_bcast.openvino

        core = ov.Core()
        for extension in onnx_bcast.openvino.extensions():
            core.add_extension(extension)
        compiled = core.compile_model(core.read_model(m.SerializeToString(), b""), "CPU")
        results = compiled(feeds)
        return [np.asarray(results[out]) for out in compiled.outputs]
    return _converted_through(path, onnx_bcast.convert(m), feeds)


def main() -> None:
    outputs = run(*sys.argv[1:6])
    print(json.dumps([o if isinstance(o, str) else np.asarray(o).tolist() for o in outputs]), flush=True)


if __name__ == "__main__":
    main()
