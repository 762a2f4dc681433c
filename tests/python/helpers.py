"""Helpers shared by the test modules: support-table rows, operands and comparisons.

Expected values always come from ``reference.py`` (NumPy, float64), never from the
package under test.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest
from numpy.typing import NDArray

import cudnn_rs as cd
from reference import ConvParams, conv_backward_data, output_shape

# The storage types the package supports, by marker name.
NUMPY_DTYPES: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "i8": np.dtype(np.int8),
    "u8": np.dtype(np.uint8),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}
FLOAT_DTYPES = ("f32", "f64", "f16", "bf16")
INT_DTYPES = ("i8", "u8", "i32", "i64")

# Largest error allowed, relative to max |reference|, by the dtype of dx.
TOLERANCE: dict[str, float] = {"f64": 1e-10, "f32": 1e-4, "f16": 2e-2, "bf16": 5e-2}

FIXED_ALGORITHMS = (
    "DataAlgo0",
    "DataAlgo1",
    "Fft",
    "FftTiling",
    "Winograd",
    "WinogradNonFused",
)
# The graph (backend) API's columns: a chosen engine record and the heuristic marker.
ENGINE_ALGORITHMS = ("Engine", "BestEngine", "DefaultAlgo")
ALL_ALGORITHMS = (*FIXED_ALGORITHMS, "BestHeuristic", *ENGINE_ALGORITHMS)

# alpha/beta values exactly representable in every float type, so that rounding the
# scaling factors to the compute type changes nothing.
ALPHA_BETA = [
    (1.0, 0.0),
    (2.0, 0.0),
    (1.0, 1.0),
    (0.5, -1.5),
    (-0.75, 0.25),
    (0.0, 1.0),
]


@dataclass(frozen=True)
class Row:
    """One row of ``cudnn_rs.supported_configurations()``."""

    algo: str
    filter_dtype: str
    filter_format: str
    dy_dtype: str
    dy_format: str
    comp_dtype: str
    dx_dtype: str
    dx_format: str
    tensor_dims: int
    conv_dims: int

    @property
    def config(self) -> tuple[str | int, ...]:
        """Everything but the algorithm."""
        return (
            self.filter_dtype,
            self.filter_format,
            self.dy_dtype,
            self.dy_format,
            self.comp_dtype,
            self.dx_dtype,
            self.dx_format,
            self.tensor_dims,
            self.conv_dims,
        )

    @property
    def config_id(self) -> str:
        return (
            f"{self.conv_dims}d-w:{self.filter_dtype}:{self.filter_format}"
            f"-dy:{self.dy_dtype}:{self.dy_format}-comp:{self.comp_dtype}"
            f"-dx:{self.dx_dtype}:{self.dx_format}"
        )

    @property
    def id(self) -> str:
        return f"{self.algo}-{self.config_id}"

    def with_algo(self, algo: str) -> Row:
        return Row(algo, *self.config)  # type: ignore[arg-type]


def support_rows() -> list[Row]:
    return [Row(*row) for row in cd.supported_configurations()]


def config_rows(rows: Iterable[Row] | None = None) -> list[Row]:
    """One row per configuration, in table order: its DefaultAlgo row (what the one-call
    API runs when given no algorithm; every configuration has one)."""
    first: dict[tuple[str | int, ...], Row] = {}
    for row in support_rows() if rows is None else rows:
        first.setdefault(row.config, row)
    return [row.with_algo("DefaultAlgo") for row in first.values()]


def legacy_config_rows(rows: Iterable[Row] | None = None) -> list[Row]:
    """The configurations a legacy algorithm runs (their BestHeuristic rows)."""
    rows = support_rows() if rows is None else list(rows)
    legacy = {row.config for row in rows if row.algo == "BestHeuristic"}
    return [
        row.with_algo("BestHeuristic")
        for row in config_rows(rows)
        if row.config in legacy
    ]


def fixed_algorithms_of(row: Row, rows: Iterable[Row] | None = None) -> list[str]:
    """The fixed (legacy) algorithms the table admits for ``row``'s configuration."""
    return [
        r.algo
        for r in (support_rows() if rows is None else rows)
        if r.config == row.config and r.algo in FIXED_ALGORITHMS
    ]


def find_row(
    *,
    algo: str | None = None,
    dtype: str | None = None,
    comp: str | None = None,
    dy_format: str | None = None,
    filter_format: str | None = None,
    dx_format: str | None = None,
    conv_dims: int = 2,
) -> Row | None:
    """The first table row matching every given field (dtype: all three operands)."""
    for row in support_rows():
        if row.conv_dims != conv_dims:
            continue
        if algo is not None and row.algo != algo:
            continue
        if dtype is not None and not (
            row.filter_dtype == row.dy_dtype == row.dx_dtype == dtype
        ):
            continue
        if comp is not None and row.comp_dtype != comp:
            continue
        if dy_format is not None and row.dy_format != dy_format:
            continue
        if filter_format is not None and row.filter_format != filter_format:
            continue
        if dx_format is not None and row.dx_format != dx_format:
            continue
        return row
    return None


