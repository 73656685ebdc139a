"""PaddlePaddle programs through OpenVINO's Paddle frontend, IR and ``onnx_bcast.onnxifier.ir_to_onnx`` in plain ONNX
Runtime, against Paddle's own run of the saved program (issue 31, item 4); OpenVINO's CPU plugin on the IR and
paddle2onnx beside, and the OpenVINO ops and attributes the frontend wrote.

    .venv/bin/python bench/paddle_programs.py [--only NAME ...] [--markdown]

Each program is a static Paddle program with one output, built in Paddle's legacy program IR (``pir_utils.
OldIrGuard``): OpenVINO's Paddle frontend reads ``.pdmodel`` files only, and Paddle 3's default (PIR) saves ``.json``,
which it refuses ("Cannot recognize input model"). Verdicts: ``equal`` (exact for integers and bools, rtol = atol =
1e-5 for floats), ``refused`` (an error naming the op), ``wrong`` (exit 0, other values, shape or dtype), ``invalid``
(written, but ONNX Runtime refuses to load or run it), ``error`` (an exception that names nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("paddle_programs")

RTOL = ATOL = 1e-5
INT32_MAX = np.iinfo(np.int32).max


@dataclass(frozen=True)
class Program:
    """A one-output static Paddle program: ``build`` turns the input variables into the output variable."""

    name: str
    build: Callable[[dict[str, Any]], Any]
    inputs: dict[str, np.ndarray]
    paddle_call: str  # what the program calls, for the table


@dataclass
class Outcome:
    """What each route made of one program."""

    name: str
    paddle_call: str
    paddle_ops: list[str] = field(default_factory=list)
    openvino_ops: list[str] = field(default_factory=list)
    ir_route: str = ""
    cpu_plugin: str = ""
    paddle2onnx: str = ""


# ---------------------------------------------------------------- Paddle (imported on first use: it is heavy)

def import_paddle() -> Any:
    """``paddle``, with ``os.environ`` put back as it was (importing it sets OMP_NUM_THREADS and CUSTOM_DEVICE_ROOT)."""
    saved = dict(os.environ)
    try:
        import paddle
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return paddle


@contextlib.contextmanager
def legacy_static_mode() -> Iterator[Any]:
    """Paddle in static mode with its legacy program IR (what OpenVINO's frontend reads), dynamic mode again after."""
    paddle = import_paddle()
    from paddle import pir_utils

    paddle.enable_static()
    try:
        with pir_utils.OldIrGuard():
            yield paddle
    finally:
        paddle.disable_static()


def legacy_op(op_type: str, x: Any, y: Any, axis: int = -1, out_dtype: str | None = None) -> Any:
    """The fluid-style op ``op_type(X=x, Y=y, axis=axis)`` appended as it is (Paddle 3's public API has no ``axis``,
    and its multiply/maximum/minimum/expand_as reject legacy-IR variables)."""
    from paddle.base.layer_helper import LayerHelper

    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype=out_dtype or x.dtype)
    helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]}, attrs={"axis": axis})
    return out


def legacy_expand_as(x: Any, target: Any) -> Any:
    """``expand_as_v2(X=x, Y=target)`` with ``target_shape`` as the attribute too, as ``paddle.expand_as`` writes it."""
    from paddle.base.layer_helper import LayerHelper

    helper = LayerHelper("expand_as_v2")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="expand_as_v2", inputs={"X": [x], "Y": [target]}, outputs={"Out": [out]},
                     attrs={"target_shape": list(target.shape)})
    return out


def save_program(program: Program, folder: Path) -> tuple[Path, list[str]]:
    """The program saved with ``save_inference_model`` (``folder/NAME.pdmodel``) and the op types it holds."""
    with legacy_static_mode() as paddle:
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            variables = {name: paddle.static.data(name, list(value.shape), str(value.dtype))
                         for name, value in program.inputs.items()}
            out = program.build(variables)
        executor = paddle.static.Executor(paddle.CPUPlace())
        executor.run(startup)
        prefix = folder / program.name
        paddle.static.save_inference_model(str(prefix), list(variables.values()), [out], executor, program=main)
        ops = [op.type for op in main.global_block().ops if op.type not in ("feed", "fetch")]
    return prefix.with_suffix(".pdmodel"), ops


