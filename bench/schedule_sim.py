"""Replays the measured tier's find traces (``CUDNN_RS_FIND_TRACE=1``, as
``bench/first_sight.py`` saves them) under other schedules, without a GPU: what a
first sight would cost and what it would pick if some configurations or runs were
left out.

Each traced configuration lists its runs in order (the warm-up call first, then the
sizing call and the trials, ``calls x ms per call``). A schedule here can only leave
runs or configurations out, never add any: the replay keeps a configuration's runs up
to where the schedule stops it, and counts their GPU time plus ``--sync-ms`` per run
(the event wait). Its pick is the fastest kept configuration by its best kept run (the
refine stage is left as traced, or with ``--refine`` taken as exact); the regret of a
row is that pick's traced best time over the fastest traced configuration's.

    python bench/schedule_sim.py bench/find_trace_2026-12-01b.txt.gz \\
        --first-sight bench/first_sight_2026-12-01b.csv --drop-source MODE_B
    ... --fallback-min-engines 6        # fallback-only engines only after < 6 ranked ones
    ... --lazy-fallback 6               # the fallback list asked only after < 6 ranked
    ... --setting-warm-spread 2.0       # other knob settings: no run after a warm-up this
                                        # many times the fastest
    ... --max-configs 10                # at most this many configurations per row
    ... --tail-spread 4                 # first stage ends at a configuration this many
                                        # times the fastest (the code: 4; 10 before)
    ... --contender-spread 1.5          # no more trials once a configuration's best run
                                        # is this many times the fastest (the code: 2)
    ... --setting-tail-spread 3         # second stage: an engine's later settings are
                                        # left out after one this many times the fastest
    ... --max-trials 2                  # at most this many trials a configuration
    ... --trial-spread 1.15             # no more trials after one of several calls this
                                        # many times the fastest (lone calls not counted)
    ... --refine                        # count the refine stage as exact (the fastest
                                        # of the up to three within 15%)
    ... --screen --screen-ms 0.1        # where a configuration's one call after its
                                        # warm-up lasts 0.1 ms, that call alone; the
                                        # refine stage (exact) picks among the close ones
    ... --warm-cut 1.5 --warm-cut-ms 0.1  # no timed call after a warm-up 1.5 times the
                                        # fastest, once the fastest lasts 0.1 ms
    ... --setting-limit 3 --setting-limit-ms 0.1  # second stage: at most 3 other
                                        # settings an engine, once the fastest lasts 0.1 ms
    ... --first-stage-engines 6 --first-stage-ms 0.1  # first stage: no engine after six
                                        # ranked ones, once the fastest lasts 0.1 ms
    ... --breakdown                     # where each first sight's time went (traces
                                        # with capture and wall times, 2026-12-02g on)
    ... --refine-long-top 2 --refine-long-rounds 2  # the traced refine stage replayed
                                        # with two plans in two rounds where the fastest
                                        # call lasts --refine-long-ms (0.1)

Prints one line per row that changes and a summary (trial time, rows whose pick is
slower than the best by more than 1%, estimated first sights against PyTorch's
benchmark mode).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import math
import re
from dataclasses import dataclass, field

DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64"}
CONFIG = re.compile(
    r"cudnn_rs find: engine (\d+)( \[[^\]]*\])? build ([\d.]+) ms ws (\d+)"
    r"(?: nodes \d+)?(?: prep (?P<prep>[\d.]+) ms wall (?P<wall>[\d.]+) ms)?"
    r"(?: from (\S+))?(?: replayed| direct| held)? ->(\S+) runs(.*)"
)
RUN = re.compile(r"(\d+)x([\d.]+)")
HEURISTIC = re.compile(
    r"cudnn_rs find: heuristic CUDNN_HEUR_(\S+): \d+ configurations in ([\d.]+) ms"
)
# (Traces from 2026-12-02g on.) How long reading a heuristic's results took.
HEURISTIC_READ = re.compile(
    r"cudnn_rs find: heuristic CUDNN_HEUR_(\S+) finalized in .* read in ([\d.]+)"
)
TOTAL = re.compile(
    r"FindTiming \{ total: ([\d.]+)(ms|µs|ns|s),.*trials: ([\d.]+)(ms|µs|ns|s)"
    r"(?:, refine: ([\d.]+)(ms|µs|ns|s))?"
)
UNIT = {"s": 1e3, "ms": 1.0, "µs": 1e-3, "ns": 1e-6}
REFINE_RUNS = re.compile(r"FindTiming \{.*\} runs(.*)")


@dataclass
class Config:
    engine: int
    knobs: str
    source: str
    best: float
    runs: list[tuple[int, float]]
    # Capturing (and instantiating) its call, and its whole timing, in ms (NaN in traces
    # before 2026-12-02g).
    prep: float = math.nan
    wall: float = math.nan


@dataclass
class Row:
    name: str
    configs: list[Config] = field(default_factory=list)
    total_ms: float = math.nan
    trials_ms: float = math.nan
    refine_ms: float = 0.0
    heuristics: dict[str, float] = field(default_factory=dict)
    # Of each heuristic's time, reading its results (traces from 2026-12-02g on).
    heuristic_reads: dict[str, float] = field(default_factory=dict)
    # The refine stage's runs in the order they ran: rounds of one run per close plan.
    refine_runs: list[tuple[int, float]] = field(default_factory=list)


def read_trace(path: str) -> list[Row]:
    rows: list[Row] = []
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("== row "):
                rows.append(Row(line[len("== row ") :]))
                continue
            if not rows:
                continue
            r = HEURISTIC_READ.match(line)
            if r:
                rows[-1].heuristic_reads[r.group(1)] = float(r.group(2))
                continue
            h = HEURISTIC.match(line)
            if h:
                rows[-1].heuristics[h.group(1)] = float(h.group(2))
                continue
            m = CONFIG.match(line)
            if m:
                best = float(m.group(8)) if m.group(8) != "inf" else math.inf
                runs = [(int(n), float(ms)) for n, ms in RUN.findall(m.group(9))]
                source = (m.group(7) or "").replace("Some(CUDNN_HEUR_", "").rstrip(")")
                timing = [float(m[k]) if m[k] else math.nan for k in ("prep", "wall")]
                rows[-1].configs.append(
                    Config(
                        int(m.group(1)),
                        (m.group(2) or "").strip(),
                        source,
                        best,
                        runs,
                        *timing,
                    )
                )
                continue
            t = TOTAL.search(line)
            if t:
                rows[-1].total_ms = float(t.group(1)) * UNIT[t.group(2)]
                rows[-1].trials_ms = float(t.group(3)) * UNIT[t.group(4)]
                if t.group(5):
                    rows[-1].refine_ms = float(t.group(5)) * UNIT[t.group(6)]
                r = REFINE_RUNS.search(line)
                if r:
                    rows[-1].refine_runs = [
                        (int(n), float(ms)) for n, ms in RUN.findall(r.group(1))
                    ]
    return rows


def csv_key(name: str) -> tuple[str, ...]:
    """(layer, batch, dtype, layout, tf32) of a trace row, as first_sight.py's CSV; a
    row of random_layers.py (whose CSV names each row by its label): the label's words."""
    parts = name.split()
    if len(parts) < 4 or parts[2] not in DTYPES:
        return tuple(parts)
    layer, batch, dtype, layout = parts[0], parts[1][2:], DTYPES[parts[2]], parts[3]
    tf32 = ""
    if dtype == "float32":
        tf32 = "True" if "tf32" in parts[4:] else "False"
    return layer, batch, dtype, layout, tf32


