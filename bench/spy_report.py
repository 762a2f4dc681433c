"""Summarises py-spy's raw (collapsed-stack) output for the frames under one frame
(by default, the training Function's backward in bench/train.py): where the host time
of the dgrad calls goes.

Usage: python bench/spy_report.py RAW_FILE [--under TEXT] [--top N]
"""

from __future__ import annotations

import argparse
import collections
import gzip


def read(path: str):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            try:
                n = int(count)
            except ValueError:
                continue
            yield stack.split(";"), n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--under", default="backward (train.py")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)
    total = under = 0
    inclusive: collections.Counter = collections.Counter()
    leaf: collections.Counter = collections.Counter()
    for frames, n in read(args.raw):
        total += n
        at = next((i for i, f in enumerate(frames) if args.under in f), None)
        if at is None:
            continue
        under += n
        below = frames[at + 1 :]
        for f in set(below):
            inclusive[f] += n
        leaf[below[-1] if below else frames[at]] += n
    print(f"{args.raw}: {total} samples, {under} under {args.under!r}")
    if not under:
        return 0
    print("inclusive (share of the samples under it):")
    for f, n in inclusive.most_common(args.top):
        print(f"  {100 * n / under:5.1f}%  {f[:150]}")
    print("self (leaf frames):")
    for f, n in leaf.most_common(args.top):
        print(f"  {100 * n / under:5.1f}%  {f[:150]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
