"""The per-handle cache of measured algorithms: a repeat measures nothing, and the cache
survives a save/load into another handle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cudnn_rs as cd


@pytest.fixture(params=["cpu", "cuda"])
def fresh(request: pytest.FixtureRequest) -> cd.Handle:
    """A new handle (with an empty cache) on the CPU device and on the GPU."""
    if request.param == "cpu":
        return cd.Handle(device="cpu")
    request.getfixturevalue("gpu")  # skips, saying why, where there is no GPU
    return cd.Handle()


def operands(h: cd.Handle, rng: np.random.Generator, k: int = 8):
    w = cd.Filter.from_numpy(h, rng.standard_normal((k, 4, 3, 3)).astype(np.float32))
    dy = cd.Tensor.from_numpy(h, rng.standard_normal((2, k, 9, 9)).astype(np.float32))
    dx = cd.Tensor.zeros(h, (2, 4, 9, 9))
    return w, dy, dx, cd.ConvolutionDescriptor((1, 1))


def signature(perfs: list[cd.AlgoPerf]) -> list[tuple[str, float, int]]:
    return [(p.algo.name, p.time, p.workspace_size) for p in perfs]


def test_a_repeat_returns_the_cached_measurement(
    fresh: cd.Handle, rng: np.random.Generator
) -> None:
    cpu = fresh
    w, dy, dx, conv = operands(cpu, rng)
    assert cpu.algorithm_cache_size() == 0
    first = cpu.find_convolution_backward_data_algorithm(w, dy, dx, conv)
    assert cpu.algorithm_cache_size() == 1
    again = cpu.find_convolution_backward_data_algorithm(w, dy, dx, conv)
    # A new measurement would time the run afresh; the cached one repeats it exactly.
    assert signature(again) == signature(first)
    remeasured = cpu.find_convolution_backward_data_algorithm(
        w, dy, dx, conv, use_cache=False
    )
    # A new measurement may order close algorithms differently on a GPU.
    assert {p.algo.name for p in remeasured} == {p.algo.name for p in first}
    assert cpu.algorithm_cache_size() == 1
    # Another problem (more filter maps) is another entry.
    w2, dy2, dx2, _ = operands(cpu, rng, k=16)
    cpu.find_convolution_backward_data_algorithm(w2, dy2, dx2, conv)
    assert cpu.algorithm_cache_size() == 2
    cpu.clear_algorithm_cache()
    assert cpu.algorithm_cache_size() == 0


def test_cache_saved_and_loaded_into_another_handle(
    fresh: cd.Handle, rng: np.random.Generator, tmp_path: Path
) -> None:
    cpu = fresh
    w, dy, dx, conv = operands(cpu, rng)
    first = cpu.find_convolution_backward_data_algorithm(w, dy, dx, conv)
    path = tmp_path / "algos.txt"
    cpu.save_algorithm_cache(path)
    other = cd.Handle(device="cpu" if cpu.is_cpu else 0)
    assert other.load_algorithm_cache(str(path)) == 1
    assert other.algorithm_cache_size() == 1
    w2, dy2, dx2, conv2 = operands(other, rng)  # same problem, other tensors
    loaded = other.find_convolution_backward_data_algorithm(w2, dy2, dx2, conv2)
    assert signature(loaded) == signature(first)
    best = loaded[0]
    ws = cd.Workspace(other, best.workspace_size) if best.workspace_size else None
    other.convolution_backward_data(1.0, w2, dy2, conv2, best, ws, 0.0, dx2)
    assert np.isfinite(dx2.to_numpy()).all()


def engine_signature(found: list[cd.Engine]) -> list[tuple[int, list, float, int]]:
    return [(e.index, e.knobs, e.time, e.workspace_size) for e in found]


def test_engine_finds_are_cached_saved_and_loaded(
    fresh: cd.Handle, rng: np.random.Generator, tmp_path: Path
) -> None:
    h = fresh
    w, dy, dx, conv = operands(h, rng)
    first = h.find_convolution_backward_data_engine(w, dy, dx, conv, limit=4)
    assert first and all(isinstance(e, cd.Engine) for e in first)
    assert [e.time for e in first] == sorted(e.time for e in first)
    assert h.algorithm_cache_size() == 1
    again = h.find_convolution_backward_data_engine(w, dy, dx, conv, limit=4)
    assert engine_signature(again) == engine_signature(first)
    # Engines and legacy algorithms of one problem are separate entries.
    h.find_convolution_backward_data_algorithm(w, dy, dx, conv)
    assert h.algorithm_cache_size() == 2
    path = tmp_path / "engines.txt"
    h.save_algorithm_cache(path)
    other = cd.Handle(device="cpu" if h.is_cpu else 0)
    assert other.load_algorithm_cache(path) == 2
    w2, dy2, dx2, conv2 = operands(other, rng)
    loaded = other.find_convolution_backward_data_engine(w2, dy2, dx2, conv2, limit=4)
    assert engine_signature(loaded) == engine_signature(first)
    best = loaded[0]
    ws = cd.Workspace(other, best.workspace_size) if best.workspace_size else None
    other.convolution_backward_data(1.0, w2, dy2, conv2, best, ws, 0.0, dx2)
    expected = cd.Handle(device="cpu")
    ref = cd.convolution_backward_data(
        expected,
        cd.Filter.from_numpy(expected, w2.to_numpy()),
        cd.Tensor.from_numpy(expected, dy2.to_numpy()),
        conv2,
        dx2.shape,
    ).to_numpy()
    got = dx2.to_numpy()
    assert np.abs(got - ref).max() <= 2e-3 * np.abs(ref).max()


def test_malformed_cache_file_adds_nothing(cpu: cd.Handle, tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    # A header that fits this device, then an entry with a field missing.
    header = "# cudnn_rs algorithm cache | CPU reference device"
    path.write_text(f"{header}\nsome key\tDataAlgo1,1.0,0,Deterministic\n")
    with pytest.raises(cd.ShapeError, match="line 2"):
        cpu.load_algorithm_cache(path)
    assert cpu.algorithm_cache_size() == 0
    with pytest.raises(OSError):
        cpu.load_algorithm_cache(tmp_path / "missing.txt")
