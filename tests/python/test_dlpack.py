"""Zero-copy interop on the CPU device: DLPack with NumPy, capsules built by hand
(ctypes) to reach every refusal, lifetimes and the deleter protocol.

GPU interop (PyTorch, CuPy, JAX, streams) is in test_gpu_interop.py.
"""

from __future__ import annotations

import ctypes
import gc
import threading
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from helpers import assert_close, case_2d, nonzero_values
from numpy.typing import NDArray

import cudnn_rs as cd
from reference import conv_backward_data

# ---------------------------------------------------------------- dlpack.h in ctypes

KDL_CPU, KDL_CUDA = 1, 2
FLOAT, BFLOAT, INT, UINT, COMPLEX = 2, 4, 0, 1, 5
READ_ONLY = 1

DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint8),
        ("bits", ctypes.c_uint8),
        ("lanes", ctypes.c_uint16),
    ]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]

# Capsules keep a pointer to their name: these live as long as the module.
_NAME_LEGACY = b"dltensor"
_NAME_VERSIONED = b"dltensor_versioned"


class Managed:
    """A DLPack managed tensor over a NumPy buffer, built by hand, which counts how
    often its deleter runs. Every field can be set to something a producer should
    never send."""

    def __init__(
        self,
        array: NDArray[Any],
        *,
        device: tuple[int, int] = (KDL_CPU, 0),
        shape: tuple[int, ...] | None = None,
        strides: tuple[int, ...] | None = None,
        dtype: tuple[int, int, int] = (FLOAT, 32, 1),
        data: int | None = None,
        byte_offset: int = 0,
        versioned: bool = True,
        version: tuple[int, int] = (1, 0),
        flags: int = 0,
    ) -> None:
        self.array = array
        self.versioned = versioned
        self.deleted = 0
        shape = tuple(array.shape) if shape is None else shape
        self._shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self._strides = (
            None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        )
        self._deleter = DELETER(self._on_delete)
        tensor = DLTensor(
            data=array.ctypes.data if data is None else data,
            device=DLDevice(*device),
            ndim=len(shape),
            dtype=DLDataType(*dtype),
            shape=ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64)),
            byte_offset=byte_offset,
        )
        if self._strides is not None:
            tensor.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        self.struct: DLManagedTensor | DLManagedTensorVersioned
        if versioned:
            self.struct = DLManagedTensorVersioned(
                version=DLPackVersion(*version),
                deleter=self._deleter,
                flags=flags,
                dl_tensor=tensor,
            )
        else:
            self.struct = DLManagedTensor(dl_tensor=tensor, deleter=self._deleter)

    def _on_delete(self, pointer: int | None) -> None:
        assert pointer == ctypes.addressof(self.struct)
        self.deleted += 1

    def capsule(self) -> object:
        """A fresh capsule (no destructor: the test owns the struct)."""
        name = _NAME_VERSIONED if self.versioned else _NAME_LEGACY
        return _capsule_new(ctypes.addressof(self.struct), name, None)


class Producer:
    """An array-library object speaking the DLPack 1.x Python protocol."""

    def __init__(self, managed: Managed, device: tuple[int, int] | None = None) -> None:
        self.managed = managed
        self.device = device or (
            managed.struct.dl_tensor.device.device_type,
            managed.struct.dl_tensor.device.device_id,
        )
        self.calls: list[dict[str, Any]] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> object:
        self.calls.append({"stream": stream, "max_version": max_version})
        return self.managed.capsule()


class LegacyProducer(Producer):
    """A DLPack 0.x producer: `__dlpack__(stream=None)` only."""

    def __dlpack__(self, stream: int | None = None) -> object:  # type: ignore[override]
        self.calls.append({"stream": stream})
        return self.managed.capsule()


def capsule_name(capsule: object) -> str:
    return _capsule_name(capsule).decode()


# ---------------------------------------------------------------- helpers

CASE = case_2d((2, 4, 7, 6), (6, 4, 3, 3), padding=(1, 1))


