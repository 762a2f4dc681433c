//! PyTorch, read without round trips: a CUDA tensor's memory, shape, strides and dtype
//! straight from the tensor object (no DLPack export; PyTorch vouches for device and
//! extent), PyTorch's current stream as a raw address, and its cuDNN flags. PyTorch is
//! looked up in `sys.modules` (never imported): a tensor of it means it is loaded.

use pyo3::conversion::FromPyObjectOwned;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};

use crate::data_type::DType;
use crate::problem::Dims;

/// The parts of PyTorch cudnn_rs uses, looked up once.
pub(crate) struct TorchApi {
    tensor: Py<PyType>,
    strided: Py<PyAny>,
    dtypes: [(Py<PyAny>, DType); 8],
    /// `torch._C._cuda_getCurrentRawStream(index)`: the current stream's address.
    raw_stream: Option<Py<PyAny>>,
    /// `torch.cuda.current_stream(index)`: the stream object (kept by new handles).
    current_stream: Py<PyAny>,
    /// `torch._C._get_cudnn_allow_tf32()`.
    allow_tf32: Option<Py<PyAny>>,
}

static TORCH: PyOnceLock<TorchApi> = PyOnceLock::new();

/// The module `name` where it is loaded (`sys.modules[name]`), never importing it. Read
/// from the dict without raising: asked on every import of an array while PyTorch is not
/// loaded, a `KeyError` made each time cost about 1.5 us.
pub(crate) fn loaded_module<'py>(py: Python<'py>, name: &str) -> Option<Bound<'py, PyAny>> {
    static MODULES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
    let modules = MODULES
        .get_or_try_init(py, || -> PyResult<Py<PyDict>> {
            let modules = py.import("sys")?.getattr("modules")?;
            Ok(modules.cast_into::<PyDict>()?.unbind())
        })
        .ok()?;
    modules.bind(py).get_item(name).ok()?
}

/// PyTorch's API, when PyTorch is imported (by whoever made the tensors).
pub(crate) fn torch_api(py: Python<'_>) -> Option<&TorchApi> {
    if let Some(api) = TORCH.get(py) {
        return Some(api);
    }
    let torch = loaded_module(py, "torch")?;
    let cuda = loaded_module(py, "torch.cuda")?;
    let c = torch.getattr("_C").ok()?;
    let dtype = |name: &str| torch.getattr(name).ok().map(Bound::unbind);
    let api = TorchApi {
        tensor: torch
            .getattr("Tensor")
            .ok()?
            .cast_into::<PyType>()
            .ok()?
            .unbind(),
        strided: torch.getattr("strided").ok()?.unbind(),
        dtypes: [
            (dtype("float32")?, DType::F32),
            (dtype("float64")?, DType::F64),
            (dtype("float16")?, DType::F16),
            (dtype("bfloat16")?, DType::BF16),
            (dtype("int8")?, DType::I8),
            (dtype("uint8")?, DType::U8),
            (dtype("int32")?, DType::I32),
            (dtype("int64")?, DType::I64),
        ],
        raw_stream: c
            .getattr("_cuda_getCurrentRawStream")
            .ok()
            .map(Bound::unbind),
        current_stream: cuda.getattr("current_stream").ok()?.unbind(),
        allow_tf32: c.getattr("_get_cudnn_allow_tf32").ok().map(Bound::unbind),
    };
    Some(TORCH.get_or_init(py, || api))
}

/// A dense PyTorch CUDA tensor, as PyTorch describes it (shape and element strides
/// inline: reading one allocates nothing).
pub(crate) struct TorchTensor {
    pub ordinal: usize,
    pub dtype: DType,
    pub address: usize,
    pub shape: Dims,
    pub strides: Dims<i64>,
}

/// A tuple or list (a `torch.Size` is a tuple) of at most eight ints, read without
/// allocating; `None` for anything else or any item that is no `T`.
pub(crate) fn dims<'py, T>(obj: &Bound<'py, PyAny>) -> Option<Dims<T>>
where
    T: Copy + Default + FromPyObjectOwned<'py>,
{
    fn read<'py, T>(items: impl ExactSizeIterator<Item = Bound<'py, PyAny>>) -> Option<Dims<T>>
    where
        T: Copy + Default + FromPyObjectOwned<'py>,
    {
        let mut v = [T::default(); 8];
        if items.len() > v.len() {
            return None;
        }
        let mut len = 0;
        for item in items {
            *v.get_mut(len)? = item.extract::<T>().ok()?;
            len += 1;
        }
        Some(Dims::of(&v[..len]))
    }
    match obj.cast::<PyTuple>() {
        Ok(t) => read(t.iter()),
        Err(_) => read(obj.cast::<PyList>().ok()?.iter()),
    }
}

impl TorchApi {
    /// `obj` read in place, if it is a strided PyTorch tensor on a GPU with a dtype we
    /// map and a non-null address; `None` otherwise (or if PyTorch will not say, e.g. a
    /// fake tensor while tracing).
    pub(crate) fn read(&self, obj: &Bound<'_, PyAny>) -> Option<TorchTensor> {
        let py = obj.py();
        if !obj.is_instance(self.tensor.bind(py)).ok()? {
            return None;
        }
        if !obj
            .getattr(intern!(py, "layout"))
            .ok()?
            .is(self.strided.bind(py))
        {
            return None;
        }
        let ordinal = usize::try_from(
            obj.call_method0(intern!(py, "get_device"))
                .ok()?
                .extract::<i64>()
                .ok()?,
        )
        .ok()?;
        let dt = obj.getattr(intern!(py, "dtype")).ok()?;
        let dtype = self
            .dtypes
            .iter()
            .find(|(d, _)| dt.is(d.bind(py)))
            .map(|(_, t)| *t)?;
        let address: usize = obj
            .call_method0(intern!(py, "data_ptr"))
            .ok()?
            .extract()
            .ok()?;
        if address == 0 {
            return None;
        }
        Some(TorchTensor {
            ordinal,
            dtype,
            address,
            shape: dims(&obj.getattr(intern!(py, "shape")).ok()?)?,
            strides: dims(&obj.call_method0(intern!(py, "stride")).ok()?)?,
        })
    }

    /// PyTorch's current stream object on device `ordinal`.
    pub(crate) fn current_stream<'py>(
        &self,
        py: Python<'py>,
        ordinal: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.current_stream.bind(py).call1((ordinal,))
    }

    /// The address of PyTorch's current stream on device `ordinal`.
    pub(crate) fn current_raw_stream(&self, py: Python<'_>, ordinal: usize) -> PyResult<usize> {
        match &self.raw_stream {
            Some(f) => f.call1(py, (ordinal,))?.extract(py),
            None => self
                .current_stream
                .call1(py, (ordinal,))?
                .getattr(py, intern!(py, "cuda_stream"))?
                .extract(py),
        }
    }

    /// `torch.backends.cudnn.allow_tf32`.
    pub(crate) fn allow_tf32(&self, py: Python<'_>) -> PyResult<bool> {
        match &self.allow_tf32 {
            Some(f) => f.call0(py)?.extract(py),
            None => py
                .import("torch.backends.cudnn")?
                .getattr("allow_tf32")?
                .extract(),
        }
    }
}
