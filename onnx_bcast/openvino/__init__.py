"""OpenVINO reads onnx-bcast models natively: ONNX-frontend extensions for every op of the ``onnx_bcast`` domain.

Usage (``pip install onnx-bcast[openvino]``)::

    import openvino as ov, onnx_bcast.openvino
    core = ov.Core(); core.add_extension(onnx_bcast.openvino.extensions())
    model = core.read_model("model.onnx")

``onnx_bcast.openvino.read_model(path_bytes_or_proto)`` does the same and re-raises an error of ours as itself
(a ``BroadcastError`` naming the node; ``core.read_model`` wraps it in a ``RuntimeError`` that quotes it).
``import onnx_bcast`` never imports OpenVINO; importing this package without it is an ``ImportError`` naming the extra.

Mapping (OpenVINO ops of opset13): ``broadcasts`` (Broadcast/Expand every mode -> Broadcast-3 of that mode; V0 and
LikeV0 -> Broadcast-3 explicit), ``elementwise`` (the 16 ops -> OpenVINO's binary ops with ``auto_broadcast`` and
its axis), ``backprop`` (ReduceSum over the summed axes + Reshape). Read-time checks: ``checks``. OpenVINO's ONNX
frontend reads a ``[0]``-shaped constant as a "failsafe" scalar 0; ``graph.input_at`` turns it back into ``[]``.

What is known when the model is read (constants, anything that folds, e.g. ``Shape`` of a static tensor, and the
data shapes as far as declared) is validated with docs/ops.md's rules, so the cases where OpenVINO deliberately differs
are a ``BroadcastError`` when static: duplicate or unsorted explicit axes, negative target dims (OpenVINO reads -1
as dynamic, other negatives as 0), pdpd data not covering the target, a pdpd axis outside it, V0 without size-1
stretching, elementwise pdpd's trailing 1s and 0-size rules. Static 0-size and no-op broadcasts are built as
reshapes (OpenVINO's CPU plugin dies with SIGFPE or errs on several of them).

Run time: the backprop ops' preconditions are checked in the graph (``graph.checked_zero``: a ``Reshape`` named by
our message whose element count is wrong unless every condition holds, added to the summed axes): an invalid
``BroadcastBackprop`` (negative data dims, a delta that is not the forward output, explicit axes unsorted, repeated
or past delta's rank, a data dim that does not fit its axis) or ``Unbroadcast`` (negative dims, A and B that do not
fit under the rule, a delta that is not their output) fails the run with a ``RuntimeError`` quoting
"<op>(<mode>): <rule> [checked at run time]". Elsewhere, where only run-time values decide, OpenVINO applies its own
rules. Measured with openvino 2026.4.1 on the CPU plugin, one-node models read with these extensions, every dim and
shape input fed at run time, each case in its own process (``python bench/openvino_runtime.py`` prints the 37
cases):

* ``RuntimeError`` from ``infer`` with OpenVINO's message (the request stays usable), as docs/ops.md: explicit axes
  out of order or past the target's rank, and repeated (``[1, 1]``: OpenVINO's kernel computes garbage for those, so the
  mapping makes them unsorted and OpenVINO's check fails: "axes_mapping AxisVector{2, 1} not in sorted order");
  negative target dims ("Value -1 not in range [0:18446744073709551615]", also for -2); data dims that do not fit
  (numpy, pdpd) and elementwise shapes that do not (numpy, pdpd, a pdpd B dim past A's end that is not 1); every
  invalid backprop op (our check's message).
* A value where docs/ops.md errs: BroadcastV0/BroadcastLikeV0 stretch a size-1 arg dim (``[1]`` to ``[2, 3]``);
  elementwise ``none`` broadcasts as numpy ((2, 3) with (1, 3)); elementwise pdpd puts a 0-size B dim on a size-1 A
  dim into the output ((2, 1) with (0,) gives (2, 0)); integer ``Div``/``Mod`` by zero (INT_MIN).
* An error where docs/ops.md gives a value: elementwise pdpd with a size-1 B dim on a 0-size A dim ((2, 0) with (1,):
  "Argument shapes are inconsistent.").
* As docs/ops.md: 0-size broadcasts in every mode (numpy ``[3]`` to ``[0, 3]``, ``[1]`` to ``[0]``, bidirectional,
  explicit ``[0]`` to ``[2, 0]``, pdpd ``[0]`` to ``[2, 1]``: this one killed the process with SIGFPE before the
  mapping aligned pdpd itself), scalar to ``[]``, pdpd B with a trailing 1 past A's end; 8-bit arithmetic, which
  ``elementwise`` computes in int32 and wraps back (OpenVINO's 8-bit ops saturate); float32 ``Div``, marked so that
  OpenVINO keeps it a division (a saved IR loses the mark). No case crashes.

Limits: the CPU plugin compiles nothing of unknown rank ("doesn't support Broadcast operation with dynamic rank"),
so every rank rule is checked when reading. Reading needs: the dims BroadcastLikeV0 deduces its axes from (or
``initial_broadcast_axes``), the backprop ops' delta rank and shape-input lengths, and the V0 ops' list attributes
(otherwise ``NotImplementedError``; their ONNX Runtime form, inputs 1 and 2, is read where constant, and where fed
at run time the attribute is used, as the converter does). The CPU plugin computes int64 as int32 (values outside
int32 wrap, in broadcasts too; uint32, uint64 and float64 arithmetic is not exact either), and float32 in bfloat16
on CPUs that have it unless compiled with ``{"INFERENCE_PRECISION_HINT": "f32"}`` (``onnx-bcast run --runtime
openvino`` does).
"""

