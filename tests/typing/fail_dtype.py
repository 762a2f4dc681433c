"""An f32 filter with an f16 output gradient: the table never mixes data types."""

from __future__ import annotations

import cudnn_rs as cd


def f32_filter_f16_dy(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.f32)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16), dtype=cd.f16)
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16), dtype=cd.f16)
    c = cd.ConvolutionDescriptor((1, 1))
    h.get_convolution_backward_data_algorithm(w, dy, dx, c)  # expect-error
