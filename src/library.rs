//! Finding and loading the CUDA driver and cuDNN without ever panicking.
//!
//! cuDNN is searched, in this order:
//! 1. `CUDNN_RS_CUDNN_PATH`: a library file, or a directory holding `libcudnn.so.9` or
//!    `libcudnn.so`. When it is set, nothing else is tried: an explicit path that does not
//!    load is an error, not a silent fallback.
//! 2. A cuDNN already loaded in this process (e.g. by PyTorch), so that one process never
//!    holds two copies.
//! 3. Directories registered with [`add_cudnn_search_dir`] (the Python package registers
//!    the `nvidia-cudnn-cu13` / `-cu12` wheels' `lib` folders).
//! 4. The system loader: `libcudnn.so.9`, then `libcudnn.so`.
//!
//! The CUDA driver is loaded by cudarc, whose loader panics when it finds nothing; we try
//! the same candidate names first and only let cudarc near the driver once one loads and
//! reports, through `cuDriverGetVersion`, at least [`MIN_DRIVER_CUDA_VERSION`]. Which
//! libcuda is used is the system loader's choice (`LD_LIBRARY_PATH`, then the loader
//! cache): cudarc opens the driver by name itself, so a path of our own would check one
//! library while cudarc used another.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::sys::CudnnApi;

/// Environment variable naming a cuDNN library file or directory.
pub const CUDNN_PATH_ENV: &str = "CUDNN_RS_CUDNN_PATH";

const SONAMES: [&str; 2] = ["libcudnn.so.9", "libcudnn.so"];

/// A loaded cuDNN: its symbol table, where it came from and its version.
pub struct CudnnLibrary {
    pub api: CudnnApi,
    /// Where it was found (a path, or the name the loader resolved).
    pub origin: String,
    /// `cudnnGetVersion()`: major * 10000 + minor * 100 + patch for cuDNN 9.
    pub version: usize,
    _lib: libloading::Library,
}

impl CudnnLibrary {
    /// (major, minor, patch).
    pub fn version_tuple(&self) -> (usize, usize, usize) {
        split_version(self.version)
    }
}

/// Splits cuDNN's packed version number (cuDNN 9: `major*10000 + minor*100 + patch`;
/// cuDNN 8: `major*1000 + minor*100 + patch`).
pub fn split_version(v: usize) -> (usize, usize, usize) {
    if v >= 90000 {
        (v / 10000, (v % 10000) / 100, v % 100)
    } else {
        (v / 1000, (v % 1000) / 100, v % 100)
    }
}

/// The cuDNN major version this crate is written against.
pub const BOUND_CUDNN_VERSION: (usize, usize, usize) = (9, 2, 1);

static CUDNN: OnceLock<&'static CudnnLibrary> = OnceLock::new();
static SEARCH_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static LOAD_LOCK: Mutex<()> = Mutex::new(());

/// Adds a directory to search for cuDNN (step 3 above). Has no effect once cuDNN is
/// loaded.
pub fn add_cudnn_search_dir(dir: impl Into<PathBuf>) {
    let dir = dir.into();
    if let Ok(mut dirs) = SEARCH_DIRS.lock() {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
}

/// The loaded cuDNN, loading it on first use. A failed search is not cached, so that a
/// caller can fix the environment and try again.
pub fn cudnn() -> Result<&'static CudnnLibrary> {
    if let Some(lib) = CUDNN.get() {
        return Ok(lib);
    }
    let _guard = LOAD_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(lib) = CUDNN.get() {
        return Ok(lib);
    }
    let lib: &'static CudnnLibrary = Box::leak(Box::new(search_cudnn()?));
    Ok(CUDNN.get_or_init(|| lib))
}

/// Whether cuDNN is loaded already (without trying to load it).
pub fn cudnn_loaded() -> Option<&'static CudnnLibrary> {
    CUDNN.get().copied()
}

