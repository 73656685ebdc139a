"""Where a corpus model goes wrong on the IR route: the outputs of chosen IR ops made extra Results (taps), the tapped
IR converted by ``ir_to_onnx`` and run in ONNX Runtime, each tap compared with OpenVINO's CPU plugin on the same IR.

    .venv/bin/python bench/ir_bisect.py MODEL [--ops MVN,ScaledDotProductAttention] [--all]

Prints, in the IR's order, each tapped op (type-version, friendly name) and the max abs diff of its output; the
first tap over 1e-4 is where the conversion starts to differ (OpenVINO's CPU plugin itself agrees with ONNX Runtime
on the original model to about 1e-6 on most corpus models: see ``real_models.py check``, column "OV on IR").
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_models import by_name, ir_path  # noqa: E402

SUFFIX = "/sink_port_0"  # what onnxifier 2.0.3 appends to output names


def tapped_ir(xml: Path, types: set[str] | None, folder: Path) -> tuple[Path, list[tuple[str, str]]]:
    """A copy of the IR with the first output of every op of ``types`` (every op but constants and parameters when
    None) as a Result named ``tap<i>``; returns its path and the (type-version, friendly name) of each tap."""
    import openvino as ov

    model = ov.Core().read_model(str(xml))
    taps = []
    for op in list(model.get_ordered_ops()):
        kind = op.get_type_name()
        if kind in ("Constant", "Parameter", "Result") or (types is not None and kind not in types):
            continue
        if op.get_output_size() == 0:
            continue
        output = op.output(0)
        output.get_tensor().add_names({f"tap{len(taps)}"})
        model.add_outputs([output])
        for result in model.get_results():  # onnxifier names the ONNX output after the Result's friendly name
            if result.input_value(0) == output and result.get_friendly_name().startswith("Result_"):
                result.set_friendly_name(f"tap{len(taps)}")
        taps.append((f"{kind}-{op.get_type_info().version_id}", op.get_friendly_name()))
    path = folder / "tapped.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path, taps


def _by_tap(names: list[str], values: list[np.ndarray]) -> dict[str, np.ndarray]:
    found = {}
    for name, value in zip(names, values, strict=True):
        for part in name.removesuffix(SUFFIX).split(","):
            if part.startswith("tap"):
                found[part] = np.asarray(value)
    return found


def bisect(name: str, types: set[str] | None) -> list[tuple[str, str, float | None, str]]:
    """Per tap: (type-version, friendly name, max abs diff or None, note)."""
    import onnxruntime as ort
    import openvino as ov

    from onnx_bcast.onnxifier import ir_to_onnx

    entry = by_name(name)[0]
    feeds = entry.feeds()
    with tempfile.TemporaryDirectory() as folder:
        path, taps = tapped_ir(ir_path(entry), types, Path(folder))
        core = ov.Core()
        compiled = core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        results = compiled({port: feeds[port.get_any_name()] for port in compiled.inputs})
        want = {}
        for port in compiled.outputs:
            for tensor_name in port.get_names():
                if tensor_name.startswith("tap"):
                    want[tensor_name] = np.asarray(results[port])
        model = ir_to_onnx(path)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    order = list(entry.inputs)
    chosen = {i.name: feeds.get(i.name, feeds[order[k]]) for k, i in enumerate(session.get_inputs())}
    got = _by_tap([o.name for o in session.get_outputs()], session.run(None, chosen))
    rows = []
    for index, (kind, friendly) in enumerate(taps):
        key = f"tap{index}"
        if key not in got or key not in want:
            rows.append((kind, friendly, None, "not an output of the converted model" if key not in got else
                         "not an output in OpenVINO"))
        elif got[key].shape != want[key].shape:
            rows.append((kind, friendly, None, f"shape {got[key].shape}, OpenVINO's {want[key].shape}"))
        else:
            diff = np.abs(got[key].astype(np.float64) - want[key].astype(np.float64))
            rows.append((kind, friendly, float(np.max(diff, initial=0.0)), ""))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a corpus name (bench/real_models.py list)")
    parser.add_argument("--ops", help="comma-separated IR op types to tap (default: every op)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("O2O").setLevel(logging.CRITICAL)
    types = set(args.ops.split(",")) if args.ops else None
    for kind, friendly, diff, note in bisect(args.model, types):
        flag = " <-" if diff is not None and diff > 1e-4 else ""
        print(f"{kind:28} {friendly[:60]:60} {'-' if diff is None else f'{diff:.2e}':>9} {note}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
