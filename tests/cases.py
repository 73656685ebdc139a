"""The shared table of broadcast cases from the source documents, with independent expected values."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Case:
    """One broadcast: inputs, attributes and the output shape the source document states (None: must fail)."""

    name: str
    data_shape: tuple[int, ...]
    target: tuple[int, ...]
    expected_shape: tuple[int, ...] | None
    mode: str = "numpy"
    axes: tuple[int, ...] | None = None
    axis: int = -1
    op: str = "Broadcast"
    error_words: tuple[str, ...] = field(default_factory=tuple)


def expected_values(data: np.ndarray, case: Case) -> np.ndarray:
    """Element by element, the formula of the reference notes: out[o] = data[k -> o[map(k)] or 0 if d[k] == 1]."""
    out_shape = case.expected_shape
    assert out_shape is not None
    rank, r = len(out_shape), data.ndim
    mode = case.mode.lower()
    if mode in ("explicit", "none"):
        mapping = list(case.axes or ())
    elif mode == "pdpd":
        start = rank - r if case.axis == -1 else case.axis
        mapping = [start + k for k in range(r)]
    else:
        mapping = [k + rank - r for k in range(r)]
    out = np.empty(out_shape, dtype=data.dtype)
    for o in itertools.product(*(range(n) for n in out_shape)):
        src = tuple(0 if data.shape[k] == 1 else o[mapping[k]] for k in range(r))
        out[o] = data[src]
    return out


def sample(shape: tuple[int, ...], dtype: type = np.float32) -> np.ndarray:
    """Distinct values so that any misplaced element shows."""
    return (np.arange(int(np.prod(shape, dtype=np.int64))) + 1).astype(dtype).reshape(shape)


# ONNX Broadcasting.md: multidirectional examples (A, B -> result), as Broadcast bidirectional of A to B
ONNX_MULTI = [
    Case("onnx_multi_scalar", (2, 3, 4, 5), (), (2, 3, 4, 5), "bidirectional"),
    Case("onnx_multi_vec5", (2, 3, 4, 5), (5,), (2, 3, 4, 5), "bidirectional"),
    Case("onnx_multi_45_2345", (4, 5), (2, 3, 4, 5), (2, 3, 4, 5), "bidirectional"),
    Case("onnx_multi_145_2311", (1, 4, 5), (2, 3, 1, 1), (2, 3, 4, 5), "bidirectional"),
    Case("onnx_multi_345_2111", (3, 4, 5), (2, 1, 1, 1), (2, 3, 4, 5), "bidirectional"),
]
# ONNX Broadcasting.md: unidirectional examples (B unidirectionally to A) = numpy mode of data B to target A
ONNX_UNI = [
    Case("onnx_uni_scalar", (), (2, 3, 4, 5), (2, 3, 4, 5)),
    Case("onnx_uni_vec5", (5,), (2, 3, 4, 5), (2, 3, 4, 5)),
    Case("onnx_uni_2115", (2, 1, 1, 5), (2, 3, 4, 5), (2, 3, 4, 5)),
    Case("onnx_uni_1315", (1, 3, 1, 5), (2, 3, 4, 5), (2, 3, 4, 5)),
]
# OpenVINO broadcast rules: numpy examples (A, B -> result) are multidirectional: Broadcast bidirectional A to B
OV_NUMPY_RULES = [
    Case("ov_rules_scalar_scalar", (), (), (), "bidirectional"),
    Case("ov_rules_23_1", (2, 3), (1,), (2, 3), "bidirectional"),
    Case("ov_rules_3_23", (3,), (2, 3), (2, 3), "bidirectional"),
    Case("ov_rules_235_scalar", (2, 3, 5), (), (2, 3, 5), "bidirectional"),
    Case("ov_rules_215_145", (2, 1, 5), (1, 4, 5), (2, 4, 5), "bidirectional"),
    Case("ov_rules_65_215", (6, 5), (2, 1, 5), (2, 6, 5), "bidirectional"),
    Case("ov_rules_215_41", (2, 1, 5), (4, 1), (2, 4, 5), "bidirectional"),
    Case("ov_rules_3214_54", (3, 2, 1, 4), (5, 4), (3, 2, 5, 4), "bidirectional"),
    Case("ov_rules_153_5213", (1, 5, 3), (5, 2, 1, 3), (5, 2, 5, 3), "bidirectional"),
    Case("ov_rules_3_2_fails", (3,), (2,), None, "bidirectional", error_words=("size 3", "size 2")),
    Case("ov_rules_315_445_fails", (3, 1, 5), (4, 4, 5), None, "bidirectional", error_words=("size 3", "size 4")),
]
# OpenVINO broadcast rules: bidirectional examples (input A, target_shape B)
OV_BIDIRECTIONAL = [
    Case("ov_bidi_5_1", (5,), (1,), (5,), "bidirectional"),
    Case("ov_bidi_23_3", (2, 3), (3,), (2, 3), "bidirectional"),
    Case("ov_bidi_31_34", (3, 1), (3, 4), (3, 4), "bidirectional"),
    Case("ov_bidi_34_scalar", (3, 4), (), (3, 4), "bidirectional"),
    Case("ov_bidi_31_216", (3, 1), (2, 1, 6), (2, 3, 6), "bidirectional"),
]
# OpenVINO Broadcast-1/-3 specifications: the XML examples and the explicit-mode examples of the text
OV_SPEC_EXAMPLES = [
    Case("ov_xml_numpy", (16, 1, 1), (1, 16, 50, 50), (1, 16, 50, 50)),
    Case("ov_xml_explicit_c", (16,), (1, 16, 50, 50), (1, 16, 50, 50), "explicit", axes=(1,)),
    Case("ov_xml_explicit_hw", (50, 50), (1, 50, 50, 16), (1, 50, 50, 16), "explicit", axes=(1, 2)),
    Case("ov_xml_bidirectional", (16, 1, 1), (1, 1, 50, 50), (1, 16, 50, 50), "bidirectional"),
    Case("ov_xml_explicit_none_alias", (16,), (1, 16, 50, 50), (1, 16, 50, 50), "NONE", axes=(1,)),
]
# SPEC §2 rules and the reference notes' cases, every mode, zero-size and 0-d included
RULES = [
    Case("numpy_31_236", (3, 1), (2, 3, 6), (2, 3, 6)),
    Case("numpy_scalar_scalar", (), (), ()),
    Case("numpy_1_0", (1,), (0,), (0,)),
    Case("numpy_2_302", (2,), (3, 0, 2), (3, 0, 2)),
    Case("numpy_0_0", (0,), (0,), (0,)),
    Case("numpy_rank_too_small", (2, 3), (3,), None, error_words=("rank",)),
    Case("numpy_mismatch", (2, 3), (2, 4), None, error_words=("data dim 1 (size 3)", "target dim 1 (size 4)")),
    Case("numpy_negative_target", (1,), (-1,), None, error_words=("negative",)),
    Case("numpy_uppercase_mode", (3,), (2, 3), (2, 3), "NumPy"),
    Case("explicit_size1_stretch", (3, 1), (2, 3, 3), (2, 3, 3), "explicit", axes=(1, 2)),
    Case("explicit_scalar_no_axes", (), (2, 3), (2, 3), "explicit", axes=()),
    Case("explicit_scalar_one_axis", (), (1, 2), (1, 2), "explicit", axes=(0,)),
    Case("explicit_scalar_axis_not_1", (), (2, 2), None, "explicit", axes=(0,), error_words=("size 1",)),
    Case("explicit_gap", (2, 3), (2, 4, 3), (2, 4, 3), "explicit", axes=(0, 2)),
    Case("explicit_zero_size", (1,), (0, 2), (0, 2), "explicit", axes=(0,)),
    Case("explicit_zero_data", (0,), (2, 0), (2, 0), "explicit", axes=(1,)),
    Case("explicit_transposed", (3, 2), (2, 3), None, "explicit", axes=(1, 0), error_words=("increasing",)),
    Case("explicit_duplicate", (3, 1), (2, 3, 1), None, "explicit", axes=(1, 1), error_words=("increasing",)),
    Case("explicit_out_of_range", (3,), (3,), None, "explicit", axes=(1,), error_words=("outside",)),
    Case("explicit_negative_axis", (3,), (3,), None, "explicit", axes=(-1,), error_words=("outside",)),
    Case("explicit_wrong_count", (3, 4), (3, 4), None, "explicit", axes=(0,), error_words=("rank 2",)),
    Case("explicit_mismatch", (3, 2), (2, 3, 3), None, "explicit", axes=(1, 2), error_words=("size 2", "size 3")),
    Case("bidi_grows_beyond_target", (3, 4), (1,), (3, 4), "bidirectional"),
    Case("bidi_zero_from_target", (1,), (0,), (0,), "bidirectional"),
    Case("bidi_zero_from_data", (2, 0), (1, 1), (2, 0), "bidirectional"),
    Case("bidi_zero_three_fails", (0,), (3,), None, "bidirectional", error_words=("size 0", "size 3")),
    Case("pdpd_default_axis", (3, 1), (2, 3, 4), (2, 3, 4), "pdpd"),
    Case("pdpd_axis1", (3, 4), (2, 3, 4), (2, 3, 4), "pdpd", axis=1),
    Case("pdpd_target_one_takes_data", (3, 5), (2, 3, 1), (2, 3, 5), "pdpd", axis=1),
    Case("pdpd_axis0_full", (2, 3), (2, 3), (2, 3), "pdpd", axis=0),
    Case("pdpd_scalar_end", (), (2, 3), (2, 3), "pdpd", axis=2),
    Case("pdpd_zero", (1,), (2, 0), (2, 0), "pdpd", axis=1),
    Case("pdpd_not_covering", (3,), (2, 3, 4), None, "pdpd", axis=1, error_words=("cover",)),
    Case("pdpd_extra_data_dims", (3, 4, 5), (2, 3, 4), None, "pdpd", axis=1, error_words=("cover",)),
    Case("pdpd_axis_too_big", (), (2, 3), None, "pdpd", axis=3, error_words=("outside",)),
    Case("pdpd_axis_below_minus1", (3,), (2, 3), None, "pdpd", axis=-2, error_words=("outside",)),
    Case("pdpd_mismatch", (4,), (2, 3), None, "pdpd", axis=1, error_words=("size 4", "size 3")),
    Case("mode_unknown", (3,), (3,), None, "sideways", error_words=("unknown mode",)),
    Case("axes_in_numpy_mode", (3,), (2, 3), None, "numpy", axes=(1,), error_words=("only allowed",)),
    Case("expand_default_bidirectional", (3, 1), (2, 1, 6), (2, 3, 6), "bidirectional", op="Expand"),
    Case("expand_explicit", (16,), (1, 16, 5, 5), (1, 16, 5, 5), "explicit", axes=(1,), op="Expand"),
    Case("expand_mismatch", (3,), (4,), None, "bidirectional", op="Expand", error_words=("Expand",)),
]

ALL_CASES = ONNX_MULTI + ONNX_UNI + OV_NUMPY_RULES + OV_BIDIRECTIONAL + OV_SPEC_EXAMPLES + RULES
VALID_CASES = [c for c in ALL_CASES if c.expected_shape is not None]
INVALID_CASES = [c for c in ALL_CASES if c.expected_shape is None]
