//! Loading the depthwise kernel of our own (see `direct.rs` for which problems and why)
//! and launching it.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use super::direct::{Direct, DirectPlan, Module, BLOCK};
use crate::context::CudnnContext;
use crate::error::Result;
use crate::problem::{ProblemKey, RawPointers, RawProblem};

const PTX: &str = include_str!("../kernels/depthwise_dgrad.ptx");
const SM_80: &[u8] = include_bytes!("../kernels/depthwise_dgrad.sm_80.cubin");
const SM_90: &[u8] = include_bytes!("../kernels/depthwise_dgrad.sm_90.cubin");

/// The modules loaded, by CUDA context (the `CUcontext`'s address): the contexts of one device
/// (cudarc's, on the device's primary context) share one while any of them holds it, so a
/// new handle's first kernel problem does not load the 1.2 MB image again (1.5 ms on the
/// H200). A module holds its CUDA context, so a live entry's address is that context's.
static MODULES: Mutex<Vec<(usize, Weak<CudaModule>)>> = Mutex::new(Vec::new());

impl CudnnContext {
    /// The kernel's plan for `p`, if the default choice runs `p` with it (decided once
    /// per problem and benchmark setting; a device whose driver loads no image of the
    /// kernel runs nothing with it). The module is not loaded while the stream is being captured into a CUDA graph
    /// (a module load there could end the caller's capture): such a call goes to cuDNN,
    /// and the problem is decided again at its next call. `key` is `p`'s under
    /// `Route::Default`.
    pub(crate) fn direct(
        &self,
        key: &ProblemKey,
        p: &RawProblem<'_>,
    ) -> Option<std::rc::Rc<Direct>> {
        if let Some(d) = self.directs.borrow_mut().get(key) {
            return d.clone();
        }
        let Some(plan) = DirectPlan::of(p, self.benchmark.get()) else {
            self.directs.borrow_mut().insert(*key, None);
            return None;
        };
        if matches!(*self.kernels.borrow(), Module::NotLoaded)
            && crate::replay::capturing(self.stream.cu_stream().cast())
        {
            return None;
        }
        let d = self
            .kernel(&plan.entry)
            .map(|function| std::rc::Rc::new(Direct { plan, function }));
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

    /// Runs `p` with the kernel: `dx = alpha * dgrad + beta * dx` (no workspace).
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
        let plan = &direct.plan;
        let mut params = plan.params.scaled(alpha, beta);
        let (mut w, mut dy, mut dx) = (ptrs.w, ptrs.dy, ptrs.dx);
        // The kernel's arguments by address, on the stack (no allocation per call).
        let mut args: [*mut std::ffi::c_void; 4] = [
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
                direct.function.cu_function(),
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