def paddle_output(pdmodel: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """Paddle's own run of the saved program."""
    with legacy_static_mode() as paddle:
        executor = paddle.static.Executor(paddle.CPUPlace())
        program, _, fetches = paddle.static.load_inference_model(str(pdmodel.with_suffix("")), executor)
        return np.asarray(executor.run(program, feed=feeds, fetch_list=fetches)[0])


# ---------------------------------------------------------------- the routes

def compare(got: np.ndarray, want: np.ndarray) -> str:
    """``equal``, or ``wrong (...)`` saying how: dtype, shape, or the largest difference and where."""
    got = np.asarray(got)
    if got.dtype != want.dtype:
        return f"wrong (dtype {got.dtype}, Paddle {want.dtype})"
    if got.shape != want.shape:
        return f"wrong (shape {got.shape}, Paddle {want.shape})"
    if want.dtype.kind in "fc":
        bad = ~np.isclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
    else:
        bad = got != want
    if not bad.any():
        return "equal"
    first = np.unravel_index(int(np.argmax(bad)), bad.shape)
    return (f"wrong ({int(bad.sum())}/{bad.size} differ; at {tuple(int(i) for i in first)}: {got[first]!r}, "
            f"Paddle {want[first]!r})")


def _ort_session(model_bytes: bytes) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def run_onnx(model_bytes: bytes, feeds: dict[str, np.ndarray], want: np.ndarray) -> str:
    """The verdict on an ONNX model written with exit 0: ``invalid`` where ORT refuses it, else ``compare``."""
    try:
        session = _ort_session(model_bytes)
    except Exception as err:  # noqa: BLE001 - ORT's refusal, whatever its type
        return f"invalid (ORT load: {_first_line(err)})"
    try:
        got = session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()})
    except Exception as err:  # noqa: BLE001
        return f"invalid (ORT run: {_first_line(err)})"
    return compare(got[0], want)


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {(lines[0] if lines else '')[:160]}"


def to_ir(pdmodel: Path, xml: Path) -> None:
    """OpenVINO's Paddle frontend on the program, saved as IR with float32 weights kept."""
    import openvino as ov

    ov.save_model(ov.convert_model(str(pdmodel)), str(xml), compress_to_fp16=False)


def ir_ops(xml: Path) -> list[str]:
    """The IR's ops but Parameter/Result/Constant, each with its attributes (``Divide(auto_broadcast=numpy, ...)``)."""
    import openvino as ov

    ops = []
    for op in ov.Core().read_model(str(xml)).get_ordered_ops():
        kind = op.get_type_name()
        if kind in ("Parameter", "Result", "Constant"):
            continue
        attrs = ", ".join(f"{k.replace('auto_broadcast.auto_broadcast_', '')}={v}"
                          for k, v in op.get_attributes().items())
        ops.append(f"{kind}({attrs})" if attrs else kind)
    return ops


def ir_route(xml: Path, feeds: dict[str, np.ndarray], want: np.ndarray) -> str:
    """``ir_to_onnx`` with its default options, the result in plain ORT."""
    from onnx_bcast.onnxifier import ir_to_onnx
    from onnx_bcast.onnxifier.validate import IRNotConvertible

    try:
        model = ir_to_onnx(xml)
    except IRNotConvertible as err:
        return f"refused ({' | '.join(err.lines)[:200]})"
    except Exception as err:  # noqa: BLE001 - a refusal that names nothing is its own verdict
        return f"error ({_first_line(err)})"
    return run_onnx(model.SerializeToString(), feeds, want)


