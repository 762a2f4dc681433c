//! `Tensor` and `Filter`: a run-time descriptor plus memory on the handle's device, and
//! their conversions from and to NumPy arrays (always logical NCHW(D) order) and, without
//! copying, from and to other array libraries (see `interop.rs`).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyTuple};

use super::device::{DeviceId, PyHandle};
use super::errors::{detach, IntoPyResult};
use super::markers::{
    dtype_from_numpy_name, dtype_singleton, extract_dtype, extract_format, format_class, numpy_name,
};
use super::storage::TensorCore;
use crate::data_type::DType;
use crate::error::Error;
use crate::tensor::{Format, RawDescriptor, Role};

/// Physical axis order of a logical NCHW(D) array stored in `format` (for NCHW_VECT_C:
/// the logical array is first reshaped to N, C/v, v, spatial...).
fn physical_permutation(format: Format, ndim: usize) -> Vec<usize> {
    if let Some(order) = crate::tensor::layout::axis_order(format, ndim) {
        return order;
    }
    match format {
        Format::Nchw | Format::Nhwc => (0..ndim).collect(),
        Format::NchwVectC8x4 | Format::NchwVectC8x32 => {
            // `ndim` counts the reshaped axes: 0 N, 1 C/v, 2 v, 3.. spatial
            let mut p = vec![0, 1];
            p.extend(3..ndim);
            p.push(2);
            p
        }
    }
}

fn vect_shape(shape: &[usize], format: Format) -> Vec<usize> {
    let v = format.vector_width();
    let mut s = vec![shape[0], shape[1] / v, v];
    s.extend_from_slice(&shape[2..]);
    s
}

/// Reads a NumPy (or array-like) object as (dtype, logical shape, physical bytes).
fn array_to_bytes(
    py: Python<'_>,
    array: &Bound<'_, PyAny>,
    format: Format,
) -> PyResult<(DType, Vec<usize>, Vec<u8>)> {
    let np = py.import("numpy")?;
    let mut arr = np.call_method1("asarray", (array,))?;
    let np_dtype = arr.getattr("dtype")?;
    if !np_dtype.getattr("isnative")?.is_truthy()? {
        // Bytes in the other order ('>f4' here): the values, converted to native order,
        // are what gets copied, never the raw bytes.
        let native = np_dtype.call_method1("newbyteorder", ("=",))?;
        arr = arr.call_method1("astype", (native,))?;
    }
    let dtype_name: String = arr.getattr("dtype")?.getattr("name")?.extract()?;
    let dtype = dtype_from_numpy_name(&dtype_name).ok_or_else(|| {
        super::errors::to_py(
            py,
            Error::Unsupported(crate::error::UnsupportedConfiguration {
                requested: format!("array of dtype {dtype_name}"),
                nearest: vec![
                    "float32, float64, float16, ml_dtypes.bfloat16, int8, uint8, int32, int64"
                        .into(),
                ],
            }),
        )
    })?;
    if format.data_type(dtype).is_none() {
        return Err(super::errors::to_py(py, unsupported_format(dtype, format)));
    }
    let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
    if shape.len() < 3 {
        return Err(super::errors::to_py(
            py,
            Error::Shape(format!(
                "a tensor needs 3 to 8 dimensions, got an array of shape {shape:?}"
            )),
        ));
    }
    let mut phys = arr.clone();
    if matches!(format, Format::NchwVectC8x4 | Format::NchwVectC8x32) {
        if shape[1] % format.vector_width() != 0 {
            return Err(super::errors::to_py(
                py,
                Error::Shape(format!(
                    "format {format} packs channels by {}; {} channels is not a multiple",
                    format.vector_width(),
                    shape[1]
                )),
            ));
        }
        phys = phys.call_method1("reshape", (PyTuple::new(py, vect_shape(&shape, format))?,))?;
    }
    let perm = physical_permutation(format, phys.getattr("ndim")?.extract()?);
    phys = np.call_method1("transpose", (phys, PyTuple::new(py, perm)?))?;
    let bytes = np
        .call_method1("ascontiguousarray", (phys,))?
        .call_method0("tobytes")?;
    let bytes = bytes.cast_into::<PyBytes>()?;
    Ok((dtype, shape, bytes.as_bytes().to_vec()))
}

