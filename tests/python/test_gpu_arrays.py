"""``conv_input_grad`` and ``cudnn_rs.torch`` on the GPU: PyTorch (both layouts,
f32/f16/bf16, requires_grad, ``cuda:1``), CuPy and JAX round trips, bad inputs across
devices, and the autograd drop-in on torchvision models against plain autograd.

Every test uses the ``gpu`` fixture (skipped, with the reason, where no GPU, driver or
cuDNN is usable) and skips when its library is missing. Expected values: PyTorch's own
``torch.nn.grad.conv2d_input`` (TF32 off) or the float64 NumPy reference; outputs are
poisoned with NaN first.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from helpers import assert_close, nonzero_values

import cudnn_rs as cd
from reference import ConvParams, conv_backward_data, output_shape

pytestmark = pytest.mark.gpu

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# (x shape, w shape, stride, padding, dilation, groups)
CASES = {
    "2d": ((4, 16, 12, 11), (32, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    "2d-strided-grouped": ((2, 8, 15, 14), (12, 4, 3, 3), (2, 2), (1, 1), (1, 1), 2),
    "3d": ((2, 4, 6, 7, 5), (8, 4, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1),
    # NCHW: the depthwise kernel of our own (stride 1 and 2).
    "2d-depthwise": ((4, 32, 40, 40), (32, 1, 3, 3), (1, 1), (1, 1), (1, 1), 32),
    "2d-depthwise-s2": ((16, 64, 32, 32), (64, 1, 5, 5), (2, 2), (2, 2), (1, 1), 64),
    # Stride 3: the kernel's general strided entries.
    "2d-depthwise-s3": ((16, 64, 32, 32), (64, 1, 5, 5), (3, 3), (2, 2), (1, 1), 64),
    # Strided and dilated, which the kernel does not take, with dx of 2^20 elements:
    # NCHW runs through the NHWC twin in every type.
    "2d-depthwise-s2-d2": ((16, 64, 32, 32), (64, 1, 3, 3), (2, 2), (2, 2), (2, 2), 64),
}
TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


@pytest.fixture
def torch(gpu: cd.Handle) -> ModuleType:
    mod = pytest.importorskip("torch")
    if not mod.cuda.is_available():
        pytest.skip("torch is installed without CUDA")
    return mod


@pytest.fixture
def no_tf32(torch: ModuleType) -> Any:
    old = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


def _params(case: Any) -> tuple[Any, ...]:
    x_shape, w_shape, stride, padding, dilation, groups = case
    p = ConvParams(padding, stride, dilation, groups)
    return x_shape, w_shape, output_shape(x_shape, w_shape, p), p


def _host_case(rng: np.random.Generator, name: str) -> tuple[Any, ...]:
    """Case `name`'s input shape and parameters, fresh random NumPy f32 operands, and
    their float64 reference: (x_shape, p, w, dy, ref)."""
    x_shape, w_shape, dy_shape, p = _params(CASES[name])
    w = nonzero_values(rng, w_shape, "f32")
    dy = nonzero_values(rng, dy_shape, "f32")
    ref = conv_backward_data(w.astype(np.float64), dy.astype(np.float64), x_shape, p)
    return x_shape, p, w, dy, ref


def _torch_ref(torch: ModuleType, x_shape: Any, w: Any, dy: Any, p: ConvParams) -> Any:
    fn = torch.nn.grad.conv2d_input if len(x_shape) == 4 else torch.nn.grad.conv3d_input
    return fn(
        x_shape, w.double(), dy.double(), p.stride, p.padding, p.dilation, p.groups
    )


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
def test_torch_tensors(
    rng: np.random.Generator,
    torch: ModuleType,
    no_tf32: Any,
    case: str,
    dtype: str,
    channels_last: bool,
) -> None:
    x_shape, w_shape, dy_shape, p = _params(CASES[case])
    tdt = getattr(torch, TORCH_DTYPES[dtype])
    w = torch.from_numpy(nonzero_values(rng, w_shape, "f32")).to("cuda", tdt)
    dy = torch.from_numpy(nonzero_values(rng, dy_shape, "f32")).to("cuda", tdt)
    if channels_last:
        fmt = torch.channels_last if len(x_shape) == 4 else torch.channels_last_3d
        w, dy = w.contiguous(memory_format=fmt), dy.contiguous(memory_format=fmt)
    w.requires_grad_()
    gx = cd.conv_input_grad(x_shape, w, dy, p.stride, p.padding, p.dilation, p.groups)
    assert isinstance(gx, torch.Tensor)
    assert gx.device == dy.device and gx.dtype == tdt and tuple(gx.shape) == x_shape
    if channels_last:
        assert gx.is_contiguous(memory_format=fmt)
    ref = _torch_ref(torch, x_shape, w.detach(), dy, p)
    assert_close(gx.float().cpu().numpy(), ref.cpu().numpy(), dtype, "torch")
    out = torch.full(x_shape, float("nan"), dtype=tdt, device="cuda")
    got = cd.conv_input_grad(
        x_shape, w, dy, p.stride, p.padding, p.dilation, p.groups, out=out
    )
    assert got is out
    assert_close(out.float().cpu().numpy(), ref.cpu().numpy(), dtype, "torch out=")


def test_torch_fast_path_runs_the_defaults_and_declines_the_rest(
    rng: np.random.Generator, torch: ModuleType, no_tf32: Any
) -> None:
    """The one native call conv_input_grad makes for PyTorch CUDA tensors: a tensor
    equal to PyTorch's for plain calls; None (the general path runs and reports) for
    every operand it does not handle."""
    from cudnn_rs import _native

    x_shape, w_shape, dy_shape, p = _params(CASES["2d-strided-grouped"])
    w = torch.from_numpy(nonzero_values(rng, w_shape, "f32")).cuda()
    dy = torch.from_numpy(nonzero_values(rng, dy_shape, "f32")).cuda()
    args = (p.stride, p.padding, p.dilation, p.groups)
    got = _native._torch_input_grad(x_shape, w.requires_grad_(), dy, *args)
    assert isinstance(got, torch.Tensor) and tuple(got.shape) == x_shape
    ref = _torch_ref(torch, x_shape, w.detach(), dy, p).cpu().numpy()
    assert_close(got.cpu().numpy(), ref, "f32", "fast path")
    # Ints for the parameters, and a torch.Size for the shape, as autograd passes them.
    got = _native._torch_input_grad(torch.Size(x_shape), w, dy, 2, 1, 1, p.groups)
    assert_close(got.cpu().numpy(), ref, "f32", "fast path, int parameters")
    declined = {
        "CPU tensors": (x_shape, w.detach().cpu(), dy.cpu(), *args),
        "mixed dtypes": (x_shape, w.detach().half(), dy, *args),
        "integer dtypes": (x_shape, w.detach().int(), dy.int(), *args),
        "strides of neither layout": (x_shape, w, dy.transpose(2, 3), *args),
        "rank of input_shape": (x_shape[:3], w, dy, *args),
        "bool groups": (x_shape, w, dy, p.stride, p.padding, p.dilation, True),
        "a bool in a tuple": (x_shape, w, dy, (2, True), p.padding, p.dilation, 2),
        "three strides for 2-d": (x_shape, w, dy, (1, 1, 1), p.padding, p.dilation, 2),
        "NumPy arrays": (x_shape, w.detach().cpu().numpy(), dy.cpu().numpy(), *args),
    }
    for why, call in declined.items():
        assert _native._torch_input_grad(*call) is None, why
    # A handle of PyTorch's current stream (here measuring: the measured tier) runs
    # the call in one native call too; one of another stream is declined.
    h = cd.Handle(stream=torch.cuda.current_stream(), benchmark=True)
    got = _native._torch_input_grad(x_shape, w, dy, *args, h)
    assert isinstance(got, torch.Tensor)
    assert_close(got.cpu().numpy(), ref, "f32", "fast path, benchmark=True handle")
    other = cd.Handle(stream=torch.cuda.Stream())
    assert _native._torch_input_grad(x_shape, w, dy, *args, other) is None
    got = cd.conv_input_grad(x_shape, w, dy, *args, handle=other)
    assert_close(got.cpu().numpy(), ref, "f32", "handle on another stream")


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
def test_torch_repeated_problems_stay_correct_on_fresh_tensors(
    rng: np.random.Generator,
    torch: ModuleType,
    no_tf32: Any,
    dtype: str,
    channels_last: bool,
) -> None:
    """A problem's later calls (which run what its first call resolved, without
    resolving or validating again) give PyTorch's result on fresh values and addresses
    every call: interleaved with a problem of the same tensor shapes but another input
    shape, with dy 2 elements off 16-byte alignment in between (another plan), and on
    memory PyTorch hands back from a NaN-filled tensor just freed."""
    tdt = getattr(torch, TORCH_DTYPES[dtype])
    w_shape, dy_shape = (12, 4, 3, 3), (2, 12, 8, 7)
    # Same w and dy shapes: stride 1 / padding 1 gives an 8x7 input, stride 2 / padding
    # 1 a 15x13 or 16x14 one (both output 8x7).
    problems = [
        ((2, 8, 8, 7), ConvParams((1, 1), (1, 1), (1, 1), 2)),
        ((2, 8, 15, 13), ConvParams((1, 1), (2, 2), (1, 1), 2)),
        ((2, 8, 16, 14), ConvParams((1, 1), (2, 2), (1, 1), 2)),
    ]
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    for step in range(12):
        x_shape, p = problems[step % len(problems)]
        w = torch.from_numpy(nonzero_values(rng, w_shape, "f32")).to("cuda", tdt)
        dy = torch.from_numpy(nonzero_values(rng, dy_shape, "f32")).to("cuda", tdt)
        w, dy = w.to(memory_format=fmt), dy.to(memory_format=fmt)
        if step in (4, 5):
            # The same values 2 elements into a larger buffer: aligned to 4 (f16) or 8
            # (f32) bytes only.
            base = torch.empty(dy.numel() + 2, dtype=tdt, device="cuda")
            view = base[2:].view(
                dy.permute(0, 2, 3, 1).shape if channels_last else dy.shape
            )
            view.copy_(dy.permute(0, 2, 3, 1) if channels_last else dy)
            dy = view.permute(0, 3, 1, 2) if channels_last else view
            assert dy.data_ptr() % 16 != 0
        poison = torch.full(x_shape, float("nan"), dtype=tdt, device="cuda")
        del poison  # its block goes back to PyTorch's cache, for the result to reuse
        got = cd.conv_input_grad(
            x_shape, w, dy, p.stride, p.padding, p.dilation, p.groups
        )
        assert tuple(got.shape) == x_shape, step
        assert got.is_contiguous(memory_format=fmt), step
        ref = _torch_ref(torch, x_shape, w, dy, p)
        assert_close(
            got.float().cpu().numpy(), ref.cpu().numpy(), dtype, f"call {step}"
        )


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
def test_torch_benchmark_runs_the_measured_tier_on_the_fast_path(
    rng: np.random.Generator, torch: ModuleType, no_tf32: Any, channels_last: bool
) -> None:
    """``benchmark=True`` on PyTorch tensors: equal to PyTorch's dgrad on the first
    call (which measures) and on the next (which runs the kept choice), and answered by
    the one native call (not the general path)."""
    from cudnn_rs import _native

    x_shape, w_shape, dy_shape, p = _params(CASES["2d"])
    w = torch.from_numpy(nonzero_values(rng, w_shape, "f32")).cuda()
    dy = torch.from_numpy(nonzero_values(rng, dy_shape, "f32")).cuda()
    if channels_last:
        w = w.contiguous(memory_format=torch.channels_last)
        dy = dy.contiguous(memory_format=torch.channels_last)
    args = (p.stride, p.padding, p.dilation, p.groups)
    ref = _torch_ref(torch, x_shape, w, dy, p).cpu().numpy()
    for call in ("first (measures)", "second (kept choice)"):
        got = cd.conv_input_grad(x_shape, w, dy, *args, benchmark=True)
        assert isinstance(got, torch.Tensor)
        assert_close(got.cpu().numpy(), ref, "f32", f"benchmark=True, {call}")
    fast = _native._torch_input_grad(x_shape, w, dy, *args, None, True)
    assert isinstance(fast, torch.Tensor), "benchmark=True left the native path"
    assert_close(fast.cpu().numpy(), ref, "f32", "native path, benchmark=True")


def test_torch_fast_path_follows_the_current_stream(
    rng: np.random.Generator, torch: ModuleType, no_tf32: Any
) -> None:
    """Two streams in turn: each call is ordered after the work queued on the stream
    current at the time (a handle per stream), and the results stay right."""
    x_shape, w_shape, dy_shape, p = _params(CASES["2d"])
    w = torch.from_numpy(nonzero_values(rng, w_shape, "f32")).cuda()
    src = torch.from_numpy(nonzero_values(rng, dy_shape, "f32")).cuda()
    ref = _torch_ref(torch, x_shape, w, src, p).cpu().numpy()
    torch.cuda.synchronize()
    for s in (torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.current_stream()):
        with torch.cuda.stream(s):
            torch.cuda._sleep(50_000_000)
            dy = src.mul(1.0)  # written on s after the sleep
            gx = cd.conv_input_grad(x_shape, w, dy, 1, 1)
            result = gx.cpu()
        assert_close(result.numpy(), ref, "f32", f"stream {s.cuda_stream:#x}")


def test_torch_result_is_ordered_on_the_current_stream(
    rng: np.random.Generator, torch: ModuleType, no_tf32: Any
) -> None:
    x_shape, w_shape, dy_shape, p = _params(CASES["2d"])
    w = torch.from_numpy(nonzero_values(rng, w_shape, "f32")).cuda()
    src = torch.from_numpy(nonzero_values(rng, dy_shape, "f32")).cuda()
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # holds the next kernel back ~0.1 s on s
        dy = src.mul(1.0)  # written on s after the sleep
        gx = cd.conv_input_grad(x_shape, w, dy, 1, 1)
        result = gx.cpu()
    ref = _torch_ref(torch, x_shape, w, src, p)
    assert_close(result.numpy(), ref.cpu().numpy(), "f32", "stream ordering")


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
def test_the_depthwise_kernel_on_each_gpu(
    rng: np.random.Generator, torch: ModuleType, no_tf32: Any, channels_last: bool
) -> None:
    """The kernel of our own (its module loaded per device) on every GPU in turn, the
    first one current throughout: NCHW 3x3 layers, and channels-last 9x9 layers (run
    on NCHW copies); each against PyTorch's result on that GPU."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    k, pad = (9, 4) if channels_last else (3, 1)
    x_shape, w_shape, dy_shape = (4, 32, 20, 20), (32, 1, k, k), (4, 32, 20, 20)
    p = ConvParams((pad, pad), (1, 1), (1, 1), 32)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    w_np = nonzero_values(rng, w_shape, "f32")
    dy_np = nonzero_values(rng, dy_shape, "f32")
    for ordinal in (1, 0, 1):
        dev = f"cuda:{ordinal}"
        w = torch.from_numpy(w_np).to(dev).contiguous(memory_format=fmt)
        dy = torch.from_numpy(dy_np).to(dev).contiguous(memory_format=fmt)
        with torch.cuda.device(0):
            gx = cd.conv_input_grad(x_shape, w, dy, 1, p.padding, 1, p.groups)
        assert gx.device == torch.device(dev)
        ref = _torch_ref(torch, x_shape, w, dy, p)
        assert_close(gx.cpu().numpy(), ref.cpu().numpy(), "f32", dev)


