"""The ``onnx-bcast`` command: convert, run, check and demo."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from onnx_bcast.errors import BroadcastError
from onnx_bcast.inputs import random_feeds
from onnx_bcast.op_listing import version_text
from onnx_bcast.runtimes import RUNTIMES

logger = logging.getLogger("onnx_bcast.cli")

EXIT_OK, EXIT_MODEL, EXIT_USAGE = 0, 1, 2
PROGRESS_FROM = 5000  # nodes of ours from which convert shows its progress


class ModelProblem(Exception):
    """A problem with the user's model or inputs: one line on stderr, exit status 1."""


def _load_with_flag(path: str) -> tuple[onnx.ModelProto, bool]:
    from onnx_bcast.model_io import ModelTooLarge, UnsafeModel, load_model_file

    file = Path(path)
    if not file.is_file():
        raise ModelProblem(f"{path}: no such file")
    try:
        return load_model_file(file)
    except (UnsafeModel, ModelTooLarge) as err:
        raise ModelProblem(str(err)) from err
    except Exception as err:
        raise ModelProblem(f"{path}: not a readable ONNX model ({type(err).__name__}: {err})") from err


def _load(path: str) -> onnx.ModelProto:
    return _load_with_flag(path)[0]


def _parse_inputs(pairs: Sequence[str]) -> dict[str, np.ndarray]:
    feeds = {}
    for pair in pairs:
        name, sep, file = pair.partition("=")
        if not sep or not name or not file:
            raise ModelProblem(f"--input {pair!r}: expected NAME=FILE.npy")
        try:
            feeds[name] = np.load(file, allow_pickle=False)
        except Exception as err:
            raise ModelProblem(f"--input {name}: cannot read {file} ({type(err).__name__}: {err})") from err
    return feeds


