//! `conv_input_grad`'s whole PyTorch path in one native call (tensors read in place, see
//! `torch_api`). It answers `None` for anything it does not handle, so that the general
//! path, with its own checks and messages, takes over.

use std::sync::{Arc, Mutex};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::device::PyHandle;
use super::errors::IntoPyResult;
use super::interop::{
    dense_strides, handle_gpu, resolve_format, resolve_format_prefer, torch_core,
};
use super::operands::Operands;
use super::torch_api::{dims, torch_api, TorchApi, TorchTensor};
use crate::cache::BoundedCache;
use crate::convolution::geometry::ConvParams;
use crate::convolution::{ConvolutionMode, RawConvolutionDescriptor, Route};
use crate::data_type::DType;
use crate::math_type::MathType;
use crate::problem::{Dims, ProblemKey};
use crate::tensor::{Format, Role};

// ---------------------------------------------------------------- conv_input_grad

/// Handles by (device, PyTorch stream address, benchmarking); each keeps PyTorch's stream
/// object.
type HandleCache = BoundedCache<(usize, usize, bool), Py<PyHandle>>;
static HANDLES: Mutex<Option<HandleCache>> = Mutex::new(None);
const MAX_HANDLES: usize = 32;

/// Convolution descriptors by everything that makes one.
type ConvKey = (Dims<i64>, Dims<i64>, Dims<i64>, i64, DType, MathType);
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
    // A new handle on PyTorch's current stream, made as `Handle(device, stream=...,
    // benchmark=...)` makes it (the stream object is kept alive by the handle).
    let stream_obj = api.current_stream(py, ordinal)?;
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

/// An int, or a sequence of one or `n` ints, as `n` values (`n` is 2 or 3); `None` for
/// anything else, bools included (ints to Python, but the general path refuses them).
fn ints(obj: &Bound<'_, PyAny>, n: usize) -> Option<Dims<i64>> {
    let int = |o: &Bound<'_, PyAny>| -> Option<i64> {
        if o.is_instance_of::<pyo3::types::PyBool>() {
            return None;
        }
        o.extract().ok()
    };
    let mut v = [0i64; 3];
    if n > v.len() {
        return None;
    }
    // A tuple or list is read item by item: asking it for an int first would raise (and
    // fetch) a Python exception on every call, a few microseconds of the call's host time.
    let sequence = obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>();
    if let Some(x) = if sequence { None } else { int(obj) } {
        v = [x; 3];
    } else {
        if obj.is_instance_of::<pyo3::types::PyString>() {
            return None;
        }
        let mut count = 0;
        for item in obj.try_iter().ok()? {
            *v.get_mut(count)? = int(&item.ok()?)?;
            count += 1;
        }
        match count {
            1 => v = [v[0]; 3],
            c if c == n => {}
            _ => return None,
        }
    }
    // One key per parameter set, however it was spelled: the first `n` values only.
    Some(Dims::of(&v[..n]))
}

/// A call's problem as the tensors and arguments give it, before any descriptor is made
/// or any layout resolved: dtype, the weight's and grad_output's shapes and strides, the
/// result's shape, and the convolution.
type CallKey = (DType, Dims, Dims<i64>, Dims, Dims<i64>, Dims, ConvKey);

/// A problem a call ran before (so it was validated): its key in the handles' caches of
/// resolved calls (see `PyHandle::run_remembered`), the layouts the strides resolved
/// to, and the result's shape and strides as the tuples PyTorch is asked for.
struct Known {
    problem: ProblemKey,
    dy_format: Format,
    w_format: Format,
    shape: Py<PyTuple>,
    strides: Py<PyTuple>,
}

static KNOWN: Mutex<Option<BoundedCache<CallKey, Arc<Known>>>> = Mutex::new(None);
/// Problems remembered (a training step of a large model has a few hundred).
const MAX_KNOWN: usize = 4096;

fn known(key: &CallKey) -> Option<Arc<Known>> {
    let mut guard = KNOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    guard
        .get_or_insert_with(|| BoundedCache::new(MAX_KNOWN))
        .get(key)
        .cloned()
}

fn remember(key: &CallKey, known: Known) {
    let mut guard = KNOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    guard
        .get_or_insert_with(|| BoundedCache::new(MAX_KNOWN))
        .insert(*key, Arc::new(known));
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
        padding.as_slice(),
        stride.as_slice(),
        dilation.as_slice(),
        *groups,
        ConvolutionMode::CrossCorrelation,
    )
    .ok()?;
    let raw = Arc::new(RawConvolutionDescriptor::new(params, *comp, *math).ok()?);
    cache.insert(key, Arc::clone(&raw));
    Some(raw)
}

