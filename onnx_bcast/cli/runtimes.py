"""What ``onnx-bcast run`` runs a model in: ONNX Runtime (numpy or native backend) or OpenVINO's CPU plugin."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

RUNTIMES = ("onnxruntime", "openvino")


@dataclass(frozen=True)
class InputMeta:
    """A graph input as ``random_feeds`` reads it (as ONNX Runtime's ``NodeArg`` describes it)."""

    name: str
    type: str
    shape: list


#: float32 as the model says: on CPUs with bf16 support the CPU plugin otherwise computes float32 ops in bfloat16.
OPENVINO_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


class OpenVINORun:
    """A model read by OpenVINO with onnx-bcast's extensions and compiled for its CPU plugin (in float32)."""

    def __init__(self, model: onnx.ModelProto, path: Path) -> None:
        # onnx_bcast.openvino first: without OpenVINO, its ImportError names the extra
        from onnx_bcast.openvino import read_model  # noqa: I001
        import openvino

        self._model = model
        self._compiled = openvino.Core().compile_model(read_model(path), "CPU", OPENVINO_CONFIG)

    def get_inputs(self) -> list[InputMeta]:
        initialized = {t.name for t in self._model.graph.initializer}
        return [InputMeta(v.name, _type_string(v.type), _dims(v.type)) for v in self._model.graph.input
                if v.name not in initialized]

    def run(self, feeds: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray]]:
        try:
            results = self._compiled(feeds)
        except RuntimeError as err:  # its last line says what failed; the first ones are source positions
            lines = [line.strip() for line in str(err).splitlines() if line.strip()]
            raise RuntimeError(f"OpenVINO: {lines[-1] if lines else err}") from err
        return [(o.name, np.asarray(results[self._compiled.output(o.name)])) for o in self._model.graph.output]


class OnnxRuntimeRun:
    """``onnx_bcast.InferenceSession`` with the given backend."""

    def __init__(self, model: onnx.ModelProto, backend: str, providers: list[str] | None = None,
                 ep_libraries: Sequence[str] = ()) -> None:
        from onnx_bcast.ort.session import InferenceSession

        self._session = InferenceSession(model, providers=providers, backend=backend, ep_libraries=ep_libraries)

    def get_inputs(self) -> list[Any]:
        return self._session.get_inputs()

    def run(self, feeds: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray]]:
        names = [o.name for o in self._session.get_outputs()]
        return list(zip(names, self._session.run(None, feeds), strict=True))


def open_runtime(model: onnx.ModelProto, path: str | Path, runtime: str = "onnxruntime",
                 backend: str = "numpy", providers: list[str] | None = None,
                 ep_libraries: Sequence[str] = ()) -> OpenVINORun | OnnxRuntimeRun:
    """The model ready to run; ``path`` is where it was loaded from (OpenVINO reads the file itself, so that
    external data is found beside it). Without OpenVINO, ``runtime="openvino"`` is an ImportError naming the
    ``onnx-bcast[openvino]`` extra. ``providers`` and ``ep_libraries``: ONNX Runtime's execution providers."""
    if runtime == "openvino":
        return OpenVINORun(model, Path(path))
    return OnnxRuntimeRun(model, backend, providers, ep_libraries)


def _type_string(type_proto: onnx.TypeProto) -> str:
    elem = type_proto.tensor_type.elem_type
    return f"tensor({onnx.TensorProto.DataType.Name(elem).lower()})" if elem else "unknown"


def _dims(type_proto: onnx.TypeProto) -> list:
    if not type_proto.tensor_type.HasField("shape"):
        return []
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in type_proto.tensor_type.shape.dim]


def preview(value: np.ndarray, count: int = 6) -> str:
    """The first values of an output, as ``run`` prints them."""
    flat = value.reshape(-1)[:count].tolist()
    text = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in flat)
    return f"[{text}{', ...' if value.size > count else ''}]"
