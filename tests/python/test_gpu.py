"""GPU tests: every supported row on cuDNN, against the CPU device, NumPy and torch.

All use the ``gpu`` fixture, which skips (saying why) where no GPU, driver or cuDNN
is usable. Fixed algorithms cuDNN refuses for a shape must raise ``CudnnError`` with a
``CUDNN_STATUS_NOT_SUPPORTED*`` status and leave dx untouched; such cases are reported
as xfail, not pass.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

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
    choose_algorithm,
    config_rows,
    contents,
    fixed_algorithm,
    fixed_algorithms_of,
    legacy_config_rows,
    make_problem,
    nonzero_values,
    problem_from_host,
    require_row,
    run_backward_data,
    support_rows,
)
from numpy.typing import NDArray

import cudnn_rs as cd

pytestmark = pytest.mark.gpu

ROWS = support_rows()
CONFIGS = config_rows(ROWS)
LEGACY_CONFIGS = legacy_config_rows(ROWS)

GPU_CASES: dict[str, dict[int, ConvCase]] = {
    "3x3-pad1": {
        2: case_2d((2, 8, 10, 9), (16, 8, 3, 3), padding=(1, 1)),
        3: ConvCase((2, 4, 6, 6, 5), (8, 4, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
    },
    "stride2-groups2": {
        2: case_2d((2, 8, 11, 10), (8, 4, 3, 3), (1, 1), (2, 2), groups=2),
        3: ConvCase(
            (1, 4, 7, 7, 6), (4, 2, 3, 3, 3), (1, 1, 1), (2, 2, 2), (1, 1, 1), 2
        ),
    },
    "dilation2-depthwise": {
        2: case_2d((1, 8, 12, 12), (8, 1, 3, 3), (2, 2), dilation=(2, 2), groups=8),
        3: ConvCase(
            (1, 4, 8, 8, 8), (4, 1, 3, 3, 3), (2, 2, 2), (1, 1, 1), (2, 2, 2), 4
        ),
    },
}

# cuDNN's default math type lets FP32 convolutions use TF32 tensor cores on sm_80 and
# newer (10-bit mantissa), so f32 results under MathType.Default get a TF32 bound;
# MathType.Fma forbids it and is held to the f32 bound.
TF32_TOLERANCE = 5e-3


def gpu_tolerance(row: Row, math_type: cd.MathType | None = None) -> float:
    fp32 = row.dx_dtype == "f32" and row.comp_dtype == "f32"
    if fp32 and math_type in (None, cd.MathType.Default, cd.MathType.TensorOp):
        return TF32_TOLERANCE
    return TOLERANCE[row.dx_dtype]


@functools.cache
def _torch() -> ModuleType | None:
    try:
        return importlib.import_module("torch")
    except ImportError:
        return None


def torch_dgrad(problem: Problem) -> NDArray[np.float64] | None:
    """torch's backward-data in float64 on the CPU (CrossCorrelation only)."""
    torch = _torch()
    if torch is None or problem.case.convolution_mode:
        return None
    case = problem.case
    grad = torch.nn.grad
    fn = grad.conv2d_input if case.conv_dims == 2 else grad.conv3d_input
    dx = fn(
        list(case.x_shape),
        torch.from_numpy(problem.w_host.astype(np.float64)),
        torch.from_numpy(problem.dy_host.astype(np.float64)),
        stride=case.stride,
        padding=case.padding,
        dilation=case.dilation,
        groups=case.groups,
    )
    result: NDArray[np.float64] = dx.numpy()
    return result


def run_or_xfail(
    handle: cd.Handle,
    problem: Problem,
    algo: cd.Algorithm,
    alpha: float = 1.0,
    beta: float = 0.0,
) -> NDArray[np.generic]:
    """Runs on the GPU; a fixed algorithm cuDNN refuses for this shape is an xfail."""
    before = contents(problem.dx)
    try:
        got = run_backward_data(handle, problem, algo, alpha, beta)
    except cd.CudnnError as exc:
        status = exc.status
        assert isinstance(status, str) and status.startswith("CUDNN_STATUS_"), status
        assert contents(problem.dx) == before, "a refused call modified dx"
        fixed = not isinstance(algo, cd.BestHeuristic)
        if fixed and status.startswith("CUDNN_STATUS_NOT_SUPPORTED"):
            pytest.xfail(
                f"cuDNN refuses {algo.name} for {problem.describe()}: {status}"
            )
        raise
    handle.synchronize()
    return got


