"""node_build.make_node builds what onnx.helper.make_node builds, byte for byte."""

from __future__ import annotations

import pytest
from onnx import TensorProto, helper

from onnx_bcast.lowering.node_build import make_node

ZERO = helper.make_tensor("zero", TensorProto.INT64, [1], [0])


@pytest.mark.parametrize("kwargs", [
    {},
    {"name": "n"}, {"name": ""}, {"domain": "onnx_bcast.ort"}, {"domain": None}, {"doc_string": "d"},
    {"axis": 0}, {"axes": [0, 2]}, {"axes": (1,)}, {"to": TensorProto.INT64}, {"mode": "numpy"},
    {"value": ZERO}, {"allowzero": 1, "axis": 0, "keepdims": 1}, {"alpha": 0.5}, {"skipped": None},
    {"floats": [1.0, 2.0]}, {"strings": ["a", "b"]}, {"flag": True},
])
def test_same_bytes_as_helper(kwargs: dict) -> None:
    for _ in range(2):  # the second time from the attribute cache
        ours = make_node("Op", ["a", "b"], ["c"], **kwargs)
        theirs = helper.make_node("Op", ["a", "b"], ["c"], **kwargs)
        assert ours.SerializeToString() == theirs.SerializeToString()


def test_a_node_is_its_own() -> None:
    first = make_node("Op", ["a"], ["b"], axes=[1])
    first.attribute[0].ints[0] = 5
    assert list(make_node("Op", ["a"], ["b"], axes=[1]).attribute[0].ints) == [1]
