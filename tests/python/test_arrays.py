"""``conv_input_grad`` on the CPU device (NumPy, JAX on the CPU, cudnn_rs operands,
PyTorch CPU tensors where PyTorch is installed), its bad inputs, ``__array__``, the
argument errors that say what to do, and ``python -m cudnn_rs info``.

Expected values come from ``reference.py`` (NumPy, float64); outputs are poisoned
with NaN first, so that an unwritten element fails.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from helpers import NUMPY_DTYPES, assert_close, nonzero_values
from numpy.typing import NDArray

import cudnn_rs as cd
from cudnn_rs import _arrays
from reference import ConvParams, conv_backward_data, output_shape

# (x shape, w shape, stride, padding, dilation, groups)
CASES = [
    ((2, 4, 9, 8), (6, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 6, 11, 10), (4, 3, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((2, 2, 5, 6, 5), (3, 2, 3, 3, 2), (1, 2, 1), (1, 1, 0), (1, 1, 1), 1),
]


def _case(
    rng: np.random.Generator, case: Any, dtype: str = "f64"
) -> tuple[NDArray[Any], NDArray[Any], tuple[int, ...], ConvParams, NDArray[Any]]:
    x_shape, w_shape, stride, padding, dilation, groups = case
    params = ConvParams(padding, stride, dilation, groups)
    dy_shape = output_shape(x_shape, w_shape, params)
    w = nonzero_values(rng, w_shape, dtype)
    dy = nonzero_values(rng, dy_shape, dtype)
    ref = conv_backward_data(
        w.astype(np.float64), dy.astype(np.float64), x_shape, params
    )
    return w, dy, x_shape, params, ref


def _channels_last(a: NDArray[Any]) -> NDArray[Any]:
    nd = a.ndim
    phys = np.ascontiguousarray(a.transpose(0, *range(2, nd), 1))
    return phys.transpose(0, nd - 1, *range(1, nd - 1))


@pytest.mark.parametrize("case", CASES, ids=["2d", "2d-strided-grouped", "3d"])
@pytest.mark.parametrize("dtype", ["f64", "f32", "f16", "bf16"])
def test_numpy_in_numpy_out(rng: np.random.Generator, case: Any, dtype: str) -> None:
    w, dy, x_shape, p, ref = _case(rng, case, dtype)
    gx = cd.conv_input_grad(x_shape, w, dy, p.stride, p.padding, p.dilation, p.groups)
    assert isinstance(gx, np.ndarray)
    assert gx.dtype == dy.dtype and gx.shape == x_shape
    assert_close(gx, ref, dtype, "conv_input_grad(numpy)")


@pytest.mark.parametrize("case", CASES, ids=["2d", "2d-strided-grouped", "3d"])
def test_channels_last_in_channels_last_out(
    rng: np.random.Generator, case: Any
) -> None:
    w, dy, x_shape, p, ref = _case(rng, case, "f32")
    dy_cl = _channels_last(dy)
    assert not dy_cl.flags.c_contiguous
    gx = cd.conv_input_grad(
        x_shape, _channels_last(w), dy_cl, p.stride, p.padding, p.dilation, p.groups
    )
    # The result is channels-last like grad_output: channels vary fastest.
    assert gx.strides[1] == gx.itemsize
    assert_close(gx, ref, "f32", "channels-last conv_input_grad")


def test_bfloat16_numpy_arrays_in_either_layout_and_out(
    rng: np.random.Generator,
) -> None:
    """ml_dtypes' bfloat16 arrays, which DLPack cannot carry: copied in and out, with
    the same layouts, ``out=`` and refusals as the shared dtypes."""
    w, dy, x_shape, p, ref = _case(rng, CASES[1], "bf16")
    args = (p.stride, p.padding, p.dilation, p.groups)
    gx = cd.conv_input_grad(x_shape, _channels_last(w), _channels_last(dy), *args)
    assert gx.dtype == dy.dtype and gx.strides[1] == gx.itemsize
    assert_close(gx, ref, "bf16", "channels-last bfloat16 conv_input_grad")
    out = np.full(x_shape, np.nan, dtype=dy.dtype)
    assert cd.conv_input_grad(x_shape, w, dy, *args, out=out) is out
    assert_close(out, ref, "bf16", "bfloat16 out=")
    for bad, error in [
        (np.full(x_shape, np.nan, np.float32), cd.UnsupportedConfigurationError),
        (np.full((*x_shape[:3], 2 * x_shape[3]), 7, dy.dtype)[..., ::2], cd.ShapeError),
    ]:
        before = bad.copy()
        with pytest.raises(error):
            cd.conv_input_grad(x_shape, w, dy, *args, out=bad)
        np.testing.assert_array_equal(bad, before)
    # A strided view (any NumPy array is taken): copied first, the same values.
    view = np.repeat(dy, 2, axis=3)[..., ::2]
    gx = cd.conv_input_grad(x_shape, w, view, *args)
    assert_close(gx, ref, "bf16", "bfloat16 grad_output as a strided view")


def test_depthwise_filter_follows_a_channels_last_grad_output(
    rng: np.random.Generator,
) -> None:
    """A depthwise filter (K x 1 x R x S) is dense in both layouts; with a channels-last
    grad_output it runs as NHWC too (no mixed layouts), from either layout."""
    x_shape, w_shape = (2, 6, 7, 8), (6, 1, 3, 3)
    p = ConvParams((1, 1), (1, 1), (1, 1), 6)
    w = nonzero_values(rng, w_shape, "f32")
    dy = nonzero_values(rng, output_shape(x_shape, w_shape, p), "f32")
    ref = conv_backward_data(w, dy, x_shape, p)
    for weight in (w, _channels_last(w)):
        gx = cd.conv_input_grad(x_shape, weight, _channels_last(dy), 1, 1, 1, 6)
        assert gx.strides[1] == gx.itemsize
        assert_close(gx, ref, "f32", "depthwise, channels-last grad_output")


def test_ints_and_tuples_mean_the_same(rng: np.random.Generator) -> None:
    w, dy, x_shape, _p, ref = _case(rng, CASES[0])
    a = cd.conv_input_grad(x_shape, w, dy, 1, 1, 1, 1)
    b = cd.conv_input_grad(list(x_shape), w, dy, (1, 1), [1, 1], (1,), groups=1)
    assert_close(a, ref, "f64", "ints")
    assert_close(b, ref, "f64", "tuples")


def test_convolution_mode_flips_the_kernel(rng: np.random.Generator) -> None:
    x_shape, w_shape = (1, 3, 7, 6), (5, 3, 3, 2)
    params = ConvParams((1, 1), (1, 1), (1, 1), 1, flip_kernel=True)
    w = nonzero_values(rng, w_shape, "f64")
    dy = nonzero_values(rng, output_shape(x_shape, w_shape, params), "f64")
    gx = cd.conv_input_grad(x_shape, w, dy, 1, 1, mode=cd.ConvolutionMode.Convolution)
    assert_close(
        gx, conv_backward_data(w, dy, x_shape, params), "f64", "Convolution mode"
    )


def test_out_is_written_and_returned(rng: np.random.Generator) -> None:
    w, dy, x_shape, p, ref = _case(rng, CASES[1], "f32")
    out = np.full(x_shape, np.nan, dtype=np.float32)
    got = cd.conv_input_grad(
        x_shape, w, dy, p.stride, p.padding, p.dilation, p.groups, out=out
    )
    assert got is out
    assert_close(out, ref, "f32", "out=")


def test_explicit_algorithm_and_handle(
    rng: np.random.Generator, cpu: cd.Handle
) -> None:
    w, dy, x_shape, _p, ref = _case(rng, CASES[0], "f32")
    for algo in (cd.DataAlgo0(), cd.DataAlgo1(), cd.BestEngine()):
        gx = cd.conv_input_grad(x_shape, w, dy, 1, 1, algo=algo, handle=cpu)
        assert_close(gx, ref, "f32", f"algo={algo!r}")
    gx = cd.conv_input_grad(x_shape, w, dy, 1, 1, math=cd.MathType.Fma)
    assert_close(gx, ref, "f32", "math=Fma")


def test_benchmark_gives_the_same_gradient_and_refuses_a_handle(
    rng: np.random.Generator, cpu: cd.Handle
) -> None:
    """``benchmark=True`` (the measured tier on conv_input_grad's own handles): the same
    gradient (the CPU device has one algorithm); with ``handle=`` the handle's own
    setting decides, so both at once is refused, as is a non-bool."""
    w, dy, x_shape, _p, ref = _case(rng, CASES[1], "f32")
    args = (_p.stride, _p.padding, _p.dilation, _p.groups)
    gx = cd.conv_input_grad(x_shape, w, dy, *args, benchmark=True)
    assert_close(gx, ref, "f32", "benchmark=True")
    with pytest.raises(ValueError, match="Handle"):
        cd.conv_input_grad(x_shape, w, dy, *args, handle=cpu, benchmark=True)
    with pytest.raises(TypeError, match="benchmark must be a bool"):
        cd.conv_input_grad(x_shape, w, dy, *args, benchmark=1)  # type: ignore[arg-type]


def test_cudnn_rs_operands_give_a_tensor(
    rng: np.random.Generator, cpu: cd.Handle
) -> None:
    w, dy, x_shape, _p, ref = _case(rng, CASES[0])
    gx = cd.conv_input_grad(
        x_shape, cd.Filter.from_numpy(cpu, w), cd.Tensor.from_numpy(cpu, dy), 1, 1
    )
    assert isinstance(gx, cd.Tensor)
    assert gx.device == "cpu"
    assert_close(gx.to_numpy(), ref, "f64", "cudnn_rs operands")
    # Operands from two libraries: a NumPy weight with a cudnn_rs grad_output.
    gx = cd.conv_input_grad(x_shape, w, cd.Tensor.from_numpy(cpu, dy), 1, 1)
    assert_close(np.asarray(gx), ref, "f64", "mixed libraries")


def test_jax_cpu_arrays_round_trip(rng: np.random.Generator) -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    w, dy, x_shape, _p, ref = _case(rng, CASES[0])
    gx = cd.conv_input_grad(x_shape, jnp.asarray(w), jnp.asarray(dy), 1, 1)
    assert isinstance(gx, jax.Array)
    assert gx.dtype == jnp.float64
    assert_close(np.asarray(gx), ref, "f64", "JAX CPU arrays")


def test_no_framework_is_imported() -> None:
    code = (
        "import sys, numpy as np, cudnn_rs as cd\n"
        "gx = cd.conv_input_grad((1, 2, 5, 5), np.ones((3, 2, 3, 3)), np.ones((1, 3, 3, 3)))\n"
        "assert gx.shape == (1, 2, 5, 5)\n"
        "print(sorted(m for m in ('torch', 'cupy', 'jax', 'cudnn_rs.torch') if m in sys.modules))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert res.stdout.strip() == "[]", res.stdout + res.stderr


# ---------------------------------------------------------------- bad input


def _poisoned(shape: tuple[int, ...], dtype: Any = np.float32) -> NDArray[Any]:
    return np.full(shape, np.nan, dtype=dtype)


def _untouched(out: NDArray[Any]) -> bool:
    return bool(np.isnan(out).all())


def test_a_shape_no_convolution_produces(rng: np.random.Generator) -> None:
    w = nonzero_values(rng, (6, 4, 3, 3), "f32")
    dy = nonzero_values(rng, (2, 6, 9, 8), "f32")
    out = _poisoned((2, 4, 9, 8))
    with pytest.raises(cd.ShapeError):  # padding 0 gives 7x6, not 9x8
        cd.conv_input_grad((2, 4, 9, 8), w, dy, 1, 0, out=out)
    assert _untouched(out)
    with pytest.raises(cd.ShapeError):  # channels: w has C/groups = 4, input 5
        cd.conv_input_grad((2, 5, 9, 8), w, dy, 1, 1)


@pytest.mark.parametrize("case", CASES, ids=["2d", "2d-strided-grouped", "3d"])
def test_numpy_operands_of_any_strides_are_taken(
    rng: np.random.Generator, case: Any
) -> None:
    # The contract takes any NumPy array: views that are neither contiguous nor
    # channels-last (a slice, a Fortran-ordered copy, a reversed view) are copied first
    # and give the same values; the operands are left as they were.
    w, dy, x_shape, p, ref = _case(rng, case, "f32")
    args = (p.stride, p.padding, p.dilation, p.groups)
    sliced = np.repeat(dy, 2, axis=-1)[..., ::2]
    reversed_w = np.ascontiguousarray(w[..., ::-1])[..., ::-1]
    for weight, grad in [
        (np.asfortranarray(w), sliced),
        (reversed_w, np.asfortranarray(dy)),
    ]:
        assert not grad.flags.c_contiguous and not weight.flags.c_contiguous
        before = (weight.copy(), grad.copy())
        out = _poisoned(x_shape)
        assert cd.conv_input_grad(x_shape, weight, grad, *args, out=out) is out
        assert_close(out, ref, "f32", "strided NumPy operands")
        np.testing.assert_array_equal(weight, before[0])
        np.testing.assert_array_equal(grad, before[1])
    # With a channels-last grad_output, a weight copied follows its layout; the result
    # is channels-last too.
    weight, grad = np.asfortranarray(w), _channels_last(dy)
    copied = _arrays._dense_input(
        weight, "numpy", _arrays._is_channels_last(grad, "numpy")
    )
    assert _arrays._numpy_layout(copied) is _arrays._NHWC or w.shape[1] == 1
    np.testing.assert_array_equal(copied, w)
    gx = cd.conv_input_grad(x_shape, weight, grad, *args)
    assert_close(gx, ref, "f32", "strided weight, channels-last grad_output")
    assert _arrays._numpy_layout(gx) is _arrays._NHWC


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
def test_integer_dtypes_are_refused(dtype: Any) -> None:
    w = np.ones((6, 4, 3, 3), dtype=dtype)
    dy = np.ones((2, 6, 9, 8), dtype=dtype)
    with pytest.raises(cd.UnsupportedConfigurationError, match="float32"):
        cd.conv_input_grad((2, 4, 9, 8), w, dy, 1, 1)


def test_mixed_dtypes_are_refused() -> None:
    w = np.ones((6, 4, 3, 3), dtype=np.float64)
    dy = np.ones((2, 6, 9, 8), dtype=np.float32)
    with pytest.raises(cd.UnsupportedConfigurationError, match="same dtype"):
        cd.conv_input_grad((2, 4, 9, 8), w, dy, 1, 1)


@pytest.mark.parametrize("rank", [3, 6])
def test_1d_and_4d_convolutions_are_refused(rank: int) -> None:
    w = np.ones((2, 2, *([3] * (rank - 2))), dtype=np.float32)
    dy = np.ones((1, 2, *([4] * (rank - 2))), dtype=np.float32)
    x_shape = (1, 2, *([4] * (rank - 2)))
    with pytest.raises(cd.ShapeError, match="rank 4 or 5"):
        cd.conv_input_grad(x_shape, w, dy, 1, 1)


def test_input_shape_of_the_wrong_rank() -> None:
    w, dy = np.ones((2, 2, 3, 3), np.float32), np.ones((1, 2, 4, 4), np.float32)
    with pytest.raises(cd.ShapeError, match="dimensions"):
        cd.conv_input_grad((1, 2, 4), w, dy, 1, 1)
    with pytest.raises(TypeError, match="input_shape"):
        cd.conv_input_grad((1, 2, 4.5, 4), w, dy, 1, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [1.0, [[1], [1]], "11", None])
def test_a_stride_that_is_no_int_or_sequence_of_ints_is_named(bad: Any) -> None:
    w, dy = np.ones((2, 3, 3, 3), np.float32), np.ones((1, 2, 4, 4), np.float32)
    with pytest.raises(TypeError, match=r"^stride must be an int or a tuple of 2 ints"):
        cd.conv_input_grad((1, 3, 6, 6), w, dy, stride=bad)


def test_stride_of_the_wrong_length() -> None:
    w, dy = np.ones((2, 2, 3, 3), np.float32), np.ones((1, 2, 4, 4), np.float32)
    with pytest.raises(cd.ShapeError, match="stride"):
        cd.conv_input_grad((1, 2, 4, 4), w, dy, (1, 1, 1), 1)


def test_weight_of_the_wrong_rank() -> None:
    w, dy = np.ones((2, 2, 3, 3, 3), np.float32), np.ones((1, 2, 4, 4), np.float32)
    with pytest.raises(cd.ShapeError, match="rank"):
        cd.conv_input_grad((1, 2, 4, 4), w, dy, 1, 1)


@pytest.mark.parametrize(
    "make_out, error",
    [
        (lambda: _poisoned((2, 4, 9, 9)), cd.ShapeError),
        (lambda: _poisoned((2, 4, 9, 8), np.float64), cd.UnsupportedConfigurationError),
        (lambda: np.full((2, 4, 9, 8), 7, np.int32), cd.UnsupportedConfigurationError),
        (lambda: _poisoned((2, 4, 9, 16))[..., ::2], cd.ShapeError),
    ],
    ids=["shape", "dtype", "int-dtype", "non-contiguous"],
)
def test_bad_out_is_refused_and_left_untouched(
    rng: np.random.Generator, make_out: Any, error: type[Exception]
) -> None:
    w = nonzero_values(rng, (6, 4, 3, 3), "f32")
    dy = nonzero_values(rng, (2, 6, 9, 8), "f32")
    out = make_out()
    before = out.copy()
    with pytest.raises(error):
        cd.conv_input_grad((2, 4, 9, 8), w, dy, 1, 1, out=out)
    np.testing.assert_array_equal(out, before)


def test_out_on_another_library_is_refused(
    rng: np.random.Generator, cpu: cd.Handle
) -> None:
    w = nonzero_values(rng, (6, 4, 3, 3), "f32")
    dy = nonzero_values(rng, (2, 6, 9, 8), "f32")
    out = cd.Tensor.zeros(cpu, (2, 4, 9, 8), dtype=cd.f32)
    with pytest.raises(TypeError, match="library"):
        cd.conv_input_grad((2, 4, 9, 8), w, dy, 1, 1, out=out)


def test_out_aliasing_grad_output_is_refused(rng: np.random.Generator) -> None:
    # Stride 1, padding 1 and as many channels in as out: dy has x's shape.
    w = nonzero_values(rng, (4, 4, 3, 3), "f32")
    dy = nonzero_values(rng, (2, 4, 9, 8), "f32")
    before = dy.copy()
    with pytest.raises(cd.ShapeError):
        cd.conv_input_grad((2, 4, 9, 8), w, dy, 1, 1, out=dy)
    view = dy[:]  # another array over the same memory
    with pytest.raises(cd.ShapeError):
        cd.conv_input_grad((2, 4, 9, 8), w, dy, 1, 1, out=view)
    np.testing.assert_array_equal(dy, before)
    # The weight too: an out overlapping it is refused.
    big = nonzero_values(rng, (2, 4, 9, 8), "f32")
    w_view = big.reshape(-1)[: 4 * 4 * 9].reshape(4, 4, 3, 3)
    before = big.copy()
    with pytest.raises(cd.ShapeError):
        cd.conv_input_grad((2, 4, 9, 8), w_view, dy, 1, 1, out=big)
    np.testing.assert_array_equal(big, before)


def test_gpu_operand_with_a_cpu_one_is_a_device_mismatch() -> None:
    class FakeCuda:
        """Claims to live on cuda:0 (the check comes before any import)."""

        shape = (6, 4, 3, 3)

        def __dlpack_device__(self) -> tuple[int, int]:
            return (2, 0)

        def __dlpack__(self, **_: Any) -> Any:
            raise AssertionError("must not be exported")

    dy = np.ones((2, 6, 9, 8), np.float32)
    with pytest.raises(cd.DeviceMismatchError, match="cuda:0"):
        cd.conv_input_grad((2, 4, 9, 8), FakeCuda(), dy, 1, 1)


def test_non_arrays_are_a_type_error() -> None:
    dy = np.ones((2, 6, 9, 8), np.float32)
    with pytest.raises(TypeError, match="__dlpack__"):
        cd.conv_input_grad((2, 4, 9, 8), [[1.0]], dy, 1, 1)


# ---------------------------------------------------------------- torch on the CPU


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip(
        "torch", reason="PyTorch is not installed here (the GPU suite runs it)"
    )


@pytest.mark.parametrize("case", CASES, ids=["2d", "2d-strided-grouped", "3d"])
def test_torch_cpu_tensors(rng: np.random.Generator, torch: Any, case: Any) -> None:
    w, dy, x_shape, p, ref = _case(rng, case, "f32")
    tw = torch.from_numpy(w).requires_grad_()
    tdy = torch.from_numpy(dy)
    gx = cd.conv_input_grad(x_shape, tw, tdy, p.stride, p.padding, p.dilation, p.groups)
    assert isinstance(gx, torch.Tensor) and gx.device.type == "cpu"
    assert_close(gx.numpy(), ref, "f32", "torch CPU")
    expected = (
        torch.nn.grad.conv2d_input if len(x_shape) == 4 else torch.nn.grad.conv3d_input
    )
    want = expected(
        x_shape, tw.detach(), tdy, p.stride, p.padding, p.dilation, p.groups
    )
    assert_close(gx.numpy(), want.double().numpy(), "f32", "vs torch.nn.grad")


def test_torch_autograd_gradcheck_f64(rng: np.random.Generator, torch: Any) -> None:
    import cudnn_rs.torch as ct

    x = torch.from_numpy(rng.standard_normal((2, 4, 6, 5))).requires_grad_()
    w = torch.from_numpy(rng.standard_normal((6, 2, 3, 3))).requires_grad_()
    b = torch.from_numpy(rng.standard_normal(6)).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda x, w, b: ct.conv2d(x, w, b, (2, 1), 1, (1, 2), 2), (x, w, b)
    )
    x3 = torch.from_numpy(rng.standard_normal((1, 2, 4, 5, 4))).requires_grad_()
    w3 = torch.from_numpy(rng.standard_normal((3, 2, 2, 3, 2))).requires_grad_()
    assert torch.autograd.gradcheck(lambda x, w: ct.conv3d(x, w, None, 1, 1), (x3, w3))


def test_torch_patch_module_cpu(rng: np.random.Generator, torch: Any) -> None:
    import cudnn_rs.torch as ct

    torch.manual_seed(int(rng.integers(2**31)))
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2),
        nn.Conv2d(8, 4, 1, padding_mode="reflect"),
    ).double()
    x = torch.from_numpy(rng.standard_normal((2, 3, 8, 8))).requires_grad_()
    out = model(x).sum()
    (gx_ref,) = torch.autograd.grad(out, x)
    with pytest.raises(ValueError, match="reflect"):
        ct.patch_module(model, strict=True)
    assert type(model[0]) is nn.Conv2d  # strict refusal changed nothing
    ct.patch_module(model)
    assert type(model[0]) is ct.Conv2d and type(model[3]) is nn.Conv2d
    out = model(x).sum()
    (gx,) = torch.autograd.grad(out, x)
    torch.testing.assert_close(gx, gx_ref, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- __array__ and errors


def test_numpy_asarray_of_cpu_operands(
    rng: np.random.Generator, cpu: cd.Handle
) -> None:
    a = nonzero_values(rng, (2, 3, 4, 5), "f32")
    for t in (
        cd.Tensor.from_numpy(cpu, a, format=cd.NHWC),
        cd.Filter.from_numpy(cpu, a),
    ):
        got = np.asarray(t)
        assert got.dtype == np.float32 and got.shape == a.shape
        np.testing.assert_array_equal(got, a)
        np.testing.assert_array_equal(
            np.asarray(t, dtype=np.float64), a.astype(np.float64)
        )
        with pytest.raises(ValueError, match="copy"):
            np.asarray(t, copy=False)


def test_argument_errors_name_the_fix(rng: np.random.Generator, cpu: cd.Handle) -> None:
    w_np = nonzero_values(rng, (4, 2, 3, 3), "f32")
    dy_np = nonzero_values(rng, (1, 4, 5, 5), "f32")
    w = cd.Filter.from_numpy(cpu, w_np)
    dy = cd.Tensor.from_numpy(cpu, dy_np)
    conv = cd.ConvolutionDescriptor((1, 1))
    with pytest.raises(
        TypeError, match=r"Filter\.from_numpy.*from_dlpack.*conv_input_grad"
    ):
        cd.convolution_backward_data(cpu, w_np, dy, conv, x_shape=(1, 2, 5, 5))  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"Tensor\.from_numpy"):
        cd.convolution_backward_data(cpu, w, dy_np, conv, x_shape=(1, 2, 5, 5))  # type: ignore[call-overload]
    dx = cd.Tensor.zeros(cpu, (1, 2, 5, 5))
    with pytest.raises(TypeError, match=r"dx must be a cudnn_rs\.Tensor.*from_dlpack"):
        cpu.convolution_backward_data(
            1.0, w, dy, conv, cd.DataAlgo0(), None, 0.0, np.zeros((1, 2, 5, 5))
        )  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="cannot stand for"):
        cpu.convolution_backward_data(1.0, dx, dy, conv, cd.DataAlgo0(), None, 0.0, dx)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"from_dlpack\(array, handle=h\)"):
        cd.Tensor.from_dlpack(cpu, dy_np)  # type: ignore[call-overload]


def test_no_error_message_prints_array_contents(cpu: cd.Handle) -> None:
    huge = np.arange(100_000, dtype=np.float32).reshape(10, 10, 10, 100)
    messages = []
    for call in (
        lambda: cd.Tensor.from_numpy(cpu, huge, format=huge),  # type: ignore[call-overload]
        lambda: cd.Tensor.zeros(cpu, (1, 1, 1, 1), dtype=huge),  # type: ignore[call-overload]
        lambda: cpu.get_convolution_backward_data_workspace_size(
            huge, huge, huge, cd.ConvolutionDescriptor((0, 0)), cd.DataAlgo0()
        ),  # type: ignore[call-overload]
        lambda: cpu.convolution_backward_data(
            1.0, huge, huge, cd.ConvolutionDescriptor((0, 0)), huge, None, 0.0, huge
        ),  # type: ignore[call-overload]
    ):
        with pytest.raises(TypeError) as info:
            call()
        messages.append(str(info.value))
    for m in messages:
        assert len(m) < 600, m
        # A NumPy repr would print "array([[[[0.000e+00, 1.000e+00, ...".
        assert "[[" not in m and "array(" not in m and "e+0" not in m, m


def test_unsupported_compute_type_names_the_argument(cpu: cd.Handle) -> None:
    w = cd.Filter.zeros(cpu, (4, 2, 3, 3), dtype=cd.f64)
    dy = cd.Tensor.zeros(cpu, (1, 4, 5, 5), dtype=cd.f64)
    conv = cd.ConvolutionDescriptor((1, 1))  # comp_type defaults to f32
    with pytest.raises(cd.UnsupportedConfigurationError, match=r"comp_type=cd\.f64"):
        cd.convolution_backward_data(cpu, w, dy, conv, x_shape=(1, 2, 5, 5))


def test_info_reports_driver_cudnn_and_gpus() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "cudnn_rs", "info"],
        capture_output=True,
        text=True,
        check=True,
    )
    out = res.stdout
    assert ("CUDA driver:" in out and "GPUs" in out) or "GPU cuda:0" in out, out
    assert "cuDNN" in out
    if not cd.cuda_available():
        # No driver: say why, naming each library tried, each once.
        tried = [line for line in out.splitlines() if line.strip().startswith("tried ")]
        names = [line.split()[1].rstrip(":") for line in tried]
        assert names and len(names) == len(set(names)), out
        if sys.platform.startswith("linux"):
            # The names cudarc tries (the same list `Handle()` walks): the driver's
            # soname and the development link among them.
            assert "libcuda.so.1" in names and "libcuda.so" in names, names


def test_demo_on_the_cpu_claims_no_cudnn_version() -> None:
    if cd.cuda_available():
        pytest.skip("a GPU is usable here: the demo runs on it")
    res = subprocess.run(
        [sys.executable, "-m", "cudnn_rs", "demo"], capture_output=True, text=True
    )
    device_line = next(x for x in res.stdout.splitlines() if x.startswith("device:"))
    assert "cuDNN 9" not in device_line and "cpu" in device_line
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("operand", ["grad_output", "weight", "out", "all"])
@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_non_native_byte_order_arrays_give_the_right_gradient(
    rng: np.random.Generator, operand: str, dtype: str
) -> None:
    """Big-endian (on this machine: non-native) arrays are NumPy arrays like any other:
    their values, not their bytes, go in, and ``out=`` of that order is written."""
    w, dy, x_shape, p, ref = _case(rng, CASES[1], dtype)
    args = (p.stride, p.padding, p.dilation, p.groups)
    swapped = w.dtype.newbyteorder("S")
    if operand in ("weight", "all"):
        w = w.astype(swapped)
    if operand in ("grad_output", "all"):
        dy = dy.astype(swapped)
    if operand in ("out", "all"):
        out = np.full(x_shape, np.nan, dtype=swapped)
        assert cd.conv_input_grad(x_shape, w, dy, *args, out=out) is out
        gx = out
    else:
        gx = cd.conv_input_grad(x_shape, w, dy, *args)
        assert isinstance(gx, np.ndarray) and gx.dtype.name == dy.dtype.name
    assert_close(gx, ref, dtype, f"byte-swapped {operand}")


class _Tagged(np.ndarray):
    """A user subclass of ndarray."""


@pytest.mark.parametrize("kind", ["memmap", "masked", "subclass"])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_ndarray_subclasses_are_numpy_arrays(
    rng: np.random.Generator, tmp_path: Any, kind: str, dtype: str
) -> None:
    """np.memmap, masked arrays and user subclasses of ndarray give a NumPy result,
    and a memmap ``out=`` is accepted and written."""
    w, dy, x_shape, p, ref = _case(rng, CASES[0], dtype)
    args = (p.stride, p.padding, p.dilation, p.groups)

    def wrap(a: NDArray[Any], name: str) -> NDArray[Any]:
        if kind == "memmap":
            m = np.memmap(tmp_path / name, dtype=a.dtype, mode="w+", shape=a.shape)
            m[...] = a
            return m
        if kind == "masked":
            return np.ma.masked_array(a)
        return a.view(_Tagged)

    gx = cd.conv_input_grad(x_shape, wrap(w, "w"), wrap(dy, "dy"), *args)
    assert isinstance(gx, np.ndarray) and gx.dtype == dy.dtype
    assert_close(gx, ref, dtype, f"{kind} operands")
    out = np.memmap(tmp_path / "out", dtype=dy.dtype, mode="w+", shape=x_shape)
    out[...] = np.nan
    assert cd.conv_input_grad(x_shape, wrap(w, "w2"), dy, *args, out=out) is out
    out.flush()
    written = np.memmap(tmp_path / "out", dtype=dy.dtype, mode="r", shape=x_shape)
    assert_close(written, ref, dtype, f"memmap out= with {kind} weight")


@pytest.mark.parametrize(
    "extent",
    [-7, 0, 100_000, 2**31, 2**62, 2**64],
    ids=["negative", "zero", "huge", "2^31", "2^62", "2^64"],
)
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_input_shape_out_of_range_is_a_shape_error_naming_it(
    extent: int, dtype: str
) -> None:
    """Checked before the result is allocated: a ShapeError naming input_shape, never
    NumPy's ValueError or MemoryError."""
    w = np.ones((4, 3, 3, 3), NUMPY_DTYPES[dtype])
    dy = np.ones((2, 4, 5, 5), NUMPY_DTYPES[dtype])
    with pytest.raises(cd.ShapeError, match="input_shape"):
        cd.conv_input_grad((2, 3, extent, 100_000), w, dy)


def test_argument_types_do_not_depend_on_earlier_calls(
    rng: np.random.Generator,
) -> None:
    """bool and float are refused for stride, padding, dilation and groups, before and
    after an equal int call (which fills the descriptor cache)."""
    w, dy, x_shape, _p, ref = _case(rng, CASES[0], "f32")
    bad = [
        {"groups": 1.0},
        {"groups": True},
        {"stride": True},
        {"stride": (True, 1)},
        {"padding": False},
        {"padding": (1.0, 1)},
        {"dilation": 1.0},
    ]
    for _ in range(2):
        for kwargs in bad:
            name = next(iter(kwargs))
            with pytest.raises(TypeError, match=f"^{name} must be an int"):
                cd.conv_input_grad(x_shape, w, dy, **{"padding": 1, **kwargs})
        gx = cd.conv_input_grad(
            x_shape, w, dy, stride=1, padding=(1, 1), dilation=(1, 1), groups=1
        )
        assert_close(gx, ref, "f32", "int arguments")


@pytest.mark.parametrize("scalar", [np.int64, np.int32, np.uint8])
def test_numpy_integer_scalars_are_ints(
    rng: np.random.Generator, scalar: type[np.integer[Any]]
) -> None:
    w, dy, x_shape, p, ref = _case(rng, CASES[1], "f64")
    for _ in range(2):  # the second call finds the descriptor cached
        gx = cd.conv_input_grad(
            tuple(scalar(d) for d in x_shape),
            w,
            dy,
            stride=tuple(scalar(s) for s in p.stride),
            padding=tuple(scalar(s) for s in p.padding),
            dilation=tuple(scalar(s) for s in p.dilation),
            groups=scalar(p.groups),
        )
        assert_close(gx, ref, "f64", "numpy integer tuples")
    w, dy, x_shape, p, ref = _case(rng, CASES[0], "f64")
    for _ in range(2):
        gx = cd.conv_input_grad(
            x_shape, w, dy, scalar(1), scalar(1), scalar(1), scalar(1)
        )
        assert_close(gx, ref, "f64", "numpy integer scalars")
