//! Where a handle's work runs (`DeviceId`), and the state a `Handle` holds there. The
//! `Handle` class is declared here, below the tensors that name it; its Python methods
//! and the operations are in `handle.rs`.

use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{CudaSlice, CudaStream};
use pyo3::prelude::*;

use crate::context::CudnnContext;
use crate::error::{Error, Result};

/// Where a handle's work runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeviceId {
    Cpu,
    Cuda(usize),
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceId::Cpu => f.write_str("cpu"),
            DeviceId::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

/// The GPU side of a handle: the cuDNN context and the workspace the one-call API reuses.
pub(crate) struct GpuState {
    pub ctx: CudnnContext,
    pub workspace: Option<CudaSlice<u8>>,
    /// The Python object owning the current stream (`torch.cuda.Stream`, ...), kept alive
    /// while work is issued to it; `None` for default streams and plain ints.
    pub stream_owner: Option<Arc<super::streams::StreamOwner>>,
}

pub(crate) struct HandleInner {
    pub device: DeviceId,
    pub gpu: Option<Mutex<GpuState>>,
    /// The CPU device's measured algorithms by problem (see `find_cache`); on a GPU the
    /// finds go through the cuDNN context's cache, which Rust users share.
    pub cpu_finds: crate::find_cache::FindCache,
    /// The benchmark setting of the CPU device (which has one algorithm: nothing to
    /// measure, but the setting reads back as set).
    pub cpu_benchmark: std::sync::atomic::AtomicBool,
}

impl HandleInner {
    /// The GPU state, locked: cuDNN allows a handle on any thread, one at a time.
    pub(crate) fn gpu(&self) -> Result<MutexGuard<'_, GpuState>> {
        self.gpu
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
            .ok_or_else(|| Error::DeviceMismatch("this is the CPU device".into()))
    }

    /// The stream work is issued to.
    pub(crate) fn stream(&self) -> Result<Arc<CudaStream>> {
        Ok(Arc::clone(self.gpu()?.ctx.stream()))
    }
}

/// Every spelling `device=` accepts besides an int ordinal, for error messages.
const DEVICE_NAMES: &str = "\"cpu\", \"cuda\", \"cuda:N\" or \"gpu\" (same as \"cuda\")";

pub(crate) fn parse_device(obj: Option<&Bound<'_, PyAny>>) -> PyResult<DeviceId> {
    let Some(obj) = obj else {
        return Ok(DeviceId::Cuda(0));
    };
    // A bool is an int to Python, but `device=True` is no ordinal anyone means.
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "device must be an int ordinal or one of {DEVICE_NAMES}, not a bool"
        )));
    }
    if let Ok(n) = obj.extract::<i64>() {
        return usize::try_from(n).map(DeviceId::Cuda).map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(format!("device ordinal must be >= 0, got {n}"))
        });
    }
    let s: String = obj.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "device must be an int ordinal or one of {DEVICE_NAMES}"
        ))
    })?;
    match s.as_str() {
        "cpu" => Ok(DeviceId::Cpu),
        "cuda" | "gpu" => Ok(DeviceId::Cuda(0)),
        other => other
            .strip_prefix("cuda:")
            .and_then(|n| n.parse::<usize>().ok())
            .map(DeviceId::Cuda)
            .ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "unknown device {other:?}: use one of {DEVICE_NAMES}, or an int ordinal"
                ))
            }),
    }
}

/// A cuDNN handle on a CUDA device (`Handle()`, `Handle(device=1)`), or the CPU reference
/// device (`Handle(device="cpu")`), with one API.
#[pyclass(frozen, name = "Handle", module = "cudnn_rs")]
pub(crate) struct PyHandle {
    pub inner: Arc<HandleInner>,
}
