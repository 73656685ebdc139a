"""The ``onnx-bcast`` command: convert, run, check, demo and ops."""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import onnx

from onnx_bcast.cli.args import parse
from onnx_bcast.cli.inputs import ModelProblem, feeds_for, input_reads, parse_inputs, random_note, save_outputs
from onnx_bcast.cli.output_paths import check_output
from onnx_bcast.cli.report import all_nodes, checks_text, op_table, progress_printer, verification_text
from onnx_bcast.errors import BroadcastError
from onnx_bcast.ort.providers import ProviderError

logger = logging.getLogger("onnx_bcast.cli.main")

EXIT_OK, EXIT_MODEL, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # the status of a command that SIGPIPE ended, as the shell reports it
MAX_MESSAGE = 2000  # characters of an error message shown (ORT's may hold a whole graph dump)


def _load_with_data_files(path: str) -> tuple[onnx.ModelProto, list[Path]]:
    """The model at ``path`` and its external data files; a file that is not a model is a ModelProblem."""
    from onnx_bcast.model.files import ModelTooLarge, UnsafeModel, load_model_file

    try:
        return load_model_file(Path(path))
    except (UnsafeModel, ModelTooLarge, FileNotFoundError) as err:
        raise ModelProblem(str(err)) from err
    except Exception as err:
        raise ModelProblem(f"{path}: not a readable ONNX model ({type(err).__name__}: {err})") from err


def _load(path: str) -> onnx.ModelProto:
    return _load_with_data_files(path)[0]


def _data_reads(data_files: list[Path]) -> list[tuple[str, Path]]:
    return [(f"an external data file of the input model ({file.name})", file) for file in data_files]


def cmd_run(args: argparse.Namespace) -> int:
    from onnx_bcast.cli.runtimes import open_runtime, preview

    model, data_files = _load_with_data_files(args.model)
    if args.save_outputs:  # before the run: a path that cannot be written costs none
        reads = [("the input model", args.model), *_data_reads(data_files), *input_reads(args.input)]
        check_output(args.save_outputs, f"--save-outputs {args.save_outputs}", reads, args.force,
                     "give a file name such as outputs.npz")
    runner = open_runtime(model, args.model, args.runtime, args.backend, args.providers, args.ep_library)
    feeds, generated = feeds_for(runner, parse_inputs(args.input), dict(args.input_shapes), args.seed)
    start = time.perf_counter()
    try:
        outputs = runner.run(feeds)
    except Exception as err:
        if generated:
            err.add_note(random_note(generated, args.seed))
        raise
    elapsed = (time.perf_counter() - start) * 1e3
    if args.save_outputs:
        save_outputs(args.save_outputs, outputs)
    for name, value in outputs:
        print(f"{name}: {value.dtype} {list(value.shape)}  {preview(value)}")
    print(f"ran in {elapsed:.2f} ms" + (f"; outputs saved in {args.save_outputs}" if args.save_outputs else ""))
    return EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    from onnx_bcast.convert import convert_with_report
    from onnx_bcast.model.files import save_atomically

    source = Path(args.model)
    model, data_files = _load_with_data_files(args.model)
    reads = [("the input model", source), *_data_reads(data_files), *input_reads(args.input)]
    example = Path(args.output) / f"{source.stem}_standard.onnx"
    target = check_output(args.output, args.output, reads, args.force,
                          f"give the path of the file to write (e.g. {example})")
    if args.verify and (args.providers or args.ep_library):
        from onnx_bcast.ort.providers import resolve

        resolve(args.providers, args.ep_library)  # an unknown provider is a usage error before converting
    start = time.perf_counter()
    converted, report = convert_with_report(model, opset=args.opset, guards=not args.no_guards,
                                            progress=None if args.quiet else progress_printer(sys.stderr))
    seconds = time.perf_counter() - start
    verification = _verify(args, model, converted) if args.verify else None
    try:
        save_atomically(converted, target, external=bool(data_files))
    except OSError as err:
        raise ModelProblem(str(err).replace(str(target), args.output, 1)) from err
    for line in report.lines() or ["no onnx_bcast node: nothing to rewrite"]:
        print(line)
    for line in op_table(model, converted):
        print(line)
    written = all_nodes(converted)
    before, after = len(all_nodes(model)), len(written)
    print(f"{before} nodes -> {after} nodes ({sum(report.rewritten.values())} of ours rewritten, "
          f"{checks_text(written)}), {seconds:.2f} s")
    print(f"wrote {args.output}{verification_text(verification)}")
    return EXIT_OK


