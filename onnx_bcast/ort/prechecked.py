"""The native backend's fast path: where our nodes read only graph inputs and initializers, their shape rules run
in Python on each run's inputs, and inputs they prove valid run the unguarded standard form.

The guarded form checks our rules inside the graph, at a dispatch per check node: most of a tiny model's run. Here
the rules (each op's ``static_shape``, the same code that proves nodes valid while converting) run on the fed
shapes and shape-valued inputs instead, once per input signature (then a dict lookup), and the unguarded form
(``converters.BARE``) computes the outputs. Anything else runs the guarded session exactly as without this path:
inputs a rule refuses or cannot decide, inputs that break the model's declared dims (``dim_param``s that differ,
which ONNX Runtime does not check, and which the unguarded form's facts rely on), feeds that are not numpy arrays,
and any error of the unguarded session. So a value comes from here only where the guarded form gives the same one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper

from onnx_bcast.converters import BARE
from onnx_bcast.lowering.declaring import DOMAIN, Declared, declare
from onnx_bcast.lowering.engine import lower
from onnx_bcast.model.ort_import import onnxruntime
from onnx_bcast.model.tensor_walk import external_tensors
from onnx_bcast.model.walk import node_lists
from onnx_bcast.ops.common import OpSpec

ort = onnxruntime()
logger = logging.getLogger("onnx_bcast.ort.prechecked")

#: a larger model is not held twice (its per-run check cost is small beside its own work)
MAX_MODEL_BYTES = 16 * 1024 * 1024
_MAX_SIGNATURES = 1024  # input signatures proven valid, kept per session


@dataclass(frozen=True)
class _Operand:
    """One input of a node of ours: a graph input (by position), or an initializer's shape and, where the rule reads
    it as a value, its value."""

    feed: int | None
    shape: tuple[int, ...] | None = None
    value: np.ndarray | None = None


@dataclass(frozen=True)
class _Rule:
    """A node of ours: its spec's shape rule, attributes, operands, and which operands are read as values."""

    spec: OpSpec
    attrs: dict[str, Any]
    operands: tuple[_Operand | None, ...]  # None: an absent optional input
    values_read: tuple[bool, ...]


class Prechecked:
    """The unguarded session of a model whose nodes of ours read graph inputs and initializers only."""

    def __init__(self, session: Any, inputs: Sequence[tuple[str, np.dtype, tuple[int | str | None, ...] | None]],
                 rules: Sequence[_Rule]) -> None:
        self._session = session
        self._names = tuple(name for name, _, _ in inputs)
        self._dtypes = tuple(dtype for _, dtype, _ in inputs)
        self._dims = tuple(dims for _, _, dims in inputs)
        self._rules = tuple(rules)
        self._read = tuple(sorted({o.feed for r in rules for o, read in zip(r.operands, r.values_read, strict=True)
                                   if read and o is not None and o.feed is not None}))
        self._valid: set[tuple] = set()

    @classmethod
    def build(cls, model: ModelProto, guarded: ModelProto, options: Any, providers: Sequence[Any], **kwargs: Any
              ) -> Prechecked | None:
        """The fast path of ``model`` (our nodes' source form), or None where it does not apply or where the
        unguarded form has no fewer nodes than ``guarded`` (every check proven while converting)."""
        if not _applies(model, options, providers):
            return None
        rules = _rules(model)
        if rules is None:
            return None
        initializers = {t.name: t for t in model.graph.initializer}
        inputs = []
        for value in model.graph.input:
            if value.name in initializers:
                continue
            tensor = value.type.tensor_type if value.type.HasField("tensor_type") else None
            if tensor is None or not tensor.elem_type:
                return None
            try:
                dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
            except (KeyError, TypeError):
                return None
            dims = None if not tensor.HasField("shape") else tuple(
                d.dim_value if d.HasField("dim_value") else d.dim_param or None for d in tensor.shape.dim)
            inputs.append((value.name, dtype, dims))
        positions = {name: k for k, (name, _, _) in enumerate(inputs)}
        placed = [_placed(declared, positions, initializers) for declared in rules]
        if any(rule is None for rule in placed):
            return None
        try:
            bare = lower(model, BARE).model
            if _node_count(bare) >= _node_count(guarded):
                return None
            session = ort.InferenceSession(bare.SerializeToString(), sess_options=options, providers=list(providers),
                                           **kwargs)
        except Exception as err:  # noqa: BLE001 - the guarded session runs everything, as without this path
            logger.debug("no prechecked fast path: %s", err)
            return None
        return cls(session, inputs, placed)

    def run(self, output_names: list[str] | None, feed: Any, run_options: Any) -> list[Any] | None:
        """The outputs where the rules prove ``feed`` valid and the unguarded session runs; else None."""
        key = self._signature(feed)
        if key is None:
            return None
        if key not in self._valid:
            if not self._proven(feed):
                return None
            if len(self._valid) >= _MAX_SIGNATURES:
                self._valid.clear()
            self._valid.add(key)
        try:
            return self._session.run(output_names, feed, run_options)
        except Exception as err:  # noqa: BLE001 - the guarded session runs it and raises what it raises
            logger.debug("the unguarded session failed; the guarded one runs: %s", err)
            return None

    def _signature(self, feed: Any) -> tuple | None:
        """The feed's shapes and dtypes, with the bytes of the inputs read as values; None for any other feed."""
        if type(feed) is not dict or len(feed) != len(self._names):
            return None
        arrays = []
        for name in self._names:
            array = feed.get(name)
            if type(array) is not np.ndarray:
                return None
            arrays.append(array)
        return (*[(a.shape, a.dtype) for a in arrays], *[arrays[k].tobytes() for k in self._read])

    def _proven(self, feed: dict[str, np.ndarray]) -> bool:
        arrays = [feed[name] for name in self._names]
        named: dict[str, int] = {}
        for array, dtype, dims in zip(arrays, self._dtypes, self._dims, strict=True):
            if array.dtype != dtype:
                return False
            if dims is None:
                continue
            if array.ndim != len(dims):
                return False
            for given, declared in zip(array.shape, dims, strict=True):
                if isinstance(declared, int) and declared != given:
                    return False
                if isinstance(declared, str) and named.setdefault(declared, given) != given:
                    return False
        return all(_holds(rule, arrays) for rule in self._rules)


