"""Backward-data on the CPU device against the NumPy reference.

Every configuration comes from ``cd.supported_configurations()``. Inputs are fresh
random non-zero values; dx starts as NaN when beta == 0 (it must be overwritten without
being read) and as random values otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import (
    ALPHA_BETA,
    ConvCase,
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
    problem_from_host,
    random_case,
    require_row,
    run_backward_data,
    support_rows,
)

import cudnn_rs as cd

ROWS = support_rows()
CONFIGS = config_rows(ROWS)
LEGACY_CONFIGS = legacy_config_rows(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_every_row_matches_reference(
    cpu: cd.Handle, rng: np.random.Generator, row: Row
) -> None:
    for _ in range(2):
        case = random_case(rng, row.conv_dims)
        problem = make_problem(cpu, row, case, rng, poison_dx=True)
        algo = choose_algorithm(cpu, problem)
        got = run_backward_data(cpu, problem, algo)
        assert_close(got, problem.expected(), row.dx_dtype, problem.describe())


# Named geometries: each stresses one part of the index arithmetic.
GEOMETRIES_2D: dict[str, ConvCase] = {
    "3x3-pad1": case_2d((2, 3, 6, 5), (4, 3, 3, 3), padding=(1, 1)),
    "1x1": case_2d((2, 5, 3, 4), (3, 5, 1, 1)),
    "no-pad-asym-kernel": case_2d((1, 2, 7, 5), (3, 2, 3, 2)),
    "pad-asym": case_2d((1, 2, 5, 6), (2, 2, 3, 3), padding=(2, 0)),
    "stride2": case_2d((2, 2, 7, 8), (3, 2, 3, 3), padding=(1, 1), stride=(2, 2)),
    "stride-asym-uncovered-rows": case_2d((1, 2, 8, 7), (2, 2, 2, 1), stride=(3, 2)),
    "dilation2": case_2d((1, 3, 9, 8), (2, 3, 3, 3), padding=(2, 2), dilation=(2, 2)),
    "dilation-asym": case_2d(
        (2, 2, 8, 9), (2, 2, 2, 3), padding=(1, 0), dilation=(3, 2)
    ),
    "groups2": case_2d((2, 4, 6, 6), (6, 2, 3, 3), padding=(1, 1), groups=2),
    "groups3-stride2": case_2d(
        (1, 6, 7, 7), (3, 2, 3, 3), padding=(1, 1), stride=(2, 2), groups=3
    ),
    "depthwise": case_2d((2, 4, 5, 6), (4, 1, 3, 3), padding=(1, 1), groups=4),
    "depthwise-multiplier2": case_2d(
        (1, 3, 6, 5), (6, 1, 3, 2), padding=(1, 0), groups=3
    ),
    "everything": case_2d(
        (2, 4, 9, 10), (6, 2, 3, 2), (2, 1), (2, 3), (2, 2), groups=2
    ),
    "kernel-equals-input": case_2d((1, 2, 3, 4), (2, 2, 3, 4)),
}

GEOMETRIES_3D: dict[str, ConvCase] = {
    "3d-3x3x3-pad1": ConvCase(
        (1, 2, 4, 5, 4), (3, 2, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)
    ),
    "3d-stride": ConvCase(
        (2, 2, 5, 4, 6), (2, 2, 2, 3, 3), (0, 1, 1), (2, 1, 2), (1, 1, 1)
    ),
    "3d-dilation-groups": ConvCase(
        (1, 4, 5, 5, 4), (4, 2, 2, 2, 2), (1, 0, 1), (1, 2, 1), (2, 1, 2), groups=2
    ),
    "3d-depthwise": ConvCase(
        (1, 3, 4, 4, 4), (3, 1, 3, 2, 3), (1, 1, 1), (1, 1, 2), (1, 1, 1), groups=3
    ),
}


def _with_mode(case: ConvCase, convolution_mode: bool) -> ConvCase:
    return ConvCase(
        case.x_shape,
        case.w_shape,
        case.padding,
        case.stride,
        case.dilation,
        case.groups,
        convolution_mode,
    )


@pytest.mark.parametrize("convolution_mode", [False, True], ids=["xcorr", "conv"])
@pytest.mark.parametrize("name", list(GEOMETRIES_2D) + list(GEOMETRIES_3D))
def test_geometry_matches_reference(
    cpu: cd.Handle, rng: np.random.Generator, name: str, convolution_mode: bool
) -> None:
    base = GEOMETRIES_2D.get(name) or GEOMETRIES_3D[name]
    case = _with_mode(base, convolution_mode)
    row = require_row(dtype="f32", dy_format="NCHW", conv_dims=case.conv_dims)
    problem = make_problem(cpu, row, case, rng, poison_dx=True)
    got = run_backward_data(cpu, problem, fixed_algorithm(row.algo))
    assert_close(got, problem.expected(), "f32", problem.describe())


@pytest.mark.parametrize("conv_dims", [2, 3])
def test_modes_give_different_results(
    cpu: cd.Handle, rng: np.random.Generator, conv_dims: int
) -> None:
    # An asymmetric kernel: flipping it must change dx, and each mode must match its
    # own reference (so a package that ignored the mode fails one of them).
    row = require_row(
        dtype="f64", dy_format="NCHW", dx_format="NCHW", conv_dims=conv_dims
    )
    base = (
        GEOMETRIES_2D["3x3-pad1"] if conv_dims == 2 else GEOMETRIES_3D["3d-3x3x3-pad1"]
    )
    xcorr = make_problem(cpu, row, _with_mode(base, False), rng)
    conv = problem_from_host(
        cpu, row, _with_mode(base, True), xcorr.w_host, xcorr.dy_host, xcorr.dx_host
    )
    algo = fixed_algorithm(row.algo)
    got_xcorr = run_backward_data(cpu, xcorr, algo)
    got_conv = run_backward_data(cpu, conv, algo)
    assert_close(got_xcorr, xcorr.expected(), "f64", f"CrossCorrelation {xcorr.case}")
    assert_close(got_conv, conv.expected(), "f64", f"Convolution {conv.case}")
    difference = np.max(np.abs(got_xcorr.astype(np.float64) - got_conv))
    assert difference > 1e-3 * np.max(np.abs(got_xcorr.astype(np.float64)))


DTYPE_ROWS: dict[str, dict[str, Any]] = {
    "f64": {"dtype": "f64"},
    "f32-nhwc": {"dtype": "f32", "dy_format": "NHWC"},
    "f16-nchw": {"dtype": "f16", "dy_format": "NCHW", "comp": "f32"},
    "f16-nhwc": {"dtype": "f16", "dy_format": "NHWC"},
    "f16-true-half": {"dtype": "f16", "comp": "f16"},
    "bf16-nchw": {"dtype": "bf16", "dy_format": "NCHW"},
    "bf16-nhwc": {"dtype": "bf16", "dy_format": "NHWC"},
    "f32-nchw-dx-nhwc": {"dtype": "f32", "dy_format": "NCHW", "dx_format": "NHWC"},
    "f64-3d": {"dtype": "f64", "conv_dims": 3},
    "f32-3d-nhwc": {"dtype": "f32", "dy_format": "NHWC", "conv_dims": 3},
    "f16-3d": {"dtype": "f16", "conv_dims": 3},
}


@pytest.mark.parametrize(("alpha", "beta"), ALPHA_BETA)
@pytest.mark.parametrize("name", list(DTYPE_ROWS))
def test_alpha_beta(
    cpu: cd.Handle, rng: np.random.Generator, name: str, alpha: float, beta: float
) -> None:
    criteria = DTYPE_ROWS[name]
    row = require_row(**criteria)
    case = random_case(rng, row.conv_dims, groups=int(rng.integers(1, 3)))
    problem = make_problem(cpu, row, case, rng, poison_dx=beta == 0.0)
    got = run_backward_data(cpu, problem, fixed_algorithm(row.algo), alpha, beta)
    assert_close(
        got,
        problem.expected(alpha, beta),
        row.dx_dtype,
        f"alpha={alpha} beta={beta} {problem.describe()}",
    )


@pytest.mark.parametrize("depthwise", [False, True], ids=["groups", "depthwise"])
@pytest.mark.parametrize("name", list(DTYPE_ROWS))
def test_random_grouped_configurations(
    cpu: cd.Handle, rng: np.random.Generator, name: str, depthwise: bool
) -> None:
    row = require_row(**DTYPE_ROWS[name])
    groups = None if depthwise else int(rng.integers(2, 4))
    case = random_case(rng, row.conv_dims, groups=groups, depthwise=depthwise)
    problem = make_problem(cpu, row, case, rng, poison_dx=True)
    algo = choose_algorithm(cpu, problem)
    got = run_backward_data(cpu, problem, algo)
    assert_close(got, problem.expected(), row.dx_dtype, problem.describe())


def test_beta_zero_overwrites_nan(cpu: cd.Handle, rng: np.random.Generator) -> None:
    row = require_row(dtype="f32", dy_format="NCHW", dx_format="NCHW")
    problem = make_problem(cpu, row, GEOMETRIES_2D["stride2"], rng, poison_dx=True)
    assert np.all(np.isnan(problem.dx.to_numpy()))
    got = run_backward_data(cpu, problem, fixed_algorithm(row.algo), 1.0, 0.0)
    assert np.all(np.isfinite(got)), "beta=0 read the NaN in dx"
    assert_close(got, problem.expected(), "f32", problem.describe())


def test_beta_nonzero_reads_dx(cpu: cd.Handle, rng: np.random.Generator) -> None:
    # The converse: with beta != 0, NaN in dx must reach the result.
    row = require_row(dtype="f32", dy_format="NCHW", dx_format="NCHW")
    problem = make_problem(cpu, row, GEOMETRIES_2D["3x3-pad1"], rng, poison_dx=True)
    got = run_backward_data(cpu, problem, fixed_algorithm(row.algo), 1.0, 0.5)
    assert np.all(np.isnan(got))


def test_beta_one_accumulates(cpu: cd.Handle, rng: np.random.Generator) -> None:
    row = require_row(dtype="f64", dy_format="NCHW", dx_format="NCHW")
    problem = make_problem(cpu, row, GEOMETRIES_2D["groups2"], rng)
    algo = fixed_algorithm(row.algo)
    grad = problem.expected(1.0, 0.0)
    old = problem.dx_host.astype(np.float64)
    first = run_backward_data(cpu, problem, algo, 1.0, 1.0)
    assert_close(first, old + grad, "f64", "first accumulation")
    second = run_backward_data(cpu, problem, algo, 1.0, 1.0)
    assert_close(second, old + 2.0 * grad, "f64", "second accumulation")


def test_empty_dx_with_beta_zero(cpu: cd.Handle, rng: np.random.Generator) -> None:
    row = require_row(dtype="f32", dy_format="NHWC")
    problem = make_problem(cpu, row, GEOMETRIES_2D["dilation2"], rng)
    problem.dx = cd.Tensor.empty(
        cpu, problem.case.x_shape, dtype=cd.f32, format=getattr(cd, row.dx_format)
    )
    got = run_backward_data(cpu, problem, fixed_algorithm(row.algo))
    assert_close(got, problem.expected(), "f32", problem.describe())


@pytest.mark.parametrize("config", LEGACY_CONFIGS, ids=lambda r: r.config_id)
def test_all_algorithms_of_a_configuration_agree(
    cpu: cd.Handle, rng: np.random.Generator, config: Row
) -> None:
    # On the CPU the algorithm is bookkeeping: every admitted one gives the reference.
    case = random_case(rng, config.conv_dims)
    problem = make_problem(cpu, config, case, rng, poison_dx=True)
    expected = problem.expected()
    for name in fixed_algorithms_of(config, ROWS):
        problem.dx = cd.Tensor.from_numpy(
            cpu, problem.dx_host, format=getattr(cd, config.dx_format)
        )
        got = run_backward_data(cpu, problem, fixed_algorithm(name))
        assert_close(got, expected, config.dx_dtype, f"{name}: {problem.describe()}")


@pytest.mark.parametrize("config", LEGACY_CONFIGS, ids=lambda r: r.config_id)
def test_heuristic(cpu: cd.Handle, rng: np.random.Generator, config: Row) -> None:
    case = random_case(rng, config.conv_dims)
    problem = make_problem(cpu, config, case, rng, poison_dx=True)
    before = contents(problem.dx)
    best = cpu.get_convolution_backward_data_algorithm(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    assert contents(problem.dx) == before, "the heuristic query wrote to dx"
    assert isinstance(best, cd.BestHeuristic) and isinstance(best, cd.Algorithm)
    assert isinstance(best.algo, cd.Algorithm)
    assert not isinstance(best.algo, cd.BestHeuristic)
    assert best.algo.name in fixed_algorithms_of(config, ROWS), (
        f"heuristic picked {best.algo.name}, outside the table for {config.config_id}"
    )
    assert type(best.workspace_size) is int and best.workspace_size >= 0
    assert best.determinism in (
        cd.Determinism.Deterministic,
        cd.Determinism.NonDeterministic,
    )
    assert best.math_type in (
        cd.MathType.Default,
        cd.MathType.TensorOp,
        cd.MathType.TensorOpAllowConversion,
        cd.MathType.Fma,
    )
    assert isinstance(best.time, float)
    # The BestHeuristic object itself and its .algo both run and give the reference.
    for algo in (best, best.algo):
        problem.dx = cd.Tensor.from_numpy(
            cpu, problem.dx_host, format=getattr(cd, config.dx_format)
        )
        got = run_backward_data(cpu, problem, algo)
        assert_close(got, problem.expected(), config.dx_dtype, problem.describe())


@pytest.mark.parametrize("config", LEGACY_CONFIGS, ids=lambda r: r.config_id)
def test_deterministic_heuristic(
    cpu: cd.Handle, rng: np.random.Generator, config: Row
) -> None:
    case = random_case(rng, config.conv_dims)
    problem = make_problem(cpu, config, case, rng)
    admitted = fixed_algorithms_of(config, ROWS)
    if set(admitted) <= {"DataAlgo0"}:
        # As on a GPU: only the atomics-based ALGO_0 is listed, nothing deterministic.
        with pytest.raises(cd.CudnnError) as exc:
            cpu.get_convolution_backward_data_algorithm(
                problem.w, problem.dy, problem.dx, problem.conv, deterministic=True
            )
        assert exc.value.status == "CUDNN_STATUS_NOT_SUPPORTED"
        return
    best = cpu.get_convolution_backward_data_algorithm(
        problem.w, problem.dy, problem.dx, problem.conv, deterministic=True
    )
    assert best.determinism == cd.Determinism.Deterministic
    assert best.algo.name in admitted and best.algo.name != "DataAlgo0"


@pytest.mark.parametrize("config", LEGACY_CONFIGS, ids=lambda r: r.config_id)
def test_cpu_reports_each_algorithms_determinism_as_cudnn_does(
    cpu: cd.Handle, rng: np.random.Generator, config: Row
) -> None:
    """DataAlgo0 (atomics) is non-deterministic, the others deterministic, as cuDNN
    reports them; ``deterministic=True`` leaves DataAlgo0 out. Each listed algorithm
    computes the reference."""
    case = random_case(rng, config.conv_dims)
    problem = make_problem(cpu, config, case, rng)
    admitted = fixed_algorithms_of(config, ROWS)
    perfs = cpu.find_convolution_backward_data_algorithm(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    assert sorted(p.algo.name for p in perfs) == sorted(admitted)
    for perf in perfs:
        expected = (
            cd.Determinism.NonDeterministic
            if perf.algo.name == "DataAlgo0"
            else cd.Determinism.Deterministic
        )
        assert perf.determinism == expected, perf.algo.name
    if set(admitted) <= {"DataAlgo0"}:
        with pytest.raises(cd.CudnnError):
            cpu.find_convolution_backward_data_algorithm(
                problem.w, problem.dy, problem.dx, problem.conv, deterministic=True
            )
    else:
        det = cpu.find_convolution_backward_data_algorithm(
            problem.w, problem.dy, problem.dx, problem.conv, deterministic=True
        )
        assert sorted(p.algo.name for p in det) == sorted(
            a for a in admitted if a != "DataAlgo0"
        )
        assert all(p.determinism == cd.Determinism.Deterministic for p in det)
    for perf in perfs:
        problem.dx = cd.Tensor.from_numpy(
            cpu, problem.dx_host, format=getattr(cd, config.dx_format)
        )
        got = run_backward_data(cpu, problem, perf)
        assert_close(got, problem.expected(), config.dx_dtype, problem.describe())


@pytest.mark.parametrize("config", LEGACY_CONFIGS, ids=lambda r: r.config_id)
def test_find_lists_usable_algorithms_fastest_first(
    cpu: cd.Handle, rng: np.random.Generator, config: Row
) -> None:
    case = random_case(rng, config.conv_dims)
    problem = make_problem(cpu, config, case, rng)
    before = contents(problem.dx)
    perfs = cpu.find_convolution_backward_data_algorithm(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    assert contents(problem.dx) == before, "find wrote to dx"
    assert isinstance(perfs, list) and perfs, "find returned no algorithm"
    times = [perf.time for perf in perfs]
    assert all(isinstance(t, float) and t >= 0.0 for t in times), times
    assert times == sorted(times), f"not fastest first: {times}"
    allowed = fixed_algorithms_of(config, ROWS)
    names = [perf.algo.name for perf in perfs]
    assert len(set(names)) == len(names), f"duplicates: {names}"
    for perf in perfs:
        assert isinstance(perf, cd.AlgoPerf) and isinstance(perf, cd.BestHeuristic)
        assert perf.algo.name in allowed, f"{perf.algo.name} not in {allowed}"
        problem.dx = cd.Tensor.from_numpy(
            cpu, problem.dx_host, format=getattr(cd, config.dx_format)
        )
        got = run_backward_data(cpu, problem, perf, 0.5, -1.0)
        assert_close(
            got,
            problem.expected(0.5, -1.0),
            config.dx_dtype,
            f"{perf.algo.name}: {problem.describe()}",
        )


def test_find_respects_workspace_limit_and_determinism(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    row = require_row(dtype="f32", dy_format="NCHW", dx_format="NCHW")
    problem = make_problem(cpu, row, GEOMETRIES_2D["3x3-pad1"], rng)
    perfs = cpu.find_convolution_backward_data_algorithm(
        problem.w, problem.dy, problem.dx, problem.conv, max_workspace_bytes=0
    )
    assert perfs and all(perf.workspace_size == 0 for perf in perfs)
    perfs = cpu.find_convolution_backward_data_algorithm(
        problem.w, problem.dy, problem.dx, problem.conv, deterministic=True
    )
    assert perfs
    assert all(perf.determinism == cd.Determinism.Deterministic for perf in perfs)


@pytest.mark.parametrize("config", LEGACY_CONFIGS, ids=lambda r: r.config_id)
def test_workspace_size_and_workspace(
    cpu: cd.Handle, rng: np.random.Generator, config: Row
) -> None:
    case = random_case(rng, config.conv_dims)
    problem = make_problem(cpu, config, case, rng, poison_dx=True)
    for name in fixed_algorithms_of(config, ROWS):
        size = cpu.get_convolution_backward_data_workspace_size(
            problem.w, problem.dy, problem.dx, problem.conv, fixed_algorithm(name)
        )
        assert size is None, f"the CPU device needs no workspace, {name} asked {size}"
    # A workspace that is not needed is still accepted.
    workspace = cd.Workspace(cpu, 4096)
    assert workspace.nbytes >= 4096
    assert workspace.device == "cpu"
    algo = fixed_algorithm(fixed_algorithms_of(config, ROWS)[0])
    cpu.convolution_backward_data(
        1.0, problem.w, problem.dy, problem.conv, algo, workspace, 0.0, problem.dx
    )
    assert_close(
        problem.dx.to_numpy(), problem.expected(), config.dx_dtype, problem.describe()
    )


def test_workspace_of_none_size(cpu: cd.Handle) -> None:
    workspace = cd.Workspace(cpu, None)
    assert workspace.nbytes == 0
    assert workspace.device == "cpu"


def _one_call_cases() -> list[Row]:
    return [row for row in CONFIGS if row.dx_dtype == row.dy_dtype]


@pytest.mark.parametrize("algo", [None, "fixed"])
@pytest.mark.parametrize("config", _one_call_cases(), ids=lambda r: r.config_id)
def test_one_call_api(
    cpu: cd.Handle, rng: np.random.Generator, config: Row, algo: str | None
) -> None:
    case = random_case(rng, config.conv_dims)
    problem = make_problem(cpu, config, case, rng)
    fixed = fixed_algorithms_of(config)
    chosen = None if algo is None else fixed_algorithm((*fixed, "BestEngine")[0])
    fmt = getattr(cd, config.dx_format)
    dx = cd.convolution_backward_data(
        cpu,
        problem.w,
        problem.dy,
        problem.conv,
        x_shape=case.x_shape,
        algo=chosen,
        format=fmt,
    )
    assert isinstance(dx, cd.Tensor)
    assert dx.shape == case.x_shape
    assert dx.dtype == problem.dy.dtype
    assert dx.format is fmt
    assert dx.device == "cpu"
    assert_close(dx.to_numpy(), problem.expected(), config.dx_dtype, problem.describe())


def test_one_call_defaults_follow_dy(cpu: cd.Handle, rng: np.random.Generator) -> None:
    row = require_row(dtype="f32", dy_format="NHWC", dx_format="NHWC")
    case = GEOMETRIES_2D["groups3-stride2"]
    problem = make_problem(cpu, row, case, rng)
    dx = cd.convolution_backward_data(
        cpu, problem.w, problem.dy, problem.conv, x_shape=case.x_shape
    )
    assert dx.dtype == cd.f32 and dx.format is cd.NHWC and dx.shape == case.x_shape
    assert_close(dx.to_numpy(), problem.expected(), "f32", problem.describe())
    scaled = cd.convolution_backward_data(
        cpu, problem.w, problem.dy, problem.conv, case.x_shape, alpha=-2.0
    )
    assert_close(scaled.to_numpy(), problem.expected(-2.0), "f32", "alpha=-2")


def test_inputs_are_not_modified(cpu: cd.Handle, rng: np.random.Generator) -> None:
    row = require_row(dtype="f32", dy_format="NCHW", dx_format="NCHW")
    problem = make_problem(cpu, row, GEOMETRIES_2D["everything"], rng)
    w_before = problem.w.to_numpy().tobytes()
    dy_before = problem.dy.to_numpy().tobytes()
    run_backward_data(cpu, problem, fixed_algorithm(row.algo), 1.5, 0.5)
    assert problem.w.to_numpy().tobytes() == w_before
    assert problem.dy.to_numpy().tobytes() == dy_before


def test_integer_alpha_beta_are_accepted(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    row = require_row(dtype="f64", dy_format="NCHW", dx_format="NCHW")
    problem = make_problem(cpu, row, GEOMETRIES_2D["1x1"], rng)
    cpu.convolution_backward_data(
        2,
        problem.w,
        problem.dy,
        problem.conv,
        fixed_algorithm(row.algo),
        None,
        1,
        problem.dx,
    )
    assert_close(problem.dx.to_numpy(), problem.expected(2.0, 1.0), "f64", "ints")


@pytest.mark.parametrize("config", CONFIGS, ids=lambda r: r.config_id)
def test_graph_api_engines_on_the_cpu_device(
    cpu: cd.Handle, rng: np.random.Generator, config: Row
) -> None:
    case = random_case(rng, config.conv_dims)
    problem = make_problem(cpu, config, case, rng, poison_dx=False)
    before = contents(problem.dx)
    engine = cpu.get_convolution_backward_data_engine(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    assert isinstance(engine, cd.Engine) and isinstance(engine, cd.Algorithm)
    assert engine.name == "Engine" and engine.index == 0 and engine.knobs == []
    assert engine.determinism == cd.Determinism.Deterministic
    assert engine.time == -1.0 and engine.workspace_size == 0
    found = cpu.find_convolution_backward_data_engine(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    assert contents(problem.dx) == before, "a query wrote to dx"
    assert len(found) == 1 and found[0] == engine and found[0].time >= 0.0
    for algo in (engine, cd.BestEngine(), cd.BestEngine):
        assert (
            cpu.get_convolution_backward_data_workspace_size(
                problem.w, problem.dy, problem.dx, problem.conv, algo
            )
            is None
        )
        problem.dx = cd.Tensor.from_numpy(
            cpu, problem.dx_host, format=getattr(cd, config.dx_format)
        )
        got = run_backward_data(cpu, problem, algo, 0.5, -1.0)
        assert_close(
            got, problem.expected(0.5, -1.0), config.dx_dtype, problem.describe()
        )


def test_engine_records_compare_by_engine_and_print_their_fields(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    row = require_row(dtype="f32", dy_format="NHWC", dx_format="NCHW")
    problem = make_problem(cpu, row, GEOMETRIES_2D["3x3-pad1"], rng)
    a = cpu.get_convolution_backward_data_engine(
        problem.w, problem.dy, problem.dx, problem.conv
    )
    b = cpu.get_convolution_backward_data_engine(
        problem.w, problem.dy, problem.dx, problem.conv, deterministic=True
    )
    assert a == b and hash(a) == hash(b)
    assert a != cd.BestEngine() and cd.BestEngine() == cd.BestEngine()
    assert hash(cd.BestEngine()) == hash(cd.BestEngine())
    assert "index=0" in repr(a) and "Fma" in repr(a)
    assert repr(cd.BestEngine()) == "cudnn_rs.BestEngine()"
    with pytest.raises(TypeError):
        cd.Engine()  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="limit"):
        cpu.find_convolution_backward_data_engine(
            problem.w, problem.dy, problem.dx, problem.conv, limit=0
        )
    # Only the graph API runs this format combination: the legacy heuristic refuses
    # it before anything runs, and the one-call API picks BestEngine by itself.
    with pytest.raises(cd.UnsupportedConfigurationError, match="BestHeuristic"):
        cpu.get_convolution_backward_data_algorithm(
            problem.w, problem.dy, problem.dx, problem.conv
        )
    dx = cd.convolution_backward_data(
        cpu, problem.w, problem.dy, problem.conv, problem.dx.shape, format=cd.NCHW
    )
    assert_close(dx.to_numpy(), problem.expected(), "f32", problem.describe())
