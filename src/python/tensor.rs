//! `Tensor` and `Filter`: a run-time descriptor plus memory on the handle's device, and
//! their conversions from and to NumPy arrays (always logical NCHW(D) order) and, without
//! copying, from and to other array libraries (see `interop.rs`).

use std::cell::Cell;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use cudarc::driver::{
    sys::CUdeviceptr, CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyTuple};

use super::dlpack::{self, ManagedTensor};
use super::errors::{detach, IntoPyResult};
use super::handle::{DeviceId, PyHandle};
use super::markers::{
    dtype_from_numpy_name, dtype_singleton, extract_dtype, extract_format, format_class, numpy_name,
};
use super::streams::{order_after, same_stream, wrap_stream, StreamMark};
use crate::data_type::DType;
use crate::error::{Error, Result};
use crate::tensor::{Format, RawDescriptor, Role};

/// Memory of one tensor.
pub(crate) enum Storage {
    /// Host memory for the CPU device, in 8-byte words so every element type is aligned.
    Host(Vec<u64>),
    /// Device memory allocated by us on the handle's stream.
    Device(CudaSlice<u8>),
    /// Memory another library owns (DLPack, `__cuda_array_interface__`), borrowed.
    Foreign(ForeignMemory),
}

/// What keeps foreign memory alive: the DLPack managed tensor (whose deleter runs when
/// this drops) and the producer object. Dropped with the GIL held, from any thread.
pub(crate) struct ForeignOwner {
    managed: Option<ManagedTensor>,
    producer: Option<Py<PyAny>>,
}

impl ForeignOwner {
    pub(crate) fn new(managed: Option<ManagedTensor>, producer: Option<Py<PyAny>>) -> Self {
        Self { managed, producer }
    }
}

impl Drop for ForeignOwner {
    fn drop(&mut self) {
        let mut parts = Some((self.managed.take(), self.producer.take()));
        if matches!(parts, Some((None, None))) {
            return;
        }
        // A producer's deleter may call into Python (NumPy's does): run it attached,
        // with any exception being raised set aside.
        let done = Python::try_attach(|py| dlpack::with_exception_saved(py, || drop(parts.take())));
        if done.is_none() {
            // The interpreter is gone or going: leaking beats calling into it.
            std::mem::forget(parts.take());
        }
    }
}

/// Memory owned by another library, borrowed for as long as the tensor lives; never
/// freed by us. The import checked it: non-null, aligned for the element type, `nbytes`
/// long, and (for device memory) inside one allocation of the right device.
pub(crate) struct ForeignMemory {
    address: usize,
    nbytes: usize,
    read_only: bool,
    /// The device's context for device memory; `None` for host memory.
    ctx: Option<Arc<CudaContext>>,
    _owner: ForeignOwner,
}

impl ForeignMemory {
    pub(crate) fn new(
        address: usize,
        nbytes: usize,
        read_only: bool,
        ctx: Option<Arc<CudaContext>>,
        owner: ForeignOwner,
    ) -> Self {
        Self {
            address,
            nbytes,
            read_only,
            ctx,
            _owner: owner,
        }
    }

    /// Fresh zeroed memory of the same kind, for trial runs.
    pub(crate) fn blank(&self, nbytes: usize) -> Result<Storage> {
        match &self.ctx {
            None => Ok(Storage::Host(vec![0u64; nbytes.div_ceil(8)])),
            Some(ctx) => {
                let stream = ctx.default_stream();
                let mut slice = crate::context::alloc_bytes(&stream, nbytes)?;
                stream.memset_zeros(&mut slice)?;
                Ok(Storage::Device(slice))
            }
        }
    }

    fn read_only_error() -> Error {
        Error::InvalidArgument(
            "this tensor was imported from read-only memory (a read-only DLPack tensor or __cuda_array_interface__) and cannot be written; pass a writable array as dx"
                .into(),
        )
    }
}

impl Storage {
    /// (is device memory, address, length in bytes).
    fn extent(&self) -> (bool, usize, usize) {
        match self {
            Storage::Host(words) => (false, words.as_ptr() as usize, words.len() * 8),
            Storage::Device(s) => {
                let (ptr, _record) = s.device_ptr(s.stream());
                (true, ptr as usize, s.len())
            }
            Storage::Foreign(f) => (f.ctx.is_some(), f.address, f.nbytes),
        }
    }