def _node_count(model: ModelProto) -> int:
    return sum(len(entry.container.node) for entry in node_lists(model))


def _applies(model: ModelProto, options: Any, providers: Sequence[Any]) -> bool:
    names = [p[0] if isinstance(p, tuple) else p for p in providers]
    if any(name != "CPUExecutionProvider" for name in names):
        return False  # another provider takes the guarded model as it is
    if options is not None and (options.optimized_model_filepath or options.enable_profiling):
        return False  # one file or profile per session, as the user asked
    if external_tensors(model) or model.ByteSize() > MAX_MODEL_BYTES:
        return False
    lists = list(node_lists(model))
    return all(node.domain != DOMAIN for entry in lists[1:] for node in entry.container.node)


def _rules(model: ModelProto) -> list[Declared] | None:
    """Each node of ours in the main graph, declared (inputs padded); None if one cannot be declared."""
    found = []
    for index, node in enumerate(model.graph.node):
        if node.domain != DOMAIN:
            continue
        try:
            found.append(declare(node, index))
        except Exception:  # noqa: BLE001 - the guarded session says what is wrong with it
            return None
    return found


def _placed(declared: Declared, positions: dict[str, int], initializers: dict[str, TensorProto]) -> _Rule | None:
    """A node's operands as graph inputs or initializers; None where one is made by a node."""
    read = tuple(formal.type_param == "T_SHAPE" for formal in declared.spec.inputs)
    operands: list[_Operand | None] = []
    for name, value_read in zip(declared.inputs, read, strict=True):
        if not name:
            operands.append(None)
        elif name in positions:
            operands.append(_Operand(positions[name]))
        elif name in initializers:
            tensor = initializers[name]
            operands.append(_Operand(None, tuple(int(d) for d in tensor.dims),
                                     numpy_helper.to_array(tensor) if value_read else None))
        else:
            return None
    return _Rule(declared.spec, declared.attrs, tuple(operands), read)


def _holds(rule: _Rule, arrays: list[np.ndarray]) -> bool:
    """Whether the node's shape rule proves it valid on these inputs (a refusal or an unknown is not proof)."""
    shapes: list[tuple[int, ...] | None] = []
    values: list[np.ndarray | None] = []
    for operand, read in zip(rule.operands, rule.values_read, strict=True):
        if operand is None:
            shape, value = None, None
        elif operand.feed is None:
            shape, value = operand.shape, operand.value
        else:
            array = arrays[operand.feed]
            shape, value = array.shape, array if read else None
        if value is not None and (value.ndim != 1 or value.dtype.kind not in "iu"):
            return False
        shapes.append(shape)
        values.append(value)
    while shapes and shapes[-1] is None and values[-1] is None:  # the rules take inputs up to the last present
        shapes.pop()
        values.pop()
    try:
        return rule.spec.static_shape(shapes, values, rule.attrs) is not None
    except Exception:  # noqa: BLE001 - BroadcastError and any other: the guarded session decides
        return False
