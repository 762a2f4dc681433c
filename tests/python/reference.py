"""Independent NumPy reference for cuDNN's convolution backward-data.

Written from the mathematics, not from the package's Rust code. The forward
cross-correlation of an input ``x`` (N, C, *spatial) with a filter ``w``
(K, C/G, *kernel) in G groups is

    y[n, k, o] = sum_{c in group(k), r} x[n, c, o*stride - pad + r*dil]
                                        * w[k, c - g(k)*C/G, r]

(a sum over every spatial dimension; taps that fall into the padding read zero).
``Convolution`` mode is the same with the kernel flipped in every spatial dimension.
Backward-data is the gradient of ``y`` with respect to ``x``: each ``dy[n, k, o]``
flows back to every ``x[n, c, i]`` it was multiplied with. cuDNN then blends it with
the old ``dx``: ``dx = alpha * dgrad(w, dy) + beta * dx``, and with ``beta == 0`` the
old ``dx`` is not read at all (it may hold NaN).

Everything is computed in float64 on logical NCHW / NCDHW arrays. The loops run over
kernel taps only; batch, groups and channels are vectorised with ``numpy.einsum``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

Float64Array = NDArray[np.float64]


@dataclass(frozen=True)
class ConvParams:
    """Geometry of a convolution: one entry per spatial dimension."""

    padding: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1
    # True for cuDNN's CUDNN_CONVOLUTION mode (kernel flipped), False for
    # CUDNN_CROSS_CORRELATION.
    flip_kernel: bool = False

    def __post_init__(self) -> None:
        dims = len(self.padding)
        if len(self.stride) != dims or len(self.dilation) != dims:
            raise ValueError("padding, stride and dilation differ in length")
        if any(p < 0 for p in self.padding):
            raise ValueError(f"negative padding {self.padding}")
        if any(s < 1 for s in self.stride) or any(d < 1 for d in self.dilation):
            raise ValueError("stride and dilation must be positive")
        if self.groups < 1:
            raise ValueError(f"groups must be positive, got {self.groups}")

    @property
    def spatial_dims(self) -> int:
        return len(self.padding)


def output_shape(
    x_shape: Sequence[int], w_shape: Sequence[int], params: ConvParams
) -> tuple[int, ...]:
    """Shape (N, K, *out) of the forward output, as cuDNN's forward-output-dim query."""
    _check_shapes(x_shape, w_shape, params)
    out = []
    for size, kernel, pad, stride, dil in zip(
        x_shape[2:],
        w_shape[2:],
        params.padding,
        params.stride,
        params.dilation,
        strict=True,
    ):
        extent = (kernel - 1) * dil + 1
        length = (size + 2 * pad - extent) // stride + 1
        if length < 1:
            raise ValueError(f"empty output along a spatial dimension of {x_shape}")
        out.append(length)
    return (x_shape[0], w_shape[0], *out)


