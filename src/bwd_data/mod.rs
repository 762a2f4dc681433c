//! Convolution backward data (`dx = alpha * dgrad(w, dy) + beta * dx`) on a
//! [`CudnnContext`]: one file per concern, each adding methods to the context.
//!
//! - `support.rs`: THE support table (compile-time bounds, run-time rows, dispatch arms);
//! - `legacy.rs`: `cudnnConvolutionBackwardData`, its heuristic, find and workspace query;
//! - `graph.rs`: the graph-API objects of this operation (op graph, plans, variant packs);
//! - `engine.rs`: the context's graph-API path (plans kept, engine heuristics, autotune);
//! - `policy.rs`: the default choice (`DefaultAlgo`), measured tier and saved caches;
//! - `twin.rs`, `transposed.rs`: depthwise NCHW problems (f32; large strided f16/bf16)
//!   run through their NHWC twin by the default choice;
//! - `direct.rs`, `kernel.rs`: depthwise NCHW problems (2-d at stride 1, 3-d) run by a
//!   kernel of our own (`src/kernels/`) by the default choice;
//! - `background.rs`: cuDNN's run-time-compiled engines built off the caller's thread
//!   for the measured default (the kernel runs those problems meanwhile);
//! - `typed.rs`: the original crate's generic, trait-bound API;
//! - here: the run-time entry points every path shares (validation, workspace size,
//!   routing to the legacy or graph API, CUDA-graph replay of repeated calls, and the
//!   default choice's calls resolved once per problem).

pub mod background;
mod beside;
pub(crate) mod direct;
mod engine;
pub mod graph;
mod kernel;
mod legacy;
mod policy;
pub mod support;
mod transposed;
pub(crate) mod twin;
mod typed;

use std::ffi::c_void;

use crate::context::CudnnContext;
use crate::convolution::{Route, SelectedAlgo};
use crate::error::Result;
use crate::math_type::MathType;
use crate::problem::{ProblemKey, RawPointers, RawProblem};

impl CudnnContext {
    /// Workspace bytes for `route` run with math type `math`. For the graph API this is
    /// the plan for alpha = 1, beta = 0 and 16-byte aligned addresses, the common call.
    pub fn workspace_size_with(
        &self,
        p: RawProblem<'_>,
        route: Route,
        math: MathType,
    ) -> Result<Option<usize>> {
        // Shapes first: a graph built from shapes that do not fit is a cuDNN BAD_PARAM.
        p.geometry()?;
        self.workspace_size_checked(p, route, math)
    }

    /// Workspace bytes the call with `algo` needs, with the math type it runs with; the
    /// shapes are checked first.
    pub fn workspace_size_selected(
        &self,
        p: RawProblem<'_>,
        algo: SelectedAlgo,
    ) -> Result<Option<usize>> {
        p.geometry()?;
        self.workspace_size_checked(p, algo.route(), p.resolve_math(algo.math_type()))
    }

    /// [`Self::workspace_size_with`] for a problem whose shapes have been checked.
    pub(crate) fn workspace_size_checked(
        &self,
        p: RawProblem<'_>,
        route: Route,
        math: MathType,
    ) -> Result<Option<usize>> {
        // The default choice describes a filter of either layout in dy's (see
        // `RawProblem::filter_in_dy_format`), here as where it runs.
        let filter = (route == Route::Default)
            .then(|| p.filter_in_dy_format())
            .flatten();
        let p = filter.as_ref().map_or(p, |w| p.with_filter(w));
        if route == Route::Default {
            let key = ProblemKey::new(&p, Route::Default, math);
            if let Some(direct) = self.direct(&key, &p) {
                return Ok(direct.workspace());
            }
            if let Some(twin) = self.twin(&key, &p) {
                return Ok(Some(self.twin_workspace(&p, &twin, math)?));
            }
        }
        let route = self.resolve_route(&p, route, math)?;
        let key = ProblemKey::new(&p, route, math);
        if let Some(size) = self.workspace_sizes.borrow_mut().get(&key) {
            return Ok(*size);
        }
        let size = match route {
            Route::Legacy(algo) => self.query_workspace_size(p, algo, math)?,
            Route::Engine(choice) => {
                let plan = self.engine_plan(&p, choice, math, 1.0, 0.0, 16, usize::MAX)?;
                (plan.workspace > 0).then_some(plan.workspace)
            }
            // Resolved above; kept total.
            Route::Default => {
                let choice = Some(self.default_config(&p, math)?);
                let plan = self.engine_plan(&p, choice, math, 1.0, 0.0, 16, usize::MAX)?;
                (plan.workspace > 0).then_some(plan.workspace)
            }
        };
        self.workspace_sizes.borrow_mut().insert(key, size);
        Ok(size)
    }

