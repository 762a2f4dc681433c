//! Python bindings (PyO3): the only place PyO3 appears. Converts, dispatches to the
//! generic Rust instance of each support-table row, maps errors, releases the GIL around
//! device work. No cuDNN logic here.

mod args;
mod conv;
mod describe;
mod descs;
mod device;
mod dispatch;
mod dlpack;
mod errors;
mod handle;
mod info;
mod interop;
mod ints;
mod markers;
mod one_call;
mod operands;
mod storage;
mod streams;
mod tensor;
mod torch_api;
mod torch_fast;
mod workspace;

use pyo3::prelude::*;

/// Whether a CUDA driver and at least one device are usable. Never raises.
#[pyfunction]
fn cuda_available(py: Python<'_>) -> bool {
    device_count(py) > 0
}

/// Waits (without the GIL) until the background thread that builds cuDNN's
/// run-time-compiled engines for the measured tier has built every layer handed to it so
/// far, by any handle (those of `conv_input_grad(benchmark=True)` included), at most
/// `timeout_ms` milliseconds; whether it has. Each layer's next call then takes in what
/// was built.
#[pyfunction]
#[pyo3(signature = (timeout_ms = 10000.0))]
fn wait_background_builds(py: Python<'_>, timeout_ms: f64) -> PyResult<bool> {
    let timeout = millis("timeout_ms", timeout_ms, false)?;
    Ok(py.detach(|| crate::bwd_data::background::wait_idle(timeout)))
}

/// Hands the device memory the library keeps for its next allocations (freed `dx` of the
/// one-call API, workspaces, tensors) back to the system, on `device` or, where None,
/// every device; waits for the device's queued work first. Returns how many bytes it
/// handed back (0 where the library allocated nothing).
#[pyfunction]
#[pyo3(signature = (device = None))]
fn release_cached_memory(py: Python<'_>, device: Option<i64>) -> PyResult<usize> {
    let ordinal = device
        .map(|d| {
            usize::try_from(d).map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "device must be a device ordinal >= 0, got {d}"
                ))
            })
        })
        .transpose()?;
    py.detach(|| crate::release_cached_memory(ordinal))
        .map_err(|e| errors::to_py(py, e))
}

/// Argument `name`, `ms` milliseconds, as a duration: a `ValueError` unless it is a number
/// of 0 or more (more than 0 where `positive`) that a duration holds (not NaN, not
/// infinite, not beyond about 5.8e14 years).
pub(crate) fn millis(name: &str, ms: f64, positive: bool) -> PyResult<std::time::Duration> {
    let sign_ok = if positive { ms > 0.0 } else { ms >= 0.0 };
    sign_ok
        .then(|| std::time::Duration::try_from_secs_f64(ms / 1e3).ok())
        .flatten()
        .ok_or_else(|| {
            let least = if positive { "> 0" } else { ">= 0" };
            pyo3::exceptions::PyValueError::new_err(format!(
                "{name} must be a finite number of milliseconds {least}, got {ms}"
            ))
        })
}

/// Number of CUDA devices (0 without a driver). Never raises.
#[pyfunction]
fn device_count(py: Python<'_>) -> usize {
    py.detach(|| {
        crate::library::guard_cudarc("counting devices", || {
            Ok(cudarc::driver::CudaContext::device_count()?)
        })
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
    })
}

/// Registers a directory to search for cuDNN (the package passes the pip wheels').
#[pyfunction]
fn _add_cudnn_search_dir(path: std::path::PathBuf) {
    crate::library::add_cudnn_search_dir(path);
}

/// Where cuDNN was loaded from, or None when it is not loaded (yet).
#[pyfunction]
fn _cudnn_origin() -> Option<String> {
    crate::library::cudnn_loaded().map(|l| l.origin.clone())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    markers::register_dtypes(m)?;
    markers::register_formats(m)?;
    markers::register_algos(m)?;
    m.add_class::<markers::PyConvolutionMode>()?;
    m.add_class::<markers::PyMathType>()?;
    m.add_class::<markers::PyDeterminism>()?;
    m.add_class::<device::PyHandle>()?;
    m.add_class::<workspace::PyWorkspace>()?;
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<tensor::PyFilter>()?;
    m.add_class::<conv::PyConvolutionDescriptor>()?;
    m.add_function(wrap_pyfunction!(one_call::convolution_backward_data, m)?)?;
    m.add_function(wrap_pyfunction!(one_call::supported_configurations, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_available, m)?)?;
    m.add_function(wrap_pyfunction!(wait_background_builds, m)?)?;
    m.add_function(wrap_pyfunction!(device_count, m)?)?;
    m.add_function(wrap_pyfunction!(release_cached_memory, m)?)?;
    m.add_function(wrap_pyfunction!(_add_cudnn_search_dir, m)?)?;
    m.add_function(wrap_pyfunction!(_cudnn_origin, m)?)?;
    m.add_function(wrap_pyfunction!(info::_driver_info, m)?)?;
    m.add_function(wrap_pyfunction!(info::_cudnn_info, m)?)?;
    m.add_function(wrap_pyfunction!(info::_gpus, m)?)?;
    m.add_function(wrap_pyfunction!(info::_call_counts, m)?)?;
    m.add_function(wrap_pyfunction!(
        one_call::_convolution_backward_data_into,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(torch_fast::_torch_input_grad, m)?)?;
    m.add_function(wrap_pyfunction!(interop::_pointer_device, m)?)?;
    m.add("BOUND_CUDNN_VERSION", crate::library::BOUND_CUDNN_VERSION)?;
    Ok(())
}
