"""Typed cuDNN convolution backward-data (the native module, re-exported by cudnn_rs).

``Tensor``, ``Filter`` and ``ConvolutionDescriptor`` are generic in the stubs only:
``Tensor[F16, NHWC, Rank4]`` is a 4-d f16 tensor stored NHWC,
``ConvolutionDescriptor[F32, Spatial2]`` a 2-d convolution computing in f32. The
constructors infer the parameters from their arguments, and the backward-data calls
have overloads generated from the support table (one per line, the algorithm a union
of those it admits), so a type checker rejects a combination the table lacks. What is known only at run time (the dtype of an array of
unknown dtype, the length of a shape of unknown length) is typed as the base class
(``DType``, ``Format``) or ``Any``; general overloads accept those operands, and the
call checks them when it runs.
"""

import os
import types
from collections.abc import Sequence
from typing import Any, ClassVar, Final, Generic, Never, Protocol, final, overload

import numpy as np
import numpy.typing as npt
from typing_extensions import CapsuleType, TypeVar, disjoint_base

from cudnn_rs._typing import Rank, Rank4, Rank5, Spatial, Spatial2, Spatial3

__all__ = [
    "BF16",
    "BOUND_CUDNN_VERSION",
    "F16",
    "F32",
    "F64",
    "I8",
    "I32",
    "I64",
    "NCHW",
    "NHWC",
    "U8",
    "AlgoPerf",
    "Algorithm",
    "BestEngine",
    "BestHeuristic",
    "ConvolutionDescriptor",
    "ConvolutionMode",
    "CudaError",
    "CudnnError",
    "CudnnRsError",
    "DType",
    "DataAlgo0",
    "DataAlgo1",
    "DefaultAlgo",
    "Determinism",
    "DeviceMemoryError",
    "DeviceMismatchError",
    "Engine",
    "Fft",
    "FftTiling",
    "Filter",
    "Format",
    "Handle",
    "LibraryNotFoundError",
    "MathType",
    "NCHWVectC8x4",
    "NCHWVectC8x32",
    "ShapeError",
    "Tensor",
    "UnsupportedConfigurationError",
    "Winograd",
    "WinogradNonFused",
    "Workspace",
    "_add_cudnn_search_dir",
    "_call_counts",
    "_convolution_backward_data_into",
    "_cudnn_info",
    "_cudnn_origin",
    "_driver_info",
    "_gpus",
    "_pointer_device",
    "_torch_input_grad",
    "bf16",
    "convolution_backward_data",
    "cuda_available",
    "device_count",
    "f16",
    "f32",
    "f64",
    "i8",
    "i32",
    "i64",
    "release_cached_memory",
    "supported_configurations",
    "u8",
    "wait_background_builds",
]

# ---------------------------------------------------------------- data types

@disjoint_base
class DType:
    """Base class of the data-type markers (``f32``, ``f16``, ...).

    Instances compare equal and hash by name: ``F32() == f32``.
    """

    @property
    def name(self) -> str:
        """Short name: "f32", "bf16", ..."""
    @property
    def itemsize(self) -> int:
        """Bytes per element."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class F32(DType):
    """The ``f32`` data-type marker (IEEE single precision)."""

@final
class F64(DType):
    """The ``f64`` data-type marker (IEEE double precision)."""

@final
class F16(DType):
    """The ``f16`` data-type marker (IEEE half precision)."""

@final
class BF16(DType):
    """The ``bf16`` data-type marker (bfloat16; NumPy arrays via ml_dtypes)."""

@final
class I8(DType):
    """The ``i8`` data-type marker."""

@final
class U8(DType):
    """The ``u8`` data-type marker."""

@final
class I32(DType):
    """The ``i32`` data-type marker."""

@final
class I64(DType):
    """The ``i64`` data-type marker."""

f32: Final[F32]
"""The ``f32`` marker."""
f64: Final[F64]
"""The ``f64`` marker."""
f16: Final[F16]
"""The ``f16`` marker."""
bf16: Final[BF16]
"""The ``bf16`` marker."""
i8: Final[I8]
"""The ``i8`` marker."""
u8: Final[U8]
"""The ``u8`` marker."""
i32: Final[I32]
"""The ``i32`` marker."""
i64: Final[I64]
"""The ``i64`` marker."""

# ---------------------------------------------------------------- formats

@disjoint_base
class Format:
    """Base class of the memory-format markers.

    The classes themselves (``NCHW``, ``NHWC``, ...) are the markers: pass
    ``format=cudnn_rs.NHWC``; ``tensor.format`` is the class.
    """

    name: ClassVar[str]
    """The format's name: "NCHW", "NHWC", ... (defined by each format class)."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class NCHW(Format):
    """Channels first: N, C, H, W (N, C, D, H, W for rank 5) from outermost."""

@final
class NHWC(Format):
    """Channels last: N, H, W, C (N, D, H, W, C for rank 5) from outermost."""

@final
class NCHWVectC8x4(Format):
    """NCHW with channels packed by 4 (cuDNN's NCHW_VECT_C for 8-bit integers)."""

@final
class NCHWVectC8x32(Format):
    """NCHW with channels packed by 32 (cuDNN's NCHW_VECT_C, i8 only)."""

# ---------------------------------------------------------------- enums

@final
class ConvolutionMode:
    """Whether the filter is flipped (``Convolution``) or not (``CrossCorrelation``)."""

    Convolution: ClassVar[ConvolutionMode]
    CrossCorrelation: ClassVar[ConvolutionMode]
    @property
    def name(self) -> str:
        """The member's name, as ``enum.Enum.name``."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __int__(self) -> int: ...

@final
class MathType:
    """cuDNN's math mode: whether tensor cores may be used."""

    Default: ClassVar[MathType]
    TensorOp: ClassVar[MathType]
    TensorOpAllowConversion: ClassVar[MathType]
    Fma: ClassVar[MathType]
    @property
    def name(self) -> str:
        """The member's name, as ``enum.Enum.name``."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __int__(self) -> int: ...

@final
class Determinism:
    """Whether an algorithm's results are bitwise reproducible. As ints, cuDNN's
    ``cudnnDeterminism_t`` values: ``NonDeterministic`` 0, ``Deterministic`` 1."""

    Deterministic: ClassVar[Determinism]
    NonDeterministic: ClassVar[Determinism]
    @property
    def name(self) -> str:
        """The member's name, as ``enum.Enum.name``."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __int__(self) -> int: ...

# ---------------------------------------------------------------- algorithms

@disjoint_base
class Algorithm:
    """Base class of the backward-data algorithms; instances compare equal by name."""

    @property
    def name(self) -> str:
        """The algorithm's name ("DataAlgo0", ..., "BestHeuristic", "Engine",
        "BestEngine")."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class DataAlgo0(Algorithm):
    """CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: sums of matrix products with atomics
    (non-deterministic)."""

@final
class DataAlgo1(Algorithm):
    """CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: implicit matrix product (deterministic)."""

@final
class Fft(Algorithm):
    """CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: FFT, large workspace."""

@final
class FftTiling(Algorithm):
    """CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: tiled FFT."""

@final
class Winograd(Algorithm):
    """CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: fused Winograd."""

@final
class WinogradNonFused(Algorithm):
    """CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED."""

@final
class BestEngine(Algorithm):
    """The graph API's heuristic engine for the problem, chosen on first use per
    problem and kept on the handle."""

@final
class DefaultAlgo(Algorithm):
    """The library's default choice (what the one-call API runs): made without
    timing, the same in every process for a problem, cuDNN and GPU; on a handle with
    ``benchmark=True``, the fastest engine measured once per problem. Admitted on
    every configuration."""

@disjoint_base
class BestHeuristic(Algorithm):
    """An algorithm cuDNN chose, with what it said of it.

    Admitted by every configuration of the support table that has a legacy
    algorithm: usable wherever one is.
    """

    @property
    def algo(
        self,
    ) -> DataAlgo0 | DataAlgo1 | Fft | FftTiling | WinogradNonFused:
        """The algorithm chosen: an instance of one of the five algorithm classes cuDNN 9
        runs (never ``Winograd``, which it no longer runs for backward data)."""
    @property
    def time(self) -> float:
        """Milliseconds cuDNN measured, or -1.0 where it only estimated."""
    @property
    def workspace_size(self) -> int:
        """Workspace bytes the algorithm needs."""
    @property
    def determinism(self) -> Determinism:
        """Whether the algorithm's results are reproducible."""
    @property
    def math_type(self) -> MathType:
        """The math mode the algorithm runs with."""

@final
class AlgoPerf(BestHeuristic):
    """One measured result of ``Handle.find_convolution_backward_data_algorithm``."""

@final
class Engine(Algorithm):
    """One engine of cuDNN's graph (backend) API, as
    ``Handle.get_convolution_backward_data_engine`` and
    ``Handle.find_convolution_backward_data_engine`` return it. Usable wherever the
    support table lists ``Engine``."""

    @property
    def index(self) -> int:
        """The engine's global index in cuDNN."""
    @property
    def knobs(self) -> list[tuple[int, int]]:
        """The knob choices, ``(knob type, value)`` as cuDNN numbers them."""
    @property
    def time(self) -> float:
        """Milliseconds measured (``find_convolution_backward_data_engine``), or -1.0."""
    @property
    def workspace_size(self) -> int:
        """Workspace bytes the engine needs for the problem it was chosen for."""
    @property
    def determinism(self) -> Determinism:
        """Whether the engine's results are reproducible."""
    @property
    def math_type(self) -> MathType:
        """``TensorOp`` when the engine runs on tensor cores (TF32 for f32), else
        ``Fma``."""

# ---------------------------------------------------------------- type variables

_DT = TypeVar("_DT", bound=DType)
_FMT = TypeVar("_FMT", bound=Format)
_RANK = TypeVar("_RANK", bound=Rank)
_CT = TypeVar("_CT", bound=DType)
_SP = TypeVar("_SP", bound=Spatial)
# What the constructors infer from their arguments; the defaults are the run-time
# defaults of an omitted (or None) argument.
_NewDT = TypeVar("_NewDT", bound=DType, default=F32)
_NewFMT = TypeVar("_NewFMT", bound=Format, default=NCHW)

# The generated overloads' formats: one overload covers every combination of the
# two layouts of filter, dy and dx (constrained, so each is exactly NCHW or NHWC).
_LayoutW = TypeVar("_LayoutW", NCHW, NHWC)
_LayoutY = TypeVar("_LayoutY", NCHW, NHWC)
_LayoutX = TypeVar("_LayoutX", NCHW, NHWC)

