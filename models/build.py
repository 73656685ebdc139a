"""Builds the bundled example models: small graphs shaped like the ones users bring from OpenVINO/nGraph."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_bcast.models import MODELS_DIR

IR_VERSION = 10
OPSET = 17
logger = logging.getLogger("onnx_bcast.models")


def _model(graph: onnx.GraphProto, doc: str) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid("onnx_bcast", 1)],
                              ir_version=IR_VERSION, producer_name="onnx-bcast models/build.py", doc_string=doc)
    onnx.checker.check_model(model, full_check=True)
    return model


def _const(name: str, values: object, dtype: type = np.int64) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def nchw_bias_explicit() -> onnx.ModelProto:
    """An NCHW feature map plus a per-channel bias broadcast with explicit axes_mapping [1], then Add."""
    rng = np.random.default_rng(1)
    bias = _const("bias", rng.standard_normal(16), np.float32)
    nodes = [
        helper.make_node("Broadcast", ["bias", "target_shape", "axes_mapping"], ["bias_nchw"], domain="onnx_bcast",
                         name="bias_broadcast", mode="explicit", axis=-1),
        helper.make_node("Add", ["features", "bias_nchw"], ["biased"], name="bias_add"),
    ]
    graph = helper.make_graph(
        nodes, "nchw_bias_explicit",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 16, 50, 50])],
        [helper.make_tensor_value_info("biased", TensorProto.FLOAT, [1, 16, 50, 50])],
        initializer=[bias, _const("target_shape", [1, 16, 50, 50]), _const("axes_mapping", [1])],
    )
    return _model(graph, "Per-channel bias [16] -> [1,16,50,50] by Broadcast explicit axes_mapping [1], then Add.")


def batchnorm_v0() -> onnx.ModelProto:
    """Batch normalisation written the nGraph way: BroadcastV0 of mean, scale and shift over axes {0,2,3}."""
    rng = np.random.default_rng(3)
    shape, axes = [2, 8, 10, 10], [0, 2, 3]
    inits = [_const("mean", rng.standard_normal(8), np.float32), _const("inv_std", rng.uniform(0.5, 2, 8), np.float32),
             _const("shift", rng.standard_normal(8), np.float32), _const("bn_shape", shape), _const("bn_axes", axes)]
    nodes = []
    for name in ("mean", "inv_std", "shift"):
        nodes.append(helper.make_node("BroadcastV0", [name, "bn_shape", "bn_axes"], [f"{name}_b"],
                                      domain="onnx_bcast", name=f"broadcast_{name}", shape=shape,
                                      broadcast_axes=axes))
    nodes += [
        helper.make_node("Sub", ["x", "mean_b"], ["centered"], name="center"),
        helper.make_node("Mul", ["centered", "inv_std_b"], ["scaled"], name="scale"),
        helper.make_node("Add", ["scaled", "shift_b"], ["y"], name="shift_add"),
    ]
    graph = helper.make_graph(nodes, "batchnorm_v0", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], initializer=inits)
    return _model(graph, "nGraph-style batch norm: BroadcastV0 over axes {0,2,3} (shape and axes also as inputs "
                         "so that plain ONNX Runtime runs it).")


def expand_modes() -> onnx.ModelProto:
    """Expand in all of its modes on one input, the results concatenated."""
    cases = [("bidirectional", [2, 1, 4], None, -1, [2, 3, 4]), ("numpy", [2, 3, 4], None, -1, [2, 3, 4]),
             ("explicit", [4, 3, 2], [1, 2], -1, [4, 3, 2]), ("pdpd", [2, 3, 5], None, 1, [2, 3, 5])]
    nodes, inits, outputs = [], [], []
    for mode, target, axes, axis, out_shape in cases:
        inputs = ["x", f"{mode}_target", f"{mode}_axes"]
        inits += [_const(f"{mode}_target", target), _const(f"{mode}_axes", axes or [])]
        nodes.append(helper.make_node("Expand", inputs, [f"{mode}_out"], domain="onnx_bcast", name=f"expand_{mode}",
                                      mode=mode, axis=axis))
        outputs.append(helper.make_tensor_value_info(f"{mode}_out", TensorProto.FLOAT, out_shape))
    graph = helper.make_graph(nodes, "expand_modes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 1])],
                              outputs, initializer=inits)
    return _model(graph, "Expand in bidirectional, numpy, explicit and pdpd modes on one [3,1] input.")


def _shape_target() -> list[onnx.NodeProto]:
    """target_shape = Concat(Shape(features)[0:1], [8], Shape(features)[2:4]): batch and spatial dims at run time."""
    return [
        helper.make_node("Shape", ["features"], ["batch_dim"], name="shape_batch", start=0, end=1),
        helper.make_node("Shape", ["features"], ["spatial_dims"], name="shape_spatial", start=2, end=4),
        helper.make_node("Concat", ["batch_dim", "channels", "spatial_dims"], ["target_shape"], name="target_concat",
                         axis=0),
    ]


def _branch(name: str, node: onnx.NodeProto) -> onnx.GraphProto:
    out = helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, ["N", 8, "H", "W"])
    return helper.make_graph([node], name, [], [out])


def runtime_shape_if() -> onnx.ModelProto:
    """A per-channel bias broadcast to a target shape computed at run time, inside an If on a bool input."""
    rng = np.random.default_rng(4)
    inits = [_const("channels", [8]), _const("bias", rng.standard_normal(8), np.float32),
             _const("shift", rng.standard_normal((8, 1, 1)), np.float32), _const("bias_axes", [1]),
             _const("no_axes", [])]
    then_branch = _branch("channel_bias", helper.make_node(
        "Broadcast", ["bias", "target_shape", "bias_axes"], ["bias_nchw"], domain="onnx_bcast",
        name="bias_broadcast", mode="explicit", axis=-1))
    else_branch = _branch("channel_shift", helper.make_node(
        "Broadcast", ["shift", "target_shape", "no_axes"], ["shift_nchw"], domain="onnx_bcast",
        name="shift_broadcast", mode="pdpd", axis=1))
    nodes = _shape_target() + [
        helper.make_node("If", ["use_bias"], ["offset"], name="choose_offset", then_branch=then_branch,
                         else_branch=else_branch),
        helper.make_node("Add", ["features", "offset"], ["shifted"], name="offset_add"),
    ]
    features = helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", 8, "H", "W"])
    use_bias = helper.make_tensor_value_info("use_bias", TensorProto.BOOL, [])
    graph = helper.make_graph(nodes, "runtime_shape_if", [features, use_bias],
                              [helper.make_tensor_value_info("shifted", TensorProto.FLOAT, ["N", 8, "H", "W"])],
                              initializer=inits)
    return _model(graph, "features [N,8,H,W] plus an offset chosen by If(use_bias): then a per-channel bias [8] by "
                         "Broadcast explicit axes_mapping [1], else a shift [8,1,1] by Broadcast pdpd axis 1; the "
                         "target shape is Concat(Shape(features)[0:1], [8], Shape(features)[2:4]) at run time.")


def paddle_matmul_bias() -> onnx.ModelProto:
    """A PaddlePaddle fc block: MatMul, bias by Add pdpd axis 1, Relu, a second MatMul and a residual Add."""
    rng = np.random.default_rng(2)
    hidden, width = 32, 16
    inits = [_const("fc1_weight", rng.standard_normal((width, hidden)) / 4, np.float32),
             _const("fc1_bias", rng.standard_normal(hidden), np.float32),
             _const("fc2_weight", rng.standard_normal((hidden, width)) / 4, np.float32)]
    nodes = [
        helper.make_node("MatMul", ["x", "fc1_weight"], ["fc1_out"], name="fc1_matmul"),
        helper.make_node("Add", ["fc1_out", "fc1_bias"], ["fc1_biased"], domain="onnx_bcast", name="fc1_bias_add",
                         auto_broadcast="pdpd", axis=1),
        helper.make_node("Relu", ["fc1_biased"], ["fc1_act"], name="fc1_relu"),
        helper.make_node("MatMul", ["fc1_act", "fc2_weight"], ["fc2_out"], name="fc2_matmul"),
        helper.make_node("Add", ["x", "fc2_out"], ["y"], domain="onnx_bcast", name="residual_add",
                         auto_broadcast="pdpd", axis=-1),
    ]
    graph = helper.make_graph(nodes, "paddle_matmul_bias",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])],
                              initializer=inits)
    return _model(graph, "PaddlePaddle fc block: x [batch,16] @ W1 [16,32], elementwise_add of bias [32] with "
                         "axis 1 (Add auto_broadcast=pdpd axis=1), Relu, @ W2 [32,16], residual elementwise_add "
                         "(pdpd, axis -1).")


def bias_grad() -> onnx.ModelProto:
    """A per-channel bias, forward and backward side by side: Broadcast explicit + Add and Add pdpd axis 1, and the
    gradients of the bias (BroadcastBackprop explicit, Unbroadcast pdpd axis 1), batch size known at run time."""
    rng = np.random.default_rng(6)
    bias = _const("bias", rng.standard_normal(16), np.float32)
    ours = {"domain": "onnx_bcast"}
    nodes = [
        helper.make_node("Shape", ["features"], ["features_shape"], name="features_shape"),
        helper.make_node("Broadcast", ["bias", "features_shape", "axes_mapping"], ["bias_nchw"], name="bias_broadcast",
                         mode="explicit", axis=-1, **ours),
        helper.make_node("Add", ["features", "bias_nchw"], ["y"], name="bias_add"),
        helper.make_node("Add", ["features", "bias"], ["y_pdpd"], name="bias_add_pdpd", auto_broadcast="pdpd",
                         axis=1, **ours),
        helper.make_node("BroadcastBackprop", ["dy", "bias_shape", "axes_mapping"], ["bias_grad"],
                         name="bias_broadcast_grad", mode="explicit", axis=-1, **ours),
        helper.make_node("Unbroadcast", ["dy", "features_shape", "bias_shape"], ["features_grad", "bias_grad_pdpd"],
                         name="bias_add_pdpd_grad", auto_broadcast="pdpd", axis=1, **ours),
    ]
    nchw = ["N", 16, 8, 8]
    graph = helper.make_graph(
        nodes, "bias_grad",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, nchw),
         helper.make_tensor_value_info("dy", TensorProto.FLOAT, nchw)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, nchw),
         helper.make_tensor_value_info("y_pdpd", TensorProto.FLOAT, nchw),
         helper.make_tensor_value_info("bias_grad", TensorProto.FLOAT, [16]),
         helper.make_tensor_value_info("features_grad", TensorProto.FLOAT, nchw),
         helper.make_tensor_value_info("bias_grad_pdpd", TensorProto.FLOAT, [16])],
        initializer=[bias, _const("axes_mapping", [1]), _const("bias_shape", [16])],
    )
    return _model(graph, "Per-channel bias [16] on [N,16,8,8], forward (Broadcast explicit axes_mapping [1] + Add; "
                         "Add pdpd axis 1) and backward (BroadcastBackprop explicit: dy summed over axes 0, 2, 3; "
                         "Unbroadcast pdpd axis 1: the gradients of both operands of the pdpd Add).")


BUILDERS: dict[str, Callable[[], onnx.ModelProto]] = {
    "nchw_bias_explicit": nchw_bias_explicit,
    "batchnorm_v0": batchnorm_v0,
    "expand_modes": expand_modes,
    "runtime_shape_if": runtime_shape_if,
    "paddle_matmul_bias": paddle_matmul_bias,
    "bias_grad": bias_grad,
}


def build(out_dir: Path = MODELS_DIR, force: bool = True) -> list[Path]:
    """Write every bundled model into ``out_dir`` (made, with its parents, where missing); returns the paths.
    Without ``force``, an existing file of one of those names is a FileExistsError and nothing is written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.onnx" for name in BUILDERS]
    existing = [path.name for path in paths if os.path.lexists(path)]
    if existing and not force:
        raise FileExistsError(f"{out_dir}: already holds {', '.join(existing)}; give --force to overwrite, or "
                              "another --out-dir")
    for path, builder in zip(paths, BUILDERS.values(), strict=True):
        onnx.save(builder(), path)
        logger.info("wrote %s", path)
    return paths


def main(argv: list[str] | None = None) -> int:
    """``python -m onnx_bcast.models.build [--out-dir DIR] [--force]``; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out-dir", type=Path, default=None,
                        help=f"where to write, made if missing (default: the bundled models' folder, {MODELS_DIR}, "
                             "whose files it rewrites)")
    parser.add_argument("--force", action="store_true",
                        help="with --out-dir: overwrite the models' files there (otherwise an existing one is refused)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        build(MODELS_DIR if args.out_dir is None else args.out_dir, force=args.out_dir is None or args.force)
    except OSError as err:
        reason = f"{err.filename}: {err.strerror.lower()}" if err.filename and err.strerror else str(err)
        print(f"onnx_bcast.models.build: {reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
