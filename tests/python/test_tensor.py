"""Tensor and Filter on the CPU device: construction, properties, exact round trips."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from helpers import FLOAT_DTYPES, NUMPY_DTYPES, format_marker, nonzero_values
from numpy.typing import NDArray

import cudnn_rs as cd
from reference import ConvParams, conv_backward_data

SHAPES = {4: (2, 3, 4, 5), 5: (2, 3, 2, 4, 3)}
FORMATS = ("NCHW", "NHWC")
# Tensor and Filter share this API; Any keeps one test body for both classes.
CLASSES: dict[str, Any] = {"Tensor": cd.Tensor, "Filter": cd.Filter}


def random_array(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: str
) -> NDArray[np.generic]:
    """Values that exercise the whole type: the integer range, or floats of many
    magnitudes plus signed zero and infinities (every value distinct from zero fill)."""
    np_dtype = NUMPY_DTYPES[dtype]
    if dtype in FLOAT_DTYPES:
        values = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, size=shape)
        flat = values.reshape(-1)
        flat[:3] = [-0.0, np.inf, -np.inf]
        return values.astype(np_dtype)
    info = np.iinfo(np_dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=np_dtype)


def assert_bitwise_equal(
    actual: NDArray[np.generic], expected: NDArray[np.generic]
) -> None:
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.tobytes() == np.ascontiguousarray(expected).tobytes(), (
        "values changed in the round trip"
    )


@pytest.mark.parametrize("kind", list(CLASSES))
@pytest.mark.parametrize("rank", [4, 5])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES))
def test_from_numpy_round_trip(
    cpu: cd.Handle,
    rng: np.random.Generator,
    dtype: str,
    fmt: str,
    rank: int,
    kind: str,
) -> None:
    shape = SHAPES[rank]
    host = random_array(rng, shape, dtype)
    obj = CLASSES[kind].from_numpy(cpu, host, format=format_marker(fmt))
    assert obj.shape == shape
    assert obj.ndim == rank
    assert obj.dtype == getattr(cd, dtype)
    assert obj.dtype.name == dtype
    assert obj.format is getattr(cd, fmt)
    assert obj.device == "cpu"
    assert obj.nbytes == math.prod(shape) * NUMPY_DTYPES[dtype].itemsize
    back = obj.to_numpy()
    assert isinstance(back, np.ndarray)
    assert back.flags.c_contiguous
    assert_bitwise_equal(back, host)


@pytest.mark.parametrize("kind", list(CLASSES))
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES))
def test_zeros(cpu: cd.Handle, dtype: str, fmt: str, kind: str) -> None:
    shape = (1, 2, 3, 4)
    obj = CLASSES[kind].zeros(
        cpu, shape, dtype=getattr(cd, dtype), format=getattr(cd, fmt)
    )
    assert obj.shape == shape
    assert obj.dtype == getattr(cd, dtype)
    assert obj.format is getattr(cd, fmt)
    assert obj.nbytes == math.prod(shape) * NUMPY_DTYPES[dtype].itemsize
    back = obj.to_numpy()
    assert back.dtype == NUMPY_DTYPES[dtype]
    assert back.shape == shape
    assert not np.any(back.astype(np.float64)), "zeros() holds non-zero values"
    if dtype in FLOAT_DTYPES:
        assert not np.any(np.signbit(back.astype(np.float64))), "zeros() holds -0.0"


@pytest.mark.parametrize("kind", list(CLASSES))
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 2, 3, 4, 5)])
def test_empty_has_shape_dtype_format(
    cpu: cd.Handle, shape: tuple[int, ...], kind: str
) -> None:
    obj = CLASSES[kind].empty(cpu, shape, dtype=cd.f16, format=cd.NHWC)
    assert obj.shape == shape
    assert obj.dtype == cd.f16
    assert obj.format is cd.NHWC
    assert obj.device == "cpu"
    assert obj.nbytes == math.prod(shape) * 2
    assert obj.to_numpy().shape == shape


def test_defaults_are_f32_nchw(cpu: cd.Handle) -> None:
    t = cd.Tensor.zeros(cpu, (1, 2, 3, 4))
    assert t.dtype == cd.f32 and t.format is cd.NCHW
    f = cd.Filter.zeros(cpu, (1, 2, 3, 4))
    assert f.dtype == cd.f32 and f.format is cd.NCHW
    host = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    assert cd.Tensor.from_numpy(cpu, host).format is cd.NCHW


def test_dtype_property_is_the_singleton(cpu: cd.Handle) -> None:
    t = cd.Tensor.zeros(cpu, (1, 1, 2, 2), dtype=cd.bf16)
    assert t.dtype is cd.bf16


def test_bf16_comes_back_as_ml_dtypes(cpu: cd.Handle) -> None:
    host = np.array([1.0, -2.5, 3.0e38, 1.0e-3], dtype=ml_dtypes.bfloat16).reshape(
        1, 1, 2, 2
    )
    back = cd.Tensor.from_numpy(cpu, host, format=cd.NHWC).to_numpy()
    assert back.dtype == np.dtype(ml_dtypes.bfloat16)
    assert_bitwise_equal(back, host)


def test_format_instances_are_accepted(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    host = random_array(rng, (1, 3, 2, 2), "f32")
    # The stubs ask for the class; an instance is accepted at run time too.
    t = cd.Tensor.from_numpy(cpu, host, format=cd.NHWC())  # type: ignore[call-overload]
    assert t.format is cd.NHWC
    assert_bitwise_equal(t.to_numpy(), host)


@pytest.mark.parametrize("fmt", FORMATS)
def test_strided_and_fortran_inputs(
    cpu: cd.Handle, rng: np.random.Generator, fmt: str
) -> None:
    base = random_array(rng, (3, 4, 6, 8), "f64")
    views = {
        "sliced": base[:, 1:, ::2, 1::3],
        "transposed": base.transpose(0, 1, 3, 2),
        "negative-stride": base[::-1, :, ::-1],
        "fortran": np.asfortranarray(base),
    }
    for name, view in views.items():
        t = cd.Tensor.from_numpy(cpu, view, format=getattr(cd, fmt))
        assert t.shape == view.shape, name
        back = t.to_numpy()
        assert back.flags.c_contiguous, name
        assert_bitwise_equal(back, view)


def test_from_numpy_copies(cpu: cd.Handle, rng: np.random.Generator) -> None:
    host = random_array(rng, (1, 2, 3, 3), "f32")
    original = host.copy()
    t = cd.Tensor.from_numpy(cpu, host)
    host[...] = 7.0
    assert_bitwise_equal(t.to_numpy(), original)


def test_to_numpy_returns_a_writable_copy(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    host = random_array(rng, (1, 2, 3, 3), "f32")
    t = cd.Tensor.from_numpy(cpu, host, format=cd.NHWC)
    back = t.to_numpy()
    assert back.flags.writeable, "to_numpy() returned a read-only array"
    back[...] = 9.0
    assert_bitwise_equal(t.to_numpy(), host)
    t_nchw = cd.Tensor.from_numpy(cpu, host)
    back = t_nchw.to_numpy()
    assert back.flags.writeable, "to_numpy() returned a read-only array"
    back[...] = 9.0
    assert_bitwise_equal(t_nchw.to_numpy(), host)


def test_nhwc_and_nchw_hold_the_same_logical_values(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    host = random_array(rng, (2, 5, 3, 4), "i32")
    nchw = cd.Tensor.from_numpy(cpu, host, format=cd.NCHW)
    nhwc = cd.Tensor.from_numpy(cpu, host, format=cd.NHWC)
    assert nchw.shape == nhwc.shape == host.shape
    assert_bitwise_equal(nhwc.to_numpy(), nchw.to_numpy())


@pytest.mark.parametrize(
    ("dtype", "fmt", "channels"),
    [("i8", "NCHWVectC8x4", 8), ("u8", "NCHWVectC8x4", 4), ("i8", "NCHWVectC8x32", 32)],
)
def test_vectorised_formats_round_trip(
    cpu: cd.Handle, rng: np.random.Generator, dtype: str, fmt: str, channels: int
) -> None:
    shape = (2, channels, 3, 2)
    host = random_array(rng, shape, dtype)
    t = cd.Tensor.from_numpy(cpu, host, format=getattr(cd, fmt))
    assert t.shape == shape
    assert t.format is getattr(cd, fmt)
    assert t.nbytes == math.prod(shape)
    assert_bitwise_equal(t.to_numpy(), host)


@pytest.mark.parametrize("kind", ["Tensor", "Filter"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "i32", "i64"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_from_numpy_of_non_native_byte_order_keeps_the_values(
    cpu: cd.Handle, rng: np.random.Generator, kind: str, dtype: str, fmt: str
) -> None:
    """An array stored in the other byte order ('>f4' on a little-endian machine) is
    copied by value, not by its raw bytes."""
    a = random_array(rng, SHAPES[4], dtype)
    swapped = a.astype(a.dtype.newbyteorder("S"))
    assert not swapped.dtype.isnative
    t = CLASSES[kind].from_numpy(cpu, swapped, format=format_marker(fmt))
    assert t.dtype.name == dtype
    np.testing.assert_array_equal(t.to_numpy(), a)


def test_from_numpy_of_non_native_byte_order_computes_right(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    """The swapped operands of a backward-data call give the NumPy float64 reference."""
    w = nonzero_values(rng, (3, 2, 3, 3), "f64")
    dy = nonzero_values(rng, (2, 3, 4, 4), "f64")
    p = ConvParams((1, 1), (1, 1), (1, 1), 1)
    ref = conv_backward_data(w, dy, (2, 2, 4, 4), p)
    wt = cd.Filter.from_numpy(cpu, w.astype(">f8"))
    dyt = cd.Tensor.from_numpy(cpu, dy.astype(">f8"))
    conv = cd.ConvolutionDescriptor((1, 1), comp_type=cd.f64)
    dx = cd.convolution_backward_data(cpu, wt, dyt, conv, x_shape=(2, 2, 4, 4))
    np.testing.assert_allclose(dx.to_numpy(), ref, rtol=1e-12, atol=1e-12)
