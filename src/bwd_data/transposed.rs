//! Depthwise convolutions stored NCHW, run through their NHWC twin (see `twin.rs`
//! for which problems and why): dy converted to NHWC in the workspace
//! (`cudnnTransformTensor`), the twin's default engine into an NHWC dx in the
//! workspace, that converted into the caller's dx with alpha and beta.

use std::ffi::c_void;
use std::rc::Rc;

use super::graph;
use super::twin::{layout, Twin};
use crate::context::CudnnContext;
use crate::convolution::Route;
use crate::data_type::Scaling;
use crate::error::{CudnnError, Error, Result};
use crate::math_type::MathType;
use crate::problem::{ProblemKey, RawPointers, RawProblem};

impl CudnnContext {
    /// The twin the default choice runs `p` through, if any (decided once per problem;
    /// `key` is `p`'s under `Route::Default`).
    pub(crate) fn twin(&self, key: &ProblemKey, p: &RawProblem<'_>) -> Option<Rc<Twin>> {
        if let Some(t) = self.twins.borrow_mut().get(key) {
            return t.clone();
        }
        let t = Twin::of(p).map(Rc::new);
        self.twins.borrow_mut().insert(*key, t.clone());
        t
    }

    /// Workspace bytes of a call through the twin: both converted operands and the twin's
    /// engine's workspace.
    pub(crate) fn twin_workspace(
        &self,
        p: &RawProblem<'_>,
        twin: &Twin,
        math: MathType,
    ) -> Result<usize> {
        let tp = twin.problem(p.conv);
        let config = self.default_config(&tp, math)?;
        let plan = self.engine_plan(&tp, Some(config), math, 1.0, 0.0, 16, usize::MAX)?;
        Ok(layout(p).engine + plan.workspace)
    }

    /// Runs `p` through its twin (see the module documentation).
    ///
    /// # Safety
    /// As [`Self::backward_data_raw`]; the problem has been validated.
    pub(crate) unsafe fn execute_twin(
        &self,
        alpha: f64,
        p: RawProblem<'_>,
        twin: &Twin,
        math: MathType,
        ptrs: RawPointers,
        beta: f64,
    ) -> Result<()> {
        let tp = twin.problem(p.conv);
        let lay = layout(&p);
        let base = ptrs.workspace.0;
        let mut inner = RawPointers {
            w: ptrs.w,
            dy: base,
            dx: base + lay.dx as u64,
            workspace: (base + lay.engine as u64, 0),
        };
        let config = self.default_config(&tp, math)?;
        let align = graph::alignment(&inner);
        let room = ptrs.workspace.1.saturating_sub(lay.engine);
        let plan = self.default_plan(&tp, config, math, 1.0, 0.0, align, room)?;
        let need = lay.engine + plan.workspace;
        if need > ptrs.workspace.1 {
            return Err(Error::InvalidArgument(format!(
                "DefaultAlgo needs a workspace of {need} bytes for this problem, got {}",
                ptrs.workspace.1
            )));
        }
        inner.workspace.1 = ptrs.workspace.1 - lay.engine;
        self.bind()?;
        let (lib, handle) = (self.lib, self.as_raw());
        let scaling = p.dx.dtype().scaling();
        let (one, zero) = (Scaling::new(scaling, 1.0), Scaling::new(scaling, 0.0));
        let (alpha_s, beta_s) = (Scaling::new(scaling, alpha), Scaling::new(scaling, beta));
        let (dy_d, dy_t, dx_t, dx_d) = (p.dy.raw()?, tp.dy.raw()?, tp.dx.raw()?, p.dx.raw()?);
        let call = || {
            // SAFETY: the descriptors are live and describe the memory: the caller's dy
            // and dx (this function's contract) and the twins inside the workspace, which
            // was checked above to hold both and the plan's own workspace; the scalars
            // live across the calls and have the type cuDNN reads for the data type.
            unsafe {
                let to_twin = (lib.api.cudnnTransformTensor)(
                    handle,
                    one.as_ptr(),
                    dy_d,
                    ptrs.dy as *const c_void,
                    zero.as_ptr(),
                    dy_t,
                    inner.dy as *mut c_void,
                );
                if to_twin != 0 {
                    return to_twin;
                }
                let run = graph::execute(lib, handle, &plan, &inner)
                    .unwrap_or(CudnnError::InternalError.code());
                if run != 0 {
                    return run;
                }
                (lib.api.cudnnTransformTensor)(
                    handle,
                    alpha_s.as_ptr(),
                    dx_t,
                    inner.dx as *const c_void,
                    beta_s.as_ptr(),
                    dx_d,
                    ptrs.dx as *mut c_void,
                )
            }
        };
        if crate::replay::enabled()
            // SAFETY: `call` is the call described (the key is the original problem under
            // `Route::Default`); the addresses are this function's contract.
            && unsafe { self.replay_or_capture(&p, Route::Default, math, &ptrs, alpha, beta, &call)? }
        {
            return Ok(());
        }
        match CudnnError::from_code(call()) {
            None => Ok(()),
            Some(e) => Err(Error::cudnn(
                e,
                format!(
                    "running DefaultAlgo through NHWC (graph-API {}) for {}",
                    plan.config,
                    p.describe()
                ),
            )),
        }
    }
}
