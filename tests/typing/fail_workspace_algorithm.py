"""Fused Winograd is in no line of the table (cuDNN 9 rejects it for every shape)."""

from __future__ import annotations

import cudnn_rs as cd


def winograd_half(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.f16)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16), dtype=cd.f16)
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16), dtype=cd.f16)
    c = cd.ConvolutionDescriptor((1, 1))
    a = cd.Winograd()
    h.get_convolution_backward_data_workspace_size(w, dy, dx, c, a)  # expect-error