def require_row(**criteria: str | int | None) -> Row:
    """Like ``find_row``, but skips the test (saying what is missing) when none fits."""
    row = find_row(**criteria)  # type: ignore[arg-type]
    if row is None:
        pytest.skip(f"no row of supported_configurations() matches {criteria}")
    return row


def dtype_marker(name: str) -> cd.DType:
    marker: cd.DType = getattr(cd, name)
    return marker


def format_marker(name: str) -> type[cd.Format]:
    marker: type[cd.Format] = getattr(cd, name)
    return marker


def fixed_algorithm(name: str) -> cd.Algorithm:
    cls: type[cd.Algorithm] = getattr(cd, name)
    return cls()


@dataclass(frozen=True)
class ConvCase:
    """Shapes and geometry of one backward-data problem (logical NCHW(D) shapes)."""

    x_shape: tuple[int, ...]
    w_shape: tuple[int, ...]
    padding: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1
    convolution_mode: bool = False

    @property
    def params(self) -> ConvParams:
        return ConvParams(
            self.padding, self.stride, self.dilation, self.groups, self.convolution_mode
        )

    @property
    def dy_shape(self) -> tuple[int, ...]:
        return output_shape(self.x_shape, self.w_shape, self.params)

    @property
    def conv_dims(self) -> int:
        return len(self.padding)

    def mode(self) -> cd.ConvolutionMode:
        if self.convolution_mode:
            return cd.ConvolutionMode.Convolution
        return cd.ConvolutionMode.CrossCorrelation

    def descriptor(
        self, comp: str = "f32", math_type: cd.MathType | None = None
    ) -> cd.ConvolutionDescriptor:
        return cd.ConvolutionDescriptor(
            padding=self.padding,
            stride=self.stride,
            dilation=self.dilation,
            groups=self.groups,
            mode=self.mode(),
            math_type=cd.MathType.Default if math_type is None else math_type,
            comp_type=dtype_marker(comp),
        )

    def __str__(self) -> str:
        mode = "Convolution" if self.convolution_mode else "CrossCorrelation"
        return (
            f"x{self.x_shape} w{self.w_shape} dy{self.dy_shape} pad{self.padding} "
            f"stride{self.stride} dil{self.dilation} groups={self.groups} {mode}"
        )


def case_2d(
    x_shape: tuple[int, int, int, int],
    w_shape: tuple[int, int, int, int],
    padding: tuple[int, int] = (0, 0),
    stride: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    groups: int = 1,
    convolution_mode: bool = False,
) -> ConvCase:
    return ConvCase(
        x_shape, w_shape, padding, stride, dilation, groups, convolution_mode
    )


def random_case(
    rng: np.random.Generator,
    conv_dims: int,
    *,
    groups: int | None = None,
    depthwise: bool = False,
    convolution_mode: bool | None = None,
) -> ConvCase:
    """A small random valid geometry (non-empty output)."""
    if depthwise:
        groups = int(rng.integers(2, 5))
        c_per_group = 1
    else:
        if groups is None:
            groups = int(rng.choice([1, 1, 2, 3]))
        c_per_group = int(rng.integers(1, 4))
    k_per_group = int(rng.integers(1, 4))
    batch = int(rng.integers(1, 3))
    max_extra = 5 if conv_dims == 2 else 2
    kernel, padding, stride, dilation, spatial = [], [], [], [], []
    for _ in range(conv_dims):
        r = int(rng.integers(1, 4))
        d = int(rng.integers(1, 3))
        s = int(rng.integers(1, 3))
        extent = (r - 1) * d + 1
        p = int(rng.integers(0, extent))
        size = int(rng.integers(max(1, extent - 2 * p), extent + max_extra + 1))
        kernel.append(r)
        dilation.append(d)
        stride.append(s)
        padding.append(p)
        spatial.append(size)
    if convolution_mode is None:
        convolution_mode = bool(rng.integers(0, 2))
    return ConvCase(
        x_shape=(batch, groups * c_per_group, *spatial),
        w_shape=(groups * k_per_group, c_per_group, *kernel),
        padding=tuple(padding),
        stride=tuple(stride),
        dilation=tuple(dilation),
        groups=groups,
        convolution_mode=convolution_mode,
    )


def nonzero_values(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: str
) -> NDArray[np.generic]:
    """Random values of magnitude in [0.25, 1] and random sign, in ``dtype``."""
    magnitude = rng.uniform(0.25, 1.0, size=shape)
    sign = rng.choice(np.array([-1.0, 1.0]), size=shape)
    return (magnitude * sign).astype(NUMPY_DTYPES[dtype])


