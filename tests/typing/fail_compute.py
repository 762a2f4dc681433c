"""f16 compute with bf16 tensors: bf16 storage is in the table with f32 compute only
(f16 compute is for f16 storage)."""

from __future__ import annotations

import cudnn_rs as cd


def half_compute_bf16_storage(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.bf16, format=cd.NHWC)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16), dtype=cd.bf16, format=cd.NHWC)
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16), dtype=cd.bf16, format=cd.NHWC)
    c = cd.ConvolutionDescriptor((1, 1), comp_type=cd.f16)
    algo = cd.DataAlgo1()
    h.convolution_backward_data(1.0, w, dy, c, algo, None, 0.0, dx)  # expect-error
