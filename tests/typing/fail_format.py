"""An NHWC output gradient with an NCHW filter: no row has that pair."""

from __future__ import annotations

import cudnn_rs as cd


def nhwc_dy_nchw_filter(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3), format=cd.NCHW)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16), format=cd.NHWC)
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16), format=cd.NHWC)
    c = cd.ConvolutionDescriptor((1, 1))
    algo = cd.DataAlgo0()
    h.convolution_backward_data(1.0, w, dy, c, algo, None, 0.0, dx)  # expect-error
