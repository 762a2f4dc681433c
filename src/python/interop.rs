//! Zero-copy exchange with other array libraries: `from_dlpack` (DLPack capsules and
//! `__cuda_array_interface__`), and the export side (`__dlpack__`, `__dlpack_device__`,
//! `__cuda_array_interface__`).
//!
//! Shapes are logical (N, C, spatial...) both ways; strides describe the physical
//! layout, so a channels-last PyTorch tensor is an NHWC tensor here and back.
//!
//! Stream ordering: an import passes the handle's stream to the producer's `__dlpack__`
//! (the producer makes it wait for its pending work); an export makes the consumer's
//! stream wait, with an event, for the stream the tensor was last used on. The host
//! waits only twice: a `__cuda_array_interface__` import with a `stream` but no handle
//! synchronizes that stream (there is no stream of ours to order), and dropping a tensor
//! over foreign GPU memory that we used synchronizes the stream of that last use (the
//! producer may reuse the memory on any of its streams once its deleter runs), except
//! when that stream is the one the producer works on: a PyTorch tensor imported through
//! a handle on PyTorch's current stream, or without a handle while that stream is
//! PyTorch's default one (read in place, see `import_torch`), and a CuPy array handed to
//! CuPy's current stream (see `import_dlpack`).

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, CudaStream};
use pyo3::exceptions::{PyAttributeError, PyBufferError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

use super::device::{DeviceId, PyHandle};
use super::dlpack::{self, DLDevice, DlView, ExportSpec, KDL_CPU, KDL_CUDA};
use super::errors::{to_py, IntoPyResult};
use super::storage::{ForeignMemory, ForeignOwner, Storage, TensorCore};
use super::streams::{
    order_after, protocol_number, raw_protocol_number, wrap_stream, LEGACY_DEFAULT_STREAM,
};
use crate::context::CudnnContext;
use crate::data_type::DType;
use crate::error::{Error, Result};
use crate::tensor::{Format, RawDescriptor, Role};

// ---------------------------------------------------------------- layouts

/// Dense strides (in elements, in logical axis order) of `format` for a logical shape
/// (the vector formats, which arrays cannot describe, as NCHW).
pub(crate) fn dense_strides(shape: &[usize], format: Format) -> Vec<i64> {
    let layout = |f| crate::tensor::layout::dense_strides(shape, f);
    layout(format)
        .or_else(|| layout(Format::Nchw))
        .unwrap_or_default()
}

fn strides_match(shape: &[usize], strides: &[i64], expected: &[i64]) -> bool {
    // A dimension of extent 1 is never stepped over: any stride describes it.
    shape
        .iter()
        .zip(strides)
        .zip(expected)
        .all(|((&n, &s), &e)| n == 1 || s == e)
}

/// The memory format the strides describe, `prefer` when they describe both (a depthwise
/// filter, K x 1 x R x S, is dense in both layouts): a filter then follows its
/// gradient's layout, so that a channels-last model's call does not mix layouts.
pub(crate) fn resolve_format_prefer(
    shape: &[usize],
    strides: &[i64],
    prefer: Format,
) -> Result<Format> {
    let both = strides_match(shape, strides, &dense_strides(shape, Format::Nchw))
        && strides_match(shape, strides, &dense_strides(shape, Format::Nhwc));
    if both {
        return Ok(prefer);
    }
    resolve_format(shape, Some(strides), None)
}

/// The memory format the strides describe (checked against `requested` when given).
pub(crate) fn resolve_format(
    shape: &[usize],
    strides: Option<&[i64]>,
    requested: Option<Format>,
) -> Result<Format> {
    let spatial = shape.len().saturating_sub(2);
    let channels_last = if spatial == 3 {
        "torch.channels_last_3d"
    } else {
        "torch.channels_last"
    };
    if let Some(f @ (Format::NchwVectC8x4 | Format::NchwVectC8x32)) = requested {
        return Err(Error::Shape(format!(
            "format {f} packs channels in vectors, which DLPack strides cannot describe; import as NCHW or NHWC, or copy with from_numpy(..., format={f})"
        )));
    }
    let Some(strides) = strides else {
        // Compact row-major: the logical order is the physical order.
        return match requested {
            None | Some(Format::Nchw) => Ok(Format::Nchw),
            Some(f) => {
                let nhwc = dense_strides(shape, Format::Nhwc);
                if strides_match(shape, &dense_strides(shape, Format::Nchw), &nhwc) {
                    Ok(f)
                } else {
                    Err(Error::Shape(format!(
                        "the array of shape {shape:?} is contiguous (NCHW) but format {f} was requested; pass format=None (or NCHW), or convert it first, e.g. `t.contiguous(memory_format={channels_last})`"
                    )))
                }
            }
        };
    };
    let nchw = dense_strides(shape, Format::Nchw);
    let nhwc = dense_strides(shape, Format::Nhwc);
    // Strides that fit both layouts (every dimension one layout steps over differently
    // has extent 1: a 1x1 or depthwise filter, a 1x1 plane, one channel) say which one
    // the producer meant by those extent-1 dimensions' strides where they are exactly one
    // layout's: PyTorch's channels-last tensors, NumPy's transposed views. Else NCHW.
    if requested.is_none()
        && strides == nhwc.as_slice()
        && strides != nchw.as_slice()
        && strides_match(shape, strides, &nchw)
    {
        return Ok(Format::Nhwc);
    }
    match requested {
        None | Some(Format::Nchw) if strides_match(shape, strides, &nchw) => Ok(Format::Nchw),
        None | Some(Format::Nhwc) if strides_match(shape, strides, &nhwc) => Ok(Format::Nhwc),
        None => Err(Error::Shape(format!(
            "the array of shape {shape:?} has strides {strides:?} (in elements), which are neither contiguous NCHW ({nchw:?}) nor channels-last NHWC ({nhwc:?}); make it dense first, e.g. `t.contiguous()` or `t.contiguous(memory_format={channels_last})` (NumPy: `np.ascontiguousarray(a)`)"
        ))),
        Some(f) => {
            let (expected, fix) = if f == Format::Nhwc {
                (nhwc, format!("`t.contiguous(memory_format={channels_last})`"))
            } else {
                (nchw, "`t.contiguous()` (NumPy: `np.ascontiguousarray(a)`)".to_string())
            };
            Err(Error::Shape(format!(
                "the array of shape {shape:?} has strides {strides:?} (in elements), not those of format {f} ({expected:?}); call {fix}, or pass format=None to infer the format from the strides"
            )))
        }
    }
}

// ---------------------------------------------------------------- import

/// Where an imported array lives, checked against the handle when one is given.
fn device_of(dev: DLDevice, handle: Option<&PyHandle>) -> Result<DeviceId> {
    let id = match dev.device_type {
        KDL_CPU => DeviceId::Cpu,
        KDL_CUDA => DeviceId::Cuda(usize::try_from(dev.device_id).map_err(|_| {
            Error::DeviceMismatch(format!(
                "the array claims CUDA device {}, which does not exist",
                dev.device_id
            ))
        })?),
        other => {
            return Err(Error::DeviceMismatch(format!(
                "the array lives on DLPack device type {other}; only CPU (1) and CUDA (2) memory can be imported"
            )))
        }
    };
    if let Some(h) = handle {
        if h.inner.device != id {
            return Err(Error::DeviceMismatch(format!(
                "the array lives on {id} but the handle is on {}; move it first (e.g. `t.to(\"{}\")`)",
                h.inner.device,
                torch_device(h.inner.device)
            )));
        }
    }
    Ok(id)
}

fn torch_device(d: DeviceId) -> String {
    match d {
        DeviceId::Cpu => "cpu".into(),
        DeviceId::Cuda(n) => format!("cuda:{n}"),
    }
}

/// The handle's CUDA context and current stream.
pub(crate) fn handle_gpu(handle: &PyHandle) -> Result<(Arc<CudaContext>, Arc<CudaStream>)> {
    let state = handle.inner.gpu()?;
    Ok((
        Arc::clone(state.ctx.context()),
        Arc::clone(state.ctx.stream()),
    ))
}

/// The contexts imports without a handle use, one per device, each made once (on the
/// primary context): making one per import retained the primary context and released
/// it again when the tensor went.
static IMPORT_CONTEXTS: std::sync::Mutex<Vec<(usize, Arc<CudaContext>)>> =
    std::sync::Mutex::new(Vec::new());

/// A CUDA context for device `ordinal`: the handle's, or the one imports without a
/// handle share, on the primary context (as PyTorch, CuPy and JAX use).
fn context_for(handle: Option<&PyHandle>, ordinal: usize) -> Result<Arc<CudaContext>> {
    if let Some(h) = handle {
        return Ok(handle_gpu(h)?.0);
    }
    let mut made = IMPORT_CONTEXTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, ctx)) = made.iter().find(|(o, _)| *o == ordinal) {
        return Ok(Arc::clone(ctx));
    }
    let ctx = CudnnContext::cuda_context(ordinal)?;
    made.push((ordinal, Arc::clone(&ctx)));
    Ok(ctx)
}

