"""Probe (issue 14): how fast `cudnnTransformTensor` gathers a dilated depthwise problem's
sub-grids (the space-to-batch twin, src/bwd_data/twin.rs) through strided views, by the
order of the views' dimensions and by how the gather is split, against PyTorch's copies.

dy of LR-ASPP's 5x5 dilation-2 layer (16 x 672 x 32 x 32, f16 and f32), NCHW or NHWC, into
the 2 x 2 sub-grids stacked in the batch, NHWC. cuDNN is called through ctypes.

Usage (GPU machine): python bench/transform_probe.py
"""

from __future__ import annotations

import ctypes
import itertools
import os
import sys

import torch
from broad import Timer

N, C, H, W, D = 16, 672, 32, 32, 2


# The suite's timer: calls back to back between CUDA events, median of trials.
timed = Timer("cuda", 20, 5, warmup=1).per_call_ms


def load_cudnn() -> ctypes.CDLL:
    import nvidia.cudnn

    lib = os.path.join(next(iter(nvidia.cudnn.__path__)), "lib", "libcudnn.so.9")
    return ctypes.CDLL(lib)


class Cudnn:
    def __init__(self) -> None:
        self.lib = load_cudnn()
        self.h = ctypes.c_void_p()
        assert self.lib.cudnnCreate(ctypes.byref(self.h)) == 0
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        assert self.lib.cudnnSetStream(self.h, stream) == 0

    def desc(self, dtype: int, dims, strides) -> ctypes.c_void_p:
        d = ctypes.c_void_p()
        assert self.lib.cudnnCreateTensorDescriptor(ctypes.byref(d)) == 0
        n = len(dims)
        da = (ctypes.c_int * n)(*dims)
        sa = (ctypes.c_int * n)(*strides)
        st = self.lib.cudnnSetTensorNdDescriptor(d, dtype, n, da, sa)
        assert st == 0, f"set {dims} {strides}: {st}"
        return d

    def transform(self, sd, src: int, dd, dst: int, one, zero) -> None:
        st = self.lib.cudnnTransformTensor(
            self.h,
            ctypes.byref(one),
            sd,
            ctypes.c_void_p(src),
            ctypes.byref(zero),
            dd,
            ctypes.c_void_p(dst),
        )
        assert st == 0, f"transform: {st}"


def probe(cd: Cudnn, dt, code: int, one, zero, src_fmt: str) -> str:
    """One data type and source layout: every way of gathering, timed and checked."""
    x = torch.randn(N, C, H, W, device="cuda", dtype=dt)
    if src_fmt == "nhwc":
        x = x.contiguous(memory_format=torch.channels_last)
    hs, ws = H // D, W // D
    # Reference: sub-grid (a, b) of image n is image (a D + b) N + n, NHWC.
    ref = (
        x.reshape(N, C, hs, D, ws, D)
        .permute(3, 5, 0, 2, 4, 1)
        .reshape(D * D * N, hs, ws, C)
        .contiguous()
    )
    out = torch.empty_like(ref)

    def same() -> bool:
        return torch.equal(out.float().nan_to_num(1e9), ref.float().nan_to_num(1e9))

    sN, sC, sH, sW = x.stride()
    # logical axes: a, b, n, c, hs, ws -> (src stride, dst stride, extent)
    axes = {
        "a": (sH, D * N * hs * ws * C, D),
        "b": (sW, N * hs * ws * C, D),
        "n": (sN, hs * ws * C, N),
        "c": (sC, 1, C),
        "h": (D * sH, ws * C, hs),
        "w": (D * sW, C, ws),
    }

    def descs(order: str):
        dims = [axes[k][2] for k in order]
        return (
            cd.desc(code, dims, [axes[k][0] for k in order]),
            cd.desc(code, dims, [axes[k][1] for k in order]),
        )

    results = []
    for order in ("abnchw", "abnhwc", "nchwab", "nhawbc", "nhwabc"):
        sd, dd = descs(order)

        def f(sd=sd, dd=dd):
            cd.transform(sd, x.data_ptr(), dd, out.data_ptr(), one, zero)

        out.fill_(float("nan"))
        f()
        ok = same()
        results.append(f"{order} {timed(f):.4f}{'' if ok else ' WRONG'}")
    # One 4-d transform per sub-grid.
    per = []
    for a, b in itertools.product(range(D), range(D)):
        sd, dd = descs("nchw")
        src_off = (a * sH + b * sW) * x.element_size()
        dst_off = (a * D + b) * N * hs * ws * C * x.element_size()
        per.append((sd, dd, src_off, dst_off))

    def g():
        for sd, dd, so, do in per:
            cd.transform(sd, x.data_ptr() + so, dd, out.data_ptr() + do, one, zero)

    out.fill_(float("nan"))
    g()
    ok = same()
    results.append(f"per-sub-grid {timed(g):.4f}{'' if ok else ' WRONG'}")

    def torch_copy():
        out.copy_(
            x.reshape(N, C, hs, D, ws, D)
            .permute(3, 5, 0, 2, 4, 1)
            .reshape(D * D * N, hs, ws, C)
        )

    results.append(f"torch {timed(torch_copy):.4f}")
    plain_nhwc = torch.empty_like(x, memory_format=torch.channels_last)
    results.append(f"plain layout copy {timed(lambda: plain_nhwc.copy_(x)):.4f}")
    return f"{str(dt)[6:]} from {src_fmt}: " + ", ".join(results)


def main() -> int:
    cd = Cudnn()
    for dt, code in ((torch.float16, 2), (torch.float32, 0)):
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        for src_fmt in ("nchw", "nhwc"):
            print(probe(cd, dt, code, one, zero, src_fmt), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