    /// `dx = alpha * dgrad(w, dy) + beta * dx` on raw device addresses. Checks the support
    /// table for `kind`, the shapes, and the workspace size before anything runs.
    ///
    /// # Safety
    /// The addresses must point to device memory of this context holding at least as
    /// many elements as the descriptors say (the workspace: `workspace.1` bytes), with
    /// `dx` writable and not overlapping the inputs, all valid until the work completes.
    pub unsafe fn backward_data_raw(
        &self,
        alpha: f64,
        p: RawProblem<'_>,
        algo: SelectedAlgo,
        ptrs: RawPointers,
        beta: f64,
    ) -> Result<()> {
        p.validate(algo.kind())?;
        // SAFETY: forwarded from this function's contract; validated just now.
        unsafe { self.backward_data_validated(alpha, p, algo, ptrs, beta) }
    }

    /// [`Self::backward_data_raw`] for a problem the caller has validated
    /// ([`RawProblem::validate`] for `algo.kind()`): table, ranks and shapes are not
    /// checked again. The workspace size still is (it depends on the algorithm).
    ///
    /// # Safety
    /// As [`Self::backward_data_raw`], and `p.validate(algo.kind())` succeeded.
    pub(crate) unsafe fn backward_data_validated(
        &self,
        alpha: f64,
        p: RawProblem<'_>,
        algo: SelectedAlgo,
        ptrs: RawPointers,
        beta: f64,
    ) -> Result<()> {
        let math = p.resolve_math(algo.math_type());
        // SAFETY: forwarded from this function's contract.
        unsafe { self.execute(alpha, p, algo.route(), math, ptrs, beta) }
    }

    /// Runs `algo` on any configuration cuDNN accepts, bypassing the support table (shapes
    /// are still checked): for the sweep that measures what cuDNN supports and so
    /// maintains the table. Users want [`Self::backward_data_raw`].
    ///
    /// # Safety
    /// As [`Self::backward_data_raw`].
    pub unsafe fn probe_backward_data(
        &self,
        alpha: f64,
        p: RawProblem<'_>,
        route: Route,
        ptrs: RawPointers,
        beta: f64,
    ) -> Result<()> {
        p.geometry()?;
        let math = p.conv.effective_math_type(p.dx.dtype());
        // SAFETY: forwarded from this function's contract.
        unsafe { self.execute(alpha, p, route, math, ptrs, beta) }
    }

