"""Probe (issue 14): cudnn_rs's default choice against PyTorch's default on NCHW
depthwise layers: the families where the default lost (3-d depthwise at stride 1,
dilated depthwise, two filters a channel) and others for comparison. Run it twice, with
and without `CUDNN_RS_DIRECT=0`, to compare the depthwise kernel of our own
(`src/kernels/depthwise_dgrad.cu`) with what cuDNN runs for the same problems. Prints
times, the kernels each side ran, and both sides' errors against PyTorch in float64.

`CUDNN_RS_DIRECT=all` runs every layer the kernel can run with it (the strided ones
too), to compare it with cuDNN where the default does not take it.

Usage (GPU machine): [CUDNN_RS_DIRECT=0|all] python bench/direct_probe.py
[--other-3d | --band-2d | --multiplier] (`--other-3d`, once `--plane-3d`: only the 3-d
layers of filters other than 3x3x3, `OTHER_3D`; `--band-2d`: only 2-d layers of the entry
points taking the filter's height at run time, `BAND_2D`; `--multiplier`: layers of 3-64
filters a channel, `MULTIPLIER`). Each row also prints both sides' first call
(wall time; the first of a process includes loading).
"""

from __future__ import annotations

import os
import sys
import time

import torch
from broad import Timer, off_thread, set_torch_flags, torch_kernels
from broad import torch_dgrad as dgrad
from zoo import Conv

import cudnn_rs as cd


def dw(c, s, p, d, nd=2, k=3, m=1, hw=32, depth=8):
    """A depthwise layer; `s` an int (every dimension) or a tuple."""
    sp = (depth, hw, hw) if nd == 3 else (hw, hw)
    ks = (k,) * nd
    st = s if isinstance(s, tuple) else (s,) * nd
    out = tuple(
        (x + 2 * p - d * (k - 1) - 1) // t + 1 for x, t in zip(sp, st, strict=True)
    )
    return Conv((c, *sp), (c * m, 1, *ks), (c * m, *out), st, (p,) * nd, (d,) * nd, c)


