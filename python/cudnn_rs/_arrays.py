"""Arrays in, arrays out: ``conv_input_grad``, the gradient of a convolution with
respect to its input from framework arrays, in PyTorch's ``conv2d_input`` argument order.

Nothing here imports an array library the caller did not use: an operand's library is
told from its type's module name (NumPy's by ``isinstance``, so that subclasses of
``ndarray`` count) and taken from ``sys.modules`` (where it must already be, since the
caller made the array).
"""

from __future__ import annotations

import operator
import sys
import threading
from collections.abc import Sequence
from math import prod as _prod
from typing import Any, TypeVar

from ._native import NCHW as _NCHW
from ._native import NHWC as _NHWC
from ._native import Algorithm as _Algorithm
from ._native import (
    ConvolutionDescriptor,
    ConvolutionMode,
    DeviceMismatchError,
    Filter,
    Handle,
    MathType,
    ShapeError,
    Tensor,
    UnsupportedConfigurationError,
    _convolution_backward_data_into,
    _pointer_device,
    _torch_input_grad,
    bf16,
    convolution_backward_data,
    f16,
    f32,
    f64,
)

__all__ = ["conv_input_grad"]

_A = TypeVar("_A")

_FLOATS = (f32, f64, f16, bf16)
_FLOAT_NAMES = "float32, float64, float16 or bfloat16"
# Handles by (device ordinal, raw stream or None for the handle's own stream): a handle
# per stream keeps concurrent callers on different streams apart, and its workspace
# and plan caches warm. Bounded: the oldest entry goes first.
_MAX_HANDLES = 32
_handles: dict[tuple[int, int | None, bool], Handle] = {}
_cpu_handle: list[Handle] = []
# ConvolutionDescriptors by (padding, stride, dilation, groups, mode, comp, math).
_MAX_DESCRIPTORS = 256
_descriptors: dict[tuple[Any, ...], ConvolutionDescriptor[Any, Any]] = {}
_lock = threading.Lock()
_CROSS_CORRELATION = ConvolutionMode.CrossCorrelation
# cuDNN's limits on a tensor, as the native descriptors check them.
_MAX_EXTENT = 2**31 - 1
_MAX_ELEMENTS = 2**31 - 1


# ---------------------------------------------------------------- libraries


def _library(obj: object) -> str:
    """ "torch", "cupy", "jax", "numpy", "cudnn_rs" or "other", from the type alone."""
    if isinstance(obj, (Tensor, Filter)):
        return "cudnn_rs"
    root = type(obj).__module__.partition(".")[0]
    if root == "torch":
        return "torch"
    if root == "cupy":
        return "cupy"
    if root in ("jax", "jaxlib"):
        return "jax"
    # Subclasses too (np.memmap, masked arrays, users' own), whatever their module.
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        return "numpy"
    return "other"


def _describe(obj: object) -> str:
    t = type(obj)
    name = (
        t.__qualname__
        if t.__module__ == "builtins"
        else f"{t.__module__}.{t.__qualname__}"
    )
    shape = getattr(obj, "shape", None)
    return f"{name} of shape {tuple(shape)}" if shape is not None else name


def _device(obj: Any, lib: str, what: str) -> tuple[str, int]:
    """("cpu", 0) or ("cuda", ordinal), read without moving or exporting anything."""
    if lib == "torch":
        dev = obj.device
        if dev.type == "cuda":
            return ("cuda", dev.index if dev.index is not None else 0)
        if dev.type == "cpu":
            return ("cpu", 0)
        raise DeviceMismatchError(
            f"{what} is a torch tensor on {dev}; conv_input_grad runs on CUDA GPUs and "
            "the CPU: move it with .to('cuda') or .cpu()"
        )
    if lib == "numpy":
        return ("cpu", 0)
    probe = getattr(obj, "__dlpack_device__", None)
    if probe is not None:
        kind, ordinal = probe()
        if kind == 1:
            return ("cpu", 0)
        if kind == 2:
            return ("cuda", int(ordinal))
        raise DeviceMismatchError(
            f"{what} lives on DLPack device type {kind}; only CPU and CUDA memory work"
        )
    if hasattr(obj, "__cuda_array_interface__"):
        return ("cuda", -1)  # the import asks the driver which device
    raise TypeError(
        f"{what} must be an array with __dlpack__ or __cuda_array_interface__ (PyTorch, "
        f"CuPy, JAX, NumPy, cudnn_rs Tensor/Filter), got {_describe(obj)}"
    )