    /// # Safety
    /// As [`Self::backward_data_raw`]; the problem has been validated.
    pub(crate) unsafe fn execute(
        &self,
        alpha: f64,
        p: RawProblem<'_>,
        route: Route,
        math: MathType,
        ptrs: RawPointers,
        beta: f64,
    ) -> Result<()> {
        let algo = match route {
            Route::Legacy(algo) => algo,
            Route::Engine(config) => {
                // SAFETY: forwarded from this function's contract.
                return unsafe { self.execute_engine(alpha, p, config, false, math, ptrs, beta) };
            }
            Route::Default => {
                // A filter of either layout described in dy's (as its workspace query did).
                let filter = p.filter_in_dy_format();
                let p = filter.as_ref().map_or(p, |w| p.with_filter(w));
                // The common call (alpha 1, beta 0) of a problem that ran before: one lookup.
                // Exactly 1 and 0 (bit patterns): the scalars the remembered plan was built for.
                let common = alpha.to_bits() == 1f64.to_bits() && beta.to_bits() == 0f64.to_bits();
                let dkey = ProblemKey::new(&p, Route::Default, math);
                let key = common.then_some(dkey);
                if let Some(r) = key.as_ref().and_then(|k| self.resolved(k)) {
                    // SAFETY: forwarded from this function's contract.
                    if unsafe { self.run_resolved(&r, &ptrs)? } {
                        return Ok(());
                    }
                }
                if let Some(direct) = self.direct(&dkey, &p) {
                    // A problem the kernel runs only until cuDNN's engines for it are
                    // built is looked up by each call (see `Self::direct`).
                    if let Some(key) = key.filter(|k| !self.deferred.borrow().contains_key(k)) {
                        // Later calls of the problem find it in one lookup.
                        let resolved = graph::Resolved {
                            runs: graph::Runs::Direct(std::rc::Rc::clone(&direct)),
                            workspace: direct.workspace().unwrap_or(0),
                            align: 0,
                            replay: key,
                        };
                        let resolved = std::rc::Rc::new(resolved);
                        self.engines.borrow_mut().resolved.insert(key, resolved);
                    }
                    // SAFETY: forwarded from this function's contract.
                    return unsafe { self.execute_direct(alpha, &direct, &ptrs, beta) };
                }
                if let Some(twin) = self.twin(&dkey, &p) {
                    // SAFETY: forwarded from this function's contract.
                    return unsafe { self.execute_twin(alpha, p, &twin, math, ptrs, beta) };
                }
                let config = self.default_config(&p, math)?;
                // SAFETY: forwarded from this function's contract.
                unsafe { self.execute_engine(alpha, p, Some(config), true, math, ptrs, beta) }?;
                if let Some(key) = &key {
                    // It ran; a failure here only means the next call resolves again.
                    let _ = self.remember_default(key, &p, config, math, &ptrs);
                }
                return Ok(());
            }
        };
        // SAFETY: forwarded from this function's contract.
        unsafe { self.execute_legacy(alpha, p, algo, math, ptrs, beta) }
    }

