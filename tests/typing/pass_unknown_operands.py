"""Operands whose data type or format is known only at run time reach the general
overloads: no false errors, the call checks them when it runs."""

from __future__ import annotations

from typing import Any, assert_type

import numpy as np
import numpy.typing as npt

import cudnn_rs as cd


def array_of_unknown_dtype(h: cd.Handle, a: npt.NDArray[np.generic]) -> None:
    dy = cd.Tensor.from_numpy(h, a, format=cd.NCHW)
    assert_type(dy, cd.Tensor[cd.DType, cd.NCHW, Any])
    w = cd.Filter.zeros(h, (8, 4, 3, 3))
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16))
    conv = cd.ConvolutionDescriptor((1, 1))
    best = h.get_convolution_backward_data_algorithm(w, dy, dx, conv)
    h.find_convolution_backward_data_algorithm(w, dy, dx, conv)
    size = h.get_convolution_backward_data_workspace_size(w, dy, dx, conv, best)
    h.convolution_backward_data(1.0, w, dy, conv, cd.Fft(), None, 0.0, dx)
    out = cd.convolution_backward_data(h, w, dy, conv, (2, 4, 16, 16))
    assert_type(out, cd.Tensor[cd.DType, cd.Format, Any])
    print(size)


def partly_any_arrays(
    h: cd.Handle, a: npt.NDArray[Any], b: npt.NDArray[np.floating[Any]]
) -> None:
    w = cd.Filter.from_numpy(h, a)
    dy = cd.Tensor.from_numpy(h, b)
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16), dtype=cd.f16)
    conv = cd.ConvolutionDescriptor((1, 1))
    h.convolution_backward_data(1.0, w, dy, conv, cd.DataAlgo1(), None, 0.0, dx)
    cd.convolution_backward_data(h, w, dy, conv, (2, 4, 16, 16), dtype=cd.f16)


def dtype_and_format_variables(
    h: cd.Handle, d: cd.DType, f: type[cd.Format], algo: cd.Algorithm
) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=d)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16), format=f)
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16), dtype=cd.f64, format=cd.NHWC)
    conv = cd.ConvolutionDescriptor((1, 1), comp_type=d)
    h.convolution_backward_data(1.0, w, dy, conv, algo, None, 0.0, dx)
    cd.convolution_backward_data(h, w, dy, conv, (2, 4, 16, 16), algo, format=f)


def unknown_compute_type(h: cd.Handle, comp: cd.DType) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.f16, format=cd.NHWC)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16), dtype=cd.f16, format=cd.NHWC)
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16), dtype=cd.f16, format=cd.NHWC)
    conv = cd.ConvolutionDescriptor((1, 1), comp_type=comp)
    h.get_convolution_backward_data_algorithm(w, dy, dx, conv)


def unknown_rank(h: cd.Handle, shape: tuple[int, ...]) -> None:
    # a rank known only at run time matches the rows of either rank
    w = cd.Filter.zeros(h, shape)
    dy = cd.Tensor.zeros(h, shape)
    dx = cd.Tensor.zeros(h, shape)
    c3 = cd.ConvolutionDescriptor((1, 1, 1))
    h.convolution_backward_data(1.0, w, dy, c3, cd.FftTiling(), None, 0.0, dx)


def bare_annotations(
    h: cd.Handle,
    w: cd.Filter[Any, Any, Any],
    dy: cd.Tensor[Any, Any, Any],
    conv: cd.ConvolutionDescriptor[Any, Any],
) -> cd.Tensor[Any, Any, Any]:
    return cd.convolution_backward_data(h, w, dy, conv, (2, 4, 16, 16))
