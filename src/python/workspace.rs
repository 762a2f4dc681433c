//! `Workspace`: device bytes a handle's calls may use.

use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::CudaSlice;
use pyo3::prelude::*;

use super::device::{DeviceId, PyHandle};
use super::errors::{detach, to_py};
use crate::context::alloc_bytes;
use crate::error::Error;

/// Device bytes for a backward-data call (`Workspace(handle, size)`).
#[pyclass(frozen, name = "Workspace", module = "cudnn_rs")]
pub(crate) struct PyWorkspace {
    pub device: DeviceId,
    pub nbytes: usize,
    memory: Mutex<Option<CudaSlice<u8>>>,
    /// On the CPU device, whose calls use no workspace: the bytes reserved (not written),
    /// so that a size the host cannot hold fails here as on a GPU.
    _host: Vec<u8>,
    /// The stream the memory is freed on, with its owner: dropped after `memory`.
    _home: Option<super::streams::StreamMark>,
}

impl PyWorkspace {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<CudaSlice<u8>>> {
        self.memory
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl PyWorkspace {
    #[new]
    #[pyo3(signature = (handle, size = None))]
    fn new(
        py: Python<'_>,
        handle: &Bound<'_, PyHandle>,
        size: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let size = match size.filter(|s| !s.is_none()) {
            Some(s) => super::ints::int_in_range(
                s,
                "size",
                "a workspace size must be in [0, 9223372036854775807] bytes",
            )?,
            None => 0,
        };
        let nbytes = usize::try_from(size).map_err(|_| {
            to_py(
                py,
                Error::Shape(format!("workspace size must be >= 0, got {size}")),
            )
        })?;
        let inner = Arc::clone(&handle.get().inner);
        let mut host = Vec::new();
        if inner.device == DeviceId::Cpu {
            host.try_reserve_exact(nbytes).map_err(|_| {
                let detail = "host memory for a CPU-device workspace".to_string();
                to_py(
                    py,
                    Error::OutOfMemory {
                        requested_bytes: nbytes,
                        detail,
                    },
                )
            })?;
        }
        let (memory, home) = match inner.device {
            DeviceId::Cpu => (None, None),
            DeviceId::Cuda(_) if nbytes == 0 => (None, None),
            DeviceId::Cuda(_) => detach(py, move || {
                let stream = inner.stream()?;
                let memory = alloc_bytes(&stream, nbytes)?;
                Ok((Some(memory), Some(super::streams::StreamMark::new(&stream))))
            })?,
        };
        Ok(Self {
            device: handle.get().inner.device,
            nbytes,
            memory: Mutex::new(memory),
            _host: host,
            _home: home,
        })
    }
    /// Size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.nbytes
    }
    #[getter]
    fn device(&self) -> String {
        self.device.to_string()
    }
    fn __repr__(&self) -> String {
        format!(
            "cudnn_rs.Workspace(nbytes={}, device={})",
            self.nbytes, self.device
        )
    }
}