    fn host_bytes(&self) -> Result<&[u8]> {
        match self {
            Storage::Host(words) => Ok(bytemuck::cast_slice(words)),
            Storage::Foreign(f) if f.ctx.is_none() => {
                // SAFETY: the import checked the address (non-null, aligned, `nbytes`
                // long) and `_owner` keeps the memory alive while `self` lives; the
                // borrow registry (`claim`) keeps any overlapping `&mut` from coexisting.
                Ok(unsafe { std::slice::from_raw_parts(f.address as *const u8, f.nbytes) })
            }
            Storage::Device(_) | Storage::Foreign(_) => Err(Error::DeviceMismatch(
                "tensor lives on a GPU, not the CPU".into(),
            )),
        }
    }

    fn host_bytes_mut(&mut self) -> Result<&mut [u8]> {
        match self {
            Storage::Host(words) => Ok(bytemuck::cast_slice_mut(words)),
            Storage::Foreign(f) if f.ctx.is_none() => {
                if f.read_only {
                    return Err(ForeignMemory::read_only_error());
                }
                // SAFETY: as in `host_bytes`; the producer exported the memory writable,
                // and `claim` refused any other live borrow overlapping it.
                Ok(unsafe { std::slice::from_raw_parts_mut(f.address as *mut u8, f.nbytes) })
            }
            Storage::Device(_) | Storage::Foreign(_) => Err(Error::DeviceMismatch(
                "tensor lives on a GPU, not the CPU".into(),
            )),
        }
    }

    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> Result<(CUdeviceptr, SyncOnDrop<'a>)> {
        match self {
            Storage::Device(s) => Ok(s.device_ptr(stream)),
            Storage::Foreign(f) if f.ctx.is_some() => {
                Ok((f.address as CUdeviceptr, SyncOnDrop::Record(None)))
            }
            Storage::Host(_) | Storage::Foreign(_) => Err(Error::DeviceMismatch(
                "tensor lives on the CPU, not a GPU".into(),
            )),
        }
    }

    fn device_ptr_mut<'a>(
        &'a mut self,
        stream: &'a CudaStream,
    ) -> Result<(CUdeviceptr, SyncOnDrop<'a>)> {
        match self {
            Storage::Device(s) => Ok(s.device_ptr_mut(stream)),
            Storage::Foreign(f) if f.ctx.is_some() => {
                if f.read_only {
                    return Err(ForeignMemory::read_only_error());
                }
                Ok((f.address as CUdeviceptr, SyncOnDrop::Record(None)))
            }
            Storage::Host(_) | Storage::Foreign(_) => Err(Error::DeviceMismatch(
                "tensor lives on the CPU, not a GPU".into(),
            )),
        }
    }

    fn read_only(&self) -> bool {
        matches!(self, Storage::Foreign(f) if f.read_only)
    }
}

// ---------------------------------------------------------------- borrow registry
//
// Two tensors may share memory once foreign memory is involved (one NumPy array
// imported twice, or our own tensor exported and imported back). A call must not read
// memory it also writes (`&[u8]` and `&mut [u8]` over the same bytes would be undefined
// behaviour on the CPU, and garbage on the GPU), and concurrent calls must not write
// what another reads. Every storage borrow taken for a call is registered here until
// its guard drops; an overlapping borrow where either side writes is refused.

struct Borrow {
    token: u64,
    device: bool,
    start: usize,
    end: usize,
    write: bool,
}

static BORROWS: Mutex<Vec<Borrow>> = Mutex::new(Vec::new());
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

fn borrows() -> std::sync::MutexGuard<'static, Vec<Borrow>> {
    BORROWS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn claim(token: u64, storage: &Storage, write: bool) -> Result<()> {
    let (device, start, len) = storage.extent();
    let end = start.saturating_add(len);
    let mut list = borrows();
    let clash = list.iter().any(|b| {
        b.token != token
            && b.device == device
            && b.start < end
            && start < b.end
            && (write || b.write)
    });
    if clash {
        return Err(Error::Shape(if write {
            "dx shares memory with w or dy (or with a tensor another call is using): the output must not overlap the inputs; give dx its own array".into()
        } else {
            "this tensor shares memory with the output of this (or another, concurrent) call: the output must not overlap the inputs; give dx its own array".into()
        }));
    }
    list.push(Borrow {
        token,
        device,
        start,
        end,
        write,
    });
    Ok(())
}