@pytest.mark.parametrize("shape", list(GPU_CASES))
@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_row_on_gpu(
    gpu: cd.Handle, cpu: cd.Handle, rng: np.random.Generator, row: Row, shape: str
) -> None:
    case = GPU_CASES[shape][row.conv_dims]
    problem = make_problem(gpu, row, case, rng, poison_dx=True)
    assert problem.dx.device == gpu.device
    algo = choose_algorithm(gpu, problem)
    got = run_or_xfail(gpu, problem, algo)
    tol = gpu_tolerance(row)
    assert_close(got, problem.expected(), row.dx_dtype, problem.describe(), tol)

    on_cpu = problem_from_host(
        cpu, row, case, problem.w_host, problem.dy_host, problem.dx_host
    )
    cpu_got = run_backward_data(cpu, on_cpu, choose_algorithm(cpu, on_cpu))
    assert_close(
        got,
        cpu_got.astype(np.float64),
        row.dx_dtype,
        f"GPU vs CPU device: {problem.describe()}",
        tol,
    )
    from_torch = torch_dgrad(problem)
    if from_torch is not None:
        assert_close(
            got, from_torch, row.dx_dtype, f"vs torch: {problem.describe()}", tol
        )


@pytest.mark.parametrize(("alpha", "beta"), [(0.5, -1.5), (1.0, 1.0), (-2.0, 0.25)])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda r: r.config_id)
def test_alpha_beta_on_gpu(
    gpu: cd.Handle,
    rng: np.random.Generator,
    config: Row,
    alpha: float,
    beta: float,
) -> None:
    case = GPU_CASES["3x3-pad1"][config.conv_dims]
    problem = make_problem(gpu, config, case, rng)
    got = run_or_xfail(gpu, problem, choose_algorithm(gpu, problem), alpha, beta)
    assert_close(
        got,
        problem.expected(alpha, beta),
        config.dx_dtype,
        f"alpha={alpha} beta={beta} {problem.describe()}",
        gpu_tolerance(config),
    )


@pytest.mark.parametrize("conv_dims", [2, 3])
def test_convolution_mode_on_gpu(
    gpu: cd.Handle, rng: np.random.Generator, conv_dims: int
) -> None:
    row = require_row(
        dtype="f64", dy_format="NCHW", dx_format="NCHW", conv_dims=conv_dims
    )
    base = GPU_CASES["stride2-groups2"][conv_dims]
    case = ConvCase(
        base.x_shape,
        base.w_shape,
        base.padding,
        base.stride,
        base.dilation,
        base.groups,
        convolution_mode=True,
    )
    problem = make_problem(gpu, row, case, rng, poison_dx=True)
    got = run_or_xfail(gpu, problem, choose_algorithm(gpu, problem))
    assert_close(got, problem.expected(), "f64", problem.describe())


def test_fma_math_keeps_f32_precision(gpu: cd.Handle, rng: np.random.Generator) -> None:
    row = require_row(algo="DataAlgo1", dtype="f32", dy_format="NCHW", dx_format="NCHW")
    case = GPU_CASES["3x3-pad1"][2]
    problem = make_problem(gpu, row, case, rng, math_type=cd.MathType.Fma)
    got = run_or_xfail(gpu, problem, fixed_algorithm("DataAlgo1"))
    assert_close(got, problem.expected(), "f32", problem.describe())


