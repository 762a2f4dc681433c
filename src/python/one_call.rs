//! The one-call API: `convolution_backward_data(handle, w, dy, conv, x_shape)` (a fresh
//! dx), `_convolution_backward_data_into` (a given dx: `conv_input_grad`'s `out` and
//! framework outputs), both validating once and running the default choice (or the given
//! algorithm) with the handle's cached workspace; and the support table as rows.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::args::{filter_arg, tensor_arg};
use super::conv::PyConvolutionDescriptor;
use super::device::{DeviceId, GpuState, PyHandle};
use super::errors::{detach, to_py, IntoPyResult};
use super::markers::selected_algo;
use super::operands::{operands, Operands};
use super::storage::TensorCore;
use super::tensor::PyTensor;
use crate::context::alloc_bytes;
use crate::convolution::{Route, SelectedAlgo};
use crate::error::{Error, Result};
use crate::problem::ProblemKey;
use cudarc::driver::CudaSlice;

impl PyHandle {
    /// The one-call API: a fresh dx, the library's default choice (or the given
    /// algorithm), the handle's cached workspace grown as needed. The operands are
    /// validated once, here (ranks, support table, shapes), before anything is planned,
    /// allocated or written; the run below checks nothing again. A problem whose default
    /// call ran on this handle before was validated then: its later calls run what that
    /// call resolved to (see `CudnnContext::remember_default`).
    pub(crate) fn one_call(
        &self,
        ops: &Operands<'_>,
        sel: Option<&SelectedAlgo>,
        alpha: f64,
    ) -> Result<()> {
        let sel = sel.copied().unwrap_or(SelectedAlgo::Default);
        self.check_devices(&[ops.w, ops.dy, ops.dx])?;
        let descs = ops.descs();
        let p = descs.problem();
        let same = || {
            if Arc::ptr_eq(ops.dx, ops.dy) {
                return Err(Error::Shape("dx and dy must be different tensors".into()));
            }
            Ok(())
        };
        match self.inner.device {
            DeviceId::Cpu => {
                let geo = p.validate(sel.kind())?;
                same()?;
                let (w, dy) = (ops.w.read(), ops.dy.read());
                let mut dx = ops.dx.write();
                crate::reference::device::backward_data_bytes(
                    &geo,
                    &p,
                    alpha,
                    w.host_bytes()?,
                    dy.host_bytes()?,
                    0.0,
                    dx.host_bytes_mut()?,
                )
            }
            DeviceId::Cuda(_) => {
                let mut state = self.inner.gpu()?;
                let GpuState { ctx, workspace, .. } = &mut *state;
                let math = p.resolve_math(sel.math_type());
                // A problem whose default call ran on this handle (and so was validated):
                // what that call resolved to, when it needs no more workspace than the
                // handle has.
                let have = workspace.as_ref().map_or(0, CudaSlice::len);
                let resolved = (sel == SelectedAlgo::Default && alpha.to_bits() == 1f64.to_bits())
                    .then(|| {
                        // Looked up as the default choice's call remembered it: with a
                        // filter of either layout described in dy's
                        // (`RawProblem::filter_in_dy_format`).
                        let filter = p.filter_in_dy_format();
                        let runs = filter.as_ref().map_or(p, |w| p.with_filter(w));
                        ctx.resolved(&ProblemKey::new(&runs, Route::Default, math))
                    })
                    .flatten()
                    .filter(|r| r.workspace <= have);
                let need = if let Some(r) = &resolved {
                    r.workspace
                } else {
                    p.validate(sel.kind())?;
                    ctx.workspace_size_checked(p, sel.route(), math)?
                        .unwrap_or(0)
                };
                same()?;
                let stream = Arc::clone(ctx.stream());
                if need > 0 && have < need {
                    *workspace = None;
                    *workspace = Some(alloc_bytes(&stream, need)?);
                }
                let (w, dy) = (ops.w.read(), ops.dy.read());
                let mut dx = ops.dx.write();
                let (wp, _g1) = w.device_ptr(&stream)?;
                let (dyp, _g2) = dy.device_ptr(&stream)?;
                let (dxp, _g3) = dx.device_ptr_mut(&stream)?;
                let (wsp, _g4) = match workspace.as_mut().filter(|_| need > 0) {
                    Some(slice) => {
                        let (p, g) = cudarc::driver::DevicePtrMut::device_ptr_mut(slice, &stream);
                        ((p, need), Some(g))
                    }
                    None => ((0, 0), None),
                };
                let ptrs = crate::problem::RawPointers {
                    w: wp,
                    dy: dyp,
                    dx: dxp,
                    workspace: wsp,
                };
                if let Some(r) = &resolved {
                    // SAFETY: as below; `r` was resolved for this very problem, validated
                    // by the call that resolved it.
                    if unsafe { ctx.run_resolved(r, &ptrs)? } {
                        return Ok(());
                    }
                }
                // SAFETY: the storages' locks keep every buffer alive and unaliased (dx is
                // another tensor than dy, checked above, and is locked for writing) until
                // the work is enqueued; each address was allocated for its descriptor, the
                // workspace for `need` bytes; the problem was validated above (or by the
                // call that resolved it).
                unsafe { ctx.backward_data_validated(alpha, p, sel, ptrs, 0.0) }
            }
        }
    }
}

