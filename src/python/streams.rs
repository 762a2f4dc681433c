//! Streams handed in from Python: raw `CUstream` ints or objects speaking the
//! `__cuda_stream__` protocol (PyTorch, CuPy, cuda.core), the Python objects that own
//! them, and the event-based ordering between streams that DLPack exchange and tensors
//! used on several streams rely on.

use std::sync::{Arc, Mutex, Weak};

use cudarc::driver::{sys::CUstream, CudaContext, CudaStream};
use pyo3::prelude::*;

use crate::error::Result;

/// DLPack's and `__cuda_array_interface__`'s name for the legacy default stream.
pub(crate) const LEGACY_DEFAULT_STREAM: usize = 1;
/// DLPack's and `__cuda_array_interface__`'s name for the per-thread default stream.
pub(crate) const PER_THREAD_DEFAULT_STREAM: usize = 2;

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
    // alive while the handle uses it (see `StreamOwner`), and ordering with the owner's
    // work is done with events (`order_after`).
    unsafe { ctx.wrap_borrowed_stream(raw as CUstream) }
}

/// The number DLPack and `__cuda_array_interface__` use for `stream`: the null stream
/// (which the driver API treats as the legacy default stream) is 1, since 0 is
/// ambiguous there and disallowed.
pub(crate) fn protocol_number(stream: &CudaStream) -> usize {
    raw_protocol_number(stream.cu_stream() as usize)
}

/// [`protocol_number`] of a raw `CUstream`.
pub(crate) fn raw_protocol_number(raw: usize) -> usize {
    match raw {
        0 => LEGACY_DEFAULT_STREAM,
        raw => raw,
    }
}

/// Whether two streams are the same queue of work (the null stream and the legacy
/// default stream are one).
pub(crate) fn same_stream(a: &CudaStream, b: &CudaStream) -> bool {
    a.context().cu_ctx() == b.context().cu_ctx() && protocol_number(a) == protocol_number(b)
}

/// Makes `later` wait for all work issued to `earlier` so far (an event recorded on
/// `earlier`, waited on by `later`); nothing when they are the same stream. Never
/// blocks the host.
pub(crate) fn order_after(later: &CudaStream, earlier: &CudaStream) -> Result<()> {
    if same_stream(later, earlier) {
        return Ok(());
    }
    Ok(later.join(earlier)?)
}

/// A Python object owning a CUDA stream (`torch.cuda.Stream`, a CuPy stream, ...),
/// kept alive while a handle issues work to the stream, and while a tensor may still
/// have work pending on it (so that an event can still be recorded there).
pub(crate) struct StreamOwner {
    raw: usize,
    _object: Py<PyAny>,
}

/// Owners of the streams handles currently use, so that a tensor marking the stream it
/// was last used on (without the GIL, from inside a call) can keep that owner alive.
static OWNERS: Mutex<Vec<Weak<StreamOwner>>> = Mutex::new(Vec::new());

fn owners() -> std::sync::MutexGuard<'static, Vec<Weak<StreamOwner>>> {
    OWNERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Records `object` as the owner of stream `raw`; `None` for plain ints and the
/// default streams, which nobody owns.
pub(crate) fn adopt_owner(object: &Bound<'_, PyAny>, raw: usize) -> Option<Arc<StreamOwner>> {
    if raw <= PER_THREAD_DEFAULT_STREAM || object.extract::<usize>().is_ok() {
        return None;
    }
    let owner = Arc::new(StreamOwner {
        raw,
        _object: object.clone().unbind(),
    });
    let mut list = owners();
    list.retain(|w| w.strong_count() > 0);
    list.push(Arc::downgrade(&owner));
    Some(owner)
}

/// The live owner of `stream`, if a handle registered one.
fn owner_of(stream: &CudaStream) -> Option<Arc<StreamOwner>> {
    let raw = stream.cu_stream() as usize;
    if raw <= PER_THREAD_DEFAULT_STREAM {
        return None;
    }
    owners()
        .iter()
        .filter_map(Weak::upgrade)
        .find(|o| o.raw == raw)
}

/// The stream a tensor was last used on, with what keeps that stream alive: the next
/// use on another stream, an export (`__dlpack__(stream=...)`) and a copy to the host
/// are ordered after it.
pub(crate) struct StreamMark {
    pub stream: Arc<CudaStream>,
    owner: Option<Arc<StreamOwner>>,
}

impl StreamMark {
    pub(crate) fn new(stream: &Arc<CudaStream>) -> Self {
        Self {
            stream: Arc::clone(stream),
            owner: owner_of(stream),
        }
    }

    /// Another mark of the same stream, holding the same owner.
    pub(crate) fn same(&self) -> Self {
        Self {
            stream: Arc::clone(&self.stream),
            owner: self.owner.clone(),
        }
    }
}
