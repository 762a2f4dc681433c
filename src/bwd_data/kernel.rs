//! Loading the depthwise kernel of our own (see `direct.rs` for which problems and why)
//! and launching it.

use std::ffi::c_void;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use super::direct::{via_nchw, Direct, DirectPlan, Module, Via, BLOCK};
use super::twin::{layout, Twin};
use crate::context::CudnnContext;
use crate::data_type::Scaling;
use crate::error::{CudnnError, Error, Result};
use crate::problem::{ProblemKey, RawPointers, RawProblem};
use crate::tensor::Format;

const PTX: &str = include_str!("../kernels/depthwise_dgrad.ptx");
const SM_80: &[u8] = include_bytes!("../kernels/depthwise_dgrad.sm_80.cubin");
const SM_90: &[u8] = include_bytes!("../kernels/depthwise_dgrad.sm_90.cubin");

/// The modules loaded, by CUDA context (the `CUcontext`'s address): the contexts of one device
/// (cudarc's, on the device's primary context) share one while any of them holds it, so a
/// new handle's first kernel problem does not load the 2.6 MB image again (about 2 ms on
/// the H200: a process's first depthwise call took 2.07 ms, later first calls of other
/// shapes 0.1-0.3 ms). A module holds its CUDA context, so a live entry's address is that
/// context's.
static MODULES: Mutex<Vec<(usize, Weak<CudaModule>)>> = Mutex::new(Vec::new());

impl CudnnContext {
    /// The kernel's plan for `p`, if the default choice runs `p` with it, directly or (an
    /// NHWC problem, see [`via_nchw`]) on NCHW copies of dy and dx. Decided once per
    /// problem and benchmark setting; a device whose driver loads no image of the kernel
    /// runs nothing with it. The module is not loaded while the stream is being captured
    /// into a CUDA graph (a module load there could end the caller's capture): such a call
    /// goes to cuDNN, and the problem is decided again at its next call. `key` is `p`'s
    /// under `Route::Default`.
    pub(crate) fn direct(
        &self,
        key: &ProblemKey,
        p: &RawProblem<'_>,
    ) -> Option<std::rc::Rc<Direct>> {
        if let Some(d) = self.directs.borrow_mut().get(key) {
            return d.clone();
        }
        // An NHWC problem the kernel runs on NCHW copies: its plan is the copies'.
        let copies = via_nchw(p)
            .then(|| Twin::in_format(p, Format::Nchw).zip(Twin::in_format(p, Format::Nhwc)))
            .flatten();
        let target = copies.as_ref().map_or(*p, |(nchw, _)| nchw.problem(p.conv));
        // Decided: the kernel does not run `p`.
        let refused = || {
            self.directs.borrow_mut().insert(*key, None);
            None
        };
        let Some(plan) = DirectPlan::of(&target, self.benchmark.get()) else {
            return refused();
        };
        // A plan loading several channels at a time has one loading one, for operands not
        // aligned to them.
        let scalar = if plan.align > target.dx.dtype().size() as u64 {
            let Some(scalar) = DirectPlan::one_channel(&target) else {
                return refused();
            };
            Some(scalar)
        } else {
            None
        };
        let lay = layout(p);
        let via = copies.map(|(nchw, own)| Via {
            own,
            nchw,
            dx_offset: lay.dx,
            workspace: lay.engine,
        });
        if matches!(*self.kernels.borrow(), Module::NotLoaded)
            && crate::replay::capturing(self.stream.cu_stream().cast())
        {
            return None;
        }
        let one_channel = match scalar {
            Some(scalar) => {
                let Some(function) = self.kernel(&scalar.entry) else {
                    return refused();
                };
                Some((scalar, function))
            }
            None => None,
        };
        let d = self.kernel(&plan.entry).map(|function| {
            std::rc::Rc::new(Direct {
                plan,
                function,
                via,
                one_channel,
            })
        });
        self.directs.borrow_mut().insert(*key, d.clone());
        d
    }

    /// The entry point `name` of the kernel module (loading the module first if need be).
    fn kernel(&self, name: &str) -> Option<CudaFunction> {
        let mut module = self.kernels.borrow_mut();
        if matches!(*module, Module::NotLoaded) {
            *module = self
                .load_kernels()
                .map_or(Module::Unavailable, Module::Loaded);
        }
        match &*module {
            Module::Loaded(m) => m.load_function(name).ok(),
            _ => None,
        }
    }

