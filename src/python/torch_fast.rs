//! PyTorch without the round trips: reading a CUDA tensor's memory, shape, strides and
//! dtype straight from the tensor object (no DLPack export, no device lookups: PyTorch
//! vouches for both), PyTorch's current stream as a raw address, and `conv_input_grad`'s
//! whole PyTorch path in one native call.
//!
//! Everything here looks PyTorch up in `sys.modules` (never imports it) and answers
//! `None` for anything it does not handle, so that the general path, with its own
//! checks and messages, takes over.

use std::sync::{Arc, Mutex};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

use super::device::PyHandle;
use super::errors::IntoPyResult;
use super::handle::Operands;
use super::interop::{dense_strides, resolve_format, torch_core};
use crate::cache::BoundedCache;
use crate::convolution::geometry::ConvParams;
use crate::convolution::{ConvolutionMode, RawConvolutionDescriptor};
use crate::data_type::DType;
use crate::math_type::MathType;
use crate::tensor::{Format, Role};

/// The parts of PyTorch this module uses, looked up once.
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
    /// `torch._C._get_cudnn_benchmark()`.
    benchmark: Option<Py<PyAny>>,
}

static TORCH: PyOnceLock<TorchApi> = PyOnceLock::new();

/// PyTorch's API, when PyTorch is imported (by whoever made the tensors).
pub(crate) fn torch_api(py: Python<'_>) -> Option<&TorchApi> {
    if let Some(api) = TORCH.get(py) {
        return Some(api);
    }
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let torch = modules.get_item("torch").ok()?;
    let cuda = modules.get_item("torch.cuda").ok()?;
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
        benchmark: c.getattr("_get_cudnn_benchmark").ok().map(Bound::unbind),
    };
    Some(TORCH.get_or_init(py, || api))
}

/// A dense PyTorch CUDA tensor, as PyTorch describes it.
pub(crate) struct TorchTensor {
    pub ordinal: usize,
    pub dtype: DType,
    pub address: usize,
    pub shape: Vec<usize>,
    pub strides: Vec<i64>,
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
            shape: obj.getattr(intern!(py, "shape")).ok()?.extract().ok()?,
            strides: obj
                .call_method0(intern!(py, "stride"))
                .ok()?
                .extract()
                .ok()?,
        })
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
        Self::flag(py, self.allow_tf32.as_ref(), "allow_tf32")
    }

    /// `torch.backends.cudnn.benchmark`.
    pub(crate) fn benchmark(&self, py: Python<'_>) -> PyResult<bool> {
        Self::flag(py, self.benchmark.as_ref(), "benchmark")
    }

    fn flag(py: Python<'_>, getter: Option<&Py<PyAny>>, name: &str) -> PyResult<bool> {
        match getter {
            Some(f) => f.call0(py)?.extract(py),
            None => py.import("torch.backends.cudnn")?.getattr(name)?.extract(),
        }
    }
}

// ---------------------------------------------------------------- conv_input_grad

/// Handles by (device, PyTorch stream address, benchmark); each keeps PyTorch's stream
/// object.
type HandleCache = BoundedCache<(usize, usize, bool), Py<PyHandle>>;
static HANDLES: Mutex<Option<HandleCache>> = Mutex::new(None);
const MAX_HANDLES: usize = 32;

/// Convolution descriptors by everything that makes one.
type ConvKey = (Vec<i64>, Vec<i64>, Vec<i64>, i64, DType, MathType);
type ConvCache = BoundedCache<ConvKey, Arc<RawConvolutionDescriptor>>;
static CONVS: Mutex<Option<ConvCache>> = Mutex::new(None);
const MAX_CONVS: usize = 256;

fn handle_for(
    py: Python<'_>,
    api: &TorchApi,
    ordinal: usize,
    stream: usize,
    benchmark: bool,
) -> PyResult<Py<PyHandle>> {
    let key = (ordinal, stream, benchmark);
    {
        let mut guard = HANDLES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let cache = guard.get_or_insert_with(|| BoundedCache::new(MAX_HANDLES));
        if let Some(h) = cache.get(&key) {
            return Ok(h.clone_ref(py));
        }
    }
    // A new handle on PyTorch's current stream, made as `Handle(device, stream=...)`
    // makes it (the stream object is kept alive by the handle).
    let stream_obj = api.current_stream.call1(py, (ordinal,))?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("stream", stream_obj)?;
    kwargs.set_item("benchmark", benchmark)?;
    let h: Py<PyHandle> = py
        .get_type::<PyHandle>()
        .call((ordinal,), Some(&kwargs))?
        .cast_into::<PyHandle>()?
        .unbind();
    let mut guard = HANDLES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cache = guard.get_or_insert_with(|| BoundedCache::new(MAX_HANDLES));
    cache.insert(key, h.clone_ref(py));
    Ok(h)
}

