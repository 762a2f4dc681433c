"""Probe (issue 14): the depthwise convolutions of real models in NCHW half precision,
where PyTorch runs its own depthwise kernel for most shapes, and a few named zoo rows.

For each depthwise problem of the zoo's models (bench/zoo.py), at the training batch and
at batch 1, in f16/bf16/f32 NCHW: PyTorch's default dgrad; cudnn_rs's default
(`conv_input_grad`) on the NCHW tensors; and the same through channels-last copies (dy
converted before, dx converted back, by PyTorch), which is what an NHWC twin of the
problem would cost. Then, for `--named` rows, the kernels each side runs.

Usage (GPU machine): python bench/dw_probe.py [--max-minutes 3]
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from broad import Timer, torch_kernels
from broad import torch_dgrad as dgrad
from zoo import MODELS, Conv, model_convs

import cudnn_rs as cd

DW_MODELS = (
    "efficientnet_b0",
    "mobilenet_v2",
    "mnasnet1_0",
    "shufflenet_v2_x1_0",
    "convnext_small",
)


def tensors(c: Conv, n: int, dt, cl: bool):
    mf = torch.channels_last if cl else torch.contiguous_format
    w = torch.randn(c.w, device="cuda", dtype=dt).contiguous(memory_format=mf)
    dy = torch.randn((n, *c.out), device="cuda", dtype=dt).contiguous(memory_format=mf)
    x = torch.empty((n, *c.x), device="cuda", dtype=dt, memory_format=mf)
    return w, dy, x


def row(c: Conv, n: int, dt, timer: Timer) -> str:
    w, dy, x = tensors(c, n, dt, cl=False)
    args = (c.stride, c.padding, c.dilation, c.groups)
    shape = tuple(x.shape)

    def theirs():
        return dgrad(dy, x, w, c)

    def ours():
        return cd.conv_input_grad(shape, w, dy, *args)

    def twin():
        dyc = dy.contiguous(memory_format=torch.channels_last)
        return cd.conv_input_grad(shape, w, dyc, *args).contiguous()

    def twin_kernel_only():
        return cd.conv_input_grad(shape, w, dy_cl, *args)

    dy_cl = dy.contiguous(memory_format=torch.channels_last)
    times = {}
    for name, f in (
        ("torch", theirs),
        ("ours", ours),
        ("twin", twin),
        ("nhwc", twin_kernel_only),
    ):
        f()
        torch.cuda.synchronize()
        times[name] = timer.per_call_ms(f)
    ref = theirs().float()
    err = max(((g().float() - ref).norm() / ref.norm()).item() for g in (ours, twin))
    t = times
    return (
        f"{c.label():32} N={n:<3} {str(dt)[6:]:8} torch {t['torch']:.4f} ours {t['ours']:.4f} "
        f"({t['ours'] / t['torch']:.2f}) twin {t['twin']:.4f} ({t['twin'] / t['torch']:.2f}) "
        f"nhwc-kernel {t['nhwc']:.4f} err {err:.1e}"
    )


NAMED = [  # (conv, batch, dtype, channels_last, tf32)
    (Conv((96, 35, 35), (96, 96, 3, 3), (96, 35, 35), (1, 1), (1, 1), (1, 1), 1), 32),
    (Conv((64, 35, 35), (96, 64, 3, 3), (96, 35, 35), (1, 1), (1, 1), (1, 1), 1), 32),
    (Conv((48, 35, 35), (64, 48, 5, 5), (64, 35, 35), (1, 1), (2, 2), (1, 1), 1), 32),
]


def named(timer: Timer) -> None:
    torch.backends.cudnn.allow_tf32 = True
    for c, n in NAMED:
        w, dy, x = tensors(c, n, torch.float32, cl=True)
        args = (c.stride, c.padding, c.dilation, c.groups)

        def theirs(w=w, dy=dy, x=x, c=c):
            return dgrad(dy, x, w, c)

        def ours(w=w, dy=dy, x=x, args=args):
            return cd.conv_input_grad(tuple(x.shape), w, dy, *args)

        tt, to = timer.per_call_ms(theirs), timer.per_call_ms(ours)
        print(f"{c.label()} N={n} tf32:cl torch {tt:.4f} ours {to:.4f} ({to / tt:.3f})")
        print(f"   torch: {torch_kernels(theirs, timer)}")
        print(f"   ours:  {torch_kernels(ours, timer)}")
        h = cd.Handle(0, stream=torch.cuda.current_stream())
        conv = cd.ConvolutionDescriptor(
            padding=c.padding, stride=c.stride, dilation=c.dilation, groups=c.groups
        )
        e = h.get_convolution_backward_data_default(
            cd.Filter.from_dlpack(w, cd.NHWC, handle=h),
            cd.Tensor.from_dlpack(dy, cd.NHWC, handle=h),
            cd.Tensor.from_dlpack(torch.empty_like(x), cd.NHWC, handle=h),
            conv,
        )
        print(f"   default: eng{e.index} {e.knobs}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-minutes", type=float, default=3.0)
    ap.add_argument("--dtypes", default="float16,bfloat16,float32")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    timer = Timer("cuda", 20, 5, warmup=3)
    torch.backends.cudnn.benchmark = False
    try:
        named(timer)
    except Exception as exc:
        print(f"named rows failed: {type(exc).__name__}: {exc}")
    torch.backends.cudnn.allow_tf32 = False
    probs: dict = {}
    for m in DW_MODELS:
        for c in model_convs(m):
            if c.groups > 1 and c.groups == c.x[0] and c.w[1] == 1:
                probs.setdefault(c, MODELS[m][2])
    print(f"{len(probs)} depthwise problems")
    start = time.perf_counter()
    for batch1 in (False, True):
        for c, n in probs.items():
            for name in args.dtypes.split(","):
                if time.perf_counter() - start > args.max_minutes * 60:
                    print("time budget spent")
                    return 0
                try:
                    print(
                        row(c, 1 if batch1 else n, getattr(torch, name), timer),
                        flush=True,
                    )
                except Exception as exc:
                    print(
                        f"{c.label()} {name}: {type(exc).__name__}: {exc}", flush=True
                    )
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
