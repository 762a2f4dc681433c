//! Streams handed in from Python: raw `CUstream` ints or objects speaking the
//! `__cuda_stream__` protocol (PyTorch, CuPy, cuda.core).

use std::sync::Arc;

use cudarc::driver::{sys::CUstream, CudaContext, CudaStream};
use pyo3::prelude::*;

/// The raw stream address of `obj`: an int, `obj.__cuda_stream__()` (version, address),
/// or the `cuda_stream` / `ptr` attribute of PyTorch and CuPy streams.
pub(crate) fn raw_stream(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(v) = obj.extract::<usize>() {
        return Ok(v);
    }
    if let Ok(proto) = obj.call_method0("__cuda_stream__") {
        if let Ok((_version, ptr)) = proto.extract::<(i64, usize)>() {
            return Ok(ptr);
        }
    }
    for attr in ["cuda_stream", "ptr"] {
        if let Ok(v) = obj.getattr(attr).and_then(|a| a.extract::<usize>()) {
            return Ok(v);
        }
    }
    Err(pyo3::exceptions::PyTypeError::new_err(
        "stream must be an int (CUstream) or an object with __cuda_stream__",
    ))
}

/// Wraps a stream owned by someone else; 0 is the legacy default stream.
pub(crate) fn wrap_stream(ctx: &Arc<CudaContext>, raw: usize) -> Arc<CudaStream> {
    if raw == 0 {
        return ctx.default_stream();
    }
    // SAFETY: the caller passed a stream of this device's primary context (PyTorch, CuPy
    // and JAX use the primary context, as cudarc does); the Python caller keeps its owner
    // alive while the handle uses it, and ordering with the owner's work is the stream's.
    unsafe { ctx.wrap_borrowed_stream(raw as CUstream) }
}