fn release(token: u64) {
    borrows().retain(|b| b.token != token);
}

/// A storage locked for reading, whose memory is registered as read while it lives.
pub(crate) struct StorageRead<'a> {
    core: &'a TensorCore,
    guard: RwLockReadGuard<'a, Storage>,
    token: u64,
    claimed: Cell<bool>,
}

/// A storage locked for writing, whose memory is registered as written while it lives.
pub(crate) struct StorageWrite<'a> {
    core: &'a TensorCore,
    guard: RwLockWriteGuard<'a, Storage>,
    token: u64,
    claimed: bool,
}

impl Deref for StorageRead<'_> {
    type Target = Storage;
    fn deref(&self) -> &Storage {
        &self.guard
    }
}

impl Deref for StorageWrite<'_> {
    type Target = Storage;
    fn deref(&self) -> &Storage {
        &self.guard
    }
}

impl Drop for StorageRead<'_> {
    fn drop(&mut self) {
        if self.claimed.get() {
            release(self.token);
        }
    }
}

impl Drop for StorageWrite<'_> {
    fn drop(&mut self) {
        if self.claimed {
            release(self.token);
        }
    }
}

impl StorageRead<'_> {
    fn claim(&self) -> Result<()> {
        if !self.claimed.get() {
            claim(self.token, &self.guard, false)?;
            self.claimed.set(true);
        }
        Ok(())
    }

    /// The bytes, for the CPU device.
    pub(crate) fn host_bytes(&self) -> Result<&[u8]> {
        let bytes = self.guard.host_bytes()?;
        self.claim()?;
        Ok(bytes)
    }

    /// Device address for reading on `stream`, ordered after the tensor's last use on
    /// another stream, with cudarc's ordering guard.
    pub(crate) fn device_ptr<'b>(
        &'b self,
        stream: &'b Arc<CudaStream>,
    ) -> Result<(CUdeviceptr, SyncOnDrop<'b>)> {
        let out = self.guard.device_ptr(stream)?;
        self.claim()?;
        self.core.use_on(stream)?;
        Ok(out)
    }
}

impl StorageWrite<'_> {
    fn claim(&mut self) -> Result<()> {
        if !self.claimed {
            claim(self.token, &self.guard, true)?;
            self.claimed = true;
        }
        Ok(())
    }

    /// The bytes, for the CPU device to write.
    pub(crate) fn host_bytes_mut(&mut self) -> Result<&mut [u8]> {
        if self.guard.read_only() {
            return Err(ForeignMemory::read_only_error());
        }
        self.claim()?;
        self.guard.host_bytes_mut()
    }

    /// Device address for writing on `stream` (see `StorageRead::device_ptr`).
    pub(crate) fn device_ptr_mut<'b>(
        &'b mut self,
        stream: &'b Arc<CudaStream>,
    ) -> Result<(CUdeviceptr, SyncOnDrop<'b>)> {
        if self.guard.read_only() {
            return Err(ForeignMemory::read_only_error());
        }
        self.claim()?;
        self.core.use_on(stream)?;
        self.guard.device_ptr_mut(stream)
    }
}

/// What `Tensor` and `Filter` share.
pub(crate) struct TensorCore {
    pub desc: Arc<RawDescriptor>,
    pub device: DeviceId,
    storage: RwLock<Storage>,
    /// The stream this tensor's memory was last used on (GPU only).
    mark: Mutex<Option<StreamMark>>,
    /// The stream the memory was allocated on, which cudarc frees it on: its owner must
    /// outlive the memory (a CuPy or PyTorch stream dies with its Python object).
    home: Option<StreamMark>,
}

impl Drop for TensorCore {
    fn drop(&mut self) {
        // cudarc frees our memory on the stream it was allocated on: make that stream
        // wait for the last work using it, if that was on another one. Foreign memory
        // goes back to its producer, whose streams we do not know.
        let mark = self
            .mark
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let storage = self
            .storage
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match (mark.as_ref(), &*storage) {
            (Some(mark), Storage::Device(slice)) => {
                let _ = order_after(slice.stream(), &mark.stream);
            }
            (Some(mark), Storage::Foreign(f)) if f.ctx.is_some() => {
                // The producer may hand the memory out again as soon as its deleter
                // runs, to work on any of its streams: ours must be finished first.
                let _ = mark.stream.synchronize();
            }
            _ => {}
        }
        // Free the memory now, while the streams it is freed on and was last used on
        // (and the Python objects owning them) are still alive; they go after.
        drop(std::mem::replace(storage, Storage::Host(Vec::new())));
        drop(mark);
    }
}

