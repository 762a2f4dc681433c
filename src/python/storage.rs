//! The memory behind a `Tensor` or `Filter` (`TensorCore`, `Storage`), and the borrow
//! registry that keeps calls from reading memory they also write.

use std::cell::Cell;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use cudarc::driver::{
    sys::CUdeviceptr, CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop,
};
use pyo3::prelude::*;

use super::device::{DeviceId, PyHandle};
use super::dlpack::{self, ManagedTensor};
use super::streams::{order_after, same_stream, wrap_stream, StreamMark};
use crate::context::alloc_bytes;
use crate::error::{Error, Result};
use crate::tensor::RawDescriptor;

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
    /// The stream (raw `CUstream`) the producer orders its use of the memory on, where
    /// the import knows it: work of ours on that very stream is ordered before any reuse,
    /// so releasing the memory needs no wait.
    producer_stream: Option<usize>,
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
            producer_stream: None,
            _owner: owner,
        }
    }

    /// Records the stream the producer orders its use of the memory on.
    pub(crate) fn set_producer_stream(&mut self, stream: usize) {
        self.producer_stream = Some(stream);
    }

    /// Fresh zeroed memory of the same kind, for trial runs.
    pub(crate) fn blank(&self, nbytes: usize) -> Result<Storage> {
        match &self.ctx {
            None => Ok(Storage::Host(host_words(nbytes.div_ceil(8))?)),
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
                // runs, to work on any of its streams: ours must be finished first,
                // unless our last use was on the stream the producer works on (its
                // reuse then queues behind our work).
                let ours = mark.stream.cu_stream() as usize;
                if f.producer_stream != Some(ours) {
                    crate::counters::bump(crate::counters::Count::ReleaseWait);
                    let _ = mark.stream.synchronize();
                }
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

    /// Marks the tensor as last used on `stream` (for an import whose producer's work
    /// is pending there): its next use on another stream is ordered after it.
    pub(crate) fn used_on(&self, stream: &Arc<CudaStream>) -> Result<()> {
        self.use_on(stream)
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
                let mut words = host_words(nbytes.div_ceil(8))?;
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

/// `words` zeroed words of host memory (the CPU device's), or an out-of-memory error
/// where the host cannot hold them (`vec![0; n]` would end the process). Zeroed by the
/// allocator, as `vec![0; n]` is (large blocks come as fresh zero pages, not written).
pub(crate) fn host_words(words: usize) -> Result<Vec<u64>> {
    bytemuck::allocation::try_zeroed_vec(words).map_err(|()| Error::OutOfMemory {
        requested_bytes: words.saturating_mul(8),
        detail: "host memory of the CPU device".to_string(),
    })
}

impl TensorCore {
    /// A tensor of the same description and device, for trial runs.
    pub(crate) fn scratch_like(other: &TensorCore) -> Result<TensorCore> {
        let desc = crate::tensor::RawDescriptor::new(
            crate::tensor::Role::Tensor,
            other.desc.dtype(),
            other.desc.format(),
            other.desc.shape(),
        )?;
        let storage = match &*other.read() {
            Storage::Host(w) => Storage::Host(host_words(w.len())?),
            Storage::Device(s) => Storage::Device(alloc_bytes(s.stream(), other.desc.nbytes())?),
            Storage::Foreign(f) => f.blank(other.desc.nbytes())?,
        };
        Ok(TensorCore::from_parts(desc, other.device, storage))
    }
}

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