/// Builds the logical NumPy array from physical bytes.
fn bytes_to_array<'py>(
    py: Python<'py>,
    desc: &RawDescriptor,
    bytes: &[u8],
) -> PyResult<Bound<'py, PyAny>> {
    let np = py.import("numpy")?;
    let shape = desc.shape();
    let format = desc.format();
    let pybytes = PyBytes::new(py, bytes);
    let mut arr = if desc.dtype() == DType::BF16 {
        if let Ok(ml) = py.import("ml_dtypes") {
            np.call_method1("frombuffer", (pybytes, ml.getattr("bfloat16")?))?
        } else {
            {
                // Without ml_dtypes, widen exactly to float32: a bf16 is the top half of one.
                let u16s = np.call_method1("frombuffer", (pybytes, "uint16"))?;
                let widened = u16s.call_method1("astype", ("uint32",))?;
                let shifted = widened.call_method1("__lshift__", (16,))?;
                shifted.call_method1("view", ("float32",))?
            }
        }
    } else {
        np.call_method1("frombuffer", (pybytes, numpy_name(desc.dtype())))?
    };
    let phys_shape: Vec<usize> = if matches!(format, Format::NchwVectC8x4 | Format::NchwVectC8x32) {
        vect_shape(shape, format)
    } else {
        shape.to_vec()
    };
    let perm = physical_permutation(format, phys_shape.len());
    let stored: Vec<usize> = perm.iter().map(|&a| phys_shape[a]).collect();
    arr = arr.call_method1("reshape", (PyTuple::new(py, stored)?,))?;
    // inverse permutation back to logical order
    let mut inv = vec![0usize; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    arr = np.call_method1("transpose", (arr, PyTuple::new(py, inv)?))?;
    arr = arr.call_method1("reshape", (PyTuple::new(py, shape.to_vec())?,))?;
    // A fresh, writable, C-contiguous array (frombuffer's view is read-only, and the
    // transpose of an NHWC one is not C-contiguous).
    let kwargs = PyDict::new(py);
    kwargs.set_item("order", "C")?;
    np.call_method("array", (arr,), Some(&kwargs))
}

fn unsupported_format(dtype: DType, format: Format) -> Error {
    Error::Unsupported(crate::error::UnsupportedConfiguration {
        requested: format!("{dtype} elements in format {format}"),
        nearest: vec![
            "NCHW and NHWC hold every type; NCHWVectC8x4 holds i8 and u8; NCHWVectC8x32 holds i8"
                .into(),
        ],
    })
}

/// What a tensor's extents must be (as `RawDescriptor::new` says).
pub(crate) const SHAPE_RANGE: &str = "every tensor dimension must be in [1, 2147483647]";

fn parse_shape(obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let dims: Vec<i64> = obj.extract().map_err(|_| {
        super::ints::out_of_range_item(obj, "shape", SHAPE_RANGE).unwrap_or_else(|| {
            pyo3::exceptions::PyTypeError::new_err("shape must be a sequence of ints")
        })
    })?;
    dims.iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                super::errors::to_py(
                    obj.py(),
                    Error::Shape(format!("negative dimension in shape {dims:?}")),
                )
            })
        })
        .collect()
}