impl TensorCore {
    pub(crate) fn from_parts(desc: RawDescriptor, device: DeviceId, storage: Storage) -> Self {
        Self {
            desc: Arc::new(desc),
            device,
            storage: RwLock::new(storage),
            mark: Mutex::new(None),
            home: None,
        }
    }

    pub(crate) fn read(&self) -> StorageRead<'_> {
        StorageRead {
            core: self,
            guard: self
                .storage
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            token: NEXT_TOKEN.fetch_add(1, Ordering::Relaxed),
            claimed: Cell::new(false),
        }
    }
    pub(crate) fn write(&self) -> StorageWrite<'_> {
        StorageWrite {
            core: self,
            guard: self
                .storage
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            token: NEXT_TOKEN.fetch_add(1, Ordering::Relaxed),
            claimed: false,
        }
    }

    fn mark(&self) -> std::sync::MutexGuard<'_, Option<StreamMark>> {
        self.mark
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Orders `stream` after the tensor's last use on another stream, and makes it the
    /// last use.
    fn use_on(&self, stream: &Arc<CudaStream>) -> Result<()> {
        let mut mark = self.mark();
        if let Some(m) = mark.as_ref() {
            if same_stream(&m.stream, stream) {
                return Ok(());
            }
            order_after(stream, &m.stream)?;
        }
        *mark = Some(StreamMark::new(stream));
        Ok(())
    }

    /// The stream the tensor was last used on, if any work of ours may be pending.
    pub(crate) fn last_stream(&self) -> Option<Arc<CudaStream>> {
        self.mark().as_ref().map(|m| Arc::clone(&m.stream))
    }

    /// Makes the consumer's stream `raw` (DLPack numbering) wait for our last use.
    pub(crate) fn order_consumer(&self, raw: usize) -> Result<()> {
        let mark = self.mark();
        if let Some(m) = mark.as_ref() {
            let theirs = wrap_stream(m.stream.context(), raw);
            order_after(&theirs, &m.stream)?;
        }
        Ok(())
    }

    /// The address to export and whether the memory is read-only.
    pub(crate) fn export_address(&self) -> (usize, bool) {
        let storage = self.read();
        let (_, address, _) = storage.extent();
        (address, storage.read_only())
    }

    /// Allocates storage for `desc` on the handle's device; `init` = bytes to upload, or
    /// `None` for zeros.
    pub(crate) fn allocate(
        handle: &PyHandle,
        desc: RawDescriptor,
        init: Option<&[u8]>,
        zero: bool,
    ) -> Result<Self> {
        let nbytes = desc.nbytes();
        let mut mark = None;
        let storage = match handle.inner.device {
            DeviceId::Cpu => {
                let mut words = vec![0u64; nbytes.div_ceil(8)];
                if let Some(src) = init {
                    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..nbytes].copy_from_slice(src);
                }
                Storage::Host(words)
            }
            DeviceId::Cuda(_) => {
                let stream = handle.inner.stream()?;
                let mut slice = crate::context::alloc_bytes(&stream, nbytes)?;
                if let Some(src) = init {
                    stream.memcpy_htod(src, &mut slice)?;
                } else if zero {
                    stream.memset_zeros(&mut slice)?;
                }
                mark = Some(StreamMark::new(&stream));
                Storage::Device(slice)
            }
        };
        let mut core = Self::from_parts(desc, handle.inner.device, storage);
        core.home = mark.as_ref().map(StreamMark::same);
        *core.mark() = mark;
        Ok(core)
    }

    /// The physical bytes, copied to the host.
    pub(crate) fn to_host_bytes(&self) -> Result<Vec<u8>> {
        let storage = self.read();
        let nbytes = self.desc.nbytes();
        match &*storage {
            Storage::Host(_) => Ok(storage.host_bytes()?[..nbytes].to_vec()),
            Storage::Foreign(f) => match &f.ctx {
                None => Ok(storage.host_bytes()?[..nbytes].to_vec()),
                Some(ctx) => {
                    let stream = self.last_stream().unwrap_or_else(|| ctx.default_stream());
                    storage.claim()?;
                    let mut out = vec![0u8; nbytes];
                    stream.context().bind_to_thread()?;
                    // SAFETY: the import checked `[address, address + nbytes)` is device
                    // memory of this context, kept alive by the owner while `storage`
                    // (and its read lock) lives; `out` holds `nbytes` bytes, and the
                    // stream is synchronized before `out` is read.
                    unsafe {
                        cudarc::driver::result::memcpy_dtoh_async(
                            &mut out,
                            f.address as CUdeviceptr,
                            stream.cu_stream(),
                        )
                    }?;
                    stream.synchronize()?;
                    Ok(out)
                }
            },
            Storage::Device(slice) => {
                let stream = self
                    .last_stream()
                    .unwrap_or_else(|| Arc::clone(slice.stream()));
                storage.claim()?;
                let mut out = vec![0u8; nbytes];
                stream.memcpy_dtoh(slice, &mut out)?;
                stream.synchronize()?;
                Ok(out)
            }
        }
    }
}