def fallback_unasked(row: Row, min_ranked: int) -> bool:
    """Whether a timing that asks the fallback list only while fewer than ``min_ranked``
    ranked engines have been timed (``--lazy-fallback``) would not ask it for this row:
    as many were timed before its first configuration from that list."""
    ranked: set[int] = set()
    for c in row.configs:
        if "FALLBACK" in c.source:
            return len(ranked) >= min_ranked
        if math.isfinite(c.best):
            ranked.add(c.engine)
    return False


def simulate(row: Row, args: argparse.Namespace) -> tuple[float, Config | None, int]:
    """(trial ms, pick, configurations run) of a row under the schedule in args."""
    unasked = bool(args.lazy_fallback) and fallback_unasked(row, args.lazy_fallback)
    ranked: list[int] = []  # engines ranked by a heuristic other than the fallback list
    seen: set[int] = set()
    fastest = math.inf
    pick: Config | None = None
    cost = 0.0
    timed = 0
    kept: list[tuple[float, Config]] = []
    first_stage_over = False
    dropped_engines: set[int] = set()
    settings: dict[int, int] = {}  # configurations of each engine timed so far
    for c in row.configs:
        if args.drop_source and args.drop_source in c.source:
            continue
        if unasked and "FALLBACK" in c.source:
            continue
        second = c.engine in seen
        if not second and first_stage_over:
            continue
        if second and c.engine in dropped_engines:
            continue
        if args.max_configs and timed >= args.max_configs:
            break
        if args.budget and cost > args.budget * fastest:
            break
        if second and args.no_second_stage:
            continue
        if (
            second
            and args.setting_limit
            and fastest >= args.setting_limit_ms
            and settings.get(c.engine, 0) > args.setting_limit
        ):
            continue
        fallback_only = "FALLBACK" in c.source and c.engine not in ranked
        if (
            fallback_only
            and args.fallback_min_engines
            and len(ranked) >= args.fallback_min_engines
        ):
            continue
        if (
            not second
            and args.first_stage_engines
            and fastest >= args.first_stage_ms
            and len(ranked) >= args.first_stage_engines
        ):
            continue
        if "FALLBACK" not in c.source and c.engine not in ranked:
            ranked.append(c.engine)
        other_setting = c.engine in seen
        seen.add(c.engine)
        settings[c.engine] = settings.get(c.engine, 0) + 1
        runs = c.runs
        if other_setting and args.setting_warm_spread and runs:
            warm = runs[0][1]
            if (
                warm > args.setting_warm_spread * fastest
                and fastest >= args.warm_cut_ms
            ):
                runs = runs[:1]
        if (
            args.warm_cut
            and runs
            and fastest >= args.warm_cut_ms
            and runs[0][1] > args.warm_cut * fastest
        ):
            # No timed call after a warm-up this many times the fastest.
            runs = runs[:1]
        if args.screen and len(runs) > 1 and runs[1][1] >= args.screen_ms:
            # The warm-up and one timed call; the close ones get the refine stage.
            runs = runs[:2]
        if args.max_trials:
            # At most this many trials after the warm-up and the sizing call.
            runs = runs[: 2 + args.max_trials]
        if args.contender_spread and len(runs) > 2:
            # Trials stop once the best run so far is this many times the fastest.
            trial_runs = runs[:2]
            for run in runs[2:]:
                if (
                    min(ms for _, ms in trial_runs[1:])
                    > args.contender_spread * fastest
                ):
                    break
                trial_runs.append(run)
            runs = trial_runs
        if args.trial_spread:
            # After a run of several calls (a trial), no more trials once the best of
            # them is this many times the fastest.
            trial_runs, best_trial = [], math.inf
            for run in runs:
                if run[0] > 1:
                    if (
                        best_trial > args.trial_spread * fastest
                        and best_trial < math.inf
                    ):
                        break
                    best_trial = min(best_trial, run[1])
                trial_runs.append(run)
            runs = trial_runs
        if args.single_call_ms and len(runs) > 2 and runs[1][1] >= args.single_call_ms:
            # Trials of one call each once a call lasts this long (an approximation:
            # the trial's mean stands for its one call).
            runs = runs[:2] + [(1, ms) for _, ms in runs[2:]]
        timed += 1
        cost += sum(n * ms + args.sync_ms for n, ms in runs)
        # The warm-up call does not count toward the time when later runs exist.
        timed_runs = runs[1:] or runs
        best = min((ms for _, ms in timed_runs), default=math.inf)
        kept.append((best, c))
        if not second and args.tail_spread and best >= args.tail_spread * fastest:
            first_stage_over = True
        if (
            second
            and args.setting_tail_spread
            and best >= args.setting_tail_spread * fastest
        ):
            dropped_engines.add(c.engine)
        if best < fastest:
            fastest = best
            pick = c
    if args.screen and kept:
        # Screened: the up to --refine-top within --refine-spread of the fastest by their
        # one call are timed again (three trials each of enough calls to last 0.25 ms),
        # taken as exact.
        kept.sort(key=lambda bc: bc[0])
        close = [
            c
            for b, c in kept[: args.refine_top]
            if b <= args.refine_spread * kept[0][0]
        ]
        calls = max(1, min(50, math.ceil(0.25 / max(kept[0][0], 1e-6))))
        if len(close) > 1:  # (the crate refines nothing for one close plan)
            cost += sum(3 * (calls * c.best + args.sync_ms) for c in close)
        pick = min(close, key=lambda c: c.best)
        return cost, pick, timed
    if args.refine and kept:
        # The refine stage, taken as exact: the fastest by the traced time of the up to
        # three kept within 15% of the kept fastest.
        kept.sort(key=lambda bc: bc[0])
        close = [
            c
            for b, c in kept[: args.refine_top]
            if b <= args.refine_spread * kept[0][0]
        ]
        pick = min(close, key=lambda c: c.best)
    return cost, pick, timed


