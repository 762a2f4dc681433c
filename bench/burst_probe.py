"""How a configuration's time per call depends on how many calls run back to back: the
measured tier's trials time five calls between events, bench/broad.py's timer twenty,
and a training loop runs calls for as long as it runs. For each row (as
bench/candidates.py names them), the engine find (no cache) lists the configurations;
the `--top` fastest by the find's own times are then timed with the explicit API in
bursts of 1, 5, 20 and 100 calls between events (median of 7 bursts each), in turns.

Usage (GPU machine): python bench/burst_probe.py [--rows inception_3x3_c96_35:tf32 ...]
                     [--top 4]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import broad
import torch
from candidates import CONFIG_OF, EXTRA_LAYERS, tag

BURSTS = (1, 5, 20, 100)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", nargs="*", default=["inception_3x3_c96_35:tf32"])
    ap.add_argument("--top", type=int, default=4)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    layers = {layer.name: layer for layer in [*broad.LAYERS, *EXTRA_LAYERS]}
    ours = broad.Ours("cuda")
    gen = torch.Generator().manual_seed(14)
    timers = {n: broad.Timer("cuda", reps=n, trials=7) for n in BURSTS}
    for row in args.rows:
        name, cfg_name = row.split(":")
        layer, cfg = layers[name], CONFIG_OF[cfg_name]
        p = broad.make_problem(layer, layer.batch, cfg, "cuda", gen)
        broad.set_torch_flags(tf32=cfg.tf32, benchmark=False)
        conv = ours.conv(p)
        w, dy, dxc = ours.operands(p, ours.h, p.new_dx())
        found = ours.h.find_convolution_backward_data_engine(
            w, dy, dxc, conv, budget_ms=None, use_cache=False
        )[: args.top]
        runs = [ours._explicit(ours.h, w, dy, dxc, conv, e) for e in found]
        times = {n: [0.0] * len(found) for n in BURSTS}
        for _ in range(2):  # two rounds, the better kept: the order matters less
            for n in BURSTS:
                for i, run in enumerate(runs):
                    t = timers[n].per_call_ms(run)
                    times[n][i] = t if times[n][i] == 0.0 else min(times[n][i], t)
        print(f"\n== {name} N={layer.batch} {cfg.label}")
        print(
            "  find's own"
            + "".join(f"{f'x{n}':>9}" for n in BURSTS)
            + "  configuration"
        )
        for i, e in enumerate(found):
            cells = "".join(f"{times[n][i]:9.4f}" for n in BURSTS)
            print(f"  {e.time:10.4f}{cells}  {tag(e.index, e.knobs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