def channels_last(a: NDArray[Any]) -> NDArray[Any]:
    """The same logical array, stored NHWC (NumPy's view of torch.channels_last)."""
    perm = (0, *range(2, a.ndim), 1)
    inverse = tuple(int(i) for i in np.argsort(perm))
    return np.ascontiguousarray(a.transpose(perm)).transpose(inverse)


def address(a: NDArray[Any]) -> int:
    return int(a.__array_interface__["data"][0])


def run(
    handle: cd.Handle,
    w: cd.Filter,
    dy: cd.Tensor,
    dx: cd.Tensor,
    alpha: float = 1.0,
    beta: float = 0.0,
    comp: str = "f32",
) -> None:
    conv = CASE.descriptor(comp)
    handle.convolution_backward_data(alpha, w, dy, conv, cd.DataAlgo1(), None, beta, dx)


def operands(
    rng: np.random.Generator, dtype: type = np.float32
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    w = nonzero_values(rng, CASE.w_shape, "f32").astype(dtype)
    dy = nonzero_values(rng, CASE.dy_shape, "f32").astype(dtype)
    dx = np.full(CASE.x_shape, np.nan, dtype=dtype)
    return w, dy, dx


def expected(w: NDArray[Any], dy: NDArray[Any]) -> NDArray[np.float64]:
    return conv_backward_data(
        w.astype(np.float64), dy.astype(np.float64), CASE.x_shape, CASE.params
    )


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize(
    ("dtype", "layout"),
    [(np.float32, "NCHW"), (np.float32, "NHWC"), (np.float64, "NCHW")],
)
def test_numpy_round_trip_computes_in_place(
    cpu: cd.Handle, rng: np.random.Generator, layout: str, dtype: type
) -> None:
    w_np, dy_np, dx_np = operands(rng, dtype)
    if layout == "NHWC":
        w_np, dy_np, dx_np = (
            channels_last(w_np),
            channels_last(dy_np),
            channels_last(dx_np),
        )
    w = cd.Filter.from_dlpack(w_np, handle=cpu)
    dy = cd.Tensor.from_dlpack(dy_np)
    dx = cd.Tensor.from_dlpack(dx_np, handle=cpu)
    for t in (w, dy, dx):
        assert t.format is getattr(cd, layout)
        assert t.device == "cpu"
    assert dx.shape == CASE.x_shape and dx.dtype == (
        cd.f32 if dtype is np.float32 else cd.f64
    )
    name = "f32" if dtype is np.float32 else "f64"
    run(cpu, w, dy, dx, comp=name)
    # The result is in the producer's own array: no copy in.
    assert_close(dx_np, expected(w_np, dy_np), name, f"dx written in place ({layout})")
    # And np.from_dlpack sees the same memory: no copy out.
    back = np.from_dlpack(dx)
    assert address(back) == address(dx_np)
    assert back.strides == dx_np.strides
    np.testing.assert_array_equal(back, dx_np)
    np.testing.assert_array_equal(dx.to_numpy(), dx_np)


def test_our_tensor_exported_to_numpy_sees_later_writes(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    w_np, dy_np, _ = operands(rng)
    w = cd.Filter.from_numpy(cpu, w_np)
    dy = cd.Tensor.from_numpy(cpu, dy_np)
    dx = cd.Tensor.zeros(cpu, CASE.x_shape, format=cd.NHWC)
    view = np.from_dlpack(dx)
    assert view.shape == CASE.x_shape
    # Logical shape, physical (channels-last) strides.
    assert view.strides == channels_last(np.zeros(CASE.x_shape, np.float32)).strides
    assert not view.any()
    run(cpu, w, dy, dx)
    assert_close(view, expected(w_np, dy_np), "f32", "written after export")
    # A write through NumPy is seen by cudnn_rs.
    view[0, 0, 0, 0] = 42.0
    assert dx.to_numpy()[0, 0, 0, 0] == 42.0


def test_reimporting_our_own_export_shares_memory(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    w_np, dy_np, _ = operands(rng)
    dx = cd.Tensor.zeros(cpu, CASE.x_shape)
    again = cd.Tensor.from_dlpack(dx, handle=cpu)
    assert again.format is cd.NCHW and again.shape == dx.shape
    run(cpu, cd.Filter.from_numpy(cpu, w_np), cd.Tensor.from_numpy(cpu, dy_np), again)
    assert_close(dx.to_numpy(), expected(w_np, dy_np), "f32", "through the re-import")


def test_legacy_and_versioned_capsules(cpu: cd.Handle) -> None:
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    for capsule, used in [
        (a.__dlpack__(), "used_dltensor"),
        (a.__dlpack__(max_version=(1, 0)), "used_dltensor_versioned"),
    ]:
        t = cd.Tensor.from_dlpack(capsule, handle=cpu)
        assert capsule_name(capsule) == used
        np.testing.assert_array_equal(t.to_numpy(), a)
        with pytest.raises(BufferError, match="consumed"):
            cd.Tensor.from_dlpack(capsule)
    legacy = cd.Tensor.from_numpy(cpu, a).__dlpack__()
    versioned = cd.Tensor.from_numpy(cpu, a).__dlpack__(max_version=(1, 0))
    assert capsule_name(legacy) == "dltensor"
    assert capsule_name(versioned) == "dltensor_versioned"
    np.testing.assert_array_equal(np.from_dlpack(cd.Tensor.from_dlpack(legacy)), a)


def test_producer_protocol_calls(cpu: cd.Handle) -> None:
    a = np.ones((1, 2, 3, 3), np.float32)
    modern = Producer(Managed(a))
    cd.Tensor.from_dlpack(modern, handle=cpu)
    assert modern.calls == [{"stream": None, "max_version": (1, 0)}]
    old = LegacyProducer(Managed(a, versioned=False))
    t = cd.Tensor.from_dlpack(old)
    assert old.calls == [{"stream": None}]
    np.testing.assert_array_equal(t.to_numpy(), a)


def test_dlpack_device_and_no_cuda_array_interface_on_cpu(cpu: cd.Handle) -> None:
    t = cd.Tensor.zeros(cpu, (1, 2, 3, 3))
    assert t.__dlpack_device__() == (KDL_CPU, 0)
    assert not hasattr(t, "__cuda_array_interface__")
    with pytest.raises(AttributeError):
        _ = t.__cuda_array_interface__


def test_bf16_and_f16_through_dlpack(cpu: cd.Handle, rng: np.random.Generator) -> None:
    w_np, dy_np, _ = operands(rng)
    bf16 = ml_dtypes.bfloat16
    w = cd.Filter.from_numpy(cpu, w_np.astype(bf16))
    dy = cd.Tensor.from_numpy(cpu, dy_np.astype(bf16))
    # A bf16 capsule (kDLBfloat, 16 bits) round-trips through DLPack as bf16.
    dx_src = cd.Tensor.zeros(cpu, CASE.x_shape, dtype=cd.bf16)
    dx = cd.Tensor.from_dlpack(dx_src.__dlpack__(max_version=(1, 0)))
    assert dx.dtype == cd.bf16
    conv = cd.ConvolutionDescriptor(padding=(1, 1), comp_type=cd.f32)
    cpu.convolution_backward_data(1.0, w, dy, conv, cd.DataAlgo1(), None, 0.0, dx)
    exact = expected(w_np.astype(bf16), dy_np.astype(bf16))
    assert_close(dx_src.to_numpy(), exact, "bf16", "bf16 through DLPack")
    # A hand-built kDLBfloat capsule over ml_dtypes memory.
    raw = dy_np.astype(bf16)
    m = Managed(raw, dtype=(BFLOAT, 16, 1))
    t = cd.Tensor.from_dlpack(m.capsule())
    assert t.dtype == cd.bf16
    np.testing.assert_array_equal(t.to_numpy().view(np.uint16), raw.view(np.uint16))
    # f16 from NumPy.
    h = dy_np.astype(np.float16)
    t16 = cd.Tensor.from_dlpack(h)
    assert t16.dtype == cd.f16
    assert address(np.from_dlpack(t16)) == address(h)


# ---------------------------------------------------------------- refusals


def test_non_dense_strides_are_refused(cpu: cd.Handle) -> None:
    a = np.zeros((2, 3, 8, 5), np.float32)[:, :, ::2]
    with pytest.raises(cd.ShapeError, match=r"\.contiguous\(\)"):
        cd.Tensor.from_dlpack(a, handle=cpu)
    # Neither NCHW nor NHWC: e.g. N and C swapped.
    swapped = np.zeros((3, 2, 4, 5), np.float32).transpose(1, 0, 2, 3)
    with pytest.raises(cd.ShapeError, match="channels_last"):
        cd.Tensor.from_dlpack(swapped)


def test_strides_must_match_a_requested_format(cpu: cd.Handle) -> None:
    nchw = np.zeros((2, 3, 4, 5), np.float32)
    with pytest.raises(cd.ShapeError, match="channels_last"):
        cd.Tensor.from_dlpack(nchw, format=cd.NHWC)
    with pytest.raises(cd.ShapeError, match="strides"):
        cd.Tensor.from_dlpack(channels_last(nchw), format=cd.NCHW)
    with pytest.raises(cd.ShapeError, match="vectors"):
        cd.Tensor.from_dlpack(nchw.astype(np.int8), format=cd.NCHWVectC8x4)
    # Given and matching: accepted.
    assert cd.Tensor.from_dlpack(channels_last(nchw), format=cd.NHWC).format is cd.NHWC
    assert cd.Filter.from_dlpack(nchw, format=cd.NCHW).format is cd.NCHW


def test_extent_one_dims_take_any_stride(cpu: cd.Handle) -> None:
    one_channel = np.zeros((2, 1, 4, 5), np.float32)
    assert cd.Tensor.from_dlpack(channels_last(one_channel)).format is cd.NCHW
    assert cd.Tensor.from_dlpack(one_channel, format=cd.NHWC).format is cd.NHWC


def nhwc_view(shape: tuple[int, ...], rng: np.random.Generator) -> NDArray[Any]:
    """A logical NCHW array stored NHWC, every stride (those of extent-1 dimensions
    too) the channels-last one, as PyTorch's channels-last tensors have them."""
    n, c, *spatial = shape
    stored = nonzero_values(rng, (n, *spatial, c), "f32")
    return stored.transpose(0, 3, 1, 2)


def test_channels_last_strides_on_extent_one_dims_say_nhwc(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    # A 1x1 filter and a 1x1 plane: dense in both layouts; their extent-1 dimensions'
    # strides are exactly channels-last ones, so they import as NHWC.
    for shape in ((8, 4, 1, 1), (2, 6, 1, 1)):
        view = nhwc_view(shape, rng)
        assert view.strides[1] == view.itemsize
        assert cd.Filter.from_dlpack(view).format is cd.NHWC
        assert cd.Tensor.from_dlpack(view).format is cd.NHWC
        assert cd.Tensor.from_dlpack(view.copy()).format is cd.NCHW
    # One element per image: both layouts' strides at once, NCHW.
    assert cd.Filter.from_dlpack(np.zeros((8, 1, 1, 1), np.float32)).format is cd.NCHW


def test_a_channels_last_1x1_layer_runs_the_contracts_explicit_sequence(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    # Imported without formats, a channels-last 1x1 layer is NHWC throughout (the
    # filter's extent-1 strides say so), a configuration the legacy algorithms run: the
    # contract's heuristic, workspace and call, not a refusal of mixed layouts.
    w = nhwc_view((8, 4, 1, 1), rng)
    dy = nhwc_view((2, 8, 5, 6), rng)
    dx_host = np.full((2, 5, 6, 4), np.nan, np.float32).transpose(0, 3, 1, 2)
    wt, dyt, dxt = (
        cd.Filter.from_dlpack(w),
        cd.Tensor.from_dlpack(dy),
        cd.Tensor.from_dlpack(dx_host),
    )
    assert (wt.format, dyt.format, dxt.format) == (cd.NHWC, cd.NHWC, cd.NHWC)
    conv = cd.ConvolutionDescriptor(padding=(0, 0))
    best = cpu.get_convolution_backward_data_algorithm(wt, dyt, dxt, conv)
    size = cpu.get_convolution_backward_data_workspace_size(wt, dyt, dxt, conv, best)
    cpu.convolution_backward_data(
        1.0, wt, dyt, conv, best, cd.Workspace(cpu, size), 0.0, dxt
    )
    case = case_2d((2, 4, 5, 6), (8, 4, 1, 1))
    expected = conv_backward_data(w, dy, case.x_shape, case.params)
    assert_close(dx_host, expected, "f32", "channels-last 1x1, legacy heuristic")


@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 4, 5, 6, 7, 8, 9, 2)])
def test_wrong_rank_is_refused(cpu: cd.Handle, shape: tuple[int, ...]) -> None:
    with pytest.raises(cd.ShapeError, match="3 to 8 dimensions"):
        cd.Tensor.from_dlpack(np.zeros(shape, np.float32), handle=cpu)


@pytest.mark.parametrize("dtype", [np.int16, np.uint16, np.complex64, np.bool_])
def test_unsupported_dtype_is_refused(cpu: cd.Handle, dtype: type) -> None:
    with pytest.raises(cd.UnsupportedConfigurationError, match="DLPack tensor of"):
        cd.Tensor.from_dlpack(np.zeros((1, 2, 3, 3), dtype), handle=cpu)


def test_vector_lanes_are_refused() -> None:
    m = Managed(np.zeros((1, 2, 3, 3), np.float32), dtype=(FLOAT, 32, 2))
    with pytest.raises(cd.UnsupportedConfigurationError, match="lanes"):
        cd.Tensor.from_dlpack(m.capsule())
    assert m.deleted == 1  # consumed, refused, deleted


def test_read_only_memory_is_refused_as_dx(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    w_np, dy_np, dx_np = operands(rng)
    for a in (w_np, dy_np, dx_np):
        a.flags.writeable = False
    w = cd.Filter.from_dlpack(w_np)
    dy = cd.Tensor.from_dlpack(dy_np)
    dx = cd.Tensor.from_dlpack(dx_np)
    before = dx_np.copy()
    with pytest.raises(cd.ShapeError, match="read-only"):
        run(cpu, w, dy, dx)
    np.testing.assert_array_equal(dx_np, before)
    # Read-only inputs are fine.
    out = np.zeros(CASE.x_shape, np.float32)
    run(cpu, w, dy, cd.Tensor.from_dlpack(out))
    assert_close(out, expected(w_np, dy_np), "f32", "read-only w and dy")
    # Export keeps the flag (DLPack 1.x), and refuses 0.x, which cannot carry it.
    assert not np.from_dlpack(dx).flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        dx.__dlpack__()
    # The DLPack 1.x flag itself, on a hand-built capsule.
    m = Managed(np.zeros(CASE.x_shape, np.float32), flags=READ_ONLY)
    with pytest.raises(cd.ShapeError, match="read-only"):
        run(cpu, w, dy, cd.Tensor.from_dlpack(m.capsule()))


def test_misaligned_data_is_refused(cpu: cd.Handle) -> None:
    n = 2 * 3 * 4 * 5
    buf = np.zeros(n * 4 + 1, np.uint8)
    shifted = buf[1:].view(np.float32).reshape(2, 3, 4, 5)
    assert not shifted.flags.aligned
    with pytest.raises(cd.ShapeError, match="aligned"):
        cd.Tensor.from_dlpack(shifted, handle=cpu)
    # The same through byte_offset.
    m = Managed(np.zeros((2, 3, 4, 5), np.float32), byte_offset=2)
    with pytest.raises(cd.ShapeError, match="aligned"):
        cd.Tensor.from_dlpack(m.capsule())
    assert m.deleted == 1


def test_aligned_byte_offset_is_honoured(cpu: cd.Handle) -> None:
    a = np.arange(2 * 1 * 3 * 3 + 4, dtype=np.float32)
    m = Managed(a, shape=(2, 1, 3, 3), byte_offset=16)
    t = cd.Tensor.from_dlpack(m.capsule(), handle=cpu)
    np.testing.assert_array_equal(t.to_numpy().ravel(), a[4:])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"data": 0}, "null data pointer"),
        ({"shape": (2, 0, 3, 3)}, "positive"),
        ({"shape": (2, -1, 3, 3)}, "positive"),
        ({"shape": (2, 3)}, "3 to 8 dimensions"),
        ({"byte_offset": 2**64 - 8}, "byte_offset"),
        ({"strides": (1, 2, 3, 4)}, "neither contiguous"),
    ],
)
def test_malformed_capsules_are_refused_and_deleted(
    kwargs: dict[str, Any], match: str
) -> None:
    m = Managed(np.zeros((2, 3, 3, 3), np.float32), **kwargs)
    with pytest.raises(cd.ShapeError, match=match):
        cd.Tensor.from_dlpack(m.capsule())
    assert m.deleted == 1


