"""What OpenVINO does where only run-time values decide, wherever docs/ops.md says onnx-bcast differs from it.

Each case is a one-node model whose dims and shape inputs are all fed at run time (their ranks and lengths are
declared: the CPU plugin compiles nothing of unknown rank), read with ``onnx_bcast.openvino``'s extensions and
compiled for OpenVINO's CPU plugin, in a child process of its own (some cases kill the process). onnx-bcast's answer
is ``onnx_bcast.InferenceSession``'s (numpy backend), or the kernel's for the backprop ops, which
InferenceSession does not run yet. Prints one row per case; ``--markdown`` prints a table.

    python bench/openvino_runtime.py [--markdown] [--only NAME]
"""

from __future__ import annotations

import argparse
import pickle
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper

import onnx_bcast

F32, I32, I64, I8, U8 = np.float32, np.int32, np.int64, np.int8, np.uint8
_ELEM = {np.dtype(F32): TensorProto.FLOAT, np.dtype(I32): TensorProto.INT32, np.dtype(I64): TensorProto.INT64,
         np.dtype(I8): TensorProto.INT8, np.dtype(U8): TensorProto.UINT8}


@dataclass
class Case:
    """One node ``op(*feeds)``: every feed is a graph input of dynamic dims (1-D int64 ones: of known length)."""

    name: str
    op: str
    attrs: dict
    feeds: dict[str, np.ndarray]
    shape_inputs: tuple[str, ...] = ()
    outputs: int = 1
    kernel: Callable[[], object] | None = None  # SPEC's answer where InferenceSession has no kernel for the op
    notes: str = ""
    inputs: list = field(default_factory=list)

    def model(self) -> onnx.ModelProto:
        infos = []
        for name, value in self.feeds.items():
            shape = [len(value)] if name in self.shape_inputs else [f"{name}{i}" for i in range(value.ndim)]
            infos.append(helper.make_tensor_value_info(name, _ELEM[value.dtype], shape))
        elem = _ELEM[next(iter(self.feeds.values())).dtype]
        outs = [helper.make_tensor_value_info(f"out{i}", elem, None) for i in range(self.outputs)]
        node = helper.make_node(self.op, list(self.feeds), [o.name for o in outs], domain="onnx_bcast",
                                name=self.name, **self.attrs)
        graph = helper.make_graph([node], self.name, infos, outs)
        return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17),
                                                                     helper.make_opsetid("onnx_bcast", 1)])


def _a(values, dtype=F32) -> np.ndarray:
    return np.asarray(values, dtype)


def _ones(shape, dtype=F32) -> np.ndarray:
    return np.arange(1, 1 + int(np.prod(shape)), dtype=dtype).reshape(shape)