def _verify(args: argparse.Namespace, model: onnx.ModelProto, converted: onnx.ModelProto) -> object:
    """``verify_equal`` on the inputs of ``--input``, ``--input-shapes`` and ``--seed``; inputs the original
    rejects are a ModelProblem that says which were random and how to give them."""
    from onnx_bcast.cli.inputs import check_names
    from onnx_bcast.verify import InvalidInputs, verify_equal

    given, shapes = parse_inputs(args.input), dict(args.input_shapes)
    initialized = {tensor.name for tensor in model.graph.initializer}
    check_names([value for value in model.graph.input if value.name not in initialized], given, shapes)
    try:
        return verify_equal(model, converted, given, seed=args.seed, check_failures=not args.no_guards,
                            shapes=shapes, providers=args.providers, ep_libraries=args.ep_library)
    except InvalidInputs as err:
        if not err.random:
            raise ModelProblem(f"--verify: the original model rejects the given inputs: {err.cause}") from err
        names = ", ".join(map(repr, err.random))
        plural = len(err.random) > 1
        how = ("give them with --input NAME=FILE.npy" if plural else f"give it with --input {err.random[0]}=FILE.npy")
        raise ModelProblem(f"--verify needs inputs the original model accepts, and it rejects the random "
                           f"input{'s' if plural else ''} {names} (--seed {err.seed}): {err.cause}. Nothing was "
                           f"written; {how} (a .npy file of valid values).") from err


def cmd_ops(args: argparse.Namespace) -> int:
    from onnx_bcast.cli.op_listing import op_lines

    for line in op_lines():
        print(line)
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from onnx_bcast.cli.check import check_model

    report = check_model(_load(args.model))
    for line in report.lines:
        print(line)
    if report.errors:
        sys.stdout.flush()
        for error in report.errors:
            print(f"onnx-bcast check: {error}", file=sys.stderr)
        return EXIT_MODEL
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from onnx_bcast.cli.demo import run_demo

    return EXIT_OK if run_demo(print) else EXIT_MODEL


def cmd_from_ir(args: argparse.Namespace) -> int:
    from onnx_bcast.cli.from_ir import cmd_from_ir as run

    return run(args)


HANDLERS = {"convert": cmd_convert, "run": cmd_run, "check": cmd_check, "demo": cmd_demo, "ops": cmd_ops,
            "from-ir": cmd_from_ir}


def one_line(text: str) -> str:
    """A multi-line message on one line, every line kept (ORT puts the offending index on its second line)."""
    joined = ""
    for line in (part.strip() for part in text.splitlines()):
        if line:
            joined += ("" if not joined else " " if joined[-1] in ".:;," else "; ") + line
    return joined if len(joined) <= MAX_MESSAGE else joined[:MAX_MESSAGE - 3] + "..."


def _error_text(err: BaseException, with_type: bool) -> str:
    text = one_line(str(err)) or type(err).__name__
    for note in getattr(err, "__notes__", []):  # e.g. that the inputs were random
        text += ("" if text[-1] in ".!?" else ".") + " " + one_line(note)
    return f"{type(err).__name__}: {text}" if with_type else text


def _configure_logging(args: argparse.Namespace) -> None:
    level = (logging.ERROR if args.quiet else logging.DEBUG if args.verbose >= 2
             else logging.INFO if args.verbose else logging.WARNING)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    args = parse(argv)
    _configure_logging(args)
    quiet = contextlib.redirect_stdout(io.StringIO()) if args.quiet else contextlib.nullcontext()  # errors only
    try:
        with quiet:
            return HANDLERS[args.handler](args)
    except BrokenPipeError:  # what read our output stopped reading (``| head -1``): no message, SIGPIPE's status
        if args.debug:
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())  # nor one when Python flushes at exit
        return EXIT_BROKEN_PIPE
    except ProviderError as err:  # a usage error found only when ONNX Runtime is asked what it offers
        if args.debug:
            raise
        print(f"onnx-bcast {args.command}: argument --providers: {one_line(str(err))}", file=sys.stderr)
        return EXIT_USAGE
    except (ModelProblem, BroadcastError, ValueError, ImportError, OSError, onnx.checker.ValidationError,
            onnx.shape_inference.InferenceError) as err:
        if args.debug:
            raise
        print(f"onnx-bcast {args.command}: {_error_text(err, with_type=False)}", file=sys.stderr)
        return EXIT_MODEL
    except Exception as err:  # ORT and others: still one line unless --debug
        if args.debug:
            raise
        print(f"onnx-bcast {args.command}: {_error_text(err, with_type=True)}", file=sys.stderr)
        return EXIT_MODEL


if __name__ == "__main__":
    sys.exit(main())