/// The CUDA device that owns device memory at `address`, as the driver says (for
/// arrays known only by `__cuda_array_interface__`, which names no device).
#[pyfunction]
pub(crate) fn _pointer_device(py: Python<'_>, address: usize) -> PyResult<usize> {
    pointer_device(address).py_err(py)
}

/// Which device the CUDA driver says `address` belongs to.
fn pointer_device(address: usize) -> Result<usize> {
    crate::library::guard_cudarc("asking the driver where an address lives", || {
        cudarc::driver::result::init()?;
        let mut memory_type: u32 = 0;
        // SAFETY: the driver writes one unsigned int to the local; it only looks the
        // address up, never dereferences it.
        let typed = unsafe {
            sys::cuPointerGetAttribute(
                (&raw mut memory_type).cast::<c_void>(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                address as sys::CUdeviceptr,
            )
        }
        .result();
        if typed.is_ok() && memory_type == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32 {
            return Err(Error::DeviceMismatch(format!(
                "address {address:#x} is host memory, not device memory"
            )));
        }
        let mut ordinal: i32 = -1;
        // SAFETY: the driver writes one int to the local `ordinal`; it only looks the
        // address up, never dereferences it.
        unsafe {
            sys::cuPointerGetAttribute(
                (&raw mut ordinal).cast::<c_void>(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                address as sys::CUdeviceptr,
            )
        }
        .result()
        .map_err(|e| {
            Error::Shape(format!(
                "address {address:#x} is not memory the CUDA driver knows ({e:?})"
            ))
        })?;
        usize::try_from(ordinal)
            .map_err(|_| Error::Shape(format!("address {address:#x} is on no CUDA device")))
    })
}

/// Checks that `[address, address + nbytes)` is device memory of `ordinal`, inside one
/// allocation (so that a shape claiming more than the buffer holds is refused).
fn check_device_range(
    ctx: &Arc<CudaContext>,
    ordinal: usize,
    address: usize,
    nbytes: usize,
) -> Result<()> {
    let on = pointer_device(address)?;
    if on != ordinal {
        return Err(Error::DeviceMismatch(format!(
            "the array's memory is on cuda:{on}, not cuda:{ordinal}"
        )));
    }
    crate::library::guard_cudarc("checking an imported array's extent", || {
        ctx.bind_to_thread()?;
        let (mut base, mut size): (sys::CUdeviceptr, usize) = (0, 0);
        // SAFETY: the driver writes the two locals; it only looks the address up.
        let found = unsafe {
            sys::cuMemGetAddressRange_v2(&raw mut base, &raw mut size, address as sys::CUdeviceptr)
        }
        .result();
        // Memory the driver cannot size (some pools and mappings) has passed the
        // device check above; only an allocation it can size is held to its extent.
        if found.is_ok() {
            let end = (base as usize).saturating_add(size);
            if address < base as usize || address.saturating_add(nbytes) > end {
                return Err(Error::Shape(format!(
                    "the array claims {nbytes} bytes at {address:#x}, beyond its allocation ({size} bytes at {base:#x})"
                )));
            }
        }
        Ok(())
    })
}

/// Builds the tensor over checked foreign memory.
fn foreign_core(
    view: &DlView,
    device: DeviceId,
    ctx: Option<Arc<CudaContext>>,
    format: Option<Format>,
    role: Role,
    owner: ForeignOwner,
    producer_stream: Option<usize>,
    check_extent: bool,
) -> Result<TensorCore> {
    let format = resolve_format(&view.shape, view.strides.as_deref(), format)?;
    let desc = RawDescriptor::new(role, view.dtype, format, &view.shape)?;
    let nbytes = desc.nbytes();
    let align = view.dtype.size();
    if view.address % align != 0 {
        return Err(Error::Shape(format!(
            "the array's data at {:#x} is not aligned to {align} bytes for {} elements; copy it to a fresh array first (e.g. `t.clone()`, `np.array(a)`)",
            view.address, view.dtype
        )));
    }
    if view.address.checked_add(nbytes).is_none() {
        return Err(Error::Shape(format!(
            "the array's {nbytes} bytes at {:#x} overflow the address space",
            view.address
        )));
    }
    if let (true, DeviceId::Cuda(ordinal), Some(ctx)) = (check_extent, device, ctx.as_ref()) {
        check_device_range(ctx, ordinal, view.address, nbytes)?;
    }
    let mut memory = ForeignMemory::new(view.address, nbytes, view.read_only, ctx, owner);
    if let Some(stream) = producer_stream {
        memory.set_producer_stream(stream);
    }
    Ok(TensorCore::from_parts(
        desc,
        device,
        Storage::Foreign(memory),
    ))
}

/// `__dlpack__` with the newest protocol the producer accepts: DLPack 1.x keywords
/// first, then the 0.x `stream` keyword, then no arguments.
fn call_dlpack<'py>(obj: &Bound<'py, PyAny>, stream: Option<usize>) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("max_version", (dlpack::VERSION.0, dlpack::VERSION.1))?;
    kwargs.set_item("stream", stream)?;
    match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            let kwargs = PyDict::new(py);
            kwargs.set_item("stream", stream)?;
            match obj.call_method("__dlpack__", (), Some(&kwargs)) {
                Err(e) if e.is_instance_of::<PyTypeError>(py) && stream.is_none() => {
                    obj.call_method0("__dlpack__")
                }
                other => other,
            }
        }
        other => other,
    }
}