/// Physical axis order of a logical NCHW(D) array stored in `format` (for NCHW_VECT_C:
/// the logical array is first reshaped to N, C/v, v, spatial...).
fn physical_permutation(format: Format, ndim: usize) -> Vec<usize> {
    match format {
        Format::Nchw => (0..ndim).collect(),
        Format::Nhwc => {
            let mut p = vec![0];
            p.extend(2..ndim);
            p.push(1);
            p
        }
        Format::NchwVectC8x4 | Format::NchwVectC8x32 => {
            // `ndim` counts the reshaped axes: 0 N, 1 C/v, 2 v, 3.. spatial
            let mut p = vec![0, 1];
            p.extend(3..ndim);
            p.push(2);
            p
        }
    }
}

fn vect_shape(shape: &[usize], format: Format) -> Vec<usize> {
    let v = format.vector_width();
    let mut s = vec![shape[0], shape[1] / v, v];
    s.extend_from_slice(&shape[2..]);
    s
}

/// Reads a NumPy (or array-like) object as (dtype, logical shape, physical bytes).
fn array_to_bytes(
    py: Python<'_>,
    array: &Bound<'_, PyAny>,
    format: Format,
) -> PyResult<(DType, Vec<usize>, Vec<u8>)> {
    let np = py.import("numpy")?;
    let arr = np.call_method1("asarray", (array,))?;
    let dtype_name: String = arr.getattr("dtype")?.getattr("name")?.extract()?;
    let dtype = dtype_from_numpy_name(&dtype_name).ok_or_else(|| {
        super::errors::to_py(
            py,
            Error::Unsupported(crate::error::UnsupportedConfiguration {
                requested: format!("array of dtype {dtype_name}"),
                nearest: vec![
                    "float32, float64, float16, ml_dtypes.bfloat16, int8, uint8, int32, int64"
                        .into(),
                ],
            }),
        )
    })?;
    if format.data_type(dtype).is_none() {
        return Err(super::errors::to_py(py, unsupported_format(dtype, format)));
    }
    let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
    if shape.len() < 3 {
        return Err(super::errors::to_py(
            py,
            Error::Shape(format!(
                "a tensor needs 3 to 8 dimensions, got an array of shape {shape:?}"
            )),
        ));
    }
    let mut phys = arr.clone();
    if matches!(format, Format::NchwVectC8x4 | Format::NchwVectC8x32) {
        if shape[1] % format.vector_width() != 0 {
            return Err(super::errors::to_py(
                py,
                Error::Shape(format!(
                    "format {format} packs channels by {}; {} channels is not a multiple",
                    format.vector_width(),
                    shape[1]
                )),
            ));
        }
        phys = phys.call_method1("reshape", (PyTuple::new(py, vect_shape(&shape, format))?,))?;
    }
    let perm = physical_permutation(format, phys.getattr("ndim")?.extract()?);
    phys = np.call_method1("transpose", (phys, PyTuple::new(py, perm)?))?;
    let bytes = np
        .call_method1("ascontiguousarray", (phys,))?
        .call_method0("tobytes")?;
    let bytes = bytes.cast_into::<PyBytes>()?;
    Ok((dtype, shape, bytes.as_bytes().to_vec()))
}