def _shape(obj: Any) -> tuple[int, ...]:
    """An array's shape: its ``shape``, or its ``__cuda_array_interface__``'s."""
    shape = getattr(obj, "shape", None)
    if shape is None:
        shape = obj.__cuda_array_interface__["shape"]
    return tuple(int(d) for d in shape)


def _dev_name(dev: tuple[str, int]) -> str:
    return "cpu" if dev[0] == "cpu" else f"cuda:{dev[1]}"


# ---------------------------------------------------------------- handles and streams


def _cpu() -> Handle:
    if not _cpu_handle:
        with _lock:
            if not _cpu_handle:
                _cpu_handle.append(Handle(device="cpu"))
    return _cpu_handle[0]


def _cuda_handle(
    ordinal: int, stream: Any | None, raw: int | None, benchmark: bool = False
) -> Handle:
    key = (ordinal, raw, benchmark)
    h = _handles.get(key)
    if h is None:
        with _lock:
            h = _handles.get(key)
            if h is None:
                h = Handle(device=ordinal, stream=stream, benchmark=benchmark)
                if len(_handles) >= _MAX_HANDLES:
                    _handles.pop(next(iter(_handles)))
                _handles[key] = h
    return h


def _producer_stream(obj: Any, lib: str, ordinal: int) -> tuple[Any | None, int | None]:
    """The producer's current stream on the operand's device (object, raw address), so
    that our work is queued behind the caller's; (None, None) for libraries without one
    (JAX, cudnn_rs), which get the handle's own stream and event ordering."""
    if lib == "torch":
        torch = sys.modules["torch"]
        s = torch.cuda.current_stream(ordinal)
        return s, int(s.cuda_stream)
    if lib == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(ordinal):
            s = cupy.cuda.get_current_stream()
        return s, int(s.ptr)
    return None, None


def _conv_descriptor(
    spatial: int,
    stride: int | Sequence[int],
    padding: int | Sequence[int],
    dilation: int | Sequence[int],
    groups: int,
    mode: ConvolutionMode,
    comp: Any,
    math: MathType,
) -> ConvolutionDescriptor[Any, Any]:
    key = (
        spatial,
        _key(stride),
        _key(padding),
        _key(dilation),
        groups if type(groups) is int else None,
        mode,
        comp,
        math,
    )
    if None in key[1:5]:
        # Not plain ints (NumPy ints, lists, or wrong types): validated first, so that
        # no value that merely compares equal to an int (True, 1.0) finds a cached
        # descriptor, then looked up by the values.
        key = (
            spatial,
            _tuple(stride, spatial, "stride"),
            _tuple(padding, spatial, "padding"),
            _tuple(dilation, spatial, "dilation"),
            _int(groups, "groups"),
            mode,
            comp,
            math,
        )
    conv = _descriptors.get(key)
    if conv is None:
        # From the key: plain ints, or values validated above.
        _, s, p, d, g = key[:5]
        conv = ConvolutionDescriptor(
            padding=_tuple(p, spatial, "padding"),
            stride=_tuple(s, spatial, "stride"),
            dilation=_tuple(d, spatial, "dilation"),
            groups=g,
            mode=mode,
            math_type=math,
            comp_type=comp,
        )
        with _lock:
            if len(_descriptors) >= _MAX_DESCRIPTORS:
                _descriptors.pop(next(iter(_descriptors)))
            _descriptors[key] = conv
    return conv


def _key(v: int | Sequence[int]) -> Any:
    """``v`` as part of a cache key when it is a plain int or a tuple of plain ints
    (exactly ``int``: a bool or float compares equal to one); None for anything else,
    which is validated before any lookup."""
    if type(v) is int:
        return v
    if type(v) is tuple and all(type(x) is int for x in v):
        return v
    return None


def _int(v: object, name: str) -> int:
    """``v`` as an int: anything ``operator.index`` takes (Python and NumPy ints) but
    bools."""
    if type(v) is int:
        return v
    if isinstance(v, bool) or type(v).__name__ in ("bool", "bool_"):
        raise TypeError(f"{name} must be an int, got {_describe(v)}")
    try:
        return operator.index(v)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an int, got {_describe(v)}") from None