    /// Runs a repeated call as a CUDA graph (see [`crate::replay`]): `Ok(true)` when the
    /// work was enqueued that way, `Ok(false)` when the caller should call cuDNN directly.
    ///
    /// # Safety
    /// `call` must be the call `p`, `route`, `math`, `ptrs`, `alpha` and `beta` describe,
    /// with the addresses valid as [`Self::backward_data_raw`] requires.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn replay_or_capture(
        &self,
        p: &RawProblem<'_>,
        route: Route,
        math: MathType,
        ptrs: &RawPointers,
        alpha: f64,
        beta: f64,
        call: &dyn Fn() -> u32,
    ) -> Result<bool> {
        // SAFETY: forwarded; the key is the one `p`, `route` and `math` make.
        unsafe {
            self.replay_keyed(
                |k| k.matches(p, route, math),
                || ProblemKey::new(p, route, math),
                ptrs,
                alpha,
                beta,
                call,
            )
        }
    }

    /// Points cuDNN at `s` (this context's private stream, for a capture there) and
    /// enqueues `call` on it; whether both succeeded. The caller points cuDNN back at the
    /// context's stream ([`Self::apply_stream`]).
    pub(crate) fn issue_on(
        &self,
        s: cudarc::driver::sys::CUstream,
        call: &dyn Fn() -> u32,
    ) -> bool {
        // SAFETY: the handle is live; `s` is a stream of this context (the caller's word).
        let set = unsafe { (self.lib.api.cudnnSetStream)(self.as_raw(), s.cast()) };
        set == 0 && call() == 0
    }

    /// [`Self::replay_or_capture`] for a call whose key the caller has: `matches` tells
    /// whether a cached key is the call's, `make` makes it.
    ///
    /// # Safety
    /// As [`Self::replay_or_capture`], for the call the key describes.
    unsafe fn replay_keyed(
        &self,
        matches: impl Fn(&ProblemKey) -> bool,
        make: impl FnOnce() -> ProblemKey,
        ptrs: &RawPointers,
        alpha: f64,
        beta: f64,
        call: &dyn Fn() -> u32,
    ) -> Result<bool> {
        let issue = |s: cudarc::driver::sys::CUstream| self.issue_on(s, call);
        // SAFETY: the stream is this context's; the key is the call's problem, route and
        // math type, the addresses and scalars are compared by the cache, and they are
        // valid now (this function's contract); `issue` only points cuDNN at the stream it
        // is given and enqueues the call there.
        unsafe {
            crate::replay::replay_or_capture(
                &self.graphs,
                self.stream.cu_stream().cast::<c_void>(),
                matches,
                make,
                ptrs,
                (alpha, beta),
                issue,
                || self.apply_stream(),
            )
        }
    }

    /// Remembers what the default choice's call of `p` (alpha 1, beta 0, math type
    /// `math`, the choice `config`; `key` names all that) on addresses like `ptrs`
    /// resolved to, after such a call ran: the plan for their alignment and workspace. A
    /// later call of the problem then runs it through [`Self::run_resolved`]: one lookup
    /// instead of the four that choose the plan (and, on the one-call paths, the
    /// validation and the workspace query). Problems the default choice runs through
    /// their NHWC twin are not remembered.
    fn remember_default(
        &self,
        key: &ProblemKey,
        p: &RawProblem<'_>,
        config: crate::convolution::EngineConfig,
        math: MathType,
        ptrs: &RawPointers,
    ) -> Result<()> {
        let align = graph::alignment(ptrs);
        let workspace = ptrs.workspace.1;
        // What `execute_engine` just did for this call: lookups now.
        let graph = self.engine_graph(p, 1.0, 0.0, align)?;
        let plan = self.default_plan(p, config, math, 1.0, 0.0, align, workspace)?;
        let resolved = graph::Resolved {
            replay: ProblemKey::new(p, Route::Engine(Some(plan.config)), math),
            runs: graph::Runs::Plan {
                _graph: graph,
                plan,
            },
            workspace,
            align,
        };
        self.engines
            .borrow_mut()
            .resolved
            .insert(*key, std::rc::Rc::new(resolved));
        Ok(())
    }

    /// What the default choice's call of the problem `key` names resolved to, if a call
    /// of it ran and was remembered (see [`Self::remember_default`]).
    pub(crate) fn resolved(&self, key: &ProblemKey) -> Option<std::rc::Rc<graph::Resolved>> {
        self.engines.borrow_mut().resolved.get(key).cloned()
    }

    /// Runs a resolved default-choice call (alpha 1, beta 0) on `ptrs`, as
    /// [`Self::execute`] would: `Ok(false)`, and nothing runs, when the addresses'
    /// alignment or the workspace differ from those it was resolved for.
    ///
    /// # Safety
    /// As [`Self::backward_data_raw`] for the problem `r` was resolved for (which was
    /// validated before it was remembered).
    pub(crate) unsafe fn run_resolved(
        &self,
        r: &graph::Resolved,
        ptrs: &RawPointers,
    ) -> Result<bool> {
        let plan = match &r.runs {
            graph::Runs::Direct(direct) => {
                // SAFETY: `direct` is the problem's plan; the memory is this function's
                // contract.
                unsafe { self.execute_direct(1.0, direct, ptrs, 0.0) }?;
                return Ok(true);
            }
            graph::Runs::Plan { plan, .. } => plan,
        };
        if graph::alignment(ptrs) != r.align || ptrs.workspace.1 != r.workspace {
            return Ok(false);
        }
        self.bind()?;
        let (lib, handle) = (self.lib, self.as_raw());
        let call = || {
            // SAFETY: the plan was built for this problem, scalars and alignment; the
            // memory is this function's contract.
            unsafe { graph::execute(lib, handle, plan, ptrs) }
                .unwrap_or(crate::error::CudnnError::InternalError.code())
        };
        if crate::replay::enabled()
            // SAFETY: `call` is the call the replay key describes; the addresses are this
            // function's contract.
            && unsafe { self.replay_keyed(|k| *k == r.replay, || r.replay, ptrs, 1.0, 0.0, &call)? }
        {
            return Ok(true);
        }
        match crate::error::CudnnError::from_code(call()) {
            None => Ok(true),
            Some(e) => Err(crate::error::Error::cudnn(
                e,
                format!(
                    "running graph-API {} for {}",
                    plan.config,
                    r.replay.to_text()
                ),
            )),
        }
    }
}
