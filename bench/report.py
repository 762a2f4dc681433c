"""Reporting helpers the benchmark scripts share: geometric means, CSV files rewritten
after every row (a run cut short keeps what it measured), and markdown tables."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence


def geo_mean(values: Iterable[float]) -> float:
    """Geometric mean of positive values; NaN for none."""
    vals = list(values)
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else math.nan


def write_csv(
    path: str, rows: list[dict], fields: list[str] | None = None
) -> list[str]:
    """Writes `rows` with every key any row has as a column (in first-seen order, after
    `fields`); returns the columns, to pass back on the next write."""
    fields = list(fields or [])
    for r in rows:
        fields += [k for k in r if k not in fields]
    with open(path, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=fields)
        wr.writeheader()
        wr.writerows(rows)
    return fields


def markdown(
    header: Sequence[str],
    columns: Sequence[str],
    cells: Iterable[Sequence[str]],
    note: str,
    summary: Sequence[str],
) -> str:
    """A report: header lines, a table of `cells` under `columns`, a note, a summary."""
    out = [
        *header,
        "",
        "| " + " | ".join(columns) + " |",
        "|" + " --- |" * len(columns),
    ]
    out += ["| " + " | ".join(row) + " |" for row in cells]
    out += ["", note, "", *summary]
    return "\n".join(out) + "\n"