/// `from_dlpack`: DLPack producers, bare DLPack capsules, and `__cuda_array_interface__`.
pub(crate) fn import(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    format: Option<Format>,
    handle: Option<&PyHandle>,
    role: Role,
) -> PyResult<TensorCore> {
    if obj.is_instance_of::<PyCapsule>() {
        let managed = dlpack::take_capsule(obj)?;
        return import_managed(py, managed, None, format, handle, role, None);
    }
    if let Some(core) = import_torch(py, obj, format, handle, role)? {
        return Ok(core);
    }
    if obj.hasattr("__dlpack__")? {
        return import_dlpack(py, obj, format, handle, role);
    }
    if obj.hasattr("__cuda_array_interface__")? {
        return import_cai(py, obj, format, handle, role);
    }
    Err(PyTypeError::new_err(format!(
        "from_dlpack needs an object with __dlpack__ (PyTorch, CuPy, JAX, NumPy arrays), __cuda_array_interface__, or a DLPack capsule; got {}",
        obj.get_type().name()?
    )))
}

/// A PyTorch CUDA tensor on the handle's device, while PyTorch's current stream there is
/// the handle's: read in place (data pointer, shape, strides, dtype; see `torch_fast`)
/// instead of a DLPack round trip, which costs PyTorch tens of microseconds in Python per
/// tensor. The tensor object is kept alive as the owner, and the memory is marked as used
/// by the producer on our stream, so releasing it needs no wait. Without a handle, see
/// [`import_torch_unbound`]. Anything else (another device or stream, a dtype we do not
/// map): `None`, and the DLPack path takes it.
fn import_torch(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    format: Option<Format>,
    handle: Option<&PyHandle>,
    role: Role,
) -> PyResult<Option<TensorCore>> {
    let Some(h) = handle else {
        return import_torch_unbound(py, obj, format, role);
    };
    let DeviceId::Cuda(ordinal) = h.inner.device else {
        return Ok(None);
    };
    let Some(api) = super::torch_api::torch_api(py) else {
        return Ok(None);
    };
    let Some(t) = api.read(obj) else {
        return Ok(None);
    };
    if t.ordinal != ordinal {
        return Ok(None);
    }
    let theirs = api.current_raw_stream(py, ordinal)?;
    let (ctx, stream) = handle_gpu(h).py_err(py)?;
    if theirs != stream.cu_stream() as usize {
        return Ok(None);
    }
    torch_core(py, ctx, t, obj, format, role, theirs).map(Some)
}

