"""Every refusal raises its documented exception and leaves dx bit-for-bit untouched."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import (
    ALL_ALGORITHMS,
    FIXED_ALGORITHMS,
    ConvCase,
    Problem,
    Row,
    case_2d,
    config_rows,
    contents,
    fixed_algorithm,
    fixed_algorithms_of,
    make_problem,
    nonzero_values,
    require_row,
    support_rows,
)

import cudnn_rs as cd

ROWS = support_rows()
BASE_CASE = case_2d((2, 4, 6, 6), (6, 2, 3, 3), padding=(1, 1), groups=2)


@pytest.fixture
def f32_problem(cpu: cd.Handle, rng: np.random.Generator) -> Problem:
    row = require_row(algo="DataAlgo1", dtype="f32", dy_format="NCHW", dx_format="NCHW")
    return make_problem(cpu, row, BASE_CASE, rng)


def assert_refused(
    expected: type[BaseException],
    dx: cd.Tensor,
    action: Callable[[], object],
) -> pytest.ExceptionInfo[BaseException]:
    """``action`` raises ``expected`` and dx keeps every bit it had."""
    before = contents(dx)
    with pytest.raises(expected) as excinfo:
        action()
    assert contents(dx) == before, "a refused call modified dx"
    return excinfo


def call(
    handle: cd.Handle,
    problem: Problem,
    *,
    w: Any = None,
    dy: Any = None,
    conv: Any = None,
    algo: Any = None,
    alpha: Any = 1.0,
    beta: Any = 0.0,
    dx: Any = None,
) -> Callable[[], object]:
    """The backward-data call on ``problem``, with the given arguments replaced."""

    def action() -> object:
        return handle.convolution_backward_data(
            alpha,
            problem.w if w is None else w,
            problem.dy if dy is None else dy,
            problem.conv if conv is None else conv,
            fixed_algorithm(problem.row.algo) if algo is None else algo,
            None,
            beta,
            problem.dx if dx is None else dx,
        )

    return action


def assert_names_nearest_rows(
    message: str, *must_mention: str, context: str = ""
) -> None:
    """The message names the nearest supported rows (and what was asked for)."""
    where = f"{context}: " if context else ""
    assert "nearest" in message.lower(), f"{where}no nearest rows named in: {message}"
    algos = [a for a in ALL_ALGORITHMS if a in message]
    assert algos, f"{where}no supported algorithm named in: {message}"
    for word in must_mention:
        assert word in message, f"{where}{word!r} not in: {message}"


# --- UnsupportedConfigurationError ------------------------------------------------


def _missing_algorithms() -> list[tuple[Row, str]]:
    cases: list[tuple[Row, str]] = []
    for config in config_rows(ROWS):
        admitted = fixed_algorithms_of(config, ROWS)
        cases.extend(
            (config, algo) for algo in FIXED_ALGORITHMS if algo not in admitted
        )
    return cases


@pytest.mark.parametrize(
    ("config", "algo"),
    _missing_algorithms(),
    ids=lambda v: v.config_id if isinstance(v, Row) else v,
)
def test_algorithm_outside_its_rows_is_refused(
    cpu: cd.Handle, rng: np.random.Generator, config: Row, algo: str
) -> None:
    case = (
        BASE_CASE
        if config.conv_dims == 2
        else ConvCase((1, 2, 4, 4, 4), (2, 2, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1))
    )
    problem = make_problem(cpu, config, case, rng, poison_dx=True)
    excinfo = assert_refused(
        cd.UnsupportedConfigurationError,
        problem.dx,
        call(cpu, problem, algo=fixed_algorithm(algo)),
    )
    assert_names_nearest_rows(str(excinfo.value), algo, config.dy_dtype)
    # The workspace query refuses the same combination.
    with pytest.raises(cd.UnsupportedConfigurationError):
        cpu.get_convolution_backward_data_workspace_size(
            problem.w, problem.dy, problem.dx, problem.conv, fixed_algorithm(algo)
        )


def test_fft_with_f64_is_refused(cpu: cd.Handle, rng: np.random.Generator) -> None:
    if any(r.algo == "Fft" and r.dy_dtype == "f64" for r in ROWS):
        pytest.skip("the table admits Fft for f64")
    row = require_row(dtype="f64", dy_format="NCHW", dx_format="NCHW")
    problem = make_problem(cpu, row, BASE_CASE, rng)
    excinfo = assert_refused(
        cd.UnsupportedConfigurationError,
        problem.dx,
        call(cpu, problem, algo=cd.Fft()),
    )
    assert_names_nearest_rows(str(excinfo.value), "Fft", "f64")
    assert isinstance(excinfo.value, TypeError)
    assert isinstance(excinfo.value, cd.CudnnRsError)


def test_mixed_dtypes_are_refused(cpu: cd.Handle, rng: np.random.Generator) -> None:
    row = require_row(dtype="f32", dy_format="NCHW", dx_format="NCHW")
    problem = make_problem(cpu, row, BASE_CASE, rng)
    dy64 = cd.Tensor.from_numpy(cpu, problem.dy_host.astype(np.float64))
    w16 = cd.Filter.from_numpy(cpu, problem.w_host.astype(np.float16))
    for name, action in {
        "dy f64": call(cpu, problem, dy=dy64),
        "w f16": call(cpu, problem, w=w16),
        "dy f64, one call": lambda: cd.convolution_backward_data(
            cpu, problem.w, dy64, problem.conv, x_shape=BASE_CASE.x_shape
        ),
        "heuristic query": lambda: cpu.get_convolution_backward_data_algorithm(
            problem.w, dy64, problem.dx, problem.conv
        ),
    }.items():
        excinfo = assert_refused(cd.UnsupportedConfigurationError, problem.dx, action)
        assert_names_nearest_rows(str(excinfo.value), context=name)


def test_mixed_dx_dtype_is_refused(cpu: cd.Handle, rng: np.random.Generator) -> None:
    row = require_row(dtype="f32", dy_format="NCHW", dx_format="NCHW")
    problem = make_problem(cpu, row, BASE_CASE, rng)
    dx64 = cd.Tensor.from_numpy(cpu, nonzero_values(rng, BASE_CASE.x_shape, "f64"))
    excinfo = assert_refused(
        cd.UnsupportedConfigurationError, dx64, call(cpu, problem, dx=dx64)
    )
    assert_names_nearest_rows(str(excinfo.value))


def test_compute_type_outside_the_table_is_refused(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    row = require_row(dtype="f32", dy_format="NCHW", dx_format="NCHW")
    problem = make_problem(cpu, row, BASE_CASE, rng)
    conv = BASE_CASE.descriptor("f64")  # f32 data with f64 compute: no such row
    assert_refused(
        cd.UnsupportedConfigurationError, problem.dx, call(cpu, problem, conv=conv)
    )


@pytest.mark.parametrize(
    ("dtype", "fmt"),
    [
        ("f32", "NCHWVectC8x4"),
        ("f16", "NCHWVectC8x32"),
        ("i32", "NCHWVectC8x4"),
        ("u8", "NCHWVectC8x32"),
    ],
)
def test_dtype_a_format_cannot_hold(cpu: cd.Handle, dtype: str, fmt: str) -> None:
    shape = (1, 32, 2, 2)
    with pytest.raises(cd.UnsupportedConfigurationError):
        cd.Tensor.zeros(cpu, shape, dtype=getattr(cd, dtype), format=getattr(cd, fmt))
    with pytest.raises(cd.UnsupportedConfigurationError):
        cd.Filter.empty(cpu, shape, dtype=getattr(cd, dtype), format=getattr(cd, fmt))
    host = np.zeros(shape, dtype=np.float32 if dtype == "f32" else np.int32)
    with pytest.raises(cd.UnsupportedConfigurationError):
        cd.Tensor.from_numpy(cpu, host, format=getattr(cd, fmt))


@pytest.mark.parametrize("np_dtype", [np.complex64, np.uint16, np.bool_, np.longdouble])
def test_unsupported_array_dtype(cpu: cd.Handle, np_dtype: type[np.generic]) -> None:
    host = np.ones((1, 2, 3, 3), dtype=np_dtype)
    with pytest.raises(cd.UnsupportedConfigurationError):
        cd.Tensor.from_numpy(cpu, host)
    with pytest.raises(cd.UnsupportedConfigurationError):
        cd.Filter.from_numpy(cpu, host)


def test_integer_data_has_no_backward_data_row(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    # Typed as Any: the stubs rightly reject this call statically; this checks the
    # run-time refusal.
    w: Any = cd.Filter.from_numpy(cpu, rng.integers(-3, 3, (4, 2, 3, 3), dtype=np.int8))
    dy: Any = cd.Tensor.from_numpy(
        cpu, rng.integers(-3, 3, (1, 4, 4, 4), dtype=np.int8)
    )
    dx: Any = cd.Tensor.zeros(cpu, (1, 2, 6, 6), dtype=cd.i8)
    conv: Any = cd.ConvolutionDescriptor(padding=(0, 0), comp_type=cd.i32)
    assert_refused(
        cd.UnsupportedConfigurationError,
        dx,
        lambda: cpu.convolution_backward_data(
            1.0, w, dy, conv, cd.DataAlgo0(), None, 0.0, dx
        ),
    )


# --- ShapeError -------------------------------------------------------------------


def test_dy_shape_not_matching_the_convolution(
    cpu: cd.Handle, f32_problem: Problem, rng: np.random.Generator
) -> None:
    n, k, h, w = BASE_CASE.dy_shape
    for bad_shape in [
        (n, k, h + 1, w),
        (n, k, h, w - 1),
        (n, k + 2, h, w),
        (n + 1, k, h, w),
    ]:
        bad = cd.Tensor.from_numpy(cpu, nonzero_values(rng, bad_shape, "f32"))
        assert_refused(cd.ShapeError, f32_problem.dx, call(cpu, f32_problem, dy=bad))


def test_dx_channels_not_matching_the_filter(
    cpu: cd.Handle, f32_problem: Problem, rng: np.random.Generator
) -> None:
    n, c, h, w = BASE_CASE.x_shape
    dx = cd.Tensor.from_numpy(cpu, nonzero_values(rng, (n, c + 2, h, w), "f32"))
    assert_refused(cd.ShapeError, dx, call(cpu, f32_problem, dx=dx))


def test_one_call_x_shape_not_matching_dy(cpu: cd.Handle, f32_problem: Problem) -> None:
    n, c, h, w = BASE_CASE.x_shape
    with pytest.raises(cd.ShapeError):
        cd.convolution_backward_data(
            cpu,
            f32_problem.w,
            f32_problem.dy,
            f32_problem.conv,
            x_shape=(n, c, h + 3, w),
        )


def test_rank_not_matching_the_descriptor(cpu: cd.Handle, f32_problem: Problem) -> None:
    conv3d = cd.ConvolutionDescriptor(padding=(1, 1, 1))
    assert_refused(cd.ShapeError, f32_problem.dx, call(cpu, f32_problem, conv=conv3d))


def test_filter_rank_not_matching_tensors(
    cpu: cd.Handle, f32_problem: Problem, rng: np.random.Generator
) -> None:
    w5 = cd.Filter.from_numpy(cpu, nonzero_values(rng, (6, 2, 3, 3, 3), "f32"))
    assert_refused(cd.ShapeError, f32_problem.dx, call(cpu, f32_problem, w=w5))


@pytest.mark.parametrize("shape", [(4,), (2, 3), (1, 2, 3, 4, 5, 6, 7, 8, 9)])
def test_wrong_rank_arrays(cpu: cd.Handle, shape: tuple[int, ...]) -> None:
    host = np.ones(shape, dtype=np.float32)
    with pytest.raises(cd.ShapeError):
        cd.Tensor.from_numpy(cpu, host)
    with pytest.raises(cd.ShapeError):
        cd.Filter.from_numpy(cpu, host)
    with pytest.raises(cd.ShapeError):
        cd.Tensor.zeros(cpu, shape)


@pytest.mark.parametrize(
    "shape", [(0, 2, 3, 3), (1, 0, 3, 3), (1, 2, 3, 0), (1, 2, 0, 3, 3)]
)
def test_zero_dims(cpu: cd.Handle, shape: tuple[int, ...]) -> None:
    with pytest.raises(cd.ShapeError):
        cd.Tensor.zeros(cpu, shape)
    with pytest.raises(cd.ShapeError):
        cd.Filter.empty(cpu, shape)
    with pytest.raises(cd.ShapeError):
        cd.Tensor.from_numpy(cpu, np.ones(shape, dtype=np.float32))


def test_negative_dims(cpu: cd.Handle) -> None:
    with pytest.raises(cd.ShapeError):
        cd.Tensor.zeros(cpu, (1, -2, 3, 3))
    with pytest.raises(cd.ShapeError):
        cd.Filter.zeros(cpu, (-1, 2, 3, 3))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"padding": (-1, 0)},
        {"padding": (1, 1), "stride": (0, 1)},
        {"padding": (1, 1), "stride": (1, -2)},
        {"padding": (1, 1), "dilation": (1, 0)},
        {"padding": (1, 1), "dilation": (-1, 1)},
        {"padding": (1, 1), "groups": 0},
        {"padding": (0, 0, -2)},
    ],
    ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()),
)
def test_invalid_descriptor_geometry(
    cpu: cd.Handle, f32_problem: Problem, kwargs: dict[str, Any]
) -> None:
    # Refused when the descriptor is built, or at the latest when it is used.
    def action() -> None:
        conv = cd.ConvolutionDescriptor(**kwargs)
        call(cpu, f32_problem, conv=conv)()

    assert_refused(cd.ShapeError, f32_problem.dx, action)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"padding": (1,)},
        {"padding": (1, 1, 1, 1)},
        {"padding": (1, 1), "stride": (1, 1, 1)},
        {"padding": (1, 1), "dilation": (1,)},
    ],
)
def test_descriptor_spatial_rank(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        cd.ConvolutionDescriptor(**kwargs)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "groups"),
    [
        ((1, 5, 6, 6), (4, 2, 3, 3), 2),  # 5 input channels, 2 groups
        ((1, 4, 6, 6), (3, 2, 3, 3), 2),  # 3 output channels, 2 groups
        ((1, 4, 6, 6), (4, 4, 3, 3), 2),  # filter holds C, not C / groups
        ((1, 6, 6, 6), (6, 2, 3, 3), 4),  # 4 groups of neither
    ],
)
def test_groups_not_dividing_channels(
    cpu: cd.Handle,
    rng: np.random.Generator,
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    groups: int,
) -> None:
    h_out = x_shape[2] - w_shape[2] + 1
    dy_shape = (x_shape[0], w_shape[0], h_out, h_out)
    w = cd.Filter.from_numpy(cpu, nonzero_values(rng, w_shape, "f32"))
    dy = cd.Tensor.from_numpy(cpu, nonzero_values(rng, dy_shape, "f32"))
    dx = cd.Tensor.from_numpy(cpu, nonzero_values(rng, x_shape, "f32"))
    conv = cd.ConvolutionDescriptor(padding=(0, 0), groups=groups)
    assert_refused(
        cd.ShapeError,
        dx,
        lambda: cpu.convolution_backward_data(
            1.0, w, dy, conv, cd.DataAlgo0(), None, 0.0, dx
        ),
    )
    with pytest.raises(cd.ShapeError):
        cd.convolution_backward_data(cpu, w, dy, conv, x_shape=x_shape)


def test_kernel_larger_than_padded_input(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    w = cd.Filter.from_numpy(cpu, nonzero_values(rng, (2, 2, 5, 5), "f32"))
    dy = cd.Tensor.from_numpy(cpu, nonzero_values(rng, (1, 2, 1, 1), "f32"))
    dx = cd.Tensor.from_numpy(cpu, nonzero_values(rng, (1, 2, 3, 3), "f32"))
    conv = cd.ConvolutionDescriptor(padding=(0, 0))
    assert_refused(
        cd.ShapeError,
        dx,
        lambda: cpu.convolution_backward_data(
            1.0, w, dy, conv, cd.DataAlgo0(), None, 0.0, dx
        ),
    )


# --- TypeError for wrong Python types ---------------------------------------------


@pytest.mark.parametrize(
    "replacement",
    [
        {"alpha": "1.0"},
        {"alpha": None},
        {"beta": "0"},
        {"beta": [0.0]},
        {"dy": "not a tensor"},
        {"w": np.ones((6, 2, 3, 3), dtype=np.float32)},
        {"conv": (1, 1)},
        {"algo": "DataAlgo1"},
    ],
    ids=lambda r: next(f"{k}={type(v).__name__}" for k, v in r.items()),
)
def test_wrong_python_types_raise_type_error(
    cpu: cd.Handle, f32_problem: Problem, replacement: dict[str, object]
) -> None:
    excinfo = assert_refused(
        TypeError, f32_problem.dx, call(cpu, f32_problem, **replacement)
    )
    assert not isinstance(excinfo.value, cd.UnsupportedConfigurationError), (
        f"a wrong Python type is not an unsupported configuration: {excinfo.value}"
    )


def test_dx_given_as_a_filter_is_refused(cpu: cd.Handle, f32_problem: Problem) -> None:
    as_filter = cd.Filter.from_numpy(cpu, f32_problem.dx_host)
    with pytest.raises(TypeError):
        call(cpu, f32_problem, dx=as_filter)()


# --- No GPU -----------------------------------------------------------------------


@pytest.mark.parametrize("device", [None, 0, "cuda", "cuda:0"])
def test_handle_without_gpu_raises(device: int | str | None) -> None:
    if cd.cuda_available():
        pytest.skip("a CUDA device is available here; this checks machines without")
    with pytest.raises((cd.CudaError, cd.LibraryNotFoundError)) as excinfo:
        if device is None:
            cd.Handle()
        else:
            cd.Handle(device=device)
    assert isinstance(excinfo.value, cd.CudnnRsError)
    message = str(excinfo.value)
    assert message, "empty error message"
    if isinstance(excinfo.value, cd.LibraryNotFoundError):
        assert "CUDNN_RS_CUDNN_PATH" in message or "libcuda" in message, message


def test_no_driver_message_lists_each_name_tried_once() -> None:
    if cd.cuda_available():
        pytest.skip("a CUDA device is available here; this checks machines without")
    with pytest.raises(cd.CudaError) as excinfo:
        cd.Handle()
    message = str(excinfo.value)
    if "could not load libcuda" not in message:
        pytest.skip(f"a driver library loads here (another refusal): {message}")
    tried = re.search(r"\(tried ([^)]*)\)", message)
    assert tried, message
    names = tried.group(1).split(", ")
    assert names and len(names) == len(set(names)), names
    # `python -m cudnn_rs info` walks the same names, in the same order, so what it
    # reports is what `Handle()` (and cudarc after it) loads.
    info = cd._native._driver_info()
    assert info["loaded"] is None, info
    assert [name for name, _why in info["tried"]] == names, (info["tried"], names)


def test_unknown_device_names_every_accepted_spelling() -> None:
    with pytest.raises(ValueError) as excinfo:
        cd.Handle(device="CPU")
    message = str(excinfo.value)
    for spelling in ("cpu", "cuda", "cuda:N", "gpu"):
        assert f'"{spelling}"' in message, message
    # Every spelling named is accepted: the CPU one works, the CUDA ones get as far as
    # looking for a GPU (a CudaError here when there is none), never a ValueError.
    assert cd.Handle(device="cpu").device == "cpu"
    for spelling in ("cuda", "cuda:0", "gpu"):
        try:
            cd.Handle(device=spelling)
        except (cd.CudaError, cd.LibraryNotFoundError):
            pass
    with pytest.raises(TypeError, match='"gpu"'):
        cd.Handle(device=1.5)  # type: ignore[arg-type]


def test_errors_leave_inputs_usable(cpu: cd.Handle, f32_problem: Problem) -> None:
    # After a refusal the same operands still compute the right answer.
    with pytest.raises(cd.UnsupportedConfigurationError):
        dy64 = cd.Tensor.from_numpy(cpu, f32_problem.dy_host.astype(np.float64))
        call(cpu, f32_problem, dy=dy64)()
    call(cpu, f32_problem)()
    got = f32_problem.dx.to_numpy().astype(np.float64)
    expected = f32_problem.expected()
    assert np.max(np.abs(got - expected)) <= 1e-4 * np.max(np.abs(expected))
