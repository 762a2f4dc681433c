"""An f64 filter with f32 everything else: the checkers blame the filter."""

from __future__ import annotations

import cudnn_rs as cd


def f64_filter(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.f64)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16))
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16))
    c = cd.ConvolutionDescriptor((1, 1))
    a = cd.DataAlgo0()
    h.convolution_backward_data(1.0, w, dy, c, a, None, 0.0, dx)  # expect-error