def test_unknown_major_version_is_left_to_its_producer() -> None:
    m = Managed(np.zeros((1, 2, 3, 3), np.float32), version=(2, 0))
    capsule = m.capsule()
    with pytest.raises(BufferError, match=r"DLPack 2\.0"):
        cd.Tensor.from_dlpack(capsule)
    assert capsule_name(capsule) == "dltensor_versioned"  # not consumed
    assert m.deleted == 0


def test_gpu_memory_on_a_cpu_handle_is_a_device_mismatch(cpu: cd.Handle) -> None:
    a = np.zeros((1, 2, 3, 3), np.float32)
    producer = Producer(Managed(a, device=(KDL_CUDA, 0)))
    with pytest.raises(cd.DeviceMismatchError, match="cuda:0"):
        cd.Tensor.from_dlpack(producer, handle=cpu)
    assert producer.calls == []  # refused before the producer did anything
    # A bare capsule is checked after it is consumed, and then deleted.
    m = Managed(a, device=(KDL_CUDA, 0))
    with pytest.raises(cd.DeviceMismatchError):
        cd.Tensor.from_dlpack(m.capsule(), handle=cpu)
    assert m.deleted == 1
    # Other device types are refused whatever the handle.
    metal = Managed(a, device=(8, 0))
    with pytest.raises(cd.DeviceMismatchError, match="device type 8"):
        cd.Tensor.from_dlpack(metal.capsule())


