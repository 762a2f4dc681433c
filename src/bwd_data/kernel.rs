//! Loading the depthwise kernel of our own (see `direct.rs` for which problems and why)
//! and launching it; and the kernel that only waits (`hold.cu`), which the measured tier
//! launches before the calls it times (see `engine.rs`).

use std::ffi::c_void;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use super::direct::{via_nchw, Direct, DirectPlan, Via, BLOCK};
use super::twin::{layout, Twin, Views};
use crate::context::CudnnContext;
use crate::data_type::Scaling;
use crate::error::{CudnnError, Error, Result};
use crate::problem::{ProblemKey, RawPointers, RawProblem};
use crate::tensor::Format;

/// The kernels' images, one per entry point (`scripts/gen_ptx.py` says why and writes
/// them), per kernel file: PTX for compute_60 ...
const PTX: [&[u8]; 2] = [
    include_bytes!("../kernels/depthwise_dgrad.compute_60.pack"),
    include_bytes!("../kernels/hold.compute_60.pack"),
];
/// ... and cubins for compute capabilities 8.x and 9.x.
const SM_80: [&[u8]; 2] = [
    include_bytes!("../kernels/depthwise_dgrad.sm_80.pack"),
    include_bytes!("../kernels/hold.sm_80.pack"),
];
const SM_90: [&[u8]; 2] = [
    include_bytes!("../kernels/depthwise_dgrad.sm_90.pack"),
    include_bytes!("../kernels/hold.sm_90.pack"),
];
/// The entry point of `hold.cu`: it waits on the GPU for the nanoseconds it is given.
const HOLD: &str = "hold_ns";
/// The longest wait [`CudnnContext::hold`] launches, in milliseconds.
const MAX_HOLD_MS: f32 = 5.0;

/// The records of `pack`, `(name, image)` in order (each record: the name's length and
/// the image's as little-endian u32, the name, the image, zero bytes up to a multiple of
/// 8); they end at the first malformed one.
fn records(pack: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut rest = pack;
    std::iter::from_fn(move || {
        let len = |at: usize| {
            let bytes = rest.get(at..at + 4)?;
            Some(u32::from_le_bytes(bytes.try_into().ok()?) as usize)
        };
        let image_at = len(0)?.checked_add(8)?;
        let end = image_at.checked_add(len(4)?)?;
        let record = (rest.get(8..image_at)?, rest.get(image_at..end)?);
        rest = rest.get(end.next_multiple_of(8).min(rest.len())..)?;
        Some(record)
    })
}

/// The image of entry point `name` in one of `packs`.
fn image<'a>(packs: &[&'a [u8]], name: &str) -> Option<&'a [u8]> {
    packs.iter().find_map(|pack| {
        records(pack)
            .find(|(n, _)| *n == name.as_bytes())
            .map(|(_, image)| image)
    })
}

/// The modules loaded, by CUDA context (the `CUcontext`'s address) and entry point: the
/// contexts of one device (cudarc's, on the device's primary context) share one while any
/// of them holds it, so a new handle's first call of an entry point does not load its
/// image again. A module holds its CUDA context, so a live entry's address is that
/// context's.
static MODULES: Mutex<Vec<(usize, String, Weak<CudaModule>)>> = Mutex::new(Vec::new());

