"""The IR ops whose ONNX translation onnx-bcast owns (onnxifier's is wrong or missing): op type -> translation."""

from __future__ import annotations

from collections.abc import Callable

from onnx import NodeProto

from onnx_bcast.onnxifier.owned import (
                                         control_flow,
                                         elementary,
                                         indexing,
                                         normalization,
                                         pooling,
                                         recurrent,
                                         reduction,
                                         selection,
)
from onnx_bcast.onnxifier.owned.node import IrNode, Unsupported

Translation = Callable[[IrNode], list[NodeProto]]

TRANSLATIONS: dict[str, Translation] = {**elementary.TRANSLATIONS, **indexing.TRANSLATIONS,
                                        **normalization.TRANSLATIONS, **recurrent.TRANSLATIONS,
                                        **reduction.TRANSLATIONS, **pooling.TRANSLATIONS, **selection.TRANSLATIONS,
                                        **control_flow.TRANSLATIONS}

__all__ = ["TRANSLATIONS", "IrNode", "Translation", "Unsupported"]