def _tuple(v: int | Sequence[int], n: int, name: str) -> tuple[int, ...]:
    if type(v) is int:
        return (v,) * n
    if not isinstance(v, (bool, str, bytes)) and hasattr(v, "__index__"):
        try:
            return (operator.index(v),) * n  # type: ignore[arg-type]
        except TypeError:  # an array, read as a sequence below
            pass
    try:
        items = tuple(_int(x, name) for x in v)  # type: ignore[union-attr]
    except TypeError:
        raise TypeError(
            f"{name} must be an int or a tuple of {n} ints, got {_describe(v)}"
        ) from None
    if len(items) == 1:
        return items * n
    if len(items) != n:
        raise ShapeError(
            f"{name} has {len(items)} values but the convolution has {n} spatial "
            f"dimensions (arrays of rank {n + 2})"
        )
    return items


# ---------------------------------------------------------------- import and output


def _import(obj: Any, cls: Any, lib: str, h: Handle, own_stream: bool) -> Any:
    """``obj`` as a cudnn_rs Filter/Tensor on ``h``'s device, without copying.

    ``own_stream``: ``h`` runs on the producer's current stream, so no ordering is
    needed (torch's export then skips its stream handshake and device check)."""
    if isinstance(obj, cls):
        return obj
    if _copied(obj, lib):
        return _copy_in(obj, cls, h, "grad_output" if cls is Tensor else "weight")
    if lib == "torch":
        # Read without the autograd graph (torch refuses to export requires_grad).
        t = obj.detach()
        if not t.is_cuda:
            return cls.from_dlpack(t.__dlpack__(), handle=h)
        if own_stream and t.is_floating_point():
            # On torch's current stream: read in place (no DLPack round trip, and
            # released without a stream synchronisation), whichever device is current.
            return cls.from_dlpack(t, handle=h)
        torch = sys.modules["torch"]
        # torch exports CUDA memory only while its device is current; with our handle
        # on torch's current stream, stream=-1 skips its (needless) handshake.
        src = t.__dlpack__ if own_stream else None
        if t.device.index == torch.cuda.current_device():
            return cls.from_dlpack(src(stream=-1) if src else t, handle=h)
        with torch.cuda.device(t.device):
            return cls.from_dlpack(src(stream=-1) if src else t, handle=h)
    return cls.from_dlpack(obj, handle=h)


def _import_as(obj: Any, lib: str, h: Handle, own_stream: bool, fmt: Any) -> Any:
    """``obj`` as a Filter of format ``fmt`` (ShapeError when its strides are not)."""
    if _copied(obj, lib):
        return _copy_in(obj, Filter, h, "weight", fmt)
    if lib == "torch":
        t = obj.detach()
        if t.is_cuda and own_stream and t.is_floating_point():
            return Filter.from_dlpack(t, fmt, handle=h)
        obj = t
    return Filter.from_dlpack(obj, fmt, handle=h)


def _torch_channels_last(nd: int) -> Any:
    """PyTorch's channels-last memory format for a rank-``nd`` tensor (4 or 5)."""
    torch = sys.modules["torch"]
    return torch.channels_last if nd == 4 else torch.channels_last_3d


def _channels_last_copy(xp: Any, arr: Any) -> Any:
    """A dense channels-last copy of a NumPy (``xp`` numpy) or CuPy array, its logical
    axes as they were."""
    nd = arr.ndim
    phys = xp.ascontiguousarray(arr.transpose(0, *range(2, nd), 1))
    return phys.transpose(0, nd - 1, *range(1, nd - 1))


def _empty_like_layout(
    lib: str, like: Any, shape: tuple[int, ...], channels_last: bool
) -> Any:
    """An uninitialised array of ``like``'s library, dtype and device, logical
    ``shape``, channels-last in memory when asked."""
    if lib == "torch":
        torch = sys.modules["torch"]
        fmt = torch.contiguous_format
        if channels_last:
            fmt = _torch_channels_last(len(shape))
        return torch.empty(
            shape, dtype=like.dtype, device=like.device, memory_format=fmt
        )
    mod = sys.modules["cupy" if lib == "cupy" else "numpy"]
    if not channels_last:
        phys = shape
    else:
        phys = (shape[0], *shape[2:], shape[1])
    if lib == "cupy":
        with like.device:
            arr = mod.empty(phys, dtype=like.dtype)
    else:
        arr = mod.empty(phys, dtype=like.dtype)
    if channels_last:
        nd = len(shape)
        arr = arr.transpose(0, nd - 1, *range(1, nd - 1))
    return arr