fn search_cudnn() -> Result<CudnnLibrary> {
    let mut searched = Vec::new();
    let hint = format!(
        "Install cuDNN 9 (e.g. `pip install nvidia-cudnn-cu13`) or set {CUDNN_PATH_ENV} to the library file or its directory"
    );
    if let Some(explicit) = std::env::var_os(CUDNN_PATH_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(explicit);
        let candidates: Vec<PathBuf> = if path.is_dir() {
            SONAMES.iter().map(|n| path.join(n)).collect()
        } else {
            vec![path]
        };
        for c in &candidates {
            match open_path(c) {
                Ok(lib) => return Ok(lib),
                Err(why) => searched.push(format!("{} ({why})", c.display())),
            }
        }
        return Err(Error::LibraryNotFound {
            library: "cuDNN".into(),
            searched,
            hint: format!("{CUDNN_PATH_ENV} is set, so nothing else was tried. {hint}"),
        });
    }
    for name in SONAMES {
        match open_already_loaded(name) {
            Ok(Some(lib)) => return Ok(lib),
            Ok(None) => searched.push(format!("{name} already in this process (not loaded)")),
            Err(why) => searched.push(format!("{name} already in this process ({why})")),
        }
    }
    let dirs = SEARCH_DIRS.lock().map(|d| d.clone()).unwrap_or_default();
    for dir in dirs {
        for name in SONAMES {
            let p = dir.join(name);
            if !p.exists() {
                continue;
            }
            match open_path(&p) {
                Ok(lib) => return Ok(lib),
                Err(why) => searched.push(format!("{} ({why})", p.display())),
            }
        }
        searched.push(format!("{} (pip wheel directory)", dir.display()));
    }
    for name in SONAMES {
        match open_path(Path::new(name)) {
            Ok(lib) => return Ok(lib),
            Err(why) => searched.push(format!("system {name} ({why})")),
        }
    }
    Err(Error::LibraryNotFound {
        library: "cuDNN".into(),
        searched,
        hint,
    })
}

fn open_path(path: &Path) -> std::result::Result<CudnnLibrary, String> {
    // SAFETY: loading a shared library runs its initialisers; cuDNN's (and any library a
    // user points us at) are trusted like any linked dependency.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
    finish(lib, path.display().to_string())
}

#[cfg(unix)]
fn open_already_loaded(name: &str) -> std::result::Result<Option<CudnnLibrary>, String> {
    use libloading::os::unix::Library;
    // SAFETY: RTLD_NOLOAD only returns a handle to a library that is already loaded
    // (its initialisers have run); nothing new is loaded.
    match unsafe { Library::open(Some(name), libc::RTLD_NOLOAD | libc::RTLD_LAZY) } {
        Ok(lib) => finish(
            lib.into(),
            format!("{name} (already loaded in this process)"),
        )
        .map(Some),
        Err(_) => Ok(None),
    }
}

#[cfg(not(unix))]
fn open_already_loaded(_name: &str) -> std::result::Result<Option<CudnnLibrary>, String> {
    Ok(None)
}

fn finish(lib: libloading::Library, origin: String) -> std::result::Result<CudnnLibrary, String> {
    // SAFETY: the symbols are looked up by their cuDNN names and typed with cuDNN's C
    // signatures; `lib` is stored beside the table, so it outlives every pointer.
    let api = unsafe { CudnnApi::load(&lib) }.map_err(|e| format!("not a usable cuDNN: {e}"))?;
    // SAFETY: cudnnGetVersion takes no arguments and only returns a number.
    let version = unsafe { (api.cudnnGetVersion)() };
    if version < 90000 {
        return Err(format!(
            "cuDNN {}.{}.{} is too old: this crate needs cuDNN 9",
            split_version(version).0,
            split_version(version).1,
            split_version(version).2
        ));
    }
    Ok(CudnnLibrary {
        api,
        origin,
        version,
        _lib: lib,
    })
}

