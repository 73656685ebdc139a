"""OpenVINO's reference kernels as an oracle: a model's Parameters replaced by Constants, then ConstantFolding."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as ops
from openvino import passes


class NotFolded(RuntimeError):
    """OpenVINO's reference did not compute an output (validation or a kernel refused the values)."""


def ov_reference(model: ov.Model | str, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The outputs of ``model`` (an ov.Model or an IR path, read afresh) on ``feeds`` (by Parameter name), as
    OpenVINO's reference evaluators compute them when the inputs are constants; ``NotFolded`` where they do not."""
    model = ov.Core().read_model(model) if isinstance(model, str) else model.clone()
    try:
        for param in model.get_parameters():
            const = ops.constant(np.ascontiguousarray(feeds[param.get_friendly_name()]))
            for target in list(param.output(0).get_target_inputs()):
                target.replace_source_output(const.output(0))
        for node in model.get_ordered_ops():  # the ONNX frontend's Identity has no reference kernel: bypassed
            if node.get_type_name() == "Identity":
                for target in list(node.output(0).get_target_inputs()):
                    target.replace_source_output(node.input_value(0))
        model.validate_nodes_and_infer_types()
        manager = passes.Manager()
        manager.register_pass(passes.ConstantFolding())
        manager.run_passes(model)
    except RuntimeError as err:
        raise NotFolded(str(err).splitlines()[0]) from None
    outputs = []
    for result in model.get_results():
        node = result.input_value(0).get_node()
        if node.get_type_name() != "Constant":
            raise NotFolded(f"{node.get_type_name()} {node.get_friendly_name()} was not folded")
        outputs.append(np.array(node.get_data(), copy=True).reshape(tuple(node.get_output_shape(0))))
    return outputs
