"""IR ops that reach no onnxifier pass but have an ONNX op of the same meaning under another name or form."""

from __future__ import annotations

import math

import numpy as np
from onnx import NodeProto, TensorProto, helper

from onnx_bcast.onnxifier.owned.node import Builder, IrNode

#: OpenVINO op -> the ONNX op computing the same, both without attributes
RENAMED = {"LogicalNot": "Not", "Negative": "Neg", "SoftPlus": "Softplus", "SoftSign": "Softsign",
           "ConvertLike": "CastLike", "Abs": "Abs", "Acos": "Acos", "Acosh": "Acosh", "Asin": "Asin", "Asinh": "Asinh",
           "Atan": "Atan", "Atanh": "Atanh", "Ceiling": "Ceil", "Cos": "Cos", "Cosh": "Cosh", "Erf": "Erf",
           "Exp": "Exp", "Floor": "Floor", "Log": "Log", "Sigmoid": "Sigmoid", "Sign": "Sign", "Sin": "Sin",
           "Sinh": "Sinh", "Sqrt": "Sqrt", "Tan": "Tan", "Tanh": "Tanh", "Mish": "Mish"}


def renamed(node: IrNode) -> list[NodeProto]:
    return Builder(node).finish(RENAMED[node.op_type], node.inputs)


def elu(node: IrNode) -> list[NodeProto]:
    return Builder(node).finish("Elu", node.inputs[:1], alpha=float(node.attr("alpha", "1")))


def _dtype(node: IrNode) -> np.dtype:
    return helper.tensor_dtype_to_np_dtype(node.elem(node.inputs[0]) or 1)


def gelu(node: IrNode) -> list[NodeProto]:
    """Gelu-2/-7: ``0.5 x (1 + erf(x / sqrt 2))``, or the tanh approximation where the IR asks for it."""
    b, x, dtype = Builder(node), node.inputs[0], _dtype(node)
    half = b.const(np.array(0.5, dtype), "half")
    one = b.const(np.array(1, dtype), "one")
    if node.attr("approximation_mode", "erf").lower() == "tanh":
        cube = b.one("Mul", [b.one("Mul", [x, x], "square"), x], "cube")
        inner = b.one("Add", [x, b.one("Mul", [cube, b.const(np.array(0.044715, dtype), "c")], "scaled_cube")],
                      "inner")
        core = b.one("Tanh", [b.one("Mul", [inner, b.const(np.array(math.sqrt(2 / math.pi), dtype), "k")],
                                    "scaled")], "tanh")
    else:
        core = b.one("Erf", [b.one("Div", [x, b.const(np.array(math.sqrt(2), dtype), "root2")], "scaled")], "erf")
    return b.finish("Mul", [b.one("Mul", [x, half], "half_x"), b.one("Add", [core, one], "one_plus")])


def round_(node: IrNode) -> list[NodeProto]:
    """Round-5: half_to_even is ONNX's Round; half_away_from_zero is ``sign(x) * floor(|x| + 0.5)``."""
    b, x = Builder(node), node.inputs[0]
    mode = node.attr("mode", "half_to_even").lower()
    if mode == "half_to_even":
        return b.finish("Round", [x])
    if mode != "half_away_from_zero":
        raise node.refuse(f"mode {mode!r} is not expressed")
    shifted = b.one("Add", [b.one("Abs", [x], "abs"), b.const(np.array(0.5, _dtype(node)), "half")], "shifted")
    return b.finish("Mul", [b.one("Sign", [x], "sign"), b.one("Floor", [shifted], "floor")])


def selu(node: IrNode) -> list[NodeProto]:
    alpha = np.asarray(node.const_or_refuse(1, "alpha")).ravel()
    lam = np.asarray(node.const_or_refuse(2, "lambda")).ravel()
    return Builder(node).finish("Selu", node.inputs[:1], alpha=float(alpha[0]), gamma=float(lam[0]))


def swish(node: IrNode) -> list[NodeProto]:
    """Swish-4: ``x * sigmoid(beta * x)``, beta 1 where the IR gives none."""
    b, x = Builder(node), node.inputs[0]
    scaled = b.one("Mul", [x, node.inputs[1]], "beta_x") if len(node.inputs) > 1 else x
    return b.finish("Mul", [x, b.one("Sigmoid", [scaled], "sigmoid")])


def log_softmax(node: IrNode) -> list[NodeProto]:
    return Builder(node).finish("LogSoftmax", node.inputs[:1], axis=int(node.attr("axis", "1")))


#: OpenVINO element type -> ONNX's (the ones Cast means the same for; onnxifier's Convert misses boolean and bf16)
ELEMENT_TYPES = {"boolean": TensorProto.BOOL, "bf16": TensorProto.BFLOAT16, "f16": TensorProto.FLOAT16,
                 "f32": TensorProto.FLOAT, "f64": TensorProto.DOUBLE, "i8": TensorProto.INT8,
                 "i16": TensorProto.INT16, "i32": TensorProto.INT32, "i64": TensorProto.INT64, "u8": TensorProto.UINT8,
                 "u16": TensorProto.UINT16, "u32": TensorProto.UINT32, "u64": TensorProto.UINT64}


def convert(node: IrNode) -> list[NodeProto]:
    """Convert-1 as ONNX Cast (to boolean: nonzero is true in both)."""
    target = node.attr("destination_type").strip().lower()
    if target not in ELEMENT_TYPES:
        raise node.refuse(f"destination_type {target!r} is not expressed")
    return Builder(node).finish("Cast", node.inputs[:1], to=ELEMENT_TYPES[target])


TRANSLATIONS = {**dict.fromkeys(RENAMED, renamed), "Elu": elu, "Gelu": gelu, "Round": round_, "Selu": selu,
                "LogSoftmax": log_softmax, "Convert": convert, "Swish": swish}