def _feeds_for(session: Any, given: dict[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    known = {i.name for i in session.get_inputs()}
    unknown = sorted(set(given) - known)
    if unknown:
        raise ModelProblem(f"--input names {unknown} are not inputs of the model (inputs: {sorted(known)})")
    try:
        return random_feeds(session, seed, given)
    except ValueError as err:
        raise ModelProblem(str(err)) from err


def cmd_run(args: argparse.Namespace) -> int:
    from onnx_bcast.runtimes import open_runtime, preview

    model = _load(args.model)
    runner = open_runtime(model, args.model, args.runtime, args.backend)
    feeds = _feeds_for(runner, _parse_inputs(args.input), args.seed)
    start = time.perf_counter()
    outputs = runner.run(feeds)
    elapsed = (time.perf_counter() - start) * 1e3
    for name, value in outputs:
        print(f"{name}: {value.dtype} {list(value.shape)}  {preview(value)}")
    print(f"ran in {elapsed:.2f} ms")
    return EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    from onnx_bcast.convert import convert_with_report
    from onnx_bcast.model_io import save_atomically
    from onnx_bcast.verify import verify_equal

    source, target = Path(args.model), Path(args.output)
    if target.exists() and source.exists() and target.resolve() == source.resolve():
        raise ModelProblem(f"{args.output}: is the input model; choose another output path")
    if not target.parent.is_dir():
        raise ModelProblem(f"{args.output}: folder {str(target.parent)!r} does not exist")
    model, external = _load_with_flag(args.model)
    start = time.perf_counter()
    converted, report = convert_with_report(model, opset=args.opset, guards=not args.no_guards,
                                            progress=_progress_on_stderr)
    seconds = time.perf_counter() - start
    verification = (verify_equal(model, converted, _parse_inputs(args.input) or None, check_failures=not args.no_guards)
                    if args.verify else None)
    save_atomically(converted, target, external=external)
    for line in report.lines() or ["no onnx_bcast node: nothing to rewrite"]:
        print(line)
    verified = ""
    if verification is not None:
        verified = " (verified: outputs identical" + (
            f", {verification.rounded} of them up to summation-order rounding" if verification.rounded else "")
        if verification.invalid_inputs:
            verified += f"; {verification.invalid_inputs} inputs the original rejects fail in the converted model too"
        verified += ")"
    before, after = _node_count(model), _node_count(converted)
    guards = sum(1 for node in _all_nodes(converted) if "/guard: " in node.name)
    print(f"{before} nodes -> {after} nodes ({sum(report.rewritten.values())} of ours rewritten, {guards} run-time "
          f"checks), {seconds:.2f} s")
    print(f"wrote {args.output}{verified}")
    return EXIT_OK


def _progress_on_stderr(done: int, total: int) -> None:
    """A progress line for large models (more than a few thousand nodes of ours), on stderr."""
    if total >= PROGRESS_FROM:
        end = "\n" if done == total else ""
        print(f"\rconverting: {done}/{total} nodes of ours", end=end, file=sys.stderr, flush=True)


def _all_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    from onnx_bcast.model_walk import node_lists

    return [node for entry in node_lists(model) for node in entry.container.node]


def _node_count(model: onnx.ModelProto) -> int:
    return len(_all_nodes(model))


def cmd_ops(args: argparse.Namespace) -> int:
    from onnx_bcast.op_listing import op_lines

    for line in op_lines():
        print(line)
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from onnx_bcast.inspect import check_model

    report = check_model(_load(args.model))
    for line in report.lines:
        print(line)
    if report.errors:
        for error in report.errors:
            print(f"error: {error}", file=sys.stderr)
        return EXIT_MODEL
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from onnx_bcast.demo import run_demo

    return EXIT_OK if run_demo(print) else EXIT_MODEL


_EXAMPLES = {
    "convert": "example:\n  onnx-bcast convert models/nchw_bias_explicit.onnx -o nchw_standard.onnx --verify",
    "run": "example:\n  onnx-bcast run models/nchw_bias_explicit.onnx --input features=features.npy",
    "check": "example:\n  onnx-bcast check models/batchnorm_v0.onnx",
    "demo": "example:\n  onnx-bcast demo",
    "ops": "example:\n  onnx-bcast ops",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onnx-bcast",
        description="Run ONNX models with explicit (OpenVINO/nGraph/PaddlePaddle) broadcasts in ONNX Runtime.",
        epilog="exit status: 0 success, 1 model or input problem, 2 bad usage",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # --version on one line, however wide the terminal
    )
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text, description=help_text, epilog=_EXAMPLES[name],
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    convert = add("convert", "rewrite every onnx_bcast node into standard ONNX (the input is never modified)")
    convert.add_argument("model", help="the .onnx file to convert")
    convert.add_argument("-o", "--output", required=True, help="where to write the standard-ONNX model")
    convert.add_argument("--opset", type=int, default=None,
                         help="default-domain opset for a model that imports none (otherwise the model's own)")
    convert.add_argument("--verify", action="store_true",
                         help="run both models and require bit-identical outputs before writing anything")
    convert.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                         help="with --verify: an input from a .npy file (random data otherwise)")
    convert.add_argument("--no-guards", action="store_true",
                         help="leave out the run-time checks: the converted model may then return values for inputs "
                              "the original rejects")
    convert.set_defaults(handler=cmd_convert)
    run = add("run", "run a model through onnx-bcast's ONNX Runtime ops or OpenVINO (random inputs unless given)")
    run.add_argument("model", help="the .onnx file")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input from a .npy file")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: %(default)s)")
    run.add_argument("--backend", choices=("numpy", "native"), default="numpy",
                     help="numpy: our ops as Python kernels; native: the guarded standard lowering in plain ONNX "
                          "Runtime (default: %(default)s)")
    run.add_argument("--runtime", choices=RUNTIMES, default="onnxruntime",
                     help="openvino: OpenVINO's CPU plugin reads our ops (needs onnx-bcast[openvino]; --backend is "
                          "for onnxruntime) (default: %(default)s)")
    run.set_defaults(handler=cmd_run)
    check = add("check", "list a model's onnx_bcast nodes and validate what is statically known")
    check.add_argument("model", help="the .onnx file")
    check.set_defaults(handler=cmd_check)
    demo = add("demo", "run every bundled model with our ORT ops, convert it, and check the converted model gives "
                       "identical outputs in plain ORT and the reference evaluator")
    demo.set_defaults(handler=cmd_demo)
    ops = add("ops", "list onnx-bcast's ops with their inputs, attributes, defaults and modes")
    ops.set_defaults(handler=cmd_ops)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING, format="%(levelname)s: %(message)s")
    try:
        return args.handler(args)
    except (ModelProblem, BroadcastError, ValueError, ImportError, onnx.checker.ValidationError,
            onnx.shape_inference.InferenceError) as err:
        if args.debug:
            raise
        print(f"onnx-bcast {args.command}: {str(err).splitlines()[0] if str(err) else type(err).__name__}",
              file=sys.stderr)
        return EXIT_MODEL
    except Exception as err:  # ORT and others: still one line unless --debug
        if args.debug:
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        print(f"onnx-bcast {args.command}: {type(err).__name__}: {first}", file=sys.stderr)
        return EXIT_MODEL


if __name__ == "__main__":
    sys.exit(main())