/// The oldest CUDA driver API this crate runs on, as `cuDriverGetVersion` reports it
/// (`major * 1000 + minor * 10`): CUDA 12.8, NVIDIA driver R570 or newer.
///
/// cudarc is built with its CUDA 13.0 bindings (feature `cuda-13000`), under which the
/// engine autotune's event timing calls `cuEventElapsedTime_v2`, added in CUDA 12.8; every
/// other driver entry point the crate reaches is older. cudarc panics on a missing entry
/// point, so an older driver is refused before cudarc is called, with an error naming both
/// versions.
pub const MIN_DRIVER_CUDA_VERSION: i32 = 12080;

/// The NVIDIA driver branch that first supports [`MIN_DRIVER_CUDA_VERSION`].
pub const MIN_DRIVER_BRANCH: &str = "R570";

/// `"12.8"` for the driver's `12080`.
pub fn cuda_version_string(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

/// The names cudarc tries, in its order, for the CUDA driver library, each once (its list
/// repeats names where its version patterns coincide). [`cuda_driver`] and `python -m
/// cudnn_rs info` both walk this list, so both report the library cudarc then loads.
pub fn driver_name_candidates() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in cudarc::get_lib_name_candidates("cuda") {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Checks that the CUDA driver library loads, under the names cudarc will try, and is new
/// enough ([`MIN_DRIVER_CUDA_VERSION`]), before anything calls into cudarc (whose loader
/// panics when none loads or an entry point is missing). Cached on success.
pub fn cuda_driver() -> Result<()> {
    static DRIVER_OK: OnceLock<()> = OnceLock::new();
    if DRIVER_OK.get().is_some() {
        return Ok(());
    }
    let mut searched: Vec<String> = Vec::new();
    for name in driver_name_candidates() {
        // SAFETY: probing the CUDA driver library, which cudarc loads the same way next.
        match unsafe { libloading::Library::new(&name) } {
            Ok(lib) => {
                // The first name that loads is the one cudarc will load: check that one.
                check_driver_version(&lib, &name)?;
                check_driver_symbols(&lib, &name)?;
                // Keep it loaded for cudarc, which opens it again by the same name.
                std::mem::forget(lib);
                let _ = DRIVER_OK.set(());
                return Ok(());
            }
            Err(_) => searched.push(name),
        }
    }
    // No driver is a CUDA error (the contract's `CudaError`), not a missing cuDNN.
    Err(Error::Cuda(format!(
        "no NVIDIA driver: could not load libcuda (tried {}); install the driver, or use the CPU device (Handle(device=\"cpu\"))",
        searched.join(", ")
    )))
}

/// Loads the CUDA driver library at `path` (a file, or a name for the system loader) and
/// checks its version as [`cuda_driver`] does, without keeping it loaded or calling into
/// cudarc. Returns the driver's CUDA version (`major * 1000 + minor * 10`).
pub fn check_cuda_driver_at(path: &Path) -> Result<i32> {
    // SAFETY: loading a CUDA driver library runs its initialisers; a driver (or a file a
    // caller names as one) is trusted like any linked dependency.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| {
        Error::Cuda(format!(
            "could not load the CUDA driver library {}: {e}",
            path.display()
        ))
    })?;
    check_driver_version(&lib, &path.display().to_string())
}

/// Asks the driver its CUDA version through our own handle to it (no `cuInit` needed) and
/// refuses one older than [`MIN_DRIVER_CUDA_VERSION`].
fn check_driver_version(lib: &libloading::Library, name: &str) -> Result<i32> {
    type DriverGetVersion = unsafe extern "C" fn(*mut std::ffi::c_int) -> std::ffi::c_int;
    // SAFETY: `cuDriverGetVersion(int*)` has had this C signature in every CUDA driver
    // API; the symbol is used only while `lib` is borrowed, so it stays loaded.
    let get = unsafe { lib.get::<DriverGetVersion>(b"cuDriverGetVersion\0") }.map_err(|e| {
        Error::Cuda(format!(
            "{name} is not a usable NVIDIA driver: no cuDriverGetVersion ({e})"
        ))
    })?;
    let mut version: std::ffi::c_int = 0;
    // SAFETY: writes one int through a pointer to a live local; needs no initialised driver.
    let status = unsafe { get(&raw mut version) };
    if status != 0 {
        return Err(Error::Cuda(format!(
            "cuDriverGetVersion of {name} failed (CUresult {status})"
        )));
    }
    if version < MIN_DRIVER_CUDA_VERSION {
        return Err(Error::Cuda(format!(
            "the NVIDIA driver ({name}) supports CUDA {} (cuDriverGetVersion = {version}); cudnn_rs needs a driver for CUDA {} or newer ({MIN_DRIVER_BRANCH}+). Update the NVIDIA driver, or use the CPU device (Handle(device=\"cpu\"))",
            cuda_version_string(version),
            cuda_version_string(MIN_DRIVER_CUDA_VERSION),
        )));
    }
    Ok(version)
}

