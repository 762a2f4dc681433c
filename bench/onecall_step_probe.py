"""Probe (issue 14, item 1): where the one-call API's extra time goes in a training step
(`bench/train.py --one-call`: 1.04-1.16x the Function with PyTorch's dgrad on
host-bound steps, where `conv_input_grad` takes 1.00x). Same model, batch and Function
(train.py's), the input gradient through each of:

- `torch`: PyTorch's dgrad (the baseline);
- `conv_input_grad`: train.py's default mode;
- `explicit`: `Filter/Tensor.from_dlpack` of w, dy and a dx from `torch.empty_like`,
  the explicit call with `DefaultAlgo` (train.py's fallback backend);
- `one-call`: train.py's one-call backend (imports, the one-call API, a fresh dx of
  cudnn_rs handed to PyTorch by `torch.from_dlpack`);
- `one-call, no torch.from_dlpack`: the same, the result dropped and PyTorch's dgrad
  returned instead (so the step's own tensors stay the same);
- `imports only`: the two imports, then PyTorch's dgrad.

Median step time over rounds of one step per backend (after warm-up steps), the
extra time per convolution over `torch`, and per step how the library issued its work
(`cudnn_rs._call_counts()`: graph replays, captures, direct runs, variant packs, pool
allocations).

Usage (GPU machine): python bench/onecall_step_probe.py [--model resnet50]
[--variant f16:cl] [--steps 12]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch
import train
from train import (
    ArrayDgrad,
    OneCallDgrad,
    OursDgrad,
    TorchDgrad,
    make_case,
    patch_convs,
    pick_models,
    pick_variants,
    set_tf32,
    step_ms,
)

import cudnn_rs as cd


class ImportsOnly(OneCallDgrad):
    name = "imports only"

    def dgrad(self, gy, x, w, spec, mf):
        h = self.ours._state(x.device).handle
        fmt = cd.NCHW if mf == torch.contiguous_format else cd.NHWC
        cd.Filter.from_dlpack(w.detach().contiguous(memory_format=mf), fmt, handle=h)
        cd.Tensor.from_dlpack(gy, fmt, handle=h)
        return TorchDgrad().dgrad(gy, x, w, spec, mf)


class OneCallDropped(OneCallDgrad):
    name = "one-call, no torch.from_dlpack"

    def dgrad(self, gy, x, w, spec, mf):
        self.one_call(gy, x, w, spec, mf)
        return TorchDgrad().dgrad(gy, x, w, spec, mf)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--variant", default="f16:cl")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    mc = pick_models(args.model)[0]
    v = pick_variants(args.variant)[0]
    set_tf32(v.tf32)
    torch.manual_seed(0)
    base = mc.build().cuda()
    x32 = torch.randn(mc.input_shape, device="cuda")
    labels = torch.randint(0, mc.classes, (mc.input_shape[0],), device="cuda")
    case = make_case(base, x32, labels, v)
    convs = patch_convs(base)
    backends = {
        "torch": TorchDgrad(),
        "conv_input_grad": ArrayDgrad(False),
        "explicit": OursDgrad(measured=False, cpu=False),
        "one-call": OneCallDgrad(),
        "one-call, no torch.from_dlpack": OneCallDropped(),
        "imports only": ImportsOnly(),
    }
    for b in backends.values():
        for _ in range(args.warmup):
            step_ms(case, b, "cuda")
    times: dict[str, list[float]] = {n: [] for n in backends}
    counts: dict[str, dict[str, int]] = {n: {} for n in backends}
    read_counts = getattr(cd._native, "_call_counts", dict)
    names = list(backends)
    for r in range(args.steps):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            before = read_counts()
            times[n].append(step_ms(case, backends[n], "cuda"))
            for k, v in read_counts().items():
                counts[n][k] = counts[n].get(k, 0) + v - before.get(k, 0)
    base_ms = statistics.median(times["torch"])
    print(f"{mc.name} {v.short} {v.layout}: {convs} convolutions, {cd.__version__}")
    for n, ts in times.items():
        med = statistics.median(ts)
        extra = (med - base_ms) * 1e3 / convs
        per_step = " ".join(
            f"{k}={v / args.steps:.1f}" for k, v in counts[n].items() if v
        )
        print(
            f"{n:34s} {med:8.2f} ms/step  {extra:+7.1f} us/conv over torch  {per_step}"
        )
    return 0


if __name__ == "__main__":
    train.Dispatch.backend = None
    sys.exit(main())
