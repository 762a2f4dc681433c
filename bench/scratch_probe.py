"""Whether the values of w and dy change what the engine find times (the measured tier
times on scratch operands of its own, see `scratch_operand` in src/bwd_data/policy.rs).

For each row (as bench/candidates.py names them, or `--random SEED:I,...`), the engine
find (`find_convolution_backward_data_engine`, no cache) runs on the same problem with w
and dy filled several ways; per configuration, the find's own time for each fill, and
its time per call on the row's normal random data afterwards (the truth). The fills:

- normal: N(0, 1) (w scaled by 1/sqrt(fan-in)), as bench/broad.py draws them;
- fixed-exp: random signs and mantissas at one binade, 2^-6 to 2^-5 (what the scratch
  operands held from a261692 on);
- spread-exp: random signs and mantissas, exponents uniform over 2^-14 to 2^-5;
- zeros.

Usage (GPU machine): python bench/scratch_probe.py [--rows inception_3x3_c96_35:tf32 ...]
                     [--random 13:22] [--top 8]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence

import broad
import torch
from candidates import CONFIG_OF, EXTRA_LAYERS, random_rows, tag


def binades(lo: int, hi: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """Random signs and mantissas, exponents uniform over 2^lo .. 2^hi (inclusive)."""

    def fill(t: torch.Tensor) -> torch.Tensor:
        shape = t.shape
        mant = 1.0 + torch.rand(shape, device=t.device)
        exp = torch.randint(lo, hi + 1, shape, device=t.device).float()
        sign = torch.randint(0, 2, shape, device=t.device).float() * 2 - 1
        return (sign * mant * torch.exp2(exp)).to(t.dtype)

    return fill


FILLS: dict[str, Callable[[torch.Tensor], torch.Tensor] | None] = {
    "normal": None,  # the problem's own data
    "fixed-exp": binades(-6, -6),
    "spread-exp": binades(-14, -6),
    "zeros": torch.zeros_like,
}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", nargs="*", default=["inception_3x3_c96_35:tf32"])
    ap.add_argument("--random", help="SEED:I,J,...: random_layers.py's draws")
    ap.add_argument("--top", type=int, default=8, help="configurations shown a row")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    layers = {layer.name: layer for layer in [*broad.LAYERS, *EXTRA_LAYERS]}
    rows = []
    for row in args.rows:
        name, cfg_name = row.split(":")
        rows.append((layers[name], CONFIG_OF[cfg_name]))
    if args.random:
        rows += random_rows(args.random)
    timer = broad.Timer("cuda", reps=20, trials=5)
    ours = broad.Ours("cuda")
    gen = torch.Generator().manual_seed(14)
    for layer, cfg in rows:
        p = broad.make_problem(layer, layer.batch, cfg, "cuda", gen)
        broad.set_torch_flags(tf32=cfg.tf32, benchmark=False)
        conv = ours.conv(p)
        dx = p.new_dx()
        finds: dict[str, dict[str, float]] = {}
        engines: dict = {}  # each configuration's engine, to run it on the data
        for fill_name, fill in FILLS.items():
            w = (
                p.w
                if fill is None
                else fill(p.w).contiguous(memory_format=p.memory_format)
            )
            dy = (
                p.dy
                if fill is None
                else fill(p.dy).contiguous(memory_format=p.memory_format)
            )
            wc, dyc, dxc = ours.operands(
                broad.Problem(p.layer, p.n, p.cfg, w, dy, p.x, p.ref), ours.h, dx
            )
            found = ours.h.find_convolution_backward_data_engine(
                wc, dyc, dxc, conv, budget_ms=None, use_cache=False
            )
            finds[fill_name] = {tag(e.index, e.knobs): e.time for e in found}
            for e in found:
                engines.setdefault(tag(e.index, e.knobs), e)
        w, dy, dxc = ours.operands(p, ours.h, dx)
        by_normal = sorted(finds["normal"], key=lambda k: finds["normal"][k])
        shown = by_normal[: args.top]
        for fill_name in FILLS:  # each fill's own winner too
            best = min(
                finds[fill_name], key=lambda k: finds[fill_name][k], default=None
            )
            if best is not None and best not in shown:
                shown.append(best)
        print(f"\n== {layer.name} N={layer.batch} {cfg.label}")
        print("  " + "".join(f"{f:>11}" for f in FILLS) + "   on data  configuration")
        for k in shown:
            cells = "".join(f"{finds[f].get(k, math.nan):11.4f}" for f in FILLS)
            truth = math.nan
            if k in engines:
                run = ours._explicit(ours.h, w, dy, dxc, conv, engines[k])
                truth = timer.per_call_ms(run)
            print(f"  {cells} {truth:9.4f}  {k}")
        for fill_name in FILLS:
            best = min(finds[fill_name], key=lambda k: finds[fill_name][k], default="-")
            print(f"  {fill_name} find's pick: {best}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