/// An int, or a sequence of one or `n` ints, as `n` values; `None` for anything else.
fn ints(obj: &Bound<'_, PyAny>, n: usize) -> Option<Vec<i64>> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return None;
    }
    if let Ok(v) = obj.extract::<i64>() {
        return Some(vec![v; n]);
    }
    let items: Vec<i64> = obj.extract().ok()?;
    match items.len() {
        1 => Some(vec![items[0]; n]),
        len if len == n => Some(items),
        _ => None,
    }
}

fn conv_descriptor(key: ConvKey) -> Option<Arc<RawConvolutionDescriptor>> {
    let mut guard = CONVS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cache = guard.get_or_insert_with(|| BoundedCache::new(MAX_CONVS));
    if let Some(c) = cache.get(&key) {
        return Some(Arc::clone(c));
    }
    let (padding, stride, dilation, groups, comp, math) = &key;
    let params = ConvParams::new(
        padding,
        stride,
        dilation,
        *groups,
        ConvolutionMode::CrossCorrelation,
    )
    .ok()?;
    let raw = Arc::new(RawConvolutionDescriptor::new(params, *comp, *math).ok()?);
    cache.insert(key, Arc::clone(&raw));
    Some(raw)
}

/// `conv_input_grad` for PyTorch CUDA tensors with the defaults (no `out`, `handle`,
/// `algo` or `math`; cross-correlation): the input gradient as a new PyTorch tensor in
/// grad_output's layout, computed on PyTorch's current stream with the library's default
/// choice (measured, as `Handle(benchmark=True)`, while
/// `torch.backends.cudnn.benchmark` is on). `None` when the operands are anything else, or anything is unusual (other
/// devices, dtypes or ranks, strides that are neither layout, bad parameters): the
/// general path then runs and reports.
#[pyfunction]
#[pyo3(signature = (input_shape, weight, grad_output, stride, padding, dilation, groups))]
pub(crate) fn _torch_input_grad<'py>(
    py: Python<'py>,
    input_shape: &Bound<'py, PyAny>,
    weight: &Bound<'py, PyAny>,
    grad_output: &Bound<'py, PyAny>,
    stride: &Bound<'py, PyAny>,
    padding: &Bound<'py, PyAny>,
    dilation: &Bound<'py, PyAny>,
    groups: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(api) = torch_api(py) else {
        return Ok(None);
    };
    let (Some(dy), Some(w)) = (api.read(grad_output), api.read(weight)) else {
        return Ok(None);
    };
    let ndim = dy.shape.len();
    let float = matches!(dy.dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16);
    if !(ndim == 4 || ndim == 5) || w.shape.len() != ndim || w.dtype != dy.dtype || !float {
        return Ok(None);
    }
    if w.ordinal != dy.ordinal {
        return Ok(None);
    }
    let Ok(shape) = input_shape.extract::<Vec<i64>>() else {
        return Ok(None);
    };
    let Ok(shape) = shape
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<usize>, _>>()
    else {
        return Ok(None);
    };
    if shape.len() != ndim {
        return Ok(None);
    }
    let (Ok(dy_format), Ok(w_format)) = (
        resolve_format(&dy.shape, Some(&dy.strides), None),
        resolve_format(&w.shape, Some(&w.strides), None),
    ) else {
        return Ok(None);
    };
    let n = ndim - 2;
    let (Some(stride), Some(padding), Some(dilation)) =
        (ints(stride, n), ints(padding, n), ints(dilation, n))
    else {
        return Ok(None);
    };
    if groups.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(None);
    }
    let Ok(groups) = groups.extract::<i64>() else {
        return Ok(None);
    };
    let comp = if dy.dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let math = if dy.dtype == DType::F32 && !api.allow_tf32(py)? {
        MathType::Fma
    } else {
        MathType::Default
    };
    let Some(conv) = conv_descriptor((padding, stride, dilation, groups, comp, math)) else {
        return Ok(None);
    };

    let stream = api.current_raw_stream(py, dy.ordinal)?;
    let handle = handle_for(py, api, dy.ordinal, stream, api.benchmark(py)?)?;
    let h = handle.get();
    // The result, allocated by PyTorch (its caching allocator, on its current stream)
    // in grad_output's layout.
    let strides = dense_strides(&shape, dy_format);
    let out = grad_output.call_method1(
        intern!(py, "new_empty_strided"),
        (PyTuple::new(py, &shape)?, PyTuple::new(py, &strides)?),
    )?;
    let Some(dx) = api.read(&out) else {
        return Ok(None);
    };
    let core = |t: &TorchTensor, obj: &Bound<'py, PyAny>, format: Format, role: Role| {
        torch_core(py, h, t, obj, Some(format), role, stream)
    };
    let w_core = Arc::new(core(&w, weight, w_format, Role::Filter)?);
    let dy_core = Arc::new(core(&dy, grad_output, dy_format, Role::Tensor)?);
    let dx_core = Arc::new(core(&dx, &out, dy_format, Role::Tensor)?);
    let ops = Operands::new(&w_core, &dy_core, &dx_core, conv);
    py.detach(|| h.one_call(&ops, None, 1.0)).py_err(py)?;
    Ok(Some(out))
}