/// A PyTorch CUDA tensor imported without a handle, while PyTorch's current stream on
/// its device is the legacy default stream (PyTorch's default): read in place, as
/// [`import_torch`] does, instead of PyTorch's DLPack export (about 12 us of Python per
/// tensor on the H200). The tensor is marked as last used on that stream, so its first
/// use on a handle's stream is ordered after PyTorch's work there (an event where the
/// streams differ), and releasing it after use on that same stream needs no wait (the
/// DLPack path must synchronize: it does not know PyTorch's stream). `None` on any other
/// stream, or for anything else.
fn import_torch_unbound(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    format: Option<Format>,
    role: Role,
) -> PyResult<Option<TensorCore>> {
    let Some(api) = super::torch_api::torch_api(py) else {
        return Ok(None);
    };
    let Some(t) = api.read(obj) else {
        return Ok(None);
    };
    if api.current_raw_stream(py, t.ordinal)? != 0 {
        return Ok(None);
    }
    let ctx = context_for(None, t.ordinal).py_err(py)?;
    let legacy = ctx.default_stream();
    let core = torch_core(py, ctx, t, obj, format, role, 0)?;
    core.used_on(&legacy).py_err(py)?;
    Ok(Some(core))
}

/// A tensor over a PyTorch tensor's memory, as PyTorch describes it (`t`, read from
/// `obj`), on the CUDA context `ctx` of its device, used on `stream` (raw), PyTorch's
/// current stream. The device and extent lookups of other imports are skipped: PyTorch's
/// own tensor vouches that its `data_ptr()` and strides lie inside one allocation on its
/// device.
pub(crate) fn torch_core(
    py: Python<'_>,
    ctx: Arc<CudaContext>,
    t: super::torch_api::TorchTensor,
    obj: &Bound<'_, PyAny>,
    format: Option<Format>,
    role: Role,
    stream: usize,
) -> PyResult<TensorCore> {
    let view = dlpack::DlView {
        address: t.address,
        device: DLDevice {
            device_type: KDL_CUDA,
            device_id: i32::try_from(t.ordinal).unwrap_or(i32::MAX),
        },
        dtype: t.dtype,
        shape: t.shape.as_slice().to_vec(),
        strides: Some(t.strides.as_slice().to_vec()),
        read_only: false,
    };
    let owner = ForeignOwner::new(None, Some(obj.clone().unbind()));
    crate::counters::bump(crate::counters::Count::TorchImport);
    foreign_core(
        &view,
        DeviceId::Cuda(t.ordinal),
        Some(ctx),
        format,
        role,
        owner,
        Some(stream),
        false,
    )
    .py_err(py)
}