    /// The module for this device: one another context of the same CUDA context loaded
    /// ([`MODULES`]), else its compute capability's cubin, else the PTX.
    fn load_kernels(&self) -> Option<Arc<CudaModule>> {
        use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
        let key = self.ctx.cu_ctx() as usize;
        // Held while loading: two contexts starting at once load one module.
        let mut modules = MODULES.lock().unwrap_or_else(PoisonError::into_inner);
        modules.retain(|(_, m)| m.strong_count() > 0);
        if let Some(m) = modules
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, m)| m.upgrade())
        {
            return Some(m);
        }
        let major = self
            .ctx
            .attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
            .ok();
        let cubin = match major {
            Some(8) => Some(SM_80),
            Some(9) => Some(SM_90),
            _ => None,
        };
        let module = cubin
            .and_then(|c| self.ctx.load_module(Ptx::from_binary(c.to_vec())).ok())
            .or_else(|| self.ctx.load_module(Ptx::from_src(PTX)).ok())?;
        modules.push((key, Arc::downgrade(&module)));
        Some(module)
    }

    /// Runs `p` with the kernel: `dx = alpha * dgrad + beta * dx`; on NCHW copies in the
    /// workspace where `direct` says so ([`Via`]), else with no workspace.
    ///
    /// # Safety
    /// As [`Self::backward_data_raw`]; the problem has been validated and `direct` is its
    /// plan.
    pub(crate) unsafe fn execute_direct(
        &self,
        alpha: f64,
        direct: &Direct,
        ptrs: &RawPointers,
        beta: f64,
    ) -> Result<()> {
        let Some(via) = &direct.via else {
            // SAFETY: forwarded from this function's contract.
            return unsafe { self.launch_direct(alpha, direct, (ptrs.w, ptrs.dy, ptrs.dx), beta) };
        };
        if ptrs.workspace.1 < via.workspace {
            return Err(Error::InvalidArgument(format!(
                "DefaultAlgo needs a workspace of {} bytes for this problem, got {}",
                via.workspace, ptrs.workspace.1
            )));
        }
        let (dy_copy, dx_copy) = (ptrs.workspace.0, ptrs.workspace.0 + via.dx_offset as u64);
        self.bind()?;
        let (api, handle) = (&self.lib.api, self.as_raw());
        let scaling = via.own.dx.dtype().scaling();
        let (one, zero) = (Scaling::new(scaling, 1.0), Scaling::new(scaling, 0.0));
        let (alpha_s, beta_s) = (Scaling::new(scaling, alpha), Scaling::new(scaling, beta));
        // SAFETY: the descriptors are live and describe the memory: the caller's dy (this
        // function's contract) and dy's copy at the workspace's start, which was checked
        // above to hold both copies; the scalars live across the call and have the type
        // cuDNN reads for the data type. The handle's stream is this context's.
        let to_copy = unsafe {
            (api.cudnnTransformTensor)(
                handle,
                one.as_ptr(),
                via.own.dy.raw()?,
                ptrs.dy as *const c_void,
                zero.as_ptr(),
                via.nchw.dy.raw()?,
                dy_copy as *mut c_void,
            )
        };
        Self::check_transform(to_copy, direct, "dy into its NCHW copy")?;
        // SAFETY: the plan is the copies' problem's, and the copies are in the workspace
        // (checked above); the filter's bytes are the same in both layouts.
        unsafe { self.launch_direct(1.0, direct, (ptrs.w, dy_copy, dx_copy), 0.0) }?;
        // SAFETY: as for dy: dx's copy in the workspace and the caller's dx.
        let back = unsafe {
            (api.cudnnTransformTensor)(
                handle,
                alpha_s.as_ptr(),
                via.nchw.dx.raw()?,
                dx_copy as *const c_void,
                beta_s.as_ptr(),
                via.own.dx.raw()?,
                ptrs.dx as *mut c_void,
            )
        };
        Self::check_transform(back, direct, "dx's NCHW copy into dx")
    }

    /// A conversion's status as a result, naming what it converted.
    fn check_transform(status: u32, direct: &Direct, what: &str) -> Result<()> {
        match CudnnError::from_code(status) {
            None => Ok(()),
            Some(e) => Err(Error::cudnn(
                e,
                format!(
                    "converting {what} for the depthwise kernel {}",
                    direct.plan.entry
                ),
            )),
        }
    }

    /// Launches the kernel: `dx = alpha * dgrad + beta * dx` on the addresses `(w, dy,
    /// dx)`, on the context's stream.
    ///
    /// # Safety
    /// The addresses hold the operands of the problem `direct`'s plan was made for, valid
    /// until the work completes, dx writable and not overlapping the others.
    unsafe fn launch_direct(
        &self,
        alpha: f64,
        direct: &Direct,
        (w, dy, dx): (u64, u64, u64),
        beta: f64,
    ) -> Result<()> {
        // Operands not aligned for the plan's loads of several channels: the plan
        // loading one.
        let aligned = dy % direct.plan.align == 0 && dx % direct.plan.align == 0;
        let (plan, function) = match &direct.one_channel {
            Some((plan, function)) if !aligned => (plan, function),
            _ => (&direct.plan, &direct.function),
        };
        let mut params = plan.params.scaled(alpha, beta);
        let (mut w, mut dy, mut dx) = (w, dy, dx);
        // The kernel's arguments by address, on the stack (no allocation per call).
        let mut args: [*mut c_void; 4] = [
            (&raw mut params).cast(),
            (&raw mut w).cast(),
            (&raw mut dy).cast(),
            (&raw mut dx).cast(),
        ];
        self.bind()?;
        // SAFETY: the entry point takes (Params, const T*, const T*, T*) with T the
        // problem's data type (its name says which), and `args` points at exactly those,
        // alive across the call; the addresses hold the operands the plan was made for
        // (this function's contract), the grid covers `items`, and the stream is this
        // context's, whose CUDA context was just made current.
        let launched = unsafe {
            cudarc::driver::result::launch_kernel(
                function.cu_function(),
                (plan.blocks, 1, 1),
                (BLOCK, 1, 1),
                0,
                self.stream.cu_stream(),
                &mut args,
            )
        };
        launched.map_err(|e| match crate::error::Error::from(e) {
            crate::error::Error::Cuda(msg) => crate::error::Error::Cuda(format!(
                "launching the depthwise kernel {}: {msg}",
                plan.entry
            )),
            other => other,
        })
    }
}
