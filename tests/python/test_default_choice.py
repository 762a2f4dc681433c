"""The library's default choice (``DefaultAlgo``, the one-call API with no algorithm),
the ``benchmark`` handle option (the measured tier) and saved algorithm caches.

CPU-device tests run everywhere; GPU tests skip (saying why) where no GPU is usable.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import (
    NUMPY_DTYPES,
    TOLERANCE,
    ConvCase,
    Problem,
    Row,
    assert_close,
    case_2d,
    config_rows,
    make_problem,
    support_rows,
)

import cudnn_rs as cd

ROWS = support_rows()
CONFIGS = config_rows(ROWS)
# dx differs from the poisoned value, and the result needs the right rounding for its
# dtype: half types round to their own precision, TF32 keeps 10 mantissa bits.
GPU_TOLERANCE = {**TOLERANCE, "f32": 5e-3}


def _row(dtype: str = "f32", fmt: str = "NCHW", conv_dims: int = 2) -> Row:
    for row in CONFIGS:
        if (
            row.dx_dtype == row.dy_dtype == row.filter_dtype == dtype
            and row.dx_format == row.dy_format == row.filter_format == fmt
            and row.conv_dims == conv_dims
            and row.comp_dtype == ("f64" if dtype == "f64" else "f32")
        ):
            return row
    raise AssertionError(f"no {dtype} {fmt} {conv_dims}-d configuration in the table")


def _run(
    handle: cd.Handle,
    problem: Problem,
    algo: cd.Algorithm,
    alpha: float = 1.0,
    beta: float = 0.0,
) -> np.ndarray:
    size = handle.get_convolution_backward_data_workspace_size(
        problem.w, problem.dy, problem.dx, problem.conv, algo
    )
    ws = cd.Workspace(handle, size) if size else None
    handle.convolution_backward_data(
        alpha, problem.w, problem.dy, problem.conv, algo, ws, beta, problem.dx
    )
    return problem.dx.to_numpy()


def test_every_configuration_admits_the_default_choice() -> None:
    configs = {row.config for row in ROWS}
    with_default = {row.config for row in ROWS if row.algo == "DefaultAlgo"}
    assert configs == with_default
    assert len(configs) == 80


@pytest.mark.parametrize("config", CONFIGS, ids=lambda r: r.config_id)
def test_default_choice_on_cpu_matches_the_reference(
    cpu: cd.Handle, rng: np.random.Generator, config: Row
) -> None:
    case = (
        case_2d((2, 4, 7, 6), (6, 2, 3, 2), padding=(1, 0), stride=(2, 1), groups=2)
        if config.conv_dims == 2
        else None
    )
    if case is None:
        case = ConvCase(
            (1, 2, 4, 5, 3), (3, 2, 2, 3, 1), (0, 1, 0), (1, 2, 1), (1, 1, 1)
        )
    problem = make_problem(cpu, config, case, rng, poison_dx=True)
    got = _run(cpu, problem, cd.DefaultAlgo(), alpha=1.0, beta=0.0)
    assert_close(got, problem.expected(), config.dx_dtype, problem.describe())


def test_one_call_equals_the_explicit_default(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    row = _row("f32", "NHWC")
    case = case_2d((2, 3, 9, 8), (5, 3, 3, 3), padding=(1, 1), dilation=(2, 1))
    problem = make_problem(cpu, row, case, rng, poison_dx=True)
    explicit = _run(cpu, problem, cd.DefaultAlgo())
    one_call = cd.convolution_backward_data(
        cpu, problem.w, problem.dy, problem.conv, x_shape=case.x_shape
    )
    assert one_call.format is cd.NHWC
    np.testing.assert_array_equal(one_call.to_numpy(), explicit)
    assert_close(explicit, problem.expected(), "f32", problem.describe())


def test_benchmark_option_reads_back(cpu: cd.Handle) -> None:
    assert cpu.benchmark is False
    h = cd.Handle(device="cpu", benchmark=True)
    assert h.benchmark is True
    h.benchmark = False
    assert h.benchmark is False
    assert cpu.benchmark_budget_ms > 0
    for bad in (-1.0, 0.0, float("nan"), 1e300):
        with pytest.raises(ValueError, match="benchmark_budget_ms"):
            cpu.benchmark_budget_ms = bad
    assert cpu.last_find_report() == (0, 0)
    timing = cpu.last_find_timing()
    assert set(timing) == {"total", "heuristics", "builds", "trials", "refine"}
    assert all(v == 0.0 for v in timing.values()), timing


def test_default_engine_query_on_cpu_names_a_stand_in(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    problem = make_problem(cpu, _row(), case_2d((1, 2, 5, 5), (3, 2, 3, 3)), rng)
    engine = cpu.get_convolution_backward_data_default(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    assert isinstance(engine, cd.Engine)
    assert engine.index == 0


def test_saved_cache_names_its_environment_and_loads_only_there(
    cpu: cd.Handle, rng: np.random.Generator, tmp_path: Path
) -> None:
    problem = make_problem(cpu, _row(), case_2d((1, 2, 5, 5), (3, 2, 3, 3)), rng)
    found = cpu.find_convolution_backward_data_algorithm(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    assert found
    path = tmp_path / "algos.txt"
    cpu.save_algorithm_cache(path)
    first, *rest = path.read_text().splitlines()
    assert first.startswith("# cudnn_rs algorithm cache | ")
    assert "CPU reference device" in first
    other = cd.Handle(device="cpu")
    assert other.load_algorithm_cache(path) == 1
    assert other.algorithm_cache_size() == 1
    # The same measurements claimed for another cuDNN and GPU load nothing, and say so.
    foreign = tmp_path / "foreign.txt"
    foreign.write_text(
        "\n".join(
            ["# cudnn_rs algorithm cache | cuDNN 9.1.0 | Some GPU | sm_80", *rest]
        )
        + "\n"
    )
    fresh = cd.Handle(device="cpu")
    with pytest.warns(RuntimeWarning, match=r"cuDNN 9\.1\.0.*nothing loaded"):
        assert fresh.load_algorithm_cache(foreign) == 0
    assert fresh.algorithm_cache_size() == 0
    # A file that does not say where it was measured loads nothing either.
    bare = tmp_path / "bare.txt"
    bare.write_text("\n".join(rest) + "\n")
    with pytest.warns(RuntimeWarning, match="does not say"):
        assert fresh.load_algorithm_cache(bare) == 0
    assert fresh.algorithm_cache_size() == 0


def test_engine_find_has_no_silent_cut_and_validates_its_budget(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    problem = make_problem(cpu, _row(), case_2d((1, 2, 5, 5), (3, 2, 3, 3)), rng)
    args = (problem.w, problem.dy, problem.dx, problem.conv)
    assert cpu.find_convolution_backward_data_engine(*args)
    for bad in (0.0, -5.0, float("nan"), 1e300):
        with pytest.raises(ValueError, match="budget_ms"):
            cpu.find_convolution_backward_data_engine(*args, budget_ms=bad)
    with pytest.raises(ValueError, match="limit"):
        cpu.find_convolution_backward_data_engine(*args, limit=0)


# --- GPU ------------------------------------------------------------------------------


_CHOICE_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import cudnn_rs as cd
    h = cd.Handle()
    rng = np.random.default_rng(int(sys.argv[1]))
    w = cd.Filter.from_numpy(h, rng.standard_normal((64, 32, 3, 3), dtype=np.float32),
                             format=cd.NHWC)
    dy = cd.Tensor.from_numpy(h, rng.standard_normal((8, 64, 28, 28), dtype=np.float32),
                              format=cd.NHWC)
    dx = cd.Tensor.empty(h, (8, 32, 28, 28), dtype=cd.f32, format=cd.NHWC)
    conv = cd.ConvolutionDescriptor(padding=(1, 1))
    e = h.get_convolution_backward_data_default(w, dy, dx, conv)
    print(e.index, e.knobs)
    """
)