def cases() -> list[Case]:
    t, ax = ("target_shape",), ("target_shape", "axes_mapping")
    return [
        Case("explicit-duplicate-axes", "Broadcast", {"mode": "explicit"},
             {"data": _ones((3, 1)), "target_shape": _a([2, 3, 1], I64), "axes_mapping": _a([1, 1], I64)}, ax),
        Case("explicit-unsorted-axes", "Broadcast", {"mode": "explicit"},
             {"data": _ones((3, 2)), "target_shape": _a([2, 2, 3], I64), "axes_mapping": _a([2, 1], I64)}, ax),
        Case("explicit-axis-past-target", "Broadcast", {"mode": "explicit"},
             {"data": _ones((3,)), "target_shape": _a([2, 3], I64), "axes_mapping": _a([2], I64)}, ax),
        Case("negative-target-dim-minus-1", "Broadcast", {}, {"data": _ones((3,)), "target_shape": _a([-1, 3], I64)},
             t),
        Case("negative-target-dim-minus-2", "Expand", {}, {"data": _ones((3,)), "target_shape": _a([-2, 3], I64)}, t),
        Case("numpy-zero-size-target", "Broadcast", {}, {"data": _ones((3,)), "target_shape": _a([0, 3], I64)}, t),
        Case("numpy-one-to-zero", "Broadcast", {}, {"data": _ones((1,)), "target_shape": _a([0], I64)}, t),
        Case("bidirectional-one-to-zero", "Expand", {}, {"data": _ones((1,)), "target_shape": _a([0], I64)}, t),
        Case("bidirectional-zero-data", "Expand", {}, {"data": _ones((2, 0)), "target_shape": _a([1, 1], I64)}, t),
        Case("explicit-zero-size-data", "Broadcast", {"mode": "explicit"},
             {"data": _ones((0,)), "target_shape": _a([2, 0], I64), "axes_mapping": _a([1], I64)}, ax),
        Case("pdpd-zero-data-on-target-1", "Broadcast", {"mode": "pdpd", "axis": 1},
             {"data": _ones((0,)), "target_shape": _a([2, 1], I64)}, t),
        Case("pdpd-dims-mismatch", "Broadcast", {"mode": "pdpd", "axis": 1},
             {"data": _ones((3,)), "target_shape": _a([2, 4], I64)}, t, notes="same rule in both"),
        Case("scalar-to-scalar", "Broadcast", {}, {"data": _ones(()), "target_shape": _a([], I64)}, t),
        Case("v0-size-1-stretch", "BroadcastV0", {"shape": [2, 3], "broadcast_axes": [0]}, {"arg": _ones((1,))}),
        Case("like-v0-size-1-stretch", "BroadcastLikeV0", {"initial_broadcast_axes": [0]},
             {"arg": _ones((1,)), "like_arg": _ones((2, 3))}),
        Case("elementwise-none-broadcastable", "Add", {"auto_broadcast": "none"},
             {"A": _ones((2, 3)), "B": _ones((1, 3))}),
        Case("elementwise-numpy-mismatch", "Add", {}, {"A": _ones((2, 3)), "B": _ones((2,))},
             notes="same rule in both"),
        Case("pdpd-one-meets-zero", "Mul", {"auto_broadcast": "pdpd"}, {"A": _ones((2, 0)), "B": _ones((1,))}),
        Case("pdpd-zero-meets-one", "Mul", {"auto_broadcast": "pdpd"}, {"A": _ones((2, 1)), "B": _ones((0,))}),
        Case("pdpd-b-stretches-a", "Add", {"auto_broadcast": "pdpd", "axis": 1},
             {"A": _ones((2, 1)), "B": _ones((3,))}),
        Case("pdpd-trailing-one-past-a", "Sub", {"auto_broadcast": "pdpd", "axis": 1},
             {"A": _ones((2, 3)), "B": _ones((3, 1))}),
        Case("pdpd-b-dim-past-a-not-one", "Sub", {"auto_broadcast": "pdpd", "axis": 1},
             {"A": _ones((2, 3)), "B": _ones((3, 2))}),
        Case("int-div-by-zero", "Div", {}, {"A": _a([7, -7], I32), "B": _a([0, 0], I32)}, notes="not a broadcast"),
        Case("backprop-delta-not-an-output", "BroadcastBackprop", {},
             {"delta": _ones((2, 3)), "data_shape": _a([3, 2], I64)}, ("data_shape",),
             kernel=lambda: onnx_bcast.broadcast_backprop(_ones((2, 3)), [3, 2])),
        Case("backprop-count-mismatch", "BroadcastBackprop", {},
             {"delta": _ones((2, 3)), "data_shape": _a([4, 1], I64)}, ("data_shape",),
             kernel=lambda: onnx_bcast.broadcast_backprop(_ones((2, 3)), [4, 1])),
        Case("backprop-negative-data-dim", "BroadcastBackprop", {},
             {"delta": _ones((2, 3)), "data_shape": _a([-1, 3], I64)}, ("data_shape",),
             kernel=lambda: onnx_bcast.broadcast_backprop(_ones((2, 3)), [-1, 3])),
        Case("unbroadcast-none-shapes-differ", "Unbroadcast", {"auto_broadcast": "none"},
             {"delta": _ones((2, 3)), "a_shape": _a([2, 3], I64), "b_shape": _a([1, 3], I64)},
             ("a_shape", "b_shape"), outputs=2,
             kernel=lambda: onnx_bcast.unbroadcast(_ones((2, 3)), [2, 3], [1, 3], auto_broadcast="none")),
        Case("backprop-explicit-unsorted-axes", "BroadcastBackprop", {"mode": "explicit"},
             {"delta": _ones((2, 3, 3)), "data_shape": _a([3, 3], I64), "axes_mapping": _a([2, 1], I64)},
             ("data_shape", "axes_mapping"),
             kernel=lambda: onnx_bcast.broadcast_backprop(_ones((2, 3, 3)), [3, 3], [2, 1], mode="explicit")),
        Case("unbroadcast-numpy-delta-not-output", "Unbroadcast", {},
             {"delta": _ones((3, 2)), "a_shape": _a([2, 3], I64), "b_shape": _a([2, 3], I64)},
             ("a_shape", "b_shape"), outputs=2,
             kernel=lambda: onnx_bcast.unbroadcast(_ones((3, 2)), [2, 3], [2, 3])),
        Case("unbroadcast-pdpd-b-does-not-fit", "Unbroadcast", {"auto_broadcast": "pdpd", "axis": 0},
             {"delta": _ones((2, 3)), "a_shape": _a([2, 3], I64), "b_shape": _a([3, 2], I64)},
             ("a_shape", "b_shape"), outputs=2,
             kernel=lambda: onnx_bcast.unbroadcast(_ones((2, 3)), [2, 3], [3, 2], auto_broadcast="pdpd", axis=0)),
        Case("unbroadcast-pdpd-delta-not-a", "Unbroadcast", {"auto_broadcast": "pdpd"},
             {"delta": _ones((3, 2)), "a_shape": _a([2, 3], I64), "b_shape": _a([3], I64)},
             ("a_shape", "b_shape"), outputs=2,
             kernel=lambda: onnx_bcast.unbroadcast(_ones((3, 2)), [2, 3], [3], auto_broadcast="pdpd")),
        Case("unbroadcast-none-negative-dim", "Unbroadcast", {"auto_broadcast": "none"},
             {"delta": _ones((2, 3)), "a_shape": _a([2, 3], I64), "b_shape": _a([-1, 3], I64)},
             ("a_shape", "b_shape"), outputs=2,
             kernel=lambda: onnx_bcast.unbroadcast(_ones((2, 3)), [2, 3], [-1, 3], auto_broadcast="none")),
        Case("uint8-add-wraps", "Add", {}, {"A": _a([200, 255], U8), "B": _a([72, 255], U8)},
             notes="arithmetic, not a broadcast"),
        Case("int8-mul-wraps", "Mul", {}, {"A": _a([100, -128], I8), "B": _a([3, -1], I8)},
             notes="arithmetic, not a broadcast"),
        Case("int8-mul-pdpd", "Mul", {"auto_broadcast": "pdpd", "axis": 0},
             {"A": _a([[100, 5], [-7, 2]], I8), "B": _a([3, -1], I8)}, notes="arithmetic, not a broadcast"),
        Case("float32-div", "Div", {}, {"A": _a([-71, 90, 66, -34]), "B": _a([63, -82, -62, -13])},
             notes="arithmetic, not a broadcast"),
    ]


