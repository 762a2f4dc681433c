"""The public surface: names, markers, handle basics, descriptors, the support table."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from helpers import (
    ALL_ALGORITHMS,
    FIXED_ALGORITHMS,
    NUMPY_DTYPES,
    assert_close,
    support_rows,
)

import cudnn_rs as cd
from reference import ConvParams, conv_backward_data

# Every name spec/PYTHON_API.md promises.
CONTRACT_NAMES = [
    "Handle",
    "cuda_available",
    "f32",
    "f64",
    "f16",
    "bf16",
    "i8",
    "u8",
    "i32",
    "i64",
    "NCHW",
    "NHWC",
    "NCHWVectC8x4",
    "NCHWVectC8x32",
    "Tensor",
    "Filter",
    "ConvolutionDescriptor",
    "ConvolutionMode",
    "MathType",
    "DataAlgo0",
    "DataAlgo1",
    "Fft",
    "FftTiling",
    "Winograd",
    "WinogradNonFused",
    "BestHeuristic",
    "Workspace",
    "convolution_backward_data",
    "CudnnRsError",
    "UnsupportedConfigurationError",
    "ShapeError",
    "CudnnError",
    "CudaError",
    "DeviceMemoryError",
    "LibraryNotFoundError",
    # the second round
    "conv_input_grad",
]

# What our implementation adds on top (notes/python_api_spec.md).
EXTENDED_NAMES = [
    "DType",
    "F32",
    "F64",
    "F16",
    "BF16",
    "I8",
    "U8",
    "I32",
    "I64",
    "Format",
    "Determinism",
    "Algorithm",
    "AlgoPerf",
    "DeviceMismatchError",
    "device_count",
    "release_cached_memory",
    "supported_configurations",
]


@pytest.mark.parametrize("name", CONTRACT_NAMES + EXTENDED_NAMES)
def test_name_is_exported(name: str) -> None:
    assert hasattr(cd, name), f"cudnn_rs has no attribute {name!r}"
    assert name in cd.__all__, f"{name!r} missing from cudnn_rs.__all__"


@pytest.mark.parametrize(
    "member",
    [
        "from_numpy",
        "zeros",
        "empty",
        "to_numpy",
        "shape",
        "dtype",
        "format",
        "device",
        "nbytes",
        "from_dlpack",
        "__dlpack__",
        "__dlpack_device__",
        "__cuda_array_interface__",
    ],
)
def test_tensor_members(member: str) -> None:
    assert hasattr(cd.Tensor, member), f"cudnn_rs.Tensor has no {member!r}"


@pytest.mark.parametrize(
    "member",
    [
        "get_convolution_backward_data_algorithm",
        "find_convolution_backward_data_algorithm",
        "get_convolution_backward_data_workspace_size",
        "convolution_backward_data",
        "version",
        "device",
    ],
)
def test_handle_members(member: str) -> None:
    assert hasattr(cd.Handle, member), f"cudnn_rs.Handle has no {member!r}"


def test_all_lists_only_real_names() -> None:
    missing = [name for name in cd.__all__ if not hasattr(cd, name)]
    assert not missing, f"__all__ names attributes that do not exist: {missing}"
    assert len(set(cd.__all__)) == len(cd.__all__), "duplicates in __all__"


def _names_defined_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


def test_stubs_declare_every_contract_name() -> None:
    package_dir = Path(cd.__file__).resolve().parent
    stubs = sorted(package_dir.glob("*.pyi"))
    assert stubs, f"no .pyi stubs in {package_dir}"
    assert (package_dir / "py.typed").exists(), "py.typed marker missing"
    declared: set[str] = set()
    for stub in stubs:
        declared |= _names_defined_in(stub)
    missing = [name for name in CONTRACT_NAMES if name not in declared]
    assert not missing, f"not declared in {[s.name for s in stubs]}: {missing}"


def test_cuda_available_is_a_bool() -> None:
    for _ in range(3):
        assert type(cd.cuda_available()) is bool


def test_device_count_agrees_with_cuda_available() -> None:
    count = cd.device_count()
    assert type(count) is int and count >= 0
    if count == 0:
        assert cd.cuda_available() is False


def test_call_counts_name_each_count_and_cpu_work_counts_no_device_work() -> None:
    names = {"replayed", "captured", "direct", "variant_packs", "pool_allocations"}
    names |= {"release_waits", "torch_imports", "dlpack_imports", "plan_builds"}
    before = cd._native._call_counts()
    assert set(before) == names and all(isinstance(v, int) for v in before.values())
    h = cd.Handle(device="cpu")
    rng = np.random.default_rng()
    w = cd.Filter.from_numpy(h, rng.standard_normal((2, 2, 3, 3), np.float32))
    dy = cd.Tensor.from_numpy(h, rng.standard_normal((1, 2, 4, 4), np.float32))
    conv = cd.ConvolutionDescriptor(padding=(1, 1))
    dx = cd.convolution_backward_data(h, w, dy, conv, (1, 2, 4, 4))
    assert dx.device == "cpu"
    after = cd._native._call_counts()
    assert after["pool_allocations"] == before["pool_allocations"]
    assert after["plan_builds"] == before["plan_builds"]


def test_release_cached_memory_refuses_a_negative_device_and_counts_bytes() -> None:
    with pytest.raises(ValueError, match="device"):
        cd.release_cached_memory(-1)
    for device in (None, 0, 7):
        released = cd.release_cached_memory(device)
        assert type(released) is int and released >= 0
        if not cd.cuda_available():  # nothing was ever allocated on a device here
            assert released == 0


def test_cpu_handle_basics(cpu: cd.Handle) -> None:
    assert cpu.device == "cpu"
    assert cpu.is_cpu is True
    version = cpu.version()
    assert isinstance(version, tuple) and len(version) == 3, version
    assert all(type(part) is int and part >= 0 for part in version), version
    assert version[0] >= 8, f"cuDNN major version {version[0]} is too old to bind"
    cpu.synchronize()


def test_cpu_handle_spellings_agree() -> None:
    assert cd.Handle("cpu").device == cd.Handle(device="cpu").device == "cpu"


@pytest.mark.parametrize("name", list(NUMPY_DTYPES))
def test_dtype_markers(name: str) -> None:
    marker = getattr(cd, name)
    assert isinstance(marker, cd.DType)
    assert marker.name == name
    assert marker.itemsize == NUMPY_DTYPES[name].itemsize
    cls = getattr(cd, name.upper())
    assert isinstance(marker, cls)
    assert cls() == marker and hash(cls()) == hash(marker)
    others = [getattr(cd, other) for other in NUMPY_DTYPES if other != name]
    assert all(marker != other for other in others)


@pytest.mark.parametrize("name", ["NCHW", "NHWC", "NCHWVectC8x4", "NCHWVectC8x32"])
def test_format_markers(name: str) -> None:
    marker = getattr(cd, name)
    assert isinstance(marker, type) and issubclass(marker, cd.Format)
    assert marker.name == name


@pytest.mark.parametrize("name", FIXED_ALGORITHMS)
def test_algorithm_markers(name: str) -> None:
    cls = getattr(cd, name)
    algo = cls()
    assert isinstance(algo, cd.Algorithm)
    assert algo.name == name
    assert algo == cls()
    assert all(
        algo != getattr(cd, other)() for other in FIXED_ALGORITHMS if other != name
    )


def test_enums() -> None:
    modes = {cd.ConvolutionMode.Convolution, cd.ConvolutionMode.CrossCorrelation}
    assert len(modes) == 2
    math = [
        cd.MathType.Default,
        cd.MathType.TensorOp,
        cd.MathType.TensorOpAllowConversion,
        cd.MathType.Fma,
    ]
    assert len(set(math)) == 4
    assert cd.Determinism.Deterministic != cd.Determinism.NonDeterministic


def test_enum_ints_are_cudnns() -> None:
    # cudnnConvolutionMode_t, cudnnMathType_t and cudnnDeterminism_t, as cudnn.h numbers
    # them: code that compares with (or passes on) cuDNN's ints sees the same meaning.
    assert int(cd.ConvolutionMode.Convolution) == 0
    assert int(cd.ConvolutionMode.CrossCorrelation) == 1
    assert [int(m) for m in (cd.MathType.Default, cd.MathType.TensorOp)] == [0, 1]
    assert int(cd.MathType.TensorOpAllowConversion) == 2
    assert int(cd.MathType.Fma) == 3
    assert int(cd.Determinism.NonDeterministic) == 0
    assert int(cd.Determinism.Deterministic) == 1


def _markers() -> list[object]:
    return [
        *(getattr(cd, name) for name in NUMPY_DTYPES),
        *(getattr(cd, name)() for name in FIXED_ALGORITHMS),
        cd.DefaultAlgo(),
        cd.BestEngine(),
        cd.ConvolutionMode.Convolution,
        cd.ConvolutionMode.CrossCorrelation,
        *(getattr(cd.MathType, m) for m in ("Default", "TensorOp", "Fma")),
        cd.MathType.TensorOpAllowConversion,
        cd.Determinism.Deterministic,
        cd.Determinism.NonDeterministic,
        cd.NCHW,
        cd.NHWC,
    ]


@pytest.mark.parametrize("marker", _markers(), ids=repr)
def test_markers_pickle_and_copy_to_equal_markers(marker: object) -> None:
    # A configuration dict handed to a worker process, or deep-copied, keeps its markers.
    import copy
    import pickle

    for again in (
        pickle.loads(pickle.dumps(marker)),
        copy.copy(marker),
        copy.deepcopy({"m": marker})["m"],
    ):
        assert again == marker and type(again) is type(marker)
        assert hash(again) == hash(marker)
    others = [m for m in _markers() if type(m) is type(marker) and m != marker]
    assert all(pickle.loads(pickle.dumps(marker)) != o for o in others)


def test_convolution_descriptor_int_arguments_stand_for_every_dimension() -> None:
    # The spatial rank comes from a tuple's length; an int beside it is the same value
    # in every dimension.
    conv = cd.ConvolutionDescriptor(padding=(1, 2, 3), stride=2, dilation=1)
    assert (conv.padding, conv.stride, conv.dilation) == (
        (1, 2, 3),
        (2, 2, 2),
        (1, 1, 1),
    )
    conv = cd.ConvolutionDescriptor(padding=0, stride=(2, 1))
    assert (conv.padding, conv.stride, conv.dilation) == ((0, 0), (2, 1), (1, 1))
    conv = cd.ConvolutionDescriptor(padding=1, dilation=(1, 2, 2))
    assert conv.spatial_dims == 3 and conv.padding == (1, 1, 1)
    # With no tuple at all the rank is unknown: said so, not "padding has 1".
    with pytest.raises(TypeError, match="one per spatial dimension"):
        cd.ConvolutionDescriptor(padding=0)
    with pytest.raises(TypeError, match="one per spatial dimension"):
        cd.ConvolutionDescriptor(padding=1, stride=2)
    with pytest.raises(TypeError, match="one per spatial dimension"):
        cd.ConvolutionDescriptor()
    with pytest.raises(TypeError, match="one per spatial dimension"):
        cd.ConvolutionDescriptor(stride=2, dilation=1)
    # Tuples of different lengths stay an error.
    with pytest.raises(cd.CudnnRsError, match="same length"):
        cd.ConvolutionDescriptor(padding=(1, 1), stride=(1, 1, 1))


def test_convolution_descriptor_without_padding_pads_nothing(
    rng: np.random.Generator,
) -> None:
    # Padding not given is zero (as in PyTorch's layers); the rank then comes from the
    # stride's or the dilation's tuple.
    conv = cd.ConvolutionDescriptor(stride=(2, 2))
    assert (conv.spatial_dims, conv.padding, conv.stride, conv.dilation) == (
        2,
        (0, 0),
        (2, 2),
        (1, 1),
    )
    conv = cd.ConvolutionDescriptor(dilation=(1, 2, 2), groups=2)
    assert (conv.spatial_dims, conv.padding, conv.stride, conv.dilation) == (
        3,
        (0, 0, 0),
        (1, 1, 1),
        (1, 2, 2),
    )
    assert conv.groups == 2
    # And it computes what an explicit zero padding computes, checked against the
    # reference: a strided 3x3 layer, whose dx rows past the last window get nothing.
    h = cd.Handle(device="cpu")
    w_np = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    dy_np = rng.standard_normal((2, 4, 3, 3)).astype(np.float32)
    w = cd.Filter.from_numpy(h, w_np)
    dy = cd.Tensor.from_numpy(h, dy_np)
    x_shape = (2, 3, 8, 8)
    got = cd.convolution_backward_data(
        h, w, dy, cd.ConvolutionDescriptor(stride=(2, 2)), x_shape
    ).to_numpy()
    params = ConvParams(padding=(0, 0), stride=(2, 2), dilation=(1, 1), groups=1)
    expected = conv_backward_data(
        w_np.astype(np.float64), dy_np.astype(np.float64), x_shape, params
    )
    assert_close(got, expected, "f32", "ConvolutionDescriptor(stride=(2, 2))")


def test_convolution_descriptor_2d_properties() -> None:
    conv = cd.ConvolutionDescriptor(
        padding=(1, 2),
        stride=(2, 3),
        dilation=(1, 2),
        groups=2,
        mode=cd.ConvolutionMode.Convolution,
        math_type=cd.MathType.Fma,
        comp_type=cd.f64,
    )
    assert conv.padding == (1, 2)
    assert conv.stride == (2, 3)
    assert conv.dilation == (1, 2)
    assert conv.groups == 2
    assert conv.mode == cd.ConvolutionMode.Convolution
    assert conv.math_type == cd.MathType.Fma
    assert conv.comp_type == cd.f64
    assert conv.spatial_dims == 2
    conv.set_math_type(cd.MathType.TensorOp)
    assert conv.math_type == cd.MathType.TensorOp


def test_convolution_descriptor_defaults_and_3d() -> None:
    conv = cd.ConvolutionDescriptor(padding=(0, 1, 2))
    assert conv.spatial_dims == 3
    assert conv.padding == (0, 1, 2)
    assert conv.stride == (1, 1, 1)
    assert conv.dilation == (1, 1, 1)
    assert conv.groups == 1
    assert conv.mode == cd.ConvolutionMode.CrossCorrelation
    assert conv.math_type == cd.MathType.Default
    assert conv.comp_type == cd.f32


def test_supported_configurations_rows_are_well_formed() -> None:
    raw = cd.supported_configurations()
    assert isinstance(raw, list) and raw, "the support table is empty"
    for row in raw:
        assert isinstance(row, tuple) and len(row) == 10, row
        assert all(isinstance(field, str) for field in row[:8]), row
        assert all(type(field) is int for field in row[8:]), row
    rows = support_rows()
    assert len(set(rows)) == len(rows), "duplicate rows"
    for row in rows:
        assert row.algo in ALL_ALGORITHMS, row
        for dtype in (row.filter_dtype, row.dy_dtype, row.comp_dtype, row.dx_dtype):
            assert dtype in NUMPY_DTYPES, row
        for fmt in (row.filter_format, row.dy_format, row.dx_format):
            assert fmt in ("NCHW", "NHWC", "NCHWVectC8x4", "NCHWVectC8x32"), row
        assert row.conv_dims in (2, 3), row
        assert row.tensor_dims == row.conv_dims + 2, row


def test_best_heuristic_goes_with_fixed_algorithms_and_engines_with_best_engine() -> (
    None
):
    rows = support_rows()
    configs = {row.config for row in rows}
    for config in configs:
        algos = {row.algo for row in rows if row.config == config}
        fixed = algos & set(FIXED_ALGORITHMS)
        assert ("BestHeuristic" in algos) == bool(fixed), config
        assert ("Engine" in algos) == ("BestEngine" in algos), config
        assert fixed or "Engine" in algos, f"{config} has no algorithm"
    # The graph API runs every format combination the legacy API does, and more.
    engine_configs = {row.config for row in rows if row.algo == "Engine"}
    assert engine_configs == configs
    assert any(
        "BestHeuristic" not in {r.algo for r in rows if r.config == c} for c in configs
    )


def test_the_original_f32_nchw_rows_are_supported() -> None:
    rows = {row.id for row in support_rows()}
    for algo in ("DataAlgo0", "DataAlgo1", "BestHeuristic"):
        assert f"{algo}-2d-w:f32:NCHW-dy:f32:NCHW-comp:f32-dx:f32:NCHW" in rows


def test_exception_hierarchy() -> None:
    assert issubclass(cd.CudnnRsError, Exception)
    for exc in (
        cd.UnsupportedConfigurationError,
        cd.ShapeError,
        cd.CudnnError,
        cd.CudaError,
        cd.DeviceMemoryError,
        cd.LibraryNotFoundError,
        cd.DeviceMismatchError,
    ):
        assert issubclass(exc, cd.CudnnRsError), exc
    assert issubclass(cd.UnsupportedConfigurationError, TypeError)
    assert issubclass(cd.ShapeError, ValueError)
    assert issubclass(cd.DeviceMismatchError, cd.ShapeError)
    assert issubclass(cd.CudnnError, RuntimeError)
    assert issubclass(cd.CudaError, RuntimeError)
    assert issubclass(cd.DeviceMemoryError, cd.CudaError)
    assert issubclass(cd.DeviceMemoryError, MemoryError)
    assert issubclass(cd.LibraryNotFoundError, ImportError)
    # Distinct families must not be confused with one another.
    assert not issubclass(cd.ShapeError, TypeError)
    assert not issubclass(cd.UnsupportedConfigurationError, ValueError)
    assert not issubclass(cd.CudnnError, cd.CudaError)
    assert not issubclass(cd.CudaError, cd.CudnnError)


def test_exceptions_can_be_caught_as_instances() -> None:
    err = cd.ShapeError("boom")
    assert isinstance(err, ValueError) and isinstance(err, cd.CudnnRsError)
    assert "boom" in str(err)
    mem = cd.DeviceMemoryError("oom")
    assert isinstance(mem, MemoryError) and isinstance(mem, RuntimeError)
