"""Every kind of support-table row type-checks, through every backward-data call."""

from __future__ import annotations

from typing import assert_type

import cudnn_rs as cd

# The algorithms of the f32 NCHW line (fused Winograd is in no line).
F32Algo = cd.DataAlgo0 | cd.DataAlgo1 | cd.Fft | cd.FftTiling | cd.WinogradNonFused


def f32_nchw_every_algorithm(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3))
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16))
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16))
    conv = cd.ConvolutionDescriptor(padding=(1, 1))
    best = h.get_convolution_backward_data_algorithm(w, dy, dx, conv)
    assert_type(best, cd.BestHeuristic)
    perfs = h.find_convolution_backward_data_algorithm(w, dy, dx, conv)
    assert_type(perfs, list[cd.AlgoPerf])
    # (mypy joins a list of mixed algorithms to their base class, which is typed as
    # "some algorithm": say which ones the list holds)
    algos: list[F32Algo | cd.BestHeuristic] = [
        cd.DataAlgo0(),
        cd.DataAlgo1(),
        cd.Fft(),
        cd.FftTiling(),
        cd.WinogradNonFused(),
        best,
        perfs[0],
    ]
    for algo in algos:
        size = h.get_convolution_backward_data_workspace_size(w, dy, dx, conv, algo)
        assert_type(size, int | None)
        ws = cd.Workspace(h, size)
        h.convolution_backward_data(1.0, w, dy, conv, algo, ws, 0.0, dx)
    h.convolution_backward_data(1, w, dy, conv, cd.Fft(), None, 0, dx)
    # the algorithm a heuristic or a find chose, passed on
    chosen = best.algo
    size = h.get_convolution_backward_data_workspace_size(w, dy, dx, conv, chosen)
    h.convolution_backward_data(
        1.0, w, dy, conv, chosen, cd.Workspace(h, size), 0.0, dx
    )
    h.convolution_backward_data(1.0, w, dy, conv, perfs[0].algo, None, 0.0, dx)
    # the one-call API: dtype and format of dx default to dy's
    out = cd.convolution_backward_data(h, w, dy, conv, (2, 4, 16, 16))
    assert_type(out, cd.Tensor[cd.F32, cd.NCHW, cd.Rank4])
    out = cd.convolution_backward_data(h, w, dy, conv, [2, 4, 16, 16], cd.Fft())
    assert_type(out, cd.Tensor[cd.F32, cd.NCHW, cd.Rank4])


def f32_nhwc_dx(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3))
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16))
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16), format=cd.NHWC)
    conv = cd.ConvolutionDescriptor(padding=(1, 1))
    h.convolution_backward_data(1.0, w, dy, conv, cd.DataAlgo1(), None, 0.0, dx)
    nhwc = cd.convolution_backward_data(h, w, dy, conv, (2, 4, 16, 16), format=cd.NHWC)
    assert_type(nhwc, cd.Tensor[cd.F32, cd.NHWC, cd.Rank4])


def half_and_bfloat(h: cd.Handle) -> None:
    # f16 storage with f32 compute, all NHWC
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.f16, format=cd.NHWC)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16), dtype=cd.f16, format=cd.NHWC)
    dx = cd.Tensor.empty(h, (2, 4, 16, 16), dtype=cd.f16, format=cd.NHWC)
    conv = cd.ConvolutionDescriptor((1, 1), math_type=cd.MathType.TensorOp)
    h.convolution_backward_data(1.0, w, dy, conv, cd.DataAlgo1(), None, 0.0, dx)
    # true half (f16 compute) with NCHW, including WinogradNonFused
    w2 = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.f16)
    dy2 = cd.Tensor.zeros(h, (2, 8, 16, 16), dtype=cd.f16)
    dx2 = cd.Tensor.zeros(h, (2, 4, 16, 16), dtype=cd.f16)
    true_half = cd.ConvolutionDescriptor((1, 1), comp_type=cd.f16)
    algo = cd.WinogradNonFused()
    h.convolution_backward_data(1.0, w2, dy2, true_half, algo, None, 0.0, dx2)
    # bf16 storage with f32 compute
    wb = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.bf16)
    dyb = cd.Tensor.zeros(h, (2, 8, 16, 16), dtype=cd.bf16)
    out = cd.convolution_backward_data(h, wb, dyb, conv, (2, 4, 16, 16), dtype=cd.bf16)
    assert_type(out, cd.Tensor[cd.BF16, cd.NCHW, cd.Rank4])


def three_d(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3, 3), dtype=cd.f64)
    dy = cd.Tensor.zeros(h, (2, 8, 8, 8, 8), dtype=cd.f64)
    dx = cd.Tensor.zeros(h, (2, 4, 8, 8, 8), dtype=cd.f64)
    conv = cd.ConvolutionDescriptor((1, 1, 1), comp_type=cd.f64)
    h.convolution_backward_data(1.0, w, dy, conv, cd.FftTiling(), None, 0.0, dx)
    best = h.get_convolution_backward_data_algorithm(w, dy, dx, conv)
    h.convolution_backward_data(1.0, w, dy, conv, best, None, 0.0, dx)
    # 3-d f16 storage with f32 compute, all NDHWC
    wh = cd.Filter.zeros(h, (8, 4, 3, 3, 3), dtype=cd.f16, format=cd.NHWC)
    dyh = cd.Tensor.zeros(h, (2, 8, 8, 8, 8), dtype=cd.f16, format=cd.NHWC)
    c3 = cd.ConvolutionDescriptor((1, 1, 1))
    dxh = cd.convolution_backward_data(h, wh, dyh, c3, (2, 4, 8, 8, 8), cd.DataAlgo1())
    assert_type(dxh, cd.Tensor[cd.F16, cd.NHWC, cd.Rank5])


def keywords(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3))
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16))
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16))
    conv = cd.ConvolutionDescriptor(padding=(1, 1))
    h.get_convolution_backward_data_algorithm(w, dy, dx, conv, deterministic=True)
    h.find_convolution_backward_data_algorithm(
        w=w, dy=dy, dx=dx, conv=conv, max_workspace_bytes=1 << 20, deterministic=False
    )
    h.convolution_backward_data(
        alpha=2.0,
        w=w,
        dy=dy,
        conv=conv,
        algo=cd.DataAlgo0(),
        workspace=None,
        beta=1.0,
        dx=dx,
    )
    cd.convolution_backward_data(
        handle=h, w=w, dy=dy, conv=conv, x_shape=(2, 4, 16, 16), algo=None, alpha=0.5
    )