# --- the child: OpenVINO only --------------------------------------------------------------------------------------


def child() -> None:
    model_bytes, feeds = pickle.load(sys.stdin.buffer)
    import openvino as ov

    import onnx_bcast.openvino

    core = ov.Core()
    core.add_extension(onnx_bcast.openvino.extensions())
    try:
        compiled = core.compile_model(core.read_model(model_bytes), "CPU")
        values = [np.array(v, copy=True) for v in compiled(feeds).values()]
        result = ("value", values)
    except Exception as err:  # what OpenVINO raises: reported, not judged here
        result = ("error", f"{type(err).__name__}: {_essence(str(err))}")
    sys.stdout.buffer.write(pickle.dumps(result))


def _essence(text: str) -> str:
    """The line of an OpenVINO error that says what went wrong: its last (the first ones are file positions), or
    the message of onnx-bcast's run-time check, which names the ``Reshape`` that failed."""
    check = re.search(r"node with name '(.*\[checked at run time\])'", text)
    if check:
        return check.group(1)[:160]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (lines or ["?"])[-1][:120]


# --- the parent --------------------------------------------------------------------------------------------------


def spec_answer(case: Case) -> tuple[str, list[np.ndarray] | str]:
    try:
        if case.kernel is not None:
            got = case.kernel()
            return "value", list(got) if isinstance(got, tuple) else [got]
        session = onnx_bcast.InferenceSession(case.model())
        return "value", session.run(None, case.feeds)
    except onnx_bcast.BroadcastError as err:
        return "error", str(err)
    except Exception as err:  # ONNX Runtime's own errors (e.g. integer division by zero)
        return "error", f"{type(err).__name__}: {_essence(str(err))}"


