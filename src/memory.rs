//! Memory that tensors live in: cudarc device memory, device memory borrowed from another
//! framework, and host memory for the CPU device.

use std::marker::PhantomData;

use cudarc::driver::{
    sys::CUdeviceptr, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut,
    SyncOnDrop,
};

use crate::error::{Error, Result};

/// Anything that holds a number of `T` elements.
pub trait Elements<T> {
    /// Number of elements.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Device memory cuDNN may read.
///
/// # Safety
/// `device_ptr` must return the address of at least `len()` initialised `T` elements in
/// device memory of the context the stream belongs to, valid until the returned guard is
/// dropped, and must order `stream` after any pending writes to that memory.
pub unsafe trait GpuBuffer<T>: Elements<T> {
    /// The address, and a guard to drop after the work using it has been enqueued.
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>);
}

/// Device memory cuDNN may write.
///
/// # Safety
/// As [`GpuBuffer`], and the memory must be writable and not aliased by any live
/// shared borrow.
pub unsafe trait GpuBufferMut<T>: GpuBuffer<T> {
    /// The address for writing, and a guard to drop after the work has been enqueued.
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>);
}

impl<T> Elements<T> for CudaSlice<T> {
    fn len(&self) -> usize {
        CudaSlice::len(self)
    }
}
impl<T> Elements<T> for CudaView<'_, T> {
    fn len(&self) -> usize {
        CudaView::len(self)
    }
}
impl<T> Elements<T> for CudaViewMut<'_, T> {
    fn len(&self) -> usize {
        CudaViewMut::len(self)
    }
}

// SAFETY: cudarc's `DevicePtr` has exactly this contract (it waits on the slice's write
// event and records a read event when the guard drops).
unsafe impl<T> GpuBuffer<T> for CudaSlice<T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        DevicePtr::device_ptr(self, stream)
    }
}
// SAFETY: as for `CudaSlice`, through cudarc's `DevicePtrMut`.
unsafe impl<T> GpuBufferMut<T> for CudaSlice<T> {
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        DevicePtrMut::device_ptr_mut(self, stream)
    }
}
// SAFETY: as for `CudaSlice`.
unsafe impl<T> GpuBuffer<T> for CudaView<'_, T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        DevicePtr::device_ptr(self, stream)
    }
}
// SAFETY: as for `CudaSlice`.
unsafe impl<T> GpuBuffer<T> for CudaViewMut<'_, T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        DevicePtr::device_ptr(self, stream)
    }
}
// SAFETY: as for `CudaSlice`.
unsafe impl<T> GpuBufferMut<T> for CudaViewMut<'_, T> {
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        DevicePtrMut::device_ptr_mut(self, stream)
    }
}

/// Device memory owned by someone else (PyTorch, CuPy, JAX, ... through DLPack or
/// `__cuda_array_interface__`), borrowed for as long as this value lives. Never freed by
/// us: dropping it drops only `keep_alive`, which is how the owner is kept alive.
pub struct BorrowedDeviceBuffer<T> {
    ptr: CUdeviceptr,
    len: usize,
    keep_alive: Option<Box<dyn Send + Sync>>,
    _marker: PhantomData<*const T>,
}

// SAFETY: the buffer is an address and a length; access is ordered by CUDA streams, and
// `keep_alive` is itself Send + Sync.
unsafe impl<T> Send for BorrowedDeviceBuffer<T> {}
// SAFETY: as above; `&self` only hands out the address.
unsafe impl<T> Sync for BorrowedDeviceBuffer<T> {}

impl<T> BorrowedDeviceBuffer<T> {
    /// Borrows `len` elements at `ptr`.
    ///
    /// # Safety
    /// `ptr` must point to at least `len` elements of `T` in device memory of the
    /// context the buffer will be used with, and stay valid (and not be written by
    /// anyone else while cuDNN runs) for as long as this value lives; `keep_alive` may
    /// hold whatever keeps it so.
    pub unsafe fn new(
        ptr: CUdeviceptr,
        len: usize,
        keep_alive: Option<Box<dyn Send + Sync>>,
    ) -> Result<Self> {
        if ptr == 0 && len > 0 {
            return Err(Error::InvalidArgument("null device pointer".into()));
        }
        let align = std::mem::align_of::<T>() as u64;
        if ptr % align != 0 {
            return Err(Error::Shape(format!(
                "device pointer {ptr:#x} is not aligned to {align} bytes for its element type; copy the data to a fresh (contiguous) tensor first"
            )));
        }
        Ok(Self {
            ptr,
            len,
            keep_alive,
            _marker: PhantomData,
        })
    }

    /// The address.
    pub fn as_raw(&self) -> CUdeviceptr {
        self.ptr
    }

    /// Whether something keeps the owner alive.
    pub fn has_owner(&self) -> bool {
        self.keep_alive.is_some()
    }
}

impl<T> Elements<T> for BorrowedDeviceBuffer<T> {
    fn len(&self) -> usize {
        self.len
    }
}

// SAFETY: `new`'s contract makes the address valid for `len` elements while `self`
// lives; ordering with the owner's work is the caller's (stream) business.
unsafe impl<T> GpuBuffer<T> for BorrowedDeviceBuffer<T> {
    fn device_ptr<'a>(&'a self, _stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, SyncOnDrop::Record(None))
    }
}
// SAFETY: as above; `new`'s contract makes the memory writable and unaliased.
unsafe impl<T> GpuBufferMut<T> for BorrowedDeviceBuffer<T> {
    fn device_ptr_mut<'a>(&'a mut self, _stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, SyncOnDrop::Record(None))
    }
}

impl<T> Elements<T> for Vec<T> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
}
impl<T> Elements<T> for &[T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
}
impl<T> Elements<T> for &mut [T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
}

/// Host memory the CPU device reads.
pub trait HostBuffer<T>: Elements<T> {
    fn as_host_slice(&self) -> &[T];
}
/// Host memory the CPU device writes.
pub trait HostBufferMut<T>: HostBuffer<T> {
    fn as_host_slice_mut(&mut self) -> &mut [T];
}

impl<T> HostBuffer<T> for Vec<T> {
    fn as_host_slice(&self) -> &[T] {
        self
    }
}
impl<T> HostBufferMut<T> for Vec<T> {
    fn as_host_slice_mut(&mut self) -> &mut [T] {
        self
    }
}
impl<T> HostBuffer<T> for &[T] {
    fn as_host_slice(&self) -> &[T] {
        self
    }
}
impl<T> HostBuffer<T> for &mut [T] {
    fn as_host_slice(&self) -> &[T] {
        self
    }
}
impl<T> HostBufferMut<T> for &mut [T] {
    fn as_host_slice_mut(&mut self) -> &mut [T] {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_buffers_check_alignment_and_null() {
        // SAFETY: the buffers are never dereferenced in this test.
        unsafe {
            assert!(BorrowedDeviceBuffer::<f32>::new(0x1002, 4, None).is_err());
            assert!(BorrowedDeviceBuffer::<f32>::new(0, 4, None).is_err());
            let b = BorrowedDeviceBuffer::<f32>::new(0x1000, 4, None).unwrap();
            assert_eq!(
                (b.as_raw(), Elements::len(&b), b.has_owner()),
                (0x1000, 4, false)
            );
        }
    }
}