def _check_out(
    out: Any, lib: str, grad_output: Any, shape: tuple[int, ...], dy: Any
) -> None:
    """Everything about ``out`` that can be told before importing it."""
    if out is grad_output:
        raise ShapeError(
            "out is grad_output: the result must not overwrite its input; pass a "
            "separate array as out"
        )
    out_lib = _library(out)
    if lib == "jax" or out_lib == "jax":
        raise TypeError(
            "out= cannot be a JAX array (JAX arrays are immutable); leave out=None and "
            "use the returned array"
        )
    if out_lib != lib and not (lib == "other" and out_lib == "cudnn_rs"):
        raise TypeError(
            f"out must be an array of grad_output's library ({lib}), got {_describe(out)}"
        )
    if isinstance(out, Filter):
        raise TypeError("out must be a cudnn_rs.Tensor, not a Filter")
    out_shape = tuple(int(d) for d in out.shape)
    if out_shape != shape:
        raise ShapeError(
            f"out has shape {out_shape} but the input gradient has shape {shape} "
            "(input_shape)"
        )


def _check_out_imported(out_t: Any, dy: Any) -> None:
    if out_t.dtype is not dy.dtype:
        raise UnsupportedConfigurationError(
            f"out has dtype {out_t.dtype.name} but grad_output has {dy.dtype.name}: "
            "the input gradient has grad_output's dtype; pass an out of that dtype"
        )
    if out_t.device != dy.device:
        raise DeviceMismatchError(
            f"out lives on {out_t.device} but grad_output on {dy.device}; allocate out "
            "on grad_output's device"
        )


def _check_copied_out(out: Any, grad_output: Any, weight: Any) -> None:
    """What importing ``out`` would check, for a NumPy ``out`` that is written by a copy."""
    if out.dtype.newbyteorder("=") != grad_output.dtype.newbyteorder("="):
        raise UnsupportedConfigurationError(
            f"out has dtype {out.dtype.name} but grad_output has "
            f"{grad_output.dtype.name}: the input gradient has grad_output's dtype; "
            "pass an out of that dtype"
        )
    _numpy_format(out, "out")
    np = sys.modules["numpy"]
    if any(
        isinstance(a, np.ndarray) and np.may_share_memory(out, a)
        for a in (grad_output, weight)
    ):
        raise ShapeError(
            "out shares memory with weight or grad_output: the output must not "
            "overlap the inputs; give out its own array"
        )


def _export(lib: str, t: Any, like: Any) -> Any:
    """A cudnn_rs Tensor as an array of ``lib`` (no copy)."""
    if lib == "jax":
        return sys.modules["jax"].dlpack.from_dlpack(t)
    if lib == "torch":
        return sys.modules["torch"].from_dlpack(t)
    if lib == "cupy":
        return sys.modules["cupy"].from_dlpack(t)
    if lib == "numpy":
        return sys.modules["numpy"].from_dlpack(t)
    return t


# NumPy dtypes that DLPack cannot carry (ml_dtypes' bfloat16): such arrays, and arrays
# in non-native byte order (which DLPack cannot carry either), are copied to and from
# the CPU device instead of shared; the copies convert to native order.
_COPIED = ("bfloat16",)


def _copied(obj: Any, lib: str) -> bool:
    # The scalar type's name, not `dtype.name`: NumPy 2 computes that in Python, about
    # 3 us a read (four reads a call).
    dtype = obj.dtype if lib == "numpy" else None
    return dtype is not None and (dtype.type.__name__ in _COPIED or not dtype.isnative)


def _numpy_layout(obj: Any) -> Any:
    """NCHW (contiguous) or NHWC (channels-last) as a NumPy array's strides say, or None
    when they say neither."""
    if obj.flags.c_contiguous:
        return _NCHW
    nd = obj.ndim
    if nd >= 3 and obj.transpose(0, *range(2, nd), 1).flags.c_contiguous:
        return _NHWC
    return None


