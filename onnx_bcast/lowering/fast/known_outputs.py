"""Which nodes of ours can skip onnx's Python callback during shape inference, and with what output type.

onnx's shape inference calls our schemas' Python inference function once per node of ours, about 20 µs a node
across the C++/Python border. Here a node of the main graph gets its output type from the same function, through
a stand-in for onnx's ``InferenceContext``, from the types its inputs will have:

- *known*: graph inputs, initializers, outputs of nodes decided here (exact, as onnx would start with them);
- *assumed*: a value a node defines, assumed to have the type that the same input of the previous node of ours
  with the same attributes and constants had (layers repeat). ``inferred_run`` checks every assumption against
  what onnx then inferred, and infers again without any when one fails.

A node stays visible (its callback runs as before) when anything could make the two differ: an output onnx would
merge with a declared type, a shape with unnamed unknown dims (onnx names them), a rule error (raised by the
callback, in onnx's order), a use before definition in node order, a constant read from a node's output. Nothing
is hidden in a model with subgraphs (they read outer values) or with a value defined twice (the caller's part).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from onnx import AttributeProto, ModelProto, NodeProto, TensorProto, TypeProto, helper

from onnx_bcast.errors import BroadcastError
from onnx_bcast.lowering.declaring import Declared
from onnx_bcast.onnx_defs.constants import raw_int_key
from onnx_bcast.onnx_defs.inference import Inference, InferenceContext, inference_function
from onnx_bcast.ops import SPEC_BY_NAME
from onnx_bcast.ops.common import OpSpec

_INFER: dict[str, Inference] = {spec.name: inference_function(spec) for spec in SPEC_BY_NAME.values()}
_READS_DATA = {spec.name: spec.value_inputs for spec in SPEC_BY_NAME.values()}
_UNINFERRED = TypeProto()  # a memo entry not made yet (None is "stays visible")


class _Context(InferenceContext):
    """What our inference functions ask of onnx's InferenceContext (the ``InferenceContext`` protocol), answered
    from Python."""

    def __init__(self, node: NodeProto, inputs: list[str], types: list[TypeProto | None],
                 data: list[TensorProto | None]) -> None:
        self.node = node
        self.attributes = {a.name: a for a in node.attribute}  # onnx too keeps the last of a repeated name
        self.inputs, self.types, self.data = inputs, types, data
        self.outputs: dict[int, TypeProto] = {}  # by output index, as the callback sets them

    def get_attribute(self, name: str) -> AttributeProto | None:
        return self.attributes.get(name)

    def get_num_inputs(self) -> int:
        return len(self.inputs)

    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] != ""

    def get_input_type(self, i: int) -> TypeProto | None:
        return self.types[i]

    def get_input_data(self, i: int) -> TensorProto | None:
        return self.data[i]

    def get_num_outputs(self) -> int:
        return len(self.node.output)

    def set_output_type(self, i: int, type_proto: TypeProto) -> bool:
        self.outputs[i] = type_proto
        return True

    def get_display_name(self) -> str:
        return f"node {self.node.op_type} ({self.node.name})"


@dataclass
class Decision:
    """The nodes to hide with their output types, and the types assumed for values that nodes define."""

    hidden: list[tuple[int, str, TypeProto]] = field(default_factory=list)  # (index in the graph, output, type)
    assumed: dict[str, bytes] = field(default_factory=dict)  # value -> its type's bytes
    # hidden nodes whose static facts (every input's shape, type and read value, the output's shape) are a function
    # of their key (attributes, each read input's constant data, the other inputs' types): equal keys, equal facts
    signed: list[tuple[Declared, tuple]] = field(default_factory=list)
    initializers: dict[str, TensorProto] = field(default_factory=dict)  # the main graph's, by name


class _Known:
    """Types and constant data of the main graph's values before inference, as onnx's inference starts with them."""

    def __init__(self, model: ModelProto, produced: set[str]) -> None:
        graph = model.graph
        declared = {v.name for v in graph.value_info} | {v.name for v in graph.output}
        initializers = {t.name: t for t in graph.initializer}
        sparse = {t.values.name for t in graph.sparse_initializer}
        self.valid = len(initializers) == len(graph.initializer)
        self.data = initializers
        self.types: dict[str, TypeProto] = {}
        inputs = {v.name for v in graph.input}
        for v in graph.input:
            if v.HasField("type") and v.name not in declared and v.name not in sparse:
                self.types[v.name] = v.type
        for name in produced.intersection(self.types):  # a node redefines it: onnx merges the types
            del self.types[name]
        # an initializer's type is made when asked for (few are: shape-like inputs need none)
        self.typed_initializers = model.ir_version >= 4
        self.untyped = inputs | declared | sparse | produced
        self._initializer_types: dict[tuple[int, tuple[int, ...]], TypeProto] = {}
        self.defined = produced
        self.assume = True
        self.taken = declared | inputs | set(initializers) | sparse  # an output named so would be merged
        self.shadowed = inputs.intersection(initializers)  # its facts: the initializer's dims, the input's type
        self.memo: dict[tuple, TypeProto | None] = {}
        self.last: dict[tuple, list[TypeProto | None]] = {}  # (attributes, constants) -> the last input types
        self._bytes: dict[int, tuple[TypeProto, bytes]] = {}
        self.data_keys: dict[str, tuple | bytes] = {}  # an initializer's ``_data_key``, once

    def type_of(self, name: str) -> TypeProto | None:
        """The type onnx starts with for ``name``: a graph input's, an initializer's, a hidden output's."""
        type_proto = self.types.get(name)
        if type_proto is None and self.typed_initializers and name in self.data and name not in self.untyped:
            tensor = self.data[name]
            key = (tensor.data_type, tuple(tensor.dims))
            if key not in self._initializer_types:
                self._initializer_types[key] = helper.make_tensor_type_proto(*key)
            type_proto = self.types[name] = self._initializer_types[key]
        return type_proto

    def type_key(self, type_proto: TypeProto) -> bytes:
        """The type's bytes (kept per object: the objects here live as long as this)."""
        entry = self._bytes.get(id(type_proto))
        if entry is None or entry[0] is not type_proto:
            entry = self._bytes[id(type_proto)] = (type_proto, type_proto.SerializeToString())
        return entry[1]