def test_data_algo1_is_bitwise_deterministic(
    gpu: cd.Handle, rng: np.random.Generator
) -> None:
    row = require_row(algo="DataAlgo1", dtype="f32", dy_format="NCHW", dx_format="NCHW")
    case = case_2d((4, 32, 16, 16), (32, 32, 3, 3), padding=(1, 1))
    problem = make_problem(gpu, row, case, rng, poison_dx=True)
    algo = fixed_algorithm("DataAlgo1")
    first = run_or_xfail(gpu, problem, algo)
    assert_close(first, problem.expected(), "f32", problem.describe(), TF32_TOLERANCE)
    for attempt in range(9):
        problem.dx = cd.Tensor.from_numpy(gpu, problem.dx_host)  # NaN again
        again = run_or_xfail(gpu, problem, algo)
        assert again.tobytes() == first.tobytes(), f"run {attempt + 2} differs"


@pytest.mark.parametrize("config", LEGACY_CONFIGS, ids=lambda r: r.config_id)
def test_deterministic_heuristic_on_gpu(
    gpu: cd.Handle, rng: np.random.Generator, config: Row
) -> None:
    case = GPU_CASES["3x3-pad1"][config.conv_dims]
    problem = make_problem(gpu, config, case, rng, poison_dx=True)
    admitted = fixed_algorithms_of(config, ROWS)
    if set(admitted) <= {"DataAlgo0"}:
        # The table admits only cuDNN's atomics-based ALGO_0 here: there is nothing
        # deterministic to return, and the query must say so rather than guess.
        with pytest.raises((cd.CudnnError, cd.UnsupportedConfigurationError)) as exc:
            gpu.get_convolution_backward_data_algorithm(
                problem.w, problem.dy, problem.dx, problem.conv, deterministic=True
            )
        if isinstance(exc.value, cd.CudnnError):
            assert exc.value.status.startswith("CUDNN_STATUS_NOT_SUPPORTED")
        return
    best = gpu.get_convolution_backward_data_algorithm(
        problem.w, problem.dy, problem.dx, problem.conv, deterministic=True
    )
    assert best.determinism == cd.Determinism.Deterministic
    # cuDNN documents ALGO_0 as non-deterministic (it accumulates with atomics).
    assert best.algo.name != "DataAlgo0", best.algo.name
    assert best.algo.name in admitted
    got = run_or_xfail(gpu, problem, best)
    assert_close(
        got,
        problem.expected(),
        config.dx_dtype,
        problem.describe(),
        gpu_tolerance(config),
    )