@pytest.mark.gpu
def test_default_choice_is_the_same_in_fresh_handles_and_processes(
    gpu: cd.Handle, rng: np.random.Generator
) -> None:
    choices = set()
    for seed in (1, 2):
        out = subprocess.run(
            [sys.executable, "-c", _CHOICE_SCRIPT, str(seed)],
            capture_output=True,
            text=True,
            timeout=300,
            env=os.environ.copy(),
            check=False,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        choices.add(out.stdout.strip())
    assert len(choices) == 1, choices
    # In this process, two fresh handles agree with each other and with the others.
    row = _row("f32", "NHWC")
    case = case_2d((8, 32, 28, 28), (64, 32, 3, 3), padding=(1, 1))
    seen = set()
    for _ in range(2):
        h = cd.Handle()
        p = make_problem(h, row, case, rng)
        e = h.get_convolution_backward_data_default(p.w, p.dy, p.dx, p.conv)
        seen.add(f"{e.index} {e.knobs}")
    assert seen == choices


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("dtype", "fmt", "conv_dims"),
    [("f32", "NHWC", 2), ("f16", "NHWC", 2), ("bf16", "NHWC", 2), ("f32", "NCHW", 3)],
)
def test_one_call_equals_the_explicit_default_on_gpu(
    gpu: cd.Handle, rng: np.random.Generator, dtype: str, fmt: str, conv_dims: int
) -> None:
    row = _row(dtype, fmt, conv_dims)
    case = (
        case_2d((4, 16, 14, 14), (24, 16, 3, 3), padding=(1, 1))
        if conv_dims == 2
        else ConvCase((2, 8, 6, 7, 5), (8, 8, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1))
    )
    problem = make_problem(gpu, row, case, rng, poison_dx=True)
    explicit = _run(gpu, problem, cd.DefaultAlgo())
    engine = gpu.get_convolution_backward_data_default(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    one_call = cd.convolution_backward_data(
        gpu, problem.w, problem.dy, problem.conv, x_shape=case.x_shape
    ).to_numpy()
    tol = GPU_TOLERANCE[dtype]
    assert_close(explicit, problem.expected(), dtype, problem.describe(), tol)
    assert_close(one_call, problem.expected(), dtype, problem.describe(), tol)
    if engine.determinism == cd.Determinism.Deterministic:
        # Same engine, same inputs: the same bits.
        assert one_call.tobytes() == explicit.tobytes()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_one_call_repeats_stay_correct_and_still_refuse_bad_calls(
    gpu: cd.Handle, rng: np.random.Generator, dtype: str
) -> None:
    """Later one-call calls of a problem run what its first call resolved (validated
    then): fresh values every call stay correct, with alpha other than 1, after an
    explicit call with a larger workspace of its own, and a call that does not fit is
    still refused."""
    h = cd.Handle(gpu.device)  # a fresh one: nothing resolved yet
    row = _row(dtype, "NHWC")
    case = case_2d((2, 16, 10, 9), (24, 16, 3, 3), padding=(1, 1))
    tol = GPU_TOLERANCE[dtype]
    for step in range(8):
        problem = make_problem(h, row, case, rng, poison_dx=True)
        alpha = 2.0 if step == 3 else 1.0
        if step == 5:
            # The explicit default with a workspace larger than the query's.
            algo = cd.DefaultAlgo()
            size = h.get_convolution_backward_data_workspace_size(
                problem.w, problem.dy, problem.dx, problem.conv, algo
            )
            ws = cd.Workspace(h, (size or 0) + 4096)
            h.convolution_backward_data(
                1.0, problem.w, problem.dy, problem.conv, algo, ws, 0.0, problem.dx
            )
            got = problem.dx.to_numpy()
        else:
            got = cd.convolution_backward_data(
                h,
                problem.w,
                problem.dy,
                problem.conv,
                x_shape=case.x_shape,
                alpha=alpha,
            ).to_numpy()
        assert_close(got, problem.expected(alpha=alpha), dtype, f"call {step}", tol)
    bigger = (case.x_shape[0], case.x_shape[1], case.x_shape[2] + 3, case.x_shape[3])
    with pytest.raises(cd.ShapeError):
        cd.convolution_backward_data(
            h, problem.w, problem.dy, problem.conv, x_shape=bigger
        )


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_measured_tier_never_writes_dx_during_trials(
    gpu: cd.Handle, rng: np.random.Generator, dtype: str
) -> None:
    h = cd.Handle(benchmark=True)
    assert h.benchmark
    # Measured choices are shared by the device's handles: forget any an earlier test
    # made of this problem, so that this call measures.
    h.clear_algorithm_cache()
    row = _row(dtype, "NHWC")
    case = case_2d((4, 32, 12, 12), (16, 32, 3, 3), padding=(1, 1), stride=(2, 2))
    problem = make_problem(h, row, case, rng)  # dx holds random values
    before = problem.dx.to_numpy().copy()
    # beta = 1 accumulates onto dx: any trial run into dx would show twice.
    got = _run(h, problem, cd.DefaultAlgo(), alpha=0.75, beta=1.0)
    timed, left_out = h.last_find_report()
    assert timed >= 1, (timed, left_out)
    # The parts of the measurement's time are disjoint spans within its total.
    timing = h.last_find_timing()
    parts = [timing[k] for k in ("heuristics", "builds", "trials", "refine")]
    assert timing["trials"] > 0.0, timing
    assert all(v >= 0.0 for v in parts), timing
    assert sum(parts) <= timing["total"] * (1 + 1e-9) + 1e-6, timing
    np.testing.assert_array_equal(before, problem.dx_host)
    assert_close(
        got,
        problem.expected(alpha=0.75, beta=1.0),
        dtype,
        problem.describe(),
        GPU_TOLERANCE[dtype],
    )
    engine = h.get_convolution_backward_data_default(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    assert engine.time >= 0.0  # measured
    # A second call of the same problem runs the kept choice.
    problem.dx = cd.Tensor.from_numpy(
        h,
        np.full(case.x_shape, np.nan, dtype=NUMPY_DTYPES[dtype]),
        format=cd.NHWC,
    )
    again = _run(h, problem, cd.DefaultAlgo())
    assert_close(
        again, problem.expected(), dtype, problem.describe(), GPU_TOLERANCE[dtype]
    )


@pytest.mark.gpu
def test_measured_choices_persist_and_reload(
    gpu: cd.Handle, rng: np.random.Generator, tmp_path: Path
) -> None:
    h = cd.Handle(benchmark=True)
    row = _row("f32", "NHWC")
    case = case_2d((2, 16, 10, 10), (32, 16, 3, 3), padding=(1, 1))
    problem = make_problem(h, row, case, rng, poison_dx=True)
    measured = h.get_convolution_backward_data_default(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    path = tmp_path / "algos.txt"
    h.save_algorithm_cache(path)
    text = path.read_text()
    assert "DefaultAlgo | " in text and "sm_" in text.splitlines()[0]
    other = cd.Handle(benchmark=True)
    # The choice h measured is shared by the device's handles: forgotten here, so that
    # only the file can bring it back.
    other.clear_algorithm_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert other.load_algorithm_cache(path) >= 1
    p2 = make_problem(other, row, case, rng, poison_dx=True)
    reloaded = other.get_convolution_backward_data_default(p2.w, p2.dy, p2.dx, p2.conv)
    assert other.last_find_report() == (0, 0), "the reloaded choice was measured again"
    assert (reloaded.index, reloaded.knobs) == (measured.index, measured.knobs)
    got = _run(other, p2, cd.DefaultAlgo())
    assert_close(got, p2.expected(), "f32", p2.describe(), GPU_TOLERANCE["f32"])


@pytest.mark.gpu
def test_default_choice_handles_fresh_addresses_every_call(
    gpu: cd.Handle, rng: np.random.Generator
) -> None:
    # A training loop imports fresh tensors each step: the default path must stay
    # correct when no address repeats.
    row = _row("bf16", "NHWC")
    case = case_2d((4, 16, 9, 9), (16, 16, 3, 3), padding=(1, 1))
    for _ in range(4):
        problem = make_problem(gpu, row, case, rng, poison_dx=True)
        got = _run(gpu, problem, cd.DefaultAlgo())
        assert_close(got, problem.expected(), "bf16", problem.describe(), 5e-2)


def _torch_call(
    h: cd.Handle,
    w: Any,
    dy: Any,
    dx: Any,
    conv: cd.ConvolutionDescriptor,
    algo: cd.Algorithm,
    alpha: float = 1.0,
    beta: float = 0.0,
) -> None:
    # PyTorch tensors imported on h, the workspace the query asks for, one explicit call
    # into dx; the imports are released on return.
    wt = cd.Filter.from_dlpack(w, handle=h)
    dyt = cd.Tensor.from_dlpack(dy, handle=h)
    dxt = cd.Tensor.from_dlpack(dx, handle=h)
    size = h.get_convolution_backward_data_workspace_size(wt, dyt, dxt, conv, algo)
    ws = cd.Workspace(h, size) if size else None
    h.convolution_backward_data(alpha, wt, dyt, conv, algo, ws, beta, dxt)


@pytest.mark.gpu
def test_torch_tensors_imported_fresh_each_call_stay_correct(gpu: cd.Handle) -> None:
    # A training loop: fresh PyTorch tensors every call, imported on PyTorch's current
    # stream (read in place), released right after the call, their memory handed out
    # again at once by PyTorch's allocator to new work on the same stream.
    torch = pytest.importorskip("torch")
    torch.backends.cudnn.allow_tf32 = False
    h = cd.Handle(stream=torch.cuda.current_stream())
    conv = cd.ConvolutionDescriptor(padding=(1, 1), math_type=cd.MathType.Fma)
    algo = cd.DefaultAlgo()
    for step in range(12):
        w = torch.randn(16, 8, 3, 3, device="cuda")
        dy = torch.randn(4, 16, 12, 12, device="cuda")
        dx = torch.full((4, 8, 12, 12), float("nan"), device="cuda")
        if step % 2:
            w.requires_grad_()  # read as it is, the autograd graph is not exported
        _torch_call(h, w, dy, dx, conv, algo)
        expected = torch.nn.grad.conv2d_input(dx.shape, w.detach(), dy, padding=1)
        del w, dy
        torch.randn(4, 16, 12, 12, device="cuda").mul_(3.0)  # reuses the freed memory
        err = ((dx - expected).abs().max() / expected.abs().max()).item()
        assert err < 1e-5, f"step {step}: relative error {err}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("kind", ["1x1", "depthwise"])
@pytest.mark.parametrize("weights", ["contiguous", "channels_last"])
def test_filters_of_either_layout_in_a_channels_last_model(
    gpu: cd.Handle, dtype: str, kind: str, weights: str
) -> None:
    # 1x1 and depthwise filters are dense in both layouts. Imported without a format
    # (the contract's spelling), a channels-last one reads as NHWC (its strides on the
    # extent-1 dimensions say so) and a contiguous one, beside channels-last
    # activations, as NCHW; the default choice then describes it in dy's layout. Either
    # way: the engine and workspace of the filter imported as NHWC, and the right dx.
    torch = pytest.importorskip("torch")
    torch.backends.cudnn.allow_tf32 = False
    t = getattr(torch, dtype)
    cl = torch.channels_last
    groups, w_shape = (1, (48, 32, 1, 1)) if kind == "1x1" else (32, (32, 1, 3, 3))
    padding = (0, 0) if kind == "1x1" else (1, 1)
    x_shape = (4, 32, 14, 14)
    w = torch.randn(w_shape, device="cuda", dtype=t)
    if weights == "channels_last":
        w = w.to(memory_format=cl)
    dy = torch.randn((4, w_shape[0], 14, 14), device="cuda", dtype=t)
    dy = dy.to(memory_format=cl)
    h = cd.Handle()
    # f32 without TF32 (exact enough for 1e-4); half precision on tensor cores.
    math = cd.MathType.Fma if dtype == "float32" else cd.MathType.Default
    conv = cd.ConvolutionDescriptor(padding=padding, groups=groups, math_type=math)
    read = cd.Filter.from_dlpack(w)
    assert read.format is (cd.NHWC if weights == "channels_last" else cd.NCHW)
    as_nhwc = cd.Filter.from_dlpack(w, cd.NHWC)
    dyt = cd.Tensor.from_dlpack(dy)
    assert dyt.format is cd.NHWC
    dx = torch.full(x_shape, float("nan"), device="cuda", dtype=t).to(memory_format=cl)
    dxt = cd.Tensor.from_dlpack(dx)
    engines = [
        h.get_convolution_backward_data_default(f, dyt, dxt, conv)
        for f in (read, as_nhwc)
    ]
    assert len({f"{e.index} {e.knobs}" for e in engines}) == 1, engines
    sizes = {
        h.get_convolution_backward_data_workspace_size(
            f, dyt, dxt, conv, cd.DefaultAlgo()
        )
        for f in (read, as_nhwc)
    }
    assert len(sizes) == 1, sizes
    expected = torch.nn.grad.conv2d_input(
        x_shape, w.double(), dy.double(), padding=padding, groups=groups
    )
    size = sizes.pop()
    ws = cd.Workspace(h, size) if size else None
    h.convolution_backward_data(1.0, read, dyt, conv, cd.DefaultAlgo(), ws, 0.0, dxt)
    one_call = torch.from_dlpack(
        cd.convolution_backward_data(h, read, dyt, conv, x_shape)
    )
    results = [("explicit", dx.clone()), ("one-call", one_call)]
    if weights == "channels_last" and dtype == "float32":
        # The contract's explicit sequence with cuDNN's legacy heuristic: all NHWC, a
        # configuration the legacy algorithms run.
        dx.fill_(float("nan"))
        best = h.get_convolution_backward_data_algorithm(read, dyt, dxt, conv)
        size = h.get_convolution_backward_data_workspace_size(
            read, dyt, dxt, conv, best
        )
        h.convolution_backward_data(
            1.0, read, dyt, conv, best, cd.Workspace(h, size), 0.0, dxt
        )
        results.append(("legacy heuristic", dx))
    tol = {"float32": 1e-4, "float16": 2e-2}[dtype]
    scale = expected.abs().max().item()
    for name, got in results:
        err = (got.double() - expected).abs().max().item() / scale
        assert err < tol, f"{name}: relative error {err}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("algo", ["default", "best_engine"])
def test_choices_made_for_aligned_addresses_run_unaligned_ones_with_beta(
    gpu: cd.Handle, dtype: str, algo: str
) -> None:
    # The default choice and BestEngine are made for 16-byte aligned addresses and
    # alpha = 1, beta = 0. A call with operands two or four bytes off alignment and
    # beta = 1 is another graph, which their knob setting may refuse: the call must
    # still run (within the workspace the query gave) and accumulate the right values.
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(11)
    dt = getattr(torch, dtype)
    h = cd.Handle(stream=torch.cuda.current_stream())
    math = cd.MathType.Fma if dtype == "float32" else cd.MathType.Default
    conv = cd.ConvolutionDescriptor(padding=(1, 1), math_type=math)
    chosen = cd.DefaultAlgo() if algo == "default" else cd.BestEngine()

    def unaligned_channels_last(n: int, c: int, hh: int, ww: int):
        # One element into a fresh buffer: the view's address is not 16-byte aligned.
        base = torch.randn(n * c * hh * ww + 1, device="cuda", dtype=dt, generator=gen)
        view = base[1:].view(n, hh, ww, c).permute(0, 3, 1, 2)
        assert view.data_ptr() % 16 != 0
        return view

    w = unaligned_channels_last(32, 16, 3, 3)
    dy = unaligned_channels_last(4, 32, 10, 10)
    dx = unaligned_channels_last(4, 16, 10, 10)
    dx_before = dx.double().clone()
    _torch_call(h, w, dy, dx, conv, chosen, alpha=0.5, beta=1.0)
    expected = (
        0.5 * torch.nn.grad.conv2d_input(dx.shape, w.double(), dy.double(), padding=1)
        + dx_before
    )
    err = ((dx.double() - expected).abs().max() / expected.abs().max()).item()
    tol = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 1e-4}[dtype]
    assert err < tol, f"{dtype} {algo}: relative error {err}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_strided_half_depthwise_nchw_runs_through_its_nhwc_twin(
    gpu: cd.Handle, dtype: str
) -> None:
    # A large strided depthwise layer in half precision, stored NCHW, dilated, which the
    # depthwise kernel of our own does not take strided: the default choice runs it as
    # its NHWC twin, so the workspace it asks for holds NHWC copies of dy and dx; alpha
    # and beta apply when dx is converted back.
    torch = pytest.importorskip("torch")
    gen = torch.Generator(device="cuda").manual_seed(12)
    dt = getattr(torch, dtype)
    h = cd.Handle(stream=torch.cuda.current_stream())
    conv = cd.ConvolutionDescriptor(
        padding=(4, 4), stride=(2, 2), dilation=(2, 2), groups=64
    )
    w = torch.randn(64, 1, 5, 5, device="cuda", dtype=dt, generator=gen) / 5
    dy = torch.randn(16, 64, 16, 16, device="cuda", dtype=dt, generator=gen)
    dx = torch.randn(16, 64, 32, 32, device="cuda", dtype=dt, generator=gen)
    dx_before = dx.double().clone()
    wt, dyt, dxt = (
        cd.Filter.from_dlpack(w, handle=h),
        cd.Tensor.from_dlpack(dy, handle=h),
        cd.Tensor.from_dlpack(dx, handle=h),
    )
    size = h.get_convolution_backward_data_workspace_size(
        wt, dyt, dxt, conv, cd.DefaultAlgo()
    )
    twin_bytes = (dy.numel() + dx.numel()) * dx.element_size()
    assert size >= twin_bytes, f"workspace {size} bytes cannot hold the NHWC copies"
    del wt, dyt, dxt
    _torch_call(h, w, dy, dx, conv, cd.DefaultAlgo(), alpha=0.5, beta=1.0)
    expected = (
        0.5
        * torch.nn.grad.conv2d_input(
            dx.shape,
            w.double(),
            dy.double(),
            stride=2,
            padding=4,
            dilation=2,
            groups=64,
        )
        + dx_before
    )
    err = ((dx.double() - expected).abs().max() / expected.abs().max()).item()
    tol = {"float16": 1e-2, "bfloat16": 5e-2}[dtype]
    assert err < tol, f"{dtype}: relative error {err}"


@pytest.mark.gpu
def test_interleaved_repeated_calls_replay_with_fresh_values(gpu: cd.Handle) -> None:
    # A training step's calls in turn, with the same operands and workspace every step:
    # from the second step on each call is replayed as a captured CUDA graph. Each step
    # writes new values into dy (in place) and poisons dx, so a replay that read or wrote
    # anything but the call's own operands at the time of the call would show.
    torch = pytest.importorskip("torch")
    torch.backends.cudnn.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(13)
    h = cd.Handle(stream=torch.cuda.current_stream())
    algo = cd.DefaultAlgo()
    layers = []
    for c, k, stride, groups in ((8, 16, 1, 1), (16, 16, 2, 16), (16, 32, 1, 2)):
        conv = cd.ConvolutionDescriptor(
            padding=(1, 1),
            stride=(stride, stride),
            groups=groups,
            math_type=cd.MathType.Fma,
        )
        w = torch.randn(k, c // groups, 3, 3, device="cuda", generator=gen)
        dy = torch.empty(4, k, 12 // stride, 12 // stride, device="cuda")
        dx = torch.empty(4, c, 12, 12, device="cuda")
        ops = (
            cd.Filter.from_dlpack(w, handle=h),
            cd.Tensor.from_dlpack(dy, handle=h),
            cd.Tensor.from_dlpack(dx, handle=h),
        )
        size = h.get_convolution_backward_data_workspace_size(*ops, conv, algo)
        layers.append((conv, stride, groups, w, dy, dx, ops, size or 0))
    most = max(layer[-1] for layer in layers)
    ws = cd.Workspace(h, most) if most else None
    for step in range(5):
        for i, (conv, stride, groups, w, dy, dx, ops, _) in enumerate(layers):
            dy.copy_(torch.randn(dy.shape, device="cuda", generator=gen))
            dx.fill_(float("nan"))
            wt, dyt, dxt = ops
            h.convolution_backward_data(1.0, wt, dyt, conv, algo, ws, 0.0, dxt)
            expected = torch.nn.grad.conv2d_input(
                dx.shape, w, dy, stride=stride, padding=1, groups=groups
            )
            err = ((dx - expected).abs().max() / expected.abs().max()).item()
            assert err < 1e-5, f"step {step}, layer {i}: relative error {err}"


def test_one_call_docs_name_the_default_choice_it_runs() -> None:
    """The one-call API runs ``DefaultAlgo`` when given no algorithm: its runtime
    docstring and its stub say so, not that cuDNN's heuristic picks."""
    import ast

    import cudnn_rs

    stub = Path(cudnn_rs.__file__).with_name("_native.pyi").read_text()
    docs = [cd.convolution_backward_data.__doc__ or ""]
    for node in ast.parse(stub).body:
        if (
            isinstance(node, ast.FunctionDef)
            and node.name == "convolution_backward_data"
        ):
            docs.extend(filter(None, [ast.get_docstring(node)]))  # overloads: ...
    assert len(docs) > 1, "the stub has no convolution_backward_data docstring"
    for doc in docs:
        assert "DefaultAlgo" in doc and "default choice" in doc, doc
        assert "heuristic" not in doc, doc