fn import_dlpack(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    format: Option<Format>,
    handle: Option<&PyHandle>,
    role: Role,
) -> PyResult<TensorCore> {
    let device = if obj.hasattr("__dlpack_device__")? {
        let (device_type, device_id): (i32, i32) = obj
            .call_method0("__dlpack_device__")?
            .extract()
            .map_err(|_| PyTypeError::new_err("__dlpack_device__() must return (int, int)"))?;
        let dev = DLDevice {
            device_type,
            device_id,
        };
        // Refuse a wrong device before the producer does any work.
        device_of(dev, handle).py_err(py)?;
        Some(dev)
    } else {
        None
    };
    // The stream we will use the memory on (raw; 0: the legacy default stream), for the
    // producer to order its work before: the handle's, or the legacy default stream
    // (which waits for blocking streams).
    let consumer = match (device, handle) {
        (Some(d), Some(h)) if d.device_type == KDL_CUDA => {
            Some(handle_gpu(h).py_err(py)?.1.cu_stream() as usize)
        }
        (Some(d), None) if d.device_type == KDL_CUDA => Some(0),
        _ => None,
    };
    let stream = consumer.map(raw_protocol_number);
    // Where the producer is CuPy working on the very stream the memory is handed to, its
    // pool reuses the memory behind work queued there: releasing it needs no wait.
    let same_stream = consumer.filter(|&raw| cupy_current_stream(py, obj) == Some(raw));
    let capsule = call_dlpack(obj, stream)?;
    crate::counters::bump(crate::counters::Count::DlpackImport);
    let managed = dlpack::take_capsule(&capsule)?;
    let core = import_managed(
        py,
        managed,
        Some(obj.clone().unbind()),
        format,
        handle,
        role,
        same_stream,
    )?;
    if let (Some(0), None, DeviceId::Cuda(ordinal)) = (same_stream, handle, core.device) {
        // Handed to the legacy default stream: a use on another stream waits for it.
        let ctx = context_for(None, ordinal).py_err(py)?;
        core.used_on(&ctx.default_stream()).py_err(py)?;
    }
    Ok(core)
}

/// CuPy's current stream (raw `CUstream`, 0 for the null stream) when `obj` is a CuPy
/// array on CuPy's current device; `None` otherwise (or if CuPy will not say).
fn cupy_current_stream(py: Python<'_>, obj: &Bound<'_, PyAny>) -> Option<usize> {
    let module = obj.get_type().module().ok()?;
    if !module.to_str().ok()?.starts_with("cupy") {
        return None;
    }
    let cuda = super::torch_api::loaded_module(py, "cupy.cuda")?;
    let ours: i64 = obj
        .getattr("device")
        .ok()?
        .getattr("id")
        .ok()?
        .extract()
        .ok()?;
    let current: i64 = cuda
        .getattr("runtime")
        .ok()?
        .call_method0("getDevice")
        .ok()?
        .extract()
        .ok()?;
    if ours != current {
        return None;
    }
    cuda.call_method0("get_current_stream")
        .ok()?
        .getattr("ptr")
        .ok()?
        .extract()
        .ok()
}

/// `producer_stream`: the stream (raw) the producer's pool reuses the memory behind, if
/// known (see `ForeignMemory::set_producer_stream`).
fn import_managed(
    py: Python<'_>,
    managed: dlpack::ManagedTensor,
    producer: Option<Py<PyAny>>,
    format: Option<Format>,
    handle: Option<&PyHandle>,
    role: Role,
    producer_stream: Option<usize>,
) -> PyResult<TensorCore> {
    // From here on `owner` deletes the managed tensor (with the GIL) on every path.
    let view = managed.view();
    let owner = ForeignOwner::new(Some(managed), producer);
    let view = view.py_err(py)?;
    let device = device_of(view.device, handle).py_err(py)?;
    let ctx = match device {
        DeviceId::Cpu => None,
        DeviceId::Cuda(n) => Some(context_for(handle, n).py_err(py)?),
    };
    foreign_core(
        &view,
        device,
        ctx,
        format,
        role,
        owner,
        producer_stream,
        true,
    )
    .py_err(py)
}