def refine_replay(
    row: Row, args: argparse.Namespace
) -> tuple[float, float, float] | None:
    """(traced refine ms of calls, replayed ms, regret) of a row whose trace has the
    refine stage's runs, that stage limited to ``--refine-long-top`` plans and
    ``--refine-long-rounds`` rounds where the fastest call lasts ``--refine-long-ms``;
    the regret is the limited pick's traced best over the traced fastest. None where
    the trace has no refine runs, or they do not match the close plans."""
    bests = sorted(c.best for c in row.configs if math.isfinite(c.best))
    if not bests or not row.refine_runs:
        return None
    close = [b for b in bests[: args.refine_top] if b <= args.refine_spread * bests[0]]
    k, runs = len(close), row.refine_runs
    if k < 2 or len(runs) % k:
        return None
    rounds = len(runs) // k
    per_plan = [[runs[r * k + i] for r in range(rounds)] for i in range(k)]
    full = [min(ms for _, ms in p) for p in per_plan]
    top, kept_rounds = k, rounds
    if bests[0] >= args.refine_long_ms:
        top = min(k, args.refine_long_top or k)
        kept_rounds = min(rounds, args.refine_long_rounds or rounds)
    limited = [min(ms for _, ms in p[:kept_rounds]) for p in per_plan[:top]]
    pick = min(range(top), key=lambda i: limited[i])
    traced = sum(n * ms + args.sync_ms for n, ms in runs)
    replayed = sum(
        n * ms + args.sync_ms for p in per_plan[:top] for n, ms in p[:kept_rounds]
    )
    return traced, replayed, full[pick] / min(full)