macro_rules! tensor_like {
    ($cls:ident, $pyname:literal, $role:expr, $what:literal) => {
        #[doc = concat!("A ", $what, " on a handle's device; its shape is logical (NCHW order) whatever its memory format.")]
        #[pyclass(frozen, name = $pyname, module = "cudnn_rs")]
        pub(crate) struct $cls {
            pub core: Arc<TensorCore>,
        }

        #[pymethods]
        impl $cls {
            /// Copies a NumPy array (logical NCHW(D) order) to the handle's device.
            #[staticmethod]
            #[pyo3(signature = (handle, array, format = None))]
            fn from_numpy(
                py: Python<'_>,
                handle: &Bound<'_, PyHandle>,
                array: &Bound<'_, PyAny>,
                format: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Self> {
                let format = format.map(extract_format).transpose()?.unwrap_or(Format::Nchw);
                let (dtype, shape, bytes) = array_to_bytes(py, array, format)?;
                let desc = RawDescriptor::new($role, dtype, format, &shape).py_err(py)?;
                let h = handle.get();
                let core = detach(py, || TensorCore::allocate(h, desc, Some(&bytes), false))?;
                Ok(Self { core: Arc::new(core) })
            }

            /// A zero-filled one.
            #[staticmethod]
            #[pyo3(signature = (handle, shape, dtype = None, format = None))]
            fn zeros(
                py: Python<'_>,
                handle: &Bound<'_, PyHandle>,
                shape: &Bound<'_, PyAny>,
                dtype: Option<&Bound<'_, PyAny>>,
                format: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Self> {
                Self::alloc(py, handle, shape, dtype, format, true)
            }

            /// An uninitialised one (zero-filled on the CPU device).
            #[staticmethod]
            #[pyo3(signature = (handle, shape, dtype = None, format = None))]
            fn empty(
                py: Python<'_>,
                handle: &Bound<'_, PyHandle>,
                shape: &Bound<'_, PyAny>,
                dtype: Option<&Bound<'_, PyAny>>,
                format: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Self> {
                Self::alloc(py, handle, shape, dtype, format, false)
            }

            /// Logical shape.
            #[getter]
            fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
                PyTuple::new(py, self.core.desc.shape())
            }
            /// Number of dimensions.
            #[getter]
            fn ndim(&self) -> usize {
                self.core.desc.shape().len()
            }
            /// Data-type marker.
            #[getter]
            fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, super::markers::PyDType>> {
                dtype_singleton(py, self.core.desc.dtype())
            }
            /// Memory-format marker class.
            #[getter]
            fn format<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyType> {
                format_class(py, self.core.desc.format())
            }
            /// "cpu" or "cuda:N".
            #[getter]
            fn device(&self) -> String {
                self.core.device.to_string()
            }
            /// Bytes of storage.
            #[getter]
            fn nbytes(&self) -> usize {
                self.core.desc.nbytes()
            }
            /// Copies to a NumPy array in logical NCHW(D) order.
            fn to_numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let core = Arc::clone(&self.core);
                let bytes = detach(py, move || core.to_host_bytes())?;
                bytes_to_array(py, &self.core.desc, &bytes)
            }
            /// Wraps an array of another library without copying: anything with
            /// `__dlpack__` (PyTorch, CuPy, JAX, NumPy), with `__cuda_array_interface__`, or
            /// a DLPack capsule. The shape is logical; the format is read from the strides
            /// (contiguous: NCHW, channels-last: NHWC; strides that fit both: NHWC where
            /// the extent-1 dimensions' are exactly channels-last ones, else NCHW) or
            /// checked against `format`. With
            /// `handle`, the array must live on the handle's device and the producer orders
            /// its pending work before the handle's stream.
            #[staticmethod]
            #[pyo3(signature = (obj, format = None, *, handle = None))]
            fn from_dlpack(
                py: Python<'_>,
                obj: &Bound<'_, PyAny>,
                format: Option<&Bound<'_, PyAny>>,
                handle: Option<&Bound<'_, PyHandle>>,
            ) -> PyResult<Self> {
                if obj.is_instance_of::<PyHandle>() {
                    return Err(pyo3::exceptions::PyTypeError::new_err(concat!(
                        "from_dlpack takes the array first and the handle as a keyword: ",
                        $pyname, ".from_dlpack(array, handle=h)"
                    )));
                }
                let format = format.map(extract_format).transpose()?;
                let core = super::interop::import(py, obj, format, handle.map(Bound::get), $role)?;
                Ok(Self { core: Arc::new(core) })
            }

            /// A NumPy array (a copy, in logical order) of a CPU-device operand, for
            /// `np.asarray`; a GPU operand raises a TypeError naming `to_numpy()`.
            #[pyo3(signature = (dtype = None, copy = None))]
            fn __array__<'py>(
                &self,
                py: Python<'py>,
                dtype: Option<&Bound<'py, PyAny>>,
                copy: Option<bool>,
            ) -> PyResult<Bound<'py, PyAny>> {
                if self.core.device != DeviceId::Cpu {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "this {} lives on {}: np.asarray would need a device-to-host copy; call .to_numpy() to copy it to the host, or use the GPU library's from_dlpack (torch.from_dlpack, cupy.from_dlpack) to share it without copying",
                        $pyname, self.core.device
                    )));
                }
                if copy == Some(false) {
                    return Err(pyo3::exceptions::PyValueError::new_err(concat!(
                        "a ", $pyname, " converts to NumPy only by copying (its memory is in the format's physical order); ",
                        "use np.asarray(t) or np.from_dlpack(t) instead of copy=False"
                    )));
                }
                let core = Arc::clone(&self.core);
                let bytes = detach(py, move || core.to_host_bytes())?;
                let arr = bytes_to_array(py, &self.core.desc, &bytes)?;
                match dtype.filter(|d| !d.is_none()) {
                    Some(d) => arr.call_method1("astype", (d,)),
                    None => Ok(arr),
                }
            }

            /// Exports the memory as a DLPack capsule (versioned when `max_version` is at
            /// least (1, 0)); the consumer's `stream` is ordered after our pending work.
            #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
            fn __dlpack__<'py>(
                &self,
                py: Python<'py>,
                stream: Option<&Bound<'py, PyAny>>,
                max_version: Option<&Bound<'py, PyAny>>,
                dl_device: Option<&Bound<'py, PyAny>>,
                copy: Option<bool>,
            ) -> PyResult<Bound<'py, PyCapsule>> {
                super::interop::export_dlpack(py, &self.core, stream, max_version, dl_device, copy)
            }

            /// `(2, ordinal)` for CUDA memory, `(1, 0)` for the CPU device.
            fn __dlpack_device__(&self) -> (i32, i32) {
                super::interop::dlpack_device(&self.core)
            }

            /// The CUDA Array Interface (version 3) of a GPU tensor; CPU tensors have none.
            #[getter(__cuda_array_interface__)]
            fn cuda_array_interface<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                super::interop::cuda_array_interface(py, &self.core)
            }

            /// `Tensor[F32, NCHW, Rank4]` at run time, as for any generic class.
            #[classmethod]
            fn __class_getitem__<'py>(
                cls: &Bound<'py, pyo3::types::PyType>,
                item: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyAny>> {
                cls.py().import("types")?.getattr("GenericAlias")?.call1((cls, item))
            }
            fn __repr__(&self) -> String {
                format!(
                    "cudnn_rs.{}(shape={:?}, dtype={}, format={}, device={})",
                    $pyname,
                    self.core.desc.shape(),
                    self.core.desc.dtype(),
                    self.core.desc.format(),
                    self.core.device
                )
            }
        }

        impl $cls {
            fn alloc(
                py: Python<'_>,
                handle: &Bound<'_, PyHandle>,
                shape: &Bound<'_, PyAny>,
                dtype: Option<&Bound<'_, PyAny>>,
                format: Option<&Bound<'_, PyAny>>,
                zero: bool,
            ) -> PyResult<Self> {
                let dtype = dtype.map(extract_dtype).transpose()?.unwrap_or(DType::F32);
                let format = format.map(extract_format).transpose()?.unwrap_or(Format::Nchw);
                let shape = parse_shape(shape)?;
                if format.data_type(dtype).is_none() {
                    return Err(super::errors::to_py(py, unsupported_format(dtype, format)));
                }
                let desc = RawDescriptor::new($role, dtype, format, &shape).py_err(py)?;
                let h = handle.get();
                let core = detach(py, || TensorCore::allocate(h, desc, None, zero))?;
                Ok(Self { core: Arc::new(core) })
            }
        }
    };
}

tensor_like!(PyTensor, "Tensor", Role::Tensor, "tensor");
tensor_like!(
    PyFilter,
    "Filter",
    Role::Filter,
    "filter (weights, shape K x C/groups x kernel)"
);
