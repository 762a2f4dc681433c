"""5-d tensors with a 2-d convolution descriptor (5-d needs a 3-d one)."""

from __future__ import annotations

import cudnn_rs as cd


def five_d_tensors_two_d_descriptor(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3, 3))
    dy = cd.Tensor.zeros(h, (2, 8, 8, 8, 8))
    c = cd.ConvolutionDescriptor(padding=(1, 1))
    cd.convolution_backward_data(h, w, dy, c, (2, 4, 8, 8, 8))  # expect-error