def openvino_answer(case: Case) -> tuple[str, list[np.ndarray] | str]:
    done = subprocess.run([sys.executable, __file__, "--child"], input=pickle.dumps((case.model().SerializeToString(),
                                                                                   case.feeds)),
                          capture_output=True, timeout=300)
    if done.returncode < 0:
        return "crash", f"killed by {signal.Signals(-done.returncode).name}"
    if done.returncode != 0:
        return "crash", f"exit status {done.returncode}: {_essence(done.stderr.decode(errors='replace'))}"
    return pickle.loads(done.stdout)


def _shapes(values: list[np.ndarray]) -> str:
    return ", ".join(str(tuple(v.shape)) for v in values)


def _preview(values: list[np.ndarray], count: int = 6) -> str:
    flat = np.concatenate([v.reshape(-1) for v in values])
    return "[" + ", ".join(f"{x:g}" for x in flat[:count].tolist()) + (", ...]" if flat.size > count else "]")


def verdict(spec: tuple, got: tuple) -> str:
    """OpenVINO's outcome, said against onnx-bcast's."""
    kind, what = got
    if kind == "value":
        if spec[0] == "error":
            return f"value {_shapes(what)} {_preview(what)} where onnx-bcast errs"
        same = len(what) == len(spec[1]) and all(
            g.shape == e.shape and np.array_equal(g, e) for g, e in zip(what, spec[1], strict=True))
        return f"same value {_shapes(what)}" if same else f"WRONG value {_shapes(what)} (onnx-bcast {_shapes(spec[1])})"
    return f"{kind}: {what}" + (" (onnx-bcast: a value)" if spec[0] == "value" else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--only", help="run the case of this name only")
    args = parser.parse_args()
    if args.child:
        child()
        return 0
    import openvino

    print(f"openvino {openvino.__version__}, CPU plugin; every dim and shape input fed at run time")
    if args.markdown:
        print("\n| case | onnx-bcast | OpenVINO |\n|---|---|---|")
    for case in cases():
        if args.only and case.name != args.only:
            continue
        spec = spec_answer(case)
        said = f"{_shapes(spec[1])}" if spec[0] == "value" else "BroadcastError" if "(" in spec[1] else spec[1]
        row = verdict(spec, openvino_answer(case)) + (f" [{case.notes}]" if case.notes else "")
        print(f"| `{case.name}` | {said} | {row} |" if args.markdown
              else f"{case.name:34} onnx-bcast {said:22} OV {row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
