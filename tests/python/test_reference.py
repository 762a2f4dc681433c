"""Checks of the NumPy oracle itself, against formulations it does not share code with.

These do not touch cudnn_rs: if the oracle were wrong, every numerics test would judge
the package against the wrong answer.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from numpy.typing import NDArray

from reference import ConvParams, conv_backward_data, conv_forward, output_shape


def naive_forward(
    x: NDArray[np.float64], w: NDArray[np.float64], params: ConvParams
) -> NDArray[np.float64]:
    """The forward definition as scalar loops over every index (tiny shapes only)."""
    y_shape = output_shape(x.shape, w.shape, params)
    y = np.zeros(y_shape)
    kernel = w.shape[2:]
    c_per_group = x.shape[1] // params.groups
    k_per_group = w.shape[0] // params.groups
    for n, k in itertools.product(range(y_shape[0]), range(y_shape[1])):
        group = k // k_per_group
        for o in itertools.product(*(range(s) for s in y_shape[2:])):
            total = 0.0
            for c_local in range(c_per_group):
                c = group * c_per_group + c_local
                for r in itertools.product(*(range(s) for s in kernel)):
                    i = _input_index(o, r, params)
                    if not all(0 <= i[d] < x.shape[2 + d] for d in range(len(i))):
                        continue
                    tap = r
                    if params.flip_kernel:
                        tap = tuple(kernel[d] - 1 - r[d] for d in range(len(r)))
                    total += x[(n, c, *i)] * w[(k, c_local, *tap)]
            y[(n, k, *o)] = total
    return y


def _input_index(
    o: tuple[int, ...], r: tuple[int, ...], params: ConvParams
) -> tuple[int, ...]:
    """i = o * stride - pad + r * dilation, per spatial dimension."""
    return tuple(
        o[d] * params.stride[d] - params.padding[d] + r[d] * params.dilation[d]
        for d in range(params.spatial_dims)
    )


GEOMETRIES = {
    "plain-2d": ((1, 2, 5, 4), (3, 2, 3, 2), ConvParams((1, 0), (1, 1), (1, 1))),
    "stride-pad-2d": ((2, 2, 7, 6), (2, 2, 3, 3), ConvParams((1, 2), (2, 3), (1, 1))),
    "dilation-2d": ((1, 1, 8, 7), (2, 1, 3, 2), ConvParams((2, 1), (1, 2), (2, 3))),
    "groups-2d": ((2, 4, 5, 5), (6, 2, 2, 3), ConvParams((0, 1), (1, 1), (1, 1), 2)),
    "depthwise-2d": ((1, 3, 6, 5), (6, 1, 3, 3), ConvParams((1, 1), (2, 1), (1, 1), 3)),
    "flipped-2d": (
        (1, 2, 5, 6),
        (2, 2, 3, 2),
        ConvParams((1, 1), (1, 2), (1, 2), flip_kernel=True),
    ),
    "3d": (
        (1, 2, 4, 5, 3),
        (2, 1, 2, 3, 2),
        ConvParams((1, 0, 1), (1, 2, 1), (1, 1, 2), 2),
    ),
    "flipped-3d": (
        (1, 1, 4, 4, 4),
        (2, 1, 3, 2, 2),
        ConvParams((1, 1, 0), (2, 1, 1), (1, 1, 1), flip_kernel=True),
    ),
}


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_forward_matches_scalar_loops(name: str, rng: np.random.Generator) -> None:
    x_shape, w_shape, params = GEOMETRIES[name]
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape)
    np.testing.assert_allclose(
        conv_forward(x, w, params), naive_forward(x, w, params), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_backward_data_is_the_adjoint_of_forward(
    name: str, rng: np.random.Generator
) -> None:
    # <conv(x, w), dy> == <x, dgrad(w, dy)> for all x, dy: the defining property of
    # the gradient of a linear map, checked against the scalar forward loops.
    x_shape, w_shape, params = GEOMETRIES[name]
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape)
    dy = rng.standard_normal(output_shape(x_shape, w_shape, params))
    lhs = float(np.sum(naive_forward(x, w, params) * dy))
    rhs = float(np.sum(x * conv_backward_data(w, dy, x_shape, params)))
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-10)


def test_backward_data_matches_unit_vector_gradients(rng: np.random.Generator) -> None:
    # Column by column: dgrad(w, dy)[i] = <conv(e_i, w), dy>.
    x_shape = (1, 2, 4, 3)
    w_shape = (2, 1, 2, 2)
    params = ConvParams((1, 0), (2, 1), (1, 2), groups=2)
    w = rng.standard_normal(w_shape)
    dy = rng.standard_normal(output_shape(x_shape, w_shape, params))
    expected = np.zeros(x_shape)
    for index in itertools.product(*(range(s) for s in x_shape)):
        unit = np.zeros(x_shape)
        unit[index] = 1.0
        expected[index] = np.sum(naive_forward(unit, w, params) * dy)
    np.testing.assert_allclose(
        conv_backward_data(w, dy, x_shape, params), expected, atol=1e-12
    )


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_one_dimensional_case_is_full_convolution(
    pad: int, rng: np.random.Generator
) -> None:
    # With one channel and a 1-wide second axis, the gradient of a cross-correlation
    # is numpy's full convolution of dy with the kernel, cropped by the padding.
    width, taps = 7, 3
    w = rng.standard_normal(taps)
    params = ConvParams((0, pad), (1, 1), (1, 1))
    out_len = width + 2 * pad - taps + 1
    dy = rng.standard_normal(out_len)
    dx = conv_backward_data(
        w.reshape(1, 1, 1, taps), dy.reshape(1, 1, 1, out_len), (1, 1, 1, width), params
    )
    full = np.convolve(dy, w, mode="full")  # length width + 2 * pad
    np.testing.assert_allclose(dx.reshape(width), full[pad : pad + width], atol=1e-12)


def test_hand_computed_example() -> None:
    # x is 1x1x3x3, w is 1x1x2x2 of [[1, 2], [3, 4]], no padding, stride 1: dy is
    # 2x2. Each dy entry spreads w over the 2x2 window it came from.
    w = np.array([[1.0, 2.0], [3.0, 4.0]]).reshape(1, 1, 2, 2)
    dy = np.array([[1.0, 0.0], [0.0, 10.0]]).reshape(1, 1, 2, 2)
    params = ConvParams((0, 0), (1, 1), (1, 1))
    expected = np.array(
        [
            [1.0, 2.0, 0.0],
            [3.0, 4.0 + 10.0, 20.0],
            [0.0, 30.0, 40.0],
        ]
    )
    dx = conv_backward_data(w, dy, (1, 1, 3, 3), params)
    np.testing.assert_array_equal(dx.reshape(3, 3), expected)
    flipped = ConvParams((0, 0), (1, 1), (1, 1), flip_kernel=True)
    expected_flipped = np.array(
        [
            [4.0, 3.0, 0.0],
            [2.0, 1.0 + 40.0, 30.0],
            [0.0, 20.0, 10.0],
        ]
    )
    dx = conv_backward_data(w, dy, (1, 1, 3, 3), flipped)
    np.testing.assert_array_equal(dx.reshape(3, 3), expected_flipped)


def test_alpha_beta_blend_and_beta_zero_ignores_nan(rng: np.random.Generator) -> None:
    x_shape = (1, 2, 4, 4)
    w = rng.standard_normal((3, 2, 3, 3))
    params = ConvParams((1, 1), (1, 1), (1, 1))
    dy = rng.standard_normal(output_shape(x_shape, w.shape, params))
    grad = conv_backward_data(w, dy, x_shape, params)
    old = rng.standard_normal(x_shape)
    blended = conv_backward_data(w, dy, x_shape, params, alpha=0.5, beta=-2.0, dx=old)
    np.testing.assert_allclose(blended, 0.5 * grad - 2.0 * old, rtol=1e-14)
    poisoned = np.full(x_shape, np.nan)
    overwritten = conv_backward_data(
        w, dy, x_shape, params, alpha=2.0, beta=0.0, dx=poisoned
    )
    assert np.all(np.isfinite(overwritten))
    np.testing.assert_allclose(overwritten, 2.0 * grad, rtol=1e-14)


def test_output_shape_formula() -> None:
    params = ConvParams((1, 0), (2, 3), (1, 2))
    # H: (9 + 2 - 3) // 2 + 1 = 5;  W: (10 + 0 - 5) // 3 + 1 = 2
    assert output_shape((4, 6, 9, 10), (8, 6, 3, 3), params) == (4, 8, 5, 2)
    with pytest.raises(ValueError):
        output_shape((1, 6, 9, 10), (8, 4, 3, 3), params)  # 4 != 6 channels
    with pytest.raises(ValueError):
        output_shape((1, 1, 2, 2), (1, 1, 5, 5), ConvParams((0, 0), (1, 1), (1, 1)))
