"""What ``onnx-bcast ops`` and ``onnx-bcast --version`` print, from the op table and the installed packages."""

from __future__ import annotations


def op_lines() -> list[str]:
    """The domain, then one line per op: inputs (``?``: optional), outputs where there are several, attributes with
    kind, default and modes."""
    from onnx_bcast.ops import OP_SPECS
    from onnx_bcast.ops.broadcast import MODES
    from onnx_bcast.ops.elementwise import RULES

    lines = ["domain onnx_bcast, version 1"]
    for spec in OP_SPECS:
        inputs = ", ".join(i.name + ("?" if i.optional else "") for i in spec.inputs)
        attrs = []
        for attr in spec.attrs:
            default = "required" if attr.default is None else repr(list(attr.default) if attr.kind == "ints"
                                                                   else attr.default)
            choices = {"mode": MODES, "auto_broadcast": RULES}.get(attr.name)
            attrs.append(f"{attr.name}: {attr.kind} = {default}" + (f" ({' | '.join(choices)})" if choices else ""))
        outputs = f" -> ({', '.join(spec.outputs)})" if len(spec.outputs) > 1 else ""
        lines.append(f"{spec.name}({inputs}){outputs}" + (f"  {'; '.join(attrs)}" if attrs else ""))
    return lines


def version_text() -> str:
    """onnx-bcast's version and the builds it runs with, each named by its distribution (onnx-weekly,
    onnxruntime-gpu...; read from package metadata, without importing onnxruntime or openvino)."""
    from onnx_bcast import __version__
    from onnx_bcast.model.installed_builds import runtime_versions

    return f"onnx-bcast {__version__} ({', '.join(runtime_versions())})"
