"""Rows of the README's bad-input matrix not covered elsewhere: each provokes its error
(or, for non-finite inputs, checks they propagate) on the CPU device."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

import cudnn_rs as cd


def small_problem(h: cd.Handle, rng: np.random.Generator):
    w = cd.Filter.from_numpy(h, rng.standard_normal((4, 2, 3, 3)).astype(np.float32))
    dy = cd.Tensor.from_numpy(h, rng.standard_normal((1, 4, 5, 5)).astype(np.float32))
    conv = cd.ConvolutionDescriptor((1, 1))
    return w, dy, conv


@pytest.mark.parametrize(
    "shape",
    [(2**16, 2**16, 1, 1), (2**11, 2**10, 2**10, 1), (1, 1, 2**31, 1)],
    ids=["2^32", "2^31", "dim-2^31"],
)
def test_element_counts_past_cudnns_32_bit_limit(
    cpu: cd.Handle, shape: tuple[int, ...]
) -> None:
    with pytest.raises(cd.ShapeError, match=r"elements|dimension"):
        cd.Tensor.empty(cpu, shape)


@pytest.mark.parametrize("pad", [2**31, 2**40])
def test_huge_padding(pad: int) -> None:
    with pytest.raises(cd.ShapeError, match="padding"):
        cd.ConvolutionDescriptor((pad, 0))


@pytest.mark.parametrize("stride", [(-1, 1), (0, 1)])
def test_negative_or_zero_stride(stride: tuple[int, int]) -> None:
    with pytest.raises(cd.ShapeError, match="stride"):
        cd.ConvolutionDescriptor((0, 0), stride=stride)


@pytest.mark.parametrize("dilation", [(-2, 1), (0, 1)])
def test_negative_or_zero_dilation(dilation: tuple[int, int]) -> None:
    with pytest.raises(cd.ShapeError, match="dilation"):
        cd.ConvolutionDescriptor((0, 0), dilation=dilation)


# bool is refused though Python counts it an int: `True` as a scale is a slip, not intent.
@pytest.mark.parametrize("bad", ["1.0", None, [1.0], 1j, True, np.bool_(False)])
def test_alpha_and_beta_of_the_wrong_type(
    cpu: cd.Handle, rng: np.random.Generator, bad: object
) -> None:
    w, dy, conv = small_problem(cpu, rng)
    dx = cd.Tensor.from_numpy(cpu, np.full((1, 2, 5, 5), 7.0, dtype=np.float32))
    for args in ((bad, 0.0), (1.0, bad)):
        with pytest.raises(TypeError) as info:
            cpu.convolution_backward_data(
                args[0], w, dy, conv, cd.DataAlgo1(), None, args[1], dx
            )
        assert not isinstance(info.value, cd.CudnnRsError)
    assert np.all(dx.to_numpy() == 7.0), "a refused call wrote dx"


def test_alpha_and_beta_past_a_doubles_range_are_an_overflow(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    w, dy, conv = small_problem(cpu, rng)
    dx = cd.Tensor.from_numpy(cpu, np.full((1, 2, 5, 5), 7.0, dtype=np.float32))
    for args, name in (((10**400, 0.0), "alpha"), ((1.0, -(10**400)), "beta")):
        with pytest.raises(OverflowError, match=f"^{name} is too large"):
            cpu.convolution_backward_data(
                args[0], w, dy, conv, cd.DataAlgo1(), None, args[1], dx
            )
    assert np.all(dx.to_numpy() == 7.0), "a refused call wrote dx"
    # Real numbers of other types that fit are taken: NumPy scalars and Fractions.
    ref = cd.Tensor.empty(cpu, (1, 2, 5, 5), dtype=cd.f32)
    cpu.convolution_backward_data(0.5, w, dy, conv, cd.DataAlgo1(), None, 0.0, ref)
    for alpha in (np.float32(0.5), np.float64(0.5), Fraction(1, 2)):
        out = cd.Tensor.from_numpy(cpu, np.full((1, 2, 5, 5), np.nan, dtype=np.float32))
        cpu.convolution_backward_data(alpha, w, dy, conv, cd.DataAlgo1(), None, 0, out)
        np.testing.assert_allclose(out.to_numpy(), ref.to_numpy(), rtol=1e-6, atol=1e-6)


def test_nan_and_inf_inputs_propagate(cpu: cd.Handle, rng: np.random.Generator) -> None:
    w_np = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    dy_np = rng.standard_normal((1, 4, 5, 5)).astype(np.float32)
    dy_np[0, 0, 2, 2] = np.nan
    dy_np[0, 1, 0, 0] = np.inf
    w = cd.Filter.from_numpy(cpu, w_np)
    dy = cd.Tensor.from_numpy(cpu, dy_np)
    dx = cd.convolution_backward_data(
        cpu, w, dy, cd.ConvolutionDescriptor((1, 1)), x_shape=(1, 2, 5, 5)
    ).to_numpy()
    # The NaN at (2, 2) reaches every dx pixel within the 3x3 window around it; the far
    # corner (4, 4) is reached only by the infinite entry's window, which it is not in.
    assert np.all(np.isnan(dx[0, :, 1:4, 1:4]))
    assert np.isfinite(dx[0, 0, 4, 4])


def test_tensors_outlive_their_handle(cpu: cd.Handle, rng: np.random.Generator) -> None:
    h = cd.Handle(device="cpu")
    w, dy, conv = small_problem(h, rng)
    want = cd.convolution_backward_data(cpu, w, dy, conv, x_shape=(1, 2, 5, 5))
    del h
    other = cd.Handle(device="cpu")
    got = cd.convolution_backward_data(other, w, dy, conv, x_shape=(1, 2, 5, 5))
    np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())


def test_negative_workspace_size(cpu: cd.Handle) -> None:
    with pytest.raises(cd.ShapeError, match=r"workspace size must be >= 0, got -1$"):
        cd.Workspace(cpu, -1)


@pytest.mark.parametrize("size", [2**62, 2**63 - 1])
def test_a_workspace_the_host_cannot_hold_is_out_of_memory(
    cpu: cd.Handle, size: int
) -> None:
    # The CPU device's calls use no workspace, but a size no memory holds fails as on a
    # GPU: DeviceMemoryError, also a MemoryError, naming the size.
    with pytest.raises(cd.DeviceMemoryError, match=str(size)) as caught:
        cd.Workspace(cpu, size)
    assert isinstance(caught.value, MemoryError)
    # A size the host holds is fine, and reports its bytes.
    assert cd.Workspace(cpu, 1 << 20).nbytes == 1 << 20


@pytest.mark.parametrize(
    "device, error, message",
    [
        (-1, ValueError, "device ordinal must be >= 0, got -1"),
        ("CPU", ValueError, 'unknown device "CPU"'),
        ("cuda:x", ValueError, 'unknown device "cuda:x"'),
        (1.5, TypeError, "device must be an int ordinal"),
        (True, TypeError, "not a bool"),
    ],
)
def test_bad_device_arguments_are_refused_before_any_gpu_work(
    device: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        cd.Handle(device=device)  # type: ignore[arg-type]


@pytest.mark.parametrize("big", [2**63, 2**64, 2**100])
def test_ints_beyond_64_bits_are_out_of_range_like_any_other(
    cpu: cd.Handle, big: int
) -> None:
    """A Python int has no bound: one past int64 is a ShapeError naming the range, as
    2**62 is, not a TypeError ("not a tuple of ints") or an OverflowError."""
    w = cd.Filter.zeros(cpu, (4, 3, 3, 3))
    dy = cd.Tensor.zeros(cpu, (2, 4, 6, 6))
    conv = cd.ConvolutionDescriptor((0, 0))
    calls = {
        "one-call x_shape": lambda: cd.convolution_backward_data(
            cpu, w, dy, conv, x_shape=(2, 3, big, 8)
        ),
        "Tensor.zeros": lambda: cd.Tensor.zeros(cpu, (2, 3, big, 5)),
        "Filter.empty": lambda: cd.Filter.empty(cpu, [big, 3, 3, 3]),
        "padding": lambda: cd.ConvolutionDescriptor((big, 0)),
        "stride": lambda: cd.ConvolutionDescriptor((0, 0), stride=(1, big)),
        "dilation": lambda: cd.ConvolutionDescriptor((0, 0), dilation=big),
    }
    for call in calls.values():
        with pytest.raises(cd.ShapeError, match=r"must be in \[[01], 2147483647\]"):
            call()
    with pytest.raises(cd.ShapeError, match=r"workspace size must be in \[0, "):
        cd.Workspace(cpu, big)
    # Not ints at all: still a TypeError.
    with pytest.raises(TypeError, match="x_shape must be a tuple of ints"):
        cd.convolution_backward_data(cpu, w, dy, conv, x_shape=(2, 3, big, "8"))


@pytest.mark.parametrize(
    ("passed", "ours"),
    [(np.float32, "f32"), (np.float64, "f64"), (np.dtype(np.int8), "i8")],
)
def test_a_numpy_type_as_dtype_is_named_with_the_marker_to_use(
    cpu: cd.Handle, passed: object, ours: str
) -> None:
    for call in (
        lambda: cd.Tensor.zeros(cpu, (1, 1, 1, 1), dtype=passed),  # type: ignore[call-overload]
        lambda: cd.ConvolutionDescriptor((0, 0), comp_type=passed),  # type: ignore[call-overload]
    ):
        with pytest.raises(TypeError) as excinfo:
            call()
        msg = str(excinfo.value)
        assert "attribute" not in msg and "of shape" not in msg, msg
        assert "numpy" in msg and f"use cudnn_rs.{ours}" in msg, msg
        assert "cudnn_rs.f32" in msg and "cudnn_rs.i64" in msg, msg


@pytest.mark.parametrize("comp", ["i8", "u8", "i64"])
def test_a_compute_type_cudnn_does_not_take_is_an_unsupported_configuration(
    comp: str,
) -> None:
    with pytest.raises(cd.UnsupportedConfigurationError, match="compute type") as e:
        cd.ConvolutionDescriptor((0, 0), comp_type=getattr(cd, comp))
    assert isinstance(e.value, TypeError) and not isinstance(e.value, ValueError)


def test_cudnn_error_made_in_python_has_a_status() -> None:
    """The stub declares ``status: str`` on every CudnnError, also one a test makes to
    fake a cuDNN failure."""
    e = cd.CudnnError("cuDNN failed")
    assert e.status == ""
    assert isinstance(e.status, str)
    e.status = "CUDNN_STATUS_NOT_SUPPORTED"
    assert e.status == "CUDNN_STATUS_NOT_SUPPORTED"
    assert cd.CudnnError("another").status == ""