# BEGIN GENERATED DECLARATIONS
# Generated by `cargo run -p xtask -- stubs` (xtask/src/render.rs); do not edit
# by hand. The data types of the overloads that cover the format groups of
# several lines of the table at once: each variable is exactly one of its types.
_DT_F32_F16_BF16 = TypeVar("_DT_F32_F16_BF16", F32, F16, BF16)
_DT_F64_F16 = TypeVar("_DT_F64_F16", F64, F16)

# The misuse overload (the last of each backward-data call) accepts nothing: every
# object's ``__repr__`` returns a ``str``, never ``Never``. It exists for the error
# message: mypy lists every overload of a call that no overload nearly fits (an array
# passed as an operand), but reports only the wrong arguments of the first overload
# that nearly fits, and this one nearly fits any object: a line per wrong operand.
_Str_co = TypeVar("_Str_co", bound=str, covariant=True)

class _NotAnOperand(Protocol[_Str_co]):
    def __repr__(self) -> _Str_co: ...

_FilterExpected = TypeVar("_FilterExpected", bound=_NotAnOperand[Never])
_TensorExpectedForDy = TypeVar("_TensorExpectedForDy", bound=_NotAnOperand[Never])
_TensorExpectedForDx = TypeVar("_TensorExpectedForDx", bound=_NotAnOperand[Never])

# END GENERATED DECLARATIONS

# The array overloads of ``from_numpy`` take the array's scalar type as a type variable
# bounded by the type they stand for, not the type itself: mypy types an inline
# ``np.zeros(..., dtype=np.float32)`` in the context of each overload's parameter and
# NumPy's stubs let that context choose the dtype, so a concrete parameter type would
# make the first overload match every inline array. A variable leaves the argument's
# own type to decide. ``X[Never]`` bounds match only arrays whose dtype is (partly) Any.
_AnyScalar = TypeVar("_AnyScalar", bound=np.generic[Never])
_AnyFloating = TypeVar("_AnyFloating", bound=np.floating[Never])
_AnySigned = TypeVar("_AnySigned", bound=np.signedinteger[Never])
_AnyUnsigned = TypeVar("_AnyUnsigned", bound=np.unsignedinteger[Never])
_Float16 = TypeVar("_Float16", bound=np.float16)
_Float32 = TypeVar("_Float32", bound=np.float32)
_Float64 = TypeVar("_Float64", bound=np.float64)
_Int8 = TypeVar("_Int8", bound=np.int8)
_Int32 = TypeVar("_Int32", bound=np.int32)
_Int64 = TypeVar("_Int64", bound=np.int64)
_UInt8 = TypeVar("_UInt8", bound=np.uint8)

_Shape4 = tuple[int, int, int, int]
_Shape5 = tuple[int, int, int, int, int]

# ---------------------------------------------------------------- tensors