ROWS = [
    (dw(672, 1, 4, 2, k=5), 16, "lraspp 5x5 d2"),
    (dw(960, 1, 4, 2, k=5), 16, "lraspp 5x5 d2 960"),
    (dw(256, 1, 2, 2, hw=28), 32, "3x3 d2"),
    (dw(256, 1, 4, 4, hw=28), 32, "3x3 d4"),
    (dw(96, 1, 1, 1, nd=3, hw=14), 4, "mvit 3d s1 14"),
    (dw(96, 1, 1, 1, nd=3, hw=56), 4, "mvit 3d s1 56"),
    (dw(96, 2, 1, 1, nd=3, hw=56), 4, "3d s2"),
    (dw(96, (1, 2, 2), 1, 1, nd=3, hw=14), 4, "mvit 3d s122 14"),
    (dw(96, (1, 2, 2), 1, 1, nd=3, hw=28), 4, "mvit 3d s122 28"),
    (dw(96, (1, 2, 2), 1, 1, nd=3, hw=56), 4, "mvit 3d s122 56"),
    (dw(192, 2, 2, 1, k=5, hw=28), 32, "5x5 s2"),
    (dw(96, 2, 1, 1, hw=112), 8, "3x3 s2 112"),
    (dw(192, 1, 1, 1, nd=3, hw=28, depth=16), 8, "x3d-like 3d s1"),
    (dw(256, 1, 1, 1, hw=28), 32, "3x3 s1"),
    (dw(256, 2, 1, 1, hw=56), 32, "3x3 s2"),
    (dw(384, 1, 3, 1, k=7, hw=14), 32, "7x7 s1"),
    (dw(64, 1, 1, 1, hw=56, m=2), 8, "3x3 mult2"),
    (dw(96, 1, 1, 1, hw=56), 1, "3x3 s1 N1"),
    (dw(96, 1, 1, 1, hw=56), 4, "3x3 s1 N4"),
    (dw(96, 1, 1, 1, hw=56), 8, "3x3 s1 N8"),
    (dw(32, 1, 1, 1, hw=112), 2, "3x3 s1 112"),
    (dw(144, 1, 2, 1, k=5, hw=28), 8, "5x5 s1"),
]
# 3-d depthwise filters other than 3x3x3: one plane deep (1 x k x k, MoViNet's kind;
# 1x1x1 drawn at random) and deeper (5x3x3, 3x5x5 as MoViNet has, 5x5x5 and 3x1x1 drawn
# at random), run by the entry points taking the height and depth at run time.
OTHER_3D = [
    (Conv((96, 16, 28, 28), (96, 1, 1, 5, 5), (96, 16, 28, 28), (1, 1, 1), (0, 2, 2), (1, 1, 1), 96), 8, "3d 1x5x5"),
    (Conv((192, 8, 14, 14), (192, 1, 1, 3, 3), (192, 8, 14, 14), (1, 1, 1), (0, 1, 1), (1, 1, 1), 192), 8, "3d 1x3x3"),
    (Conv((64, 16, 56, 56), (64, 1, 1, 3, 3), (64, 16, 28, 28), (1, 2, 2), (0, 1, 1), (1, 1, 1), 64), 4, "3d 1x3x3 s122"),
    (Conv((96, 4, 56, 56), (96, 1, 1, 1, 1), (96, 4, 28, 28), (1, 2, 2), (0, 0, 0), (1, 1, 1), 96), 16, "3d 1x1x1 s122"),
    (Conv((48, 8, 28, 28), (48, 1, 1, 7, 7), (48, 8, 28, 28), (1, 1, 1), (0, 3, 3), (1, 1, 1), 48), 8, "3d 1x7x7"),
    (Conv((96, 16, 28, 28), (96, 1, 1, 5, 5), (96, 16, 28, 28), (1, 1, 1), (0, 2, 2), (1, 1, 1), 96), 1, "3d 1x5x5 N1"),
    (Conv((96, 16, 28, 28), (96, 1, 5, 3, 3), (96, 16, 28, 28), (1, 1, 1), (2, 1, 1), (1, 1, 1), 96), 8, "3d 5x3x3"),
    (Conv((144, 16, 14, 14), (144, 1, 3, 5, 5), (144, 16, 14, 14), (1, 1, 1), (1, 2, 2), (1, 1, 1), 144), 8, "3d 3x5x5"),
    (Conv((64, 16, 56, 56), (64, 1, 5, 3, 3), (64, 16, 28, 28), (1, 2, 2), (2, 1, 1), (1, 1, 1), 64), 4, "3d 5x3x3 s122"),
    (Conv((24, 16, 7, 7), (48, 1, 5, 5, 5), (48, 6, 3, 3), (3, 3, 3), (2, 2, 2), (1, 1, 1), 24), 2, "3d 5x5x5 s3 m2"),
    (Conv((192, 8, 56, 56), (192, 1, 3, 1, 1), (192, 8, 56, 56), (1, 1, 1), (1, 0, 0), (1, 1, 1), 192), 4, "3d 3x1x1"),
]  # fmt: skip
# 2-d rows of the same entry points (the height at run time), to compare across builds.
BAND_2D = [
    (Conv((192, 17, 17), (192, 1, 1, 7), (192, 17, 17), (1, 1), (0, 3), (1, 1), 192), 32, "1x7"),
    (Conv((192, 17, 17), (192, 1, 7, 1), (192, 17, 17), (1, 1), (3, 0), (1, 1), 192), 32, "7x1"),
    (Conv((128, 28, 28), (128, 1, 5, 3), (128, 28, 28), (1, 1), (2, 1), (1, 1), 128), 32, "5x3"),
    (dw(96, 1, 4, 1, k=9, hw=28), 32, "9x9"),
    (Conv((96, 56, 56), (96, 1, 3, 3), (96, 19, 19), (3, 3), (1, 1), (1, 1), 96), 32, "3x3 s3"),
]  # fmt: skip
# Depthwise layers of several filters a channel (NCHW), as random draws and networks with
# a depth multiplier have them.
MULTIPLIER = [
    (dw(16, 1, 2, 1, k=5, hw=14, m=24), 1, "5x5 m24 N1"),
    (dw(16, 1, 2, 1, k=5, hw=14, m=24), 32, "5x5 m24"),
    (dw(32, 1, 1, 1, hw=56, m=4), 8, "3x3 m4"),
    (dw(64, 2, 1, 1, hw=56, m=8), 8, "3x3 s2 m8"),
    (dw(3, 2, 3, 1, k=7, hw=224, m=32), 8, "7x7 s2 3ch m32"),
    (dw(128, 1, 1, 1, hw=28, m=3), 32, "3x3 m3"),
    (dw(24, 1, 2, 2, hw=28, m=16), 4, "3x3 d2 m16"),
    (dw(256, 1, 1, 1, hw=14, m=64), 8, "3x3 m64"),
    (dw(32, 1, 1, 1, nd=3, hw=28, m=4), 2, "3d m4"),
]
DTYPES = [("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)]


def calls(
    c, n, dt, fmt=torch.contiguous_format, gen=None, benchmark=False, handle=None
):
    """Fresh random operands of layer `c` at batch `n`, type `dt`, memory format `fmt`,
    and three functions of them: PyTorch's dgrad (its default, or what its flags say),
    ours (`conv_input_grad`, the measured tier with `benchmark`, on `handle` if given),
    and a call's error against PyTorch's dgrad in float64 (relative, in the norm)."""
    w = torch.randn(c.w, device="cuda", dtype=dt, generator=gen)
    dy = torch.randn((n, *c.out), device="cuda", dtype=dt, generator=gen)
    w, dy = w.contiguous(memory_format=fmt), dy.contiguous(memory_format=fmt)
    x = torch.empty((n, *c.x), device="cuda", dtype=dt).contiguous(memory_format=fmt)
    # In a thread of its own: PyTorch's cuDNN plan cache is per thread and keyed without
    # the benchmark flag, so an f64 reference of the caller's own f64 problem run here
    # would leave PyTorch's plan cached, and its first call (its search, in benchmark
    # mode) would be timed as a cache hit.
    ref = off_thread(lambda: dgrad(dy.double(), x.double(), w.double(), c))
    shape = tuple(x.shape)
    args = (c.stride, c.padding, c.dilation, c.groups)

    def theirs():
        return dgrad(dy, x, w, c)

    def ours():
        return cd.conv_input_grad(
            shape, w, dy, *args, benchmark=benchmark, handle=handle
        )

    def err(f):
        return ((f().double() - ref).norm() / ref.norm()).item()

    return theirs, ours, err


def host(timer: Timer) -> None:
    """Host time per call of the one-call API on a tiny depthwise problem (1x8x8x8, 3x3,
    so that the GPU waits on the host): wall time of 2000 calls, best of five."""
    c = dw(8, 1, 1, 1, hw=8)
    for name, dt in DTYPES:
        w = torch.randn(c.w, device="cuda", dtype=dt)
        dy = torch.randn((1, *c.out), device="cuda", dtype=dt)
        args = ((1, *c.x), w, dy, c.stride, c.padding, c.dilation, c.groups)
        best = float("inf")
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(2000):
                cd.conv_input_grad(*args)
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t0) / 2000 * 1e6)
        kernels = torch_kernels(lambda args=args: cd.conv_input_grad(*args), timer)
        print(f"host: tiny 3x3 depthwise {name:5} {best:.2f} us a call  {kernels[:60]}")


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    print(f"CUDNN_RS_DIRECT={os.environ.get('CUDNN_RS_DIRECT', '')}")
    timer = Timer("cuda", 20, 5, warmup=3)
    if "--other-3d" in sys.argv or "--plane-3d" in sys.argv:
        rows = OTHER_3D
    elif "--band-2d" in sys.argv:
        rows = BAND_2D
    elif "--multiplier" in sys.argv:
        rows = MULTIPLIER
    else:
        rows = ROWS
        host(timer)
    for c, n, label in rows:
        for name, dt in DTYPES:
            set_torch_flags(tf32=False, benchmark=False)
            theirs, ours, err = calls(c, n, dt)
            firsts = []
            for f in (theirs, ours):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                f()
                torch.cuda.synchronize()
                firsts.append((time.perf_counter() - t0) * 1e3)
            tt, to = timer.per_call_ms(theirs), timer.per_call_ms(ours)
            print(
                f"{label:18} N={n:3} {name:5} first torch {firsts[0]:.2f} ours "
                f"{firsts[1]:.2f} ms; torch {tt:.4f} ours {to:.4f} "
                f"ours/torch {to / tt:.2f} err ours {err(ours):.1e} "
                f"torch {err(theirs):.1e}  {torch_kernels(ours, timer)[:60]}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
