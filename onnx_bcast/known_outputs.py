"""Shape inference without a Python callback for the nodes of ours whose inputs are known before it starts.

onnx's shape inference calls our schemas' Python inference function once per node of ours, about 20 µs a node
across the C++/Python border. A node of the main graph whose inputs are all known before inference starts (graph
inputs, initializers, outputs of such nodes) gets its output type here instead, from the same function through
a stand-in for onnx's ``InferenceContext``; the node is hidden from onnx (a domain without schemas) and its output
type is given as ``value_info``. onnx starts from that value_info, so every later node sees what our callback would
have set, and infers what it would have inferred.

A node stays visible (its callback runs as before) when anything could make the two differ: an input known only
from another node, an output onnx would merge with a declared type, a shape with unnamed unknown dims (onnx names
them), a rule error (raised by the callback, in onnx's order), or a use before definition in node order. Nothing is
hidden in a model with subgraphs (they read outer values) or with a value defined twice.
"""

from __future__ import annotations

from onnx import AttributeProto, ModelProto, NodeProto, TensorProto, TypeProto, helper

from onnx_bcast import schemas
from onnx_bcast.binding import Declared
from onnx_bcast.errors import BroadcastError
from onnx_bcast.ops import SPEC_BY_NAME
from onnx_bcast.ops.common import OpSpec

HIDDEN_DOMAIN = "onnx_bcast.inferred_before_inference"  # no schema has it: onnx skips these nodes
_INFER = {spec.name: schemas.inference_function(spec) for spec in SPEC_BY_NAME.values()}
_READS_DATA = {spec.name: spec.value_inputs for spec in SPEC_BY_NAME.values()}


class _Context:
    """What our inference functions ask of onnx's InferenceContext, answered from Python."""

    def __init__(self, node: NodeProto, types: list[TypeProto | None], data: list[TensorProto | None]) -> None:
        self.node = node
        self.attributes = {a.name: a for a in node.attribute}  # onnx too keeps the last of a repeated name
        self.types = types
        self.data = data
        self.output: TypeProto | None = None

    def get_attribute(self, name: str) -> AttributeProto | None:
        return self.attributes.get(name)

    def get_num_inputs(self) -> int:
        return len(self.types)

    def has_input(self, i: int) -> bool:
        return i < len(self.types) and self.node.input[i] != ""

    def get_input_type(self, i: int) -> TypeProto | None:
        return self.types[i]

    def get_input_data(self, i: int) -> TensorProto | None:
        return self.data[i]

    def get_num_outputs(self) -> int:
        return len(self.node.output)

    def set_output_type(self, i: int, type_proto: TypeProto) -> bool:
        self.output = type_proto
        return True

    def get_display_name(self) -> str:
        return f"node {self.node.op_type} ({self.node.name})"


def _materialised(type_proto: TypeProto) -> bool:
    """onnx gives an unknown dim of an inferred shape a fresh name; a value_info's keeps none: avoid those."""
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return True
    return all(d.HasField("dim_value") or d.dim_param for d in type_proto.tensor_type.shape.dim)


class _Known:
    """Types and constant data of the main graph's names before inference, as onnx's inference starts with them."""

    def __init__(self, model: ModelProto, produced: set[str]) -> None:
        graph = model.graph
        declared = {v.name for v in graph.value_info} | {v.name for v in graph.output}
        initializers = {t.name: t for t in graph.initializer}
        sparse = {t.values.name for t in graph.sparse_initializer}
        self.valid = len(initializers) == len(graph.initializer)
        self.data = initializers
        self.types: dict[str, TypeProto] = {}
        inputs = {v.name for v in graph.input}
        for name, tensor in initializers.items():
            if name not in inputs and name not in declared and name not in sparse and model.ir_version >= 4:
                self.types[name] = _tensor_type(tensor.data_type, tuple(tensor.dims))
        for v in graph.input:
            if v.HasField("type") and v.name not in declared and v.name not in sparse:
                self.types[v.name] = v.type
        for name in produced.intersection(self.types):  # a node redefines it: onnx merges the types
            del self.types[name]
        self.taken = declared | inputs | set(initializers) | sparse  # an output named so would be merged
        self.memo: dict[tuple, TypeProto | None] = {}
        self._type_keys: dict[int, tuple[TypeProto, bytes]] = {}

    def type_key(self, type_proto: TypeProto) -> bytes:
        """The type's bytes (kept per object: the objects here live as long as this)."""
        entry = self._type_keys.get(id(type_proto))
        if entry is None or entry[0] is not type_proto:
            entry = self._type_keys[id(type_proto)] = (type_proto, type_proto.SerializeToString())
        return entry[1]


_TYPES: dict[tuple[int, tuple[int, ...]], TypeProto] = {}


def _tensor_type(elem: int, dims: tuple[int, ...]) -> TypeProto:
    key = (elem, dims)
    if key not in _TYPES:
        _TYPES[key] = helper.make_tensor_type_proto(elem, dims)
    return _TYPES[key]


