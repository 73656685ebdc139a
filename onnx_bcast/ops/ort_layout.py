"""How ONNX Runtime's CPU binary kernels walk their output, as far as it shows in the values (x86-64 build)."""

from __future__ import annotations

import numpy as np

Shape = tuple[int, ...]

# ---------------------------------------------------------------------------------------------------------------
# How ONNX Runtime's CPU kernels compute, as far as it shows in the values (measured on onnxruntime 1.32, x86-64).
# Its binary elementwise kernels walk the output in spans; per span either input may be a single repeated value
# ("input0scalar" / "input1scalar") or both are runs ("general"). Pow squares or cubes by multiplication when the
# exponent is such a repeated 2 or 3, and Max/Min break +0/-0 ties differently in Eigen's SSE packets than in its
# scalar loop. Both depend on the span layout, which ort_layout reproduces. Not reproduced: a large output that is
# one single span is cut into chunks for ORT's thread pool (from about 10^5 elements, depending on the threads),
# which moves some Max/Min ties of float32/float64 from packet to scalar code; and builds other than x86-64.


def ort_layout(a_shape: Shape, b_shape: Shape) -> tuple[str, int]:
    """(kind, span length) of ONNX Runtime's two-input broadcaster for inputs of these shapes.

    Walking the right-aligned dims from the innermost: the first span is the innermost stretch of output dims over
    which neither input switches between being repeated (its dim is 1) and being walked (its dim is > 1); output
    dims of size 1 are skipped. An input that is repeated over that stretch is the span's scalar.
    """
    inner_a, inner_b = tuple(reversed(a_shape)), tuple(reversed(b_shape))
    shared, rank = min(len(inner_a), len(inner_b)), max(len(inner_a), len(inner_b))

    class Walk:  # one input's first stretch: is it repeated there, and how many output elements it covers
        def __init__(self, dim: int, out_dim: int) -> None:
            self.repeated, self.span, self.open = dim <= 1, out_dim, True

        def add(self, dim: int, out_dim: int) -> None:
            if self.open and (dim <= 1) == self.repeated:
                self.span *= out_dim
            else:
                self.open = False

    k = 0
    if shared == 0:  # a rank-0 input is repeated over the other's innermost dim
        dim = (inner_a or inner_b or (1,))[0]
        walk_a = Walk(1 if not inner_a else dim, dim)
        walk_b = Walk(1 if not inner_b else dim, dim)
        k = 1
    else:
        while max(inner_a[k], inner_b[k]) == 1 and k + 1 < shared:
            k += 1
        out_dim = max(inner_a[k], inner_b[k])
        walk_a, walk_b = Walk(inner_a[k], out_dim), Walk(inner_b[k], out_dim)
        k += 1
    for i in range(k, rank):
        da = inner_a[i] if i < len(inner_a) else 1
        db = inner_b[i] if i < len(inner_b) else 1
        out_dim = max(da, db)
        if i < shared and out_dim == 1:
            continue  # within the shared dims, an output dim of 1 changes nothing
        walk_a.add(da, out_dim)
        walk_b.add(db, out_dim)
    kind = "input0scalar" if walk_a.repeated else "input1scalar" if walk_b.repeated else "general"
    return kind, min(walk_a.span, walk_b.span)


_SSE_BYTES = 16  # Eigen's packet width in ONNX Runtime's x86-64 build (4 float32s, 2 float64s)


def packet_mask(out_shape: Shape, itemsize: int, span: int) -> np.ndarray:
    """Which output elements Eigen computes in SSE packets rather than in its scalar loop.

    Per span, Eigen runs scalar code up to the first 16-byte aligned output address (ONNX Runtime's buffers start
    aligned), packets while a whole one fits, and scalar code for the tail.
    """
    lanes = _SSE_BYTES // itemsize
    pos = np.arange(int(np.prod(out_shape, dtype=np.int64)), dtype=np.int64)
    start, j = pos - pos % span, pos % span
    head = np.minimum((lanes - start % lanes) % lanes, span)
    end = head + (span - head) // lanes * lanes
    return ((j >= head) & (j < end)).reshape(out_shape)