@final
class Tensor(Generic[_DT, _FMT, _RANK]):
    """A tensor on a handle's device: data type ``_DT``, memory format ``_FMT``, rank
    ``_RANK`` (``Rank4`` / ``Rank5``).

    Its shape is logical, (N, C, H, W) or (N, C, D, H, W), whatever the memory format.
    The type parameters are invariant: ``Tensor[DType, ...]`` means "data type known
    only at run time", which the general overloads of the backward-data calls accept.
    """

    # Arrays whose dtype is (partly) Any match the first overloads (bounded by
    # X[Never], which no concrete array meets): the dtype is then known only at run
    # time, not guessed. NumPy's typing makes float16 arrays float32 (and float64)
    # arrays, int8 arrays int32 (and int64) arrays: narrowest first, hence the ignores.
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_AnyScalar],
        format: type[_NewFMT] | None = None,
    ) -> Tensor[DType, _NewFMT, Any]:
        """Copies a NumPy array (logical NCHW(D) order) to the handle's device.

        The data type is the array's: statically known for float16, float32, float64,
        int8, int32, int64 and uint8 arrays, ``DType`` otherwise (bfloat16, or a dtype
        known only at run time). The rank is known only at run time.
        """
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_AnyFloating],
        format: type[_NewFMT] | None = None,
    ) -> Tensor[DType, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_AnySigned],
        format: type[_NewFMT] | None = None,
    ) -> Tensor[DType, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_AnyUnsigned],
        format: type[_NewFMT] | None = None,
    ) -> Tensor[DType, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_Float16],
        format: type[_NewFMT] | None = None,
    ) -> Tensor[F16, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_Float32],
        format: type[_NewFMT] | None = None,
    ) -> Tensor[F32, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(
        handle: Handle,
        array: npt.NDArray[_Float64],
        format: type[_NewFMT] | None = None,
    ) -> Tensor[F64, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_Int8],
        format: type[_NewFMT] | None = None,
    ) -> Tensor[I8, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_Int32],
        format: type[_NewFMT] | None = None,
    ) -> Tensor[I32, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(
        handle: Handle,
        array: npt.NDArray[_Int64],
        format: type[_NewFMT] | None = None,
    ) -> Tensor[I64, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(
        handle: Handle,
        array: npt.NDArray[_UInt8],
        format: type[_NewFMT] | None = None,
    ) -> Tensor[U8, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(
        handle: Handle,
        array: npt.ArrayLike,
        format: type[_NewFMT] | None = None,
    ) -> Tensor[DType, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def zeros(
        handle: Handle,
        shape: _Shape4,
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Tensor[_NewDT, _NewFMT, Rank4]:
        """A zero-filled tensor of logical ``shape`` (dtype f32 and format NCHW by
        default). The rank is inferred from a shape tuple of length 4 or 5."""
    @overload
    @staticmethod
    def zeros(
        handle: Handle,
        shape: _Shape5,
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Tensor[_NewDT, _NewFMT, Rank5]: ...
    @overload
    @staticmethod
    def zeros(
        handle: Handle,
        shape: Sequence[int],
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Tensor[_NewDT, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def empty(
        handle: Handle,
        shape: _Shape4,
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Tensor[_NewDT, _NewFMT, Rank4]:
        """An uninitialised tensor (zero-filled on the CPU device); as ``zeros``."""
    @overload
    @staticmethod
    def empty(
        handle: Handle,
        shape: _Shape5,
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Tensor[_NewDT, _NewFMT, Rank5]: ...
    @overload
    @staticmethod
    def empty(
        handle: Handle,
        shape: Sequence[int],
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Tensor[_NewDT, _NewFMT, Any]: ...
    @property
    def shape(self) -> tuple[int, ...]:
        """Logical shape: (N, C, H, W) or (N, C, D, H, W)."""
    @property
    def ndim(self) -> int:
        """Number of dimensions."""
    @property
    def dtype(self) -> _DT:
        """Data-type marker (the module-level instance, e.g. ``cudnn_rs.f32``)."""
    @property
    def format(self) -> type[_FMT]:
        """Memory-format marker class (``tensor.format is cudnn_rs.NHWC``)."""
    @property
    def device(self) -> str:
        """ "cpu" or "cuda:N"."""
    @property
    def nbytes(self) -> int:
        """Bytes of storage."""
    @overload
    @staticmethod
    def from_dlpack(
        obj: object, format: None = None, *, handle: Handle | None = None
    ) -> Tensor[DType, Any, Any]:
        """Wraps another library's array without copying: anything with
        ``__dlpack__`` (PyTorch, CuPy, JAX, NumPy), with ``__cuda_array_interface__``,
        or a DLPack capsule. The shape is logical (NCHW order); the format is read
        from the strides (contiguous: NCHW, channels-last: NHWC) when not given (strides
        that fit both, as a 1x1 or depthwise filter's do: NHWC where those of its
        extent-1 dimensions are exactly the channels-last ones, as PyTorch's
        channels-last tensors have them, else NCHW), and checked against ``format``
        when given. The memory stays the producer's: it is
        kept alive while this object lives, and writes through either side are seen by
        the other.

        With ``handle``, the array must live on the handle's device
        (``DeviceMismatchError`` otherwise) and the producer orders its pending work
        before the handle's stream; without it, before the legacy default stream. A
        PyTorch CUDA tensor is read in place (no DLPack export) when PyTorch's current
        stream is the handle's or, without a handle, its default stream; work of ours
        on any stream is then ordered after PyTorch's pending work on that stream.

        Raises ``ShapeError`` for strides that are neither layout (call
        ``.contiguous()`` or ``.contiguous(memory_format=torch.channels_last)``),
        misaligned data, a rank outside 3..8 or a bad extent;
        ``UnsupportedConfigurationError`` for an element type cuDNN does not take;
        ``DeviceMismatchError`` for memory on another device; ``BufferError`` for a
        consumed capsule or an unknown DLPack major version.
        """
    @overload
    @staticmethod
    def from_dlpack(
        obj: object, format: type[_NewFMT], *, handle: Handle | None = None
    ) -> Tensor[DType, _NewFMT, Any]: ...
    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType:
        """Exports the memory as a DLPack capsule, without copying: versioned (DLPack
        1.0, read-only flag included) when ``max_version`` is at least (1, 0), else a
        0.x capsule. Logical shape, strides of the physical layout (NHWC is
        channels-last). On a GPU the consumer's ``stream`` (None: the legacy default
        stream; -1: none) is made to wait, with an event, for our pending work.
        ``BufferError`` for ``copy=True``, another ``dl_device``, vectorised formats,
        and read-only memory asked for as DLPack 0.x."""
    def __array__(
        self, dtype: npt.DTypeLike | None = None, copy: bool | None = None
    ) -> npt.NDArray[Any]:
        """A copy in logical order (``np.asarray``) of an operand on the CPU device;
        ``dtype`` converts it. A GPU operand raises ``TypeError`` (use
        ``to_numpy()``); ``copy=False`` raises ``ValueError`` (a copy is needed)."""
    def __dlpack_device__(self) -> tuple[int, int]:
        """``(2, ordinal)`` (kDLCUDA) on a GPU, ``(1, 0)`` (kDLCPU) on the CPU device."""
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA Array Interface, version 3, of a GPU tensor: logical shape, strides
        in bytes of the physical layout (None when NCHW), ``typestr`` NumPy's
        (bf16: ``'<u2'``, its raw bits), ``data`` (address, read-only), and ``stream``:
        the stream of our last use of the memory, or None. CPU tensors have none
        (``AttributeError``, so ``hasattr`` is False)."""
    def __class_getitem__(cls, item: Any) -> types.GenericAlias:
        """``Tensor[F32, NCHW, Rank4]`` at run time, as for any generic class."""
    @overload
    def to_numpy(self: Tensor[F32, Any, Any]) -> npt.NDArray[np.float32]:
        """Copies to a NumPy array in logical NCHW(D) order (C-contiguous). bf16
        gives ml_dtypes.bfloat16 when ml_dtypes is installed, float32 otherwise."""
    @overload
    def to_numpy(self: Tensor[F64, Any, Any]) -> npt.NDArray[np.float64]: ...
    @overload
    def to_numpy(self: Tensor[F16, Any, Any]) -> npt.NDArray[np.float16]: ...
    @overload
    def to_numpy(self: Tensor[I8, Any, Any]) -> npt.NDArray[np.int8]: ...
    @overload
    def to_numpy(self: Tensor[U8, Any, Any]) -> npt.NDArray[np.uint8]: ...
    @overload
    def to_numpy(self: Tensor[I32, Any, Any]) -> npt.NDArray[np.int32]: ...
    @overload
    def to_numpy(self: Tensor[I64, Any, Any]) -> npt.NDArray[np.int64]: ...
    @overload
    def to_numpy(self) -> npt.NDArray[Any]: ...

@final
class Filter(Generic[_DT, _FMT, _RANK]):
    """A filter (weights) on a handle's device: data type ``_DT``, memory format
    ``_FMT``, rank ``_RANK``.

    Its shape is logical, (K, C/groups, R, S) or (K, C/groups, T, R, S), whatever the
    memory format. Same API as ``Tensor``; the type parameters are invariant.
    """

    # Arrays whose dtype is (partly) Any match the first overloads (bounded by
    # X[Never], which no concrete array meets): the dtype is then known only at run
    # time, not guessed. NumPy's typing makes float16 arrays float32 (and float64)
    # arrays, int8 arrays int32 (and int64) arrays: narrowest first, hence the ignores.
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_AnyScalar],
        format: type[_NewFMT] | None = None,
    ) -> Filter[DType, _NewFMT, Any]:
        """Copies a NumPy array (logical K, C/groups, R, S order) to the device.

        The data type is the array's: statically known for float16, float32, float64,
        int8, int32, int64 and uint8 arrays, ``DType`` otherwise (bfloat16, or a dtype
        known only at run time). The rank is known only at run time.
        """
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_AnyFloating],
        format: type[_NewFMT] | None = None,
    ) -> Filter[DType, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_AnySigned],
        format: type[_NewFMT] | None = None,
    ) -> Filter[DType, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_AnyUnsigned],
        format: type[_NewFMT] | None = None,
    ) -> Filter[DType, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_Float16],
        format: type[_NewFMT] | None = None,
    ) -> Filter[F16, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_Float32],
        format: type[_NewFMT] | None = None,
    ) -> Filter[F32, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(
        handle: Handle,
        array: npt.NDArray[_Float64],
        format: type[_NewFMT] | None = None,
    ) -> Filter[F64, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_Int8],
        format: type[_NewFMT] | None = None,
    ) -> Filter[I8, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(  # type: ignore[overload-overlap]
        handle: Handle,
        array: npt.NDArray[_Int32],
        format: type[_NewFMT] | None = None,
    ) -> Filter[I32, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(
        handle: Handle,
        array: npt.NDArray[_Int64],
        format: type[_NewFMT] | None = None,
    ) -> Filter[I64, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(
        handle: Handle,
        array: npt.NDArray[_UInt8],
        format: type[_NewFMT] | None = None,
    ) -> Filter[U8, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def from_numpy(
        handle: Handle,
        array: npt.ArrayLike,
        format: type[_NewFMT] | None = None,
    ) -> Filter[DType, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def zeros(
        handle: Handle,
        shape: _Shape4,
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Filter[_NewDT, _NewFMT, Rank4]:
        """A zero-filled filter of logical ``shape`` (dtype f32 and format NCHW by
        default). The rank is inferred from a shape tuple of length 4 or 5."""
    @overload
    @staticmethod
    def zeros(
        handle: Handle,
        shape: _Shape5,
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Filter[_NewDT, _NewFMT, Rank5]: ...
    @overload
    @staticmethod
    def zeros(
        handle: Handle,
        shape: Sequence[int],
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Filter[_NewDT, _NewFMT, Any]: ...
    @overload
    @staticmethod
    def empty(
        handle: Handle,
        shape: _Shape4,
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Filter[_NewDT, _NewFMT, Rank4]:
        """An uninitialised filter (zero-filled on the CPU device); as ``zeros``."""
    @overload
    @staticmethod
    def empty(
        handle: Handle,
        shape: _Shape5,
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Filter[_NewDT, _NewFMT, Rank5]: ...
    @overload
    @staticmethod
    def empty(
        handle: Handle,
        shape: Sequence[int],
        dtype: _NewDT | None = None,
        format: type[_NewFMT] | None = None,
    ) -> Filter[_NewDT, _NewFMT, Any]: ...
    @property
    def shape(self) -> tuple[int, ...]:
        """Logical shape: (K, C/groups, R, S) or (K, C/groups, T, R, S)."""
    @property
    def ndim(self) -> int:
        """Number of dimensions."""
    @property
    def dtype(self) -> _DT:
        """Data-type marker (the module-level instance, e.g. ``cudnn_rs.f32``)."""
    @property
    def format(self) -> type[_FMT]:
        """Memory-format marker class (``filter.format is cudnn_rs.NHWC``)."""
    @property
    def device(self) -> str:
        """ "cpu" or "cuda:N"."""
    @property
    def nbytes(self) -> int:
        """Bytes of storage."""
    @overload
    @staticmethod
    def from_dlpack(
        obj: object, format: None = None, *, handle: Handle | None = None
    ) -> Filter[DType, Any, Any]:
        """Wraps another library's array without copying: anything with
        ``__dlpack__`` (PyTorch, CuPy, JAX, NumPy), with ``__cuda_array_interface__``,
        or a DLPack capsule. The shape is logical (NCHW order); the format is read
        from the strides (contiguous: NCHW, channels-last: NHWC) when not given (strides
        that fit both, as a 1x1 or depthwise filter's do: NHWC where those of its
        extent-1 dimensions are exactly the channels-last ones, as PyTorch's
        channels-last tensors have them, else NCHW), and checked against ``format``
        when given. The memory stays the producer's: it is
        kept alive while this object lives, and writes through either side are seen by
        the other.

        With ``handle``, the array must live on the handle's device
        (``DeviceMismatchError`` otherwise) and the producer orders its pending work
        before the handle's stream; without it, before the legacy default stream. A
        PyTorch CUDA tensor is read in place (no DLPack export) when PyTorch's current
        stream is the handle's or, without a handle, its default stream; work of ours
        on any stream is then ordered after PyTorch's pending work on that stream.

        Raises ``ShapeError`` for strides that are neither layout (call
        ``.contiguous()`` or ``.contiguous(memory_format=torch.channels_last)``),
        misaligned data, a rank outside 3..8 or a bad extent;
        ``UnsupportedConfigurationError`` for an element type cuDNN does not take;
        ``DeviceMismatchError`` for memory on another device; ``BufferError`` for a
        consumed capsule or an unknown DLPack major version.
        """
    @overload
    @staticmethod
    def from_dlpack(
        obj: object, format: type[_NewFMT], *, handle: Handle | None = None
    ) -> Filter[DType, _NewFMT, Any]: ...
    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType:
        """Exports the memory as a DLPack capsule, without copying: versioned (DLPack
        1.0, read-only flag included) when ``max_version`` is at least (1, 0), else a
        0.x capsule. Logical shape, strides of the physical layout (NHWC is
        channels-last). On a GPU the consumer's ``stream`` (None: the legacy default
        stream; -1: none) is made to wait, with an event, for our pending work.
        ``BufferError`` for ``copy=True``, another ``dl_device``, vectorised formats,
        and read-only memory asked for as DLPack 0.x."""
    def __array__(
        self, dtype: npt.DTypeLike | None = None, copy: bool | None = None
    ) -> npt.NDArray[Any]:
        """A copy in logical order (``np.asarray``) of an operand on the CPU device;
        ``dtype`` converts it. A GPU operand raises ``TypeError`` (use
        ``to_numpy()``); ``copy=False`` raises ``ValueError`` (a copy is needed)."""
    def __dlpack_device__(self) -> tuple[int, int]:
        """``(2, ordinal)`` (kDLCUDA) on a GPU, ``(1, 0)`` (kDLCPU) on the CPU device."""
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA Array Interface, version 3, of a GPU tensor: logical shape, strides
        in bytes of the physical layout (None when NCHW), ``typestr`` NumPy's
        (bf16: ``'<u2'``, its raw bits), ``data`` (address, read-only), and ``stream``:
        the stream of our last use of the memory, or None. CPU tensors have none
        (``AttributeError``, so ``hasattr`` is False)."""
    def __class_getitem__(cls, item: Any) -> types.GenericAlias:
        """``Filter[F32, NCHW, Rank4]`` at run time, as for any generic class."""
    @overload
    def to_numpy(self: Filter[F32, Any, Any]) -> npt.NDArray[np.float32]:
        """Copies to a NumPy array in logical order (C-contiguous). bf16 gives
        ml_dtypes.bfloat16 when ml_dtypes is installed, float32 otherwise."""
    @overload
    def to_numpy(self: Filter[F64, Any, Any]) -> npt.NDArray[np.float64]: ...
    @overload
    def to_numpy(self: Filter[F16, Any, Any]) -> npt.NDArray[np.float16]: ...
    @overload
    def to_numpy(self: Filter[I8, Any, Any]) -> npt.NDArray[np.int8]: ...
    @overload
    def to_numpy(self: Filter[U8, Any, Any]) -> npt.NDArray[np.uint8]: ...
    @overload
    def to_numpy(self: Filter[I32, Any, Any]) -> npt.NDArray[np.int32]: ...
    @overload
    def to_numpy(self: Filter[I64, Any, Any]) -> npt.NDArray[np.int64]: ...
    @overload
    def to_numpy(self) -> npt.NDArray[Any]: ...

# ---------------------------------------------------------------- convolution

@final
class ConvolutionDescriptor(Generic[_CT, _SP]):
    """Padding, stride, dilation, groups, mode, math type and compute type ``_CT`` of a
    convolution of spatial rank ``_SP`` (``Spatial2`` / ``Spatial3``). The descriptor of
    the forward pass serves its backward pass.

    The spatial rank is inferred from the length of ``padding`` (2 or 3), or of
    ``stride`` or ``dilation`` where ``padding`` is not given (it is then zero), the
    compute type from ``comp_type`` (f32 by default). The type parameters are invariant.
    At run time an int for ``padding``, ``stride`` or ``dilation`` stands for the same
    value in every dimension, the rank then coming from another argument's tuple.
    """
    def __class_getitem__(cls, item: Any) -> types.GenericAlias:
        """``ConvolutionDescriptor[F32, Spatial2]`` at run time."""

    @overload
    def __new__(
        cls,
        padding: tuple[int, int],
        stride: tuple[int, int] | None = None,
        dilation: tuple[int, int] | None = None,
        groups: int = 1,
        mode: ConvolutionMode = ...,
        math_type: MathType = ...,
        comp_type: _NewDT | None = None,
    ) -> ConvolutionDescriptor[_NewDT, Spatial2]:
        """``stride`` and ``dilation`` default to ones; ``mode`` to
        ``CrossCorrelation``, ``math_type`` to ``Default``, ``comp_type`` to f32."""
    @overload
    def __new__(
        cls,
        padding: None = None,
        *,
        stride: tuple[int, int],
        dilation: tuple[int, int] | None = None,
        groups: int = 1,
        mode: ConvolutionMode = ...,
        math_type: MathType = ...,
        comp_type: _NewDT | None = None,
    ) -> ConvolutionDescriptor[_NewDT, Spatial2]:
        """No padding (zeros), the rank from ``stride``."""
    @overload
    def __new__(
        cls,
        padding: None = None,
        stride: None = None,
        *,
        dilation: tuple[int, int],
        groups: int = 1,
        mode: ConvolutionMode = ...,
        math_type: MathType = ...,
        comp_type: _NewDT | None = None,
    ) -> ConvolutionDescriptor[_NewDT, Spatial2]:
        """No padding (zeros), unit stride, the rank from ``dilation``."""
    @overload
    def __new__(
        cls,
        padding: tuple[int, int, int],
        stride: tuple[int, int, int] | None = None,
        dilation: tuple[int, int, int] | None = None,
        groups: int = 1,
        mode: ConvolutionMode = ...,
        math_type: MathType = ...,
        comp_type: _NewDT | None = None,
    ) -> ConvolutionDescriptor[_NewDT, Spatial3]: ...
    @overload
    def __new__(
        cls,
        padding: None = None,
        *,
        stride: tuple[int, int, int],
        dilation: tuple[int, int, int] | None = None,
        groups: int = 1,
        mode: ConvolutionMode = ...,
        math_type: MathType = ...,
        comp_type: _NewDT | None = None,
    ) -> ConvolutionDescriptor[_NewDT, Spatial3]: ...
    @overload
    def __new__(
        cls,
        padding: None = None,
        stride: None = None,
        *,
        dilation: tuple[int, int, int],
        groups: int = 1,
        mode: ConvolutionMode = ...,
        math_type: MathType = ...,
        comp_type: _NewDT | None = None,
    ) -> ConvolutionDescriptor[_NewDT, Spatial3]: ...
    @overload
    def __new__(
        cls,
        padding: Sequence[int],
        stride: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        groups: int = 1,
        mode: ConvolutionMode = ...,
        math_type: MathType = ...,
        comp_type: _NewDT | None = None,
    ) -> ConvolutionDescriptor[_NewDT, Any]: ...
    @overload
    def __new__(
        cls,
        padding: None = None,
        *,
        stride: Sequence[int],
        dilation: Sequence[int] | None = None,
        groups: int = 1,
        mode: ConvolutionMode = ...,
        math_type: MathType = ...,
        comp_type: _NewDT | None = None,
    ) -> ConvolutionDescriptor[_NewDT, Any]: ...
    @overload
    def __new__(
        cls,
        padding: None = None,
        stride: None = None,
        *,
        dilation: Sequence[int],
        groups: int = 1,
        mode: ConvolutionMode = ...,
        math_type: MathType = ...,
        comp_type: _NewDT | None = None,
    ) -> ConvolutionDescriptor[_NewDT, Any]: ...
    @property
    def padding(self) -> tuple[int, ...]:
        """Zero padding per spatial dimension."""
    @property
    def stride(self) -> tuple[int, ...]:
        """Stride per spatial dimension."""
    @property
    def dilation(self) -> tuple[int, ...]:
        """Dilation per spatial dimension."""
    @property
    def groups(self) -> int:
        """Number of groups (channels of dx and of dy each split into ``groups``)."""
    @property
    def mode(self) -> ConvolutionMode:
        """Convolution or cross-correlation."""
    @property
    def math_type(self) -> MathType:
        """Whether tensor cores may be used."""
    @property
    def comp_type(self) -> _CT:
        """The compute type (a data-type marker)."""
    @property
    def spatial_dims(self) -> int:
        """2 or 3."""
    def set_math_type(self, math_type: MathType) -> None:
        """Changes the math type (tensor cores allowed or not) for later calls."""

# ---------------------------------------------------------------- handle

@final
class Workspace:
    """Device bytes for a backward-data call (``Workspace(handle, size)``)."""

    def __new__(cls, handle: Handle, size: int | None = None) -> Workspace:
        """``size`` bytes on the handle's device (None or 0: no memory)."""
    @property
    def nbytes(self) -> int:
        """Size in bytes."""
    @property
    def device(self) -> str:
        """ "cpu" or "cuda:N"."""

@final
class Handle:
    """A cuDNN handle on a CUDA device (``Handle()``, ``Handle(device=1)``), or the CPU
    reference device (``Handle(device="cpu")``), with one API."""

    def __new__(
        cls,
        device: int | str | None = None,
        stream: object | None = None,
        *,
        benchmark: bool = False,
    ) -> Handle:
        """``device``: an ordinal, "cuda", "cuda:N" or "cpu" (CUDA device 0 when
        None). ``stream``: a raw ``CUstream`` (int) or an object with
        ``__cuda_stream__`` (or a ``cuda_stream`` / ``ptr`` attribute, as PyTorch's
        and CuPy's streams); None for the default stream. ``benchmark``: see
        ``Handle.benchmark``.

        Raises CudaError or LibraryNotFoundError when the GPU cannot be used.
        """
    @property
    def device(self) -> str:
        """ "cuda:N" or "cpu"."""
    @property
    def is_cpu(self) -> bool:
        """Whether this is the CPU reference device."""
    @property
    def benchmark(self) -> bool:
        """Whether the default choice (``DefaultAlgo()``, the one-call API) measures,
        as PyTorch's ``torch.backends.cudnn.benchmark``: when True, the first call (or
        workspace query) of a problem times the engines cuDNN's instant heuristic
        (mode A) and fallback list rank on scratch buffers (the first ten that build,
        in rank order, as PyTorch's benchmark mode times them, but for further
        settings of an engine three times slower than the fastest; beyond those, cuDNN's
        generic engine 0 never, and each other one's first-ranked knob setting in rank order until one is four times slower
        than the fastest, then the ranked settings of those within 10% of the fastest,
        an engine's until one is three times slower; engines only the fallback list
        names only while fewer than six ranked ones were timed), within
        ``benchmark_budget_ms``,
        and later calls run the fastest. A problem is measured once per device and
        process, as in PyTorch: what one handle measured, every handle on the device
        runs (``clear_algorithm_cache()`` forgets it). False (the default): chosen
        without timing, the same in every process."""
    @benchmark.setter
    def benchmark(self, on: bool) -> None: ...
    @property
    def benchmark_budget_ms(self) -> float:
        """How long measuring one problem may take (default 2000 ms)."""
    @benchmark_budget_ms.setter
    def benchmark_budget_ms(self, ms: float) -> None: ...
    def get_convolution_backward_data_default(
        self,
        w: Filter[Any, Any, Any],
        dy: Tensor[Any, Any, Any],
        dx: Tensor[Any, Any, Any],
        conv: ConvolutionDescriptor[Any, Any],
    ) -> Engine:
        """The engine ``DefaultAlgo()`` (and the one-call API) runs for these operands,
        chosen now if this handle has not yet (measuring, with ``benchmark=True``); the
        CPU device answers with a stand-in (engine 0). For the depthwise operands the
        default runs with the kernel of our own (see the README), the engine cuDNN would
        run them with (as with ``CUDNN_RS_DIRECT=0``)."""
    def last_find_report(self) -> tuple[int, int]:
        """``(timed, left_out)`` of the last engine measurement on this handle."""
    def background_builds(self) -> tuple[int, int]:
        """``(building, taken_in)``: how many problems the measured default
        (``benchmark=True``) runs with the depthwise kernel of our own while a background
        thread builds cuDNN's run-time-compiled engines for them, and how many such
        builds later calls took in (and then measured). ``(0, 0)`` on the CPU device."""
    def wait_background_builds(self, timeout_ms: float = 10000.0) -> bool:
        """Waits (without the GIL) until the background thread is done with every
        problem of this handle it was handed, at most ``timeout_ms`` milliseconds;
        whether it is. Each problem's next call then takes in what it built. Raises
        ``ValueError`` for a negative or non-finite timeout."""
    def last_find_timing(self) -> dict[str, float]:
        """Where the last engine measurement's wall time went, in milliseconds:
        ``total``, ``heuristics`` (asking cuDNN what to time), ``builds`` (finalizing
        plans), ``trials`` (running them) and ``refine`` (timing the closest again).
        The parts need not add up to ``total``. All zero before any measurement and on
        the CPU device."""
    def version(self) -> tuple[int, int, int]:
        """cuDNN version (major, minor, patch); on the CPU device, the version the
        crate binds (``BOUND_CUDNN_VERSION``)."""
    def cuda_version(self) -> int:
        """CUDA runtime version cuDNN was built with (0 on the CPU device)."""
    def synchronize(self) -> None:
        """Waits for all work issued through this handle."""
    def set_stream(self, stream: object) -> None:
        """Issues later work to ``stream``: a raw ``CUstream`` (int) or an object with
        ``__cuda_stream__`` (e.g. ``torch.cuda.Stream``, CuPy streams). The handle keeps
        the stream's owner alive; work issued before keeps its order (the new stream
        waits, by an event, for the old one)."""
    def algorithm_cache_size(self) -> int:
        """Number of problems whose measured algorithms this handle has cached."""
    def clear_algorithm_cache(self) -> None:
        """Forgets every cached measurement: this handle's finds, and the measured
        default choices (``benchmark=True``), which every handle on the device shares,
        so that the next call of each problem measures again."""
    def save_algorithm_cache(self, path: str | os.PathLike[str]) -> None:
        """Writes the cached measurements (finds and measured default choices) to
        ``path``; the first line names the cuDNN version and GPU."""
    def load_algorithm_cache(self, path: str | os.PathLike[str]) -> int:
        """Adds the measurements saved at ``path``; returns how many problems were read.
        A malformed file adds nothing and raises ``ShapeError``; a file from another
        cuDNN version or GPU adds nothing and warns (``RuntimeWarning``)."""
    # BEGIN GENERATED OVERLOADS
    # Generated from the support table in src/convolution/support.rs by
    # `cargo run -p xtask -- stubs` (xtask/src/render.rs); do not edit by hand.
    # Per group of lines that differ only in formats: one overload generic in the
    # formats (_LayoutW/_LayoutY/_LayoutX) for the algorithms the whole group admits
    # (groups of one rank share it through a data-type variable, _DT_...); per line:
    # one overload for the algorithms only it admits; then general overloads for
    # operands typed only as DType / Format; last, the misuse overload (accepts
    # nothing; keeps mypy's report of a call with non-operands short).
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NCHW, Rank4],
        dy: Tensor[F32, NCHW, Rank4],
        dx: Tensor[F32, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic:
        """cuDNN's heuristic choice of algorithm for these operands (the CPU device
        answers with an algorithm of the table). Usable wherever an algorithm is.
        """
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NCHW, Rank4],
        dy: Tensor[F32, NCHW, Rank4],
        dx: Tensor[F32, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NHWC, Rank4],
        dy: Tensor[F32, NHWC, Rank4],
        dx: Tensor[F32, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F64, NCHW, Rank4],
        dy: Tensor[F64, NCHW, Rank4],
        dx: Tensor[F64, NCHW, Rank4],
        conv: ConvolutionDescriptor[F64, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F64, NCHW, Rank4],
        dy: Tensor[F64, NCHW, Rank4],
        dx: Tensor[F64, NHWC, Rank4],
        conv: ConvolutionDescriptor[F64, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NHWC, Rank4],
        dy: Tensor[F16, NHWC, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NHWC, Rank4],
        dy: Tensor[F16, NHWC, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NCHW, Rank4],
        dy: Tensor[BF16, NCHW, Rank4],
        dx: Tensor[BF16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NCHW, Rank4],
        dy: Tensor[BF16, NCHW, Rank4],
        dx: Tensor[BF16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NHWC, Rank4],
        dy: Tensor[BF16, NHWC, Rank4],
        dx: Tensor[BF16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NCHW, Rank5],
        dy: Tensor[F32, NCHW, Rank5],
        dx: Tensor[F32, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NCHW, Rank5],
        dy: Tensor[F32, NCHW, Rank5],
        dx: Tensor[F32, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NHWC, Rank5],
        dy: Tensor[F32, NHWC, Rank5],
        dx: Tensor[F32, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F64, NCHW, Rank5],
        dy: Tensor[F64, NCHW, Rank5],
        dx: Tensor[F64, NCHW, Rank5],
        conv: ConvolutionDescriptor[F64, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F64, NCHW, Rank5],
        dy: Tensor[F64, NCHW, Rank5],
        dx: Tensor[F64, NHWC, Rank5],
        conv: ConvolutionDescriptor[F64, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        dx: Tensor[F16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        dx: Tensor[F16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NHWC, Rank5],
        dy: Tensor[F16, NHWC, Rank5],
        dx: Tensor[F16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        dx: Tensor[F16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F16, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NHWC, Rank5],
        dy: Tensor[F16, NHWC, Rank5],
        dx: Tensor[F16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F16, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NCHW, Rank5],
        dy: Tensor[BF16, NCHW, Rank5],
        dx: Tensor[BF16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NCHW, Rank5],
        dy: Tensor[BF16, NCHW, Rank5],
        dx: Tensor[BF16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NHWC, Rank5],
        dy: Tensor[BF16, NHWC, Rank5],
        dx: Tensor[BF16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[DType, Any, Any] | Filter[Any, Format, Any],
        dy: Tensor[Any, Any, Any],
        dx: Tensor[Any, Any, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[DType, Any],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def get_convolution_backward_data_algorithm(
        self,
        w: _FilterExpected,
        dy: _TensorExpectedForDy,
        dx: _TensorExpectedForDx,
        conv: ConvolutionDescriptor[Any, Any],
        *,
        deterministic: bool = False,
    ) -> BestHeuristic: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NCHW, Rank4],
        dy: Tensor[F32, NCHW, Rank4],
        dx: Tensor[F32, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]:
        """Runs the algorithms on these operands and returns them fastest first; `dx` is
        not modified. Cached per problem on the handle: a repeat measures nothing
        (`use_cache=False` measures again).
        """
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NCHW, Rank4],
        dy: Tensor[F32, NCHW, Rank4],
        dx: Tensor[F32, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NHWC, Rank4],
        dy: Tensor[F32, NHWC, Rank4],
        dx: Tensor[F32, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F64, NCHW, Rank4],
        dy: Tensor[F64, NCHW, Rank4],
        dx: Tensor[F64, NCHW, Rank4],
        conv: ConvolutionDescriptor[F64, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F64, NCHW, Rank4],
        dy: Tensor[F64, NCHW, Rank4],
        dx: Tensor[F64, NHWC, Rank4],
        conv: ConvolutionDescriptor[F64, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NHWC, Rank4],
        dy: Tensor[F16, NHWC, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NHWC, Rank4],
        dy: Tensor[F16, NHWC, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NCHW, Rank4],
        dy: Tensor[BF16, NCHW, Rank4],
        dx: Tensor[BF16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NCHW, Rank4],
        dy: Tensor[BF16, NCHW, Rank4],
        dx: Tensor[BF16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NHWC, Rank4],
        dy: Tensor[BF16, NHWC, Rank4],
        dx: Tensor[BF16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NCHW, Rank5],
        dy: Tensor[F32, NCHW, Rank5],
        dx: Tensor[F32, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NCHW, Rank5],
        dy: Tensor[F32, NCHW, Rank5],
        dx: Tensor[F32, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F32, NHWC, Rank5],
        dy: Tensor[F32, NHWC, Rank5],
        dx: Tensor[F32, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F64, NCHW, Rank5],
        dy: Tensor[F64, NCHW, Rank5],
        dx: Tensor[F64, NCHW, Rank5],
        conv: ConvolutionDescriptor[F64, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F64, NCHW, Rank5],
        dy: Tensor[F64, NCHW, Rank5],
        dx: Tensor[F64, NHWC, Rank5],
        conv: ConvolutionDescriptor[F64, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        dx: Tensor[F16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        dx: Tensor[F16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NHWC, Rank5],
        dy: Tensor[F16, NHWC, Rank5],
        dx: Tensor[F16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        dx: Tensor[F16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F16, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[F16, NHWC, Rank5],
        dy: Tensor[F16, NHWC, Rank5],
        dx: Tensor[F16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F16, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NCHW, Rank5],
        dy: Tensor[BF16, NCHW, Rank5],
        dx: Tensor[BF16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NCHW, Rank5],
        dy: Tensor[BF16, NCHW, Rank5],
        dx: Tensor[BF16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[BF16, NHWC, Rank5],
        dy: Tensor[BF16, NHWC, Rank5],
        dx: Tensor[BF16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[DType, Any, Any] | Filter[Any, Format, Any],
        dy: Tensor[Any, Any, Any],
        dx: Tensor[Any, Any, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[DType, Any],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def find_convolution_backward_data_algorithm(
        self,
        w: _FilterExpected,
        dy: _TensorExpectedForDy,
        dx: _TensorExpectedForDx,
        conv: ConvolutionDescriptor[Any, Any],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        use_cache: bool = True,
    ) -> list[AlgoPerf]: ...
    @overload
    def get_convolution_backward_data_engine(
        self,
        w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank4],
        dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank4],
        dx: Tensor[_DT_F32_F16_BF16, _LayoutX, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        deterministic: bool = False,
    ) -> Engine:
        """The graph API's heuristic engine for these operands (what `BestEngine()` runs);
        the CPU device answers with a stand-in. Usable wherever an algorithm is.
        """
    @overload
    def get_convolution_backward_data_engine(
        self,
        w: Filter[_DT_F64_F16, _LayoutW, Rank4],
        dy: Tensor[_DT_F64_F16, _LayoutY, Rank4],
        dx: Tensor[_DT_F64_F16, _LayoutX, Rank4],
        conv: ConvolutionDescriptor[_DT_F64_F16, Spatial2],
        *,
        deterministic: bool = False,
    ) -> Engine: ...
    @overload
    def get_convolution_backward_data_engine(
        self,
        w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank5],
        dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank5],
        dx: Tensor[_DT_F32_F16_BF16, _LayoutX, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        deterministic: bool = False,
    ) -> Engine: ...
    @overload
    def get_convolution_backward_data_engine(
        self,
        w: Filter[_DT_F64_F16, _LayoutW, Rank5],
        dy: Tensor[_DT_F64_F16, _LayoutY, Rank5],
        dx: Tensor[_DT_F64_F16, _LayoutX, Rank5],
        conv: ConvolutionDescriptor[_DT_F64_F16, Spatial3],
        *,
        deterministic: bool = False,
    ) -> Engine: ...
    @overload
    def get_convolution_backward_data_engine(
        self,
        w: Filter[DType, Any, Any] | Filter[Any, Format, Any],
        dy: Tensor[Any, Any, Any],
        dx: Tensor[Any, Any, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        deterministic: bool = False,
    ) -> Engine: ...
    @overload
    def get_convolution_backward_data_engine(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        deterministic: bool = False,
    ) -> Engine: ...
    @overload
    def get_convolution_backward_data_engine(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        deterministic: bool = False,
    ) -> Engine: ...
    @overload
    def get_convolution_backward_data_engine(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[DType, Any],
        *,
        deterministic: bool = False,
    ) -> Engine: ...
    @overload
    def get_convolution_backward_data_engine(
        self,
        w: _FilterExpected,
        dy: _TensorExpectedForDy,
        dx: _TensorExpectedForDx,
        conv: ConvolutionDescriptor[Any, Any],
        *,
        deterministic: bool = False,
    ) -> Engine: ...
    @overload
    def find_convolution_backward_data_engine(
        self,
        w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank4],
        dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank4],
        dx: Tensor[_DT_F32_F16_BF16, _LayoutX, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        limit: int | None = None,
        budget_ms: float | None = 10000.0,
        use_cache: bool = True,
    ) -> list[Engine]:
        """Autotunes the graph API: times up to `limit` of its engines (the heuristic's
        first, then every other) on these operands and returns them fastest first; `dx`
        is not modified. Cached per problem on the handle like
        `find_convolution_backward_data_algorithm`.
        """
    @overload
    def find_convolution_backward_data_engine(
        self,
        w: Filter[_DT_F64_F16, _LayoutW, Rank4],
        dy: Tensor[_DT_F64_F16, _LayoutY, Rank4],
        dx: Tensor[_DT_F64_F16, _LayoutX, Rank4],
        conv: ConvolutionDescriptor[_DT_F64_F16, Spatial2],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        limit: int | None = None,
        budget_ms: float | None = 10000.0,
        use_cache: bool = True,
    ) -> list[Engine]: ...
    @overload
    def find_convolution_backward_data_engine(
        self,
        w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank5],
        dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank5],
        dx: Tensor[_DT_F32_F16_BF16, _LayoutX, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        limit: int | None = None,
        budget_ms: float | None = 10000.0,
        use_cache: bool = True,
    ) -> list[Engine]: ...
    @overload
    def find_convolution_backward_data_engine(
        self,
        w: Filter[_DT_F64_F16, _LayoutW, Rank5],
        dy: Tensor[_DT_F64_F16, _LayoutY, Rank5],
        dx: Tensor[_DT_F64_F16, _LayoutX, Rank5],
        conv: ConvolutionDescriptor[_DT_F64_F16, Spatial3],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        limit: int | None = None,
        budget_ms: float | None = 10000.0,
        use_cache: bool = True,
    ) -> list[Engine]: ...
    @overload
    def find_convolution_backward_data_engine(
        self,
        w: Filter[DType, Any, Any] | Filter[Any, Format, Any],
        dy: Tensor[Any, Any, Any],
        dx: Tensor[Any, Any, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        limit: int | None = None,
        budget_ms: float | None = 10000.0,
        use_cache: bool = True,
    ) -> list[Engine]: ...
    @overload
    def find_convolution_backward_data_engine(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        limit: int | None = None,
        budget_ms: float | None = 10000.0,
        use_cache: bool = True,
    ) -> list[Engine]: ...
    @overload
    def find_convolution_backward_data_engine(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        limit: int | None = None,
        budget_ms: float | None = 10000.0,
        use_cache: bool = True,
    ) -> list[Engine]: ...
    @overload
    def find_convolution_backward_data_engine(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[DType, Any],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        limit: int | None = None,
        budget_ms: float | None = 10000.0,
        use_cache: bool = True,
    ) -> list[Engine]: ...
    @overload
    def find_convolution_backward_data_engine(
        self,
        w: _FilterExpected,
        dy: _TensorExpectedForDy,
        dx: _TensorExpectedForDx,
        conv: ConvolutionDescriptor[Any, Any],
        *,
        max_workspace_bytes: int | None = None,
        deterministic: bool = False,
        limit: int | None = None,
        budget_ms: float | None = 10000.0,
        use_cache: bool = True,
    ) -> list[Engine]: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank4],
        dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank4],
        dx: Tensor[_DT_F32_F16_BF16, _LayoutX, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: Engine | BestEngine | DefaultAlgo,
    ) -> int | None:
        """Workspace bytes `algo` needs for these operands; None when it needs none
        (always None on the CPU device).
        """
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[_DT_F64_F16, _LayoutW, Rank4],
        dy: Tensor[_DT_F64_F16, _LayoutY, Rank4],
        dx: Tensor[_DT_F64_F16, _LayoutX, Rank4],
        conv: ConvolutionDescriptor[_DT_F64_F16, Spatial2],
        algo: Engine | BestEngine | DefaultAlgo,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F32, NCHW, Rank4],
        dy: Tensor[F32, NCHW, Rank4],
        dx: Tensor[F32, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0
        | DataAlgo1
        | Fft
        | FftTiling
        | WinogradNonFused
        | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F32, NCHW, Rank4],
        dy: Tensor[F32, NCHW, Rank4],
        dx: Tensor[F32, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F32, NHWC, Rank4],
        dy: Tensor[F32, NHWC, Rank4],
        dx: Tensor[F32, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F64, NCHW, Rank4],
        dy: Tensor[F64, NCHW, Rank4],
        dx: Tensor[F64, NCHW, Rank4],
        conv: ConvolutionDescriptor[F64, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F64, NCHW, Rank4],
        dy: Tensor[F64, NCHW, Rank4],
        dx: Tensor[F64, NHWC, Rank4],
        conv: ConvolutionDescriptor[F64, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0
        | DataAlgo1
        | Fft
        | FftTiling
        | WinogradNonFused
        | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F16, NHWC, Rank4],
        dy: Tensor[F16, NHWC, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F16, NHWC, Rank4],
        dy: Tensor[F16, NHWC, Rank4],
        dx: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[BF16, NCHW, Rank4],
        dy: Tensor[BF16, NCHW, Rank4],
        dx: Tensor[BF16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[BF16, NCHW, Rank4],
        dy: Tensor[BF16, NCHW, Rank4],
        dx: Tensor[BF16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[BF16, NHWC, Rank4],
        dy: Tensor[BF16, NHWC, Rank4],
        dx: Tensor[BF16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank5],
        dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank5],
        dx: Tensor[_DT_F32_F16_BF16, _LayoutX, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: Engine | BestEngine | DefaultAlgo,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[_DT_F64_F16, _LayoutW, Rank5],
        dy: Tensor[_DT_F64_F16, _LayoutY, Rank5],
        dx: Tensor[_DT_F64_F16, _LayoutX, Rank5],
        conv: ConvolutionDescriptor[_DT_F64_F16, Spatial3],
        algo: Engine | BestEngine | DefaultAlgo,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F32, NCHW, Rank5],
        dy: Tensor[F32, NCHW, Rank5],
        dx: Tensor[F32, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F32, NCHW, Rank5],
        dy: Tensor[F32, NCHW, Rank5],
        dx: Tensor[F32, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F32, NHWC, Rank5],
        dy: Tensor[F32, NHWC, Rank5],
        dx: Tensor[F32, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo1 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F64, NCHW, Rank5],
        dy: Tensor[F64, NCHW, Rank5],
        dx: Tensor[F64, NCHW, Rank5],
        conv: ConvolutionDescriptor[F64, Spatial3],
        algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F64, NCHW, Rank5],
        dy: Tensor[F64, NCHW, Rank5],
        dx: Tensor[F64, NHWC, Rank5],
        conv: ConvolutionDescriptor[F64, Spatial3],
        algo: DataAlgo0 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        dx: Tensor[F16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        dx: Tensor[F16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F16, NHWC, Rank5],
        dy: Tensor[F16, NHWC, Rank5],
        dx: Tensor[F16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo1 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        dx: Tensor[F16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F16, Spatial3],
        algo: DataAlgo1 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[F16, NHWC, Rank5],
        dy: Tensor[F16, NHWC, Rank5],
        dx: Tensor[F16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F16, Spatial3],
        algo: DataAlgo1 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[BF16, NCHW, Rank5],
        dy: Tensor[BF16, NCHW, Rank5],
        dx: Tensor[BF16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[BF16, NCHW, Rank5],
        dy: Tensor[BF16, NCHW, Rank5],
        dx: Tensor[BF16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[BF16, NHWC, Rank5],
        dy: Tensor[BF16, NHWC, Rank5],
        dx: Tensor[BF16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo1 | BestHeuristic,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[DType, Any, Any] | Filter[Any, Format, Any],
        dy: Tensor[Any, Any, Any],
        dx: Tensor[Any, Any, Any],
        conv: ConvolutionDescriptor[Any, Any],
        algo: Algorithm,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        algo: Algorithm,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        algo: Algorithm,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[DType, Any],
        algo: Algorithm,
    ) -> int | None: ...
    @overload
    def get_convolution_backward_data_workspace_size(
        self,
        w: _FilterExpected,
        dy: _TensorExpectedForDy,
        dx: _TensorExpectedForDx,
        conv: ConvolutionDescriptor[Any, Any],
        algo: Algorithm,
    ) -> int | None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank4],
        dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: Engine | BestEngine | DefaultAlgo,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[_DT_F32_F16_BF16, _LayoutX, Rank4],
    ) -> None:
        """`dx = alpha * dgrad(w, dy) + beta * dx` with algorithm `algo`; `workspace`
        holds at least `get_convolution_backward_data_workspace_size` bytes (None when
        the algorithm needs none).
        """
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[_DT_F64_F16, _LayoutW, Rank4],
        dy: Tensor[_DT_F64_F16, _LayoutY, Rank4],
        conv: ConvolutionDescriptor[_DT_F64_F16, Spatial2],
        algo: Engine | BestEngine | DefaultAlgo,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[_DT_F64_F16, _LayoutX, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F32, NCHW, Rank4],
        dy: Tensor[F32, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0
        | DataAlgo1
        | Fft
        | FftTiling
        | WinogradNonFused
        | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F32, NCHW, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F32, NCHW, Rank4],
        dy: Tensor[F32, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F32, NHWC, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F32, NHWC, Rank4],
        dy: Tensor[F32, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F32, NHWC, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F64, NCHW, Rank4],
        dy: Tensor[F64, NCHW, Rank4],
        conv: ConvolutionDescriptor[F64, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F64, NCHW, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F64, NCHW, Rank4],
        dy: Tensor[F64, NCHW, Rank4],
        conv: ConvolutionDescriptor[F64, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F64, NHWC, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0
        | DataAlgo1
        | Fft
        | FftTiling
        | WinogradNonFused
        | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F16, NCHW, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F16, NHWC, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F16, NHWC, Rank4],
        dy: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F16, NHWC, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F16, NCHW, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F16, NCHW, Rank4],
        dy: Tensor[F16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F16, NHWC, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F16, NHWC, Rank4],
        dy: Tensor[F16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F16, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F16, NHWC, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[BF16, NCHW, Rank4],
        dy: Tensor[BF16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[BF16, NCHW, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[BF16, NCHW, Rank4],
        dy: Tensor[BF16, NCHW, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[BF16, NHWC, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[BF16, NHWC, Rank4],
        dy: Tensor[BF16, NHWC, Rank4],
        conv: ConvolutionDescriptor[F32, Spatial2],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[BF16, NHWC, Rank4],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank5],
        dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: Engine | BestEngine | DefaultAlgo,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[_DT_F32_F16_BF16, _LayoutX, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[_DT_F64_F16, _LayoutW, Rank5],
        dy: Tensor[_DT_F64_F16, _LayoutY, Rank5],
        conv: ConvolutionDescriptor[_DT_F64_F16, Spatial3],
        algo: Engine | BestEngine | DefaultAlgo,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[_DT_F64_F16, _LayoutX, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F32, NCHW, Rank5],
        dy: Tensor[F32, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F32, NCHW, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F32, NCHW, Rank5],
        dy: Tensor[F32, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F32, NHWC, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F32, NHWC, Rank5],
        dy: Tensor[F32, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo1 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F32, NHWC, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F64, NCHW, Rank5],
        dy: Tensor[F64, NCHW, Rank5],
        conv: ConvolutionDescriptor[F64, Spatial3],
        algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F64, NCHW, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F64, NCHW, Rank5],
        dy: Tensor[F64, NCHW, Rank5],
        conv: ConvolutionDescriptor[F64, Spatial3],
        algo: DataAlgo0 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F64, NHWC, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F16, NCHW, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F16, NHWC, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F16, NHWC, Rank5],
        dy: Tensor[F16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo1 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F16, NHWC, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F16, NCHW, Rank5],
        dy: Tensor[F16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F16, Spatial3],
        algo: DataAlgo1 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F16, NCHW, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[F16, NHWC, Rank5],
        dy: Tensor[F16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F16, Spatial3],
        algo: DataAlgo1 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[F16, NHWC, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[BF16, NCHW, Rank5],
        dy: Tensor[BF16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[BF16, NCHW, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[BF16, NCHW, Rank5],
        dy: Tensor[BF16, NCHW, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo0 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[BF16, NHWC, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[BF16, NHWC, Rank5],
        dy: Tensor[BF16, NHWC, Rank5],
        conv: ConvolutionDescriptor[F32, Spatial3],
        algo: DataAlgo1 | BestHeuristic,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[BF16, NHWC, Rank5],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[DType, Any, Any] | Filter[Any, Format, Any],
        dy: Tensor[Any, Any, Any],
        conv: ConvolutionDescriptor[Any, Any],
        algo: Algorithm,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[Any, Any, Any],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[_DT, Any, Any],
        dy: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        algo: Algorithm,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[Any, Any],
        algo: Algorithm,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: Filter[_DT, Any, Any],
        dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
        conv: ConvolutionDescriptor[DType, Any],
        algo: Algorithm,
        workspace: Workspace | None,
        beta: float,
        dx: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
    ) -> None: ...
    @overload
    def convolution_backward_data(
        self,
        alpha: float,
        w: _FilterExpected,
        dy: _TensorExpectedForDy,
        conv: ConvolutionDescriptor[Any, Any],
        algo: Algorithm,
        workspace: Workspace | None,
        beta: float,
        dx: _TensorExpectedForDx,
    ) -> None: ...

@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank4],
    dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank4],
    conv: ConvolutionDescriptor[F32, Spatial2],
    x_shape: Sequence[int],
    algo: Engine | BestEngine | DefaultAlgo | None = None,
    *,
    alpha: float = 1.0,
    dtype: _DT_F32_F16_BF16 | None = None,
    format: type[_LayoutY] | None = None,
) -> Tensor[_DT_F32_F16_BF16, _LayoutY, Rank4]:
    """One call for people who just want `dx`: allocates it with shape `x_shape`
    (`dtype` and `format` default to dy's), runs `algo` or, when it is None, the
    library's default choice (`DefaultAlgo`: untimed, the same in every process for
    a problem, cuDNN and GPU; measured once per problem on a handle with
    `benchmark=True`), reuses the handle's workspace, returns `dx`.
    """

@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank4],
    dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank4],
    conv: ConvolutionDescriptor[F32, Spatial2],
    x_shape: Sequence[int],
    algo: Engine | BestEngine | DefaultAlgo | None = None,
    *,
    alpha: float = 1.0,
    dtype: _DT_F32_F16_BF16 | None = None,
    format: type[_LayoutX],
) -> Tensor[_DT_F32_F16_BF16, _LayoutX, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[_DT_F64_F16, _LayoutW, Rank4],
    dy: Tensor[_DT_F64_F16, _LayoutY, Rank4],
    conv: ConvolutionDescriptor[_DT_F64_F16, Spatial2],
    x_shape: Sequence[int],
    algo: Engine | BestEngine | DefaultAlgo | None = None,
    *,
    alpha: float = 1.0,
    dtype: _DT_F64_F16 | None = None,
    format: type[_LayoutY] | None = None,
) -> Tensor[_DT_F64_F16, _LayoutY, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[_DT_F64_F16, _LayoutW, Rank4],
    dy: Tensor[_DT_F64_F16, _LayoutY, Rank4],
    conv: ConvolutionDescriptor[_DT_F64_F16, Spatial2],
    x_shape: Sequence[int],
    algo: Engine | BestEngine | DefaultAlgo | None = None,
    *,
    alpha: float = 1.0,
    dtype: _DT_F64_F16 | None = None,
    format: type[_LayoutX],
) -> Tensor[_DT_F64_F16, _LayoutX, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F32, NCHW, Rank4],
    dy: Tensor[F32, NCHW, Rank4],
    conv: ConvolutionDescriptor[F32, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | Fft | FftTiling | WinogradNonFused | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F32 | None = None,
    format: type[NCHW] | None = None,
) -> Tensor[F32, NCHW, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F32, NCHW, Rank4],
    dy: Tensor[F32, NCHW, Rank4],
    conv: ConvolutionDescriptor[F32, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F32 | None = None,
    format: type[NHWC],
) -> Tensor[F32, NHWC, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F32, NHWC, Rank4],
    dy: Tensor[F32, NHWC, Rank4],
    conv: ConvolutionDescriptor[F32, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F32 | None = None,
    format: type[NHWC] | None = None,
) -> Tensor[F32, NHWC, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F64, NCHW, Rank4],
    dy: Tensor[F64, NCHW, Rank4],
    conv: ConvolutionDescriptor[F64, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F64 | None = None,
    format: type[NCHW] | None = None,
) -> Tensor[F64, NCHW, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F64, NCHW, Rank4],
    dy: Tensor[F64, NCHW, Rank4],
    conv: ConvolutionDescriptor[F64, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F64 | None = None,
    format: type[NHWC],
) -> Tensor[F64, NHWC, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F16, NCHW, Rank4],
    dy: Tensor[F16, NCHW, Rank4],
    conv: ConvolutionDescriptor[F32, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | Fft | FftTiling | WinogradNonFused | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F16 | None = None,
    format: type[NCHW] | None = None,
) -> Tensor[F16, NCHW, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F16, NCHW, Rank4],
    dy: Tensor[F16, NCHW, Rank4],
    conv: ConvolutionDescriptor[F32, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F16 | None = None,
    format: type[NHWC],
) -> Tensor[F16, NHWC, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F16, NHWC, Rank4],
    dy: Tensor[F16, NHWC, Rank4],
    conv: ConvolutionDescriptor[F32, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F16 | None = None,
    format: type[NHWC] | None = None,
) -> Tensor[F16, NHWC, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F16, NCHW, Rank4],
    dy: Tensor[F16, NCHW, Rank4],
    conv: ConvolutionDescriptor[F16, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F16 | None = None,
    format: type[NCHW] | None = None,
) -> Tensor[F16, NCHW, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F16, NCHW, Rank4],
    dy: Tensor[F16, NCHW, Rank4],
    conv: ConvolutionDescriptor[F16, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F16 | None = None,
    format: type[NHWC],
) -> Tensor[F16, NHWC, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F16, NHWC, Rank4],
    dy: Tensor[F16, NHWC, Rank4],
    conv: ConvolutionDescriptor[F16, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F16 | None = None,
    format: type[NHWC] | None = None,
) -> Tensor[F16, NHWC, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[BF16, NCHW, Rank4],
    dy: Tensor[BF16, NCHW, Rank4],
    conv: ConvolutionDescriptor[F32, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: BF16 | None = None,
    format: type[NCHW] | None = None,
) -> Tensor[BF16, NCHW, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[BF16, NCHW, Rank4],
    dy: Tensor[BF16, NCHW, Rank4],
    conv: ConvolutionDescriptor[F32, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | WinogradNonFused | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: BF16 | None = None,
    format: type[NHWC],
) -> Tensor[BF16, NHWC, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[BF16, NHWC, Rank4],
    dy: Tensor[BF16, NHWC, Rank4],
    conv: ConvolutionDescriptor[F32, Spatial2],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: BF16 | None = None,
    format: type[NHWC] | None = None,
) -> Tensor[BF16, NHWC, Rank4]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank5],
    dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank5],
    conv: ConvolutionDescriptor[F32, Spatial3],
    x_shape: Sequence[int],
    algo: Engine | BestEngine | DefaultAlgo | None = None,
    *,
    alpha: float = 1.0,
    dtype: _DT_F32_F16_BF16 | None = None,
    format: type[_LayoutY] | None = None,
) -> Tensor[_DT_F32_F16_BF16, _LayoutY, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[_DT_F32_F16_BF16, _LayoutW, Rank5],
    dy: Tensor[_DT_F32_F16_BF16, _LayoutY, Rank5],
    conv: ConvolutionDescriptor[F32, Spatial3],
    x_shape: Sequence[int],
    algo: Engine | BestEngine | DefaultAlgo | None = None,
    *,
    alpha: float = 1.0,
    dtype: _DT_F32_F16_BF16 | None = None,
    format: type[_LayoutX],
) -> Tensor[_DT_F32_F16_BF16, _LayoutX, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[_DT_F64_F16, _LayoutW, Rank5],
    dy: Tensor[_DT_F64_F16, _LayoutY, Rank5],
    conv: ConvolutionDescriptor[_DT_F64_F16, Spatial3],
    x_shape: Sequence[int],
    algo: Engine | BestEngine | DefaultAlgo | None = None,
    *,
    alpha: float = 1.0,
    dtype: _DT_F64_F16 | None = None,
    format: type[_LayoutY] | None = None,
) -> Tensor[_DT_F64_F16, _LayoutY, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[_DT_F64_F16, _LayoutW, Rank5],
    dy: Tensor[_DT_F64_F16, _LayoutY, Rank5],
    conv: ConvolutionDescriptor[_DT_F64_F16, Spatial3],
    x_shape: Sequence[int],
    algo: Engine | BestEngine | DefaultAlgo | None = None,
    *,
    alpha: float = 1.0,
    dtype: _DT_F64_F16 | None = None,
    format: type[_LayoutX],
) -> Tensor[_DT_F64_F16, _LayoutX, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F32, NCHW, Rank5],
    dy: Tensor[F32, NCHW, Rank5],
    conv: ConvolutionDescriptor[F32, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F32 | None = None,
    format: type[NCHW] | None = None,
) -> Tensor[F32, NCHW, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F32, NCHW, Rank5],
    dy: Tensor[F32, NCHW, Rank5],
    conv: ConvolutionDescriptor[F32, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo0 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F32 | None = None,
    format: type[NHWC],
) -> Tensor[F32, NHWC, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F32, NHWC, Rank5],
    dy: Tensor[F32, NHWC, Rank5],
    conv: ConvolutionDescriptor[F32, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo1 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F32 | None = None,
    format: type[NHWC] | None = None,
) -> Tensor[F32, NHWC, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F64, NCHW, Rank5],
    dy: Tensor[F64, NCHW, Rank5],
    conv: ConvolutionDescriptor[F64, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F64 | None = None,
    format: type[NCHW] | None = None,
) -> Tensor[F64, NCHW, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F64, NCHW, Rank5],
    dy: Tensor[F64, NCHW, Rank5],
    conv: ConvolutionDescriptor[F64, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo0 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F64 | None = None,
    format: type[NHWC],
) -> Tensor[F64, NHWC, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F16, NCHW, Rank5],
    dy: Tensor[F16, NCHW, Rank5],
    conv: ConvolutionDescriptor[F32, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | FftTiling | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F16 | None = None,
    format: type[NCHW] | None = None,
) -> Tensor[F16, NCHW, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F16, NCHW, Rank5],
    dy: Tensor[F16, NCHW, Rank5],
    conv: ConvolutionDescriptor[F32, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo0 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F16 | None = None,
    format: type[NHWC],
) -> Tensor[F16, NHWC, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F16, NHWC, Rank5],
    dy: Tensor[F16, NHWC, Rank5],
    conv: ConvolutionDescriptor[F32, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo1 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F16 | None = None,
    format: type[NHWC] | None = None,
) -> Tensor[F16, NHWC, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F16, NCHW, Rank5],
    dy: Tensor[F16, NCHW, Rank5],
    conv: ConvolutionDescriptor[F16, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo1 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F16 | None = None,
    format: type[NCHW] | None = None,
) -> Tensor[F16, NCHW, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[F16, NHWC, Rank5],
    dy: Tensor[F16, NHWC, Rank5],
    conv: ConvolutionDescriptor[F16, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo1 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: F16 | None = None,
    format: type[NHWC] | None = None,
) -> Tensor[F16, NHWC, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[BF16, NCHW, Rank5],
    dy: Tensor[BF16, NCHW, Rank5],
    conv: ConvolutionDescriptor[F32, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo0 | DataAlgo1 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: BF16 | None = None,
    format: type[NCHW] | None = None,
) -> Tensor[BF16, NCHW, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[BF16, NCHW, Rank5],
    dy: Tensor[BF16, NCHW, Rank5],
    conv: ConvolutionDescriptor[F32, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo0 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: BF16 | None = None,
    format: type[NHWC],
) -> Tensor[BF16, NHWC, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[BF16, NHWC, Rank5],
    dy: Tensor[BF16, NHWC, Rank5],
    conv: ConvolutionDescriptor[F32, Spatial3],
    x_shape: Sequence[int],
    algo: DataAlgo1 | BestHeuristic,
    *,
    alpha: float = 1.0,
    dtype: BF16 | None = None,
    format: type[NHWC] | None = None,
) -> Tensor[BF16, NHWC, Rank5]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[DType, Any, Any] | Filter[Any, Format, Any],
    dy: Tensor[Any, Any, Any],
    conv: ConvolutionDescriptor[Any, Any],
    x_shape: Sequence[int],
    algo: Algorithm | None = None,
    *,
    alpha: float = 1.0,
    dtype: DType | None = None,
    format: type[Format] | None = None,
) -> Tensor[DType, Format, Any]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[_DT, Any, Any],
    dy: Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
    conv: ConvolutionDescriptor[Any, Any],
    x_shape: Sequence[int],
    algo: Algorithm | None = None,
    *,
    alpha: float = 1.0,
    dtype: DType | None = None,
    format: type[Format] | None = None,
) -> Tensor[DType, Format, Any]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: Filter[_DT, Any, Any],
    dy: Tensor[_DT, Any, Any] | Tensor[DType, Any, Any] | Tensor[Any, Format, Any],
    conv: ConvolutionDescriptor[DType, Any],
    x_shape: Sequence[int],
    algo: Algorithm | None = None,
    *,
    alpha: float = 1.0,
    dtype: DType | None = None,
    format: type[Format] | None = None,
) -> Tensor[DType, Format, Any]: ...
@overload
def convolution_backward_data(
    handle: Handle,
    w: _FilterExpected,
    dy: _TensorExpectedForDy,
    conv: ConvolutionDescriptor[Any, Any],
    x_shape: Sequence[int],
    algo: Algorithm | None = None,
    *,
    alpha: float = 1.0,
    dtype: DType | None = None,
    format: type[Format] | None = None,
) -> Tensor[DType, Format, Any]: ...

# END GENERATED OVERLOADS

# ---------------------------------------------------------------- module functions

def supported_configurations() -> list[
    tuple[str, str, str, str, str, str, str, str, int, int]
]:
    """All rows of the support table, ``BestHeuristic`` rows included: (algorithm,
    filter dtype, filter format, dy dtype, dy format, compute dtype, dx dtype, dx
    format, tensor rank, spatial rank), names as in the markers ("DataAlgo0", "f32",
    "NCHW")."""

def cuda_available() -> bool:
    """Whether a CUDA driver and at least one device are usable. Never raises."""

def device_count() -> int:
    """Number of CUDA devices (0 without a driver). Never raises."""

def release_cached_memory(device: int | None = None) -> int:
    """Hands the device memory the library keeps for its next allocations (freed
    ``dx`` of the one-call API, workspaces, tensors) back to the system, on ``device``
    or, where None, every device; waits for the device's queued work first. Returns
    how many bytes it handed back (0 where the library allocated nothing). Raises
    ``ValueError`` for a negative device."""

def wait_background_builds(timeout_ms: float = 10000.0) -> bool:
    """Waits (without the GIL) until the background thread that builds cuDNN's
    run-time-compiled engines for the measured tier has built every layer handed to it
    so far, by any handle (those of ``conv_input_grad(benchmark=True)`` included), at
    most ``timeout_ms`` milliseconds; whether it has. Each layer's next call then takes
    in what was built. Raises ``ValueError`` for a negative or non-finite timeout."""

def _add_cudnn_search_dir(path: str | os.PathLike[str]) -> None:
    """Registers a directory to search for cuDNN (the package passes the pip
    wheels')."""

def _cudnn_origin() -> str | None:
    """Where cuDNN was loaded from, or None when it is not loaded (yet)."""

def _pointer_device(address: int) -> int:
    """The CUDA device that owns device memory at ``address``, as the driver says."""

def _driver_info() -> dict[str, Any]:
    """The CUDA driver: ``loaded`` (library name or None), ``version``
    (``cuDriverGetVersion``, or None), ``tried`` ([(name, why it did not load)]) and
    ``error`` (why no driver loaded, or None). Each platform name is tried once."""

def _cudnn_info() -> dict[str, Any]:
    """cuDNN, loaded if it is not yet: ``origin``, ``version`` (major, minor, patch)
    and ``error`` (every place searched, when it did not load)."""

def _call_counts() -> dict[str, int]:
    """How the library issued its GPU work since the process started: ``replayed``
    (calls launched as CUDA graphs captured earlier), ``captured``, ``direct`` (calls the
    replay cache ran directly), ``variant_packs`` (graph-API variant packs made),
    ``pool_allocations``, ``release_waits`` (releases of foreign GPU memory that waited
    for the GPU), ``torch_imports`` (PyTorch tensors read in place), ``dlpack_imports``
    and ``plan_builds`` (graph-API execution plans built). For diagnostics; the names may
    change."""

def _gpus() -> list[tuple[int, str, int]]:
    """(ordinal, name, total bytes) of each CUDA device; empty without a driver."""

def _convolution_backward_data_into(
    handle: Handle,
    w: Filter[Any, Any, Any],
    dy: Tensor[Any, Any, Any],
    conv: ConvolutionDescriptor[Any, Any],
    dx: Tensor[Any, Any, Any],
    algo: Algorithm | None = None,
) -> None:
    """The one-call API writing into ``dx``: same default algorithm choice, the
    handle's cached workspace; every check runs before anything is written."""

def _torch_input_grad(
    input_shape: Any,
    weight: Any,
    grad_output: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: Any,
    handle: Handle | None = None,
    benchmark: bool = False,
) -> Any | None:
    """``conv_input_grad``'s PyTorch path in one call: the input gradient of PyTorch
    CUDA tensors as a new PyTorch tensor, on PyTorch's current stream with the default
    choice (measured with ``benchmark``; or on ``handle``, when it issues to that
    stream); None for any other operands (the general path then runs)."""

BOUND_CUDNN_VERSION: Final[tuple[int, int, int]]
"""The cuDNN version (major, minor, patch) the crate's bindings are written against."""

# ---------------------------------------------------------------- exceptions

class CudnnRsError(Exception):
    """Base class of every error raised by cudnn_rs."""

class UnsupportedConfigurationError(CudnnRsError, TypeError):
    """The (algorithm, data types, formats, ranks) combination is not in the support
    table; the message names the nearest supported rows."""

class ShapeError(CudnnRsError, ValueError):
    """Shapes or parameters that do not fit each other, the descriptor or the
    memory."""

class DeviceMismatchError(ShapeError):
    """Operands live on different devices, or not on the handle's device."""

class CudnnError(CudnnRsError, RuntimeError):
    """cuDNN returned a non-success status; ``status`` holds its name."""

    status: str
    """cuDNN's status name, e.g. "CUDNN_STATUS_NOT_SUPPORTED"; empty ("") on an
    error made without one (``CudnnError("...")`` in Python)."""

class CudaError(CudnnRsError, RuntimeError):
    """A CUDA driver error: no driver, no device, launch failure, ..."""

class DeviceMemoryError(CudaError, MemoryError):
    """Out of device memory."""

class LibraryNotFoundError(CudnnRsError, ImportError):
    """cuDNN or the CUDA driver could not be loaded; the message says where we
    looked and how to point at a library (env var CUDNN_RS_CUDNN_PATH)."""
