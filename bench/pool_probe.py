"""Probe (issue 14, item 1): why the one-call API's GPU time per call is 1-4% over the
explicit default path on some broad-suite rows. Per row, GPU time per call (CUDA
events, broad.py's Timer) of:

- `explicit`: the explicit path with `DefaultAlgo` into PyTorch's dx;
- `explicit_native`: the same into a dx cudnn_rs allocated (`Tensor.empty`), kept;
- `one_call`: `convolution_backward_data(...)`, a fresh dx each call;
- `one_call_held`: the same with the last result kept alive (two dx alternate);

first as the process starts, then again after the device's current memory pool is
told to keep freed memory (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD` = max, through the
driver by ctypes): if the pool hands memory back to the system at every
synchronisation, each timing trial's first call maps it again.

Also the host time per call of the one-call API on a tiny problem (1x4x8x8), wall
clock over a loop, both ways.

Usage (GPU machine): python bench/pool_probe.py [--layers dw3x3_c256_28,...]
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time

import torch
from broad import CONFIGS, HALF_NCHW, LAYERS, Ours, Timer, make_problem

import cudnn_rs as cd

ROWS = (
    ("dw3x3_c256_28", CONFIGS[1]),
    ("1x1s2_256to512_56", CONFIGS[2]),
    ("1x1s2_256to512_56", CONFIGS[0]),
    ("dil2_3x3_c256_28", CONFIGS[0]),
    ("7x1_c192_17", CONFIGS[2]),
    ("3d_3x3x3_c64_16x56", CONFIGS[0]),
    ("stem7x7s2_c3_224", HALF_NCHW),
)
CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4


def keep_pool_memory() -> int:
    """Sets the current device's memory pool's release threshold to the maximum;
    returns the threshold it had."""
    cuda = ctypes.CDLL("libcuda.so.1")
    dev, pool = ctypes.c_int(), ctypes.c_void_p()
    for rc in (
        cuda.cuCtxGetDevice(ctypes.byref(dev)),
        cuda.cuDeviceGetMemPool(ctypes.byref(pool), dev),
    ):
        if rc:
            raise RuntimeError(f"driver error {rc}")
    old = ctypes.c_uint64()
    cuda.cuMemPoolGetAttribute(
        pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, ctypes.byref(old)
    )
    new = ctypes.c_uint64(2**64 - 1)
    rc = cuda.cuMemPoolSetAttribute(
        pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, ctypes.byref(new)
    )
    if rc:
        raise RuntimeError(f"driver error {rc}")
    return old.value


def row_times(ours: Ours, p, timer: Timer) -> dict:
    h = ours.h
    fmt = cd.NHWC if p.cfg.nhwc else cd.NCHW
    dx = p.new_dx()
    w, dy, dxc = ours.operands(p, h, dx)
    conv = ours.conv(p)
    marker = cd.DefaultAlgo
    explicit = Ours._explicit(h, w, dy, dxc, conv, marker)
    native = cd.Tensor.empty(h, tuple(p.x.shape), dxc.dtype, fmt)
    explicit_native = Ours._explicit(h, w, dy, native, conv, marker)
    shape = tuple(p.x.shape)

    def one_call():
        return cd.convolution_backward_data(h, w, dy, conv, shape, format=fmt)

    last: list = [None]

    def one_call_held():
        last[0] = one_call()

    out = {}
    for name, f in (
        ("explicit", explicit),
        ("explicit_native", explicit_native),
        ("one_call", one_call),
        ("one_call_held", one_call_held),
    ):
        f()
        timer.sync()
        out[name] = timer.per_call_ms(f)
    return out


def tiny_host_us(ours: Ours, n: int = 2000) -> float:
    h = ours.h
    w = cd.Filter.from_dlpack(torch.randn(4, 4, 3, 3, device="cuda"), handle=h)
    dy = cd.Tensor.from_dlpack(torch.randn(1, 4, 8, 8, device="cuda"), handle=h)
    conv = cd.ConvolutionDescriptor(padding=(1, 1), math_type=cd.MathType.Fma)
    for _ in range(50):
        cd.convolution_backward_data(h, w, dy, conv, (1, 4, 8, 8))
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            cd.convolution_backward_data(h, w, dy, conv, (1, 4, 8, 8))
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) * 1e6 / n)
    return best


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--trials", type=int, default=7)
    args = ap.parse_args()
    timer = Timer("cuda", args.reps, args.trials)
    ours = Ours("cuda")
    gen = torch.Generator().manual_seed(5)
    layers = {layer.name: layer for layer in LAYERS}
    problems = [
        make_problem(layers[name], layers[name].batch, cfg, "cuda", gen)
        for name, cfg in ROWS
    ]
    names = ("explicit", "explicit_native", "one_call", "one_call_held")
    for phase in ("as started", "pool keeps memory"):
        if phase == "pool keeps memory":
            print(f"release threshold was {keep_pool_memory()}")
        print(f"== {phase}: tiny one-call host {tiny_host_us(ours):.2f} us/call")
        print(f"{'row':40s}" + "".join(f"{n:>16s}" for n in names))
        for p in problems:
            torch.backends.cuda.matmul.allow_tf32 = p.cfg.tf32
            torch.backends.cudnn.allow_tf32 = p.cfg.tf32
            t = row_times(ours, p, timer)
            label = f"{p.layer.name} {p.cfg.label}"
            print(f"{label:40s}" + "".join(f"{t[n]:16.4f}" for n in names))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
