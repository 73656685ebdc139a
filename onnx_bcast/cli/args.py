"""The ``onnx-bcast`` command line: its options, and the combinations refused as usage errors (exit status 2)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence

from onnx_bcast.cli.input_shapes_argv import split_input_shapes
from onnx_bcast.cli.op_listing import version_text
from onnx_bcast.cli.runtimes import RUNTIMES

_EXAMPLES = {
    "convert": "example:\n  onnx-bcast convert models/nchw_bias_explicit.onnx -o nchw_standard.onnx --verify",
    "run": "example:\n  onnx-bcast run models/nchw_bias_explicit.onnx --input features=features.npy",
    "check": "example:\n  onnx-bcast check models/batchnorm_v0.onnx",
    "demo": "example:\n  onnx-bcast demo",
    "ops": "example:\n  onnx-bcast ops",
    "from-ir": "example:\n  onnx-bcast from-ir model.xml -o model.onnx --verify",
}
_RUNS = "what the verification runs"
#: per command, the options (by dest) that only --verify reads, and why
_VERIFY_ONLY = {
    "convert": dict.fromkeys(("input", "input_shapes", "seed", "providers", "ep_library"), _RUNS),
    "from-ir": {**dict.fromkeys(("input", "input_shapes", "seed"), _RUNS),
                "keep_failed": "it writes the model that fails the verification"},
}
_SHAPE = re.compile(r"(?P<name>.+):\[(?P<dims>\s*\d+(?:\s*,\s*\d+)*\s*|\s*)\]")


def seed(text: str) -> int:
    """A ``--seed``: a non-negative integer (numpy's generators take no negative seed)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text}")
    return value


def input_shape(text: str) -> tuple[str, list[int]]:
    """One ``--input-shapes`` item, ``NAME:[2,16]`` (polygraphy's form; ``NAME:[]`` for a scalar)."""
    match = _SHAPE.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"expected NAME:[DIM,...] (e.g. x:[2,16]), got {text!r}")
    dims = match.group("dims").strip()
    return match.group("name"), [int(d) for d in dims.split(",")] if dims else []


def input_file(text: str) -> tuple[str, str]:
    """One ``--input`` item, ``NAME=FILE.npy``, as (NAME, FILE); both parts are needed."""
    name, sep, file = text.partition("=")
    if not sep or not name or not file:
        raise argparse.ArgumentTypeError(f"expected NAME=FILE.npy (e.g. x=x.npy), got {text!r}")
    return name, file