def test_torch_on_the_second_gpu_while_the_first_is_current(
    rng: np.random.Generator, torch: ModuleType, no_tf32: Any
) -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    x_shape, w_shape, dy_shape, p = _params(CASES["2d"])
    w = torch.from_numpy(nonzero_values(rng, w_shape, "f32")).to("cuda:1")
    dy = torch.from_numpy(nonzero_values(rng, dy_shape, "f32")).to("cuda:1")
    w.requires_grad_()
    dy.requires_grad_()
    with torch.cuda.device(0):
        gx = cd.conv_input_grad(x_shape, w, dy, 1, 1)
    assert gx.device == torch.device("cuda:1")
    ref = _torch_ref(torch, x_shape, w.detach(), dy.detach(), p)
    assert_close(gx.cpu().numpy(), ref.cpu().numpy(), "f32", "cuda:1")
    with pytest.raises(cd.DeviceMismatchError):
        cd.conv_input_grad(x_shape, w.detach().to("cuda:0"), dy, 1, 1)
    out = torch.full(x_shape, float("nan"), device="cuda:0")
    with pytest.raises(cd.DeviceMismatchError):
        cd.conv_input_grad(x_shape, w, dy, 1, 1, out=out)
    assert torch.isnan(out).all()


def test_torch_bad_inputs_leave_out_untouched(
    rng: np.random.Generator, torch: ModuleType
) -> None:
    x_shape, w_shape, dy_shape, _p = _params(CASES["2d"])
    w = torch.from_numpy(nonzero_values(rng, w_shape, "f32")).cuda()
    dy = torch.from_numpy(nonzero_values(rng, dy_shape, "f32")).cuda()
    out = torch.full(x_shape, float("nan"), device="cuda")
    with pytest.raises(cd.DeviceMismatchError):  # a CPU tensor with a CUDA one
        cd.conv_input_grad(x_shape, w.cpu(), dy, 1, 1, out=out)
    with pytest.raises(cd.ShapeError):  # grad_output of the wrong shape
        cd.conv_input_grad(x_shape, w, dy.transpose(2, 3), 1, 1, out=out)
    with pytest.raises(cd.UnsupportedConfigurationError):  # integer dtypes
        cd.conv_input_grad(x_shape, w.int(), dy.int(), 1, 1)
    with pytest.raises(cd.ShapeError):  # a shape no convolution produces
        cd.conv_input_grad(x_shape, w, dy, 1, 0, out=out)
    with pytest.raises(cd.ShapeError):  # out of the wrong shape
        cd.conv_input_grad(x_shape, w, dy, 1, 1, out=out[:1])
    with pytest.raises(cd.UnsupportedConfigurationError):  # out of the wrong dtype
        cd.conv_input_grad(x_shape, w, dy, 1, 1, out=out.half())
    with pytest.raises(cd.DeviceMismatchError):  # out on the CPU
        cd.conv_input_grad(x_shape, w, dy, 1, 1, out=out.cpu())
    assert torch.isnan(out).all()
    sq = torch.from_numpy(nonzero_values(rng, (32, 32, 3, 3), "f32")).cuda()
    dy_sq = torch.from_numpy(nonzero_values(rng, (4, 32, 12, 11), "f32")).cuda()
    before = dy_sq.clone()
    with pytest.raises(cd.ShapeError):  # out aliasing grad_output
        cd.conv_input_grad((4, 32, 12, 11), sq, dy_sq, 1, 1, out=dy_sq.view_as(dy_sq))
    assert torch.equal(dy_sq, before)


