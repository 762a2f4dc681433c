"""The constructors infer data type, format and rank; run-time-only facts degrade."""

from __future__ import annotations

from typing import Any, assert_type

import numpy as np
import numpy.typing as npt

import cudnn_rs as cd


def tensors(h: cd.Handle, shape: tuple[int, ...]) -> None:
    t = cd.Tensor.zeros(h, (1, 2, 3, 4), dtype=cd.f16, format=cd.NHWC)
    assert_type(t, cd.Tensor[cd.F16, cd.NHWC, cd.Rank4])
    assert_type(t.dtype, cd.F16)
    assert_type(t.format, type[cd.NHWC])
    assert_type(t.to_numpy(), npt.NDArray[np.float16])
    assert_type(t.shape, tuple[int, ...])
    # dtype f32 and format NCHW when omitted or None, as at run time
    assert_type(cd.Tensor.zeros(h, (1, 2, 3, 4)), cd.Tensor[cd.F32, cd.NCHW, cd.Rank4])
    e = cd.Tensor.empty(h, (1, 2, 3, 4, 5), dtype=cd.f64, format=None)
    assert_type(e, cd.Tensor[cd.F64, cd.NCHW, cd.Rank5])
    # a shape of unknown length: rank unknown
    u = cd.Tensor.zeros(h, shape, dtype=cd.bf16, format=cd.NHWC)
    assert_type(u, cd.Tensor[cd.BF16, cd.NHWC, Any])
    assert_type(cd.Tensor.empty(h, [1, 2, 3, 4]), cd.Tensor[cd.F32, cd.NCHW, Any])


def filters(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.i8, format=cd.NCHWVectC8x4)
    assert_type(w, cd.Filter[cd.I8, cd.NCHWVectC8x4, cd.Rank4])
    assert_type(w.to_numpy(), npt.NDArray[np.int8])
    w5 = cd.Filter.empty(h, (8, 4, 3, 3, 3), format=cd.NHWC)
    assert_type(w5, cd.Filter[cd.F32, cd.NHWC, cd.Rank5])


def from_numpy(
    h: cd.Handle,
    a32: npt.NDArray[np.float32],
    a16: npt.NDArray[np.float16],
    a64: npt.NDArray[np.float64],
    i32: npt.NDArray[np.int32],
    u8: npt.NDArray[np.uint8],
    floating: npt.NDArray[np.floating[Any]],
    generic: npt.NDArray[np.generic],
    anything: npt.NDArray[Any],
    nested: list[list[list[list[float]]]],
) -> None:
    assert_type(cd.Tensor.from_numpy(h, a32), cd.Tensor[cd.F32, cd.NCHW, Any])
    f16 = cd.Tensor.from_numpy(h, a16, format=cd.NHWC)
    assert_type(f16, cd.Tensor[cd.F16, cd.NHWC, Any])
    assert_type(cd.Filter.from_numpy(h, a64), cd.Filter[cd.F64, cd.NCHW, Any])
    assert_type(cd.Filter.from_numpy(h, i32), cd.Filter[cd.I32, cd.NCHW, Any])
    assert_type(cd.Tensor.from_numpy(h, u8), cd.Tensor[cd.U8, cd.NCHW, Any])
    # arrays made in the call keep their dtype (mypy types them in each overload's
    # context: the stub must not let that context pick the dtype)
    inline = cd.Tensor.from_numpy(h, np.zeros((2, 4, 8, 8), dtype=np.float32))
    assert_type(inline, cd.Tensor[cd.F32, cd.NCHW, Any])
    half = cd.Filter.from_numpy(h, np.ones((8, 4, 3, 3), dtype=np.float16), cd.NHWC)
    assert_type(half, cd.Filter[cd.F16, cd.NHWC, Any])
    assert_type(cd.Tensor.from_numpy(h, np.zeros(4)), cd.Tensor[cd.F64, cd.NCHW, Any])
    # the dtype is known only at run time: the base class, never a false error
    unknown = cd.Tensor.from_numpy(h, generic, format=cd.NCHW)
    assert_type(unknown, cd.Tensor[cd.DType, cd.NCHW, Any])
    assert_type(unknown.dtype, cd.DType)
    # partly-Any dtypes are not guessed (mypy: Any; pyright: DType), see
    # pass_unknown_operands.py for their use in calls
    print(cd.Tensor.from_numpy(h, floating), cd.Filter.from_numpy(h, anything))
    assert_type(cd.Filter.from_numpy(h, nested), cd.Filter[cd.DType, cd.NCHW, Any])


