//! A cuDNN descriptor created on first GPU use and destroyed on drop.
//!
//! Descriptors in this crate are plain Rust values (shape, type, format) so that they can
//! be built, checked and used on the CPU device without cuDNN; the cuDNN object behind
//! them is made once, the first time a GPU call needs it, and reused by every later call.

use std::ffi::c_void;
use std::sync::OnceLock;

use crate::error::{CudnnError, Error, Result};
use crate::library::{cudnn, CudnnLibrary};

/// Which cuDNN descriptor type a handle is, so the right destroy function runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Tensor,
    Filter,
    Convolution,
}

struct Handle {
    ptr: *mut c_void,
    kind: Kind,
    lib: &'static CudnnLibrary,
}

// SAFETY: a cuDNN descriptor is a host-side parameter block; once set it is only read
// (by cuDNN calls), and cuDNN allows reading one from any thread.
unsafe impl Send for Handle {}
// SAFETY: as above: after creation nothing writes to the descriptor.
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        let api = &self.lib.api;
        // SAFETY: `ptr` was created by the matching create function of this library and
        // is destroyed exactly once, here.
        unsafe {
            match self.kind {
                Kind::Tensor => (api.cudnnDestroyTensorDescriptor)(self.ptr),
                Kind::Filter => (api.cudnnDestroyFilterDescriptor)(self.ptr),
                Kind::Convolution => (api.cudnnDestroyConvolutionDescriptor)(self.ptr),
            };
        }
    }
}

/// Lazily created cuDNN descriptor.
#[derive(Default)]
pub(crate) struct LazyDescriptor {
    cell: OnceLock<Handle>,
}

impl std::fmt::Debug for LazyDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.cell.get().is_some() {
            "LazyDescriptor(created)"
        } else {
            "LazyDescriptor(not yet created)"
        })
    }
}

pub(crate) fn check(status: u32, what: &str) -> Result<()> {
    match CudnnError::from_code(status) {
        None => Ok(()),
        Some(e) => Err(Error::cudnn(e, what.to_string())),
    }
}

impl LazyDescriptor {
    /// The raw descriptor, creating and filling it with `set` on first use.
    pub(crate) fn get(
        &self,
        kind: Kind,
        set: impl FnOnce(&CudnnLibrary, *mut c_void) -> Result<()>,
    ) -> Result<*mut c_void> {
        if let Some(h) = self.cell.get() {
            return Ok(h.ptr);
        }
        let lib = cudnn()?;
        let api = &lib.api;
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: each create function writes one descriptor pointer to `ptr`.
        let status = unsafe {
            match kind {
                Kind::Tensor => (api.cudnnCreateTensorDescriptor)(&raw mut ptr),
                Kind::Filter => (api.cudnnCreateFilterDescriptor)(&raw mut ptr),
                Kind::Convolution => (api.cudnnCreateConvolutionDescriptor)(&raw mut ptr),
            }
        };
        check(status, "creating a descriptor")?;
        // Dropping `handle` on error destroys the half-made descriptor.
        let handle = Handle { ptr, kind, lib };
        set(lib, ptr)?;
        // Another thread may have won the race; then ours is dropped (destroyed) here.
        let _ = self.cell.set(handle);
        self.cell
            .get()
            .map(|h| h.ptr)
            .ok_or_else(|| Error::Cuda("descriptor cache lost".into()))
    }
}