def _data_key(tensor: TensorProto) -> tuple | bytes:
    """What our inference reads of a constant: an int64/int32 one's raw values and dims (not its name), else all."""
    key = raw_int_key(tensor)
    return tensor.SerializeToString() if key is None else key


def _output_type(declared: Declared, known: _Known, decision: Decision) -> TypeProto | None:
    """What our callback would set as the node's output type (input types known or assumed), or None where the
    node must stay visible."""
    output, inputs = declared.output, declared.inputs  # padded with "": our functions drop absent trailing inputs
    if output in known.taken or declared.attribute_key is None:
        return None
    reads_data = _READS_DATA[declared.op]  # only these inputs' data is read, and only the others' types
    data: list[TensorProto | None] = []
    keys: list = [declared.attribute_key]
    signed = not known.shadowed or known.shadowed.isdisjoint(inputs)  # see ``Decision.signed``
    data_of, data_keys = known.data.get, known.data_keys
    for name, reads in zip(inputs, reads_data, strict=True):
        if reads and name:
            tensor = data_of(name)
            if tensor is None:
                if name in known.defined:
                    return None  # maybe a Constant node's output, whose value onnx passes on: leave it to onnx
                signed = False  # a graph input: the key has neither its type nor its shape
                keys.append(False)
            else:
                key = data_keys.get(name)
                if key is None:
                    key = data_keys[name] = _data_key(tensor)
                keys.append(key)
            data.append(tensor)
        else:
            keys.append(name == "")
            data.append(None)
    shape_key = tuple(keys)
    types: list[TypeProto | None] = []
    assumed: dict[str, bytes] = {}
    for i, (name, reads) in enumerate(zip(inputs, reads_data, strict=True)):
        if not name or reads:
            types.append(None)
            keys.append(None)
            continue
        type_proto = known.type_of(name)
        if type_proto is None:
            previous = known.last.get(shape_key) if known.assume and name in known.defined else None
            type_proto = previous[i] if previous is not None else None
            if type_proto is None:
                return None
            assumed[name] = known.type_key(type_proto)
            if decision.assumed.get(name, assumed[name]) != assumed[name]:
                return None  # assumed otherwise before
        types.append(type_proto)
        keys.append(known.type_key(type_proto))
    known.last[shape_key] = types
    memo_key = tuple(keys)  # the shape key, then each input's type
    result = known.memo.get(memo_key, _UNINFERRED)
    if result is _UNINFERRED:
        result = known.memo[memo_key] = _infer(declared.spec, declared.node, inputs, types, data)
    if result is not None:
        if assumed:
            decision.assumed.update(assumed)
        if signed:
            decision.signed.append((declared, memo_key))
    return result


def _infer(spec: OpSpec, node: NodeProto, inputs: list[str], types: list[TypeProto | None],
           data: list[TensorProto | None]) -> TypeProto | None:
    context = _Context(node, inputs, types, data)
    try:
        _INFER[spec.name](context)
    except BroadcastError:
        return None  # the callback raises it, in onnx's order
    except Exception:  # noqa: BLE001 - whatever it is, the callback meets it again in onnx
        return None
    if list(context.outputs) != [0] or len(node.output) != 1:
        return None  # a node is hidden with its one output's type: one of several outputs stays visible
    output = context.outputs[0]
    return output if _materialised(output) else None


def _materialised(type_proto: TypeProto) -> bool:
    """onnx gives an unknown dim of an inferred shape a fresh name; a value_info's keeps none: avoid those."""
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return True
    return all(d.HasField("dim_value") or d.dim_param for d in type_proto.tensor_type.shape.dim)


def decide(model: ModelProto, ours: list[tuple[int, Declared]], inputs: list[list[str]], produced: set[str],
           assume: bool = True) -> Decision:
    """The main graph's nodes of ours to hide (``ours``: (index, declared node); ``inputs``: each node's inputs;
    ``produced``: every value a node defines); ``assume=False``: known input types only."""
    decision = Decision()
    known = _Known(model, produced)
    known.assume = assume
    if not known.valid:
        return decision
    decision.initializers = known.data
    outputs = {declared.output for _, declared in ours}
    first_read: dict[str, int] = {}
    disjoint = outputs.isdisjoint
    for index, names in enumerate(inputs):
        if disjoint(names):
            continue
        for name in names:
            if name in outputs and name not in first_read:
                first_read[name] = index
    for index, declared in ours:
        output = declared.output
        if first_read.get(output, index + 1) <= index:
            continue  # read before it is defined: onnx knows nothing of it there
        type_proto = _output_type(declared, known, decision)
        if type_proto is not None:
            decision.hidden.append((index, output, type_proto))
            known.types[output] = type_proto
            known.taken.add(output)
    return decision