def descriptors() -> None:
    c2 = cd.ConvolutionDescriptor(padding=(1, 1), stride=(1, 1), dilation=(1, 1))
    assert_type(c2, cd.ConvolutionDescriptor[cd.F32, cd.Spatial2])
    assert_type(c2.comp_type, cd.F32)
    c3 = cd.ConvolutionDescriptor((0, 1, 1), comp_type=cd.f64)
    assert_type(c3, cd.ConvolutionDescriptor[cd.F64, cd.Spatial3])
    half = cd.ConvolutionDescriptor(
        padding=(1, 1),
        groups=2,
        mode=cd.ConvolutionMode.Convolution,
        math_type=cd.MathType.TensorOp,
        comp_type=cd.f16,
    )
    assert_type(half, cd.ConvolutionDescriptor[cd.F16, cd.Spatial2])
    half.set_math_type(cd.MathType.Default)
    assert_type(half.mode, cd.ConvolutionMode)
    assert_type(half.padding, tuple[int, ...])
    some = cd.ConvolutionDescriptor([1, 1])
    assert_type(some, cd.ConvolutionDescriptor[cd.F32, Any])
    # No padding (zeros): the rank from stride or dilation.
    strided = cd.ConvolutionDescriptor(stride=(2, 2))
    assert_type(strided, cd.ConvolutionDescriptor[cd.F32, cd.Spatial2])
    dilated = cd.ConvolutionDescriptor(dilation=(1, 2, 2), comp_type=cd.f64)
    assert_type(dilated, cd.ConvolutionDescriptor[cd.F64, cd.Spatial3])
    strided3 = cd.ConvolutionDescriptor(stride=(1, 2, 2), dilation=(1, 1, 1))
    assert_type(strided3, cd.ConvolutionDescriptor[cd.F32, cd.Spatial3])


def dtype_and_format_from_variables(
    h: cd.Handle, d: cd.DType, f: type[cd.Format]
) -> None:
    t = cd.Tensor.zeros(h, (1, 2, 3, 4), dtype=d, format=f)
    assert_type(t, cd.Tensor[cd.DType, cd.Format, cd.Rank4])
    c = cd.ConvolutionDescriptor((1, 1), comp_type=d)
    assert_type(c, cd.ConvolutionDescriptor[cd.DType, cd.Spatial2])


def markers() -> None:
    assert_type(cd.f32.name, str)
    assert_type(cd.f16.itemsize, int)
    assert_type(cd.NHWC.name, str)
    assert_type(cd.F32() == cd.f32, bool)
    assert_type(cd.MathType.TensorOp.name, str)
    assert_type(cd.BOUND_CUDNN_VERSION, tuple[int, int, int])
    assert_type(cd.supported_configurations()[0][8], int)
    assert_type(cd.cuda_available(), bool)
    assert_type(cd.device_count(), int)


def handles() -> None:
    h = cd.Handle(device="cpu")
    assert_type(h.version(), tuple[int, int, int])
    assert_type(h.device, str)
    assert_type(h.is_cpu, bool)
    assert_type(cd.Workspace(h, None).nbytes, int)
    cd.Handle(0, stream=0).synchronize()


def errors() -> None:
    try:
        cd.Handle()
    except cd.CudnnError as e:
        assert_type(e.status, str)
    except (cd.CudaError, cd.LibraryNotFoundError) as e:
        assert_type(e, cd.CudaError | cd.LibraryNotFoundError)
    err: TypeError = cd.UnsupportedConfigurationError()
    mem: MemoryError = cd.DeviceMemoryError()
    shape: ValueError = cd.DeviceMismatchError()
    imp: ImportError = cd.LibraryNotFoundError()
    base: cd.CudnnRsError = cd.ShapeError()
    print(err, mem, shape, imp, base)