def test_math_follows_torch_allow_tf32(
    rng: np.random.Generator, torch: ModuleType
) -> None:
    x_shape, w_shape, dy_shape, p = _params(CASES["2d"])
    w = torch.from_numpy(nonzero_values(rng, w_shape, "f32")).cuda()
    dy = torch.from_numpy(nonzero_values(rng, dy_shape, "f32")).cuda()
    ref = _torch_ref(torch, x_shape, w, dy, p).cpu().numpy()
    old = torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32 = False
        fma = cd.conv_input_grad(x_shape, w, dy, 1, 1)
        assert_close(fma.cpu().numpy(), ref, "f32", "allow_tf32=False", tolerance=1e-5)
        torch.backends.cudnn.allow_tf32 = True
        tf32 = cd.conv_input_grad(x_shape, w, dy, 1, 1)
        assert_close(tf32.cpu().numpy(), ref, "f32", "allow_tf32=True", tolerance=1e-2)
    finally:
        torch.backends.cudnn.allow_tf32 = old


def test_cupy_round_trip(rng: np.random.Generator, gpu: cd.Handle) -> None:
    cupy = pytest.importorskip("cupy")
    for name, case in CASES.items():
        x_shape, w_shape, dy_shape, p = _params(case)
        w = nonzero_values(rng, w_shape, "f32")
        dy = nonzero_values(rng, dy_shape, "f32")
        ref = conv_backward_data(
            w.astype(np.float64), dy.astype(np.float64), x_shape, p
        )
        gx = cd.conv_input_grad(
            x_shape,
            cupy.asarray(w),
            cupy.asarray(dy),
            p.stride,
            p.padding,
            p.dilation,
            p.groups,
        )
        assert isinstance(gx, cupy.ndarray) and gx.dtype == cupy.float32
        assert_close(cupy.asnumpy(gx), ref, "f32", f"CuPy {name}", tolerance=1e-2)
        out = cupy.full(x_shape, cupy.nan, dtype=cupy.float32)
        assert (
            cd.conv_input_grad(
                x_shape,
                cupy.asarray(w),
                cupy.asarray(dy),
                p.stride,
                p.padding,
                p.dilation,
                p.groups,
                out=out,
            )
            is out
        )
        assert_close(cupy.asnumpy(out), ref, "f32", f"CuPy out= {name}", tolerance=1e-2)