def cpu_plugin(xml: Path, feeds: dict[str, np.ndarray], want: np.ndarray) -> str:
    """OpenVINO's CPU plugin running the IR."""
    import openvino as ov

    try:
        compiled = ov.Core().compile_model(str(xml), "CPU", {"INFERENCE_NUM_THREADS": 1})
        got = compiled({name: value for name, value in feeds.items()})[0]
    except Exception as err:  # noqa: BLE001
        return f"refused ({_first_line(err)})"
    return compare(got, want)


def via_paddle2onnx(pdmodel: Path, feeds: dict[str, np.ndarray], want: np.ndarray) -> str:
    """paddle2onnx on the saved program (when installed), the result in plain ORT."""
    try:
        import paddle2onnx
    except ImportError:
        return "not installed"
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # its progress lines
            model_bytes = paddle2onnx.export(str(pdmodel), "", None)
    except Exception as err:  # noqa: BLE001
        return f"refused ({_first_line(err)})"
    return run_onnx(model_bytes, feeds, want)


def evaluate(program: Program, folder: Path, *, others: bool = True) -> Outcome:
    """Every route on one program (``others``: the CPU plugin and paddle2onnx too, not only the IR route)."""
    outcome = Outcome(program.name, program.paddle_call)
    try:
        pdmodel, outcome.paddle_ops = save_program(program, folder)
        want = paddle_output(pdmodel, program.inputs)
    except Exception as err:  # noqa: BLE001 - the program is not Paddle's to run: nothing to compare with
        outcome.ir_route = outcome.cpu_plugin = outcome.paddle2onnx = f"skipped (Paddle refuses: {_first_line(err)})"
        return outcome
    xml = pdmodel.with_suffix(".xml")
    try:
        to_ir(pdmodel, xml)
    except Exception as err:  # noqa: BLE001
        outcome.ir_route = outcome.cpu_plugin = f"refused (OpenVINO's Paddle frontend: {_first_line(err)})"
    else:
        outcome.openvino_ops = ir_ops(xml)
        outcome.ir_route = ir_route(xml, program.inputs, want)
        if others:
            outcome.cpu_plugin = cpu_plugin(xml, program.inputs, want)
    if others:
        outcome.paddle2onnx = via_paddle2onnx(pdmodel, program.inputs, want)
    return outcome


# ---------------------------------------------------------------- the programs

def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def ints(name: str, shape: tuple[int, ...], dtype: str, *, nonzero: bool = False, low: int = -9,
         high: int = 9) -> np.ndarray:
    """Integers of both signs (no zero where ``nonzero``: divisors)."""
    values = _rng(name).integers(low, high, shape, dtype=dtype, endpoint=True)
    if nonzero:
        values[values == 0] = -3
    return values


def floats(name: str, shape: tuple[int, ...], *, away_from_zero: bool = False) -> np.ndarray:
    """float32 of both signs in [-6, 6] (magnitude at least 0.5 where ``away_from_zero``: divisors)."""
    values = _rng(name).uniform(-6, 6, shape).astype(np.float32)
    if away_from_zero:
        values = np.where(np.abs(values) < 0.5, np.float32(-1.25), values).astype(np.float32)
    return values


def operands(name: str, dtype: str, x_shape: tuple[int, ...], y_shape: tuple[int, ...], *,
             divisor: bool = False) -> dict[str, np.ndarray]:
    if dtype == "float32":
        return {"x": floats(name + "x", x_shape), "y": floats(name + "y", y_shape, away_from_zero=divisor)}
    return {"x": ints(name + "x", x_shape, dtype, low=-30, high=30), "y": ints(name + "y", y_shape, dtype,
                                                                                nonzero=divisor)}


def _binary(name: str, call: str, build: Callable[[dict[str, Any]], Any], dtype: str, x_shape: tuple[int, ...],
            y_shape: tuple[int, ...], *, divisor: bool = False) -> Program:
    return Program(name, build, operands(name, dtype, x_shape, y_shape, divisor=divisor), call)


def _api(fn_name: str) -> Callable[[dict[str, Any]], Any]:
    def build(v: dict[str, Any]) -> Any:
        return getattr(import_paddle(), fn_name)(v["x"], v["y"])
    return build


