"""Sweep (issue 14): cudnn_rs's default choice (`conv_input_grad`) against PyTorch's
default on 2-d depthwise layers of the shapes real models use beyond the broad suite's
3x3 and 7x7: 3x3 to 13x13 and 31x31 (large-kernel nets), 1xk and kx1 (separable
factorisations), stride 1 and 2, in NCHW and channels-last, f32 (TF32 off), f16, bf16.

Per row: GPU time per call of both (CUDA events, median), both first calls (wall time,
synchronised: what a new shape costs before its first result, cuDNN's run-time
compilation included), both errors against PyTorch in float64, and the kernels ours ran.
A line per row; a summary of the rows where ours is slower at the end.

Usage (GPU machine): [CUDNN_RS_DIRECT=0|all] [CUDNN_RS_DIRECT_TX=4|8] python
bench/dw_sweep.py [--quick] [--layout nchw|cl] [--only LABELS]
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import torch
from broad import Timer, set_torch_flags, torch_kernels
from direct_probe import calls
from zoo import Conv


def dw2d(c: int, k: tuple[int, int], s: int, hw: int) -> Conv:
    """A 2-d depthwise layer with 'same'-style padding k // 2."""
    pad = (k[0] // 2, k[1] // 2)
    out = tuple((hw + 2 * p - kk) // s + 1 for p, kk in zip(pad, k, strict=True))
    return Conv((c, hw, hw), (c, 1, *k), (c, *out), (s, s), pad, (1, 1), c)


# (layer, batch, label)
ROWS = [
    (dw2d(256, (3, 3), 1, 28), 32, "3x3 s1"),
    (dw2d(256, (5, 5), 1, 28), 32, "5x5 s1"),
    (dw2d(384, (7, 7), 1, 14), 32, "7x7 s1"),
    (dw2d(256, (9, 9), 1, 28), 32, "9x9 s1"),
    (dw2d(256, (11, 11), 1, 28), 32, "11x11 s1"),
    (dw2d(256, (13, 13), 1, 14), 32, "13x13 s1"),
    (dw2d(128, (31, 31), 1, 28), 16, "31x31 s1"),
    (dw2d(256, (1, 7), 1, 28), 32, "1x7 s1"),
    (dw2d(256, (7, 1), 1, 28), 32, "7x1 s1"),
    (dw2d(256, (1, 3), 1, 28), 32, "1x3 s1"),
    (dw2d(256, (3, 1), 1, 28), 32, "3x1 s1"),
    (dw2d(96, (3, 3), 2, 112), 32, "3x3 s2 112"),
    (dw2d(144, (3, 3), 2, 56), 32, "3x3 s2 56"),
    (dw2d(240, (5, 5), 2, 28), 32, "5x5 s2 28"),
    (dw2d(96, (7, 7), 2, 56), 32, "7x7 s2 56"),
    (dw2d(256, (3, 3), 1, 28), 1, "3x3 s1 N1"),
    (dw2d(144, (3, 3), 2, 56), 1, "3x3 s2 N1"),
    # Strided layers beyond 3x3/5x5/7x7 at stride 2 (the general strided entries).
    (dw2d(256, (3, 3), 3, 56), 32, "3x3 s3"),
    (dw2d(128, (5, 5), 3, 56), 32, "5x5 s3"),
    (dw2d(192, (3, 5), 2, 28), 32, "3x5 s2"),
    (dw2d(128, (9, 9), 2, 56), 32, "9x9 s2"),
    (dw2d(128, (4, 4), 2, 56), 32, "4x4 s2"),
    (dw2d(256, (2, 2), 2, 28), 32, "2x2 s2"),
    (dw2d(96, (11, 11), 4, 112), 16, "11x11 s4"),
    (dw2d(192, (3, 3), 3, 28), 1, "3x3 s3 N1"),
    # Stride-1 squares at the sizes models run them (ConvNeXt's 7x7 stages, MobileNet's
    # and EfficientNet's 3x3 and 5x5), for the four- and eight-output entries.
    (dw2d(96, (7, 7), 1, 56), 32, "7x7 s1 56"),
    (dw2d(192, (7, 7), 1, 28), 32, "7x7 s1 28"),
    (dw2d(768, (7, 7), 1, 7), 32, "7x7 s1 7"),
    (dw2d(384, (7, 7), 1, 14), 1, "7x7 s1 N1"),
    (dw2d(32, (3, 3), 1, 112), 32, "3x3 s1 112"),
    (dw2d(144, (3, 3), 1, 56), 32, "3x3 s1 56"),
    (dw2d(672, (5, 5), 1, 14), 32, "5x5 s1 14"),
]
DTYPES = [("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)]
LAYOUTS = [("nchw", torch.contiguous_format), ("cl", torch.channels_last)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="NCHW and f32/f16 only")
    ap.add_argument(
        "--layout", choices=[n for n, _ in LAYOUTS], help="this layout's rows only"
    )
    ap.add_argument("--only", help="comma-separated row labels (e.g. '3x3 s3,4x4 s2')")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    print(
        f"CUDNN_RS_DIRECT={os.environ.get('CUDNN_RS_DIRECT', '')} "
        f"CUDNN_RS_DIRECT_TX={os.environ.get('CUDNN_RS_DIRECT_TX', '')}"
    )
    timer = Timer("cuda", 20, 5, warmup=3)
    layouts = LAYOUTS[:1] if args.quick else LAYOUTS
    layouts = [lf for lf in layouts if args.layout in (None, lf[0])]
    dtypes = DTYPES[:2] if args.quick else DTYPES
    slow: list[str] = []
    ratios: list[float] = []
    only = args.only.split(",") if args.only else None
    for c, n, label in ROWS:
        if only is not None and label not in only:
            continue
        for lname, fmt in layouts:
            for name, dt in dtypes:
                set_torch_flags(tf32=False, benchmark=False)
                gen = torch.Generator(device="cuda").manual_seed(0)
                theirs, ours, err = calls(c, n, dt, fmt, gen)
                tf, of = timer.first_call_ms(theirs), timer.first_call_ms(ours)
                tt, to = timer.per_call_ms(theirs), timer.per_call_ms(ours)
                ratio = to / tt
                ratios.append(ratio)
                line = (
                    f"{label:11} N={n:2} {lname:4} {name:4} torch {tt:.4f} ours {to:.4f} "
                    f"ours/torch {ratio:.2f} first: torch {tf:7.2f} ours {of:7.2f} ms "
                    f"err ours {err(ours):.1e} torch {err(theirs):.1e}  "
                    f"ours: {torch_kernels(ours, timer)[:50]}  "
                    f"torch: {torch_kernels(theirs, timer)[:40]}"
                )
                print(line, flush=True)
                if ratio > 1.05 or of > max(5 * tf, tf + 20):
                    slow.append(line)
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(
        f"\ngeo-mean ours/torch {geo:.3f} over {len(ratios)} rows; slower or slow first:"
    )
    for line in slow:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