@pytest.mark.parametrize("case", ["2d", "2d-strided-grouped", "3d", "2d-depthwise"])
def test_torch_operands_of_any_strides_are_copied(
    rng: np.random.Generator, torch: ModuleType, no_tf32: Any, case: str
) -> None:
    """As PyTorch's conv2d_input: a sliced or expanded grad_output and a transposed
    weight are copied first and give PyTorch's result; the operands are left as they
    were; a weight copied follows a channels-last grad_output's layout."""
    x_shape, w_shape, dy_shape, p = _params(CASES[case])
    w = torch.from_numpy(nonzero_values(rng, w_shape, "f32")).cuda()
    dy = torch.from_numpy(nonzero_values(rng, dy_shape, "f32")).cuda()
    args = (p.stride, p.padding, p.dilation, p.groups)
    cl = torch.channels_last if len(x_shape) == 4 else torch.channels_last_3d
    sliced = dy.repeat_interleave(2, dim=-1)[..., ::2]
    swapped = w.transpose(-1, -2).contiguous().transpose(-1, -2)
    expanded = dy[:1].expand(dy_shape)
    for weight, grad, why in [
        (w, sliced, "sliced grad_output"),
        (swapped, dy, "transposed weight"),
        (swapped, dy.contiguous(memory_format=cl), "channels-last grad_output"),
        (swapped, expanded, "expanded grad_output"),
    ]:
        assert not grad.is_contiguous() or not weight.is_contiguous()
        before = (weight.clone(), grad.clone())
        ref = _torch_ref(torch, x_shape, weight, grad, p).cpu().numpy()
        gx = cd.conv_input_grad(x_shape, weight, grad, *args)
        assert isinstance(gx, torch.Tensor) and tuple(gx.shape) == x_shape
        assert_close(gx.cpu().numpy(), ref, "f32", why)
        dense_cl = grad.is_contiguous(memory_format=cl) and not grad.is_contiguous()
        assert gx.is_contiguous(
            memory_format=cl if dense_cl else torch.contiguous_format
        )
        assert torch.equal(weight, before[0]) and torch.equal(grad, before[1]), why
    # out= must still be dense: refused before anything is written.
    out = torch.full(x_shape, float("nan"), device="cuda")
    with pytest.raises(cd.ShapeError):
        cd.conv_input_grad(x_shape, w, dy, *args, out=out.transpose(-1, -2))
    assert torch.isnan(out).all()


