"""Fft is not in the table for f64 tensors (only DataAlgo0, DataAlgo1, FftTiling)."""

from __future__ import annotations

import cudnn_rs as cd


def fft_with_f64(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.f64)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16), dtype=cd.f64)
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16), dtype=cd.f64)
    c = cd.ConvolutionDescriptor((1, 1), comp_type=cd.f64)
    h.convolution_backward_data(1.0, w, dy, c, cd.Fft(), None, 0.0, dx)  # expect-error