def test_fake_gpu_memory_without_a_handle_is_refused() -> None:
    """Host memory claiming to be kDLCUDA: no driver here (CudaError), or on a GPU
    machine the driver does not know the address (ShapeError)."""
    m = Managed(np.zeros((1, 2, 3, 3), np.float32), device=(KDL_CUDA, 0))
    producer = Producer(m)
    with pytest.raises((cd.CudaError, cd.ShapeError)):
        cd.Tensor.from_dlpack(producer)
    assert producer.calls == [{"stream": 1, "max_version": (1, 0)}]
    assert m.deleted == 1


def test_cuda_array_interface_on_a_cpu_handle_is_a_device_mismatch(
    cpu: cd.Handle,
) -> None:
    class Cai:
        __cuda_array_interface__ = {  # noqa: RUF012
            "shape": (1, 2, 3, 3),
            "typestr": "<f4",
            "data": (0x1000, False),
            "version": 3,
        }

    with pytest.raises(cd.DeviceMismatchError, match="cpu"):
        cd.Tensor.from_dlpack(Cai(), handle=cpu)


def test_not_an_array_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="__dlpack__"):
        cd.Tensor.from_dlpack(object())
    with pytest.raises(TypeError):
        cd.Tensor.from_dlpack(np.zeros((1, 2, 3, 3)), format=3)