def test_cupy_operands_of_any_strides_are_copied(
    rng: np.random.Generator, gpu: cd.Handle
) -> None:
    cupy = pytest.importorskip("cupy")
    x_shape, p, w, dy, ref = _host_case(rng, "2d-strided-grouped")
    args = (p.stride, p.padding, p.dilation, p.groups)
    sliced = cupy.repeat(cupy.asarray(dy), 2, axis=-1)[..., ::2]
    fortran = cupy.asfortranarray(cupy.asarray(w))
    assert not sliced.flags.c_contiguous and not fortran.flags.c_contiguous
    gx = cd.conv_input_grad(x_shape, fortran, sliced, *args)
    assert isinstance(gx, cupy.ndarray) and gx.flags.c_contiguous
    assert_close(cupy.asnumpy(gx), ref, "f32", "strided CuPy operands", tolerance=1e-2)
    np.testing.assert_array_equal(cupy.asnumpy(fortran), w)
    np.testing.assert_array_equal(cupy.asnumpy(sliced), dy)


def test_jax_round_trip(rng: np.random.Generator, gpu: cd.Handle) -> None:
    jax = pytest.importorskip("jax")
    try:
        dev = jax.devices("gpu")[0]
    except RuntimeError as exc:
        pytest.skip(f"JAX has no GPU: {exc}")
    x_shape, w_shape, dy_shape, p = _params(CASES["2d"])
    w = nonzero_values(rng, w_shape, "f32")
    dy = nonzero_values(rng, dy_shape, "f32")
    ref = conv_backward_data(w.astype(np.float64), dy.astype(np.float64), x_shape, p)
    gx = cd.conv_input_grad(
        x_shape, jax.device_put(w, dev), jax.device_put(dy, dev), 1, 1
    )
    assert isinstance(gx, jax.Array)
    assert list(gx.devices()) == [dev]
    assert_close(np.asarray(gx), ref, "f32", "JAX", tolerance=1e-2)


