"""The one-call API refuses a dx format that no row has for these operands."""

from __future__ import annotations

import cudnn_rs as cd


def vectorised_dx(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3))
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16))
    c = cd.ConvolutionDescriptor((1, 1))
    shape = (2, 4, 16, 16)
    f = cd.NCHWVectC8x4
    cd.convolution_backward_data(h, w, dy, c, shape, format=f)  # expect-error
