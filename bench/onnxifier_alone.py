"""onnxifier alone vs the IR route (onnx_bcast.onnxifier) on the IRs of tests/ir_cases.py: counts of equal,
refused (conversion error, ORT refuses the model or its run) and silently wrong, against OpenVINO's reference (the
route with ``pythondiv="reference"``, which floors an integer ``Divide m_pythondiv=true`` as that reference does).

    .venv/bin/python bench/onnxifier_alone.py [--list]
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxifier
import onnxruntime as ort
import openvino as ov

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from onnx_bcast.onnxifier import ir_to_onnx  # noqa: E402
from tests.ir_cases import all_cases  # noqa: E402
from tests.ov_reference import NotFolded, ov_reference  # noqa: E402


def _run(model: object, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString())
    names = {i.name for i in session.get_inputs()}
    return session.run(None, {k: v for k, v in feeds.items() if k in names})


def _same(got: list, want: list, exact: bool) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        if g.shape != w.shape:
            return False
        if exact and not np.array_equal(g, w):
            return False
        if not exact and not np.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True):
            return False
    return True


def verdict(convert: object, path: Path, case: object, feeds: dict) -> str:
    try:
        want = [np.asarray(case.numpy_expected(feeds))] if case.numpy_expected else ov_reference(str(path), feeds)
    except NotFolded:
        want = None
    try:
        model = convert(path)
    except Exception as err:  # noqa: BLE001
        return f"refused ({type(err).__name__}: {str(err).splitlines()[0][:70]})"
    try:
        got = _run(model, feeds)
    except Exception as err:  # noqa: BLE001
        if want is None:
            return "equal (both refuse the bad target)"
        return f"refused (ORT: {str(err).splitlines()[0][:70]})"
    if want is None:
        return "wrong (accepts a target OpenVINO refuses)"
    return "equal" if _same(got, want, case.exact) else "wrong (values differ)"


def main() -> None:
    logging.getLogger("O2O").setLevel(logging.CRITICAL)
    counts: dict[str, dict[str, int]] = {"onnxifier alone": {}, "IR route": {}}
    with tempfile.TemporaryDirectory() as folder:
        for case in all_cases():
            model, feeds = case.build()
            path = Path(folder) / f"{case.name}.xml"
            ov.save_model(model, str(path), compress_to_fp16=False)
            line = []
            for label, convert in (("onnxifier alone", lambda p: onnxifier.convert(str(p), print_passes=False)),
                                   # the oracle is OpenVINO's reference, which floors an integer Divide with
                                   # m_pythondiv=true: the route is asked to as well (its default truncates, as the
                                   # CPU plugin does; with it, the 4 integer-division IRs differ from the reference)
                                   ("IR route", lambda p: ir_to_onnx(p, pythondiv="reference"))):
                result = verdict(convert, path, case, feeds)
                kind = result.split(" ")[0]
                counts[label][kind] = counts[label].get(kind, 0) + 1
                line.append(f"{label}: {result}")
            if "--list" in sys.argv:
                print(f"{case.name}: " + "; ".join(line))
    total = len(all_cases())
    print(f"onnxifier {onnxifier.__version__}, openvino {ov.__version__.split('-')[0]}, {total} IRs")
    for label, found in counts.items():
        print(f"{label}: {found.get('equal', 0)} equal, {found.get('refused', 0)} refused, "
              f"{found.get('wrong', 0)} silently wrong")


if __name__ == "__main__":
    main()