from __future__ import annotations

try:
    import openvino  # noqa: F401
except ImportError as _missing:
    raise ImportError("onnx_bcast.openvino needs OpenVINO, which is not installed: "
                      "pip install 'onnx-bcast[openvino]'", name="openvino") from _missing

import logging  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

from openvino.frontend.onnx import ConversionExtension  # noqa: E402

from onnx_bcast.errors import BroadcastError  # noqa: E402
from onnx_bcast.openvino import backprop, broadcasts, elementwise  # noqa: E402
from onnx_bcast.ops import OP_SPECS  # noqa: E402
from onnx_bcast.ops.common import OpSpec  # noqa: E402

DOMAIN = "onnx_bcast"
Converter = Callable[[Any, str], list]
logger = logging.getLogger("onnx_bcast.openvino")

_BY_NAME: dict[str, Converter] = {**broadcasts.CONVERTERS, **backprop.CONVERTERS}
_BY_FAMILY: dict[str, Converter] = {"elementwise": elementwise.elementwise}


def converter_for(spec: OpSpec) -> Converter | None:
    """The function that maps ``spec``'s nodes to OpenVINO, None if there is none."""
    return _BY_NAME.get(spec.name) or _BY_FAMILY.get(spec.family)


def converters() -> dict[str, Converter]:
    """Op name -> mapping, for every op of ``OP_SPECS`` (one without a mapping is logged)."""
    found: dict[str, Converter] = {}
    for spec in OP_SPECS:
        convert = converter_for(spec)
        if convert is None:
            logger.warning("no OpenVINO mapping for onnx_bcast op %s: OpenVINO cannot read it", spec.name)
        else:
            found[spec.name] = convert
    return found


def extensions() -> list[ConversionExtension]:
    """ONNX-frontend ``ConversionExtension``s for every op of the ``onnx_bcast`` domain: pass them to
    ``core.add_extension`` before ``core.read_model``, or to ``openvino.convert_model(path, extension=...)``."""
    return [ConversionExtension(name, DOMAIN, _recorded(name, convert)) for name, convert in converters().items()]


# --- our errors through read_model --------------------------------------------------------------------------------

_recent = threading.local()
_NODE = re.compile(r"ONNX node '<Node\([^)]*\): ([^>]*)>': \w+: ")


def _recorded(op: str, convert: Converter) -> Callable[[Any], list]:
    def run(ctx: Any) -> list:
        try:
            return convert(ctx, op)
        except (BroadcastError, NotImplementedError) as err:
            _recent.errors = [*getattr(_recent, "errors", [])[-15:], err]
            raise
    return run


def _node_name(text: str, message: str, path: str | None) -> str | None:
    """The node OpenVINO names in front of ``message`` in its wrapped error text. Read from a file, OpenVINO names
    a node by its first output: then the node's own name is looked up in the file (without external data)."""
    for match in _NODE.finditer(text):
        if text.startswith(message, match.end()):
            return _by_output(path, match.group(1)) if path else match.group(1) or None
    return None


def _by_output(path: str, shown: str) -> str:
    import onnx

    from onnx_bcast.model.walk import node_lists

    nodes = [n for entry in node_lists(onnx.load(path, load_external_data=False)) for n in entry.container.node
             if n.domain == DOMAIN]
    if any(n.name == shown for n in nodes):
        return shown
    return next((n.name for n in nodes if n.output and n.output[0] == shown and n.name), shown)


def read_model(model: str | os.PathLike | bytes | Any, core: Any = None) -> Any:
    """``core.read_model(model)`` (an ``openvino.Model``) with our ops read by ``extensions()``.

    ``model``: a path, the serialized bytes or an ``onnx.ModelProto``. Without ``core`` a new ``openvino.Core``
    with ``extensions()`` is used; a given ``core`` must have them added. OpenVINO wraps an error raised while
    converting a node into a ``RuntimeError``; ours is re-raised as itself (a ``BroadcastError`` for an invalid
    node, naming it; an unnamed node by its first output, as OpenVINO does), chained to OpenVINO's.
    """
    if core is None:
        core = openvino.Core()
        core.add_extension(extensions())
    if hasattr(model, "SerializeToString"):
        from onnx_bcast.model import external_data

        if external_data.folder_of(model) is not None and external_data.has_external_data(model):
            with external_data.graph_file(model) as graph:  # OpenVINO finds the data beside a file only
                return read_model(graph, core)
        model = model.SerializeToString()
    path = None if isinstance(model, bytes) else os.fspath(model)
    _recent.errors = []
    try:
        return core.read_model(model) if path is None else core.read_model(path)
    except RuntimeError as wrapped:
        text = str(wrapped)
        for err in reversed(_recent.errors):
            if str(err) in text:
                node = _node_name(text, str(err), path)
                if isinstance(err, BroadcastError):
                    raise err.with_node(node) from wrapped
                raise NotImplementedError(f"node '{node}': {err}" if node else str(err)) from wrapped
        raise
    finally:
        _recent.errors = []


__all__ = ["DOMAIN", "converter_for", "converters", "extensions", "read_model"]