@dataclass
class Problem:
    """Host inputs, the package's operands built from them, and the geometry."""

    row: Row
    case: ConvCase
    w_host: NDArray[np.generic]
    dy_host: NDArray[np.generic]
    dx_host: NDArray[np.generic]  # dx's contents before the call
    w: cd.Filter
    dy: cd.Tensor
    dx: cd.Tensor
    conv: cd.ConvolutionDescriptor

    def expected(self, alpha: float = 1.0, beta: float = 0.0) -> NDArray[np.float64]:
        return conv_backward_data(
            self.w_host.astype(np.float64),
            self.dy_host.astype(np.float64),
            self.case.x_shape,
            self.case.params,
            alpha=alpha,
            beta=beta,
            dx=self.dx_host.astype(np.float64),
        )

    def describe(self) -> str:
        return f"{self.row.id} {self.case}"


def make_problem(
    handle: cd.Handle,
    row: Row,
    case: ConvCase,
    rng: np.random.Generator,
    *,
    poison_dx: bool = False,
    math_type: cd.MathType | None = None,
) -> Problem:
    """Fresh random non-zero w and dy; dx holds NaN (``poison_dx``) or random values."""
    w_host = nonzero_values(rng, case.w_shape, row.filter_dtype)
    dy_host = nonzero_values(rng, case.dy_shape, row.dy_dtype)
    if poison_dx:
        dx_host = np.full(case.x_shape, np.nan, dtype=NUMPY_DTYPES[row.dx_dtype])
    else:
        dx_host = nonzero_values(rng, case.x_shape, row.dx_dtype)
    return problem_from_host(handle, row, case, w_host, dy_host, dx_host, math_type)


def problem_from_host(
    handle: cd.Handle,
    row: Row,
    case: ConvCase,
    w_host: NDArray[np.generic],
    dy_host: NDArray[np.generic],
    dx_host: NDArray[np.generic],
    math_type: cd.MathType | None = None,
) -> Problem:
    """Copies the given host arrays to ``handle``'s device in ``row``'s formats."""
    return Problem(
        row=row,
        case=case,
        w_host=w_host,
        dy_host=dy_host,
        dx_host=dx_host,
        w=cd.Filter.from_numpy(handle, w_host, format=format_marker(row.filter_format)),
        dy=cd.Tensor.from_numpy(handle, dy_host, format=format_marker(row.dy_format)),
        dx=cd.Tensor.from_numpy(handle, dx_host, format=format_marker(row.dx_format)),
        conv=case.descriptor(row.comp_dtype, math_type),
    )


def choose_algorithm(handle: cd.Handle, problem: Problem) -> cd.Algorithm:
    """The row's algorithm: the marker, or the handle's pick for BestHeuristic and
    Engine."""
    if problem.row.algo == "BestHeuristic":
        return handle.get_convolution_backward_data_algorithm(
            problem.w, problem.dy, problem.dx, problem.conv
        )
    if problem.row.algo == "Engine":
        return handle.get_convolution_backward_data_engine(
            problem.w, problem.dy, problem.dx, problem.conv
        )
    return fixed_algorithm(problem.row.algo)


def workspace_for(
    handle: cd.Handle, problem: Problem, algo: cd.Algorithm
) -> cd.Workspace | None:
    size = handle.get_convolution_backward_data_workspace_size(
        problem.w, problem.dy, problem.dx, problem.conv, algo
    )
    assert size is None or (isinstance(size, int) and size >= 0), size
    return None if not size else cd.Workspace(handle, size)


def run_backward_data(
    handle: cd.Handle,
    problem: Problem,
    algo: cd.Algorithm,
    alpha: float = 1.0,
    beta: float = 0.0,
) -> NDArray[np.generic]:
    """Runs the call into ``problem.dx`` and returns dx's new logical contents."""
    workspace = workspace_for(handle, problem, algo)
    result = handle.convolution_backward_data(
        alpha, problem.w, problem.dy, problem.conv, algo, workspace, beta, problem.dx
    )
    assert result is None
    return problem.dx.to_numpy()


def assert_close(
    actual: NDArray[np.generic],
    expected: NDArray[np.float64],
    dtype: str,
    context: str,
    tolerance: float | None = None,
) -> None:
    """max |actual - expected| <= tolerance * max |expected|, and all finite."""
    tol = TOLERANCE[dtype] if tolerance is None else tolerance
    got = np.asarray(actual).astype(np.float64)
    assert got.shape == expected.shape, (
        f"{context}: shape {got.shape} != {expected.shape}"
    )
    bad = ~np.isfinite(got)
    assert not bad.any(), (
        f"{context}: {int(bad.sum())} non-finite values, first at "
        f"{tuple(int(i) for i in np.argwhere(bad)[0])}"
    )
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    scale = scale if scale > 0.0 else 1.0
    diff = np.abs(got - expected)
    worst = float(np.max(diff)) if diff.size else 0.0
    if worst > tol * scale:
        where = tuple(
            int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape)
        )
        raise AssertionError(
            f"{context}: max error {worst:.3g} > {tol:g} * max|ref| {scale:.3g} "
            f"(worst at {where}: got {got[where]!r}, expected {expected[where]!r})"
        )


def contents(tensor: cd.Tensor) -> bytes:
    """dx's bytes, for 'untouched' checks (bitwise, NaN-safe)."""
    return tensor.to_numpy().tobytes()