/// The driver entry points this crate reaches through cudarc (context, device queries,
/// streams, events, memory, pointer queries, graphs). cudarc resolves each on first use
/// and panics, printing the panic and its backtrace, when one is missing; checking them
/// here, with our own handle to the library, refuses such a library with an error and
/// nothing printed. Every name exists in every driver of at least
/// [`MIN_DRIVER_CUDA_VERSION`].
const DRIVER_ENTRY_POINTS: &[&str] = &[
    "cuInit",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDeviceGetName",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuCtxGetCurrent",
    "cuCtxSynchronize",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuStreamIsCapturing",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventDestroy_v2",
    "cuEventElapsedTime_v2",
    "cuMemAlloc_v2",
    "cuMemAllocAsync",
    "cuMemFreeAsync",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemsetD8Async",
    "cuMemGetAddressRange_v2",
    "cuPointerGetAttribute",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuLaunchKernel",
    "cuGraphInstantiateWithFlags",
    "cuGraphLaunch",
    "cuGraphExecDestroy",
    "cuGraphDestroy",
];

/// Refuses a driver library lacking one of [`DRIVER_ENTRY_POINTS`] (a broken or stand-in
/// `libcuda`), before cudarc would panic looking for it.
fn check_driver_symbols(lib: &libloading::Library, name: &str) -> Result<()> {
    for symbol in DRIVER_ENTRY_POINTS {
        let mut c_name = symbol.as_bytes().to_vec();
        c_name.push(0);
        // SAFETY: only the symbol's presence is checked; the pointer is never called or
        // kept, so its type does not matter.
        if unsafe { lib.get::<*const std::ffi::c_void>(c_name.as_slice()) }.is_err() {
            return Err(Error::Cuda(format!(
                "{name} is not a usable NVIDIA driver: it is missing a required entry point ({symbol})"
            )));
        }
    }
    Ok(())
}

/// Runs a cudarc call that may panic inside its own loader (e.g. a driver lacking a
/// symbol), turning a panic into an error.
pub(crate) fn guard_cudarc<R>(what: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    cuda_driver()?;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(Error::Cuda(format!(
            "{what}: the CUDA driver library is missing a required entry point"
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_both_version_schemes() {
        assert_eq!(split_version(91_900), (9, 19, 0));
        assert_eq!(split_version(91_402), (9, 14, 2));
        assert_eq!(split_version(8_907), (8, 9, 7));
    }

    #[test]
    fn cuda_versions_print_as_major_minor() {
        assert_eq!(cuda_version_string(12020), "12.2");
        assert_eq!(cuda_version_string(MIN_DRIVER_CUDA_VERSION), "12.8");
        assert_eq!(cuda_version_string(13000), "13.0");
    }

    #[test]
    fn a_driver_path_that_does_not_load_is_a_cuda_error() {
        let missing = Path::new("/nonexistent/cudnn_rs/libcuda.so.1");
        match check_cuda_driver_at(missing) {
            Err(Error::Cuda(msg)) => assert!(msg.contains("/nonexistent/cudnn_rs"), "{msg}"),
            other => panic!("expected a CUDA error, got {other:?}"),
        }
    }

    #[test]
    fn a_wrong_file_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("cudnn_rs_fake_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("libcudnn.so.9");
        std::fs::write(&fake, b"not a library").unwrap();
        let err = open_path(&fake).err().unwrap();
        assert!(!err.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