def _dense_input(obj: Any, lib: str, channels_last: bool = False) -> Any:
    """An input array as it is, or, a NumPy, CuPy or PyTorch array neither contiguous
    nor channels-last (a slice, a transpose, an expanded view), a dense copy of it made
    by its own library (on its device; for CUDA arrays on the library's current stream,
    which the call then follows): channels-last if asked, else contiguous. Other
    libraries' arrays as they are: their import reports strides it cannot read."""
    if lib in ("numpy", "cupy"):
        nd = getattr(obj, "ndim", 0)
        if nd < 3 or _numpy_layout(obj) is not None:
            return obj
        xp = sys.modules[lib]
        if channels_last:
            return _channels_last_copy(xp, obj)
        return xp.ascontiguousarray(obj)
    if lib == "torch":
        nd = obj.dim()
        if nd not in (4, 5) or obj.is_contiguous():
            return obj
        cl = _torch_channels_last(nd)
        if obj.is_contiguous(memory_format=cl):
            return obj
        if channels_last:
            return obj.contiguous(memory_format=cl)
        return obj.contiguous()
    return obj


def _is_channels_last(obj: Any, lib: str) -> bool:
    """Whether a NumPy, CuPy or PyTorch array is channels-last and not contiguous."""
    if lib in ("numpy", "cupy"):
        return getattr(obj, "ndim", 0) >= 3 and _numpy_layout(obj) is _NHWC
    if lib == "torch" and obj.dim() in (4, 5) and not obj.is_contiguous():
        return bool(obj.is_contiguous(memory_format=_torch_channels_last(obj.dim())))
    return False


def _numpy_format(obj: Any, what: str) -> Any:
    """NCHW or NHWC, as a dense NumPy array's strides say (ShapeError otherwise, as a
    shared array's import says)."""
    layout = _numpy_layout(obj)
    if layout is not None:
        return layout
    raise ShapeError(
        f"{what} of shape {tuple(obj.shape)} has strides {obj.strides} (in bytes), "
        "which are neither contiguous NCHW nor channels-last NHWC; make it dense "
        "first, e.g. `np.ascontiguousarray(a)`"
    )


def _copy_in(obj: Any, cls: Any, h: Handle, what: str, fmt: Any = None) -> Any:
    """A NumPy array DLPack cannot carry, copied to ``h``'s device in its own layout
    (or ``fmt``)."""
    return cls.from_numpy(h, obj, format=fmt or _numpy_format(obj, what))


def _copy_out(t: Any, channels_last: bool) -> Any:
    """A CPU-device Tensor as a new NumPy array, channels-last in memory when asked."""
    arr = t.to_numpy()
    return _channels_last_copy(sys.modules["numpy"], arr) if channels_last else arr


# ---------------------------------------------------------------- the entry point