def _output_type(declared: Declared, known: _Known) -> TypeProto | None:
    """What our callback would set as the node's output type, or None where the node must stay visible."""
    node, spec = declared.node, declared.spec
    if declared.output in known.taken or declared.attribute_key is None:
        return None
    reads_data = _READS_DATA[spec.name]  # the data of no other input is read
    inputs = list(node.input)
    if len(inputs) > len(reads_data):
        return None
    key = list(declared.attribute_key)  # declared: one output, known op
    types, data = [], []
    for name, reads in zip(inputs, reads_data, strict=False):
        if not name:
            types.append(None)
            data.append(None)
            key.append(None)
            continue
        type_proto = known.types.get(name)
        if type_proto is None:
            return None
        tensor = known.data.get(name) if reads else None
        types.append(type_proto)
        data.append(tensor)
        key.append(known.type_key(type_proto))
        key.append(None if tensor is None else _data_key(tensor))
    memo_key = tuple(key)  # everything our inference function reads of the node
    if memo_key not in known.memo:
        known.memo[memo_key] = _infer(spec, node, types, data)
    return known.memo[memo_key]


_INT_TYPES = (TensorProto.INT64, TensorProto.INT32)


def _data_key(tensor: TensorProto) -> tuple | bytes:
    """What our inference reads of a constant: an int64/int32 one's raw values and dims (not its name), else all."""
    raw = tensor.raw_data
    if raw and tensor.data_type in _INT_TYPES and not tensor.external_data and not tensor.data_location:
        return (tensor.data_type, tuple(tensor.dims), raw)
    return tensor.SerializeToString()


def _infer(spec: OpSpec, node: NodeProto, types: list[TypeProto | None], data: list[TensorProto | None]
           ) -> TypeProto | None:
    context = _Context(node, types, data)
    try:
        _INFER[spec.name](context)
    except BroadcastError:
        return None  # the callback raises it, in onnx's order
    except Exception:  # noqa: BLE001 - whatever it is, the callback meets it again in onnx
        return None
    output = context.output
    return output if output is not None and _materialised(output) else None


def serialized_for_inference(model: ModelProto, ours: list[tuple[int, Declared]] | None = None,
                             inputs: list[tuple[str, ...]] | None = None, produced: set[str] | None = None) -> bytes:
    """``model`` serialized for ``onnx.shape_inference.infer_shapes``, with the nodes of ours whose output type is
    known before inference hidden (their types as value_info): the same inference, fewer Python callbacks.

    ``ours``: the main graph's nodes of ours (index, declared node); ``inputs``: each of its nodes' inputs;
    ``produced``: every value a node defines. The caller says so only for a model without subgraphs in which no
    value is defined twice; without them nothing is hidden.
    """
    if not ours or inputs is None or produced is None:
        return model.SerializeToString()
    try:
        hidden = _hideable(model, ours, inputs, produced)
    except Exception:  # noqa: BLE001 - an optimisation only: onnx infers everything itself then
        hidden = []
    if not hidden:
        return model.SerializeToString()
    for node, _ in hidden:
        node.domain = HIDDEN_DOMAIN
    try:
        body = model.SerializeToString()
    finally:
        for node, _ in hidden:
            node.domain = schemas.DOMAIN
    return body + _extra(hidden)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (``tag`` is ``number << 3 | 2``)."""
    return bytes((tag,)) + _varint(len(payload)) + payload


_VALUE_INFO_FIELD = 13 << 3 | 2  # GraphProto.value_info
_GRAPH_FIELD = 7 << 3 | 2  # ModelProto.graph


def _extra(hidden: list[tuple[NodeProto, TypeProto]]) -> bytes:
    """A serialized ModelProto with the hidden outputs' value_info and the hidden domain's import.

    Appended to a serialized model, protobuf merges it in: a repeated field's entries are added to the model's.
    Written byte by byte (ValueInfoProto: name = 1, type = 2): building 20,000 messages in Python costs more.
    """
    suffixes: dict[int, bytes] = {}
    entries = []
    for node, type_proto in hidden:
        suffix = suffixes.get(id(type_proto))
        if suffix is None:
            suffix = suffixes[id(type_proto)] = _field(2 << 3 | 2, type_proto.SerializeToString())
        entries.append(_field(_VALUE_INFO_FIELD, _field(1 << 3 | 2, node.output[0].encode()) + suffix))
    opset = ModelProto(opset_import=[helper.make_opsetid(HIDDEN_DOMAIN, 1)]).SerializeToString()
    return _field(_GRAPH_FIELD, b"".join(entries)) + opset


def _hideable(model: ModelProto, ours: list[tuple[int, Declared]], inputs: list[tuple[str, ...]],
              produced: set[str]) -> list[tuple[NodeProto, TypeProto]]:
    """The nodes of ours to hide, with their output types (see the module doc for the conditions)."""
    known = _Known(model, produced)
    if not known.valid:
        return []
    outputs = {declared.output for _, declared in ours}
    first_read: dict[str, int] = {}
    for index, names in enumerate(inputs):
        for name in names:
            if name in outputs and name not in first_read:
                first_read[name] = index
    hidden: list[tuple[NodeProto, TypeProto]] = []
    for index, declared in ours:
        output = declared.output
        if first_read.get(output, index + 1) <= index:
            continue  # read before it is defined: onnx knows nothing of it there
        type_proto = _output_type(declared, known)
        if type_proto is not None:
            hidden.append((declared.node, type_proto))
            known.types[output] = type_proto
            known.taken.add(output)
    return hidden