def provider_list(text: str) -> list[str]:
    """A ``--providers`` value: execution provider names separated by commas, in order of preference."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected NAME,NAME,... (e.g. CUDAExecutionProvider,CPUExecutionProvider), "
                                         f"got {text!r}")
    return names


def _common_options(top: bool) -> argparse.ArgumentParser:
    """--debug, -q and -v, accepted before and after the subcommand (a subcommand's leave the top one's alone)."""
    options = argparse.ArgumentParser(add_help=False)
    unset = {} if top else {"default": argparse.SUPPRESS}
    options.add_argument("--debug", action="store_true", help="show the traceback of an error",
                         **({"default": False} if top else unset))
    loudness = options.add_mutually_exclusive_group()
    loudness.add_argument("-q", "--quiet", action="store_true", help="print errors only",
                          **({"default": False} if top else unset))
    loudness.add_argument("-v", "--verbose", action="count",
                          help="log what is done (-v: INFO, -vv: DEBUG, from the onnx_bcast loggers)",
                          **({"default": 0} if top else unset))
    return options


class _Version(argparse.Action):
    """argparse's ``version`` action with its text made when asked: reading five packages' metadata costs about
    2 ms, which every command paid when building the parser."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        formatter = parser._get_formatter()
        formatter.add_text(version_text())
        parser._print_message(formatter.format_help(), sys.stdout)
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``onnx-bcast`` and its subcommands (each with an example in its help)."""
    parser = argparse.ArgumentParser(
        prog="onnx-bcast",
        description="Run ONNX models with explicit (OpenVINO/nGraph/PaddlePaddle) broadcasts in ONNX Runtime.",
        epilog="exit status: 0 success, 1 model or input problem, 2 bad usage",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # --version on one line, however wide the terminal
        parents=[_common_options(top=True)],
    )
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = _common_options(top=False)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text, description=help_text, epilog=_EXAMPLES[name],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, parents=[common])
        command.set_defaults(parser=command)
        return command

    def add_random_inputs(command: argparse.ArgumentParser, which: str) -> None:
        command.add_argument("--input", action="append", type=input_file, default=[], metavar="NAME=FILE.npy",
                             help=f"{which}an input from a .npy file (random data otherwise); once per input")
        command.add_argument("--input-shapes", action="append", type=input_shape, default=[],
                             metavar="NAME:[DIM,...]",
                             help=f"{which}the shape of a random input, fixing its unknown or named dims "
                                  "(e.g. x:[2,16]); several may follow one --input-shapes")
        command.add_argument("--seed", type=seed, default=None,
                             help=f"{which}seed of the random inputs (default: 0)")

    def add_providers(command: argparse.ArgumentParser, when: str, what_runs: str) -> None:
        command.add_argument("--providers", type=provider_list, default=None, metavar="NAME,NAME,...",
                             help=f"{when}{what_runs}ONNX Runtime's execution providers, in order of preference (e.g. "
                                  "CUDAExecutionProvider,CPUExecutionProvider; default: CPUExecutionProvider); a "
                                  "plugin EP is named the same way, its library found in an installed "
                                  "onnxruntime-ep-* wheel or given by --ep-library")
        command.add_argument("--ep-library", action="append", default=[], metavar="PATH",
                             help=f"{when}register a plugin execution provider's library (a file, or an installed "
                                  "module with get_library_path(), e.g. onnxruntime_ep_openvino); ONNX Runtime >= "
                                  "1.23")

    convert = add("convert", "rewrite every onnx_bcast node into standard ONNX (the input is never modified)")
    convert.add_argument("model", help="the .onnx file to convert")
    convert.add_argument("-o", "--output", required=True,
                         help="where to write the standard-ONNX model: never a file the command reads, nor an existing "
                              "file unless --force")
    convert.add_argument("--force", action="store_true",
                         help="overwrite the output if it exists (never a file the command reads)")
    convert.add_argument("--opset", type=int, default=None,
                         help="default-domain opset of the result. A legacy model (opset 1-6) is imported at this "
                              "opset (7 or more; default: 17); a model that imports none gets it (default: the "
                              "newest the installed ONNX Runtime runs); any other model keeps its own, and a "
                              "different --opset, lower or higher, is refused")
    convert.add_argument("--verify", action="store_true",
                         help="run both models and require bit-identical outputs before writing anything")
    add_random_inputs(convert, "with --verify: ")
    add_providers(convert, "with --verify: ", "the converted model runs on ")
    convert.add_argument("--no-guards", action="store_true",
                         help="leave out the run-time checks: the converted model may then return values for inputs "
                              "the original rejects")
    convert.set_defaults(handler="convert")
    run = add("run", "run a model through onnx-bcast's ONNX Runtime ops or OpenVINO (random inputs unless given)")
    run.add_argument("model", help="the .onnx file")
    add_random_inputs(run, "")
    run.add_argument("--backend", choices=("numpy", "native"), default=None,
                     help="numpy: our ops as Python kernels; native: the guarded standard lowering in plain ONNX "
                          "Runtime (default: numpy, or native where --providers names another provider than the "
                          "CPU's: our Python kernels run on the CPU only; for --runtime onnxruntime only)")
    run.add_argument("--runtime", choices=RUNTIMES, default="onnxruntime",
                     help="openvino: OpenVINO's CPU plugin reads our ops (needs onnx-bcast[openvino]) "
                          "(default: %(default)s)")
    add_providers(run, "", "")
    run.add_argument("--save-outputs", metavar="FILE.npz", default=None,
                     help="also save every output in a .npz file (numpy.load gives them by name): never a file the "
                          "command reads, nor an existing file unless --force")
    run.add_argument("--force", action="store_true",
                     help="overwrite the file of --save-outputs if it exists (never a file the command reads)")
    run.set_defaults(handler="run")
    check = add("check", "list a model's onnx_bcast nodes and validate what is statically known")
    check.add_argument("model", help="the .onnx file")
    check.set_defaults(handler="check")
    demo = add("demo", "run every bundled model with our ORT ops, convert it, and check the converted model gives "
                       "identical outputs in plain ORT and the reference evaluator")
    demo.set_defaults(handler="demo")
    ops = add("ops", "list onnx-bcast's ops with their inputs, attributes, defaults and modes")
    ops.set_defaults(handler="ops")
    from_ir = add("from-ir", "OpenVINO IR (.xml + .bin) to ONNX through onnxifier, OpenVINO's broadcasts and binary "
                             "ops lowered by onnx-bcast (needs onnx-bcast[onnxifier])")
    from_ir.add_argument("model", help="the IR's .xml file (its weights in the .bin beside it)")
    from_ir.add_argument("-o", "--output", required=True,
                         help="where to write the ONNX model: never the IR's .xml or .bin, nor an existing file "
                              "unless --force (checked before converting)")
    from_ir.add_argument("--force", action="store_true",
                         help="overwrite the output if it exists (never the IR's files)")
    from_ir.add_argument("--keep-ops", action="store_true",
                         help="keep onnx_bcast nodes (for onnx_bcast.InferenceSession or OpenVINO with our extensions)")
    from_ir.add_argument("--no-guards", action="store_true", help="leave out the run-time checks")
    from_ir.add_argument("--verify", action="store_true",
                         help="run the written model and the IR on OpenVINO's CPU plugin on the same inputs and "
                              "require equal outputs (integers exactly, floats within 1e-4) before writing")
    add_random_inputs(from_ir, "with --verify: ")
    from_ir.add_argument("--keep-failed", action="store_true",
                         help="with --verify: if the outputs differ, still write the model, as OUT.unverified.onnx")
    from_ir.add_argument("--pythondiv", choices=("cpu", "reference"), default="cpu",
                         help="integer Divide with m_pythondiv=true: as OpenVINO's CPU plugin computes it "
                              "(truncation, what its ONNX, Paddle and JAX frontends mean; floor under pdpd "
                              "broadcasting), or floor as its reference kernels (default: %(default)s)")
    from_ir.set_defaults(handler="from-ir")
    return parser


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; an option that would be ignored is a usage error (exit status 2) naming it."""
    parser = build_parser()
    args = parser.parse_args(split_input_shapes(sys.argv[1:] if argv is None else argv))
    command: argparse.ArgumentParser = args.parser
    if args.quiet and args.verbose:
        command.error("argument -q/--quiet: not allowed with argument -v/--verbose")
    if args.command == "from-ir" and args.keep_ops and args.no_guards:
        command.error("argument --no-guards: guards are written when our nodes are lowered; --keep-ops keeps them")
    if args.command in _VERIFY_ONLY and not args.verify:
        for dest, why in _VERIFY_ONLY[args.command].items():
            if getattr(args, dest) not in ([], None) and getattr(args, dest) is not False:
                command.error(f"argument --{dest.replace('_', '-')}: only used with --verify ({why})")
    if args.command == "run" and args.runtime == "openvino":
        for option, value in (("--backend", args.backend), ("--providers", args.providers),
                              ("--ep-library", args.ep_library)):
            if value not in ([], None):
                command.error(f"argument {option}: chooses how ONNX Runtime runs the model; it has no effect with "
                              "--runtime openvino")
    if args.command == "run" and args.force and args.save_outputs is None:
        command.error("argument --force: overwrites the file of --save-outputs, which is not given")
    if args.command in ("convert", "run", "from-ir"):
        for option, items in (("--input", args.input), ("--input-shapes", args.input_shapes)):
            names = [name for name, _ in items]
            twice = next((name for index, name in enumerate(names) if name in names[:index]), None)
            if twice is not None:
                command.error(f"argument {option}: {twice!r} is given twice (once per input)")
        given = {name for name, _ in args.input}
        for name, _ in args.input_shapes:
            if name in given:
                command.error(f"argument --input-shapes: {name!r} is given by --input too (its shape is the file's)")
        if args.seed is None:
            args.seed = 0
    if args.command == "run" and args.backend is None:
        args.backend = "native" if any(name != "CPUExecutionProvider" for name in args.providers or []) else "numpy"
    return args
