"""``onnx-bcast from-ir MODEL.xml -o OUT.onnx``: OpenVINO IR to ONNX through onnxifier, our broadcasts lowered."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from onnx_bcast.cli.inputs import ModelProblem
from onnx_bcast.cli.output_paths import check_output


def cmd_from_ir(args: argparse.Namespace) -> int:
    from onnx_bcast.model.files import save_atomically
    from onnx_bcast.onnxifier import ir_to_onnx

    source, target = Path(args.model), Path(args.output)
    if source.suffix.lower() != ".xml":
        raise ModelProblem(f"{args.model}: expected an OpenVINO IR .xml file (its weights in the .bin beside it)")
    reads = [("the input model", source), ("the IR's weights", source.with_suffix(".bin"))]
    check_output(args.output, args.output, reads, args.force,  # before a conversion that may take seconds
                 f"give the path of the file to write (e.g. {target / (source.stem + '.onnx')})")
    start = time.perf_counter()
    model = ir_to_onnx(source, keep_ops=args.keep_ops, guards=not args.no_guards, pythondiv=args.pythondiv)
    seconds = time.perf_counter() - start
    verified = ""
    if args.verify:
        from onnx_bcast.onnxifier.verify import verify_ir

        verified = "; " + verify_ir(source, model, keep_ops=args.keep_ops, pythondiv=args.pythondiv, seed=args.seed)
    try:
        save_atomically(model, target, external=False)
    except OSError as err:
        raise ModelProblem(str(err)) from err
    ours = sum(1 for node in model.graph.node if node.domain == "onnx_bcast")
    kept = f", {ours} onnx_bcast nodes kept" if args.keep_ops else ""
    guards = sum(1 for node in model.graph.node if "/guard: " in node.name)
    print(f"{source.name}: {len(model.graph.node)} ONNX nodes{kept}, {guards} run-time checks, {seconds:.2f} s")
    print(f"wrote {args.output}{verified}")
    return 0