impl PyHandle {
    /// The default choice's call (alpha 1, beta 0) of the problem `key` names, on new
    /// addresses, where such a call ran on this handle before (and so was validated and
    /// resolved, see `CudnnContext::remember_default`): `Ok(false)`, and nothing runs,
    /// when none did, or when these addresses need another plan (alignment) or the
    /// handle's workspace changed; the caller then takes [`Self::one_call`].
    ///
    /// # Safety
    /// `w`, `dy` and `dx` are device memory of this handle's device holding the problem's
    /// filter, grad_output and input gradient, live and (for `dx`) writable, not
    /// overlapping the inputs, until the work is enqueued on the handle's stream, which
    /// orders every other use of them.
    pub(crate) unsafe fn run_remembered(
        &self,
        key: &crate::problem::ProblemKey,
        w: u64,
        dy: u64,
        dx: u64,
    ) -> Result<bool> {
        let mut state = self.inner.gpu()?;
        let GpuState { ctx, workspace, .. } = &mut *state;
        let Some(r) = ctx.resolved(key) else {
            return Ok(false);
        };
        let stream = ctx.stream();
        let (wsp, _guard) = match workspace.as_mut().filter(|_| r.workspace > 0) {
            Some(slice) if slice.len() >= r.workspace => {
                let (p, g) = cudarc::driver::DevicePtrMut::device_ptr_mut(slice, stream);
                ((p, r.workspace), Some(g))
            }
            None if r.workspace == 0 => ((0, 0), None),
            _ => return Ok(false),
        };
        let ptrs = crate::problem::RawPointers {
            w,
            dy,
            dx,
            workspace: wsp,
        };
        // SAFETY: the addresses are this function's contract; the workspace is the
        // handle's, `r.workspace` bytes of it, locked with the handle's state until the
        // work is enqueued.
        unsafe { ctx.run_resolved(&r, &ptrs) }
    }
}