def conv_forward(x: ArrayLike, w: ArrayLike, params: ConvParams) -> Float64Array:
    """Forward convolution ``y = conv(x, w)`` in float64 (the adjoint of dgrad)."""
    x64 = np.asarray(x, dtype=np.float64)
    w64 = np.asarray(w, dtype=np.float64)
    y_shape = output_shape(x64.shape, w64.shape, params)
    n, c = x64.shape[:2]
    k = w64.shape[0]
    g = params.groups
    xg = x64.reshape(n, g, c // g, *x64.shape[2:])
    wg = _oriented_filter(w64, params).reshape(g, k // g, c // g, *w64.shape[2:])
    y = np.zeros((n, g, k // g, *y_shape[2:]))
    for taps in itertools.product(*(range(r) for r in w64.shape[2:])):
        windows = _tap_windows(taps, x64.shape[2:], y_shape[2:], params)
        if windows is None:
            continue
        in_slices, out_slices = windows
        w_tap = wg[_tap_index(taps)]  # (g, k/g, c/g)
        x_part = xg[(slice(None), slice(None), slice(None), *in_slices)]
        y[(slice(None), slice(None), slice(None), *out_slices)] += np.einsum(
            "gkc,ngc...->ngk...", w_tap, x_part
        )
    return y.reshape(y_shape)


def conv_backward_data(
    w: ArrayLike,
    dy: ArrayLike,
    x_shape: Sequence[int],
    params: ConvParams,
    *,
    alpha: float = 1.0,
    beta: float = 0.0,
    dx: ArrayLike | None = None,
) -> Float64Array:
    """``alpha * dgrad(w, dy) + beta * dx`` in float64; ``dx`` is ignored if beta == 0.

    ``x_shape`` is the logical (N, C, *spatial) shape of ``dx``: with a stride above
    one several input sizes give the same ``dy``, so it cannot be derived from ``dy``.
    """
    w64 = np.asarray(w, dtype=np.float64)
    dy64 = np.asarray(dy, dtype=np.float64)
    x_shape = tuple(int(s) for s in x_shape)
    expected_dy = output_shape(x_shape, w64.shape, params)
    if dy64.shape != expected_dy:
        raise ValueError(
            f"dy has shape {dy64.shape}, the convolution gives {expected_dy}"
        )
    n, c = x_shape[:2]
    k = w64.shape[0]
    g = params.groups
    spatial = x_shape[2:]
    dyg = dy64.reshape(n, g, k // g, *dy64.shape[2:])
    wg = _oriented_filter(w64, params).reshape(g, k // g, c // g, *w64.shape[2:])
    grad = np.zeros((n, g, c // g, *spatial))
    for taps in itertools.product(*(range(r) for r in w64.shape[2:])):
        windows = _tap_windows(taps, spatial, dy64.shape[2:], params)
        if windows is None:
            continue
        in_slices, out_slices = windows
        w_tap = wg[_tap_index(taps)]  # (g, k/g, c/g)
        dy_part = dyg[(slice(None), slice(None), slice(None), *out_slices)]
        # For a fixed tap, output position o maps to one input position, and distinct
        # o map to distinct inputs, so a strided slice receives the whole tap at once.
        grad[(slice(None), slice(None), slice(None), *in_slices)] += np.einsum(
            "gkc,ngk...->ngc...", w_tap, dy_part
        )
    result = float(alpha) * grad.reshape(x_shape)
    if beta != 0.0:
        if dx is None:
            raise ValueError("beta != 0 needs the old dx")
        old = np.asarray(dx, dtype=np.float64)
        if old.shape != x_shape:
            raise ValueError(f"dx has shape {old.shape}, expected {x_shape}")
        result = result + float(beta) * old
    return result


def _check_shapes(
    x_shape: Sequence[int], w_shape: Sequence[int], params: ConvParams
) -> None:
    dims = params.spatial_dims
    if len(x_shape) != dims + 2 or len(w_shape) != dims + 2:
        raise ValueError(f"shapes {x_shape}, {w_shape} do not have {dims} spatial dims")
    if any(s < 1 for s in x_shape) or any(s < 1 for s in w_shape):
        raise ValueError(f"empty shape in {x_shape}, {w_shape}")
    g = params.groups
    if x_shape[1] % g or w_shape[0] % g or w_shape[1] * g != x_shape[1]:
        raise ValueError(
            f"groups={g} does not fit {x_shape[1]} input channels and filter {w_shape}"
        )


def _tap_index(taps: Sequence[int]) -> tuple[Any, ...]:
    """Index of one kernel tap in a (..., *kernel) filter."""
    return (Ellipsis, *taps)


def _oriented_filter(w: Float64Array, params: ConvParams) -> Float64Array:
    if not params.flip_kernel:
        return w
    spatial_axes = tuple(range(2, w.ndim))
    return np.flip(w, axis=spatial_axes)


def _tap_windows(
    taps: Sequence[int],
    in_spatial: Sequence[int],
    out_spatial: Sequence[int],
    params: ConvParams,
) -> tuple[list[slice], list[slice]] | None:
    """Slices of input and output positions linked by one kernel tap.

    Along each axis, output position ``o`` reads input ``i = o*stride + r*dil - pad``;
    the valid ``o`` (those with ``0 <= i < size``) form one contiguous range, and the
    matching ``i`` a strided range. ``None`` when the tap touches only padding.
    """
    in_slices: list[slice] = []
    out_slices: list[slice] = []
    for r, size, out_len, pad, stride, dil in zip(
        taps,
        in_spatial,
        out_spatial,
        params.padding,
        params.stride,
        params.dilation,
        strict=True,
    ):
        shift = r * dil - pad
        o_first = max(0, -(shift // stride))  # ceil(-shift / stride)
        o_last = min(out_len - 1, (size - 1 - shift) // stride)
        if o_last < o_first:
            return None
        out_slices.append(slice(o_first, o_last + 1))
        i_first = o_first * stride + shift
        i_last = o_last * stride + shift
        in_slices.append(slice(i_first, i_last + 1, stride))
    return in_slices, out_slices