def _legacy(op_type: str, axis: int, out_dtype: str | None = None) -> Callable[[dict[str, Any]], Any]:
    return lambda v: legacy_op(op_type, v["x"], v["y"], axis, out_dtype)


DIVISIONS = (("divide", "elementwise_div"), ("floor_divide", "elementwise_floordiv"),
             ("remainder", "elementwise_mod"))
ARITHMETIC = (("add", "elementwise_add"), ("subtract", "elementwise_sub"), ("multiply", "elementwise_mul"),
              ("maximum", "elementwise_max"), ("minimum", "elementwise_min"), ("pow", "elementwise_pow"))
#: public API functions that Paddle 3.3 still builds in a legacy-IR program (the rest need the op itself)
LEGACY_IR_API = {"add", "subtract", "divide", "floor_divide", "remainder", "pow", "equal", "not_equal", "less_than",
                 "less_equal", "greater_equal"}
COMPARISONS = ("equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal")


def division_programs() -> list[Program]:
    """Integer and float divide, floor_divide and remainder: broadcast from the end, with the legacy axis, B's
    trailing 1s, A's size-1 dims stretched (Paddle's own rule), and large int32 magnitudes."""
    programs = []
    for dtype in ("int32", "int64", "float32"):
        for api, op in DIVISIONS:
            stem = f"{api}_{dtype}"
            programs += [
                _binary(f"{stem}_same", f"paddle.{api}", _api(api), dtype, (2, 3, 4), (2, 3, 4), divisor=True),
                _binary(f"{stem}_bcast", f"paddle.{api}", _api(api), dtype, (2, 3, 4), (4,), divisor=True),
                _binary(f"{stem}_axis1", f"{op}(axis=1)", _legacy(op, 1), dtype, (2, 3, 4), (3,), divisor=True),
                _binary(f"{stem}_axis0_trailing1", f"{op}(axis=0)", _legacy(op, 0), dtype, (2, 3, 4), (2, 3, 1),
                        divisor=True),
                _binary(f"{stem}_stretch_x", f"paddle.{api}", _api(api), dtype, (2, 1, 4), (3, 1), divisor=True),
            ]
    for dtype in ("int32", "int64"):
        big = np.array([INT32_MAX, -INT32_MAX, 2147483000, -2147483000, 1999999999, -1999999999, 123456789,
                        -987654321], dtype)
        by = np.array([3, 3, -7, 7, 13, -13, -1, 10], dtype)
        for api, _ in DIVISIONS:
            programs.append(Program(f"{api}_{dtype}_large", _api(api), {"x": big, "y": by}, f"paddle.{api}"))
    return programs


def arithmetic_programs() -> list[Program]:
    """add/subtract/multiply/maximum/minimum/pow: numpy-style, with the legacy axis, A's size-1 dims stretched."""
    programs = []
    for api, op in ARITHMETIC:
        from_api = api in LEGACY_IR_API
        build, call = (_api(api), f"paddle.{api}") if from_api else (_legacy(op, -1), f"{op}(axis=-1)")
        for dtype in ("int32", "int64", "float32"):
            programs += [
                _binary(f"{api}_{dtype}_bcast", call, build, dtype, (2, 3, 4), (4,)),
                _binary(f"{api}_{dtype}_axis1", f"{op}(axis=1)", _legacy(op, 1), dtype, (2, 3, 4), (3,)),
            ]
        programs.append(_binary(f"{api}_float32_axis0", f"{op}(axis=0)", _legacy(op, 0), "float32", (2, 3, 4),
                                (2, 3)))
        programs.append(_binary(f"{api}_float32_stretch_x", call, build, "float32", (1, 3), (2, 1)))
    pow_inputs = {  # small exponents on negative bases, and powers exact in double that float32 cannot hold
        "int32": ({"x": np.array([-3, -2, 2, 7, -7, 5, 10, 46340], np.int32),
                   "y": np.array([3, 2, 5, 9, 7, 0, 9, 2], np.int32)}),
        "int64": ({"x": np.array([-3, -2, 3, 7, -7, 5, 10, 3037000499], np.int64),
                   "y": np.array([3, 2, 30, 18, 17, 0, 15, 2], np.int64)}),
    }
    for dtype, feeds in pow_inputs.items():
        programs.append(Program(f"pow_{dtype}_exact_large", _api("pow"), feeds, "paddle.pow"))
    for dtype in ("int32", "int64"):
        programs.append(_binary(f"pow_{dtype}_negative_base", "paddle.pow", _api("pow"), dtype, (2, 3, 4), (4,)))
    return [_non_negative_exponents(p) if p.name.startswith("pow_") and "exact" not in p.name else p
            for p in programs]


