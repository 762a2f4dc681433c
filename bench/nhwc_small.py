"""Probe (issue 14): GPU time per call of the default choice on channels-last depthwise
layers at stride 1, small to mid-sized (batch 1 to 16), where the kernel's channels-last
entry points have few threads (the default leaves layers under 2^22 elements of dx, 7x7
under 2^20, to cuDNN: bench/RESULTS.md). Run it twice or three times to compare:

    python bench/nhwc_small.py                        # the default
    CUDNN_RS_DIRECT=all python bench/nhwc_small.py    # the kernel on every row
    CUDNN_RS_DIRECT=0 python bench/nhwc_small.py      # cuDNN's engines

Per row: the layer, the threads of the four-channel entry (spans of four columns times a
quarter of the channels), the time per call (`broad.Timer`: 20 calls between two CUDA
events, median of 7) and the error against PyTorch in float64 (`broad.rel_err`, in the
norm; the files of 2026-12-02c hold the largest error relative to the largest value).

Usage (GPU machine): [env] python bench/nhwc_small.py [--dtypes f32,bf16,f16]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
from broad import Timer, rel_err

import cudnn_rs as cd

# (batch, channels, height = width, filter)
ROWS = [
    (1, 256, 28, 3),
    (1, 384, 14, 7),
    (1, 96, 56, 3),
    (1, 32, 112, 3),
    (1, 144, 56, 3),
    (1, 768, 7, 7),
    (1, 672, 14, 5),
    (2, 384, 14, 7),
    (4, 384, 14, 7),
    (8, 384, 14, 7),
    (4, 256, 28, 3),
    (16, 384, 14, 7),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtypes", default="f32,bf16,f16")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    print(f"CUDNN_RS_DIRECT={os.environ.get('CUDNN_RS_DIRECT', '')}")
    timer = Timer("cuda", 20, 7, warmup=3)
    h = cd.Handle(device=0, stream=torch.cuda.current_stream())
    types = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    gen = torch.Generator(device="cuda").manual_seed(3)
    for n, c, hw, k in ROWS:
        for name in args.dtypes.split(","):
            dt = types[name]
            cl = torch.channels_last
            w = torch.randn((c, 1, k, k), device="cuda", dtype=dt, generator=gen)
            dy = torch.randn((n, c, hw, hw), device="cuda", dtype=dt, generator=gen)
            w, dy = w.contiguous(memory_format=cl), dy.contiguous(memory_format=cl)
            dx = torch.empty((n, c, hw, hw), device="cuda", dtype=dt)
            dx = dx.contiguous(memory_format=cl)
            conv = cd.ConvolutionDescriptor(
                padding=(k // 2, k // 2), groups=c, math_type=cd.MathType.Fma
            )
            # The filter as NHWC too (a K x 1 x R x S tensor is dense in both layouts,
            # and from_dlpack would take it as NCHW): the problem PyTorch's cuDNN runs.
            ops = (
                cd.Filter.from_dlpack(w, format=cd.NHWC, handle=h),
                cd.Tensor.from_dlpack(dy, format=cd.NHWC, handle=h),
                cd.Tensor.from_dlpack(dx, format=cd.NHWC, handle=h),
            )
            algo = cd.DefaultAlgo()
            size = h.get_convolution_backward_data_workspace_size(*ops, conv, algo)
            ws = cd.Workspace(h, size) if size else None

            def call(ops=ops, conv=conv, algo=algo, ws=ws) -> None:
                h.convolution_backward_data(
                    1.0, ops[0], ops[1], conv, algo, ws, 0.0, ops[2]
                )

            ms = timer.per_call_ms(call)
            ref = torch.nn.grad.conv2d_input(
                dx.shape, w.double(), dy.double(), padding=k // 2, groups=c
            )
            err = rel_err(dx, ref)
            threads = n * hw * -(-hw // 4) * (c // 4)
            print(
                f"N={n:2} C={c:3} {hw:3}x{hw:<3} {k}x{k} {name:4} threads {threads:7} "
                f"{ms:.4f} ms err {err:.1e}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
