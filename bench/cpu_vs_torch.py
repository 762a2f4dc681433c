"""Compare the CPU reference's fast path with PyTorch's CPU backward-data convolution.

Runs a built ``cpu_bench`` example (which prints one JSON object per layer), then times
``torch.nn.grad.conv2d_input`` on the same shapes with the same thread count, and prints
the ratio ours/torch per layer (below 1 means we are faster).

Usage::

    cargo build --release --example cpu_bench
    RAYON_NUM_THREADS=16 python bench/cpu_vs_torch.py \\
        target/release/examples/cpu_bench --csv cpu_vs_torch.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", help="path of the built cpu_bench example")
    parser.add_argument(
        "--threads",
        type=int,
        default=int(os.environ.get("RAYON_NUM_THREADS", "0")) or os.cpu_count() or 1,
        help="threads for both sides (default: RAYON_NUM_THREADS, else all cores)",
    )
    parser.add_argument("--runs", type=int, default=20, help="timed runs per layer")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs per layer")
    parser.add_argument("--csv", help="write the table to this CSV file")
    return parser.parse_args()


def run_ours(args: argparse.Namespace) -> list[dict]:
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))
    cmd = [args.binary, "--runs", str(args.runs), "--warmup", str(args.warmup)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def time_torch(layer: dict, args: argparse.Namespace) -> float:
    """Median milliseconds of torch's gradient w.r.t. the input for one layer."""
    import torch

    torch.manual_seed(0)
    n, c, k = layer["batch"], layer["in_channels"], layer["out_channels"]
    size, kernel = layer["size"], layer["kernel"]
    stride, padding = layer["stride"], layer["padding"]
    out = (size + 2 * padding - kernel) // stride + 1
    weight = torch.rand(k, c, kernel, kernel) * 2 - 1
    grad_out = torch.rand(n, k, out, out) * 2 - 1
    input_size = (n, c, size, size)

    def once() -> None:
        torch.nn.grad.conv2d_input(
            input_size, weight, grad_out, stride=stride, padding=padding
        )

    with torch.no_grad():
        for _ in range(args.warmup):
            once()
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            once()
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> int:
    args = parse_args()
    import torch

    torch.set_num_threads(args.threads)
    ours = run_ours(args)
    rows = []
    for layer in ours:
        theirs = time_torch(layer, args)
        rows.append(
            {
                "name": layer["name"],
                "shape": layer["shape"],
                "threads": args.threads,
                "ours_ms": layer["ms"],
                "torch_ms": round(theirs, 3),
                "ratio": round(layer["ms"] / theirs, 3),
            }
        )

    header = f"{'layer':<20} {'shape':<42} {'ours ms':>9} {'torch ms':>9} {'ratio':>6}"
    print(f"threads: {args.threads}, torch {torch.__version__}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['name']:<20} {r['shape']:<42} {r['ours_ms']:>9.3f} "
            f"{r['torch_ms']:>9.3f} {r['ratio']:>6.2f}"
        )
    ratios = [r["ratio"] for r in rows]
    geomean = statistics.geometric_mean(ratios) if ratios else float("nan")
    print(f"geometric mean ratio ours/torch: {geomean:.2f}; worst: {max(ratios):.2f}")

    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