def _non_negative_exponents(program: Program) -> Program:
    """Integer and float pow with exponents 0-4 (negative bases kept): Paddle's integer pow of a negative exponent and
    a negative base to a fractional power (NaN) are not what these programs test."""
    y = program.inputs["y"]
    small = np.abs(y) % 5 if y.dtype.kind == "i" else np.round(np.abs(y) % 5).astype(y.dtype)
    return Program(program.name, program.build, {**program.inputs, "y": small.astype(y.dtype)}, program.paddle_call)


def comparison_programs() -> list[Program]:
    """The six comparisons broadcast from the end, B's trailing 1s, and A's size-1 dims stretched, on integers and
    floats with ties (Paddle 3.3's comparison ops refuse an ``axis`` other than -1 when building the program: their
    shape inference broadcasts numpy-style whatever the attribute says)."""
    programs = []
    for api in COMPARISONS:
        build, call = (_api(api), f"paddle.{api}") if api in LEGACY_IR_API else (_legacy(api, -1, "bool"),
                                                                                f"{api}(axis=-1)")
        programs.append(_binary(f"{api}_int32_bcast", call, build, "int32", (2, 3, 4), (4,)))
        programs.append(_binary(f"{api}_float32_trailing1", call, build, "float32", (2, 3, 4), (3, 1)))
        programs.append(_binary(f"{api}_int64_stretch_x", call, build, "int64", (2, 1, 4), (3, 1)))
    for program in programs:  # ties: every comparison's both outcomes
        x, y = program.inputs["x"], program.inputs["y"]
        if x.dtype.kind == "i":
            program.inputs["x"][...] = np.clip(x, -3, 3)
            program.inputs["y"][...] = np.clip(y, -3, 3)
        else:
            program.inputs["y"][...] = np.round(y)
            program.inputs["x"][...] = np.round(x)
    return programs