def breakdown(row: Row) -> dict[str, float]:
    """Where a traced first sight's time went (ms): the configurations' calls on the GPU,
    their captures, their whole timing (wall), the rest of it (the launches, event
    waits and host work around the calls), the heuristics (reading their results among
    it) and the refine stage; and the counts of configurations, runs and calls. Wall,
    capture and the rest are NaN in traces before 2026-12-02g."""
    timed = [c for c in row.configs if c.runs]
    gpu = sum(n * ms for c in timed for n, ms in c.runs)
    prep = sum(c.prep for c in timed)
    wall = sum(c.wall for c in timed)
    return {
        "configs": len(timed),
        "runs": sum(len(c.runs) for c in timed),
        "calls": sum(n for c in timed for n, _ in c.runs),
        "gpu_ms": gpu,
        "capture_ms": prep,
        "wall_ms": wall,
        "rest_ms": wall - gpu - prep,
        "heuristics_ms": sum(row.heuristics.values()),
        "read_ms": sum(row.heuristic_reads.values()),
        "refine_ms": row.refine_ms,
        "total_ms": row.total_ms,
    }


def print_breakdown(rows: list[Row]) -> None:
    """``--breakdown``: one line per row and the sums."""
    totals: dict[str, float] = {}
    for row in rows:
        b = breakdown(row)
        for k, v in b.items():
            totals[k] = totals.get(k, 0.0) + (0.0 if math.isnan(v) else v)
        print(
            f"{row.name[:58]:58s} configs {b['configs']:3.0f} runs {b['runs']:4.0f} "
            f"calls {b['calls']:5.0f} gpu {b['gpu_ms']:7.2f} capture "
            f"{b['capture_ms']:6.2f} wall {b['wall_ms']:7.2f} heuristics "
            f"{b['heuristics_ms']:5.2f} (read {b['read_ms']:5.2f}) refine "
            f"{b['refine_ms']:5.2f} total {b['total_ms']:7.2f}"
        )
    timed = any(not math.isnan(breakdown(row)["wall_ms"]) for row in rows)
    if not timed:  # a trace without capture and wall times
        for k in ("capture_ms", "wall_ms", "rest_ms"):
            totals.pop(k, None)
    line = f"\n{len(rows)} rows: " + ", ".join(
        f"{k} {v:.1f}" for k, v in totals.items()
    )
    if timed:
        per_run = 1e3 * totals["rest_ms"] / max(totals["runs"], 1)
        line += f"; the rest {per_run:.1f} us a timed run"
    print(line)