/// One call for people who just want `dx`: allocates it (dtype and format default to
/// dy's), runs `algo` or, when it is None, the library's default choice (`DefaultAlgo`:
/// untimed, the same in every process for a problem, cuDNN and GPU; measured once per
/// problem on a handle with `benchmark=True`), reuses the handle's workspace, and
/// returns `dx`.
#[pyfunction]
#[pyo3(signature = (handle, w, dy, conv, x_shape, algo = None, *, alpha = 1.0, dtype = None, format = None))]
pub(crate) fn convolution_backward_data<'py>(
    py: Python<'py>,
    handle: &Bound<'py, PyHandle>,
    w: &Bound<'py, PyAny>,
    dy: &Bound<'py, PyAny>,
    conv: &Bound<'py, PyConvolutionDescriptor>,
    x_shape: &Bound<'py, PyAny>,
    algo: Option<&Bound<'py, PyAny>>,
    alpha: f64,
    dtype: Option<&Bound<'py, PyAny>>,
    format: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTensor>> {
    let sel = algo
        .filter(|a| !a.is_none())
        .map(selected_algo)
        .transpose()?;
    let w_ref = filter_arg(w, "w")?;
    let dy_ref = tensor_arg(dy, "dy")?;
    let dy_desc = &dy_ref.core.desc;
    let dtype = dtype
        .map(super::markers::extract_dtype)
        .transpose()?
        .unwrap_or(dy_desc.dtype());
    let format = format
        .map(super::markers::extract_format)
        .transpose()?
        .unwrap_or(dy_desc.format());
    let shape: Vec<i64> = x_shape.extract().map_err(|_| {
        super::ints::out_of_range_item(x_shape, "x_shape", super::tensor::SHAPE_RANGE)
            .unwrap_or_else(|| {
                pyo3::exceptions::PyTypeError::new_err("x_shape must be a tuple of ints")
            })
    })?;
    let shape: Vec<usize> = shape
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                to_py(
                    py,
                    Error::Shape(format!("negative dimension in x_shape {shape:?}")),
                )
            })
        })
        .collect::<PyResult<_>>()?;
    let desc =
        crate::tensor::RawDescriptor::new(crate::tensor::Role::Tensor, dtype, format, &shape)
            .py_err(py)?;
    let h = handle.get();
    let conv_ref = conv.get();
    // dx's allocation and the call in one release of the GIL.
    let dx_core = detach(py, || {
        let dx_core = Arc::new(TensorCore::allocate(h, desc, None, false)?);
        let ops = Operands {
            w: &w_ref.core,
            dy: &dy_ref.core,
            dx: &dx_core,
            conv: conv_ref.raw(),
        };
        h.one_call(&ops, sel.as_ref(), alpha)?;
        Ok(dx_core)
    })?;
    Bound::new(py, PyTensor { core: dx_core })
}

/// The one-call API writing into a given `dx` (`conv_input_grad`'s `out` and framework
/// outputs): the same default choice of algorithm and the handle's cached workspace;
/// every check runs before anything is written.
#[pyfunction]
#[pyo3(signature = (handle, w, dy, conv, dx, algo = None))]
pub(crate) fn _convolution_backward_data_into(
    py: Python<'_>,
    handle: &Bound<'_, PyHandle>,
    w: &Bound<'_, PyAny>,
    dy: &Bound<'_, PyAny>,
    conv: &Bound<'_, PyConvolutionDescriptor>,
    dx: &Bound<'_, PyAny>,
    algo: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let sel = algo
        .filter(|a| !a.is_none())
        .map(selected_algo)
        .transpose()?;
    let ops = operands(w, dy, dx, conv.get())?;
    let h = handle.get();
    py.detach(|| h.one_call(&ops, sel.as_ref(), 1.0)).py_err(py)
}

/// All rows of the support table, `BestHeuristic` rows included, as tuples of names.
#[pyfunction]
pub(crate) fn supported_configurations(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let rows = crate::bwd_data::support::support_rows()
        .map(|r| {
            PyTuple::new(
                py,
                [
                    r.algo.name().into_pyobject(py)?.into_any(),
                    r.filter.0.name().into_pyobject(py)?.into_any(),
                    r.filter.1.name().into_pyobject(py)?.into_any(),
                    r.dy.0.name().into_pyobject(py)?.into_any(),
                    r.dy.1.name().into_pyobject(py)?.into_any(),
                    r.comp.name().into_pyobject(py)?.into_any(),
                    r.dx.0.name().into_pyobject(py)?.into_any(),
                    r.dx.1.name().into_pyobject(py)?.into_any(),
                    r.tensor_dims.into_pyobject(py)?.into_any(),
                    r.conv_dims.into_pyobject(py)?.into_any(),
                ],
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, rows)
}