/// The element type of a `__cuda_array_interface__` typestr.
fn dtype_from_typestr(typestr: &str) -> Option<DType> {
    let (order, kind) = typestr.split_at_checked(1)?;
    if !matches!(order, "<" | "|" | "=") {
        return None;
    }
    Some(match kind {
        "f4" => DType::F32,
        "f8" => DType::F64,
        "f2" => DType::F16,
        "i1" => DType::I8,
        "u1" => DType::U8,
        "i4" => DType::I32,
        "i8" => DType::I64,
        _ => return None,
    })
}

/// The typestr we export: NumPy's for every type but bf16, which has none; it goes
/// out as its raw bits ('<u2', which CuPy, Numba and NumPy accept). DLPack carries
/// bf16 properly (`kDLBfloat`).
fn typestr(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::F16 => "<f2",
        DType::BF16 => "<u2",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
    }
}

fn cai_error(msg: impl Into<String>) -> Error {
    Error::Shape(format!("__cuda_array_interface__: {}", msg.into()))
}

fn import_cai(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    format: Option<Format>,
    handle: Option<&PyHandle>,
    role: Role,
) -> PyResult<TensorCore> {
    if let Some(h) = handle {
        if h.inner.device == DeviceId::Cpu {
            return Err(to_py(
                py,
                Error::DeviceMismatch(
                    "__cuda_array_interface__ describes GPU memory but the handle is on cpu".into(),
                ),
            ));
        }
    }
    let cai = obj.getattr("__cuda_array_interface__")?;
    let cai = cai
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err("__cuda_array_interface__ must be a dict"))?;
    let get = |key: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        Ok(cai.get_item(key)?.filter(|v| !v.is_none()))
    };
    let missing = |key: &str| to_py(py, cai_error(format!("no {key:?} entry")));
    let raw_shape: Vec<i64> = get("shape")?
        .ok_or_else(|| missing("shape"))?
        .extract()
        .map_err(|_| PyTypeError::new_err("__cuda_array_interface__['shape'] must be ints"))?;
    let typestr: String = get("typestr")?
        .ok_or_else(|| missing("typestr"))?
        .extract()?;
    let (address, read_only): (usize, bool) = get("data")?
        .ok_or_else(|| missing("data"))?
        .extract()
        .map_err(|_| {
            PyTypeError::new_err("__cuda_array_interface__['data'] must be (int, bool)")
        })?;
    if get("mask")?.is_some() {
        return Err(to_py(py, cai_error("masked arrays are not supported")));
    }
    let dtype = dtype_from_typestr(&typestr).ok_or_else(|| {
        to_py(
            py,
            Error::Unsupported(crate::error::UnsupportedConfiguration {
                requested: format!("__cuda_array_interface__ typestr {typestr:?}"),
                nearest: vec![
                    "'<f4', '<f8', '<f2', '|i1', '|u1', '<i4', '<i8' (bf16: use DLPack)".into(),
                ],
            }),
        )
    })?;
    if !(3..=8).contains(&raw_shape.len()) {
        return Err(to_py(
            py,
            Error::Shape(format!(
                "a tensor needs 3 to 8 dimensions, got an array of shape {raw_shape:?}"
            )),
        ));
    }
    let shape = raw_shape
        .iter()
        .map(|&d| usize::try_from(d).ok().filter(|&d| d > 0))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            to_py(
                py,
                Error::Shape(format!(
                    "every dimension must be positive, got shape {raw_shape:?}"
                )),
            )
        })?;
    let strides = match get("strides")? {
        None => None,
        Some(s) => {
            let bytes: Vec<i64> = s.extract().map_err(|_| {
                PyTypeError::new_err("__cuda_array_interface__['strides'] must be ints or None")
            })?;
            let size = dtype.size() as i64;
            if bytes.len() != shape.len() || bytes.iter().any(|b| b % size != 0) {
                return Err(to_py(
                    py,
                    cai_error(format!(
                        "strides {bytes:?} (bytes) do not fit shape {shape:?} of {size}-byte elements; copy the array to a contiguous one first"
                    )),
                ));
            }
            Some(bytes.iter().map(|b| b / size).collect::<Vec<_>>())
        }
    };
    let producer_stream: Option<usize> = match get("stream")? {
        None => None,
        Some(s) => Some(s.extract().map_err(|_| {
            PyTypeError::new_err("__cuda_array_interface__['stream'] must be an int or None")
        })?),
    };
    if address == 0 {
        return Err(to_py(py, cai_error("null data pointer")));
    }
    let ordinal = pointer_device(address).py_err(py)?;
    let device = DeviceId::Cuda(ordinal);
    let dev = DLDevice {
        device_type: KDL_CUDA,
        device_id: ordinal as i32,
    };
    device_of(dev, handle).py_err(py)?;
    let ctx = context_for(handle, ordinal).py_err(py)?;
    let view = DlView {
        address,
        device: dev,
        dtype,
        shape,
        strides,
        read_only,
    };
    let core = foreign_core(
        &view,
        device,
        Some(Arc::clone(&ctx)),
        format,
        role,
        ForeignOwner::new(None, Some(obj.clone().unbind())),
        None,
        true,
    )
    .py_err(py)?;
    // The producer's pending work on its stream comes first: our stream waits for it
    // (an event), or, without a handle, the producer's stream is synchronized.
    if let Some(raw) = producer_stream {
        let ours = handle.map(handle_gpu).transpose().py_err(py)?;
        py.detach(|| -> Result<()> {
            let theirs = wrap_stream(&ctx, raw);
            match ours {
                Some((_, ours)) => order_after(&ours, &theirs),
                None => Ok(theirs.synchronize()?),
            }
        })
        .py_err(py)?;
    }
    Ok(core)
}

