"""Fail unless this Python environment holds exactly N distributions of the ``onnxruntime`` package (default 1).

Every build of ONNX Runtime (onnxruntime, onnxruntime-gpu, onnxruntime-openvino, ...) is its own distribution that
writes the same ``onnxruntime/`` package; two of them overwrite each other's files. A distribution counts when its
installed files (its RECORD) include ``onnxruntime/``, whatever its name. Prints each with its version (as
``pip list`` shows it) and, when there is one, the execution providers it runs.

Usage: python .ci/onnxruntime_builds.py [N]   (run by the environment's own python)
"""

from __future__ import annotations

import importlib.metadata
import sys


def onnxruntime_distributions() -> list[tuple[str, str]]:
    """(name, version) of every installed distribution whose files include the ``onnxruntime`` package."""
    found = []
    for dist in importlib.metadata.distributions():
        files = dist.files or []
        if any(f.parts and f.parts[0] == "onnxruntime" for f in files):
            found.append((dist.metadata["Name"], dist.version))
    return sorted(found)


def main() -> None:
    expected = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    found = onnxruntime_distributions()
    print(f"distributions of the onnxruntime package in {sys.prefix}: "
          + (", ".join(f"{name} {version}" for name, version in found) or "none"))
    if len(found) != expected:
        raise SystemExit(f"expected {expected} distribution(s) of the onnxruntime package, found {len(found)}")
    if found:
        import onnxruntime

        print(f"onnxruntime {onnxruntime.__version__}: providers {onnxruntime.get_available_providers()}")


if __name__ == "__main__":
    main()
