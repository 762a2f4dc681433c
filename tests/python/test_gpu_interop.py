"""Zero-copy interop on the GPU: PyTorch, CuPy and JAX through DLPack and
``__cuda_array_interface__``, lifetimes, and stream ordering.

Every test uses the ``gpu`` fixture (skipped, with the reason, where no GPU, driver or
cuDNN is usable) and skips when its library is missing. Tests that change streams make
their own handles, leaving the shared one on the default stream.

The stream tests would fail without the ordering they check: the producer's write (or
our result) is held back behind a ~0.1 s sleep kernel on a non-blocking stream, so work
that is not ordered after it reads stale data (zeros or NaN).
"""

from __future__ import annotations

import gc
import os
import weakref
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from helpers import TOLERANCE, assert_close, case_2d, nonzero_values
from numpy.typing import NDArray

import cudnn_rs as cd
from reference import conv_backward_data

pytestmark = pytest.mark.gpu

# JAX would otherwise take 75% of the GPU's memory at import, next to PyTorch's.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# (x shape, w shape, padding) by spatial dims; stride 1 and padding 1 keep dy = x.
GEOMETRY: dict[int, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {
    2: ((2, 8, 10, 9), (16, 8, 3, 3), (1, 1)),
    3: ((2, 4, 6, 6, 5), (8, 4, 3, 3, 3), (1, 1, 1)),
}
CASE = case_2d((2, 8, 10, 9), (16, 8, 3, 3), padding=(1, 1))
# ~0.1 s at a 2 GHz SM clock: far longer than the host needs to issue the next call.
SLEEP_CYCLES = 200_000_000


@pytest.fixture
def torch(gpu: cd.Handle) -> ModuleType:
    mod = pytest.importorskip("torch")
    if not mod.cuda.is_available():
        pytest.skip("torch is installed without CUDA")
    return mod


@pytest.fixture
def cupy(gpu: cd.Handle) -> ModuleType:
    mod = pytest.importorskip("cupy")
    try:
        mod.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CuPy raises its own CUDARuntimeError
        pytest.skip(f"CuPy cannot use the GPU: {exc}")
    return mod


@pytest.fixture
def jax(gpu: cd.Handle) -> ModuleType:
    mod = pytest.importorskip("jax")
    try:
        mod.devices("gpu")
    except RuntimeError as exc:
        pytest.skip(f"JAX has no GPU backend: {exc}")
    return mod


def sleep_kernel(torch: ModuleType) -> Any:
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        pytest.skip("this torch has no torch.cuda._sleep")
    return sleep


def backward_into(
    h: cd.Handle,
    w: cd.Filter,
    dy: cd.Tensor,
    dx: cd.Tensor,
    padding: tuple[int, ...],
    math_type: cd.MathType = cd.MathType.Fma,
) -> None:
    """dx = dgrad(w, dy) with cuDNN's heuristic choice and its workspace."""
    conv = cd.ConvolutionDescriptor(
        padding=padding, math_type=math_type, comp_type=cd.f32
    )
    best = h.get_convolution_backward_data_algorithm(w, dy, dx, conv)
    size = h.get_convolution_backward_data_workspace_size(w, dy, dx, conv, best)
    workspace = cd.Workspace(h, size) if size else None
    h.convolution_backward_data(1.0, w, dy, conv, best, workspace, 0.0, dx)


def host_problem(
    rng: np.random.Generator,
) -> tuple[NDArray[Any], NDArray[Any], NDArray[np.float64]]:
    w = nonzero_values(rng, CASE.w_shape, "f32")
    dy = nonzero_values(rng, CASE.dy_shape, "f32")
    return w, dy, conv_backward_data(w, dy, CASE.x_shape, CASE.params)


def cai_pointer(t: cd.Tensor | cd.Filter) -> int:
    return int(t.__cuda_array_interface__["data"][0])


class CaiOnly:
    """An array known only through ``__cuda_array_interface__`` (no DLPack), with an
    optional v3 ``stream`` the data is produced on."""

    def __init__(self, interface: dict[str, Any], stream: int | None = None) -> None:
        self.interface = dict(interface)
        if stream is not None:
            self.interface["version"] = 3
            self.interface["stream"] = stream

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return self.interface


# ---------------------------------------------------------------- PyTorch


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_torch_round_trip_matches_torch_backward(
    torch: ModuleType, dtype: str, layout: str, dims: int
) -> None:
    x_shape, w_shape, padding = GEOMETRY[dims]
    dy_shape = (x_shape[0], w_shape[0], *x_shape[2:])
    tdtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    if layout == "NCHW":
        fmt = torch.contiguous_format
    else:
        fmt = torch.channels_last if dims == 2 else torch.channels_last_3d
    gen = torch.Generator(device="cuda").manual_seed(1000 * dims + len(dtype))

    def make(shape: tuple[int, ...]) -> Any:
        t = torch.randn(shape, device="cuda", generator=gen).to(tdtype)
        return t.contiguous(memory_format=fmt)

    w_t, dy_t = make(w_shape), make(dy_shape)
    dx_t = torch.full(x_shape, float("nan"), device="cuda", dtype=tdtype)
    dx_t = dx_t.contiguous(memory_format=fmt)
    # The handle works on torch's current stream: no extra ordering needed to read.
    h = cd.Handle(stream=torch.cuda.current_stream())
    w = cd.Filter.from_dlpack(w_t, handle=h)
    dy = cd.Tensor.from_dlpack(dy_t, handle=h)
    dx = cd.Tensor.from_dlpack(dx_t, handle=h)
    for ours, theirs in ((w, w_t), (dy, dy_t), (dx, dx_t)):
        assert ours.format is getattr(cd, layout)
        assert ours.dtype == getattr(cd, dtype)
        assert ours.shape == tuple(theirs.shape)
        assert ours.device == "cuda:0"
        assert cai_pointer(ours) == theirs.data_ptr()  # no copy in
    math = cd.MathType.Fma if dtype == "f32" else cd.MathType.Default
    backward_into(h, w, dy, dx, padding, math)
    grad = torch.nn.grad.conv2d_input if dims == 2 else torch.nn.grad.conv3d_input
    expected = grad(list(x_shape), w_t.double(), dy_t.double(), padding=padding)
    # Compare on the (same) current stream: torch's own memory, written by cuDNN.
    assert_close(
        dx_t.double().cpu().numpy(),
        expected.cpu().numpy(),
        dtype,
        f"{dtype} {layout} {dims}-d vs torch.nn.grad",
        TOLERANCE[dtype],
    )
    # No copy out: torch sees the same memory, with the same layout.
    view = torch.from_dlpack(dx)
    assert view.data_ptr() == dx_t.data_ptr()
    assert view.dtype == tdtype
    assert view.stride() == dx_t.stride()
    assert view.is_contiguous(memory_format=fmt)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_torch_sees_our_memory_and_we_see_its_writes(
    torch: ModuleType, rng: np.random.Generator, layout: str
) -> None:
    h = cd.Handle(stream=torch.cuda.current_stream())
    host = nonzero_values(rng, CASE.x_shape, "bf16")
    ours = cd.Tensor.from_numpy(h, host, format=getattr(cd, layout))
    assert ours.__dlpack_device__() == (2, 0)
    interface = ours.__cuda_array_interface__
    assert interface["version"] == 3 and interface["typestr"] == "<u2"
    assert tuple(interface["shape"]) == CASE.x_shape
    view = torch.from_dlpack(ours)
    assert view.dtype == torch.bfloat16
    assert view.data_ptr() == cai_pointer(ours)
    if layout == "NHWC":
        assert view.is_contiguous(memory_format=torch.channels_last)
        assert interface["strides"] == tuple(2 * s for s in view.stride())
    else:
        assert view.is_contiguous() and interface["strides"] is None
    np.testing.assert_array_equal(view.float().cpu().numpy(), host.astype(np.float32))
    view.fill_(3.0)
    torch.cuda.synchronize()
    assert np.all(ours.to_numpy().astype(np.float32) == 3.0)
    # Imported back, it is still the same memory.
    again = cd.Tensor.from_dlpack(view, handle=h)
    assert cai_pointer(again) == view.data_ptr()


def test_torch_producer_deleted_while_our_tensor_lives(torch: ModuleType) -> None:
    h = cd.Handle(stream=torch.cuda.current_stream())
    t = torch.arange(2 * 8 * 10 * 9, device="cuda", dtype=torch.float32)
    t = t.reshape(CASE.x_shape)
    keep = t.cpu().numpy()
    pointer = t.data_ptr()
    ours = cd.Tensor.from_dlpack(t, handle=h)
    del t
    gc.collect()
    torch.cuda.synchronize()
    # Were the block released, torch's caching allocator would hand it out again here.
    others = [torch.full(CASE.x_shape, 7.0, device="cuda") for _ in range(4)]
    assert pointer not in {o.data_ptr() for o in others}
    torch.cuda.synchronize()
    np.testing.assert_array_equal(ours.to_numpy(), keep)
    np.testing.assert_array_equal(torch.from_dlpack(ours).cpu().numpy(), keep)


def test_our_tensor_deleted_while_torch_holds_it(
    torch: ModuleType, gpu: cd.Handle, rng: np.random.Generator
) -> None:
    host = nonzero_values(rng, CASE.x_shape, "f32")
    ours = cd.Tensor.from_numpy(gpu, host)
    view = torch.from_dlpack(ours)
    pointer = view.data_ptr()
    del ours
    gc.collect()
    # Were our memory freed, these allocations could reuse it (stream-ordered pool).
    fresh = [cd.Tensor.zeros(gpu, CASE.x_shape) for _ in range(4)]
    assert pointer not in {cai_pointer(f) for f in fresh}
    gpu.synchronize()
    np.testing.assert_array_equal(view.cpu().numpy(), host)
    del view
    gc.collect()
    torch.cuda.synchronize()


def test_device_mismatches_with_torch(torch: ModuleType, gpu: cd.Handle) -> None:
    on_cpu = torch.zeros((1, 2, 3, 3))
    with pytest.raises(cd.DeviceMismatchError):
        cd.Tensor.from_dlpack(on_cpu, handle=gpu)
    with pytest.raises(cd.DeviceMismatchError):
        cd.Tensor.from_dlpack(on_cpu.cuda(), handle=cd.Handle(device="cpu"))
    # Strides that are neither layout: a clear ShapeError.
    with pytest.raises(cd.ShapeError, match="contiguous"):
        cd.Tensor.from_dlpack(torch.zeros((2, 3, 8, 5), device="cuda")[..., ::2, :])


# ---------------------------------------------------------------- streams


def test_handle_on_a_torch_stream_runs_after_work_on_it(
    torch: ModuleType, rng: np.random.Generator
) -> None:
    sleep = sleep_kernel(torch)
    w_np, dy_np, expected = host_problem(rng)
    w_t, src = torch.from_numpy(w_np).cuda(), torch.from_numpy(dy_np).cuda()
    dy_t = torch.zeros_like(src)
    dx_t = torch.full(CASE.x_shape, float("nan"), device="cuda")
    torch.cuda.synchronize()
    s = torch.cuda.Stream()  # non-blocking: the default stream does not wait for it
    h = cd.Handle()
    h.set_stream(s)
    w = cd.Filter.from_dlpack(w_t, handle=h)
    dy = cd.Tensor.from_dlpack(dy_t, handle=h)
    dx = cd.Tensor.from_dlpack(dx_t, handle=h)
    with torch.cuda.stream(s):
        sleep(SLEEP_CYCLES)
        dy_t.copy_(src)  # dy is written late, on s
    backward_into(h, w, dy, dx, CASE.padding)  # issued to s: after the copy
    s.synchronize()
    assert_close(dx_t.cpu().numpy(), expected, "f32", "handle on the torch stream")


def test_import_orders_our_stream_after_the_producer(
    torch: ModuleType, rng: np.random.Generator
) -> None:
    """Producer on stream s, handle on s2: `__dlpack__(stream=s2)` makes s2 wait for
    s; exporting our result makes torch's stream wait for s2."""
    sleep = sleep_kernel(torch)
    w_np, dy_np, expected = host_problem(rng)
    s, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    h = cd.Handle(stream=s2)
    w = cd.Filter.from_numpy(h, w_np)
    dx = cd.Tensor.from_numpy(h, np.full(CASE.x_shape, np.nan, np.float32))
    src = torch.from_numpy(dy_np).cuda()
    dy_t = torch.zeros_like(src)
    torch.cuda.synchronize()
    h.synchronize()
    with torch.cuda.stream(s):
        sleep(SLEEP_CYCLES)
        dy_t.copy_(src)
        dy = cd.Tensor.from_dlpack(dy_t, handle=h)  # torch: s2 waits for s
    backward_into(h, w, dy, dx, CASE.padding)  # on s2
    # torch.from_dlpack passes torch's current stream: it waits for s2.
    got = torch.from_dlpack(dx).cpu().numpy()
    assert_close(got, expected, "f32", "import and export ordered by events")


@pytest.mark.parametrize("with_handle", [True, False])
def test_cuda_array_interface_stream_is_honoured(
    torch: ModuleType, gpu: cd.Handle, rng: np.random.Generator, with_handle: bool
) -> None:
    """`__cuda_array_interface__['stream']`: our stream waits for it (an event), or,
    without a handle, that stream is synchronized."""
    sleep = sleep_kernel(torch)
    w_np, dy_np, expected = host_problem(rng)
    s = torch.cuda.Stream()
    h = cd.Handle(stream=torch.cuda.Stream()) if with_handle else gpu
    w = cd.Filter.from_numpy(h, w_np)
    dx = cd.Tensor.from_numpy(h, np.full(CASE.x_shape, np.nan, np.float32))
    src = torch.from_numpy(dy_np).cuda()
    dy_t = torch.zeros_like(src)
    torch.cuda.synchronize()
    h.synchronize()
    with torch.cuda.stream(s):
        sleep(SLEEP_CYCLES)
        dy_t.copy_(src)
    producer = CaiOnly(dy_t.__cuda_array_interface__, stream=s.cuda_stream)
    dy = cd.Tensor.from_dlpack(producer, handle=h if with_handle else None)
    assert cai_pointer(dy) == dy_t.data_ptr()
    backward_into(h, w, dy, dx, CASE.padding)
    assert_close(dx.to_numpy(), expected, "f32", "ordered after the CAI stream")


@pytest.mark.parametrize("handle_stream", ["default", "torch stream"])
def test_torch_imports_without_a_handle_are_ordered_on_any_handle_stream(
    torch: ModuleType, rng: np.random.Generator, handle_stream: str
) -> None:
    """``from_dlpack(t)`` with no handle, as the contract spells it: read in place (no
    copy; a tensor that requires grad too), and ordered after PyTorch's pending work on
    its current stream, also on a handle of another (non-blocking) stream."""
    sleep = sleep_kernel(torch)
    w_np, dy_np, expected = host_problem(rng)
    h = (
        cd.Handle()
        if handle_stream == "default"
        else cd.Handle(stream=torch.cuda.Stream())
    )
    conv = cd.ConvolutionDescriptor(padding=CASE.padding, math_type=cd.MathType.Fma)
    src = torch.from_numpy(dy_np).cuda()
    w_t = torch.from_numpy(w_np).cuda().requires_grad_()
    dy_t = torch.zeros_like(src)
    torch.cuda.synchronize()
    h.synchronize()
    sleep(SLEEP_CYCLES)  # on PyTorch's current stream, as the copy after it
    dy_t.copy_(src)
    w = cd.Filter.from_dlpack(w_t)
    dy = cd.Tensor.from_dlpack(dy_t)
    assert cai_pointer(dy) == dy_t.data_ptr() and cai_pointer(w) == w_t.data_ptr()
    dx = cd.convolution_backward_data(h, w, dy, conv, CASE.x_shape)
    assert_close(
        dx.to_numpy(), expected, "f32", f"imports without a handle, {handle_stream}"
    )


def test_conv_input_grad_of_cai_only_arrays_runs_on_their_device(
    torch: ModuleType, rng: np.random.Generator
) -> None:
    """Arrays known only by ``__cuda_array_interface__`` (which names no device) run on
    the device that owns their memory, on every GPU, whichever device is current."""
    w_np, dy_np, expected = host_problem(rng)
    for ordinal in range(torch.cuda.device_count()):
        w_t = torch.from_numpy(w_np).to(f"cuda:{ordinal}")
        dy_t = torch.from_numpy(dy_np).to(f"cuda:{ordinal}")
        torch.cuda.synchronize(ordinal)
        with torch.cuda.device(0):
            gx = cd.conv_input_grad(
                CASE.x_shape,
                CaiOnly(w_t.__cuda_array_interface__),
                CaiOnly(dy_t.__cuda_array_interface__),
                padding=CASE.padding,
                math=cd.MathType.Fma,
            )
        assert isinstance(gx, cd.Tensor) and gx.device == f"cuda:{ordinal}"
        assert_close(
            gx.to_numpy(), expected, "f32", f"CAI-only arrays on cuda:{ordinal}"
        )


def test_stream_owner_is_kept_alive(
    torch: ModuleType, rng: np.random.Generator
) -> None:
    class OwnedStream(torch.cuda.Stream):  # type: ignore[name-defined, misc]
        """A Python subclass, so that a weak reference can watch it."""

    w_np, dy_np, expected = host_problem(rng)
    h = cd.Handle()
    stream = OwnedStream()
    watch = weakref.ref(stream)
    h.set_stream(stream)
    del stream
    gc.collect()
    assert watch() is not None, "the handle let its stream's owner go"
    w, dy = cd.Filter.from_numpy(h, w_np), cd.Tensor.from_numpy(h, dy_np)
    dx = cd.convolution_backward_data(h, w, dy, CASE.descriptor(), CASE.x_shape)
    assert_close(dx.to_numpy(), expected, "f32", "on the kept stream", 5e-3)
    h.set_stream(0)
    del dx, w, dy
    gc.collect()
    assert watch() is None, "the old stream's owner outlived every use"


# ---------------------------------------------------------------- CuPy


@pytest.mark.parametrize("handle_stream", ["default", "non-blocking"])
def test_cupy_imports_without_a_handle_are_ordered_on_any_handle_stream(
    cupy: ModuleType, torch: ModuleType, rng: np.random.Generator, handle_stream: str
) -> None:
    """``from_dlpack(cupy_array)`` with no handle, CuPy on its null stream: zero-copy,
    and a handle of another (non-blocking) stream waits for CuPy's pending write."""
    sleep = sleep_kernel(torch)  # PyTorch's default stream is the null stream too
    w_np, dy_np, expected = host_problem(rng)
    h = (
        cd.Handle()
        if handle_stream == "default"
        else cd.Handle(stream=cupy.cuda.Stream(non_blocking=True))
    )
    conv = cd.ConvolutionDescriptor(padding=CASE.padding, math_type=cd.MathType.Fma)
    w_c, src = cupy.asarray(w_np), cupy.asarray(dy_np)
    dy_c = cupy.zeros_like(src)
    cupy.cuda.runtime.deviceSynchronize()
    sleep(SLEEP_CYCLES)
    dy_c[...] = src  # on CuPy's null stream, behind the sleep
    w = cd.Filter.from_dlpack(w_c)
    dy = cd.Tensor.from_dlpack(dy_c)
    assert cai_pointer(w) == w_c.data.ptr and cai_pointer(dy) == dy_c.data.ptr
    dx = cd.convolution_backward_data(h, w, dy, conv, CASE.x_shape)
    assert_close(
        dx.to_numpy(), expected, "f32", f"CuPy without a handle, {handle_stream}"
    )


def test_cupy_round_trip(
    cupy: ModuleType, gpu: cd.Handle, rng: np.random.Generator
) -> None:
    w_np, dy_np, expected = host_problem(rng)
    h = cd.Handle()  # the legacy default stream, which CuPy's default stream is too
    w_c, dy_c = cupy.asarray(w_np), cupy.asarray(dy_np)
    dx_c = cupy.full(CASE.x_shape, cupy.nan, dtype=cupy.float32)
    w = cd.Filter.from_dlpack(w_c, handle=h)
    dy = cd.Tensor.from_dlpack(dy_c, handle=h)
    dx = cd.Tensor.from_dlpack(CaiOnly(dx_c.__cuda_array_interface__), handle=h)
    assert cai_pointer(w) == w_c.data.ptr and cai_pointer(dy) == dy_c.data.ptr
    assert cai_pointer(dx) == dx_c.data.ptr
    backward_into(h, w, dy, dx, CASE.padding)
    h.synchronize()
    assert_close(cupy.asnumpy(dx_c), expected, "f32", "into CuPy memory")
    # Out, through both protocols, without a copy.
    ours = cd.Tensor.from_numpy(h, dy_np, format=cd.NHWC)
    via_cai = cupy.asarray(ours)
    via_dlpack = cupy.from_dlpack(ours)
    assert via_cai.data.ptr == via_dlpack.data.ptr == cai_pointer(ours)
    np.testing.assert_array_equal(cupy.asnumpy(via_cai), dy_np)
    np.testing.assert_array_equal(cupy.asnumpy(via_dlpack), dy_np)


def test_cupy_stream_owner_is_kept_alive(
    cupy: ModuleType, rng: np.random.Generator
) -> None:
    """A CuPy stream is destroyed when its object dies: the handle must hold it."""
    w_np, dy_np, expected = host_problem(rng)
    h = cd.Handle()
    h.set_stream(cupy.cuda.Stream(non_blocking=True))
    gc.collect()
    w, dy = cd.Filter.from_numpy(h, w_np), cd.Tensor.from_numpy(h, dy_np)
    dx = cd.convolution_backward_data(h, w, dy, CASE.descriptor(), CASE.x_shape)
    h.synchronize()
    assert_close(dx.to_numpy(), expected, "f32", "on a CuPy stream", 5e-3)


# ---------------------------------------------------------------- JAX


def test_jax_round_trip(jax: ModuleType, rng: np.random.Generator) -> None:
    w_np, dy_np, expected = host_problem(rng)
    device = jax.devices("gpu")[0]
    w_j = jax.device_put(w_np, device)
    dy_j = jax.device_put(dy_np, device)
    h = cd.Handle()
    w = cd.Filter.from_dlpack(w_j, handle=h)
    dy = cd.Tensor.from_dlpack(dy_j, handle=h)
    assert cai_pointer(dy) == dy_j.unsafe_buffer_pointer()  # no copy in
    dx = cd.Tensor.zeros(h, CASE.x_shape)
    backward_into(h, w, dy, dx, CASE.padding)
    out = jax.dlpack.from_dlpack(dx)
    assert_close(np.asarray(out), expected, "f32", "JAX reads our result")
    del w_j, dy_j
    gc.collect()
    np.testing.assert_array_equal(dy.to_numpy(), dy_np)


@pytest.mark.parametrize("calls_before", [1, 2])
@pytest.mark.parametrize("algo_name", ["DataAlgo1", "BestEngine"])
def test_calls_are_captured_into_a_torch_cuda_graph(
    torch: ModuleType, rng: np.random.Generator, algo_name: str, calls_before: int
) -> None:
    """A call issued while PyTorch captures the handle's stream runs only when the
    graph is replayed, and reads its inputs anew each replay (no host read-back, no
    allocation, no synchronisation inside the call). After one call outside, the call
    in the capture is a repeat the library would capture as a CUDA graph of its own;
    after two, one it would replay: either way it goes into PyTorch's graph as it is."""
    w_np, dy_np, expected = host_problem(rng)
    w_t, dy_t = torch.from_numpy(w_np).cuda(), torch.from_numpy(dy_np).cuda()
    dx_t = torch.full(CASE.x_shape, float("nan"), device="cuda")
    s = torch.cuda.Stream()
    h = cd.Handle()
    h.set_stream(s)
    w = cd.Filter.from_dlpack(w_t, handle=h)
    dy = cd.Tensor.from_dlpack(dy_t, handle=h)
    dx = cd.Tensor.from_dlpack(dx_t, handle=h)
    conv = cd.ConvolutionDescriptor(padding=CASE.padding, math_type=cd.MathType.Fma)
    algo = getattr(cd, algo_name)()
    size = h.get_convolution_backward_data_workspace_size(w, dy, dx, conv, algo)
    ws = cd.Workspace(h, size)
    # Outside the capture: the first call builds what the call needs (plans, graphs).
    for _ in range(calls_before):
        h.convolution_backward_data(1.0, w, dy, conv, algo, ws, 0.0, dx)
    s.synchronize()
    dx_t.fill_(float("nan"))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=s):
        h.convolution_backward_data(1.0, w, dy, conv, algo, ws, 0.0, dx)
    torch.cuda.synchronize()
    assert torch.isnan(dx_t).all().item(), "the captured call ran during capture"
    graph.replay()
    torch.cuda.synchronize()
    assert_close(dx_t.cpu().numpy(), expected, "f32", f"{algo_name}, replayed")
    dy_t.mul_(-2.0)
    dx_t.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert_close(dx_t.cpu().numpy(), -2.0 * expected, "f32", f"{algo_name}, new dy")