def test_export_refusals(cpu: cd.Handle) -> None:
    t = cd.Tensor.zeros(cpu, (1, 2, 3, 3))
    with pytest.raises(BufferError, match="copy"):
        t.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="without copying"):
        t.__dlpack__(dl_device=(KDL_CUDA, 0))
    assert capsule_name(t.__dlpack__(dl_device=(KDL_CPU, 0), copy=False)) == "dltensor"
    vect = cd.Tensor.zeros(cpu, (1, 4, 2, 2), dtype=cd.i8, format=cd.NCHWVectC8x4)
    with pytest.raises(BufferError, match="vectors"):
        vect.__dlpack__()


def test_output_sharing_memory_with_an_input_is_refused(
    cpu: cd.Handle, rng: np.random.Generator
) -> None:
    w_np, dy_np, _ = operands(rng)
    w = cd.Filter.from_dlpack(w_np)
    # dy and dx the same memory (one array imported twice).
    same = np.zeros(CASE.x_shape, np.float32)
    conv = cd.ConvolutionDescriptor(padding=(1, 1))
    square_w = cd.Filter.from_numpy(cpu, nonzero_values(rng, (4, 4, 3, 3), "f32"))
    with pytest.raises(cd.ShapeError, match="overlap"):
        cpu.convolution_backward_data(
            1.0,
            square_w,
            cd.Tensor.from_dlpack(same),
            conv,
            cd.DataAlgo1(),
            None,
            0.0,
            cd.Tensor.from_dlpack(same),
        )
    # dx overlapping w's memory (our own tensor exported and imported back).
    big = np.zeros(int(np.prod(CASE.x_shape)) + 8, np.float32)
    dx_view = big[:-8].reshape(CASE.x_shape)
    w_view = big[8 : 8 + int(np.prod(CASE.w_shape))].reshape(CASE.w_shape)
    w_view[...] = w_np
    with pytest.raises(cd.ShapeError, match="overlap"):
        run(
            cpu,
            cd.Filter.from_dlpack(w_view),
            cd.Tensor.from_dlpack(dy_np),
            cd.Tensor.from_dlpack(dx_view),
        )
    # Disjoint memory is fine, and the call after a refusal works.
    out = np.zeros(CASE.x_shape, np.float32)
    run(cpu, w, cd.Tensor.from_dlpack(dy_np), cd.Tensor.from_dlpack(out))
    assert_close(out, expected(w_np, dy_np), "f32", "after refusals")