/// `conv_input_grad` for PyTorch CUDA tensors with the defaults (no `out`, `algo` or
/// `math`; cross-correlation): the input gradient as a new PyTorch tensor in
/// grad_output's layout, computed on PyTorch's current stream with the library's default
/// choice (measured with `benchmark`, on handles of their own); or on `handle` (its
/// choice: measured with its `benchmark`), when that handle is on the tensors' device and
/// issues to PyTorch's current stream. `None` when
/// the operands are anything else, or anything is unusual (other devices, dtypes or
/// ranks, strides that are neither layout, bad parameters, a handle of another stream):
/// the general path then runs and reports.
#[pyfunction]
#[pyo3(signature = (input_shape, weight, grad_output, stride, padding, dilation, groups, handle = None, benchmark = false))]
pub(crate) fn _torch_input_grad<'py>(
    py: Python<'py>,
    input_shape: &Bound<'py, PyAny>,
    weight: &Bound<'py, PyAny>,
    grad_output: &Bound<'py, PyAny>,
    stride: &Bound<'py, PyAny>,
    padding: &Bound<'py, PyAny>,
    dilation: &Bound<'py, PyAny>,
    groups: &Bound<'py, PyAny>,
    handle: Option<&Bound<'py, PyHandle>>,
    benchmark: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(api) = torch_api(py) else {
        return Ok(None);
    };
    let (Some(dy), Some(w)) = (api.read(grad_output), api.read(weight)) else {
        return Ok(None);
    };
    let ndim = dy.shape.as_slice().len();
    let float = matches!(dy.dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16);
    if !(ndim == 4 || ndim == 5)
        || w.shape.as_slice().len() != ndim
        || w.dtype != dy.dtype
        || !float
    {
        return Ok(None);
    }
    if w.ordinal != dy.ordinal {
        return Ok(None);
    }
    let Some(x_dims) = dims::<usize>(input_shape) else {
        return Ok(None);
    };
    if x_dims.as_slice().len() != ndim {
        return Ok(None);
    }
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
    let comp = dy.dtype.compute();
    let math = if dy.dtype == DType::F32 && !api.allow_tf32(py)? {
        MathType::Fma
    } else {
        MathType::Default
    };
    let conv_key = (padding, stride, dilation, groups, comp, math);
    let call_key = (
        dy.dtype, w.shape, w.strides, dy.shape, dy.strides, x_dims, conv_key,
    );

    let stream = api.current_raw_stream(py, dy.ordinal)?;
    let handle = match handle {
        None => handle_for(py, api, dy.ordinal, stream, benchmark)?,
        Some(h) => {
            let same_device = h.get().inner.device == super::device::DeviceId::Cuda(dy.ordinal);
            let ours = h
                .get()
                .inner
                .gpu()
                .py_err(py)
                .map(|g| g.ctx.stream().cu_stream() as usize);
            if !same_device || ours? != stream {
                return Ok(None);
            }
            h.clone().unbind()
        }
    };
    let h = handle.get();
    // A known problem's layouts and result tuples; a new one's layouts from its strides.
    let known = known(&call_key);
    let shape = x_dims.as_slice();
    let (dy_format, w_format, shape_tuple, strides_tuple) = if let Some(k) = &known {
        let tuples = (k.shape.bind(py).clone(), k.strides.bind(py).clone());
        (k.dy_format, k.w_format, tuples.0, tuples.1)
    } else {
        let dy_format = resolve_format(dy.shape.as_slice(), Some(dy.strides.as_slice()), None);
        let Ok(dy_format) = dy_format else {
            return Ok(None);
        };
        let w_format = resolve_format_prefer(w.shape.as_slice(), w.strides.as_slice(), dy_format);
        let Ok(w_format) = w_format else {
            return Ok(None);
        };
        let strides = dense_strides(shape, dy_format);
        let tuples = (PyTuple::new(py, shape)?, PyTuple::new(py, strides)?);
        (dy_format, w_format, tuples.0, tuples.1)
    };
    // The result, allocated by PyTorch (its caching allocator, on its current stream)
    // in grad_output's layout.
    let out = grad_output.call_method1(
        intern!(py, "new_empty_strided"),
        (&shape_tuple, &strides_tuple),
    )?;
    // Everything but its address is what was just asked for.
    let address: usize = out.call_method0(intern!(py, "data_ptr"))?.extract()?;
    if address == 0 {
        return Ok(None);
    }
    if let Some(k) = &known {
        let (wa, dya, dxa) = (w.address as u64, dy.address as u64, address as u64);
        let ran = py.detach(|| {
            // SAFETY: PyTorch vouches for both tensors (dense in the layouts read above,
            // on the handle's device, alive while this call holds them) and for the
            // result, fresh memory of the problem's size; a call with this key ran
            // before, so the problem the key names is theirs. All is used on PyTorch's
            // current stream, the handle's, which orders any reuse after this work.
            unsafe { h.run_remembered(&k.problem, wa, dya, dxa) }
        });
        if ran.py_err(py)? {
            return Ok(Some(out));
        }
    }
    let Some(conv) = conv_descriptor(conv_key) else {
        return Ok(None);
    };
    let dx = TorchTensor {
        ordinal: dy.ordinal,
        dtype: dy.dtype,
        address,
        shape: x_dims,
        strides: Dims::of(&dense_strides(shape, dy_format)),
    };
    let (ctx, _) = handle_gpu(h).py_err(py)?;
    let core = |t: TorchTensor, obj: &Bound<'py, PyAny>, format: Format, role: Role| {
        torch_core(py, Arc::clone(&ctx), t, obj, Some(format), role, stream)
    };
    let w_core = Arc::new(core(w, weight, w_format, Role::Filter)?);
    let dy_core = Arc::new(core(dy, grad_output, dy_format, Role::Tensor)?);
    let dx_core = Arc::new(core(dx, &out, dy_format, Role::Tensor)?);
    let ops = Operands::new(&w_core, &dy_core, &dx_core, conv);
    py.detach(|| h.one_call(&ops, None, 1.0)).py_err(py)?;
    if known.is_none() {
        let descs = ops.descs();
        let p = descs.problem();
        let problem = ProblemKey::new(&p, Route::Default, p.resolve_math(None));
        remember(
            &call_key,
            Known {
                problem,
                dy_format,
                w_format,
                shape: shape_tuple.unbind(),
                strides: strides_tuple.unbind(),
            },
        );
    }
    Ok(Some(out))
}
