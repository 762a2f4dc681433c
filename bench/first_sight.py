"""First sight of the measured tier against PyTorch's benchmark mode, per broad-suite row,
with where our measurement's time went (`Handle.last_find_timing`).

Per row: PyTorch's first call with cudnn.benchmark = True (fresh thread, so its find
runs) and its time per call after; ours: the first call through a Handle(benchmark=True)
and DefaultAlgo (measures), the breakdown of that measurement, the number of
configurations timed, the time per call after, and a check against PyTorch's f32 dgrad.

With CUDNN_RS_FIND_TRACE=1 the library also prints each timed configuration (build time
and every timed run) to stderr; this script prints a row header there first, so the
trace can be split by row.

Usage (GPU machine):  python bench/first_sight.py --csv first_sight.csv [--batch 1]
                      python bench/first_sight.py --device cpu   # logic test only
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import broad
import report
import torch


def run_row(layer, n, cfg, ctx) -> dict:
    rec = broad.row_record(layer, n, cfg)
    label = f"{layer.name} n={n} {cfg.label}"
    print(f"== row {label}", file=sys.stderr, flush=True)
    timer = ctx["timer"]
    p = broad.make_problem(layer, n, cfg, ctx["device"], ctx["gen"])
    if ctx["device"] == "cuda":

        def call():
            return broad.torch_dgrad(p.dy, p.x, p.w, p.layer)

        rec.update(
            broad.in_fresh_thread(lambda: broad.torch_benchmark_mode(call, p, timer))
        )
    try:
        rec.update(ctx["ours"].measured(p, timer))
    except Exception as exc:
        rec["ours_measured_err"] = f"{type(exc).__name__}: {exc}"[:100]
    broad.set_torch_flags(True, False)
    t_first = rec.get("torch_bench_first_ms")
    ours_first = rec.get("ours_measured_first_ms")
    if t_first and ours_first:
        rec["ratio_first_sight"] = ours_first / t_first
    if rec.get("torch_bench_ms") and rec.get("ours_measured_ms"):
        rec["ratio_measured_vs_bench"] = rec["ours_measured_ms"] / rec["torch_bench_ms"]
    return rec


def line(rec: dict) -> str:
    def f(key, fmt="{:.1f}"):
        v = rec.get(key)
        return fmt.format(v) if isinstance(v, float) else "-"

    return (
        f"{rec['layer']:<20} n={rec['batch']:<3} {rec['dtype']:<8} {rec['layout']} "
        f"tf32={rec['tf32']!s:<5} first ours {f('ours_measured_first_ms')} ms "
        f"(find {f('ours_find_total_ms')}: heur {f('ours_find_heuristics_ms')}, "
        f"build {f('ours_find_builds_ms')}, trials {f('ours_find_trials_ms')}, "
        f"refine {f('ours_find_refine_ms')}; timed {rec.get('ours_measured_timed', '-')}) "
        f"torch {f('torch_bench_first_ms')} ms = {f('ratio_first_sight', '{:.2f}')}x | "
        f"per call ours {f('ours_measured_ms', '{:.4f}')} torch bench "
        f"{f('torch_bench_ms', '{:.4f}')} | {rec.get('ours_measured_err', 'ok')}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", default="first_sight.csv")
    ap.add_argument("--batch", choices=("both", "real", "1"), default="both")
    ap.add_argument(
        "--layers", default="", help="comma-separated substrings of layer names"
    )
    ap.add_argument("--max-minutes", type=float, default=4.0)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = ap.parse_args(argv)
    args.quick = False
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device (use --device cpu for a logic test)", file=sys.stderr)
        return 2
    cpu = args.device == "cpu"
    ctx = {
        "timer": broad.Timer(
            args.device, 2 if cpu else 20, 2 if cpu else 5, 1 if cpu else 5
        ),
        "ours": broad.Ours(args.device),
        "device": args.device,
        "gen": torch.Generator().manual_seed(14),
    }
    rows: list[dict] = []
    fields: list[str] = []
    start = time.perf_counter()
    plan = broad.plan_rows(args)
    for i, (layer, n, cfg) in enumerate(plan):
        if time.perf_counter() - start > args.max_minutes * 60:
            print(f"time budget spent: {len(plan) - i} rows not run")
            break
        rec = run_row(layer, n, cfg, ctx)
        rows.append(rec)
        fields = report.write_csv(args.csv, rows, fields)
        print(line(rec), flush=True)
    ratios = [r["ratio_first_sight"] for r in rows if "ratio_first_sight" in r]
    if ratios:
        geo = report.geo_mean(ratios)
        over = sum(r > 1.0 for r in ratios)
        print(
            f"first sight ours / torch benchmark: geo-mean {geo:.3f}, {over} rows over 1"
        )
    print(
        f"total {time.perf_counter() - start:.0f} s, {len(rows)} rows; csv: {args.csv}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
