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

With `--alone K`, each backend then runs K steps in a row, as a training loop runs one
(the rotation leaves PyTorch's memory to each backend as another left it, which can
move the step's tensors to new addresses). With `--parts`, the one-call backend's parts
are timed on the host inside the step.

Usage (GPU machine): python bench/onecall_step_probe.py [--model resnet50]
[--variant f16:cl] [--steps 12] [--parts] [--alone 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

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

# How the library issued its work so far (an empty dict from builds without the counts).
read_counts = getattr(cd._native, "_call_counts", dict)


def counted_since(before: dict) -> dict:
    """The counts that rose since `before` (a `read_counts()`), by how much."""
    return {
        k: c - before.get(k, 0)
        for k, c in read_counts().items()
        if c != before.get(k, 0)
    }


def print_row(
    name: str, med: float, base_ms: float, convs: int, counts: dict, steps: int
) -> None:
    """One backend's line: its median step, the extra time per convolution over
    `torch`'s median, and its counts per step."""
    extra = (med - base_ms) * 1e3 / convs
    per_step = " ".join(f"{k}={c / steps:.1f}" for k, c in counts.items() if c)
    print(
        f"{name:34s} {med:8.2f} ms/step  {extra:+7.1f} us/conv over torch  {per_step}"
    )


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


class TimedParts(OneCallDgrad):
    """The one-call backend, each part's host time summed (`--parts`), and the streams
    seen: PyTorch's current one inside the backward pass and the handle's."""

    name = "one-call, parts timed"

    def __init__(self) -> None:
        super().__init__()
        self.ns: dict[str, int] = {}
        self.calls = 0
        self.streams: set[tuple[int, int]] = set()

    def _t(self, part: str, t0: int) -> int:
        t1 = time.perf_counter_ns()
        self.ns[part] = self.ns.get(part, 0) + t1 - t0
        return t1

    def dgrad(self, gy, x, w, spec, mf):
        self.calls += 1
        t = time.perf_counter_ns()
        st = self.ours._state(x.device)
        t = self._t("handle state", t)
        self.streams.add((torch.cuda.current_stream(x.device).cuda_stream, st.stream))
        t = time.perf_counter_ns()
        fmt = cd.NCHW if mf == torch.contiguous_format else cd.NHWC
        fma = x.dtype == torch.float32 and not torch.backends.cudnn.allow_tf32
        conv = self.ours._conv(spec, fma)
        t = self._t("descriptor", t)
        wd = w.detach().contiguous(memory_format=mf)
        t = self._t("w.detach().contiguous", t)
        wc = cd.Filter.from_dlpack(wd, fmt, handle=st.handle)
        t = self._t("Filter.from_dlpack", t)
        dyc = cd.Tensor.from_dlpack(gy, fmt, handle=st.handle)
        t = self._t("Tensor.from_dlpack", t)
        dx = cd.convolution_backward_data(
            st.handle, wc, dyc, conv, tuple(x.shape), format=fmt
        )
        t = self._t("one-call API", t)
        out = torch.from_dlpack(dx)
        t = self._t("torch.from_dlpack", t)
        del wc, dyc, dx
        self._t("drops", t)
        return out


def parts(case, steps: int, warmup: int) -> None:
    b = TimedParts()
    for _ in range(warmup):
        step_ms(case, b, "cuda")
    b.ns.clear()
    b.calls = 0
    for _ in range(steps):
        step_ms(case, b, "cuda")
    for part, ns in b.ns.items():
        print(f"  {part:26s} {ns / b.calls / 1e3:7.1f} us/conv (host)")
    print(f"  streams (PyTorch current, handle's): {sorted(b.streams)}")


def alone(case, backends: dict, steps: int, convs: int) -> None:
    """Each backend for `steps` steps in a row, as a training loop runs one: the
    rotation above hands each backend PyTorch's memory as another backend left it, so
    the step's tensors may sit at new addresses (graphs captured again); here the
    median of the second half, over `torch`'s, and how the library issued its work
    there."""
    half = steps - steps // 2
    rows = {}
    for n, b in backends.items():
        ts, before = [], {}
        for i in range(steps):
            if i == steps // 2:
                before = read_counts()
            ts.append(step_ms(case, b, "cuda"))
        rows[n] = (statistics.median(ts[steps // 2 :]), counted_since(before))
    print(f"each backend alone, {steps} steps in a row (the second half's median):")
    for n, (med, counts) in rows.items():
        print_row(n, med, rows["torch"][0], convs, counts, half)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--variant", default="f16:cl")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument(
        "--parts", action="store_true", help="also time the one-call backend's parts"
    )
    ap.add_argument(
        "--alone",
        type=int,
        default=0,
        metavar="K",
        help="then run each backend K steps in a row (K >= 2)",
    )
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
    names = list(backends)
    for r in range(args.steps):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            before = read_counts()
            times[n].append(step_ms(case, backends[n], "cuda"))
            for k, c in counted_since(before).items():
                counts[n][k] = counts[n].get(k, 0) + c
    if args.parts:
        parts(case, args.steps, args.warmup)
    base_ms = statistics.median(times["torch"])
    print(f"{mc.name} {v.short} {v.layout}: {convs} convolutions, {cd.__version__}")
    for n, ts in times.items():
        print_row(n, statistics.median(ts), base_ms, convs, counts[n], args.steps)
    if args.alone >= 2:
        alone(case, backends, args.alone, convs)
    return 0


if __name__ == "__main__":
    train.Dispatch.backend = None
    sys.exit(main())