# ---------------------------------------------------------------- lifetimes


def test_producer_deleted_while_our_tensor_lives(cpu: cd.Handle) -> None:
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    keep = a.copy()
    t = cd.Tensor.from_dlpack(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(t.to_numpy(), keep)
    np.testing.assert_array_equal(np.from_dlpack(t), keep)


def test_our_tensor_deleted_while_the_consumer_lives(cpu: cd.Handle) -> None:
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    t = cd.Tensor.from_numpy(cpu, a, format=cd.NHWC)
    view = np.from_dlpack(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(view, a)
    view += 1  # still our (live) memory
    np.testing.assert_array_equal(view, a + 1)


def test_deleter_runs_once_when_the_last_holder_goes() -> None:
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    m = Managed(a)
    t = cd.Tensor.from_dlpack(m.capsule())
    assert m.deleted == 0
    # Re-exported and consumed by NumPy: the NumPy array now holds our tensor.
    view = np.from_dlpack(t)
    del t
    gc.collect()
    assert m.deleted == 0
    np.testing.assert_array_equal(view, a)
    del view
    gc.collect()
    assert m.deleted == 1


def test_never_consumed_capsule_releases_the_tensor() -> None:
    m = Managed(np.zeros((1, 2, 3, 3), np.float32))
    t = cd.Tensor.from_dlpack(m.capsule())
    legacy, versioned = t.__dlpack__(), t.__dlpack__(max_version=(1, 1))
    del t
    gc.collect()
    assert m.deleted == 0
    del legacy
    gc.collect()
    assert m.deleted == 0
    del versioned
    gc.collect()
    assert m.deleted == 1


def test_deleter_runs_from_another_thread() -> None:
    m = Managed(np.zeros((1, 2, 3, 3), np.float32))
    box = [cd.Tensor.from_dlpack(m.capsule())]

    def drop() -> None:
        box.clear()
        gc.collect()

    worker = threading.Thread(target=drop)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert m.deleted == 1
