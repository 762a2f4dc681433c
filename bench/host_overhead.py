"""Host cost per call of the paths a PyTorch user takes, broken down (GPU machine).

Each line: microseconds per iteration of a Python loop (N iterations, one synchronise at
the end), on a tiny problem (1x4x8x8, 3x3: the GPU work is a few microseconds, so the
loop measures the host) and on a ResNet-50 layer (32x256x14x14, 3x3, f16 channels-last).

Usage: python bench/host_overhead.py [N] [LOOP]   (LOOP: run only the loops whose name
has this text, on the tiny problem: for a profiler such as py-spy --native)
"""

from __future__ import annotations

import sys
import time

import torch

import cudnn_rs as cd


def per_iter_us(f, n: int) -> float:
    for _ in range(50):
        f()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def case(label: str, shape, wshape, dtype, mf, n: int, only: str = "") -> None:
    x = torch.randn(shape, device="cuda", dtype=dtype).to(memory_format=mf)
    w = torch.randn(wshape, device="cuda", dtype=dtype).to(memory_format=mf)
    dy = torch.randn_like(torch.nn.functional.conv2d(x, w, None, 1, 1)).to(
        memory_format=mf
    )
    fmt = cd.NHWC if mf == torch.channels_last else cd.NCHW
    h = cd.Handle(stream=torch.cuda.current_stream())
    conv = cd.ConvolutionDescriptor(padding=(1, 1))
    algo = cd.DefaultAlgo()
    wt = cd.Filter.from_dlpack(w, format=fmt)
    dyt = cd.Tensor.from_dlpack(dy, format=fmt)
    dx = torch.empty_like(x, memory_format=mf)
    dxt = cd.Tensor.from_dlpack(dx, format=fmt)
    size = h.get_convolution_backward_data_workspace_size(wt, dyt, dxt, conv, algo)
    ws = cd.Workspace(h, size) if size else None

    def explicit() -> None:
        h.convolution_backward_data(1.0, wt, dyt, conv, algo, ws, 0.0, dxt)

    def workspace_query() -> None:
        h.get_convolution_backward_data_workspace_size(wt, dyt, dxt, conv, algo)

    def imports() -> None:
        cd.Filter.from_dlpack(w, format=fmt, handle=h)
        cd.Tensor.from_dlpack(dy, format=fmt, handle=h)
        cd.Tensor.from_dlpack(
            torch.empty_like(x, memory_format=mf), format=fmt, handle=h
        )

    def fresh_explicit() -> None:
        d = torch.empty_like(x, memory_format=mf)
        a = cd.Filter.from_dlpack(w, format=fmt, handle=h)
        b = cd.Tensor.from_dlpack(dy, format=fmt, handle=h)
        c = cd.Tensor.from_dlpack(d, format=fmt, handle=h)
        s = h.get_convolution_backward_data_workspace_size(a, b, c, conv, algo)
        h.convolution_backward_data(1.0, a, b, conv, algo, ws if s else None, 0.0, c)

    def one_call() -> None:
        cd.convolution_backward_data(h, wt, dyt, conv, tuple(x.shape))

    x_shape = tuple(x.shape)

    # The training-loop pattern through the explicit API: PyTorch tensors
    # imported afresh every call, then the default choice (the one-call API).
    def fresh_one_call() -> None:
        a = cd.Filter.from_dlpack(w, format=fmt, handle=h)
        b = cd.Tensor.from_dlpack(dy, format=fmt, handle=h)
        cd.convolution_backward_data(h, a, b, conv, x_shape)

    def fresh_one_call_torch_out() -> None:
        a = cd.Filter.from_dlpack(w, format=fmt, handle=h)
        b = cd.Tensor.from_dlpack(dy, format=fmt, handle=h)
        torch.from_dlpack(cd.convolution_backward_data(h, a, b, conv, x_shape))

    def import_without_handle() -> None:
        cd.Tensor.from_dlpack(dy, format=fmt)

    # The contract's spelling, word for word: a default Handle() (the legacy default
    # stream, PyTorch's default current stream) and imports without a handle.
    h0 = cd.Handle()

    # The contract's explicit sequence, every call: heuristic, workspace, the call.
    def contract_explicit() -> None:
        best = h.get_convolution_backward_data_algorithm(wt, dyt, dxt, conv)
        size = h.get_convolution_backward_data_workspace_size(wt, dyt, dxt, conv, best)
        space = cd.Workspace(h, size)
        h.convolution_backward_data(1.0, wt, dyt, conv, best, space, 0.0, dxt)

    def heuristic_alone() -> None:
        h.get_convolution_backward_data_algorithm(wt, dyt, dxt, conv)

    def contract_loop() -> None:
        a = cd.Filter.from_dlpack(w, format=fmt)
        b = cd.Tensor.from_dlpack(dy, format=fmt)
        torch.from_dlpack(cd.convolution_backward_data(h0, a, b, conv, x_shape))

    def input_grad() -> None:
        cd.conv_input_grad(tuple(x.shape), w, dy, 1, 1)

    # Training loops hand over new tensors every call: 8 grad_outputs (and results) in
    # turn, so no two consecutive calls share addresses (CUDA-graph replay never hits).
    dys = [dy.clone(memory_format=mf) for _ in range(8)]
    turn = [0]

    def input_grad_turns() -> None:
        turn[0] = (turn[0] + 1) % 8
        cd.conv_input_grad(tuple(x.shape), w, dys[turn[0]], 1, 1)

    def torch_dgrad_of(g: torch.Tensor) -> None:
        torch.ops.aten.convolution_backward(
            g,
            x,
            w,
            None,
            [1, 1],
            [1, 1],
            [1, 1],
            False,
            [0, 0],
            1,
            [True, False, False],
        )

    def torch_dgrad_turns() -> None:
        turn[0] = (turn[0] + 1) % 8
        torch_dgrad_of(dys[turn[0]])

    def torch_dgrad() -> None:
        torch_dgrad_of(dy)

    # Addresses that never repeat within the library's memory of recent calls (320 for
    # the CUDA-graph replay): 400 grad_outputs in turn, so every call runs directly, as
    # it does when a training step's tensors land at new addresses every step.
    # Made on first use: 400 copies of the ResNet-50 layer's dy are 1.3 GB.
    many: list[torch.Tensor] = []
    far = [0]

    def next_far() -> torch.Tensor:
        if not many:
            many.extend(dy.clone(memory_format=mf) for _ in range(400))
        far[0] = (far[0] + 1) % len(many)
        return many[far[0]]

    def input_grad_far() -> None:
        cd.conv_input_grad(tuple(x.shape), w, next_far(), 1, 1)

    def torch_dgrad_far() -> None:
        torch_dgrad_of(next_far())

    def one_call_far() -> None:
        a = cd.Filter.from_dlpack(w, format=fmt, handle=h)
        b = cd.Tensor.from_dlpack(next_far(), format=fmt, handle=h)
        torch.from_dlpack(cd.convolution_backward_data(h, a, b, conv, x_shape))

    # The parts of conv_input_grad's call, each alone (what PyTorch's API costs).
    from cudnn_rs import _native

    shape, strides = tuple(x.shape), tuple(dx.stride())
    raw_stream = torch._C._cuda_getCurrentRawStream
    tf32 = torch._C._get_cudnn_allow_tf32

    def part_alloc() -> None:
        dy.new_empty_strided(shape, strides).data_ptr()

    def part_reads() -> None:
        for t in (w, dy):
            _ = (t.layout, t.get_device(), t.dtype, t.data_ptr(), t.shape, t.stride())
        raw_stream(0)
        tf32()

    def part_native() -> None:
        _native._torch_input_grad(shape, w, dy, 1, 1, 1, 1)

    for name, f in [
        ("part: new_empty_strided + data_ptr", part_alloc),
        ("part: 2 tensor reads, stream, tf32 (Python)", part_reads),
        ("part: native call (no Python wrapper)", part_native),
        ("torch dgrad (aten.convolution_backward)", torch_dgrad),
        ("explicit DefaultAlgo, same operands", explicit),
        ("workspace-size query", workspace_query),
        ("3 x from_dlpack (+ torch.empty_like)", imports),
        ("fresh imports + query + explicit call", fresh_explicit),
        ("one-call API", one_call),
        ("fresh imports + one-call API", fresh_one_call),
        ("fresh imports + one-call API + torch.from_dlpack", fresh_one_call_torch_out),
        ("part: 1 x from_dlpack without a handle", import_without_handle),
        ("Handle(), imports without a handle, one-call, torch out", contract_loop),
        ("get_..._algorithm + workspace size + Workspace + call", contract_explicit),
        ("part: get_convolution_backward_data_algorithm", heuristic_alone),
        ("conv_input_grad (torch in, torch out)", input_grad),
        ("torch dgrad, 8 grad_outputs in turn", torch_dgrad_turns),
        ("conv_input_grad, 8 grad_outputs in turn", input_grad_turns),
        ("torch dgrad, 400 grad_outputs in turn", torch_dgrad_far),
        ("conv_input_grad, 400 grad_outputs in turn (no replay)", input_grad_far),
        ("fresh imports + one-call + torch out, 400 grad_outputs", one_call_far),
    ]:
        if only and only not in name:
            continue
        try:
            print(f"{label:28s} {name:56s} {per_iter_us(f, n):9.1f} us", flush=True)
        except Exception as exc:  # a broken path is a line, not the end of the run
            print(f"{label:28s} {name:56s} {type(exc).__name__}: {exc}", flush=True)


