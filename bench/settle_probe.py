"""Probe (issue 14): why the measured tier's trials of some engines come out slower than
the engine runs later. On the H200 the grouped f32 NCHW row's engine 1 timed 0.27-0.34 ms
in the measured tier's trials and ran at 0.23 ms afterwards, so runs where its trials
came out over 0.48 ms picked a 0.48 ms engine instead.

Per row and engine (those `find_convolution_backward_data_engine` returns, fastest
first, with the find's time): the time of each of the first calls (an event pair around
every call, so a call's host work shows too) and the steady time per call
(`broad.Timer`, calls from the second on replayed as CUDA graphs) on the row's random
operands, on zero operands (what the trials run on), with dx from cudnn_rs's pool (where
the finds' scratch dx comes from) and with dx at an offset into a larger block; and the
one-call API's steady time. On the H200 (2026-12-02) all of them agreed, and the finds,
which then issued their trials directly, reported engines of many kernels 1.5-3x
slower than they ran: the finds now time replayed calls too.

Usage (GPU machine): python bench/settle_probe.py [--rows grp32_3x3_c256_28:f32 ...]
[--calls 12] [--engines 4]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from collections.abc import Callable, Sequence

import broad
import torch
from candidates import CONFIG_OF, tag

import cudnn_rs as cd

DEFAULT_ROWS = ("grp32_3x3_c256_28:f32", "stem7x7s2_c3_224:f16nchw")


def each_call_ms(run: Callable[[], object], calls: int) -> list[float]:
    """The time of each of `calls` calls, an event pair around each."""
    out = []
    for _ in range(calls):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", nargs="*", default=list(DEFAULT_ROWS))
    ap.add_argument(
        "--calls", type=int, default=12, help="first calls timed one by one"
    )
    ap.add_argument("--engines", type=int, default=4, help="fastest engines probed")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device: the probe times GPU calls", file=sys.stderr)
        return 2
    layers = {layer.name: layer for layer in broad.LAYERS}
    timer = broad.Timer("cuda", reps=20, trials=5)
    ours = broad.Ours("cuda")
    gen = torch.Generator().manual_seed(14)
    for row in args.rows:
        name, cfg_name = row.split(":")
        layer, cfg = layers[name], CONFIG_OF[cfg_name]
        p = broad.make_problem(layer, layer.batch, cfg, "cuda", gen)
        broad.set_torch_flags(tf32=cfg.tf32, benchmark=False)
        conv = ours.conv(p)
        dx = p.new_dx()
        w, dy, dxc = ours.operands(p, ours.h, dx)
        zeros = dataclasses.replace(
            p, w=torch.zeros_like(p.w), dy=torch.zeros_like(p.dy)
        )
        zdx = zeros.new_dx()
        zw, zdy, zdxc = ours.operands(zeros, ours.h, zdx)
        found = ours.h.find_convolution_backward_data_engine(
            w, dy, dxc, conv, budget_ms=None, use_cache=False
        )
        print(f"\n== {name} N={layer.batch} {cfg.label}: {len(found)} engines found")
        shape = list(p.x.shape)
        fmt = cd.NHWC if p.cfg.nhwc else cd.NCHW
        for e in found[: args.engines]:
            label = f"{tag(e.index, e.knobs)} (find {e.time:.4f})"
            # dx from cudnn_rs's stream-ordered pool (where the finds' scratch dx comes
            # from), and torch's dx at an offset into a larger block.
            pool_dx = cd.convolution_backward_data(ours.h, w, dy, conv, shape, e)
            big = torch.empty(dx.numel() + (1 << 20), dtype=dx.dtype, device="cuda")
            off = big.narrow(0, 1 << 19, dx.numel()).view(dx.shape)
            if p.cfg.nhwc:
                off = off.view(dx.shape[0], *dx.shape[2:], dx.shape[1]).permute(
                    0, 3, 1, 2
                )
            off_dx = cd.Tensor.from_dlpack(off, format=fmt, handle=ours.h)
            cases = (
                ("random", (w, dy, dxc)),
                ("zeros", (zw, zdy, zdxc)),
                ("pooldx", (w, dy, pool_dx)),
                ("offset", (w, dy, off_dx)),
            )
            for what, ops in cases:
                run = ours._explicit(ours.h, *ops, conv, e)
                first = each_call_ms(run, args.calls)
                steady = timer.per_call_ms(run)
                calls = " ".join(f"{ms:.3f}" for ms in first)
                print(f"  {label:44} {what:6} steady {steady:.4f}  first calls {calls}")

            one_call = functools.partial(
                cd.convolution_backward_data, ours.h, w, dy, conv, shape, e
            )
            print(f"  {label:44} onecall steady {timer.per_call_ms(one_call):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
