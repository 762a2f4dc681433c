"""Derive the support table from the GPU sweep CSVs (examples/gpu_sweep.rs).

A (algorithm, configuration) pair belongs in the table when, in EVERY cuDNN build swept,
it ran and matched the CPU reference on at least one shape and never gave a wrong
result. Prints each such pair with the shapes cuDNN refused (shape-dependent limits),
then the pairs now in the table that fail the rule, and pairs outside it that pass.

Usage: python bench/support_from_sweep.py tests/data/sweep_pip.csv tests/data/sweep_system.csv
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict


def main(paths: list[str]) -> int:
    # key -> build -> (ok shapes, refused shapes, wrong shapes)
    seen: dict[tuple[str, ...], dict[str, list[set[str]]]] = defaultdict(dict)
    in_table: dict[tuple[str, ...], bool] = {}
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                key = (
                    r["algo"],
                    r["filter_type"],
                    r["filter_format"],
                    r["dy_format"],
                    r["comp_type"],
                    r["dx_format"],
                    r["conv_dims"],
                )
                sets = seen[key].setdefault(r["cudnn"], [set(), set(), set()])
                if r["status"] == "accepted":
                    sets[0].add(r["shape"])
                elif r["status"].startswith("CUDNN_STATUS_NOT_SUPPORTED"):
                    sets[1].add(r["shape"])
                else:
                    sets[2].add(f"{r['shape']}:{r['status']}:{r['max_rel_err']}")
                in_table[key] = r["in_table"] == "true"
    keep, drop, add = [], [], []
    for key, builds in sorted(seen.items()):
        ok = all(s[0] and not s[2] for s in builds.values())
        refused = sorted(set().union(*(s[1] for s in builds.values())))
        wrong = sorted(set().union(*(s[2] for s in builds.values())))
        line = " ".join(key) + (f"  refused: {','.join(refused)}" if refused else "")
        if wrong:
            line += f"  WRONG: {wrong}"
        if ok:
            keep.append(line)
            if not in_table[key]:
                add.append(line)
        elif in_table[key]:
            drop.append(line)
    print("== pairs that pass in every build (algo type wfmt dyfmt comp dxfmt dims)")
    print("\n".join(keep))
    print("\n== in the table but failing the rule (drop)")
    print("\n".join(drop) or "(none)")
    print("\n== passing but not in the table (candidates to add)")
    print("\n".join(add) or "(none)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