def cupy_case(n: int) -> None:
    """The same loops on CuPy arrays (tiny problem), where CuPy is installed."""
    try:
        import cupy
    except ImportError:
        print("cupy is not installed: no CuPy loops")
        return
    label = "tiny 1x4x8x8 f32 (CuPy)"
    w = cupy.random.standard_normal((4, 4, 3, 3), dtype=cupy.float32)
    dy = cupy.random.standard_normal((1, 4, 8, 8), dtype=cupy.float32)
    x_shape = (1, 4, 8, 8)
    conv = cd.ConvolutionDescriptor(padding=(1, 1))
    h0 = cd.Handle()

    def input_grad() -> None:
        cd.conv_input_grad(x_shape, w, dy, 1, 1)

    def contract_loop() -> None:
        a = cd.Filter.from_dlpack(w)
        b = cd.Tensor.from_dlpack(dy)
        cupy.from_dlpack(cd.convolution_backward_data(h0, a, b, conv, x_shape))

    for name, f in [
        ("conv_input_grad (CuPy in, CuPy out)", input_grad),
        ("Handle(), imports without a handle, one-call, cupy out", contract_loop),
    ]:
        try:
            print(f"{label:28s} {name:56s} {per_iter_us(f, n):9.1f} us", flush=True)
        except Exception as exc:  # a broken path is a line, not the end of the run
            print(f"{label:28s} {name:56s} {type(exc).__name__}: {exc}", flush=True)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    only = sys.argv[2] if len(sys.argv) > 2 else ""
    if only:  # one loop on the tiny problem (for a profiler)
        case(
            "tiny 1x4x8x8 f32",
            (1, 4, 8, 8),
            (4, 4, 3, 3),
            torch.float32,
            torch.contiguous_format,
            n,
            only,
        )
        return
    case(
        "tiny 1x4x8x8 f32",
        (1, 4, 8, 8),
        (4, 4, 3, 3),
        torch.float32,
        torch.contiguous_format,
        n,
    )
    case(
        "r50 32x256x14x14 f16 NHWC",
        (32, 256, 14, 14),
        (256, 256, 3, 3),
        torch.float16,
        torch.channels_last,
        n // 3,
    )
    cupy_case(n)


if __name__ == "__main__":
    main()