impl CudnnContext {
    /// The kernel's plan for `p`, if the default choice runs `p` with it, directly or (an
    /// NHWC problem, see [`via_nchw`]) on NCHW copies of dy and dx. Decided once per
    /// problem and benchmark setting; a device whose driver loads no image of the kernel
    /// runs nothing with it. The module is not loaded while the stream is being captured
    /// into a CUDA graph (a module load there could end the caller's capture): such a call
    /// goes to cuDNN, and the problem is decided again at its next call. `key` is `p`'s
    /// under `Route::Default`.
    ///
    /// With benchmarking on, a problem the measured default leaves to cuDNN's engines that
    /// compile at run time ([`super::direct::deferred`]) runs with the kernel while the
    /// builder thread builds them ([`super::background`]); its first call once they are
    /// built (outside a capture) takes them in and goes to cuDNN, which measures it.
    pub(crate) fn direct(
        &self,
        key: &ProblemKey,
        p: &RawProblem<'_>,
    ) -> Option<std::rc::Rc<Direct>> {
        // (Cloned out first: taking the built plans in decides the problem anew.)
        let decided = self.directs.borrow_mut().get(key).cloned();
        if let Some(d) = decided {
            if d.is_some() && self.adopt_built(key, p) {
                return None;
            }
            return d;
        }
        // An NHWC problem the kernel runs on NCHW copies: its plan is the copies'.
        let copies = via_nchw(p)
            .then(|| Twin::in_format(p, Format::Nchw))
            .flatten();
        let target = copies.as_ref().map_or(*p, |nchw| nchw.problem(p.conv));
        // Decided: the kernel does not run `p`.
        let refused = || {
            self.directs.borrow_mut().insert(*key, None);
            None
        };
        let benchmark = self.benchmark.get();
        let interim = (benchmark && super::background::enabled(self))
            .then(|| DirectPlan::interim(&target))
            .flatten();
        let defer = interim.is_some();
        let Some(plan) = interim.or_else(|| DirectPlan::of(&target, benchmark)) else {
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
        let via = match copies {
            Some(_) => {
                let (Some(own), Some(nchw)) =
                    (Views::of(p, Format::Nhwc), Views::of(p, Format::Nchw))
                else {
                    return refused();
                };
                Some(Via {
                    own,
                    nchw,
                    dx_offset: lay.dx,
                    workspace: lay.engine,
                })
            }
            None => None,
        };
        let loaded = |entry: &str| self.kernels.borrow().contains_key(entry);
        let all_loaded = loaded(&plan.entry) && scalar.as_ref().is_none_or(|s| loaded(&s.entry));
        if !all_loaded && crate::replay::capturing(self.stream.cu_stream().cast()) {
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
        if defer && d.is_some() {
            // No builder thread: cuDNN measures the problem now, compiling as it goes.
            let Some(pending) = super::background::submit(self, &target) else {
                return refused();
            };
            self.deferred.borrow_mut().insert(*key, pending);
        }
        self.directs.borrow_mut().insert(*key, d.clone());
        d
    }

    /// For a problem the kernel runs until the builder thread has built cuDNN's engines
    /// for it: once it has (and the stream is not being captured, where measuring cannot
    /// run), keeps what it built as the plans of this context's graph of the problem
    /// (alpha 1, beta 0, 16-byte aligned: the graph the measurement and the common call
    /// use), decides that the kernel no longer runs the problem, and says so. A build
    /// that failed leaves the plans to be built by the measurement, as without the
    /// builder.
    fn adopt_built(&self, key: &ProblemKey, p: &RawProblem<'_>) -> bool {
        // Every kernel call that is not a resolved one comes here: no hashing when nothing
        // waits.
        if self.deferred.borrow().is_empty() {
            return false;
        }
        let Some(pending) = self.deferred.borrow().get(key).cloned() else {
            return false;
        };
        if !pending.is_done() || crate::replay::capturing(self.stream.cu_stream().cast()) {
            return false;
        }
        self.deferred.borrow_mut().remove(key);
        self.directs.borrow_mut().insert(*key, None);
        if let Some(Ok(built)) = pending.take() {
            // Without the graph the plans are dropped: the measurement builds its own.
            if let Ok(ours) = self.engine_graph(p, 1.0, 0.0, 16) {
                let theirs = std::rc::Rc::new(built.graph);
                let mut engines = self.engines.borrow_mut();
                for b in built.plans {
                    let plan =
                        std::rc::Rc::new(super::graph::Plan::adopt(b, std::rc::Rc::clone(&theirs)));
                    let at = (std::rc::Rc::as_ptr(&ours) as usize, plan.config);
                    engines.plans.insert(at, (std::rc::Rc::clone(&ours), plan));
                }
                self.adopted.set(self.adopted.get() + 1);
            }
        }
        true
    }

    /// The entry point `name` of the kernel (loading its image first if need be).
    fn kernel(&self, name: &str) -> Option<CudaFunction> {
        let mut kernels = self.kernels.borrow_mut();
        // Looked up by `&str` first: a timing asks for the waiting kernel before each
        // batch, and a key made for the lookup would allocate each time.
        if let Some(f) = kernels.get(name) {
            return f.clone();
        }
        let f = self.load_kernel(name);
        kernels.insert(name.to_owned(), f.clone());
        f
    }

    /// Entry point `name` from a module another context of the same CUDA context loaded
    /// ([`MODULES`]), else from its image for this device's compute capability, else
    /// from its PTX.
    fn load_kernel(&self, name: &str) -> Option<CudaFunction> {
        use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
        let key = self.ctx.cu_ctx() as usize;
        // Held while loading: two contexts starting at once load one module.
        let mut modules = MODULES.lock().unwrap_or_else(PoisonError::into_inner);
        modules.retain(|(_, _, m)| m.strong_count() > 0);
        let shared = modules
            .iter()
            .find(|(k, n, _)| *k == key && *n == name)
            .and_then(|(_, _, m)| m.upgrade());
        if let Some(m) = shared {
            return m.load_function(name).ok();
        }
        let major = self
            .ctx
            .attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
            .ok();
        let cubins = match major {
            Some(8) => Some(&SM_80),
            Some(9) => Some(&SM_90),
            _ => None,
        };
        let module = cubins
            .and_then(|packs| image(packs, name))
            .and_then(|cubin| {
                let cubin = Ptx::from_binary(cubin.to_vec());
                self.ctx.load_module(cubin).ok()
            })
            .or_else(|| {
                let ptx = std::str::from_utf8(image(&PTX, name)?).ok()?;
                self.ctx.load_module(Ptx::from_src(ptx)).ok()
            })?;
        modules.push((key, name.to_owned(), Arc::downgrade(&module)));
        module.load_function(name).ok()
    }

    /// Whether [`Self::hold`] can hold this context's stream (its kernel loads; loading
    /// it the first time costs 0.2-0.3 ms).
    pub(crate) fn can_hold(&self) -> bool {
        self.kernel(HOLD).is_some()
    }

    /// Makes the work issued next on the context's stream wait `ms` milliseconds on the
    /// GPU (at most [`MAX_HOLD_MS`]): a kernel of one thread that only waits
    /// (`hold.cu`). False, and nothing issued, where that kernel is not available.
    pub(crate) fn hold(&self, ms: f32) -> Result<bool> {
        let Some(function) = self.kernel(HOLD) else {
            return Ok(false);
        };
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped
        let mut ns = (f64::from(ms.clamp(0.0, MAX_HOLD_MS)) * 1e6) as u64;
        let mut args: [*mut c_void; 1] = [(&raw mut ns).cast()];
        self.bind()?;
        // SAFETY: the entry point takes one unsigned 64-bit integer, and `args` points at
        // one, alive across the call; the kernel touches no memory. The stream is this
        // context's, whose CUDA context was just made current.
        let launched = unsafe {
            cudarc::driver::result::launch_kernel(
                function.cu_function(),
                (1, 1, 1),
                (1, 1, 1),
                0,
                self.stream.cu_stream(),
                &mut args,
            )
        };
        launched.map_err(|e| match Error::from(e) {
            Error::Cuda(msg) => Error::Cuda(format!("launching the wait before a timing: {msg}")),
            other => other,
        })?;
        Ok(true)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry point the kernel's source defines (each entry-point macro's lines, once
    /// per expansion of that macro), read from the source rather than from the packs.
    fn source_entry_points() -> Vec<String> {
        let source = include_str!("../kernels/depthwise_dgrad.cu");
        // `#define ENTRIES(SUFFIX, T)` and the like: each macro's stems.
        let mut macros: Vec<(&str, Vec<&str>)> = Vec::new();
        let mut lines = source.lines().peekable();
        while let Some(line) = lines.next() {
            let Some(name) = line
                .strip_prefix("#define ")
                .and_then(|l| l.split_once("(SUFFIX, T)"))
                .map(|(n, _)| n)
            else {
                continue;
            };
            let mut stems = Vec::new();
            while let Some(stem) = lines
                .peek()
                .and_then(|l| l.split_once('(')?.1.split_once("_##SUFFIX"))
                .map(|(s, _)| s)
            {
                stems.push(stem);
                lines.next();
            }
            macros.push((name, stems));
        }
        // Their expansions, `ENTRIES(f32, float)`, in order.
        let mut out = Vec::new();
        let mut suffixes = Vec::new();
        for line in source.lines() {
            for (name, stems) in &macros {
                let Some(rest) = line.strip_prefix(&format!("{name}(")) else {
                    continue;
                };
                if let Some((suffix, _)) = rest.split_once(',') {
                    suffixes.push(suffix);
                    out.extend(stems.iter().map(|s| format!("{s}_{suffix}")));
                }
            }
        }
        assert_eq!(
            macros.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            ["ENTRIES", "ENTRIES_HALF_AND_F32"]
        );
        assert!(
            macros[0].1.len() > 30 && macros[1].1.len() == 9,
            "{macros:?}"
        );
        assert_eq!(
            suffixes,
            ["f32", "f16", "bf16", "f64", "f32", "f16", "bf16"]
        );
        out
    }

    /// The names of a pack's records, in order.
    fn names(pack: &[u8]) -> Vec<String> {
        records(pack)
            .map(|(n, _)| String::from_utf8(n.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn each_pack_holds_every_entry_point_once_in_its_own_image() {
        // The depthwise kernel's packs come first, then hold.cu's, of one entry point.
        let entries = [source_entry_points(), vec![HOLD.to_owned()]];
        for packs in [PTX, SM_80, SM_90] {
            assert_eq!(packs.map(names), entries);
        }
        for name in entries.iter().flatten() {
            for cubins in [SM_80, SM_90] {
                let cubin = image(&cubins, name).unwrap();
                assert_eq!(&cubin[..4], b"\x7fELF", "{name}");
            }
            let ptx = std::str::from_utf8(image(&PTX, name).unwrap()).unwrap();
            // Its own entry point and no other.
            assert_eq!(ptx.matches(".entry ").count(), 1, "{name}");
            assert!(ptx.contains(&format!(".entry {name}(")), "{name}");
            assert!(ptx.contains(".target sm_60"), "{name}");
        }
    }

    #[test]
    fn a_missing_name_or_a_malformed_pack_finds_no_image() {
        let record = |name: &str, image: &[u8]| {
            let mut r = (name.len() as u32).to_le_bytes().to_vec();
            r.extend((image.len() as u32).to_le_bytes());
            r.extend(name.as_bytes());
            r.extend(image);
            r.resize(r.len().next_multiple_of(8), 0);
            r
        };
        let mut pack = record("alpha", b"abc");
        pack.extend(record("beta_long_name", b"0123456789"));
        assert_eq!(image(&[&pack], "alpha"), Some(&b"abc"[..]));
        assert_eq!(image(&[&pack], "beta_long_name"), Some(&b"0123456789"[..]));
        assert_eq!(image(&[&pack], "beta"), None);
        assert_eq!(image(&[&pack], "alph"), None);
        assert_eq!(image(&[&[]], "alpha"), None);
        // A name only a later pack holds.
        let other = record("gamma", b"xyz");
        assert_eq!(image(&[&pack, &other], "gamma"), Some(&b"xyz"[..]));
        assert_eq!(image(&[&pack, &other], "alpha"), Some(&b"abc"[..]));
        // Cut anywhere: no panic, and no image that runs past the end.
        for cut in 0..pack.len() {
            let found = image(&[&pack[..cut]], "beta_long_name");
            assert!(
                found.is_none() || found == Some(&b"0123456789"[..]),
                "{cut}"
            );
        }
        // A length that runs past the end.
        let mut bad = record("alpha", b"abc");
        bad[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(image(&[&bad], "alpha"), None);
        bad[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(image(&[&bad], "alpha"), None);
    }
}
