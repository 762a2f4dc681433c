"""Probe (issue 14): a row of `bench/random_layers.py` looked at closely. The layers of a
seed are drawn again (the same draw), and each whose label holds `--match` is run:
PyTorch's default and benchmark mode, cudnn_rs's default and measured tier (GPU time per
call, CUDA events, and the kernels, by the profiler), and the engine find over every
heuristic's every knob setting (`find_convolution_backward_data_engine`, the fastest
ten). Where the measured tier loses to PyTorch's benchmark mode, this says whether a
configuration it did not time would have won.

Each side's kernels are listed with their GPU time in one call (the profiler's, in us).

Usage (GPU machine): python bench/row_probe.py --seed 5 --rows 60 --match "3x3 1024->8"
[--configs f64] (as random_layers.py's; with CUDNN_RS_FIND_TRACE=1 the measured tier's
find is traced to stderr)
"""

from __future__ import annotations

import argparse
import random
import sys

import torch
from broad import Timer, set_torch_flags, short_kernel
from direct_probe import calls
from random_layers import CONFIGS, DTYPES, draw

import cudnn_rs as cd


def kernel_times(f) -> str:
    """The GPU kernels of one call of `f`, each with its time by the profiler (us)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        f()
        torch.cuda.synchronize()
    return " + ".join(
        f"{short_kernel(ev.name)} {ev.device_time:.1f}"
        for ev in prof.events()
        if getattr(ev, "device_type", None) == DeviceType.CUDA
        and not ev.name.startswith("[")
    )


def nchw_twin(conv, n: int, dt: torch.dtype, fmt, gen, benchmark: bool):
    """cudnn_rs on NCHW copies of a channels-last layer's w and dy (drawn from `gen` as
    `calls` draws them), its dx converted back to channels last: what PyTorch does for
    f64 (the copies' cost included)."""
    w = torch.randn(conv.w, device="cuda", dtype=dt, generator=gen)
    dy = torch.randn((n, *conv.out), device="cuda", dtype=dt, generator=gen)
    w, dy = w.contiguous(memory_format=fmt), dy.contiguous(memory_format=fmt)
    shape = (n, *conv.x)
    args = (conv.stride, conv.padding, conv.dilation, conv.groups)

    def f():
        dx = cd.conv_input_grad(
            shape, w.contiguous(), dy.contiguous(), *args, benchmark=benchmark
        )
        return dx.contiguous(memory_format=fmt)

    return f


def engines(conv, n: int, dt: torch.dtype, fmt, tf32: bool) -> str:
    """The engine find's fastest ten configurations on fresh operands of the layer."""
    h = cd.Handle(0, stream=torch.cuda.current_stream())
    w = torch.randn(conv.w, device="cuda", dtype=dt).contiguous(memory_format=fmt)
    dy = torch.randn((n, *conv.out), device="cuda", dtype=dt)
    dy = dy.contiguous(memory_format=fmt)
    dx = torch.empty((n, *conv.x), device="cuda", dtype=dt).contiguous(
        memory_format=fmt
    )
    math = cd.MathType.Default
    if dt == torch.float32:
        math = cd.MathType.TensorOp if tf32 else cd.MathType.Fma
    desc = cd.ConvolutionDescriptor(
        padding=conv.padding,
        stride=conv.stride,
        dilation=conv.dilation,
        groups=conv.groups,
        math_type=math,
        comp_type=cd.f64 if dt == torch.float64 else cd.f32,  # f64 computes in f64
    )
    found = h.find_convolution_backward_data_engine(
        cd.Filter.from_dlpack(w, handle=h),
        cd.Tensor.from_dlpack(dy, handle=h),
        cd.Tensor.from_dlpack(dx, handle=h),
        desc,
        limit=256,
    )
    return ", ".join(f"eng{e.index}{e.knobs} {e.time:.4f}" for e in found[:10])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rows", type=int, default=80, help="as random_layers.py's")
    ap.add_argument("--match", required=True, help="a substring of the row's label")
    ap.add_argument(
        "--configs", default=",".join(CONFIGS), help="as random_layers.py's"
    )
    args = ap.parse_args(argv)
    configs = args.configs.split(",")
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    timer = Timer("cuda", 20, 5, warmup=3)
    drawn = 0
    while drawn < args.rows:
        row = draw(rng, configs)
        if row is None:
            continue
        drawn += 1
        conv, n, cfg, cl, family = row
        label = (
            f"{family:10} {conv.label():34} N={n:<2} {cfg:4} {'cl' if cl else 'nchw'}"
        )
        if args.match not in label:
            continue
        dt = DTYPES[cfg]
        fmt = (
            (torch.channels_last_3d if conv.nd == 3 else torch.channels_last)
            if cl
            else torch.contiguous_format
        )
        tf32 = cfg == "tf32"
        print(f"== {label}", flush=True)
        for what, benchmark in (("default", False), ("benchmark", True)):
            set_torch_flags(tf32=tf32, benchmark=benchmark)
            gen = torch.Generator(device="cuda").manual_seed(drawn)
            theirs, ours, err = calls(conv, n, dt, fmt, gen, benchmark=benchmark)
            sides = [(f"torch {what}", theirs), (f"ours {what}", ours)]
            if cl:  # ours on NCHW copies, dx converted back (as PyTorch does f64)
                gen.manual_seed(drawn)  # the same operands as `calls` drew
                twin = nchw_twin(conv, n, dt, fmt, gen, benchmark)
                sides.append((f"ours {what} nchw", twin))
            for who, f in sides:
                f()
                torch.cuda.synchronize()
                ms = timer.per_call_ms(f)
                print(
                    f"   {who:17} {ms:.4f} ms err {err(f):.1e}  "
                    f"{kernel_times(f)[:300]}",
                    flush=True,
                )
        try:
            print(f"   engines: {engines(conv, n, dt, fmt, tf32)}", flush=True)
        except cd.CudnnRsError as exc:
            print(f"   engines: {type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
