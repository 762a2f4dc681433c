//! The exception hierarchy, and the one conversion from the crate's `Error` to it.
//!
//! Classes are built at import with `type(name, bases, {})`, since several derive from
//! two bases (`UnsupportedConfigurationError` is a `CudnnRsError` and a `TypeError`).

use pyo3::exceptions::{
    PyException, PyImportError, PyMemoryError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::error::Error;

pub(crate) struct Classes {
    pub base: Py<PyType>,
    pub unsupported: Py<PyType>,
    pub shape: Py<PyType>,
    pub device_mismatch: Py<PyType>,
    pub cudnn: Py<PyType>,
    pub cuda: Py<PyType>,
    pub memory: Py<PyType>,
    pub library: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn make(
    py: Python<'_>,
    name: &str,
    bases: &[Bound<'_, PyType>],
    doc: &str,
) -> PyResult<Py<PyType>> {
    let ns = PyDict::new(py);
    ns.set_item("__module__", "cudnn_rs")?;
    ns.set_item("__doc__", doc)?;
    let bases = PyTuple::new(py, bases)?;
    let ty = py
        .import("builtins")?
        .getattr("type")?
        .call1((name, bases, ns))?;
    Ok(ty.cast_into::<PyType>()?.unbind())
}

pub(crate) fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let base = make(
            py,
            "CudnnRsError",
            &[py.get_type::<PyException>()],
            "Base class of every error raised by cudnn_rs.",
        )?;
        let b = base.bind(py).clone();
        let unsupported = make(
            py,
            "UnsupportedConfigurationError",
            &[b.clone(), py.get_type::<PyTypeError>()],
            "The (algorithm, data types, formats, ranks) combination is not in the support table.",
        )?;
        let shape = make(
            py,
            "ShapeError",
            &[b.clone(), py.get_type::<PyValueError>()],
            "Shapes or parameters that do not fit each other, the descriptor or the memory.",
        )?;
        let device_mismatch = make(
            py,
            "DeviceMismatchError",
            &[shape.bind(py).clone()],
            "Operands live on different devices, or not on the handle's device.",
        )?;
        let cudnn = make(
            py,
            "CudnnError",
            &[b.clone(), py.get_type::<PyRuntimeError>()],
            "cuDNN returned a non-success status; `.status` holds its name.",
        )?;
        // The contract's attribute exists on every instance, also one made in Python (a
        // test faking a cuDNN failure): empty where no cuDNN status was given.
        cudnn.bind(py).setattr("status", "")?;
        let cuda = make(
            py,
            "CudaError",
            &[b.clone(), py.get_type::<PyRuntimeError>()],
            "A CUDA driver error: no driver, no device, launch failure, ...",
        )?;
        let memory = make(
            py,
            "DeviceMemoryError",
            &[cuda.bind(py).clone(), py.get_type::<PyMemoryError>()],
            "Out of device memory.",
        )?;
        let library = make(
            py,
            "LibraryNotFoundError",
            &[b, py.get_type::<PyImportError>()],
            "cuDNN or the CUDA driver could not be loaded; the message says where we looked.",
        )?;
        Ok(Classes {
            base,
            unsupported,
            shape,
            device_mismatch,
            cudnn,
            cuda,
            memory,
            library,
        })
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let c = classes(py)?;
    for (name, ty) in [
        ("CudnnRsError", &c.base),
        ("UnsupportedConfigurationError", &c.unsupported),
        ("ShapeError", &c.shape),
        ("DeviceMismatchError", &c.device_mismatch),
        ("CudnnError", &c.cudnn),
        ("CudaError", &c.cuda),
        ("DeviceMemoryError", &c.memory),
        ("LibraryNotFoundError", &c.library),
    ] {
        m.add(name, ty.bind(py))?;
    }
    Ok(())
}

fn raise(py: Python<'_>, ty: &Py<PyType>, msg: String) -> PyErr {
    PyErr::from_type(ty.bind(py).clone(), msg)
}

/// Converts a crate error into its Python exception.
pub(crate) fn to_py(py: Python<'_>, err: Error) -> PyErr {
    let c = match classes(py) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let msg = err.to_string();
    match err {
        Error::Unsupported(u) => {
            let hint = compute_type_hint(&u);
            raise(py, &c.unsupported, msg + &hint)
        }
        Error::Shape(_) | Error::InvalidArgument(_) => raise(py, &c.shape, msg),
        Error::DeviceMismatch(_) => raise(py, &c.device_mismatch, msg),
        Error::Cuda(_) => raise(py, &c.cuda, msg),
        Error::OutOfMemory { .. } => raise(py, &c.memory, msg),
        Error::LibraryNotFound { .. } => raise(py, &c.library, msg),
        Error::Cudnn { status, .. } => {
            let e = raise(py, &c.cudnn, msg);
            let _ = e.value(py).setattr("status", status.name());
            e
        }
        // `Error` is non-exhaustive for users; every variant is mapped above.
        #[allow(unreachable_patterns)]
        _ => raise(py, &c.base, msg),
    }
}

/// When a supported row differs from the request only in its compute type, the
/// argument that fixes it: `comp_type=cd.f64` (the descriptor's compute type).
fn compute_type_hint(u: &crate::error::UnsupportedConfiguration) -> String {
    let Some(at) = u.requested.find(", compute ") else {
        return String::new();
    };
    let rest = &u.requested[at + ", compute ".len()..];
    let asked = rest.split(',').next().unwrap_or_default();
    for name in ["f64", "f32", "f16", "bf16"] {
        if name == asked {
            continue;
        }
        let swapped = format!(
            "{}, compute {name}{}",
            &u.requested[..at],
            &rest[asked.len()..]
        );
        if u.nearest.contains(&swapped) {
            return format!(
                ". These data types run with compute type {name}: build the descriptor with ConvolutionDescriptor(..., comp_type=cd.{name})"
            );
        }
    }
    String::new()
}

/// `Result<T, Error>` to `PyResult<T>`.
pub(crate) trait IntoPyResult<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}

/// Runs `f` with the GIL released, converting its error: the one helper every device
/// call goes through.
pub(crate) fn detach<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    py.detach(f).py_err(py)
}
