"""The benchmark tools that run without a GPU: `bench/schedule_sim.py` reads the measured
tier's find traces (``CUDNN_RS_FIND_TRACE=1``) of every format the crate has printed, and
says where a traced first sight's time went."""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def schedule_sim():
    spec = importlib.util.spec_from_file_location(
        "schedule_sim", BENCH / "schedule_sim.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["schedule_sim"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def one_row(schedule_sim, tmp_path: Path, trace: str):
    """The one row of ``trace``, read from a file as the tool reads it, and the file."""
    path = tmp_path / "trace.txt"
    path.write_text(trace)
    [row] = schedule_sim.read_trace(str(path))
    return row, path


def options(schedule_sim, path: Path, **kw: float) -> argparse.Namespace:
    """Every option off, as the command line leaves it, no per-run wait, then ``kw``."""
    args = schedule_sim.parser().parse_args([str(path), "--sync-ms", "0"])
    for k, v in kw.items():
        setattr(args, k, v)
    return args


# One row in each trace format: before the source was printed, with it, and with how
# the trials ran (replayed or direct); a configuration that gave no time; the breakdown.
TRACE = """\
== row grp32_3x3_c256_28 n=32 f32 NCHW
cudnn_rs find: heuristic CUDNN_HEUR_MODE_A: 14 configurations in 0.958 ms
cudnn_rs find: engine 71 [k2=16, k13=0] from Some(CUDNN_HEUR_MODE_A) notes refused runs
cudnn_rs find: engine 25 [k2=2, k3=0] build 0.010 ms ws 0 ->0.4879 runs 1x0.5174 3x0.4879
cudnn_rs find: engine 0 build 0.018 ms ws 0 from Some(CUDNN_HEUR_MODE_A) ->0.4826 runs 1x0.4901
cudnn_rs find: engine 1 build 0.020 ms ws 0 from Some(CUDNN_HEUR_MODE_FALLBACK) replayed ->0.2266 runs 1x0.2644 5x0.2266
cudnn_rs find: engine 50 build 0.021 ms ws 32899200 from Some(CUDNN_HEUR_MODE_A) direct ->inf runs
cudnn_rs find: refine: FindTiming { total: 42.65626ms, heuristics: 2.076893ms, builds: 134.955µs, trials: 38.930996ms, refine: 729ns } runs
"""


def test_schedule_sim_reads_every_trace_format(schedule_sim, tmp_path: Path) -> None:
    row, _ = one_row(schedule_sim, tmp_path, TRACE)
    assert row.name == "grp32_3x3_c256_28 n=32 f32 NCHW"
    assert row.heuristics == {"MODE_A": 0.958}
    got = [(c.engine, c.knobs, c.source, c.best, c.runs) for c in row.configs]
    assert got == [
        (25, "[k2=2, k3=0]", "", 0.4879, [(1, 0.5174), (3, 0.4879)]),
        (0, "", "MODE_A", 0.4826, [(1, 0.4901)]),
        (1, "", "MODE_FALLBACK", 0.2266, [(1, 0.2644), (5, 0.2266)]),
        (50, "", "MODE_A", math.inf, []),
    ]
    assert row.total_ms == pytest.approx(42.65626)
    assert row.trials_ms == pytest.approx(38.930996)
    assert row.refine_ms == pytest.approx(729e-6)


SCREENED = """\
== row stem7x7s2_c3_224 n=32 f16 NHWC
cudnn_rs find: engine 46 build 0.01 ms ws 0 from Some(CUDNN_HEUR_MODE_A) ->0.49 runs 1x0.57 1x0.50 2x0.49
cudnn_rs find: engine 73 build 0.01 ms ws 0 from Some(CUDNN_HEUR_MODE_A) ->0.42 runs 1x0.44 1x0.52 3x0.42
cudnn_rs find: engine 2 build 0.01 ms ws 0 from Some(CUDNN_HEUR_MODE_A) ->0.40 runs 1x1.90 1x0.40
"""


def test_schedule_sim_screens_long_calls_and_cuts_slow_warm_ups(
    schedule_sim, tmp_path: Path
) -> None:
    row, path = one_row(schedule_sim, tmp_path, SCREENED)

    def ns(**kw: float) -> argparse.Namespace:
        return options(schedule_sim, path, **kw)

    # As traced: every run counts; the fastest by its best run is engine 2.
    cost, pick, timed = schedule_sim.simulate(row, ns())
    assert (pick.engine, timed) == (2, 3)
    assert cost == pytest.approx(0.57 + 0.50 + 0.98 + 0.44 + 0.52 + 1.26 + 1.90 + 0.40)
    # Screened: the warm-up and one call each (0.50, 0.52, 0.40); only engine 2 is within
    # 15% of the fastest, so the refine stage has nothing to compare; the two calls each
    # and no refine cost.
    cost, pick, _ = schedule_sim.simulate(row, ns(screen=True, screen_ms=0.1))
    assert pick.engine == 2
    assert cost == pytest.approx(0.57 + 0.50 + 0.44 + 0.52 + 1.90 + 0.40)
    # A warm-up 1.5 times the fastest so far gets no timed call: engine 2's 1.90 against
    # 0.50 rules it out; engines 46 and 73 (0.50, 0.52) are close, and the refine stage
    # picks the faster by its traced best: engine 73.
    _, pick, _ = schedule_sim.simulate(
        row, ns(screen=True, screen_ms=0.1, warm_cut=1.5, warm_cut_ms=0.1)
    )
    assert pick.engine == 73
    # At most one ranked engine in the first stage once calls last 0.1 ms: engine 46.
    _, pick, timed = schedule_sim.simulate(
        row, ns(first_stage_engines=1, first_stage_ms=0.1)
    )
    assert (pick.engine, timed) == (46, 1)


# Short calls: trials of five; and a refine stage of three plans, three rounds.
TRIALS = """\
== row 1x1s2_256to512_56 n=32 f16 NHWC tf32
cudnn_rs find: engine 73 [k2=0] build 0.01 ms ws 131 nodes 2 from Some(CUDNN_HEUR_MODE_A) replayed ->0.0338 runs 1x0.0575 1x0.0362 5x0.0344 5x0.0340 5x0.0338
cudnn_rs find: engine 64 [k2=4] build 0.01 ms ws 0 nodes 1 from Some(CUDNN_HEUR_MODE_A) direct ->0.0380 runs 1x0.0400 1x0.0390 5x0.0400 5x0.0380 5x0.0385
cudnn_rs find: engine 73 [k2=6] build 0.01 ms ws 131 nodes 2 prep 0.120 ms wall 0.900 ms from Some(CUDNN_HEUR_MODE_A) replayed ->0.0336 runs 1x0.0418 1x0.0363 5x0.0336 5x0.0337 5x0.0338
cudnn_rs find: refine: FindTiming { total: 3.0ms, heuristics: 1.0ms, builds: 0.03ms, trials: 1.5ms, refine: 0.5ms } runs 8x0.0335 8x0.0339 8x0.0346 8x0.0330 8x0.0328 8x0.0340 8x0.0332 8x0.0342 8x0.0343
"""


def test_schedule_sim_ends_trials_behind_the_fastest_and_replays_the_refine(
    schedule_sim, tmp_path: Path
) -> None:
    row, path = one_row(schedule_sim, tmp_path, TRIALS)
    # The node count, and the capture's and the configuration's wall times, are read.
    assert [c.engine for c in row.configs] == [73, 64, 73]
    assert len(row.refine_runs) == 9 and row.refine_runs[0] == (8, 0.0335)
    args = options(schedule_sim, path)
    full, pick, _ = schedule_sim.simulate(row, args)
    assert pick.knobs == "[k2=6]"
    # Engine 64's first trial (0.0400) is over 1.15x the fastest (0.0338): no more
    # trials for it; the others keep theirs.
    args.trial_spread = 1.15
    cost, pick, _ = schedule_sim.simulate(row, args)
    assert pick.knobs == "[k2=6]"
    assert full - cost == pytest.approx(5 * 0.0380 + 5 * 0.0385)
    # The refine stage as traced (rounds of the three close plans): the second plan is
    # fastest (0.0328, round two); limited to two plans and one round it would pick the
    # first (0.0335 < 0.0339), whose traced best is 0.0330. Short calls (0.0336 ms) are
    # under --refine-long-ms: nothing is limited there.
    args.refine_long_top, args.refine_long_rounds = 2, 1
    traced, replayed, regret = schedule_sim.refine_replay(row, args)
    assert traced == replayed == pytest.approx(8 * sum(ms for _, ms in row.refine_runs))
    assert regret == 1.0
    args.refine_long_ms = 0.03
    traced, replayed, regret = schedule_sim.refine_replay(row, args)
    assert replayed == pytest.approx(8 * (0.0335 + 0.0339))
    assert regret == pytest.approx(0.0330 / 0.0328)


def test_schedule_sim_asks_the_fallback_list_only_after_few_ranked_engines(
    schedule_sim, tmp_path: Path
) -> None:
    # TRACE: two engines (25, 0) timed before the fallback list's engine 1, the
    # fastest; engine 71's notes were refused (no time), engine 50 comes after.
    row, path = one_row(schedule_sim, tmp_path, TRACE)
    assert not schedule_sim.fallback_unasked(row, 3)
    assert schedule_sim.fallback_unasked(row, 2)
    # Asked only while fewer than two were timed: engine 1 is left out, and the pick is
    # the fastest of the rest by its runs, engine 25 (0.4879 ms; engine 0's one run is
    # its warm-up, 0.4901).
    _, pick, timed = schedule_sim.simulate(row, options(schedule_sim, path))
    assert (pick.engine, timed) == (1, 4)
    _, pick, timed = schedule_sim.simulate(
        row, options(schedule_sim, path, lazy_fallback=2)
    )
    assert (pick.engine, timed) == (25, 3)
    _, pick, _ = schedule_sim.simulate(
        row, options(schedule_sim, path, lazy_fallback=3)
    )
    assert pick.engine == 1


# The trace with each configuration's capture and wall time and the heuristics' read time.
TIMED = """\
== row dense      3x3 96->8 @8x8 s1x1                N=8  bf16 nchw
cudnn_rs find: heuristic CUDNN_HEUR_MODE_A finalized in 0.020 ms, counted in 0.002, descriptors made in 0.030, read in 1.100
cudnn_rs find: heuristic CUDNN_HEUR_MODE_A: 30 configurations in 1.200 ms
cudnn_rs find: heuristic CUDNN_HEUR_MODE_FALLBACK finalized in 0.010 ms, counted in 0.001, descriptors made in 0.005, read in 0.300
cudnn_rs find: heuristic CUDNN_HEUR_MODE_FALLBACK: 3 configurations in 0.350 ms
cudnn_rs find: engine 57 [k2=7] from Some(CUDNN_HEUR_MODE_A) notes refused runs
cudnn_rs find: engine 63 [k25=2] build 0.014 ms ws 0 nodes 1 prep 0.200 ms wall 0.500 ms from Some(CUDNN_HEUR_MODE_A) replayed ->0.0100 runs 1x0.0200 1x0.0120 5x0.0100
cudnn_rs find: engine 0 build 0.010 ms ws 0 nodes 1 prep 0.050 ms wall 0.300 ms from Some(CUDNN_HEUR_MODE_FALLBACK) direct ->0.2000 runs 1x0.2000
cudnn_rs find: refine: FindTiming { total: 3.0ms, heuristics: 1.55ms, builds: 0.02ms, trials: 0.8ms, refine: 0.1ms } runs
"""


def test_schedule_sim_says_where_a_first_sights_time_went(
    schedule_sim, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    row, path = one_row(schedule_sim, tmp_path, TIMED)
    assert row.heuristic_reads == {"MODE_A": 1.1, "MODE_FALLBACK": 0.3}
    assert row.heuristics == {"MODE_A": 1.2, "MODE_FALLBACK": 0.35}
    # (Engine 57's notes were refused: no time, not a timed configuration.)
    assert [(c.engine, c.prep, c.wall) for c in row.configs] == [
        (63, 0.2, 0.5),
        (0, 0.05, 0.3),
    ]
    b = schedule_sim.breakdown(row)
    # Two configurations ran: 1 + 1 + 5 calls, and one.
    assert (b["configs"], b["runs"], b["calls"]) == (2, 4, 8)
    gpu = 0.02 + 0.012 + 5 * 0.01 + 0.2
    assert b["gpu_ms"] == pytest.approx(gpu)
    assert b["capture_ms"] == pytest.approx(0.25)
    assert b["rest_ms"] == pytest.approx(0.8 - gpu - 0.25)
    assert b["read_ms"] == pytest.approx(1.4)
    assert b["refine_ms"] == pytest.approx(0.1)
    assert schedule_sim.main([str(path), "--breakdown"]) == 0
    out = capsys.readouterr().out
    assert "1 rows: configs 2.0, runs 4.0, calls 8.0" in out
    assert "us a timed run" in out