@pytest.mark.parametrize("config", LEGACY_CONFIGS, ids=lambda r: r.config_id)
def test_heuristic_picks_an_admitted_algorithm_on_gpu(
    gpu: cd.Handle, rng: np.random.Generator, config: Row
) -> None:
    case = GPU_CASES["stride2-groups2"][config.conv_dims]
    problem = make_problem(gpu, config, case, rng)
    best = gpu.get_convolution_backward_data_algorithm(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    assert best.algo.name in fixed_algorithms_of(config, ROWS)
    assert type(best.workspace_size) is int and best.workspace_size >= 0
    # The workspace size the heuristic reports is enough for its algorithm.
    workspace = cd.Workspace(gpu, best.workspace_size) if best.workspace_size else None
    gpu.convolution_backward_data(
        1.0, problem.w, problem.dy, problem.conv, best, workspace, 0.0, problem.dx
    )
    gpu.synchronize()
    assert_close(
        problem.dx.to_numpy(),
        problem.expected(),
        config.dx_dtype,
        problem.describe(),
        gpu_tolerance(config),
    )


@pytest.mark.parametrize("config", LEGACY_CONFIGS, ids=lambda r: r.config_id)
def test_find_on_gpu(gpu: cd.Handle, rng: np.random.Generator, config: Row) -> None:
    case = GPU_CASES["3x3-pad1"][config.conv_dims]
    problem = make_problem(gpu, config, case, rng)
    before = contents(problem.dx)
    perfs = gpu.find_convolution_backward_data_algorithm(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    assert contents(problem.dx) == before, "find wrote to dx"
    assert perfs, "find returned nothing"
    times = [perf.time for perf in perfs]
    assert all(t >= 0.0 for t in times) and times == sorted(times), times
    allowed = fixed_algorithms_of(config, ROWS)
    for perf in perfs:
        assert perf.algo.name in allowed, f"{perf.algo.name} not in {allowed}"
        problem.dx = cd.Tensor.from_numpy(
            gpu, problem.dx_host, format=getattr(cd, config.dx_format)
        )
        got = run_backward_data(gpu, problem, perf, 1.0, 0.5)
        assert_close(
            got,
            problem.expected(1.0, 0.5),
            config.dx_dtype,
            f"{perf.algo.name}: {problem.describe()}",
            gpu_tolerance(config),
        )
    # A cap no algorithm fits is refused with NOT_SUPPORTED; else every entry fits.
    zero_ws = any(perf.workspace_size == 0 for perf in perfs)
    try:
        limited = gpu.find_convolution_backward_data_algorithm(
            problem.w, problem.dy, problem.dx, problem.conv, max_workspace_bytes=0
        )
    except cd.CudnnError as err:
        assert not zero_ws, f"a zero-workspace algorithm exists, yet: {err}"
        assert err.status == "CUDNN_STATUS_NOT_SUPPORTED"
    else:
        assert limited and all(perf.workspace_size == 0 for perf in limited)


def test_gpu_handle_basics(gpu: cd.Handle) -> None:
    assert gpu.device == "cuda:0"
    assert gpu.is_cpu is False
    version = gpu.version()
    assert len(version) == 3 and version[0] >= 9, version
    assert gpu.cuda_version() > 0
    assert cd.cuda_available() is True
    assert cd.device_count() >= 1
    assert cd.Handle(device="cuda:0").device == "cuda:0"
    assert cd.Handle(device=0).device == "cuda:0"


def test_workspace_on_gpu(gpu: cd.Handle) -> None:
    ws = cd.Workspace(gpu, 1 << 20)
    assert ws.nbytes >= 1 << 20
    assert ws.device == "cuda:0"


def test_one_call_on_gpu(gpu: cd.Handle, rng: np.random.Generator) -> None:
    row = require_row(dtype="f32", dy_format="NHWC", dx_format="NHWC")
    case = GPU_CASES["stride2-groups2"][2]
    problem = make_problem(gpu, row, case, rng)
    dx = cd.convolution_backward_data(
        gpu, problem.w, problem.dy, problem.conv, x_shape=case.x_shape
    )
    assert dx.device == "cuda:0" and dx.shape == case.x_shape and dx.format is cd.NHWC
    assert_close(dx.to_numpy(), problem.expected(), "f32", "one call", TF32_TOLERANCE)


def test_freed_device_memory_is_kept_for_reuse_until_released(gpu: cd.Handle) -> None:
    shape = (1, 64, 512, 512)  # 64 MiB of f32
    nbytes = 64 << 20
    cd.release_cached_memory(0)
    t = cd.Tensor.empty(gpu, shape)
    address = t.__cuda_array_interface__["data"][0]
    del t
    gpu.synchronize()
    # The freed bytes stay in the library's pool across a synchronisation: the next
    # allocation of the size on the stream takes them again.
    again = cd.Tensor.empty(gpu, shape)
    assert again.__cuda_array_interface__["data"][0] == address
    del again
    released = cd.release_cached_memory(0)
    assert released >= nbytes, released
    assert cd.release_cached_memory(0) == 0
    # Allocation still works once the pool handed everything back.
    fresh = cd.Tensor.zeros(gpu, shape)
    assert fresh.nbytes == nbytes and not np.any(fresh.to_numpy())


def test_tensors_and_one_call_results_come_from_the_library_pool(
    gpu: cd.Handle, rng: np.random.Generator
) -> None:
    # The diagnostics count every allocation from the library's pool: two uploads and
    # the one-call API's dx are three.
    before = cd._native._call_counts()["pool_allocations"]
    w = cd.Filter.from_numpy(gpu, rng.standard_normal((4, 4, 3, 3), np.float32))
    dy = cd.Tensor.from_numpy(gpu, rng.standard_normal((1, 4, 8, 8), np.float32))
    conv = cd.ConvolutionDescriptor(padding=(1, 1))
    dx = cd.convolution_backward_data(gpu, w, dy, conv, (1, 4, 8, 8))
    assert dx.device == "cuda:0"
    assert cd._native._call_counts()["pool_allocations"] >= before + 3


def _per_call_handle_problem(
    gpu: cd.Handle, cpu: cd.Handle, rng: np.random.Generator, x_shape: tuple[int, ...]
) -> tuple[cd.Filter, cd.Tensor, cd.ConvolutionDescriptor, NDArray[np.float64]]:
    """A 3x3 f32 layer on the GPU (its shape this module's own) and its dx on the CPU
    device."""
    n, c, *_ = x_shape
    conv = cd.ConvolutionDescriptor(padding=(1, 1))
    w_host = nonzero_values(rng, (2 * c, c, 3, 3), "f32")
    dy_host = nonzero_values(rng, (n, 2 * c, *x_shape[2:]), "f32")
    w, dy = cd.Filter.from_numpy(gpu, w_host), cd.Tensor.from_numpy(gpu, dy_host)
    expected = cd.convolution_backward_data(
        cpu,
        cd.Filter.from_numpy(cpu, w_host),
        cd.Tensor.from_numpy(cpu, dy_host),
        conv,
        x_shape,
    ).to_numpy()
    return w, dy, conv, expected.astype(np.float64)


def test_a_handle_made_for_each_call_takes_over_what_the_last_one_built(
    gpu: cd.Handle, cpu: cd.Handle, rng: np.random.Generator
) -> None:
    # The contract's example written into a loop, a new Handle() for every call: the
    # handle the last call gave back comes back with the plans it built, so only the
    # first call builds any (a handle per call would otherwise pay cuDNN's heuristics
    # and plan builds every call), and every result is right.
    x_shape = (3, 12, 13, 11)
    w, dy, conv, expected = _per_call_handle_problem(gpu, cpu, rng, x_shape)
    before = cd._native._call_counts()["plan_builds"]
    first = cd.convolution_backward_data(cd.Handle(), w, dy, conv, x_shape)
    built = cd._native._call_counts()["plan_builds"]
    assert built > before, "the problem's first call built no plan"
    assert_close(first.to_numpy(), expected, "f32", "first call", TF32_TOLERANCE)
    for i in range(3):
        dx = cd.convolution_backward_data(cd.Handle(), w, dy, conv, x_shape)
        assert_close(dx.to_numpy(), expected, "f32", f"call {i + 2}", TF32_TOLERANCE)
    assert cd._native._call_counts()["plan_builds"] == built


@pytest.mark.parametrize("benchmark", [False, True])
def test_calls_on_a_handle_made_for_each_replay_what_earlier_handles_captured(
    gpu: cd.Handle, cpu: cd.Handle, rng: np.random.Generator, benchmark: bool
) -> None:
    # The same operands called through a new Handle() each time: the calls captured
    # as CUDA graphs go to the pool with the handle, so the later handles (of the same
    # benchmark setting) replay them, and each call (dx poisoned before it, in place)
    # is right.
    torch = _torch()
    if torch is None:
        pytest.skip("torch is not installed")
    x_shape = (2, 12, 9, 14)
    w, dy, conv, expected = _per_call_handle_problem(gpu, cpu, rng, x_shape)
    out = torch.empty(x_shape, device="cuda", dtype=torch.float32)
    dx = cd.Tensor.from_dlpack(out)
    algo = cd.DefaultAlgo()
    sizer = cd.Handle(benchmark=benchmark)  # measures, with benchmark on
    size = sizer.get_convolution_backward_data_workspace_size(w, dy, dx, conv, algo)
    del sizer
    ws = cd.Workspace(gpu, size) if size else None
    before = cd._native._call_counts()["replayed"]
    for i in range(5):
        out.fill_(float("nan"))
        h = cd.Handle(benchmark=benchmark)
        h.convolution_backward_data(1.0, w, dy, conv, algo, ws, 0.0, dx)
        del h
        got = out.cpu().numpy()
        assert_close(got, expected, "f32", f"call {i + 1}", TF32_TOLERANCE)
    assert cd._native._call_counts()["replayed"] > before


def test_a_measuring_handle_made_for_each_call_measures_the_problem_once(
    gpu: cd.Handle, cpu: cd.Handle, rng: np.random.Generator
) -> None:
    # With benchmark=True a problem is measured once per device and process, as in
    # PyTorch: a Handle(benchmark=True) made for each call measures on the first call
    # only, the later ones run what it measured and take over its plans, and
    # clear_algorithm_cache() makes the next one measure again. A handle with benchmark
    # off still makes the untimed choice. Every result is right.
    x_shape = (2, 12, 11, 13)
    w, dy, conv, expected = _per_call_handle_problem(gpu, cpu, rng, x_shape)
    dxt = cd.Tensor.empty(gpu, x_shape, dtype=cd.f32)
    first = cd.Handle(benchmark=True)
    first.clear_algorithm_cache()  # whatever an earlier test measured
    dx = cd.convolution_backward_data(first, w, dy, conv, x_shape)
    assert first.last_find_report()[0] >= 1, "the first handle did not measure"
    assert_close(dx.to_numpy(), expected, "f32", "first handle", TF32_TOLERANCE)
    measured = first.get_convolution_backward_data_default(w, dy, dxt, conv)
    assert measured.time >= 0.0
    del first, dx
    before = cd._native._call_counts()["plan_builds"]
    for i in range(3):
        h = cd.Handle(benchmark=True)
        dx = cd.convolution_backward_data(h, w, dy, conv, x_shape)
        assert h.last_find_report() == (0, 0), f"handle {i + 2} measured again"
        mine = h.get_convolution_backward_data_default(w, dy, dxt, conv)
        assert (mine.index, mine.knobs) == (measured.index, measured.knobs)
        assert_close(dx.to_numpy(), expected, "f32", f"handle {i + 2}", TF32_TOLERANCE)
        del h, dx
    # The measured choice's plan was built by the first handle, or (where its side
    # context built it while measuring) by the second: none after.
    built = cd._native._call_counts()["plan_builds"] - before
    assert built <= 1, f"{built} plans built by handles that took over a measurement"
    again = cd.Handle(benchmark=True)
    again.clear_algorithm_cache()
    dx = cd.convolution_backward_data(again, w, dy, conv, x_shape)
    assert again.last_find_report()[0] >= 1, "a cleared measurement was not made again"
    assert_close(dx.to_numpy(), expected, "f32", "after clearing", TF32_TOLERANCE)
    del again, dx
    untimed = cd.Handle()
    mine = untimed.get_convolution_backward_data_default(w, dy, dxt, conv)
    kept = gpu.get_convolution_backward_data_default(w, dy, dxt, conv)
    assert (mine.index, mine.knobs) == (kept.index, kept.knobs)
    assert untimed.last_find_report() == (0, 0)


def test_cpu_operands_with_a_gpu_handle_are_refused(
    gpu: cd.Handle, cpu: cd.Handle, rng: np.random.Generator
) -> None:
    row = require_row(algo="DataAlgo1", dtype="f32", dy_format="NCHW", dx_format="NCHW")
    case = GPU_CASES["3x3-pad1"][2]
    on_cpu = make_problem(cpu, row, case, rng)
    on_gpu = problem_from_host(
        gpu, row, case, on_cpu.w_host, on_cpu.dy_host, on_cpu.dx_host
    )
    algo = fixed_algorithm("DataAlgo1")
    for name, w, dy, dx in [
        ("all on cpu", on_cpu.w, on_cpu.dy, on_cpu.dx),
        ("dy on cpu", on_gpu.w, on_cpu.dy, on_gpu.dx),
        ("dx on cpu", on_gpu.w, on_gpu.dy, on_cpu.dx),
    ]:
        before = contents(dx)
        with pytest.raises(cd.DeviceMismatchError):
            gpu.convolution_backward_data(1.0, w, dy, on_gpu.conv, algo, None, 0.0, dx)
        assert contents(dx) == before, name


def test_dlpack_with_torch(gpu: cd.Handle, rng: np.random.Generator) -> None:
    torch = _torch()
    if torch is None:
        pytest.skip("torch is not installed")
    row = require_row(algo="DataAlgo1", dtype="f32", dy_format="NCHW", dx_format="NCHW")
    case = GPU_CASES["3x3-pad1"][2]
    host = make_problem(gpu, row, case, rng)
    dy_t = torch.from_numpy(host.dy_host).cuda()
    dx_t = torch.full(case.x_shape, float("nan"), device="cuda")
    torch.cuda.synchronize()
    dy = cd.Tensor.from_dlpack(dy_t, format=cd.NCHW)
    dx = cd.Tensor.from_dlpack(dx_t, format=cd.NCHW)
    assert dy.shape == case.dy_shape and dy.dtype == cd.f32 and dy.device == "cuda:0"
    np.testing.assert_array_equal(dy.to_numpy(), host.dy_host)
    gpu.convolution_backward_data(
        1.0, host.w, dy, host.conv, fixed_algorithm("DataAlgo1"), None, 0.0, dx
    )
    gpu.synchronize()
    # Zero-copy in: the result is visible in torch's own tensor.
    assert_close(
        dx_t.cpu().numpy(),
        host.expected(),
        "f32",
        "written through dlpack",
        TF32_TOLERANCE,
    )
    # Zero-copy out: torch sees cudnn_rs memory, and writes through it.
    view = torch.from_dlpack(dx)
    assert view.device.type == "cuda" and tuple(view.shape) == case.x_shape
    view.fill_(3.0)
    torch.cuda.synchronize()
    assert np.all(dx.to_numpy() == 3.0)
    kind, _ = dx.__dlpack_device__()
    assert int(kind) == 2  # kDLCUDA
    interface = dx.__cuda_array_interface__
    assert tuple(interface["shape"]) == case.x_shape
    assert interface["typestr"] == "<f4"


@pytest.mark.gpu
def test_workspace_too_small_is_refused_and_dx_untouched(
    gpu: cd.Handle, rng: np.random.Generator
) -> None:
    w = cd.Filter.from_numpy(gpu, rng.standard_normal((16, 8, 3, 3)).astype(np.float32))
    dy = cd.Tensor.from_numpy(
        gpu, rng.standard_normal((4, 16, 14, 14)).astype(np.float32)
    )
    poison = np.full((4, 8, 14, 14), np.nan, dtype=np.float32)
    dx = cd.Tensor.from_numpy(gpu, poison)
    conv = cd.ConvolutionDescriptor((1, 1))
    for algo in (cd.Fft(), cd.FftTiling(), cd.WinogradNonFused(), cd.DataAlgo0()):
        size = gpu.get_convolution_backward_data_workspace_size(w, dy, dx, conv, algo)
        if size:
            break
    else:
        pytest.skip("no algorithm of the f32 NCHW row needs a workspace for this shape")
    for ws in (None, cd.Workspace(gpu, size - 1)):
        with pytest.raises(cd.ShapeError, match="workspace"):
            gpu.convolution_backward_data(1.0, w, dy, conv, algo, ws, 0.0, dx)
    assert np.isnan(dx.to_numpy()).all(), "a refused call wrote dx"


@pytest.mark.parametrize("config", CONFIGS, ids=lambda r: r.config_id)
def test_graph_api_engines_on_gpu(
    gpu: cd.Handle, rng: np.random.Generator, config: Row
) -> None:
    case = GPU_CASES["stride2-groups2"][config.conv_dims]
    problem = make_problem(gpu, config, case, rng, poison_dx=True)
    before = contents(problem.dx)
    engine = gpu.get_convolution_backward_data_engine(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    assert isinstance(engine, cd.Engine) and engine.index >= 0
    found = gpu.find_convolution_backward_data_engine(
        problem.w, problem.dy, problem.dx, problem.conv, limit=3, use_cache=False
    )
    assert contents(problem.dx) == before, "an engine query wrote to dx"
    times = [e.time for e in found]
    assert found and all(t >= 0.0 for t in times) and times == sorted(times), times
    tol = gpu_tolerance(config)
    # The heuristic's engine, the fastest measured one, BestEngine and the default
    # choice: each over a poisoned dx (beta = 0), then accumulating (beta = 0.5) onto
    # fresh values.
    for algo in (engine, found[0], cd.BestEngine(), cd.DefaultAlgo()):
        for alpha, beta in ((1.0, 0.0), (-0.5, 0.5)):
            shape, dtype = problem.dx.shape, config.dx_dtype
            problem.dx_host = (
                nonzero_values(rng, shape, dtype)
                if beta
                else np.full(shape, np.nan, dtype=NUMPY_DTYPES[dtype])
            )
            problem.dx = cd.Tensor.from_numpy(
                gpu, problem.dx_host, format=getattr(cd, config.dx_format)
            )
            got = run_backward_data(gpu, problem, algo, alpha, beta)
            assert_close(
                got,
                problem.expected(alpha, beta),
                dtype,
                f"{algo!r} alpha={alpha} beta={beta}: {problem.describe()}",
                tol,
            )


def test_engine_find_reaches_every_knob_setting(
    gpu: cd.Handle, rng: np.random.Generator
) -> None:
    """The engine find times each knob setting the heuristics rank, not one per engine
    (cuDNN lists several settings of its fastest f16 NHWC engines); each result is one
    configuration, and a setting other than an engine's first runs correctly on a fresh
    handle (built from its index and knobs, as a loaded cache builds it)."""
    row = require_row(dtype="f16", comp="f32", dy_format="NHWC", dx_format="NHWC")
    case = case_2d((8, 64, 14, 14), (64, 64, 3, 3), padding=(1, 1))
    problem = make_problem(gpu, row, case, rng)
    found = gpu.find_convolution_backward_data_engine(
        problem.w, problem.dy, problem.dx, problem.conv, budget_ms=None, use_cache=False
    )
    configs = [(e.index, tuple(e.knobs)) for e in found]
    assert len(set(configs)) == len(configs), configs
    settings: dict[int, list[cd.Engine]] = {}
    for e in found:
        settings.setdefault(e.index, []).append(e)
    several = [es for es in settings.values() if len(es) > 1]
    assert several, f"one knob setting per engine: {configs}"
    fresh = cd.Handle()
    for engine in (several[0][0], several[0][-1]):
        again = make_problem(fresh, row, case, rng, poison_dx=True)
        got = run_backward_data(fresh, again, engine)
        assert_close(got, again.expected(), row.dx_dtype, f"{engine!r}")


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_engine_choice_follows_math_type_and_determinism(
    gpu: cd.Handle, rng: np.random.Generator, dtype: str
) -> None:
    row = require_row(dtype=dtype, comp="f32", dy_format="NHWC", dx_format="NHWC")
    case = case_2d((8, 32, 14, 14), (32, 32, 3, 3), padding=(1, 1))
    fma = make_problem(gpu, row, case, rng, math_type=cd.MathType.Fma)
    for engine in gpu.find_convolution_backward_data_engine(
        fma.w, fma.dy, fma.dx, fma.conv, use_cache=False
    ):
        assert engine.math_type == cd.MathType.Fma, engine
    det = gpu.get_convolution_backward_data_engine(
        fma.w, fma.dy, fma.dx, fma.conv, deterministic=True
    )
    assert det.determinism == cd.Determinism.Deterministic
    got = run_backward_data(gpu, fma, det)
    assert_close(got, fma.expected(), row.dx_dtype, fma.describe())
    # A cap on the workspace: every engine fits it, or none does and cuDNN says so.
    try:
        capped = gpu.find_convolution_backward_data_engine(
            fma.w, fma.dy, fma.dx, fma.conv, max_workspace_bytes=0, use_cache=False
        )
    except cd.CudnnError as err:
        assert err.status == "CUDNN_STATUS_NOT_SUPPORTED"
    else:
        assert capped and all(e.workspace_size == 0 for e in capped)
