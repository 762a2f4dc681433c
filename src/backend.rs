//! cuDNN's backend (graph API) descriptors: one owned object per descriptor, destroyed on
//! drop, with checked attribute setters and getters. Operation-independent: the
//! backward-data graph (`bwd_data::graph`) is built from these, and so would another
//! operation's.

use std::ffi::c_void;

use cudarc::cudnn::sys::{
    cudnnBackendAttributeName_t as Attr, cudnnBackendAttributeType_t as Ty,
    cudnnBackendDescriptorType_t as Kind,
};

use crate::error::{CudnnError, Error, Result};
use crate::library::CudnnLibrary;
use crate::sys::BackendDesc;

/// One graph-API descriptor, destroyed on drop.
pub(crate) struct Desc {
    pub(crate) ptr: BackendDesc,
    lib: &'static CudnnLibrary,
}

// SAFETY: a backend descriptor is a host-side object; the context that owns it uses it
// from one thread at a time (`CudnnContext` is `Send`, not `Sync`).
unsafe impl Send for Desc {}

impl Drop for Desc {
    fn drop(&mut self) {
        // SAFETY: `ptr` was created by cudnnBackendCreateDescriptor of this library and is
        // destroyed exactly once, here.
        unsafe { (self.lib.api.cudnnBackendDestroyDescriptor)(self.ptr) };
    }
}

pub(crate) fn status(code: u32, what: impl FnOnce() -> String) -> Result<()> {
    match CudnnError::from_code(code) {
        None => Ok(()),
        Some(e) => Err(Error::cudnn(e, what())),
    }
}

impl Desc {
    pub(crate) fn new(lib: &'static CudnnLibrary, kind: Kind) -> Result<Self> {
        let mut ptr: BackendDesc = std::ptr::null_mut();
        // SAFETY: cuDNN writes one descriptor pointer.
        let code = unsafe { (lib.api.cudnnBackendCreateDescriptor)(kind as u32, &raw mut ptr) };
        status(code, || format!("creating a graph-API {kind:?}"))?;
        Ok(Self { ptr, lib })
    }

    /// Sets attribute `name` to `values`, `count` elements of cuDNN type `ty`.
    ///
    /// # Safety
    /// `values` must point to `count` elements of the C type cuDNN reads for `ty`.
    pub(crate) unsafe fn set_raw(
        &self,
        name: Attr,
        ty: Ty,
        count: usize,
        values: *const c_void,
    ) -> Result<()> {
        // SAFETY: the descriptor is live; the caller vouches for the element type.
        let code = unsafe {
            (self.lib.api.cudnnBackendSetAttribute)(
                self.ptr,
                name as u32,
                ty as u32,
                i64::try_from(count).unwrap_or(i64::MAX),
                values,
            )
        };
        status(code, || format!("setting {name:?}"))
    }

    pub(crate) fn set_i64s(&self, name: Attr, values: &[i64]) -> Result<()> {
        // SAFETY: `values` holds `values.len()` int64_t.
        unsafe {
            self.set_raw(
                name,
                Ty::CUDNN_TYPE_INT64,
                values.len(),
                values.as_ptr().cast(),
            )
        }
    }

    /// An attribute whose C type is a 32-bit enum (data type, mode, knob type, ...).
    pub(crate) fn set_enum(&self, name: Attr, ty: Ty, value: u32) -> Result<()> {
        // SAFETY: cuDNN's enums are 32-bit; one element.
        unsafe { self.set_raw(name, ty, 1, (&raw const value).cast()) }
    }

    pub(crate) fn set_descs(&self, name: Attr, descs: &[&Desc]) -> Result<()> {
        let ptrs: Vec<BackendDesc> = descs.iter().map(|d| d.ptr).collect();
        // SAFETY: `ptrs` holds live descriptors, as many as passed.
        unsafe {
            self.set_raw(
                name,
                Ty::CUDNN_TYPE_BACKEND_DESCRIPTOR,
                ptrs.len(),
                ptrs.as_ptr().cast(),
            )
        }
    }

    pub(crate) fn finalize(&self, what: impl FnOnce() -> String) -> Result<()> {
        // SAFETY: the descriptor is live.
        let code = unsafe { (self.lib.api.cudnnBackendFinalize)(self.ptr) };
        status(code, what)
    }

    /// Reads up to `out.len()` elements of attribute `name`; returns how many there are.
    ///
    /// # Safety
    /// `out` must be `out.len()` elements of the C type cuDNN writes for `ty`.
    pub(crate) unsafe fn get_raw<T>(&self, name: Attr, ty: Ty, out: &mut [T]) -> Result<usize> {
        let mut count = 0i64;
        // SAFETY: the descriptor is live; `out` has room for the requested elements.
        let code = unsafe {
            (self.lib.api.cudnnBackendGetAttribute)(
                self.ptr,
                name as u32,
                ty as u32,
                i64::try_from(out.len()).unwrap_or(i64::MAX),
                &raw mut count,
                out.as_mut_ptr().cast(),
            )
        };
        status(code, || format!("reading {name:?}"))?;
        Ok(usize::try_from(count).unwrap_or(0).min(out.len()))
    }

    pub(crate) fn get_i64(&self, name: Attr) -> Result<i64> {
        let mut v = [0i64];
        // SAFETY: one int64_t.
        unsafe { self.get_raw(name, Ty::CUDNN_TYPE_INT64, &mut v) }?;
        Ok(v[0])
    }

    /// A scalar enum attribute (cuDNN refuses a request for more than one element of
    /// a scalar attribute).
    pub(crate) fn get_enum(&self, name: Attr, ty: Ty) -> Result<u32> {
        let mut v = [0u32];
        // SAFETY: one 32-bit enum element.
        unsafe { self.get_raw(name, ty, &mut v) }?;
        Ok(v[0])
    }

    pub(crate) fn get_enums(&self, name: Attr, ty: Ty) -> Result<Vec<u32>> {
        let mut v = [0u32; 32];
        // SAFETY: 32-bit enum elements.
        let n = unsafe { self.get_raw(name, ty, &mut v) }?;
        Ok(v[..n].to_vec())
    }

    /// Fills `out` (created, not finalized descriptors of the right kind) from a
    /// descriptor-array attribute; returns how many cuDNN filled.
    pub(crate) fn get_descs(&self, name: Attr, out: &[Desc]) -> Result<usize> {
        let mut ptrs: Vec<BackendDesc> = out.iter().map(|d| d.ptr).collect();
        // SAFETY: `ptrs` holds live descriptors for cuDNN to fill.
        unsafe { self.get_raw(name, Ty::CUDNN_TYPE_BACKEND_DESCRIPTOR, &mut ptrs) }
    }

    /// How many elements a descriptor-array attribute has.
    pub(crate) fn count_descs(&self, name: Attr) -> Result<usize> {
        let mut count = 0i64;
        // SAFETY: zero elements requested; cuDNN only writes the count.
        let code = unsafe {
            (self.lib.api.cudnnBackendGetAttribute)(
                self.ptr,
                name as u32,
                Ty::CUDNN_TYPE_BACKEND_DESCRIPTOR as u32,
                0,
                &raw mut count,
                std::ptr::null_mut(),
            )
        };
        status(code, || format!("counting {name:?}"))?;
        Ok(usize::try_from(count).unwrap_or(0))
    }
}
