"""Integer tensors are storable but no backward-data row takes them."""

from __future__ import annotations

import cudnn_rs as cd


def int8_vectorised(h: cd.Handle) -> None:
    fmt = cd.NCHWVectC8x4
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.i8, format=fmt)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16), dtype=cd.i8, format=fmt)
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16), dtype=cd.i8, format=fmt)
    c = cd.ConvolutionDescriptor((1, 1), comp_type=cd.i32)
    h.find_convolution_backward_data_algorithm(w, dy, dx, c)  # expect-error
