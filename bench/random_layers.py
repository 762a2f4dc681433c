"""Sweep (issue 14): cudnn_rs's default choice (`conv_input_grad`, no algorithm given)
against PyTorch's default (`cudnn.benchmark = False`) on layers drawn at random, not
chosen by us: dense, grouped, depthwise (one or two filters a channel) and
transposed-convolution-style layers (even kernels at stride 2, as a ConvTranspose
forward is this backward-data problem), 2-d and 3-d; kernels 1 to 7, non-square ones,
strides 1 to 3 (also per dimension), dilation, any padding; channel counts and spatial
sizes that are not powers of two (3, 13, 100, 17x31); batch 1 to 64; f32 (TF32 off and
on), f16, bf16 (`--configs` for others, e.g. f64); NCHW and channels-last. The layers
the suites of `bench/` were tuned on are families; these are the check that the tuning
carries over.

Per row: GPU time per call of both (CUDA events, median), both first calls (wall time,
synchronised), both errors against PyTorch in float64. A summary at the end: geo-mean,
rows over 1.05x per call, rows with a first call over max(5x PyTorch's, +20 ms), rows
whose error is over the dtype's tolerance. `--csv` writes the rows.

`--measured`: the measured tier (`benchmark=True`) against PyTorch's benchmark mode
instead; a first call then is each side's search, and ours is broken down by stage
(`Handle.last_find_timing`: heuristics, builds, trials, refine).

Usage (GPU machine): python bench/random_layers.py [--rows 80] [--seed 1] [--measured]
[--csv F]
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
import time

import torch
from broad import TOLERANCE, Timer, set_torch_flags, torch_kernels
from direct_probe import calls
from zoo import Conv

import cudnn_rs as cd

CHANNELS = [3, 8, 13, 16, 24, 32, 48, 64, 96, 100, 128, 192, 256, 384, 512, 1024]
SPATIAL = [7, 8, 13, 14, 17, 28, 31, 32, 56, 64, 112]
BATCHES = [1, 2, 8, 16, 32, 64]
CONFIGS = ["f32", "tf32", "f16", "bf16"]
# The torch type of each config's tensors.
DTYPES = {
    "f64": torch.float64,
    "f32": torch.float32,
    "tf32": torch.float32,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
}
MAX_ELEMS = 1 << 25  # per tensor
MAX_FLOPS = 4e10  # of the problem (the float64 reference runs it too)


def _out(x: int, k: int, s: int, p: int, d: int) -> int:
    return (x + 2 * p - d * (k - 1) - 1) // s + 1


def draw(
    rng: random.Random, configs: list[str] = CONFIGS
) -> tuple[Conv, int, str, bool, str] | None:
    """One random layer: (layer, batch, config, channels-last, family), or None when the
    draw is degenerate or too large (the caller draws again)."""
    nd = 3 if rng.random() < 0.2 else 2
    family = rng.choice(["dense", "dense", "grouped", "depthwise", "transposed"])
    c = rng.choice(CHANNELS)
    k = rng.choice(CHANNELS)
    groups = 1
    if family == "grouped":
        divisors = [g for g in (2, 4, 8, 16, 32, 64) if c % g == 0 and k % g == 0]
        if not divisors:
            return None
        groups = rng.choice(divisors)
    elif family == "depthwise":
        groups, k = c, c * rng.choice([1, 1, 1, 2])
    if family == "transposed":
        kernel = (rng.choice([2, 4]),) * nd
        stride = (2,) * nd
        dilation = (1,) * nd
        padding = tuple(0 if r == 2 else 1 for r in kernel)
    else:
        sizes = [1, 3, 3, 3, 5, 7] if nd == 2 else [1, 3, 3]
        r = rng.choice(sizes)
        kernel = (r,) * nd
        if nd == 2 and rng.random() < 0.2:
            kernel = rng.choice([(1, r), (r, 1), (3, 5), (5, 3), (1, 7), (7, 1)])
        if nd == 3 and rng.random() < 0.3:
            kernel = rng.choice([(1, 3, 3), (3, 1, 1), (1, 1, 1), (5, 5, 5)])
        s = rng.choice([1, 1, 1, 2, 2, 3])
        stride = (s,) * nd
        if nd == 2 and rng.random() < 0.1:
            stride = (1, 2)
        if nd == 3 and rng.random() < 0.3:
            stride = (1, 2, 2)
        d = rng.choice([1, 1, 1, 2, 3]) if max(stride) == 1 else 1
        dilation = tuple(d if r > 1 else 1 for r in kernel)
        padding = tuple(
            rng.randint(0, dd * (r - 1)) for r, dd in zip(kernel, dilation, strict=True)
        )
    if nd == 2:
        h = rng.choice(SPATIAL)
        w = h if rng.random() < 0.7 else rng.choice(SPATIAL)
        spatial: tuple[int, ...] = (h, w)
    else:
        hw = rng.choice([7, 14, 28, 56])
        spatial = (rng.choice([4, 8, 16]), hw, hw)
    out = tuple(
        _out(x, r, s, p, d)
        for x, r, s, p, d in zip(
            spatial, kernel, stride, padding, dilation, strict=True
        )
    )
    if min(out) < 1:
        return None
    n = rng.choice(BATCHES)
    taps = math.prod(kernel)
    flops = 2 * n * k * (c // groups) * math.prod(out) * taps
    while n > 1 and (
        flops > MAX_FLOPS
        or n * max(c * math.prod(spatial), k * math.prod(out)) > MAX_ELEMS
    ):
        n //= 2
        flops = 2 * n * k * (c // groups) * math.prod(out) * taps
    if flops > MAX_FLOPS or max(c * math.prod(spatial), k * math.prod(out)) > MAX_ELEMS:
        return None
    conv = Conv(
        (c, *spatial),
        (k, c // groups, *kernel),
        (k, *out),
        stride,
        padding,
        dilation,
        groups,
    )
    return conv, n, rng.choice(configs), rng.random() < 0.5, family


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=80)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--csv", help="write the rows here")
    ap.add_argument(
        "--measured",
        action="store_true",
        help="the measured tier against PyTorch's benchmark mode",
    )
    ap.add_argument("--max-minutes", type=float, default=6.0)
    ap.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help="the types drawn from (f64, f32, tf32, f16, bf16); the default keeps the "
        "draws of earlier runs",
    )
    args = ap.parse_args(argv)
    configs = args.configs.split(",")
    unknown = sorted(set(configs) - set(TOLERANCE))
    if unknown:
        ap.error(f"unknown configs {unknown}; known: {sorted(TOLERANCE)}")
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    # The measured tier on a handle of PyTorch's current stream, as `conv_input_grad`
    # makes its own, so that where each measurement went can be read from it.
    handle = (
        cd.Handle(device=0, stream=torch.cuda.current_stream(), benchmark=True)
        if args.measured
        else None
    )

    def find_timing() -> dict[str, float]:
        return dict(handle.last_find_timing()) if handle is not None else {}

    rng = random.Random(args.seed)
    timer = Timer("cuda", 20, 5, warmup=3)
    started = time.monotonic()
    records: list[dict] = []
    slow: list[str] = []
    while len(records) < args.rows:
        if time.monotonic() - started > 60 * args.max_minutes:
            print(f"time budget spent after {len(records)} rows")
            break
        drawn = draw(rng, configs)
        if drawn is None:
            continue
        conv, n, cfg, cl, family = drawn
        dt = DTYPES[cfg]
        fmt = (
            (torch.channels_last_3d if conv.nd == 3 else torch.channels_last)
            if cl
            else torch.contiguous_format
        )
        set_torch_flags(tf32=cfg == "tf32", benchmark=args.measured)
        gen = torch.Generator(device="cuda").manual_seed(len(records))
        label = (
            f"{family:10} {conv.label():34} N={n:<2} {cfg:4} {'cl' if cl else 'nchw'}"
        )
        try:
            theirs, ours, err = calls(conv, n, dt, fmt, gen, handle=handle)
            before = find_timing()
            tf = timer.first_call_ms(theirs)
            # The find's trace (CUDNN_RS_FIND_TRACE=1) split by row, as first_sight.py's.
            print(f"== row {label}", file=sys.stderr, flush=True)
            of = timer.first_call_ms(ours)
            find = find_timing()
            if find == before:  # no measurement in this call (the kernel of our own)
                find = {}
            tt, to = timer.per_call_ms(theirs), timer.per_call_ms(ours)
            e_ours, e_theirs = err(ours), err(theirs)
            kernels = torch_kernels(ours, timer)[:50]
        except Exception as exc:  # a row that fails is reported, not fatal
            print(f"{label}  FAILED {type(exc).__name__}: {exc}", flush=True)
            records.append({"row": label, "failed": f"{type(exc).__name__}: {exc}"})
            continue
        ratio = to / tt
        line = (
            f"{label} torch {tt:.4f} ours {to:.4f} ratio {ratio:.2f} "
            f"first: torch {tf:7.2f} ours {of:7.2f} ms err {e_ours:.1e} ({e_theirs:.1e})  {kernels}"
        )
        if find:
            line += "\n    find: " + ", ".join(f"{k} {v:.2f}" for k, v in find.items())
        print(line, flush=True)
        bad = []
        if ratio > 1.05:
            bad.append("slower")
        if of > max(5 * tf, tf + 20):
            bad.append("slow first")
        if not e_ours <= max(TOLERANCE[cfg], 3 * e_theirs):
            bad.append("error")
        if bad:
            slow.append(f"[{', '.join(bad)}] {line}")
        records.append(
            {
                "row": label,
                "torch_ms": tt,
                "ours_ms": to,
                "ratio": ratio,
                "torch_first_ms": tf,
                "ours_first_ms": of,
                "err_ours": e_ours,
                "err_torch": e_theirs,
                "ours_kernels": kernels,
                **{f"ours_find_{k}_ms": v for k, v in find.items()},
            }
        )
    ratios = [r["ratio"] for r in records if "ratio" in r]
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    failed = [r for r in records if "failed" in r]
    print(
        f"\ngeo-mean ours/torch {geo:.3f} over {len(ratios)} rows "
        f"(worst {max(ratios, default=float('nan')):.2f}); {len(failed)} failed; flagged:"
    )
    for line in slow:
        print("  " + line)
    if args.csv:
        keys = sorted({k for r in records for k in r}, key=lambda k: (k != "row", k))
        with open(args.csv, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=keys)
            wr.writeheader()
            wr.writerows(records)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