/// Builds the logical NumPy array from physical bytes.
fn bytes_to_array<'py>(
    py: Python<'py>,
    desc: &RawDescriptor,
    bytes: &[u8],
) -> PyResult<Bound<'py, PyAny>> {
    let np = py.import("numpy")?;
    let shape = desc.shape();
    let format = desc.format();
    let pybytes = PyBytes::new(py, bytes);
    let mut arr = if desc.dtype() == DType::BF16 {
        if let Ok(ml) = py.import("ml_dtypes") {
            np.call_method1("frombuffer", (pybytes, ml.getattr("bfloat16")?))?
        } else {
            {
                // Without ml_dtypes, widen exactly to float32: a bf16 is the top half of one.
                let u16s = np.call_method1("frombuffer", (pybytes, "uint16"))?;
                let widened = u16s.call_method1("astype", ("uint32",))?;
                let shifted = widened.call_method1("__lshift__", (16,))?;
                shifted.call_method1("view", ("float32",))?
            }
        }
    } else {
        np.call_method1("frombuffer", (pybytes, numpy_name(desc.dtype())))?
    };
    let phys_shape: Vec<usize> = if matches!(format, Format::NchwVectC8x4 | Format::NchwVectC8x32) {
        vect_shape(shape, format)
    } else {
        shape.to_vec()
    };
    let perm = physical_permutation(format, phys_shape.len());
    let stored: Vec<usize> = perm.iter().map(|&a| phys_shape[a]).collect();
    arr = arr.call_method1("reshape", (PyTuple::new(py, stored)?,))?;
    // inverse permutation back to logical order
    let mut inv = vec![0usize; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    arr = np.call_method1("transpose", (arr, PyTuple::new(py, inv)?))?;
    arr = arr.call_method1("reshape", (PyTuple::new(py, shape.to_vec())?,))?;
    // A fresh, writable, C-contiguous array (frombuffer's view is read-only, and the
    // transpose of an NHWC one is not C-contiguous).
    let kwargs = PyDict::new(py);
    kwargs.set_item("order", "C")?;
    np.call_method("array", (arr,), Some(&kwargs))
}

fn unsupported_format(dtype: DType, format: Format) -> Error {
    Error::Unsupported(crate::error::UnsupportedConfiguration {
        requested: format!("{dtype} elements in format {format}"),
        nearest: vec![
            "NCHW and NHWC hold every type; NCHWVectC8x4 holds i8 and u8; NCHWVectC8x32 holds i8"
                .into(),
        ],
    })
}

fn parse_shape(obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let dims: Vec<i64> = obj
        .extract()
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err("shape must be a sequence of ints"))?;
    dims.iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                super::errors::to_py(
                    obj.py(),
                    Error::Shape(format!("negative dimension in shape {dims:?}")),
                )
            })
        })
        .collect()
}

