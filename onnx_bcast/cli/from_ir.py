"""``onnx-bcast from-ir MODEL.xml -o OUT.onnx``: OpenVINO IR to ONNX through onnxifier, our broadcasts lowered; the
written model is checked (and with ``--verify`` compared with OpenVINO's CPU plugin) before anything is written."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from onnx_bcast.cli.inputs import ModelProblem, input_reads, parse_inputs
from onnx_bcast.cli.output_paths import check_output

EXIT_OK, EXIT_MODEL = 0, 1


def unverified_path(target: Path) -> Path:
    """Where ``--keep-failed`` writes a model that failed ``--verify``: beside the output, named so."""
    return target.with_name(f"{target.stem}.unverified{target.suffix or '.onnx'}")


def _quiet_onnxruntime(verbose: int) -> None:
    """onnxifier folds constants in ONNX Runtime sessions of its own, with ORT's default logger: their optimizers'
    warnings (e.g. "UnsqueezeElimination cannot remove node") are about onnxifier's scratch models, not anything the
    user can act on. This process is ours: they show from -vv on."""
    if verbose >= 2:
        return
    try:
        import onnxruntime
    except ImportError:
        return
    onnxruntime.set_default_logger_severity(3)


def cmd_from_ir(args: argparse.Namespace) -> int:
    from onnx_bcast.cli.report import all_nodes, checks_text
    from onnx_bcast.model.files import save_atomically
    from onnx_bcast.onnxifier import ir_to_onnx
    from onnx_bcast.onnxifier.validate import IRNotConvertible

    source, target = Path(args.model), Path(args.output)
    if source.suffix.lower() != ".xml":
        raise ModelProblem(f"{args.model}: expected an OpenVINO IR .xml file (its weights in the .bin beside it)")
    reads = [("the input model", source), ("the IR's weights", source.with_suffix(".bin")), *input_reads(args.input)]
    check_output(args.output, args.output, reads, args.force,  # before a conversion that may take seconds
                 f"give the path of the file to write (e.g. {target / (source.stem + '.onnx')})")
    given, shapes = parse_inputs(args.input), dict(args.input_shapes)  # none without --verify (args.parse)
    _quiet_onnxruntime(args.verbose or 0)
    start = time.perf_counter()
    try:
        model = ir_to_onnx(source, keep_ops=args.keep_ops, guards=not args.no_guards, pythondiv=args.pythondiv)
    except IRNotConvertible as err:
        print(f"onnx-bcast from-ir: {err}", file=sys.stderr)
        return EXIT_MODEL
    seconds = time.perf_counter() - start
    verified = ""
    if args.verify:
        from onnx_bcast.cli.inputs import check_names
        from onnx_bcast.onnxifier.verify import VerificationFailed, verify_ir

        check_names(list(model.graph.input), given, shapes)
        try:
            verified = "; " + verify_ir(source, model, keep_ops=args.keep_ops, pythondiv=args.pythondiv,
                                        seed=0 if args.seed is None else args.seed, given=given, shapes=shapes)
        except VerificationFailed as err:
            kept = ""
            if args.keep_failed:
                failed = check_output(str(unverified_path(target)), str(unverified_path(target)), reads, args.force,
                                      "")
                save_atomically(model, failed, external=False)
                kept = f"\n  the model was written to {failed} (--keep-failed)"
            print(f"onnx-bcast from-ir: {err}{kept or chr(10) + '  nothing was written (--keep-failed writes it)'}",
                  file=sys.stderr)
            return EXIT_MODEL
    try:
        save_atomically(model, target, external=False)
    except OSError as err:
        raise ModelProblem(str(err)) from err
    nodes = all_nodes(model)  # in If bodies too, as the checks are counted and as convert counts them
    ours = sum(1 for node in nodes if node.domain == "onnx_bcast")
    kept = f", {ours} onnx_bcast nodes kept" if args.keep_ops else ""
    print(f"{source.name}: {len(nodes)} ONNX nodes{kept}, {checks_text(nodes)}, {seconds:.2f} s")
    print(f"wrote {args.output}{verified}")
    return EXIT_OK
