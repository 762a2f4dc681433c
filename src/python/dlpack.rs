//! The DLPack ABI (dlpack.h, 0.8 and 1.x) and its Python capsule protocol: reading a
//! capsule someone else produced (taking ownership of its managed tensor) and producing
//! capsules of our own. Every field a producer hands us is checked before use.
//!
//! Structs mirror dlpack.h exactly (`#[repr(C)]`); no DLPack crate is needed.

use std::ffi::{c_void, CStr};
use std::ptr::NonNull;

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

use crate::data_type::DType;
use crate::error::{Error, Result, UnsupportedConfiguration};

/// `DLDeviceType::kDLCPU`.
pub(crate) const KDL_CPU: i32 = 1;
/// `DLDeviceType::kDLCUDA`.
pub(crate) const KDL_CUDA: i32 = 2;

/// `DLDataTypeCode` values we map to cuDNN types.
const KDL_INT: u8 = 0;
const KDL_UINT: u8 = 1;
const KDL_FLOAT: u8 = 2;
const KDL_BFLOAT: u8 = 4;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`.
pub(crate) const FLAG_READ_ONLY: u64 = 1;

/// The DLPack version our versioned capsules carry, and the newest major we read.
pub(crate) const VERSION: (u32, u32) = (1, 0);

pub(crate) const NAME_LEGACY: &CStr = c"dltensor";
pub(crate) const NAME_LEGACY_USED: &CStr = c"used_dltensor";
pub(crate) const NAME_VERSIONED: &CStr = c"dltensor_versioned";
pub(crate) const NAME_VERSIONED_USED: &CStr = c"used_dltensor_versioned";

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DLDevice {
    /// A `DLDeviceType` (a C enum: `int`).
    pub device_type: i32,
    pub device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
pub(crate) struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    /// In elements; null means compact row-major.
    pub strides: *mut i64,
    pub byte_offset: u64,
}

#[repr(C)]
pub(crate) struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

#[repr(C)]
pub(crate) struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

/// The DLPack type of `dtype`.
pub(crate) fn dl_dtype(dtype: DType) -> DLDataType {
    let (code, bits) = match dtype {
        DType::F32 => (KDL_FLOAT, 32),
        DType::F64 => (KDL_FLOAT, 64),
        DType::F16 => (KDL_FLOAT, 16),
        DType::BF16 => (KDL_BFLOAT, 16),
        DType::I8 => (KDL_INT, 8),
        DType::U8 => (KDL_UINT, 8),
        DType::I32 => (KDL_INT, 32),
        DType::I64 => (KDL_INT, 64),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

/// Our element type for a DLPack type, or an `UnsupportedConfiguration` naming the ones
/// we take.
pub(crate) fn dtype_from_dl(t: DLDataType) -> Result<DType> {
    let found = DType::ALL.into_iter().find(|&d| dl_dtype(d) == t);
    found.ok_or_else(|| {
        let code = match t.code {
            KDL_INT => "int".to_string(),
            KDL_UINT => "uint".to_string(),
            KDL_FLOAT => "float".to_string(),
            KDL_BFLOAT => "bfloat".to_string(),
            other => format!("type code {other}"),
        };
        let lanes = if t.lanes == 1 {
            String::new()
        } else {
            format!(" x {} lanes", t.lanes)
        };
        Error::Unsupported(UnsupportedConfiguration {
            requested: format!("DLPack tensor of {code}{}{lanes}", t.bits),
            nearest: vec![
                "float32, float64, float16, bfloat16, int8, uint8, int32, int64 (one lane)".into(),
            ],
        })
    })
}

/// What a producer's `DLTensor` says, checked: nothing here has been dereferenced
/// beyond the struct, its shape and its strides.
#[derive(Debug, Clone)]
pub(crate) struct DlView {
    /// `data + byte_offset`.
    pub address: usize,
    pub device: DLDevice,
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// In elements; `None` for compact row-major.
    pub strides: Option<Vec<i64>>,
    pub read_only: bool,
}

/// Reads and checks a `DLTensor`.
///
/// # Safety
/// `t` must be a `DLTensor` whose `shape` (and `strides`, unless null) point to `ndim`
/// readable `int64_t` each, as the DLPack contract of the producer promises for a
/// managed tensor it handed out and has not deleted.
unsafe fn read_tensor(t: &DLTensor, read_only: bool) -> Result<DlView> {
    if !(3..=8).contains(&t.ndim) {
        return Err(Error::Shape(format!(
            "a tensor needs 3 to 8 dimensions, got a {}-d DLPack tensor",
            t.ndim
        )));
    }
    let ndim = t.ndim as usize;
    if t.shape.is_null() {
        return Err(Error::Shape("the DLPack tensor has no shape array".into()));
    }
    // SAFETY: non-null, and by the caller's contract points to `ndim` int64_t.
    let raw_shape = unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec();
    let shape = raw_shape
        .iter()
        .map(|&d| usize::try_from(d).ok().filter(|&d| d > 0))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| {
            Error::Shape(format!(
                "every dimension must be positive, got a DLPack tensor of shape {raw_shape:?}"
            ))
        })?;
    let strides = if t.strides.is_null() {
        None
    } else {
        // SAFETY: non-null, and by the caller's contract points to `ndim` int64_t.
        Some(unsafe { std::slice::from_raw_parts(t.strides, ndim) }.to_vec())
    };
    let dtype = dtype_from_dl(t.dtype)?;
    let data = t.data as usize;
    if data == 0 {
        return Err(Error::Shape(format!(
            "the DLPack tensor of shape {shape:?} has a null data pointer"
        )));
    }
    let address = usize::try_from(t.byte_offset)
        .ok()
        .and_then(|off| data.checked_add(off))
        .ok_or_else(|| {
            Error::Shape(format!(
                "the DLPack tensor's byte_offset {} overflows its data pointer {data:#x}",
                t.byte_offset
            ))
        })?;
    Ok(DlView {
        address,
        device: t.device,
        dtype,
        shape,
        strides,
        read_only,
    })
}

/// A managed tensor taken from a consumed capsule: ours until dropped, when its deleter
/// runs (exactly once).
pub(crate) enum ManagedTensor {
    Legacy(NonNull<DLManagedTensor>),
    Versioned(NonNull<DLManagedTensorVersioned>),
}

// SAFETY: a managed tensor is an address plus a deleter; DLPack lets the consumer call
// the deleter from any thread (we hold the GIL when we do, see `ForeignOwner`), and we
// never touch the producer's struct from two threads at once (it is read once, on
// import, then only deleted).
unsafe impl Send for ManagedTensor {}
// SAFETY: `&ManagedTensor` gives access to nothing (only `view`, a read of immutable
// fields the producer does not change while the tensor is shared).
unsafe impl Sync for ManagedTensor {}

impl ManagedTensor {
    /// The checked view of the tensor.
    pub(crate) fn view(&self) -> Result<DlView> {
        match self {
            // SAFETY: we own the managed tensor (the capsule was renamed "used_..."),
            // so it is live until our deleter call; its DLTensor follows the contract.
            ManagedTensor::Legacy(p) => unsafe { read_tensor(&p.as_ref().dl_tensor, false) },
            // SAFETY: as above.
            ManagedTensor::Versioned(p) => unsafe {
                let m = p.as_ref();
                read_tensor(&m.dl_tensor, m.flags & FLAG_READ_ONLY != 0)
            },
        }
    }
}

impl Drop for ManagedTensor {
    fn drop(&mut self) {
        match *self {
            // SAFETY: we own the managed tensor; the deleter is called once, here, with
            // the pointer the producer gave (DLPack: the consumer calls it when done).
            ManagedTensor::Legacy(p) => unsafe {
                if let Some(deleter) = p.as_ref().deleter {
                    deleter(p.as_ptr());
                }
            },
            // SAFETY: as above.
            ManagedTensor::Versioned(p) => unsafe {
                if let Some(deleter) = p.as_ref().deleter {
                    deleter(p.as_ptr());
                }
            },
        }
    }
}

/// Takes the managed tensor out of a DLPack capsule, renaming the capsule to
/// `used_dltensor(_versioned)` as the protocol asks, so that its destructor leaves
/// the tensor to us. A capsule of an unknown major version is left untouched (its own
/// destructor frees it).
pub(crate) fn take_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<ManagedTensor> {
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(format!(
            "__dlpack__() returned a {}, not a DLPack capsule",
            capsule
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    if capsule.is_valid_checked(Some(NAME_VERSIONED)) {
        let ptr = capsule
            .pointer_checked(Some(NAME_VERSIONED))?
            .cast::<DLManagedTensorVersioned>();
        // SAFETY: a "dltensor_versioned" capsule holds a live DLManagedTensorVersioned;
        // the version field is first and stable across DLPack majors.
        let version = unsafe { ptr.as_ref().version };
        if version.major != VERSION.0 {
            return Err(PyBufferError::new_err(format!(
                "DLPack {}.{} is not supported (cudnn_rs reads DLPack 1.x)",
                version.major, version.minor
            )));
        }
        rename(capsule, NAME_VERSIONED_USED)?;
        return Ok(ManagedTensor::Versioned(ptr));
    }
    if capsule.is_valid_checked(Some(NAME_LEGACY)) {
        let ptr = capsule
            .pointer_checked(Some(NAME_LEGACY))?
            .cast::<DLManagedTensor>();
        rename(capsule, NAME_LEGACY_USED)?;
        return Ok(ManagedTensor::Legacy(ptr));
    }
    let name = capsule
        .name()
        .ok()
        .flatten()
        // SAFETY: the name of a live capsule is a NUL-terminated string it keeps alive.
        .map(|n| unsafe { n.as_cstr() }.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.starts_with("used_") {
        return Err(PyBufferError::new_err(
            "this DLPack capsule was consumed already; call __dlpack__() again for a fresh one",
        ));
    }
    Err(PyTypeError::new_err(format!(
        "not a DLPack capsule (its name is {name:?}, not \"dltensor\" or \"dltensor_versioned\")"
    )))
}

fn rename(capsule: &Bound<'_, PyCapsule>, name: &'static CStr) -> PyResult<()> {
    // SAFETY: `capsule` is a live capsule and `name` a static NUL-terminated string
    // (a capsule keeps a pointer to its name).
    let status = unsafe { ffi::PyCapsule_SetName(capsule.as_ptr(), name.as_ptr()) };
    if status == 0 {
        Ok(())
    } else {
        Err(PyErr::fetch(capsule.py()))
    }
}

/// Runs `f` with any pending Python exception set aside (capsule destructors and drops
/// of foreign memory may run while one is being raised, and may call into Python).
pub(crate) fn with_exception_saved<R>(_py: Python<'_>, f: impl FnOnce() -> R) -> R {
    let (mut ty, mut value, mut tb) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    // SAFETY: we are attached to the interpreter (`_py`); Fetch moves the error
    // indicator (possibly empty) into our three references, Restore moves it back.
    #[allow(deprecated)]
    unsafe {
        ffi::PyErr_Fetch(&raw mut ty, &raw mut value, &raw mut tb);
    }
    let out = f();
    // SAFETY: as above; Restore steals the references Fetch gave us.
    #[allow(deprecated)]
    unsafe {
        ffi::PyErr_Restore(ty, value, tb);
    }
    out
}

// ---------------------------------------------------------------- export

/// What an exported tensor owns: the managed struct first (so its address is the
/// allocation's), the shape and strides it points to, and whatever keeps the memory
/// alive until the consumer calls the deleter.
#[repr(C)]
struct Exported<M, K> {
    managed: M,
    shape: Vec<i64>,
    strides: Vec<i64>,
    keep_alive: K,
}

/// A tensor description to export.
pub(crate) struct ExportSpec {
    pub address: usize,
    pub device: DLDevice,
    pub dtype: DType,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    pub read_only: bool,
}

fn dl_tensor(spec: &ExportSpec) -> DLTensor {
    DLTensor {
        data: spec.address as *mut c_void,
        device: spec.device,
        ndim: spec.shape.len() as i32,
        dtype: dl_dtype(spec.dtype),
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    }
}

unsafe extern "C" fn delete_exported_legacy<K>(managed: *mut DLManagedTensor) {
    if managed.is_null() {
        return;
    }
    // SAFETY: `managed` is the first field of the `Exported` that `export_capsule`
    // leaked with `Box::into_raw`; the protocol calls the deleter once.
    let boxed = unsafe { Box::from_raw(managed.cast::<Exported<DLManagedTensor, K>>()) };
    // A panic must not unwind into C; dropping our values does not panic, but be sure.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(boxed)));
}

unsafe extern "C" fn delete_exported_versioned<K>(managed: *mut DLManagedTensorVersioned) {
    if managed.is_null() {
        return;
    }
    // SAFETY: as for `delete_exported_legacy`.
    let boxed = unsafe { Box::from_raw(managed.cast::<Exported<DLManagedTensorVersioned, K>>()) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(boxed)));
}

/// Destructor of a legacy capsule: when nobody consumed it (its name is still
/// "dltensor"), the managed tensor is deleted here.
unsafe extern "C" fn legacy_capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: Python calls a capsule destructor with the GIL held and the capsule live;
    // IsValid/GetPointer only read it (IsValid sets no error). A "dltensor" capsule
    // still owns its managed tensor, whose deleter we call once.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, NAME_LEGACY.as_ptr()) != 1 {
            return;
        }
        let managed =
            ffi::PyCapsule_GetPointer(capsule, NAME_LEGACY.as_ptr()).cast::<DLManagedTensor>();
        if let Some(deleter) = managed.as_ref().and_then(|m| m.deleter) {
            let py = Python::assume_attached();
            with_exception_saved(py, || deleter(managed));
        }
    }
}

/// Destructor of a versioned capsule (see `legacy_capsule_destructor`).
unsafe extern "C" fn versioned_capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: as in `legacy_capsule_destructor`, for "dltensor_versioned".
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, NAME_VERSIONED.as_ptr()) != 1 {
            return;
        }
        let managed = ffi::PyCapsule_GetPointer(capsule, NAME_VERSIONED.as_ptr())
            .cast::<DLManagedTensorVersioned>();
        if let Some(deleter) = managed.as_ref().and_then(|m| m.deleter) {
            let py = Python::assume_attached();
            with_exception_saved(py, || deleter(managed));
        }
    }
}

/// A DLPack capsule for `spec` (versioned when `versioned`), whose deleter drops
/// `keep_alive`: the memory must stay valid while `keep_alive` lives.
pub(crate) fn export_capsule<K: Send + 'static>(
    py: Python<'_>,
    spec: ExportSpec,
    versioned: bool,
    keep_alive: K,
) -> PyResult<Bound<'_, PyCapsule>> {
    let tensor = dl_tensor(&spec);
    let (shape, strides) = (spec.shape, spec.strides);
    if versioned {
        let raw = Box::into_raw(Box::new(Exported {
            managed: DLManagedTensorVersioned {
                version: DLPackVersion {
                    major: VERSION.0,
                    minor: VERSION.1,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_exported_versioned::<K>),
                flags: if spec.read_only { FLAG_READ_ONLY } else { 0 },
                dl_tensor: tensor,
            },
            shape,
            strides,
            keep_alive,
        }));
        // SAFETY: `raw` is a fresh, exclusive allocation; the shape and strides vectors
        // are never resized, so the pointers stay valid until the deleter frees them.
        let ptr = unsafe {
            let e = &mut *raw;
            e.managed.manager_ctx = raw.cast();
            e.managed.dl_tensor.shape = e.shape.as_mut_ptr();
            e.managed.dl_tensor.strides = e.strides.as_mut_ptr();
            NonNull::new_unchecked(raw.cast::<c_void>())
        };
        // SAFETY: the pointer is a DLManagedTensorVersioned (first field of `Exported`)
        // and the destructor deletes it only while the capsule is unconsumed.
        let made = unsafe {
            PyCapsule::new_with_pointer_and_destructor(
                py,
                ptr,
                NAME_VERSIONED,
                Some(versioned_capsule_destructor),
            )
        };
        if made.is_err() {
            // SAFETY: no capsule took the allocation; free it once, here.
            unsafe { delete_exported_versioned::<K>(raw.cast()) };
        }
        made
    } else {
        let raw = Box::into_raw(Box::new(Exported {
            managed: DLManagedTensor {
                dl_tensor: tensor,
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_exported_legacy::<K>),
            },
            shape,
            strides,
            keep_alive,
        }));
        // SAFETY: as in the versioned branch.
        let ptr = unsafe {
            let e = &mut *raw;
            e.managed.manager_ctx = raw.cast();
            e.managed.dl_tensor.shape = e.shape.as_mut_ptr();
            e.managed.dl_tensor.strides = e.strides.as_mut_ptr();
            NonNull::new_unchecked(raw.cast::<c_void>())
        };
        // SAFETY: as in the versioned branch, for a DLManagedTensor.
        let made = unsafe {
            PyCapsule::new_with_pointer_and_destructor(
                py,
                ptr,
                NAME_LEGACY,
                Some(legacy_capsule_destructor),
            )
        };
        if made.is_err() {
            // SAFETY: no capsule took the allocation; free it once, here.
            unsafe { delete_exported_legacy::<K>(raw.cast()) };
        }
        made
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_dlpack_h() {
        // x86-64 / aarch64 sizes and offsets of dlpack.h 1.x.
        assert_eq!(std::mem::size_of::<DLDevice>(), 8);
        assert_eq!(std::mem::size_of::<DLDataType>(), 4);
        assert_eq!(std::mem::size_of::<DLTensor>(), 48);
        assert_eq!(std::mem::offset_of!(DLTensor, ndim), 16);
        assert_eq!(std::mem::offset_of!(DLTensor, shape), 24);
        assert_eq!(std::mem::offset_of!(DLTensor, byte_offset), 40);
        assert_eq!(std::mem::size_of::<DLManagedTensor>(), 64);
        assert_eq!(std::mem::offset_of!(DLManagedTensorVersioned, flags), 24);
        assert_eq!(
            std::mem::offset_of!(DLManagedTensorVersioned, dl_tensor),
            32
        );
    }

    #[test]
    fn dtypes_round_trip() {
        for d in DType::ALL {
            assert_eq!(dtype_from_dl(dl_dtype(d)).ok(), Some(d));
        }
        let two_lanes = DLDataType {
            code: KDL_FLOAT,
            bits: 32,
            lanes: 2,
        };
        assert!(matches!(
            dtype_from_dl(two_lanes),
            Err(Error::Unsupported(_))
        ));
    }
}