macro_rules! tensor_like {
    ($cls:ident, $pyname:literal, $role:expr, $what:literal) => {
        #[doc = concat!("A ", $what, " on a handle's device; its shape is logical (NCHW order) whatever its memory format.")]
        #[pyclass(frozen, name = $pyname, module = "cudnn_rs")]
        pub(crate) struct $cls {
            pub core: Arc<TensorCore>,
        }

        #[pymethods]
        impl $cls {
            /// Copies a NumPy array (logical NCHW(D) order) to the handle's device.
            #[staticmethod]
            #[pyo3(signature = (handle, array, format = None))]
            fn from_numpy(
                py: Python<'_>,
                handle: &Bound<'_, PyHandle>,
                array: &Bound<'_, PyAny>,
                format: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Self> {
                let format = format.map(extract_format).transpose()?.unwrap_or(Format::Nchw);
                let (dtype, shape, bytes) = array_to_bytes(py, array, format)?;
                let desc = RawDescriptor::new($role, dtype, format, &shape).py_err(py)?;
                let h = handle.get();
                let core = detach(py, || TensorCore::allocate(h, desc, Some(&bytes), false))?;
                Ok(Self { core: Arc::new(core) })
            }

            /// A zero-filled one.
            #[staticmethod]
            #[pyo3(signature = (handle, shape, dtype = None, format = None))]
            fn zeros(
                py: Python<'_>,
                handle: &Bound<'_, PyHandle>,
                shape: &Bound<'_, PyAny>,
                dtype: Option<&Bound<'_, PyAny>>,
                format: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Self> {
                Self::alloc(py, handle, shape, dtype, format, true)
            }

            /// An uninitialised one (zero-filled on the CPU device).
            #[staticmethod]
            #[pyo3(signature = (handle, shape, dtype = None, format = None))]
            fn empty(
                py: Python<'_>,
                handle: &Bound<'_, PyHandle>,
                shape: &Bound<'_, PyAny>,
                dtype: Option<&Bound<'_, PyAny>>,
                format: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Self> {
                Self::alloc(py, handle, shape, dtype, format, false)
            }

            /// Logical shape.
            #[getter]
            fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
                PyTuple::new(py, self.core.desc.shape())
            }
            /// Number of dimensions.
            #[getter]
            fn ndim(&self) -> usize {
                self.core.desc.shape().len()
            }
            /// Data-type marker.
            #[getter]
            fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, super::markers::PyDType>> {
                dtype_singleton(py, self.core.desc.dtype())
            }
            /// Memory-format marker class.
            #[getter]
            fn format<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyType> {
                format_class(py, self.core.desc.format())
            }
            /// "cpu" or "cuda:N".
            #[getter]
            fn device(&self) -> String {
                self.core.device.to_string()
            }
            /// Bytes of storage.
            #[getter]
            fn nbytes(&self) -> usize {
                self.core.desc.nbytes()
            }
            /// Copies to a NumPy array in logical NCHW(D) order.
            fn to_numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let core = Arc::clone(&self.core);
                let bytes = detach(py, move || core.to_host_bytes())?;
                bytes_to_array(py, &self.core.desc, &bytes)
            }
            /// Wraps an array of another library without copying: anything with
            /// `__dlpack__` (PyTorch, CuPy, JAX, NumPy), with `__cuda_array_interface__`, or
            /// a DLPack capsule. The shape is logical; the format is read from the strides
            /// (contiguous: NCHW, channels-last: NHWC) or checked against `format`. With
            /// `handle`, the array must live on the handle's device and the producer orders
            /// its pending work before the handle's stream.
            #[staticmethod]
            #[pyo3(signature = (obj, format = None, *, handle = None))]
            fn from_dlpack(
                py: Python<'_>,
                obj: &Bound<'_, PyAny>,
                format: Option<&Bound<'_, PyAny>>,
                handle: Option<&Bound<'_, PyHandle>>,
            ) -> PyResult<Self> {
                if obj.is_instance_of::<PyHandle>() {
                    return Err(pyo3::exceptions::PyTypeError::new_err(concat!(
                        "from_dlpack takes the array first and the handle as a keyword: ",
                        $pyname, ".from_dlpack(array, handle=h)"
                    )));
                }
                let format = format.map(extract_format).transpose()?;
                let core = super::interop::import(py, obj, format, handle.map(Bound::get), $role)?;
                Ok(Self { core: Arc::new(core) })
            }

            /// A NumPy array (a copy, in logical order) of a CPU-device operand, for
            /// `np.asarray`; a GPU operand raises a TypeError naming `to_numpy()`.
            #[pyo3(signature = (dtype = None, copy = None))]
            fn __array__<'py>(
                &self,
                py: Python<'py>,
                dtype: Option<&Bound<'py, PyAny>>,
                copy: Option<bool>,
            ) -> PyResult<Bound<'py, PyAny>> {
                if self.core.device != DeviceId::Cpu {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "this {} lives on {}: np.asarray would need a device-to-host copy; call .to_numpy() to copy it to the host, or use the GPU library's from_dlpack (torch.from_dlpack, cupy.from_dlpack) to share it without copying",
                        $pyname, self.core.device
                    )));
                }
                if copy == Some(false) {
                    return Err(pyo3::exceptions::PyValueError::new_err(concat!(
                        "a ", $pyname, " converts to NumPy only by copying (its memory is in the format's physical order); ",
                        "use np.asarray(t) or np.from_dlpack(t) instead of copy=False"
                    )));
                }
                let core = Arc::clone(&self.core);
                let bytes = detach(py, move || core.to_host_bytes())?;
                let arr = bytes_to_array(py, &self.core.desc, &bytes)?;
                match dtype.filter(|d| !d.is_none()) {
                    Some(d) => arr.call_method1("astype", (d,)),
                    None => Ok(arr),
                }
            }

            /// Exports the memory as a DLPack capsule (versioned when `max_version` is at
            /// least (1, 0)); the consumer's `stream` is ordered after our pending work.
            #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
            fn __dlpack__<'py>(
                &self,
                py: Python<'py>,
                stream: Option<&Bound<'py, PyAny>>,
                max_version: Option<&Bound<'py, PyAny>>,
                dl_device: Option<&Bound<'py, PyAny>>,
                copy: Option<bool>,
            ) -> PyResult<Bound<'py, PyCapsule>> {
                super::interop::export_dlpack(py, &self.core, stream, max_version, dl_device, copy)
            }

            /// `(2, ordinal)` for CUDA memory, `(1, 0)` for the CPU device.
            fn __dlpack_device__(&self) -> (i32, i32) {
                super::interop::dlpack_device(&self.core)
            }

            /// The CUDA Array Interface (version 3) of a GPU tensor; CPU tensors have none.
            #[getter(__cuda_array_interface__)]
            fn cuda_array_interface<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                super::interop::cuda_array_interface(py, &self.core)
            }

            /// `Tensor[F32, NCHW, Rank4]` at run time, as for any generic class.
            #[classmethod]
            fn __class_getitem__<'py>(
                cls: &Bound<'py, pyo3::types::PyType>,
                item: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyAny>> {
                cls.py().import("types")?.getattr("GenericAlias")?.call1((cls, item))
            }
            fn __repr__(&self) -> String {
                format!(
                    "cudnn_rs.{}(shape={:?}, dtype={}, format={}, device={})",
                    $pyname,
                    self.core.desc.shape(),
                    self.core.desc.dtype(),
                    self.core.desc.format(),
                    self.core.device
                )
            }
        }

        impl $cls {
            fn alloc(
                py: Python<'_>,
                handle: &Bound<'_, PyHandle>,
                shape: &Bound<'_, PyAny>,
                dtype: Option<&Bound<'_, PyAny>>,
                format: Option<&Bound<'_, PyAny>>,
                zero: bool,
            ) -> PyResult<Self> {
                let dtype = dtype.map(extract_dtype).transpose()?.unwrap_or(DType::F32);
                let format = format.map(extract_format).transpose()?.unwrap_or(Format::Nchw);
                let shape = parse_shape(shape)?;
                if format.data_type(dtype).is_none() {
                    return Err(super::errors::to_py(py, unsupported_format(dtype, format)));
                }
                let desc = RawDescriptor::new($role, dtype, format, &shape).py_err(py)?;
                let h = handle.get();
                let core = detach(py, || TensorCore::allocate(h, desc, None, zero))?;
                Ok(Self { core: Arc::new(core) })
            }
        }
    };
}