def conv_input_grad(
    input_shape: Sequence[int],
    weight: Any,
    grad_output: _A,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    *,
    mode: ConvolutionMode = ConvolutionMode.CrossCorrelation,
    algo: _Algorithm | None = None,
    math: MathType | None = None,
    handle: Handle | None = None,
    out: _A | None = None,
    benchmark: bool = False,
) -> _A:
    """The gradient of ``conv2d``/``conv3d(input, weight, ...)`` with respect to
    ``input`` (of shape ``input_shape``), given ``grad_output``: PyTorch's
    ``torch.nn.grad.conv2d_input`` / ``conv3d_input``, for any array library.

    ``weight`` (K, C/groups, *kernel) and ``grad_output`` (N, K, *spatial): PyTorch,
    CuPy or JAX arrays, NumPy arrays, cudnn_rs ``Filter``/``Tensor``, or anything with
    ``__dlpack__`` / ``__cuda_array_interface__``; the two may come from different
    libraries but must live on one device. Rank 4 is a 2-d convolution, rank 5 a 3-d
    one; ``stride``, ``padding`` and ``dilation`` are ints or tuples.

    Returns an array of ``grad_output``'s library on its device (a cudnn_rs ``Tensor``
    for cudnn_rs and unknown libraries), written without copies; or ``out``, filled in.
    dtype and layout follow ``grad_output`` (channels-last strides give a channels-last
    result); the compute type is f64 for f64 arrays, f32 otherwise. NumPy, CuPy and
    PyTorch operands of other strides (slices, transposes, expanded views) are copied
    first by their own library, as PyTorch's ``conv2d_input`` does: grad_output to a
    contiguous one (and so the result), the weight to grad_output's layout. Other
    libraries' operands must be dense (contiguous or channels-last) and raise
    ``ShapeError`` naming the fix otherwise, as does an ``out`` that is not dense.

    Devices: NumPy arrays (and CPU tensors of any library) run on the CPU reference
    device (bfloat16 NumPy arrays, which DLPack cannot carry, are copied in and the
    result copied out); CUDA arrays on a handle cached per device and stream, issuing
    to the producer's current stream (PyTorch's ``torch.cuda.current_stream``, CuPy's
    current stream), so the result is ordered with the caller's work without any host
    wait.
    JAX and cudnn_rs operands use the handle's own stream, ordered by DLPack events.
    ``handle``: run on this handle instead (on the operands' device, with its own
    stream; the operands' producers order their work before it through DLPack); a
    ``Handle(benchmark=True)`` gives the measured tier.

    ``math=None``: for PyTorch float32 input, ``torch.backends.cudnn.allow_tf32``
    decides (True: ``MathType.Default``, which allows TF32; False: ``MathType.Fma``);
    otherwise ``MathType.Default``. ``algo=None``: the library's default choice, as
    the one-call ``convolution_backward_data`` (the same in every process; for the
    measured tier, pass ``benchmark=True``).

    ``benchmark=True``: the measured tier, as PyTorch's ``cudnn.benchmark``: the first
    call of a problem times the candidates on scratch buffers (never ``out`` or the
    result) and later calls of that problem, in this process, run the fastest; on
    cached per-(device, stream) handles of its own, through the same native path as
    the default for PyTorch tensors. Its choice can differ between processes. With
    ``handle=``, the handle's own ``benchmark`` setting decides instead, so passing
    both is a ``ValueError``. The CPU reference device has one algorithm and ignores
    it.

    ``out``: an array of ``grad_output``'s library (not JAX), of shape
    ``input_shape``, grad_output's dtype and device, dense, not overlapping the
    inputs; checked before anything runs, and left untouched when the call fails.
    """
    if benchmark is not False and benchmark is not True:
        raise TypeError(f"benchmark must be a bool, got {_describe(benchmark)}")
    if benchmark and handle is not None:
        raise ValueError(
            "benchmark=True applies to the handles conv_input_grad keeps; with "
            "handle=, set that handle's benchmark (Handle(..., benchmark=True)) instead"
        )
    if (
        out is None
        and algo is None
        and math is None
        and (mode is _CROSS_CORRELATION or mode == _CROSS_CORRELATION)
        and (handle is None or type(handle) is Handle)
    ):
        # PyTorch CUDA tensors (on a handle of PyTorch's current stream, if one is
        # given): one native call (None: anything else, which the general path below
        # handles and reports).
        fast = _torch_input_grad(
            input_shape,
            weight,
            grad_output,
            stride,
            padding,
            dilation,
            groups,
            handle,
            benchmark,
        )
        if fast is not None:
            return fast  # type: ignore[no-any-return]
    lib = _library(grad_output)
    wlib = _library(weight)
    # A NumPy, CuPy or PyTorch operand of other strides (a slice, a transpose) is
    # copied first, as torch.nn.grad.conv2d_input does; a weight copied so follows
    # grad_output's layout.
    grad_output = _dense_input(grad_output, lib)
    weight = _dense_input(weight, wlib, _is_channels_last(grad_output, lib))
    dev = _device(grad_output, lib, "grad_output")
    wdev = _device(weight, wlib, "weight")
    if dev != wdev and -1 not in (dev[1], wdev[1]):
        raise DeviceMismatchError(
            f"weight lives on {_dev_name(wdev)} but grad_output on {_dev_name(dev)}: "
            f"put both on one device (e.g. weight.to(grad_output.device))"
        )
    dy_shape = _shape(grad_output)
    ndim = len(dy_shape)
    if ndim not in (4, 5):
        raise ShapeError(
            f"conv_input_grad computes 2-d and 3-d convolutions (arrays of rank 4 or 5); "
            f"grad_output has rank {ndim} (shape {dy_shape})"
        )
    try:
        shape = tuple(_int(d, "input_shape") for d in input_shape)
    except TypeError:
        raise TypeError(
            f"input_shape must be a sequence of ints, got {_describe(input_shape)}"
        ) from None
    if len(shape) != ndim:
        raise ShapeError(
            f"input_shape {shape} has {len(shape)} dimensions but grad_output has {ndim}"
        )
    # Before the result is allocated: the limits every tensor descriptor checks.
    if not all(0 < d <= _MAX_EXTENT for d in shape):
        raise ShapeError(
            f"input_shape {shape}: every dimension must be in [1, {_MAX_EXTENT}]"
        )
    if _prod(shape) > _MAX_ELEMENTS:
        raise ShapeError(
            f"input_shape {shape} has more than {_MAX_ELEMENTS} elements, cuDNN's limit"
        )
    if out is not None:
        _check_out(out, lib, grad_output, shape, grad_output)

    # The handle: explicit, the CPU device, or one cached per (GPU, producer stream).
    own_stream = False
    if handle is not None:
        h = handle
    elif dev[0] == "cpu":
        h = _cpu()
    elif dev[1] < 0:
        # Known only by __cuda_array_interface__: the weight's device, else the
        # driver's answer for grad_output's address.
        if wdev[0] == "cuda" and wdev[1] >= 0:
            ordinal = wdev[1]
        else:
            cai = grad_output.__cuda_array_interface__  # type: ignore[attr-defined]
            ordinal = _pointer_device(int(cai["data"][0]))
        h = _cuda_handle(ordinal, None, None, benchmark)
    else:
        stream, raw = _producer_stream(grad_output, lib, dev[1])
        h = _cuda_handle(dev[1], stream, raw, benchmark)
        own_stream = raw is not None

    dy = _import(grad_output, Tensor, lib, h, own_stream)
    w = _import(weight, Filter, wlib, h, own_stream and wlib == lib)
    if w.format is not dy.format and not isinstance(weight, Filter):
        # A depthwise filter (K x 1 x R x S) is dense in both layouts and imports as
        # NCHW: it follows grad_output's layout instead, so that the call does not mix
        # layouts (cuDNN would transpose around a slower kernel).
        try:
            w = _import_as(weight, wlib, h, own_stream and wlib == lib, dy.format)
        except (ValueError, TypeError, BufferError):  # not dense in that layout: as is
            pass
    dtype = dy.dtype
    if dtype not in _FLOATS or w.dtype not in _FLOATS:
        bad = dtype if dtype not in _FLOATS else w.dtype
        raise UnsupportedConfigurationError(
            f"conv_input_grad needs {_FLOAT_NAMES} arrays; got {bad.name} (cuDNN has no "
            "integer backward-data convolution); convert with .astype(float32) / "
            ".float()"
        )
    if w.dtype is not dtype:
        raise UnsupportedConfigurationError(
            f"weight is {w.dtype.name} but grad_output is {dtype.name}: convert one so "
            "that both have the same dtype"
        )
    if w.ndim != ndim:
        raise ShapeError(
            f"weight has rank {w.ndim} but grad_output has rank {ndim}: a "
            f"{ndim - 2}-d convolution takes a weight of shape (K, C/groups, "
            f"{', '.join('k' * (ndim - 2))})"
        )

    comp = f64 if dtype is f64 else f32
    if math is None:
        math = MathType.Default
        if lib == "torch" and dtype is f32:
            torch = sys.modules["torch"]
            if not torch.backends.cudnn.allow_tf32:
                math = MathType.Fma
    conv = _conv_descriptor(
        ndim - 2, stride, padding, dilation, groups, mode, comp, math
    )

    if _copied(grad_output, lib) or (out is not None and _copied(out, lib)):
        # Computed on the CPU device, then copied out (DLPack cannot share the memory).
        if out is not None:
            _check_copied_out(out, grad_output, weight)
        dx = convolution_backward_data(
            h, w, dy, conv, x_shape=shape, algo=algo, format=dy.format
        )
        if out is None:
            return _copy_out(dx, dy.format is _NHWC)  # type: ignore[no-any-return]
        out[...] = dx.to_numpy()
        return out
    if out is not None:
        dx = _import(out, Tensor, lib if lib != "other" else "cudnn_rs", h, own_stream)
        _check_out_imported(dx, dy)
        _convolution_backward_data_into(h, w, dy, conv, dx, algo)
        return out
    if lib in ("torch", "cupy", "numpy"):
        result = _empty_like_layout(lib, grad_output, shape, dy.format is _NHWC)
        dx = _import(result, Tensor, lib, h, own_stream)
        _convolution_backward_data_into(h, w, dy, conv, dx, algo)
        return result  # type: ignore[no-any-return]
    dx = convolution_backward_data(h, w, dy, conv, x_shape=shape, algo=algo)
    return _export(lib, dx, grad_output)  # type: ignore[no-any-return]
