"""LSTM/GRU/RNN Sequence-5 and Cell as ONNX's LSTM/GRU/RNN: gate order, bias layout, batch-first tensors converted.

OpenVINO's sequences take ``X [batch, seq, input]``, states ``[batch, dirs, hidden]``, ``W [dirs, gates*hidden,
input]``, ``R``, one bias ``B [dirs, gates*hidden]`` (GRU with linear_before_reset: four blocks) and give ``Y [batch,
dirs, seq, hidden]``; LSTM gates in the order f, i, c, o. ONNX's ops (layout 0, the one ONNX Runtime runs) take
``X [seq, batch, input]``, states ``[dirs, batch, hidden]``, two biases ``[dirs, 2*gates*hidden]``, give ``Y [seq, dirs,
batch, hidden]``, and order LSTM gates i, o, f, c. Cells are sequences of length one without the dirs axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import NodeProto, TensorProto, helper

from onnx_bcast.onnxifier.owned.node import Builder, IrNode


@dataclass(frozen=True)
class Kind:
    onnx_op: str
    gates: int
    states: int  # 2 for LSTM (h, c), else 1
    activations: int  # per direction
    #: ONNX gate block i comes from OpenVINO's block order[i]
    order: tuple[int, ...]


KINDS = {"LSTM": Kind("LSTM", 4, 2, 3, (1, 3, 0, 2)), "GRU": Kind("GRU", 3, 1, 2, (0, 1, 2)),
         "RNN": Kind("RNN", 1, 1, 1, (0,))}
_ACTIVATIONS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu"}
_DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


def _activations(node: IrNode, kind: Kind, dirs: int) -> list[str]:
    names = [a.strip().lower() for a in node.attr("activations").split(",") if a.strip()]
    names = names or (["sigmoid", "tanh", "tanh"] if kind.onnx_op == "LSTM" else
                      ["sigmoid", "tanh"] if kind.onnx_op == "GRU" else ["tanh"])
    if len(names) != kind.activations or any(a not in _ACTIVATIONS for a in names):
        raise node.refuse(f"activations {names} are not expressed (ONNX's {kind.onnx_op} takes "
                          f"{kind.activations} of {sorted(_ACTIVATIONS)} here)")
    if node.attr("activations_alpha").strip() or node.attr("activations_beta").strip():
        raise node.refuse("activations_alpha/activations_beta are not expressed")
    return [_ACTIVATIONS[a] for a in names] * dirs


def _gate_index(kind: Kind, hidden: int) -> np.ndarray:
    return np.concatenate([np.arange(block * hidden, (block + 1) * hidden) for block in kind.order]).astype(np.int64)


def recurrent(node: IrNode) -> list[NodeProto]:
    """One OpenVINO LSTM/GRU/RNN Sequence or Cell as ONNX's op of that kind (layout 0) with transposes around it."""
    family = node.op_type.removesuffix("Sequence").removesuffix("Cell")
    kind, cell = KINDS[family], node.op_type.endswith("Cell")
    version = node.version.removeprefix("opset")
    if node.op_type == "LSTMCell" and version == "1" and (len(node.inputs) > 6 or node.flag("input_forget")):
        raise node.refuse("peepholes and input_forget (LSTMCell-1) are not expressed")
    if not cell and version != "5":
        raise node.refuse(f"only {node.op_type}-5 is expressed")
    hidden = int(node.attr("hidden_size", "0"))
    direction = "forward" if cell else node.attr("direction", "forward").lower()
    if hidden <= 0 or direction not in _DIRECTIONS:
        raise node.refuse(f"hidden_size {hidden} / direction {direction!r} are not expressed")
    dirs = _DIRECTIONS[direction]
    b = Builder(node)
    x, states = node.inputs[0], node.inputs[1:1 + kind.states]
    rest = node.inputs[1 + kind.states:]
    lengths, (w, r, bias) = (None, rest[:3]) if cell else (rest[0], rest[1:4])
    transposed = [1, 0, 2]
    if cell:  # [batch, ...] -> [1, batch, ...]; weights gain the dirs axis
        zero = b.i64([0], "axis0")
        x = b.one("Unsqueeze", [x, zero], "x")
        states = [b.one("Unsqueeze", [s, zero], f"state{i}") for i, s in enumerate(states)]
        w, r, bias = (b.one("Unsqueeze", [t, zero], f"{tag}_dirs") for t, tag in ((w, "w"), (r, "r"), (bias, "b")))
    else:
        x = b.one("Transpose", [x], "x", perm=transposed)
        states = [b.one("Transpose", [s], f"state{i}", perm=transposed) for i, s in enumerate(states)]
    if kind.order != tuple(range(kind.gates)):
        index = b.i64(_gate_index(kind, hidden), "gate_order")
        w, r, bias = (b.one("Gather", [t, index], f"{tag}_gates", axis=1) for t, tag in ((w, "w"), (r, "r"),
                                                                                           (bias, "b")))
    dtype = helper.tensor_dtype_to_np_dtype(node.elem(node.inputs[0]) or TensorProto.FLOAT)
    lbr = kind.onnx_op == "GRU" and node.flag("linear_before_reset")
    if lbr:  # OpenVINO: [z_W+z_R, r_W+r_R, h_W, h_R]; ONNX: W biases [z, r, h_W], R biases [0, 0, h_R]
        w_bias = b.one("Slice", [bias, b.i64([0], "wb_start"), b.i64([3 * hidden], "wb_end"), b.i64([1], "wb_axis")],
                       "w_bias")
        h_r = b.one("Slice", [bias, b.i64([3 * hidden], "rb_start"), b.i64([4 * hidden], "rb_end"),
                              b.i64([1], "rb_axis")], "h_r_bias")
        r_bias = b.one("Concat", [b.const(np.zeros((dirs, 2 * hidden), dtype), "zr_zero"), h_r], "r_bias", axis=1)
        bias = b.one("Concat", [w_bias, r_bias], "bias", axis=1)
    else:
        zeros = b.const(np.zeros((dirs, kind.gates * hidden), dtype), "r_bias")
        bias = b.one("Concat", [bias, zeros], "bias", axis=1)
    lengths_i32 = b.one("Cast", [lengths], "lengths", to=TensorProto.INT32) if lengths else ""
    attrs: dict[str, object] = {"hidden_size": hidden, "direction": direction,
                                "activations": _activations(node, kind, dirs)}
    clip = float(node.attr("clip", "0") or 0)
    if clip > 0:
        attrs["clip"] = clip
    if lbr:
        attrs["linear_before_reset"] = 1
    inputs = [x, w, r, bias, lengths_i32, *states]
    outs = b.op(kind.onnx_op, inputs, kind.onnx_op.lower(), outputs=1 + kind.states, **attrs)
    y, finals = outs[0], outs[1:]
    if cell:  # outputs: the final states [batch, hidden]
        zero = b.i64([0], "out_axis0")
        for i, (final, out) in enumerate(zip(finals, node.outputs, strict=False)):
            b.nodes.append(helper.make_node("Squeeze", [final, zero], [out],
                                            name=node.name if i == len(node.outputs) - 1 else f"{node.name}/out{i}"))
        return b.nodes
    b.nodes.append(helper.make_node("Transpose", [y], [node.outputs[0]], name=f"{node.name}/y", perm=[2, 1, 0, 3]))
    for i, (final, out) in enumerate(zip(finals, node.outputs[1:], strict=False)):
        last = i == len(node.outputs) - 2
        b.nodes.append(helper.make_node("Transpose", [final], [out], name=node.name if last else f"{node.name}/out{i}",
                                        perm=transposed))
    return b.nodes


TRANSLATIONS = {f"{family}{form}": recurrent for family in KINDS for form in ("Sequence", "Cell")}
