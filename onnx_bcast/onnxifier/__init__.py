"""OpenVINO IR (``.xml``) to ONNX through onnxifier, with OpenVINO's broadcasts and binary ops as onnx_bcast ops.

onnxifier (PyPI ``onnxifier``, ``pip install "onnx-bcast[onnxifier]"``) reads the IR and writes standard ONNX, one
pass per op type. ``ir_to_onnx`` replaces its passes for ``Broadcast`` (v1, v3; every mode) and the binary ops with
``auto_broadcast`` (none/numpy/pdpd and the pdpd axis) by onnx_bcast nodes, which ``onnx_bcast.convert`` lowers to
standard ONNX inside onnxifier's frontend (``keep_ops=True`` keeps them, for ``onnx_bcast.InferenceSession`` and
OpenVINO with ``onnx_bcast.openvino.extensions()``). Binary ops under numpy broadcasting whose ONNX op means the
same stay the plain ONNX op. Where onnxifier's own passes are used is ``internals``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import onnx

from onnx_bcast.convert import convert
from onnx_bcast.onnxifier.mapping import DOMAIN, PYTHONDIV

log = logging.getLogger(__name__)

__all__ = ["ir_to_onnx", "PYTHONDIV", "OnnxifierMissing", "IRNotConvertible"]


class OnnxifierMissing(ImportError):
    """onnxifier is not installed (or not a version this module supports)."""


def _internals():  # noqa: ANN202 - the module, imported on first use
    try:
        from onnx_bcast.onnxifier import internals
    except ImportError as err:
        raise OnnxifierMissing(f"reading OpenVINO IR needs onnxifier ({err}); install it with: pip install "
                               "'onnx-bcast[onnxifier]'") from None
    return internals


def ir_to_onnx(xml: str | os.PathLike, *, keep_ops: bool = False, guards: bool = True,
               pythondiv: str = "cpu", opset: int | None = None, optimize: bool = True) -> onnx.ModelProto:
    """The IR at ``xml`` (its weights in the ``.bin`` beside it) as an ONNX model with the IR's input and output
    names, element types and order; ``IRNotConvertible`` (one line per IR op) where it cannot be written valid.

    ``keep_ops``: keep our nodes (domain ``onnx_bcast``) instead of lowering them; ``guards``: the converted model
    checks at run time what is not proven statically (``convert``'s guards); ``pythondiv``: what integer
    ``Divide m_pythondiv=true`` means, ``"cpu"`` (OpenVINO's CPU plugin, the default: truncation, which its ONNX,
    Paddle and JAX frontends mean by it; floor under pdpd broadcasting) or ``"reference"`` (its reference kernels:
    floor); a division or product by ``Power(2, s)`` (ONNX ``BitShift``) is ONNX's shift either way.
    ``optimize``: run onnxifier's default passes after its frontend, as ``onnxifier.convert`` does, but for
    ``half_to_float`` (float16 stays float16). Input files are only read.
    """
    path = Path(xml)
    if not path.is_file():
        raise FileNotFoundError(f"no such IR file: {path}")
    if not path.with_suffix(".bin").is_file():
        raise FileNotFoundError(f"the IR's weights {path.with_suffix('.bin')} are missing (onnxifier reads them beside "
                                "the .xml)")
    if pythondiv not in PYTHONDIV:
        raise ValueError(f"pythondiv must be one of {', '.join(PYTHONDIV)}, got {pythondiv!r}")
    internals = _internals()
    import openvino as ov

    from onnx_bcast.model.walk import all_graphs
    from onnx_bcast.onnxifier.chatter import onnxifier_warnings_logged
    from onnx_bcast.onnxifier.interface import interface_of, match_interface
    from onnx_bcast.onnxifier.owned import control_flow
    from onnx_bcast.onnxifier.unread_outputs import drop_unread_optional_outputs
    from onnx_bcast.onnxifier.validate import IRNotConvertible, validate

    def lower(model: onnx.ModelProto) -> onnx.ModelProto:
        return model if keep_ops else convert(model, opset=opset, guards=guards)

    def body_to_onnx(body: Path) -> onnx.ModelProto:  # an If's body, saved as its own IR
        return ir_to_onnx(body, keep_ops=keep_ops, guards=guards, pythondiv=pythondiv, opset=opset, optimize=optimize)

    lines = internals.unreadable(str(path))
    if lines:
        raise IRNotConvertible(path, lines)
    ov_model = ov.Core().read_model(str(path))  # its weights are mapped, not read
    branches = control_flow.prepare(ov_model, body_to_onnx)
    try:
        domains = [control_flow.PLACEHOLDER]  # onnxifier's passes see If as our placeholder node
        with internals.installed({"pythondiv": pythondiv, control_flow.BRANCHES: branches, "domains": domains},
                                 lower), onnxifier_warnings_logged():
            model = internals.read_ir(str(path), optimize=optimize and not keep_ops,
                                      exclude=control_flow.UNSAFE_PASSES if branches else (), domains=domains)
    except internals.NotExpressible as err:
        raise IRNotConvertible(path, err.lines) from None
    control_flow.finish(model, branches)
    drop_unread_optional_outputs(model)
    if any(node.domain == DOMAIN for graph in all_graphs(model) for node in graph.node) and not any(
            o.domain == DOMAIN for o in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid(DOMAIN, 1))  # onnxifier's frontend deleted it
    problems = match_interface(model, interface_of(ov_model))
    problems = problems or validate(model, path, keep_ops=keep_ops)
    if problems:
        raise IRNotConvertible(path, problems)
    log.info("%s: %d nodes (onnxifier %s)", path.name, len(model.graph.node), internals.VERSION)
    return model


def __getattr__(name: str) -> object:
    if name == "IRNotConvertible":  # without importing the checks at package import
        from onnx_bcast.onnxifier.validate import IRNotConvertible
        return IRNotConvertible
    raise AttributeError(name)