def expand_programs() -> list[Program]:
    """paddle.expand (a list, -1 entries, a shape tensor), paddle.broadcast_to, expand_as on every dtype family."""
    def expand(shape: list[int]) -> Callable[[dict[str, Any]], Any]:
        return lambda v: import_paddle().expand(v["y"], shape)

    def broadcast_to(shape: list[int]) -> Callable[[dict[str, Any]], Any]:
        return lambda v: import_paddle().broadcast_to(v["y"], shape)

    def expand_to_shape_of_x(v: dict[str, Any]) -> Any:
        paddle = import_paddle()
        return paddle.expand(v["y"], paddle.shape(v["x"]))

    programs = [
        Program("expand_int32_new_axis", expand([2, 3]), {"y": ints("e1", (3,), "int32")}, "paddle.expand"),
        Program("expand_float32_minus1", expand([2, -1, 4]), {"y": floats("e2", (3, 1))}, "paddle.expand"),
        Program("expand_int64_stretch", expand([4, 3, 5]), {"y": ints("e3", (1, 3, 1), "int64")}, "paddle.expand"),
        Program("expand_int64_shape_tensor", expand_to_shape_of_x,
                {"x": ints("e4", (2, 3, 4), "int64"), "y": ints("e5", (3, 1), "int64")}, "paddle.expand(shape(x))"),
        Program("expand_bool", expand([2, 2, 3]), {"y": ints("e6", (1, 3), "int32") > 0}, "paddle.expand"),
        Program("broadcast_to_float32", broadcast_to([2, 2, 3]), {"y": floats("b1", (1, 3))},
                "paddle.broadcast_to"),
        Program("broadcast_to_int32", broadcast_to([3, 4]), {"y": ints("b2", (3, 1), "int32")},
                "paddle.broadcast_to"),
        Program("broadcast_to_bool", broadcast_to([2, 3]), {"y": ints("b3", (3,), "int64") < 0},
                "paddle.broadcast_to"),
        Program("expand_as_float32", lambda v: legacy_expand_as(v["y"], v["x"]),
                {"x": floats("a1", (2, 3, 4)), "y": floats("a2", (3, 1))}, "expand_as_v2"),
        Program("expand_as_int64", lambda v: legacy_expand_as(v["y"], v["x"]),
                {"x": ints("a3", (2, 3, 4), "int64"), "y": ints("a4", (1, 4), "int64")}, "expand_as_v2"),
        Program("expand_as_int32_same_rank", lambda v: legacy_expand_as(v["y"], v["x"]),
                {"x": ints("a5", (2, 3, 4), "int32"), "y": ints("a6", (2, 1, 4), "int32")}, "expand_as_v2"),
    ]
    return programs


def all_programs() -> list[Program]:
    return division_programs() + arithmetic_programs() + comparison_programs() + expand_programs()


# ---------------------------------------------------------------- the report

def verdict_kind(verdict: str) -> str:
    return verdict.split(" ", 1)[0]


def report(outcomes: list[Outcome], markdown: bool) -> str:
    lines = []
    if markdown:
        lines += ["| program | Paddle | OpenVINO IR | IR route | CPU plugin | paddle2onnx |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {o.name} | {o.paddle_call}: {' '.join(o.paddle_ops)} | {'; '.join(o.openvino_ops)} | "
                  f"{o.ir_route} | {o.cpu_plugin} | {o.paddle2onnx} |" for o in outcomes]
    else:
        for o in outcomes:
            lines.append(f"{o.name}: {o.paddle_call} [{' '.join(o.paddle_ops)}] -> {'; '.join(o.openvino_ops)}")
            lines += [f"    IR route: {o.ir_route}", f"    CPU plugin: {o.cpu_plugin}",
                      f"    paddle2onnx: {o.paddle2onnx}"]
    for label, attr in (("IR route", "ir_route"), ("CPU plugin", "cpu_plugin"), ("paddle2onnx", "paddle2onnx")):
        counts = Counter(verdict_kind(getattr(o, attr)) for o in outcomes)
        lines.append(f"{label}: " + ", ".join(f"{n} {kind}" for kind, n in counts.most_common()) +
                     f" (of {len(outcomes)})")
    return "\n".join(lines)


def versions() -> str:
    import onnxruntime
    import openvino

    found = [f"paddlepaddle {import_paddle().__version__}", f"openvino {openvino.__version__.split('-')[0]}",
             f"onnxruntime {onnxruntime.__version__}"]
    with contextlib.suppress(ImportError):
        import onnxifier

        found.append(f"onnxifier {onnxifier.__version__}")
    with contextlib.suppress(ImportError):
        import paddle2onnx

        found.append(f"paddle2onnx {paddle2onnx.__version__}")
    return ", ".join(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="program names (default: all)")
    parser.add_argument("--markdown", action="store_true", help="a markdown table")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("O2O").setLevel(logging.CRITICAL)
    programs = [p for p in all_programs() if not args.only or p.name in args.only]
    outcomes = []
    with tempfile.TemporaryDirectory() as folder:
        for program in programs:
            outcomes.append(evaluate(program, Path(folder)))
            log.warning("%s: IR route %s", program.name, outcomes[-1].ir_route)
    print(versions())
    print(report(outcomes, args.markdown))


if __name__ == "__main__":
    main()
