"""Concurrent use from Python threads: one shared CPU handle, and a handle each."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from helpers import (
    Row,
    assert_close,
    fixed_algorithm,
    make_problem,
    random_case,
    require_row,
    run_backward_data,
)

import cudnn_rs as cd

THREADS = 8
ROUNDS = 3


def _worker(
    handle: cd.Handle | None, row: Row, seed: int, barrier: threading.Barrier
) -> list[str]:
    """Builds its own problems, runs them, returns what went wrong (empty = fine)."""
    own_handle = cd.Handle(device="cpu") if handle is None else handle
    rng = np.random.default_rng(seed)
    problems = [
        make_problem(own_handle, row, random_case(rng, 2), rng) for _ in range(ROUNDS)
    ]
    barrier.wait(timeout=60)  # start computing together
    failures = []
    for round_, problem in enumerate(problems):
        alpha, beta = 1.0 + round_, 0.5 * round_
        got = run_backward_data(
            own_handle, problem, fixed_algorithm(row.algo), alpha, beta
        )
        try:
            assert_close(
                got,
                problem.expected(alpha, beta),
                "f32",
                f"thread seed {seed} round {round_}",
            )
        except AssertionError as exc:
            failures.append(str(exc))
    return failures


def _run_threads(handle: cd.Handle | None, rng: np.random.Generator) -> None:
    row = require_row(dtype="f32", dy_format="NCHW", dx_format="NCHW")
    barrier = threading.Barrier(THREADS)
    seeds = [int(s) for s in rng.integers(0, 2**32, size=THREADS)]
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        futures = [pool.submit(_worker, handle, row, seed, barrier) for seed in seeds]
        failures = [msg for future in futures for msg in future.result(timeout=120)]
    assert not failures, "\n".join(failures)


def test_threads_share_one_cpu_handle(cpu: cd.Handle, rng: np.random.Generator) -> None:
    _run_threads(cpu, rng)


def test_threads_with_their_own_handles(rng: np.random.Generator) -> None:
    _run_threads(None, rng)
