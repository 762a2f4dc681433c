"""Probe (issue 14): the rows of `zoo.py --models more` where the default was slowest
against PyTorch's default: dilated depthwise layers (LR-ASPP's 5x5 dilation-2) and 3-d
depthwise layers (MViT-V2's pooling) in NCHW, f16 and TF32.

Per problem and configuration: PyTorch's default and its kernels; cudnn_rs's default
(`conv_input_grad`) and its kernels; the measured tier; the graph API's engines, timed
(`find_convolution_backward_data_engine`, 2-d only); and, for a dilated problem, what a
space-to-batch twin would cost: dy split by PyTorch into its dilation x dilation
sub-grids (the batch grows by that factor, the dilation goes), the undilated problem run
by cudnn_rs in NCHW and channels-last, dx put back together by PyTorch.

Usage (GPU machine): python bench/outlier_probe.py
"""

from __future__ import annotations

import sys

import torch
from broad import Timer, set_torch_flags, torch_kernels
from broad import torch_dgrad as dgrad
from zoo import Conv

import cudnn_rs as cd

ROWS = [  # (conv, batch)
    (
        Conv((672, 32, 32), (672, 1, 5, 5), (672, 32, 32), (1, 1), (4, 4), (2, 2), 672),
        16,
    ),
    (
        Conv((960, 32, 32), (960, 1, 5, 5), (960, 32, 32), (1, 1), (4, 4), (2, 2), 960),
        16,
    ),
    (
        Conv((256, 28, 28), (256, 1, 3, 3), (256, 28, 28), (1, 1), (2, 2), (2, 2), 256),
        32,
    ),
    (
        Conv(
            (96, 8, 14, 14),
            (96, 1, 3, 3, 3),
            (96, 8, 14, 14),
            (1, 1, 1),
            (1, 1, 1),
            (1, 1, 1),
            96,
        ),
        4,
    ),
    (
        Conv(
            (96, 8, 56, 56),
            (96, 1, 3, 3, 3),
            (96, 8, 56, 56),
            (1, 1, 1),
            (1, 1, 1),
            (1, 1, 1),
            96,
        ),
        4,
    ),
]
CONFIGS = [("f16", torch.float16, False), ("tf32", torch.float32, True)]


def space_to_batch(t: torch.Tensor, d: int) -> torch.Tensor:
    """(N, C, H, W) -> (d*d*N, C, H/d, W/d): sub-grid (a, b) holds t[..., a::d, b::d]."""
    n, c, h, w = t.shape
    return (
        t.reshape(n, c, h // d, d, w // d, d)
        .permute(3, 5, 0, 1, 2, 4)
        .reshape(d * d * n, c, h // d, w // d)
    )


def batch_to_space(t: torch.Tensor, d: int) -> torch.Tensor:
    m, c, hs, ws = t.shape
    n = m // (d * d)
    return (
        t.reshape(d, d, n, c, hs, ws)
        .permute(2, 3, 4, 0, 5, 1)
        .reshape(n, c, hs * d, ws * d)
    )


def probe(c: Conv, n: int, name: str, dt, tf32: bool, timer: Timer) -> None:
    set_torch_flags(tf32=tf32, benchmark=False)
    w = torch.randn(c.w, device="cuda", dtype=dt) * 0.2
    dy = torch.randn((n, *c.out), device="cuda", dtype=dt)
    x = torch.empty((n, *c.x), device="cuda", dtype=dt)
    args = (c.stride, c.padding, c.dilation, c.groups)
    shape = tuple(x.shape)

    def theirs():
        return dgrad(dy, x, w, c)

    def ours():
        return cd.conv_input_grad(shape, w, dy, *args)

    def measured():
        return cd.conv_input_grad(shape, w, dy, *args, benchmark=True)

    ref = theirs().float()
    print(f"== {c.label()} N={n} {name}")
    for label, f in (("torch", theirs), ("ours", ours), ("measured", measured)):
        f()
        torch.cuda.synchronize()
        ms = timer.per_call_ms(f)
        err = ((f().float() - ref).norm() / ref.norm()).item()
        print(
            f"   {label:9} {ms:.4f} ms err {err:.1e}  {torch_kernels(f, timer)[:150]}"
        )
    d = c.dilation[0]
    if c.nd == 2 and d > 1 and all(p % d == 0 for p in c.padding):
        sub = Conv(
            c.x,
            c.w,
            c.out,
            c.stride,
            tuple(p // d for p in c.padding),
            (1, 1),
            c.groups,
        )
        sub_shape = (n * d * d, c.x[0], c.x[1] // d, c.x[2] // d)
        sargs = (sub.stride, sub.padding, sub.dilation, sub.groups)
        for cl in (False, True):
            mf = torch.channels_last if cl else torch.contiguous_format
            wk = w.contiguous(memory_format=mf)

            def s2b(wk=wk, mf=mf):
                dys = space_to_batch(dy, d).contiguous(memory_format=mf)
                dxs = cd.conv_input_grad(sub_shape, wk, dys, *sargs)
                return batch_to_space(dxs, d).contiguous()

            dys0 = space_to_batch(dy, d).contiguous(memory_format=mf)

            def kernel_only(wk=wk, dys0=dys0):
                return cd.conv_input_grad(sub_shape, wk, dys0, *sargs)

            s2b()
            err = ((s2b().float() - ref).norm() / ref.norm()).item()
            print(
                f"   s2b {'cl  ' if cl else 'nchw'} {timer.per_call_ms(s2b):.4f} ms "
                f"(kernel only {timer.per_call_ms(kernel_only):.4f}) err {err:.1e}  "
                f"{torch_kernels(kernel_only, timer)[:100]}"
            )
    if c.nd == 2:
        h = cd.Handle(0, stream=torch.cuda.current_stream())
        conv = cd.ConvolutionDescriptor(
            padding=c.padding,
            stride=c.stride,
            dilation=c.dilation,
            groups=c.groups,
            math_type=cd.MathType.TensorOp if tf32 else cd.MathType.Default,
        )
        try:
            found = h.find_convolution_backward_data_engine(
                cd.Filter.from_dlpack(w, cd.NCHW, handle=h),
                cd.Tensor.from_dlpack(dy, cd.NCHW, handle=h),
                cd.Tensor.from_dlpack(torch.empty_like(x), cd.NCHW, handle=h),
                conv,
                limit=64,
            )
            print(
                "   engines: "
                + ", ".join(f"eng{e.index}{e.knobs} {e.time:.4f}" for e in found[:8])
            )
        except cd.CudnnRsError as exc:
            print(f"   engines: {type(exc).__name__}: {exc}")


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    timer = Timer("cuda", 20, 5, warmup=3)
    for c, n in ROWS:
        for name, dt, tf32 in CONFIGS:
            try:
                probe(c, n, name, dt, tf32, timer)
            except Exception as exc:  # a probe that fails: say so, go on
                print(f"   failed: {type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
