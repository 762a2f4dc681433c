"""Shared fixtures for the cudnn_rs Python suite.

- ``cpu``: a Handle on the CPU reference device (always available).
- ``gpu``: a Handle on CUDA device 0; the test is skipped, with the reason, when no
  GPU, driver or cuDNN is usable.
- ``rng``: a NumPy generator with a fresh seed per test. The seeds of one run derive
  from one base seed, printed in the header; a failing test's report names its seed.
  ``CUDNN_RS_TEST_SEED=<base>`` repeats a run's random inputs.
"""

from __future__ import annotations

import os
import secrets
import sys
import zlib
from collections.abc import Generator
from pathlib import Path

import numpy as np
import pytest

import cudnn_rs as cd

# The helper modules (reference.py, helpers.py) sit beside this file; make them
# importable whatever import mode pytest runs in.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

SEED_ENV = "CUDNN_RS_TEST_SEED"
_BASE_SEED_KEY = pytest.StashKey[int]()
_TEST_SEED_KEY = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)  # before the terminal reporter reads reportchars
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "gpu: runs on a CUDA GPU with cuDNN; skipped (with the reason) where none is "
        "usable",
    )
    # Skip reasons are part of the result here ("which GPU tests did not run and why"),
    # so always list them, as -rs does.
    reportchars = getattr(config.option, "reportchars", None)
    if (
        isinstance(reportchars, str)
        and "s" not in reportchars
        and "a" not in reportchars
    ):
        config.option.reportchars = reportchars + "s"
    env_seed = os.environ.get(SEED_ENV)
    base = int(env_seed) if env_seed else secrets.randbits(32)
    config.stash[_BASE_SEED_KEY] = base


def pytest_report_header(config: pytest.Config) -> str:
    base = config.stash[_BASE_SEED_KEY]
    return f"cudnn_rs tests: rng base seed {base} (repeat with {SEED_ENV}={base})"


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded afresh for each test (reported when the test fails)."""
    base = request.config.stash[_BASE_SEED_KEY]
    seed = base ^ zlib.crc32(request.node.nodeid.encode())
    request.node.stash[_TEST_SEED_KEY] = seed
    request.node.user_properties.append(("rng_seed", seed))
    request.node.user_properties.append(("rng_base_seed", base))
    return np.random.default_rng(seed)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    seed = item.stash.get(_TEST_SEED_KEY, None)
    if seed is not None and report.failed:
        base = item.config.stash[_BASE_SEED_KEY]
        report.sections.append(
            (
                "rng seed",
                f"this test's rng seed was {seed}; repeat it with "
                f"{SEED_ENV}={base} python -m pytest '{item.nodeid}'",
            )
        )
    return report


@pytest.fixture
def cpu() -> cd.Handle:
    """The CPU reference device: same API as a GPU handle, no GPU needed."""
    return cd.Handle(device="cpu")


@pytest.fixture(scope="session")
def gpu() -> cd.Handle:
    """A cuDNN handle on CUDA device 0, or a skip that says why there is none."""
    try:
        available = cd.cuda_available()
    except Exception as exc:  # the contract says it never raises; say so if it does
        pytest.fail(f"cudnn_rs.cuda_available() raised {exc!r}")
    if not available:
        pytest.skip(
            "GPU test skipped: cudnn_rs.cuda_available() is False (no CUDA driver or "
            "device on this machine)"
        )
    try:
        return cd.Handle()
    except cd.LibraryNotFoundError as exc:
        pytest.skip(f"GPU test skipped: cuDNN could not be loaded: {exc}")
    except cd.CudaError as exc:
        pytest.skip(f"GPU test skipped: CUDA device 0 is not usable: {exc}")