def parser() -> argparse.ArgumentParser:
    """The command line: every schedule option, off by default."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument(
        "--breakdown",
        action="store_true",
        help="print where each traced first sight's time went, and nothing else",
    )
    ap.add_argument(
        "--first-sight",
        help="first_sight.py's (or random_layers.py --measured's) CSV of the same run",
    )
    ap.add_argument(
        "--drop-source", default="", help="leave out this heuristic's configurations"
    )
    ap.add_argument("--fallback-min-engines", type=int, default=0)
    ap.add_argument(
        "--lazy-fallback",
        type=int,
        default=0,
        help="ask the fallback list only while fewer ranked engines were timed",
    )
    ap.add_argument("--setting-warm-spread", type=float, default=0.0)
    ap.add_argument("--max-configs", type=int, default=0)
    ap.add_argument("--tail-spread", type=float, default=0.0)
    ap.add_argument("--contender-spread", type=float, default=0.0)
    ap.add_argument("--max-trials", type=int, default=0)
    ap.add_argument(
        "--trial-spread",
        type=float,
        default=0.0,
        help="no more trials once a trial's best is this many times the fastest",
    )
    ap.add_argument(
        "--refine", action="store_true", help="count the refine stage as exact"
    )
    ap.add_argument(
        "--screen",
        action="store_true",
        help="one timed call a configuration, then the refine stage (taken as exact)",
    )
    ap.add_argument("--refine-top", type=int, default=3)
    ap.add_argument("--refine-spread", type=float, default=1.15)
    for name, text in (
        ("--refine-long-top", "the refine stage re-times at most this many plans ..."),
        ("--refine-long-rounds", "... in this many rounds ..."),
    ):
        ap.add_argument(name, type=int, default=0, help=text)
    ap.add_argument(
        "--refine-long-ms",
        type=float,
        default=0.1,
        help="... where the fastest call lasts this long (replays the traced refine)",
    )
    # The rules on call lengths: each off at 0.
    for name, kind, text in (
        (
            "--screen-ms",
            float,
            "screen only configurations whose one call lasts this long",
        ),
        (
            "--warm-cut",
            float,
            "no timed call after a warm-up this many times the fastest",
        ),
        (
            "--warm-cut-ms",
            float,
            "--warm-cut only once the fastest call lasts this long",
        ),
        (
            "--setting-limit",
            int,
            "second stage: at most this many other settings an engine",
        ),
        (
            "--setting-limit-ms",
            float,
            "--setting-limit once the fastest lasts this long",
        ),
        (
            "--first-stage-engines",
            int,
            "first stage: no engine after this many ranked ones",
        ),
        (
            "--first-stage-ms",
            float,
            "--first-stage-engines once the fastest lasts this long",
        ),
    ):
        ap.add_argument(name, type=kind, default=kind(0), help=text)
    ap.add_argument("--setting-tail-spread", type=float, default=0.0)
    ap.add_argument(
        "--budget",
        type=float,
        default=0.0,
        help="no configuration after the trials took this many times the fastest call",
    )
    ap.add_argument("--no-second-stage", action="store_true")
    ap.add_argument(
        "--single-call-ms",
        type=float,
        default=0.0,
        help="trials of one call once a call lasts this many ms",
    )
    ap.add_argument(
        "--refine-under-ms",
        type=float,
        default=0.0,
        help="the refine stage only where the fastest call is shorter than this",
    )
    ap.add_argument("--sync-ms", type=float, default=0.03)
    ap.add_argument("--regret", type=float, default=1.01)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    rows = [r for r in read_trace(args.trace) if r.configs]
    if args.breakdown:
        print_breakdown(rows)
        return 0
    # The schedule the trace ran (nothing left out).
    base = argparse.Namespace(
        **{
            **vars(args),
            "drop_source": "",
            "fallback_min_engines": 0,
            "lazy_fallback": 0,
            "setting_warm_spread": 0.0,
            "max_configs": 0,
            "tail_spread": 0.0,
            "contender_spread": 0.0,
            "trial_spread": 0.0,
            "max_trials": 0,
            "setting_tail_spread": 0.0,
            "budget": 0.0,
            "no_second_stage": False,
            "single_call_ms": 0.0,
            "refine_under_ms": 0.0,
            "screen": False,
            "setting_limit": 0,
            "first_stage_engines": 0,
            "warm_cut": 0.0,
        }
    )
    torch_first: dict[tuple[str, ...], tuple[float, float]] = {}
    if args.first_sight:
        with open(args.first_sight) as f:
            for r in csv.DictReader(f):
                if "row" in r:  # random_layers.py --measured
                    if r.get("failed"):
                        continue
                    key = tuple(r["row"].split())
                    torch_first[key] = (
                        float(r["torch_first_ms"]),
                        float(r["ours_first_ms"]),
                    )
                    continue
                key = (r["layer"], r["batch"], r["dtype"], r["layout"], r["tf32"])
                torch_first[key] = (
                    float(r["torch_bench_first_ms"]),
                    float(r["ours_measured_first_ms"]),
                )
    totals = {"base": 0.0, "sim": 0.0}
    worse = over_base = over_sim = 0
    for row in rows:
        best = min(c.best for c in row.configs)
        base_cost, _, base_n = simulate(row, base)
        cost, pick, n = simulate(row, args)
        # A heuristic left out is not asked either.
        lazy = bool(args.lazy_fallback) and fallback_unasked(row, args.lazy_fallback)
        saved_asking = sum(
            ms
            for mode, ms in row.heuristics.items()
            if (args.drop_source and args.drop_source in mode)
            or (lazy and "FALLBACK" in mode)
        )
        totals["base"] += base_cost
        totals["sim"] += cost
        regret = (pick.best / best) if pick and best > 0 else math.inf
        if regret > args.regret:
            worse += 1
        line = (
            f"{row.name:42s} configs {base_n:2d} -> {n:2d}  trials {base_cost:8.2f} -> "
            f"{cost:8.2f} ms  regret {regret:.3f}"
        )
        first = torch_first.get(csv_key(row.name))
        if first:
            torch_ms, ours_ms = first
            est = ours_ms - base_cost + cost - saved_asking
            if args.refine_under_ms and best >= args.refine_under_ms:
                est -= row.refine_ms
            over_base += ours_ms > torch_ms
            over_sim += est > torch_ms
            line += f"  first {ours_ms:8.2f} -> {est:8.2f} (PyTorch {torch_ms:7.2f})"
        if n != base_n or regret > args.regret:
            print(line)
    print(
        f"\n{len(rows)} rows; trial time {totals['base']:.1f} -> {totals['sim']:.1f} ms; "
        f"rows whose pick is over {args.regret:.2f}x the best: {worse}"
    )
    if torch_first:
        print(f"first sights over PyTorch's benchmark mode: {over_base} -> {over_sim}")
    refined = [r for r in (refine_replay(row, args) for row in rows) if r]
    if refined and (args.refine_long_top or args.refine_long_rounds):
        moved = sum(regret > args.regret for _, _, regret in refined)
        print(
            f"refine stage: {len(refined)} rows; {sum(t for t, _, _ in refined):.1f} -> "
            f"{sum(r for _, r, _ in refined):.1f} ms; picks over {args.regret:.2f}x the "
            f"traced refine's: {moved}; worst {max(g for _, _, g in refined):.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