def test_mixed_libraries_on_one_gpu(
    rng: np.random.Generator, torch: ModuleType
) -> None:
    cupy = pytest.importorskip("cupy")
    x_shape, _p, w, dy, ref = _host_case(rng, "2d")
    gx = cd.conv_input_grad(x_shape, cupy.asarray(w), torch.from_numpy(dy).cuda(), 1, 1)
    assert isinstance(gx, torch.Tensor)
    assert_close(
        gx.cpu().numpy(), ref, "f32", "CuPy weight, torch grad", tolerance=1e-2
    )


# ---------------------------------------------------------------- autograd drop-in


def _grads(torch: ModuleType, model: Any, x: Any) -> list[Any]:
    model.zero_grad(set_to_none=True)
    x = x.detach().requires_grad_()
    loss = model(x).float().square().mean()
    loss.backward()
    return [x.grad] + [q.grad for q in model.parameters()]


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
def test_drop_in_on_torchvision_models(
    rng: np.random.Generator,
    torch: ModuleType,
    no_tf32: Any,
    name: str,
    channels_last: bool,
) -> None:
    tv = pytest.importorskip("torchvision")
    import cudnn_rs.torch as ct

    torch.manual_seed(int(rng.integers(2**31)))
    model = getattr(tv.models, name)(weights=None).cuda().eval()
    x = torch.from_numpy(rng.standard_normal((4, 3, 64, 64), dtype=np.float32)).cuda()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    want = _grads(torch, model, x)
    ct.patch_module(model)
    n_patched = sum(isinstance(m, (ct.Conv2d, ct.Conv3d)) for m in model.modules())
    assert n_patched > 10
    got = _grads(torch, model, x)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-5)


def test_drop_in_gradcheck_on_the_gpu(
    rng: np.random.Generator, torch: ModuleType
) -> None:
    import cudnn_rs.torch as ct

    x = torch.from_numpy(rng.standard_normal((2, 4, 6, 5))).cuda().requires_grad_()
    w = torch.from_numpy(rng.standard_normal((6, 2, 3, 3))).cuda().requires_grad_()
    b = torch.from_numpy(rng.standard_normal(6)).cuda().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda x, w, b: ct.conv2d(x, w, b, (2, 1), 1, (1, 2), 2), (x, w, b)
    )
