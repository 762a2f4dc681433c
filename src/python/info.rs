//! What `python -m cudnn_rs info` reports: the CUDA driver (its version, or why none
//! loaded), where cuDNN came from (or every place searched), and the GPUs. Read-only
//! probes over `library.rs`; nothing here changes how the library loads.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `{"loaded": name | None, "version": int | None, "tried": [(name, why)], "error": str | None}`.
/// The version is `cuDriverGetVersion`'s (e.g. 13000 for CUDA 13.0).
#[pyfunction]
pub(crate) fn _driver_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    let mut tried: Vec<(String, String)> = Vec::new();
    let mut loaded: Option<(String, Option<i32>)> = None;
    let names = crate::library::driver_name_candidates();
    for name in &names {
        // SAFETY: probing the system's CUDA driver library, as cudarc loads it; its
        // initialisers are trusted like any linked dependency.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => {
                type GetVersion = unsafe extern "C" fn(*mut i32) -> i32;
                let mut version: i32 = 0;
                // SAFETY: `cuDriverGetVersion(int*)` is looked up by its C name with its
                // C signature; `lib` outlives the call; it writes one int to the local.
                let status = unsafe {
                    lib.get::<GetVersion>(b"cuDriverGetVersion\0")
                        .map(|f| f(&raw mut version))
                };
                let version = match status {
                    Ok(0) => Some(version),
                    _ => None,
                };
                // Keep it loaded: cudarc opens the same library again later.
                std::mem::forget(lib);
                loaded = Some((name.clone(), version));
                break;
            }
            Err(e) => tried.push((name.clone(), e.to_string())),
        }
    }
    if let Some((name, version)) = &loaded {
        out.set_item("loaded", name)?;
        out.set_item("version", *version)?;
        out.set_item("error", None::<String>)?;
    } else {
        out.set_item("loaded", None::<String>)?;
        out.set_item("version", None::<i32>)?;
        let why = if names.is_empty() {
            "no CUDA driver exists for this platform"
        } else {
            "no NVIDIA driver library could be loaded"
        };
        out.set_item("error", why)?;
    }
    out.set_item("tried", tried)?;
    Ok(out)
}

/// `{"origin": str | None, "version": (major, minor, patch) | None, "error": str | None}`:
/// loads cuDNN if it is not loaded yet; the error lists every place searched.
#[pyfunction]
pub(crate) fn _cudnn_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    match py.detach(crate::library::cudnn) {
        Ok(lib) => {
            out.set_item("origin", lib.origin.clone())?;
            out.set_item("version", lib.version_tuple())?;
            out.set_item("error", None::<String>)?;
        }
        Err(e) => {
            out.set_item("origin", None::<String>)?;
            out.set_item("version", None::<(usize, usize, usize)>)?;
            out.set_item("error", e.to_string())?;
        }
    }
    Ok(out)
}

/// `[(ordinal, name, total bytes)]` of the CUDA devices; empty without a driver.
#[pyfunction]
pub(crate) fn _gpus(py: Python<'_>) -> Vec<(usize, String, usize)> {
    py.detach(|| {
        crate::library::guard_cudarc("listing devices", || {
            use cudarc::driver::result;
            result::init()?;
            let n = result::device::get_count()?;
            let mut gpus = Vec::new();
            for ordinal in 0..n {
                let dev = result::device::get(ordinal)?;
                let name = result::device::get_name(dev)?;
                // SAFETY: `dev` is a device handle the driver just returned.
                let total = unsafe { result::device::total_mem(dev) }?;
                gpus.push((usize::try_from(ordinal).unwrap_or_default(), name, total));
            }
            Ok(gpus)
        })
        .unwrap_or_default()
    })
}

/// How the library issued its GPU work since the process started: calls replayed as CUDA
/// graphs, captured, run directly by the replay cache's choice, graph-API variant packs
/// made, allocations from its memory pool, releases of foreign memory that waited for the
/// GPU, imports of PyTorch tensors in place and through DLPack, graph-API execution plans
/// built. For diagnostics; the names may change.
#[pyfunction]
pub(crate) fn _call_counts(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for (name, n) in crate::counters::snapshot() {
        out.set_item(name, n)?;
    }
    Ok(out)
}