tensor_like!(PyTensor, "Tensor", Role::Tensor, "tensor");
tensor_like!(
    PyFilter,
    "Filter",
    Role::Filter,
    "filter (weights, shape K x C/groups x kernel)"
);

#[cfg(test)]
mod tests {
    use super::*;

    fn foreign_host(address: usize, nbytes: usize) -> Storage {
        // Never dereferenced: only the borrow registry looks at the range.
        Storage::Foreign(ForeignMemory::new(
            address,
            nbytes,
            false,
            None,
            ForeignOwner::new(None, None),
        ))
    }

    #[test]
    fn overlapping_borrows_are_refused_when_either_writes() {
        let (a, b, c) = (
            foreign_host(0x10_0000, 64),
            foreign_host(0x10_0020, 64),
            foreign_host(0x20_0000, 8),
        );
        let t = |n: u64| 1_000_000 + n;
        assert!(claim(t(1), &a, false).is_ok());
        assert!(
            claim(t(2), &b, false).is_ok(),
            "two readers may share memory"
        );
        assert!(
            claim(t(3), &b, true).is_err(),
            "a writer may not overlap a reader"
        );
        assert!(claim(t(3), &c, true).is_ok(), "disjoint memory is fine");
        release(t(1));
        assert!(claim(t(4), &b, true).is_err(), "b is still read by t(2)");
        release(t(2));
        assert!(claim(t(4), &b, true).is_ok());
        assert!(
            claim(t(5), &a, false).is_err(),
            "a reader may not overlap a writer"
        );
        release(t(3));
        release(t(4));
        assert!(claim(t(5), &a, false).is_ok());
        release(t(5));
    }
}