// ---------------------------------------------------------------- export

/// `(device_type, device_id)` as DLPack names it.
pub(crate) fn dlpack_device(core: &TensorCore) -> (i32, i32) {
    match core.device {
        DeviceId::Cpu => (KDL_CPU, 0),
        DeviceId::Cuda(n) => (KDL_CUDA, n as i32),
    }
}

fn check_exportable(core: &TensorCore) -> Result<()> {
    match core.desc.format() {
        Format::Nchw | Format::Nhwc => Ok(()),
        f => Err(Error::Shape(format!(
            "format {f} packs channels in vectors, which DLPack and __cuda_array_interface__ cannot describe; use to_numpy()"
        ))),
    }
}

fn logical_strides(core: &TensorCore) -> Vec<i64> {
    dense_strides(core.desc.shape(), core.desc.format())
}

/// The consumer's stream as DLPack passes it: `None` is the legacy default stream,
/// -1 asks for no ordering.
fn consumer_stream(stream: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    let Some(s) = stream.filter(|s| !s.is_none()) else {
        return Ok(Some(LEGACY_DEFAULT_STREAM));
    };
    let n: i64 = s
        .extract()
        .map_err(|_| PyTypeError::new_err("stream must be an int or None"))?;
    match n {
        -1 => Ok(None),
        0 => Ok(Some(LEGACY_DEFAULT_STREAM)),
        n => usize::try_from(n)
            .map(Some)
            .map_err(|_| PyBufferError::new_err(format!("invalid stream {n}"))),
    }
}

/// `Tensor.__dlpack__`.
pub(crate) fn export_dlpack<'py>(
    py: Python<'py>,
    core: &Arc<TensorCore>,
    stream: Option<&Bound<'py, PyAny>>,
    max_version: Option<&Bound<'py, PyAny>>,
    dl_device: Option<&Bound<'py, PyAny>>,
    copy: Option<bool>,
) -> PyResult<Bound<'py, PyCapsule>> {
    check_exportable(core).map_err(|e| PyBufferError::new_err(e.to_string()))?;
    let versioned = match max_version.filter(|v| !v.is_none()) {
        None => false,
        Some(v) => {
            let (major, _minor): (i64, i64) = v
                .extract()
                .map_err(|_| PyTypeError::new_err("max_version must be (major, minor)"))?;
            major >= i64::from(dlpack::VERSION.0)
        }
    };
    let device = dlpack_device(core);
    if let Some(want) = dl_device.filter(|d| !d.is_none()) {
        let want: (i32, i32) = want
            .extract()
            .map_err(|_| PyTypeError::new_err("dl_device must be (device_type, device_id)"))?;
        if want != device {
            return Err(PyBufferError::new_err(format!(
                "cudnn_rs exports without copying: the tensor lives on {device:?}, not {want:?}"
            )));
        }
    }
    if copy == Some(true) {
        return Err(PyBufferError::new_err(
            "cudnn_rs exports without copying (copy=True is not supported); copy on the consumer's side",
        ));
    }
    let (address, read_only) = core.export_address();
    if read_only && !versioned {
        return Err(PyBufferError::new_err(
            "cannot export read-only memory through DLPack 0.x, which cannot mark it read-only; ask for max_version=(1, 0)",
        ));
    }
    if let DeviceId::Cuda(_) = core.device {
        if let Some(raw) = consumer_stream(stream)? {
            let core = Arc::clone(core);
            py.detach(move || core.order_consumer(raw)).py_err(py)?;
        }
    }
    let spec = ExportSpec {
        address,
        device: DLDevice {
            device_type: device.0,
            device_id: device.1,
        },
        dtype: core.desc.dtype(),
        shape: core.desc.shape().iter().map(|&d| d as i64).collect(),
        strides: logical_strides(core),
        read_only,
    };
    dlpack::export_capsule(py, spec, versioned, Arc::clone(core))
}

