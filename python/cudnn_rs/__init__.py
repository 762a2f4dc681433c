"""Typed cuDNN convolution backward-data, with a CPU reference device.

``Handle()`` runs on a CUDA GPU through cuDNN; ``Handle(device="cpu")`` runs the same
API on the CPU reference implementation. Importing never needs a GPU, a driver or cuDNN.
"""

from __future__ import annotations

import os as _os
from importlib import metadata as _metadata
from importlib import util as _importlib_util


def _register_pip_cudnn() -> None:
    """Give the loader the pip wheels' cuDNN folders (nvidia-cudnn-cu13/-cu12)."""
    try:
        spec = _importlib_util.find_spec("nvidia.cudnn")
    except (ImportError, ValueError):
        return
    if spec is None or not spec.submodule_search_locations:
        return
    for root in spec.submodule_search_locations:
        lib = _os.path.join(root, "lib")
        if _os.path.isdir(lib):
            _native._add_cudnn_search_dir(lib)


from . import _native  # noqa: E402
from ._arrays import conv_input_grad  # noqa: E402
from ._native import (  # noqa: E402
    BF16,
    BOUND_CUDNN_VERSION,
    F16,
    F32,
    F64,
    I8,
    I32,
    I64,
    NCHW,
    NHWC,
    U8,
    AlgoPerf,
    Algorithm,
    BestEngine,
    BestHeuristic,
    ConvolutionDescriptor,
    ConvolutionMode,
    CudaError,
    CudnnError,
    CudnnRsError,
    DataAlgo0,
    DataAlgo1,
    DefaultAlgo,
    Determinism,
    DeviceMemoryError,
    DeviceMismatchError,
    DType,
    Engine,
    Fft,
    FftTiling,
    Filter,
    Format,
    Handle,
    LibraryNotFoundError,
    MathType,
    NCHWVectC8x4,
    NCHWVectC8x32,
    ShapeError,
    Tensor,
    UnsupportedConfigurationError,
    Winograd,
    WinogradNonFused,
    Workspace,
    bf16,
    convolution_backward_data,
    cuda_available,
    device_count,
    f16,
    f32,
    f64,
    i8,
    i32,
    i64,
    release_cached_memory,
    supported_configurations,
    u8,
    wait_background_builds,
)
from ._typing import Rank, Rank4, Rank5, Spatial, Spatial2, Spatial3  # noqa: E402

_register_pip_cudnn()

try:  # Cargo.toml's version, as maturin wrote it into the installed metadata
    __version__ = _metadata.version("cudnn_rs")
except _metadata.PackageNotFoundError:  # imported from a tree that was never installed
    __version__ = "0+unknown"

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
    "Rank",
    "Rank4",
    "Rank5",
    "ShapeError",
    "Spatial",
    "Spatial2",
    "Spatial3",
    "Tensor",
    "UnsupportedConfigurationError",
    "Winograd",
    "WinogradNonFused",
    "Workspace",
    "__version__",
    "bf16",
    "conv_input_grad",
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