/// `Tensor.__cuda_array_interface__` (version 3): GPU tensors only.
pub(crate) fn cuda_array_interface<'py>(
    py: Python<'py>,
    core: &Arc<TensorCore>,
) -> PyResult<Bound<'py, PyDict>> {
    if core.device == DeviceId::Cpu {
        return Err(PyAttributeError::new_err(
            "__cuda_array_interface__: this tensor lives on the CPU (use __dlpack__ or to_numpy())",
        ));
    }
    check_exportable(core)
        .map_err(|e| PyAttributeError::new_err(format!("__cuda_array_interface__: {e}")))?;
    let (address, read_only) = core.export_address();
    let size = core.desc.dtype().size() as i64;
    let d = PyDict::new(py);
    d.set_item("shape", PyTuple::new(py, core.desc.shape())?)?;
    d.set_item("typestr", typestr(core.desc.dtype()))?;
    d.set_item("data", (address, read_only))?;
    d.set_item("version", 3)?;
    if core.desc.format() == Format::Nchw {
        d.set_item("strides", py.None())?;
    } else {
        let bytes: Vec<i64> = logical_strides(core).iter().map(|s| s * size).collect();
        d.set_item("strides", PyTuple::new(py, bytes)?)?;
    }
    // The stream our last use of the memory was issued to: the consumer orders (or
    // synchronizes) its work after it. None when nothing of ours may be pending.
    d.set_item("stream", core.last_stream().map(|s| protocol_number(&s)))?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_strides_of_both_layouts() {
        assert_eq!(
            dense_strides(&[2, 3, 4, 5], Format::Nchw),
            vec![60, 20, 5, 1]
        );
        assert_eq!(
            dense_strides(&[2, 3, 4, 5], Format::Nhwc),
            vec![60, 1, 15, 3]
        );
        assert_eq!(
            dense_strides(&[2, 3, 4, 5, 6], Format::Nhwc),
            vec![360, 1, 90, 18, 3]
        );
    }

    #[test]
    fn formats_are_inferred_and_checked() {
        let shape = [2, 3, 4, 5];
        let nchw = dense_strides(&shape, Format::Nchw);
        let nhwc = dense_strides(&shape, Format::Nhwc);
        assert_eq!(
            resolve_format(&shape, Some(&nchw), None).ok(),
            Some(Format::Nchw)
        );
        assert_eq!(
            resolve_format(&shape, Some(&nhwc), None).ok(),
            Some(Format::Nhwc)
        );
        assert_eq!(resolve_format(&shape, None, None).ok(), Some(Format::Nchw));
        assert!(resolve_format(&shape, Some(&nhwc), Some(Format::Nchw)).is_err());
        assert!(resolve_format(&shape, Some(&[60, 20, 1, 4]), None).is_err());
        assert!(resolve_format(&shape, None, Some(Format::NchwVectC8x4)).is_err());
        // Extent-1 dimensions may carry any stride (PyTorch gives C=1 tensors either);
        // where they are exactly one layout's, that layout (PyTorch's channels-last
        // tensors, NumPy's transposed views), else NCHW.
        let one_channel = [2, 1, 4, 5];
        assert_eq!(
            resolve_format(&one_channel, Some(&[20, 1, 5, 1]), None).ok(),
            Some(Format::Nhwc)
        );
        assert_eq!(
            resolve_format(&one_channel, Some(&[20, 20, 5, 1]), None).ok(),
            Some(Format::Nchw)
        );
        assert_eq!(
            resolve_format(&one_channel, Some(&[20, 7, 5, 1]), None).ok(),
            Some(Format::Nchw)
        );
        // A 1x1 filter: channels-last strides (K, C, 1, 1) = (C, 1, C, C).
        assert_eq!(
            resolve_format(&[8, 4, 1, 1], Some(&[4, 1, 4, 4]), None).ok(),
            Some(Format::Nhwc)
        );
        assert_eq!(
            resolve_format(&[8, 4, 1, 1], Some(&[4, 1, 1, 1]), None).ok(),
            Some(Format::Nchw)
        );
        // Both layouts' strides at once (one element a filter): NCHW.
        assert_eq!(
            resolve_format(&[8, 1, 1, 1], Some(&[1, 1, 1, 1]), None).ok(),
            Some(Format::Nchw)
        );
        assert_eq!(
            resolve_format(&one_channel, None, Some(Format::Nhwc)).ok(),
            Some(Format::Nhwc)
        );
    }
}
