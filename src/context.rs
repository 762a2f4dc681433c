//! `CudnnContext`: a cuDNN handle bound to a CUDA device and stream, and the
//! backward-data operations on it.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use cudarc::driver::{sys::CUdeviceptr, CudaContext, CudaSlice, CudaStream};

use crate::cache::BoundedCache;
use crate::convolution::support;
use crate::convolution::{
    BestHeuristic, BwdDataAlgo, ConvolutionBwdDataAlgo, ConvolutionDescriptor, Engine,
    EngineConfig, Filter, FilterDescriptor, Route, SupportedConvBwdData,
};
use crate::data_type::{DataType, Scaling};
use crate::determinism::Determinism;
use crate::engine::{self, OpGraph, Plan};
use crate::error::{CudnnError, Error, Result};
use crate::library::{self, CudnnLibrary};
use crate::math_type::MathType;
use crate::memory::{GpuBuffer, GpuBufferMut};
use crate::problem::ProblemKey;
pub use crate::problem::{RawPointers, RawProblem};
use crate::raw_descriptor::check;
use crate::sys::{self, BwdDataAlgoPerf};
use crate::tensor::{SupportedType, Tensor, TensorDescriptor};

struct RawHandle(sys::CudnnHandle);

/// A cuDNN handle on one CUDA device, issuing work to one stream.
///
/// `Send` but not `Sync`: cuDNN allows a handle to be used from any thread, but by one
/// thread at a time.
pub struct CudnnContext {
    handle: RawHandle,
    lib: &'static CudnnLibrary,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Workspace sizes already asked of cuDNN, so a repeated call asks no more.
    workspace_sizes: std::cell::RefCell<BoundedCache<ProblemKey, Option<usize>>>,
    /// Repeated calls captured as CUDA graphs (see `graph_cache`).
    graphs: std::cell::RefCell<crate::graph_cache::GraphCache<ProblemKey>>,
    /// Graph-API operation graphs, plans and `BestEngine` choices (see `engine`).
    engines: std::cell::RefCell<EngineCache>,
    /// Whether `DefaultAlgo` times engines once per problem (see [`Self::set_benchmark`]).
    benchmark: std::cell::Cell<bool>,
    /// How long one measurement of the default choice may take.
    benchmark_budget: std::cell::Cell<std::time::Duration>,
    /// `(timed, left out)` of the last engine measurement.
    last_find: std::cell::Cell<(usize, usize)>,
}

/// Calls timed back to back per trial when measuring engines.
const CALLS_PER_TRIAL: usize = 5;

/// The default time budget of one measurement (see [`CudnnContext::set_benchmark_budget`]).
pub const DEFAULT_BENCHMARK_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// An operation graph is fixed by the problem, the scaling factors and the alignment the
/// addresses have.
#[derive(Clone, PartialEq, Eq, Hash)]
struct GraphKey {
    problem: ProblemKey,
    scalars: (u64, u64),
    align: i64,
}

impl GraphKey {
    fn new(p: &RawProblem<'_>, alpha: f64, beta: f64, align: i64) -> Self {
        Self {
            problem: ProblemKey::new(p, Route::Engine(None), MathType::Default),
            scalars: (alpha.to_bits(), beta.to_bits()),
            align,
        }
    }
}

/// A plan is the engine configuration built for one operation graph (by the graph's
/// address: the entry keeps its graph alive, so no other graph can take that address).
type PlanKey = (usize, EngineConfig);

/// What the graph-API path keeps per context, each cache bounded.
#[derive(Default)]
struct EngineCache {
    graphs: BoundedCache<GraphKey, std::rc::Rc<OpGraph>>,
    plans: BoundedCache<PlanKey, (std::rc::Rc<OpGraph>, std::rc::Rc<Plan>)>,
    /// `BestEngine`'s choice per problem and math type.
    choices: BoundedCache<ProblemKey, EngineConfig>,
    /// `DefaultAlgo`'s untimed choice per problem and math type.
    defaults: BoundedCache<ProblemKey, EngineConfig>,
    /// `DefaultAlgo`'s measured choice per problem and math type (benchmarking on).
    measured: BoundedCache<ProblemKey, Engine>,
}

// SAFETY: cuDNN handles may move between threads; `CudnnContext` is not `Sync`, so no two
// threads use the handle at once. The `Rc`s of the engine cache never leave the context
// (a call clones one only for its own duration), so they move with it as a whole.
unsafe impl Send for CudnnContext {}

/// cuDNN handles given back by dropped contexts, for the next context on the same CUDA
/// context: creating one costs milliseconds and cuDNN keeps some memory per handle it
/// ever created, so programs that make and drop many handles reuse a few instead. Each
/// entry keeps its CUDA context retained, so the handle stays valid while pooled.
struct PooledHandle {
    handle: RawHandle,
    ctx: Arc<CudaContext>,
}

// SAFETY: a pooled handle is used by no thread until a context takes it back out.
unsafe impl Send for PooledHandle {}

static HANDLE_POOL: std::sync::Mutex<Vec<PooledHandle>> = std::sync::Mutex::new(Vec::new());
const HANDLE_POOL_LIMIT: usize = 8;

fn handle_pool() -> std::sync::MutexGuard<'static, Vec<PooledHandle>> {
    HANDLE_POOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Drop for CudnnContext {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        let mut pool = handle_pool();
        if pool.len() < HANDLE_POOL_LIMIT {
            pool.push(PooledHandle {
                handle: RawHandle(self.handle.0),
                ctx: Arc::clone(&self.ctx),
            });
            return;
        }
        drop(pool);
        // SAFETY: the handle was created by cudnnCreate of this library and, not pooled,
        // is destroyed once, here.
        unsafe {
            (self.lib.api.cudnnDestroy)(self.handle.0);
        }
    }
}

impl CudnnContext {
    /// A context on CUDA device `ordinal`, issuing work to the device's default stream.
    pub fn new(ordinal: usize) -> Result<Self> {
        let ctx = Self::cuda_context(ordinal)?;
        let stream = ctx.default_stream();
        Self::with_stream(stream)
    }

    /// The cudarc context of device `ordinal`, checked for driver and device first.
    pub fn cuda_context(ordinal: usize) -> Result<Arc<CudaContext>> {
        library::guard_cudarc("creating a CUDA context", || {
            let count = CudaContext::device_count()?;
            if ordinal >= usize::try_from(count).unwrap_or(0) {
                return Err(Error::Cuda(format!(
                    "no CUDA device {ordinal}: {count} device(s) visible"
                )));
            }
            Ok(CudaContext::new(ordinal)?)
        })
    }

    /// A context issuing work to `stream` (on the stream's device).
    pub fn with_stream(stream: Arc<CudaStream>) -> Result<Self> {
        let lib = library::cudnn()?;
        let ctx = Arc::clone(stream.context());
        ctx.bind_to_thread()?;
        let pooled = {
            let mut pool = handle_pool();
            pool.iter()
                .position(|p| p.ctx.cu_ctx() == ctx.cu_ctx())
                .map(|i| pool.swap_remove(i).handle.0)
        };
        let handle = if let Some(handle) = pooled {
            handle
        } else {
            let mut handle: sys::CudnnHandle = std::ptr::null_mut();
            // SAFETY: cudnnCreate writes one handle; the device's context is current.
            let status = unsafe { (lib.api.cudnnCreate)(&raw mut handle) };
            check(status, "creating a cuDNN handle")?;
            handle
        };
        let this = Self {
            handle: RawHandle(handle),
            lib,
            ctx,
            stream,
            workspace_sizes: std::cell::RefCell::new(BoundedCache::default()),
            graphs: std::cell::RefCell::new(crate::graph_cache::GraphCache::new()),
            engines: std::cell::RefCell::new(EngineCache::default()),
            benchmark: std::cell::Cell::new(false),
            benchmark_budget: std::cell::Cell::new(DEFAULT_BENCHMARK_BUDGET),
            last_find: std::cell::Cell::new((0, 0)),
        };
        this.apply_stream()?;
        Ok(this)
    }

    fn apply_stream(&self) -> Result<()> {
        // SAFETY: the handle is live and the stream belongs to this context.
        let status = unsafe {
            (self.lib.api.cudnnSetStream)(self.handle.0, self.stream.cu_stream().cast::<c_void>())
        };
        check(status, "setting the cuDNN stream")
    }

    /// Issues later work to `stream`, which must belong to this context's device.
    pub fn set_stream(&mut self, stream: Arc<CudaStream>) -> Result<()> {
        if stream.context().cu_ctx() != self.ctx.cu_ctx() {
            return Err(Error::DeviceMismatch(
                "the stream belongs to another CUDA context".into(),
            ));
        }
        self.stream = stream;
        self.apply_stream()
    }

    /// The stream work is issued to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The raw handle, for interop.
    pub fn as_raw(&self) -> sys::CudnnHandle {
        self.handle.0
    }

    /// Version of the loaded cuDNN, (major, minor, patch).
    pub fn version(&self) -> (usize, usize, usize) {
        self.lib.version_tuple()
    }

    /// CUDA runtime version cuDNN was built against (e.g. 13000).
    pub fn cuda_version(&self) -> usize {
        // SAFETY: takes no arguments, returns a number.
        unsafe { (self.lib.api.cudnnGetCudartVersion)() }
    }

    /// What measurements made on this context depend on besides the problem: the cuDNN
    /// version and the GPU (name and compute capability), as one line of text. Saved
    /// measurements are only used where this matches.
    pub fn environment(&self) -> String {
        let (major, minor, patch) = self.version();
        let name = self.ctx.name().unwrap_or_else(|_| "unknown GPU".into());
        let (cc_major, cc_minor) = self.ctx.compute_capability().unwrap_or((0, 0));
        format!("cuDNN {major}.{minor}.{patch} | {name} | sm_{cc_major}{cc_minor}")
    }

    /// Where cuDNN was loaded from.
    pub fn library_origin(&self) -> &str {
        &self.lib.origin
    }

    fn bind(&self) -> Result<()> {
        Ok(self.ctx.bind_to_thread()?)
    }

    /// Turns measuring on or off for [`crate::DefaultAlgo`] (and so for the one-call API),
    /// as PyTorch's `torch.backends.cudnn.benchmark`: on, the first call (or workspace
    /// query) of a problem times the engines the heuristics list on scratch buffers, within
    /// [`Self::benchmark_budget`], and later calls run the fastest. Off (the default), the
    /// choice is made without timing. Measured choices are kept either way.
    pub fn set_benchmark(&self, on: bool) {
        self.benchmark.set(on);
    }

    /// Whether [`crate::DefaultAlgo`] measures (see [`Self::set_benchmark`]).
    pub fn benchmark(&self) -> bool {
        self.benchmark.get()
    }

    /// Sets how long one measurement of a problem may take (default 2 s): candidates
    /// not reached by then are left out (and counted in [`Self::last_find_report`]).
    pub fn set_benchmark_budget(&self, budget: std::time::Duration) {
        self.benchmark_budget.set(budget);
    }

    /// How long one measurement of a problem may take.
    pub fn benchmark_budget(&self) -> std::time::Duration {
        self.benchmark_budget.get()
    }

    /// What the last engine measurement did: `(timed, left_out)`, the number of engine
    /// configurations it timed and the number it did not reach within its time budget.
    pub fn last_find_report(&self) -> (usize, usize) {
        self.last_find.get()
    }

    /// Writes the measured default choices this context holds to `path`, so that another
    /// process (Rust or Python, same cuDNN and GPU) loads them instead of measuring again
    /// (the file format of [`crate::find_cache`]).
    pub fn save_algorithm_cache(&self, path: &std::path::Path) -> Result<()> {
        let text = crate::find_cache::save_text(
            &self.environment(),
            &crate::find_cache::FindCache::default(),
            &self.measured_choices(),
        );
        std::fs::write(path, text)
            .map_err(|e| Error::InvalidArgument(format!("writing {}: {e}", path.display())))
    }

    /// Adds the measured default choices saved at `path` (by
    /// [`Self::save_algorithm_cache`] or Python's `save_algorithm_cache`); returns how
    /// many were read. A file from another cuDNN version or GPU, or a malformed one,
    /// adds nothing and is an error that says why.
    pub fn load_algorithm_cache(&self, path: &std::path::Path) -> Result<usize> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::InvalidArgument(format!("reading {}: {e}", path.display())))?;
        let source = path.display().to_string();
        match crate::find_cache::load_text(&text, &self.environment(), &source)? {
            crate::find_cache::Loaded::Foreign(why) => Err(Error::InvalidArgument(why)),
            crate::find_cache::Loaded::Entries { defaults, .. } => {
                let n = defaults.len();
                for (problem, engine) in defaults {
                    self.insert_measured_choice(&problem, engine);
                }
                Ok(n)
            }
        }
    }

    /// The measured default choices this context holds, `(problem, engine)`, for saving
    /// (the problem as text, read back by [`Self::insert_measured_choice`]).
    pub fn measured_choices(&self) -> Vec<(String, Engine)> {
        self.engines
            .borrow()
            .measured
            .iter()
            .map(|(k, e)| (k.to_text(), *e))
            .collect()
    }

    /// Adds a measured default choice saved by [`Self::measured_choices`]; `false` when the
    /// problem text does not parse.
    pub fn insert_measured_choice(&self, problem: &str, engine: Engine) -> bool {
        let Some(key) = ProblemKey::from_text(problem) else {
            return false;
        };
        self.engines.borrow_mut().measured.insert(key, engine);
        true
    }

    /// The engine configuration `DefaultAlgo` runs for the problem with math type `math`:
    /// the measured one when benchmarking is on, else the untimed choice; each made once
    /// per problem and kept.
    fn default_config(&self, p: &RawProblem<'_>, math: MathType) -> Result<EngineConfig> {
        if self.benchmark.get() {
            let key = ProblemKey::new(p, Route::Default, math);
            if let Some(e) = self.engines.borrow_mut().measured.get(&key) {
                return Ok(e.config());
            }
            let best = self.measure_default(p, math)?;
            self.engines.borrow_mut().measured.insert(key, best);
            return Ok(best.config());
        }
        let key = ProblemKey::new(p, Route::Default, math);
        if let Some(c) = self.engines.borrow_mut().defaults.get(&key) {
            return Ok(*c);
        }
        let canonical = self.engine_graph(p, 1.0, 0.0, 16)?;
        let accept = move |n: &engine::Notes| n.fit_default(math, false);
        let best = self
            .engine_candidates(&canonical, &accept, 1, engine::Sources::Instant)?
            .first()
            .map(|plan| plan.config)
            .ok_or_else(|| self.no_engine(p, false))?;
        self.engines.borrow_mut().defaults.insert(key, best);
        Ok(best)
    }

    /// Times the candidates of the default choice on scratch operands (never the caller's
    /// memory): the fastest engine.
    fn measure_default(&self, p: &RawProblem<'_>, math: MathType) -> Result<Engine> {
        let w: CudaSlice<u8> = self.stream.alloc_zeros(p.w.nbytes().max(1))?;
        let dy: CudaSlice<u8> = self.stream.alloc_zeros(p.dy.nbytes().max(1))?;
        let (wp, _gw) = GpuBuffer::device_ptr(&w, &self.stream);
        let (dyp, _gdy) = GpuBuffer::device_ptr(&dy, &self.stream);
        let accept = move |n: &engine::Notes| n.fit_default(math, false);
        // SAFETY: both scratch buffers were allocated above with the descriptors' sizes
        // and live until the measurement returns.
        let timed = unsafe {
            self.time_engines(
                p,
                wp,
                dyp,
                None,
                &accept,
                usize::MAX,
                engine::Sources::Heuristics,
                Some(self.benchmark_budget.get()),
            )?
        };
        timed
            .into_iter()
            .next()
            .map(|(e, _)| e)
            .ok_or_else(|| self.no_engine(p, false))
    }

    /// The engine [`crate::DefaultAlgo`] runs for the problem (choosing it now if this
    /// context has not yet; with benchmarking on, that measures), with its workspace size
    /// for aligned addresses and, when measured, its time.
    pub fn default_engine_raw(&self, p: RawProblem<'_>) -> Result<Engine> {
        p.validate(crate::convolution::AlgoKind::DefaultAlgo)?;
        let math = p.conv.effective_math_type(p.dx.dtype());
        let config = self.default_config(&p, math)?;
        let measured = self
            .engines
            .borrow_mut()
            .measured
            .get(&ProblemKey::new(&p, Route::Default, math))
            .filter(|e| e.config() == config && self.benchmark.get())
            .map(Engine::time);
        let plan = self.engine_plan(&p, Some(config), math, 1.0, 0.0, 16)?;
        Ok(plan.engine().with_time(measured.unwrap_or(-1.0)))
    }

    /// `Route::Default` made concrete: the engine configuration the context's default
    /// choice runs; other routes as they are.
    fn resolve_route(&self, p: &RawProblem<'_>, route: Route, math: MathType) -> Result<Route> {
        match route {
            Route::Default => Ok(Route::Engine(Some(self.default_config(p, math)?))),
            other => Ok(other),
        }
    }

    // ---- run-time (untyped) core; the typed methods below and the Python layer use it.

    /// cuDNN's heuristic: every entry it returns is read; entries that failed, that the
    /// support table does not list for this configuration, or (with
    /// `deterministic_only`) that are not deterministic are skipped; the first left wins.
    pub fn get_algorithm_raw(
        &self,
        p: RawProblem<'_>,
        deterministic_only: bool,
    ) -> Result<BestHeuristic> {
        p.validate(crate::convolution::AlgoKind::BestHeuristic)?;
        self.bind()?;
        let api = &self.lib.api;
        let math = p.conv.effective_math_type(p.dx.dtype());
        let (w, dy, dx, conv) = (p.w.raw()?, p.dy.raw()?, p.dx.raw()?, p.conv.raw_with(math)?);
        let mut perfs = [BwdDataAlgoPerf::default(); 8];
        let mut returned: c_int = 0;
        // SAFETY: descriptors are live; `perfs` has room for the 8 entries requested.
        let status = unsafe {
            (api.cudnnGetConvolutionBackwardDataAlgorithm_v7)(
                self.handle.0,
                w,
                dy,
                conv,
                dx,
                perfs.len() as c_int,
                &raw mut returned,
                perfs.as_mut_ptr(),
            )
        };
        check(
            status,
            &format!("asking the heuristic for {}", p.describe()),
        )?;
        let returned = usize::try_from(returned).unwrap_or(0).min(perfs.len());
        Self::pick(&p, &perfs[..returned], deterministic_only)
            .into_iter()
            .next()
            .ok_or_else(|| self.none_usable(&p, deterministic_only))
    }

    fn pick(
        p: &RawProblem<'_>,
        perfs: &[BwdDataAlgoPerf],
        deterministic_only: bool,
    ) -> Vec<BestHeuristic> {
        perfs
            .iter()
            .filter(|perf| perf.status == 0)
            .filter_map(|perf| {
                let algo = BwdDataAlgo::from_raw(perf.algo)?;
                let determinism = Determinism::from_raw(perf.determinism)
                    .unwrap_or(Determinism::NonDeterministic);
                let math = MathType::from_raw(perf.math_type).unwrap_or(MathType::Default);
                Some(BestHeuristic::new(
                    algo,
                    perf.time,
                    perf.memory,
                    determinism,
                    math,
                ))
            })
            .filter(|b| support::is_supported(&p.row(b.algo().kind())))
            .filter(|b| p.conv.admits_math_type(b.math_type()))
            .filter(|b| !deterministic_only || b.determinism() == Determinism::Deterministic)
            .collect()
    }

    fn none_usable(&self, p: &RawProblem<'_>, deterministic_only: bool) -> Error {
        Error::cudnn(
            CudnnError::NotSupported,
            format!(
                "cuDNN {}.{}.{} offers no {}algorithm in the support table for {}",
                self.version().0,
                self.version().1,
                self.version().2,
                if deterministic_only {
                    "deterministic "
                } else {
                    ""
                },
                p.describe()
            ),
        )
    }

    /// Workspace bytes `algo` needs for the problem; `None` when it needs none.
    pub fn workspace_size_raw(
        &self,
        p: RawProblem<'_>,
        algo: BwdDataAlgo,
    ) -> Result<Option<usize>> {
        self.workspace_size_with(
            p,
            Route::Legacy(algo),
            p.conv.effective_math_type(p.dx.dtype()),
        )
    }

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
        let route = self.resolve_route(&p, route, math)?;
        let key = ProblemKey::new(&p, route, math);
        if let Some(size) = self.workspace_sizes.borrow_mut().get(&key) {
            return Ok(*size);
        }
        let size = match route {
            Route::Legacy(algo) => self.query_workspace_size(p, algo, math)?,
            Route::Engine(choice) => {
                let plan = self.engine_plan(&p, choice, math, 1.0, 0.0, 16)?;
                (plan.workspace > 0).then_some(plan.workspace)
            }
            // Resolved above; kept total.
            Route::Default => {
                let choice = Some(self.default_config(&p, math)?);
                let plan = self.engine_plan(&p, choice, math, 1.0, 0.0, 16)?;
                (plan.workspace > 0).then_some(plan.workspace)
            }
        };
        self.workspace_sizes.borrow_mut().insert(key, size);
        Ok(size)
    }

    // ---- the graph-API path (see `engine`).

    fn engine_graph(
        &self,
        p: &RawProblem<'_>,
        alpha: f64,
        beta: f64,
        align: i64,
    ) -> Result<std::rc::Rc<OpGraph>> {
        let key = GraphKey::new(p, alpha, beta, align);
        if let Some(g) = self.engines.borrow_mut().graphs.get(&key) {
            return Ok(std::rc::Rc::clone(g));
        }
        self.bind()?;
        let graph = std::rc::Rc::new(engine::build_graph(
            self.lib,
            self.handle.0,
            p,
            alpha,
            beta,
            align,
        )?);
        self.engines
            .borrow_mut()
            .graphs
            .insert(key, std::rc::Rc::clone(&graph));
        Ok(graph)
    }

    /// The plan of `config` for a graph, built once; `None` when `accept` refuses the
    /// engine's notes.
    fn engine_config_plan(
        &self,
        graph: &std::rc::Rc<OpGraph>,
        config: EngineConfig,
        from: Option<&engine::Desc>,
        accept: impl Fn(&engine::Notes) -> bool,
    ) -> Result<Option<std::rc::Rc<Plan>>> {
        let key = (std::rc::Rc::as_ptr(graph) as usize, config);
        if let Some((_, plan)) = self.engines.borrow_mut().plans.get(&key) {
            return Ok(accept(&plan.notes).then(|| std::rc::Rc::clone(plan)));
        }
        let Some(plan) = engine::build_plan(self.lib, self.handle.0, graph, config, from, accept)?
        else {
            return Ok(None);
        };
        let plan = std::rc::Rc::new(plan);
        self.engines
            .borrow_mut()
            .plans
            .insert(key, (std::rc::Rc::clone(graph), std::rc::Rc::clone(&plan)));
        Ok(Some(plan))
    }

    /// Which engines a problem's calls may run: those fitting the math type (and, with
    /// `deterministic_only`, deterministic ones).
    fn engine_filter(
        p: &RawProblem<'_>,
        math: MathType,
        deterministic_only: bool,
    ) -> impl Fn(&engine::Notes) -> bool {
        let comp = p.conv.comp();
        move |n: &engine::Notes| n.fit(math, comp) && !(deterministic_only && n.nondeterministic)
    }

    /// The engines `sources` list for the graph that build and pass `accept`, best first;
    /// at most `limit`.
    fn engine_candidates(
        &self,
        graph: &std::rc::Rc<OpGraph>,
        accept: &dyn Fn(&engine::Notes) -> bool,
        limit: usize,
        sources: engine::Sources,
    ) -> Result<Vec<std::rc::Rc<Plan>>> {
        let mut out = Vec::new();
        for c in engine::candidates(self.lib, graph, sources)? {
            if out.len() >= limit {
                break;
            }
            // An engine the heuristic lists may still refuse to build: skip it.
            if let Ok(Some(plan)) =
                self.engine_config_plan(graph, c.config, c.desc.as_ref(), accept)
            {
                out.push(plan);
            }
        }
        Ok(out)
    }

    fn no_engine(&self, p: &RawProblem<'_>, deterministic_only: bool) -> Error {
        Error::cudnn(
            CudnnError::NotSupported,
            format!(
                "cuDNN {}.{}.{} offers no {}graph-API engine for {} with math type {}",
                self.version().0,
                self.version().1,
                self.version().2,
                if deterministic_only {
                    "deterministic "
                } else {
                    ""
                },
                p.describe(),
                p.conv.math_type().name()
            ),
        )
    }

    /// The plan a call with these scalars and alignment runs: `config`, or `BestEngine`'s
    /// choice (made once per problem and math type, for alpha = 1, beta = 0 and aligned
    /// addresses, and kept; another graph rebuilds the same engine, or chooses again when
    /// that engine refuses it).
    fn engine_plan(
        &self,
        p: &RawProblem<'_>,
        config: Option<EngineConfig>,
        math: MathType,
        alpha: f64,
        beta: f64,
        align: i64,
    ) -> Result<std::rc::Rc<Plan>> {
        let graph = self.engine_graph(p, alpha, beta, align)?;
        if let Some(config) = config {
            return self
                .engine_config_plan(&graph, config, None, |_| true)?
                .ok_or_else(|| self.no_engine(p, false));
        }
        let key = ProblemKey::new(p, Route::Engine(None), math);
        let chosen = self.engines.borrow_mut().choices.get(&key).copied();
        let chosen = if let Some(c) = chosen {
            c
        } else {
            let canonical = self.engine_graph(p, 1.0, 0.0, 16)?;
            let best = self
                .engine_candidates(
                    &canonical,
                    &Self::engine_filter(p, math, false),
                    1,
                    engine::Sources::Heuristics,
                )?
                .first()
                .map(|plan| plan.config)
                .ok_or_else(|| self.no_engine(p, false))?;
            self.engines.borrow_mut().choices.insert(key, best);
            best
        };
        if let Ok(Some(plan)) = self.engine_config_plan(&graph, chosen, None, |_| true) {
            return Ok(plan);
        }
        self.engine_candidates(
            &graph,
            &Self::engine_filter(p, math, false),
            1,
            engine::Sources::Heuristics,
        )?
        .into_iter()
        .next()
        .ok_or_else(|| self.no_engine(p, false))
    }

    /// The graph-API heuristic's first engine for the problem that fits the descriptor's
    /// math type (and, with `deterministic_only`, is deterministic): what `BestEngine`
    /// runs when not asked for determinism.
    pub fn get_engine_raw(&self, p: RawProblem<'_>, deterministic_only: bool) -> Result<Engine> {
        p.validate(crate::convolution::AlgoKind::Engine)?;
        let math = p.conv.effective_math_type(p.dx.dtype());
        let graph = self.engine_graph(&p, 1.0, 0.0, 16)?;
        self.engine_candidates(
            &graph,
            &Self::engine_filter(&p, math, deterministic_only),
            1,
            engine::Sources::Heuristics,
        )?
        .first()
        .map(|plan| plan.engine())
        .ok_or_else(|| self.no_engine(&p, deterministic_only))
    }

    /// Autotune: builds the graph API's engines for the problem, every configuration its
    /// heuristics rank (each knob setting of modes A, B and the fallback list) and then
    /// every other engine (those that fit the descriptor's math type, `deterministic_only`
    /// and `max_workspace`; at most `limit`, and no more than `budget` allows: see
    /// [`Self::last_find_report`] for what was left out), and times each on the given
    /// inputs (one warm-up run, then the best of three trials of five calls; an engine ten times slower than
    /// the fastest so far on its warm-up is not run again), writing into a scratch `dx`.
    /// Fastest first.
    ///
    /// # Safety
    /// As [`Self::find_algorithms_raw`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn find_engines_raw(
        &self,
        p: RawProblem<'_>,
        w: CUdeviceptr,
        dy: CUdeviceptr,
        max_workspace: Option<usize>,
        deterministic_only: bool,
        limit: usize,
        budget: Option<std::time::Duration>,
    ) -> Result<Vec<Engine>> {
        p.validate(crate::convolution::AlgoKind::Engine)?;
        let math = p.conv.effective_math_type(p.dx.dtype());
        let accept = Self::engine_filter(&p, math, deterministic_only);
        // SAFETY: forwarded from this function's contract.
        let timed = unsafe {
            self.time_engines(
                &p,
                w,
                dy,
                max_workspace,
                &accept,
                limit,
                engine::Sources::Exhaustive,
                budget,
            )?
        };
        if timed.is_empty() {
            return Err(self.no_engine(&p, deterministic_only));
        }
        Ok(timed.into_iter().map(|(e, _)| e).collect())
    }

    /// Every engine the graph-API heuristic lists for the problem, with cuDNN's notes on
    /// it and its time, whether or not the math type admits it: for tuning this crate's
    /// engine filter (`examples/engine_report.rs`), not for users.
    ///
    /// # Safety
    /// As [`Self::find_algorithms_raw`].
    #[doc(hidden)]
    pub unsafe fn engine_report(
        &self,
        p: RawProblem<'_>,
        w: CUdeviceptr,
        dy: CUdeviceptr,
    ) -> Result<Vec<String>> {
        p.geometry()?;
        let math = p.conv.effective_math_type(p.dx.dtype());
        let fit = Self::engine_filter(&p, math, false);
        // SAFETY: forwarded from this function's contract.
        let timed = unsafe {
            self.time_engines(
                &p,
                w,
                dy,
                None,
                &|_| true,
                64,
                engine::Sources::Exhaustive,
                None,
            )?
        };
        Ok(timed
            .into_iter()
            .map(|(e, notes)| {
                format!(
                    "{:8.4} ms  ws {:>10}  fits {}: {}  {}  {:?}",
                    e.time(),
                    e.workspace_size(),
                    math.name(),
                    if fit(&notes) { "yes" } else { "NO " },
                    e.config(),
                    notes
                )
            })
            .collect())
    }

    /// Builds up to `limit` of the engines `sources` list (in their order) that pass
    /// `accept` and fit `max_workspace`, and times each on the given inputs (one warm-up,
    /// then the best of three trials of five calls) into a scratch `dx`, until `budget` runs out; fastest
    /// first. Records `(timed, left out)` for [`Self::last_find_report`].
    ///
    /// # Safety
    /// As [`Self::find_algorithms_raw`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn time_engines(
        &self,
        p: &RawProblem<'_>,
        w: CUdeviceptr,
        dy: CUdeviceptr,
        max_workspace: Option<usize>,
        accept: &dyn Fn(&engine::Notes) -> bool,
        limit: usize,
        sources: engine::Sources,
        budget: Option<std::time::Duration>,
    ) -> Result<Vec<(Engine, engine::Notes)>> {
        let started = std::time::Instant::now();
        let mut scratch_dx: CudaSlice<u8> = alloc_bytes(&self.stream, p.dx.nbytes().max(1))?;
        let (dx, _gdx) = GpuBufferMut::device_ptr_mut(&mut scratch_dx, &self.stream);
        let align = engine::alignment(&RawPointers {
            w,
            dy,
            dx,
            workspace: (0, 0),
        });
        let graph = self.engine_graph(p, 1.0, 0.0, align)?;
        let configs = engine::candidates(self.lib, &graph, sources)?;
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let (start, end) = (self.ctx.new_event(flags)?, self.ctx.new_event(flags)?);
        let mut workspace: Option<CudaSlice<u8>> = None;
        let mut found = Vec::new();
        let mut fastest = f32::INFINITY;
        let (mut timed, mut left_out) = (0usize, 0usize);
        for (i, c) in configs.iter().enumerate() {
            if found.len() >= limit || budget.is_some_and(|b| started.elapsed() > b) {
                left_out = configs.len() - i;
                break;
            }
            // An engine the heuristic lists may still refuse to build: skip it.
            let Ok(Some(plan)) = self.engine_config_plan(&graph, c.config, c.desc.as_ref(), accept)
            else {
                continue;
            };
            if max_workspace.is_some_and(|cap| plan.workspace > cap) {
                continue;
            }
            if workspace.as_ref().map_or(0, CudaSlice::len) < plan.workspace {
                workspace = None;
                // A workspace the device cannot hold rules the engine out, not the find.
                match alloc_bytes(&self.stream, plan.workspace) {
                    Ok(ws) => workspace = Some(ws),
                    Err(Error::OutOfMemory { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
            let (ws, _gws) = match workspace.as_mut() {
                Some(ws) => {
                    let len = ws.len();
                    let (ptr, guard) = GpuBufferMut::device_ptr_mut(ws, &self.stream);
                    ((ptr, len), Some(guard))
                }
                None => ((0, 0), None),
            };
            let ptrs = RawPointers {
                w,
                dy,
                dx,
                workspace: ws,
            };
            timed += 1;
            let mut best = f32::INFINITY;
            // A warm-up call, then three trials of CALLS_PER_TRIAL calls back to back (a
            // single call of a small problem is within the timer's noise): the best
            // trial's mean.
            for run in 0..4 {
                let calls = if run == 0 { 1 } else { CALLS_PER_TRIAL };
                start.record(&self.stream)?;
                let mut code = 0;
                for _ in 0..calls {
                    // SAFETY: w and dy per the caller; dx and the workspace were allocated
                    // above with the sizes the graph and this plan need.
                    code = unsafe { engine::execute(self.lib, self.handle.0, &plan, &ptrs)? };
                    if code != 0 {
                        break;
                    }
                }
                end.record(&self.stream)?;
                if code != 0 {
                    best = f32::INFINITY;
                    break;
                }
                end.synchronize()?;
                #[allow(clippy::cast_precision_loss)] // a handful of calls
                let ms = start.elapsed_ms(&end)? / calls as f32;
                if run > 0 {
                    best = best.min(ms);
                } else if ms > 10.0 * fastest {
                    // Ten times slower than the fastest so far even counting its warm-up:
                    // not worth three more runs.
                    best = ms;
                    break;
                }
            }
            fastest = fastest.min(best);
            if best.is_finite() {
                found.push((plan.engine().with_time(best), plan.notes));
            }
        }
        self.last_find.set((timed, left_out));
        found.sort_by(|a, b| a.0.time().total_cmp(&b.0.time()));
        Ok(found)
    }

    fn query_workspace_size(
        &self,
        p: RawProblem<'_>,
        algo: BwdDataAlgo,
        math: MathType,
    ) -> Result<Option<usize>> {
        self.bind()?;
        let (w, dy, dx, conv) = (p.w.raw()?, p.dy.raw()?, p.dx.raw()?, p.conv.raw_with(math)?);
        let mut size = 0usize;
        // SAFETY: descriptors are live; cuDNN writes one size_t.
        let status = unsafe {
            (self.lib.api.cudnnGetConvolutionBackwardDataWorkspaceSize)(
                self.handle.0,
                w,
                dy,
                conv,
                dx,
                algo.into_raw() as u32,
                &raw mut size,
            )
        };
        self.check_run(status, &p, algo, "querying the workspace size")?;
        Ok((size > 0).then_some(size))
    }

    fn check_run(
        &self,
        status: u32,
        p: &RawProblem<'_>,
        algo: BwdDataAlgo,
        doing: &str,
    ) -> Result<()> {
        match CudnnError::from_code(status) {
            None => Ok(()),
            Some(e) if e.is_not_supported() => Err(Error::cudnn(
                e,
                format!(
                    "{doing}: cuDNN {}.{}.{} does not run {} for {} ({}); use BestHeuristic (get_convolution_backward_data_algorithm) instead",
                    self.version().0,
                    self.version().1,
                    self.version().2,
                    algo.name(),
                    p.describe(),
                    support::algorithm_limits(algo)
                ),
            )),
            Some(e) => Err(Error::cudnn(
                e,
                format!("{doing} with {} for {}", algo.name(), p.describe()),
            )),
        }
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
        kind: crate::convolution::AlgoKind,
        route: Route,
        math: Option<MathType>,
        ptrs: RawPointers,
        beta: f64,
    ) -> Result<()> {
        use crate::convolution::AlgoKind;
        p.validate(kind)?;
        let consistent = match route {
            Route::Legacy(algo) => kind == AlgoKind::BestHeuristic || kind.fixed() == Some(algo),
            Route::Engine(None) => kind == AlgoKind::BestEngine,
            Route::Engine(Some(_)) => kind == AlgoKind::Engine,
            Route::Default => kind == AlgoKind::DefaultAlgo,
        };
        if !consistent {
            return Err(Error::InvalidArgument(format!(
                "{} does not match {}",
                route.describe(),
                kind.name()
            )));
        }
        let math = p.resolve_math(math);
        // SAFETY: forwarded from this function's contract.
        unsafe { self.execute(alpha, p, route, math, ptrs, beta) }
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
    unsafe fn execute(
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
                return unsafe { self.execute_engine(alpha, p, config, math, ptrs, beta) };
            }
            Route::Default => {
                let config = Some(self.default_config(&p, math)?);
                // SAFETY: forwarded from this function's contract.
                return unsafe { self.execute_engine(alpha, p, config, math, ptrs, beta) };
            }
        };
        let need = self.workspace_size_with(p, route, math)?.unwrap_or(0);
        if need > ptrs.workspace.1 {
            return Err(Error::InvalidArgument(format!(
                "{} needs a workspace of {need} bytes for this problem, got {}",
                algo.name(),
                ptrs.workspace.1
            )));
        }
        let scaling = p.dx.dtype().scaling();
        let (alpha_s, beta_s) = (Scaling::new(scaling, alpha), Scaling::new(scaling, beta));
        let (w, dy, dx, conv) = (p.w.raw()?, p.dy.raw()?, p.dx.raw()?, p.conv.raw_with(math)?);
        let ws_ptr = if ptrs.workspace.1 == 0 {
            std::ptr::null_mut()
        } else {
            ptrs.workspace.0 as *mut c_void
        };
        let api = &self.lib.api;
        let call = || {
            // SAFETY: descriptors are live and match the memory (caller's contract); alpha
            // and beta point to host scalars of the type cuDNN reads for dx's data type and
            // live across the call.
            unsafe {
                (api.cudnnConvolutionBackwardData)(
                    self.handle.0,
                    alpha_s.as_ptr(),
                    w,
                    ptrs.w as *const c_void,
                    dy,
                    ptrs.dy as *const c_void,
                    conv,
                    algo.into_raw() as u32,
                    ws_ptr,
                    ptrs.workspace.1,
                    beta_s.as_ptr(),
                    dx,
                    ptrs.dx as *mut c_void,
                )
            }
        };
        if crate::graph_cache::enabled()
            && self.replay_or_capture(&p, route, math, &ptrs, alpha, beta, &call)?
        {
            return Ok(());
        }
        let status = call();
        self.check_run(status, &p, algo, "running backward data")
    }

    /// The graph-API half of [`Self::execute`].
    ///
    /// # Safety
    /// As [`Self::backward_data_raw`]; the problem has been validated.
    unsafe fn execute_engine(
        &self,
        alpha: f64,
        p: RawProblem<'_>,
        config: Option<EngineConfig>,
        math: MathType,
        ptrs: RawPointers,
        beta: f64,
    ) -> Result<()> {
        let plan = self.engine_plan(&p, config, math, alpha, beta, engine::alignment(&ptrs))?;
        if plan.workspace > ptrs.workspace.1 {
            return Err(Error::InvalidArgument(format!(
                "graph-API {} needs a workspace of {} bytes for this problem, got {}",
                plan.config, plan.workspace, ptrs.workspace.1
            )));
        }
        self.bind()?;
        let (lib, handle) = (self.lib, self.handle.0);
        let call = || {
            // SAFETY: the plan was built for this problem, scalars and alignment; the
            // memory is this function's contract.
            unsafe { engine::execute(lib, handle, &plan, &ptrs) }
                .unwrap_or(CudnnError::InternalError.code())
        };
        let route = Route::Engine(Some(plan.config));
        if crate::graph_cache::enabled()
            && self.replay_or_capture(&p, route, math, &ptrs, alpha, beta, &call)?
        {
            return Ok(());
        }
        match CudnnError::from_code(call()) {
            None => Ok(()),
            Some(e) => Err(Error::cudnn(
                e,
                format!("running graph-API {} for {}", plan.config, p.describe()),
            )),
        }
    }

    /// Runs a repeated call as a CUDA graph: `Ok(true)` when the work was enqueued that
    /// way, `Ok(false)` when the caller should call cuDNN directly.
    fn replay_or_capture(
        &self,
        p: &RawProblem<'_>,
        route: Route,
        math: MathType,
        ptrs: &RawPointers,
        alpha: f64,
        beta: f64,
        call: &dyn Fn() -> u32,
    ) -> Result<bool> {
        use crate::graph_cache::{capture, launch, Plan};
        let stream = self.stream.cu_stream().cast::<c_void>();
        if crate::graph_cache::capturing(stream) {
            // The caller is capturing the stream into a graph of its own: the call goes
            // into that graph as it is (a graph launched into a capture would end it).
            return Ok(false);
        }
        let plan = self.graphs.borrow_mut().plan(
            |k| k.matches(p, route, math),
            || ProblemKey::new(p, route, math),
            ptrs,
            alpha,
            beta,
        );
        match plan {
            // SAFETY: the graph was captured in this context from a call with these very
            // addresses, shapes and scalars (its key), which the caller vouches for now.
            Plan::Replay(exec) => Ok(unsafe { launch(exec, stream) }),
            Plan::Direct => Ok(false),
            Plan::Capture => {
                let Some(side) = self.graphs.borrow_mut().side_stream() else {
                    self.graphs.borrow_mut().store(None);
                    return Ok(false);
                };
                let api = &self.lib.api;
                let issue = |s: cudarc::driver::sys::CUstream| {
                    // SAFETY: the handle is live; `s` is this context's private stream.
                    let set = unsafe { (api.cudnnSetStream)(self.handle.0, s.cast()) };
                    set == 0 && call() == 0
                };
                // SAFETY: `side` is this context's live private stream; `issue` only
                // points cuDNN at it and enqueues the call there.
                let exec = unsafe { capture(side, issue) };
                self.apply_stream()?;
                self.graphs.borrow_mut().store(exec);
                // SAFETY: as for `Plan::Replay`: captured just now from this very call.
                Ok(exec.is_some_and(|e| unsafe { launch(e, stream) }))
            }
        }
    }

    /// Measures every algorithm cuDNN offers for the problem (`cudnnFind...Ex` on the given
    /// inputs, writing into a scratch `dx` so the caller's is untouched), fastest first;
    /// entries that failed, are not in the support table, or exceed `max_workspace` bytes
    /// are left out.
    ///
    /// # Safety
    /// `w` and `dy` must point to device memory of this context holding the elements the
    /// descriptors say, valid until this call returns.
    pub unsafe fn find_algorithms_raw(
        &self,
        p: RawProblem<'_>,
        w: CUdeviceptr,
        dy: CUdeviceptr,
        max_workspace: Option<usize>,
        deterministic_only: bool,
    ) -> Result<Vec<BestHeuristic>> {
        p.validate(crate::convolution::AlgoKind::BestHeuristic)?;
        self.bind()?;
        let mut ws_bytes = 0usize;
        for algo in BwdDataAlgo::ALL {
            if !support::is_supported(&p.row(algo.kind())) {
                continue;
            }
            if let Ok(Some(n)) = self.workspace_size_raw(p, algo) {
                if max_workspace.is_none_or(|cap| n <= cap) {
                    ws_bytes = ws_bytes.max(n);
                }
            }
        }
        let mut scratch_dx: CudaSlice<u8> = alloc_bytes(&self.stream, p.dx.nbytes())?;
        let mut workspace: CudaSlice<u8> = alloc_bytes(&self.stream, ws_bytes.max(1))?;
        let (dx_ptr, _g1) = GpuBufferMut::device_ptr_mut(&mut scratch_dx, &self.stream);
        let (ws_ptr, _g2) = GpuBufferMut::device_ptr_mut(&mut workspace, &self.stream);
        let math = p.conv.effective_math_type(p.dx.dtype());
        let (wd, dyd, dxd, conv) = (p.w.raw()?, p.dy.raw()?, p.dx.raw()?, p.conv.raw_with(math)?);
        let mut perfs = [BwdDataAlgoPerf::default(); 8];
        let mut returned: c_int = 0;
        // SAFETY: descriptors live; w/dy valid per the caller; scratch dx and workspace
        // were just allocated with the sizes passed; `perfs` has room for 8 entries.
        let status = unsafe {
            (self.lib.api.cudnnFindConvolutionBackwardDataAlgorithmEx)(
                self.handle.0,
                wd,
                w as *const c_void,
                dyd,
                dy as *const c_void,
                conv,
                dxd,
                dx_ptr as *mut c_void,
                perfs.len() as c_int,
                &raw mut returned,
                perfs.as_mut_ptr(),
                ws_ptr as *mut c_void,
                ws_bytes,
            )
        };
        check(
            status,
            &format!("measuring algorithms for {}", p.describe()),
        )?;
        let returned = usize::try_from(returned).unwrap_or(0).min(perfs.len());
        let mut found = Self::pick(&p, &perfs[..returned], deterministic_only);
        found.retain(|b| max_workspace.is_none_or(|cap| b.workspace_size() <= cap));
        found.sort_by(|a, b| a.time().total_cmp(&b.time()));
        if found.is_empty() {
            return Err(self.none_usable(&p, deterministic_only));
        }
        Ok(found)
    }

    // ---- the original's typed API.

    /// cuDNN's heuristic choice for the problem, as the original
    /// `get_convolution_backward_data_algorithm`, but reading every result instead of
    /// one, never failing on skipped entries, and optionally deterministic only.
    pub fn get_convolution_backward_data_algorithm<
        T1,
        F1,
        T2,
        F2,
        CompType,
        T3,
        F3,
        const D: usize,
        const N: usize,
    >(
        &self,
        w_desc: &FilterDescriptor<T1, F1, D>,
        dy_desc: &TensorDescriptor<T2, F2, D>,
        dx_desc: &TensorDescriptor<T3, F3, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        determinism: Option<Determinism>,
    ) -> Result<BestHeuristic>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        BestHeuristic: SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
    {
        let p = RawProblem {
            w: w_desc.raw(),
            dy: dy_desc.raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        self.get_algorithm_raw(p, determinism == Some(Determinism::Deterministic))
    }

    /// Measures the algorithms on the given filter and `dy` (fastest first); `dx` is only
    /// described, a scratch buffer receives the trial results.
    pub fn find_convolution_backward_data_algorithm<
        T1,
        F1,
        V1,
        T2,
        F2,
        V2,
        CompType,
        T3,
        F3,
        const D: usize,
        const N: usize,
    >(
        &self,
        w: &Filter<T1, F1, V1, D>,
        dy: &Tensor<T2, F2, V2, D>,
        dx_desc: &TensorDescriptor<T3, F3, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        max_workspace: Option<usize>,
        determinism: Option<Determinism>,
    ) -> Result<Vec<BestHeuristic>>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        V1: GpuBuffer<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        V2: GpuBuffer<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        BestHeuristic: SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
    {
        let p = RawProblem {
            w: w.descriptor().raw(),
            dy: dy.descriptor().raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        let (w_ptr, _gw) = w.data().device_ptr(&self.stream);
        let (dy_ptr, _gdy) = dy.data().device_ptr(&self.stream);
        // SAFETY: `Filter`/`Tensor` checked that their memory holds the described
        // element counts; the guards keep it borrowed until the call returns.
        unsafe {
            self.find_algorithms_raw(
                p,
                w_ptr,
                dy_ptr,
                max_workspace,
                determinism == Some(Determinism::Deterministic),
            )
        }
    }

    /// The graph-API heuristic's engine for the problem (what [`crate::BestEngine`] runs),
    /// optionally deterministic only. Not in the original crate.
    pub fn get_convolution_backward_data_engine<
        T1,
        F1,
        T2,
        F2,
        CompType,
        T3,
        F3,
        const D: usize,
        const N: usize,
    >(
        &self,
        w_desc: &FilterDescriptor<T1, F1, D>,
        dy_desc: &TensorDescriptor<T2, F2, D>,
        dx_desc: &TensorDescriptor<T3, F3, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        determinism: Option<Determinism>,
    ) -> Result<Engine>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        Engine: SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
    {
        let p = RawProblem {
            w: w_desc.raw(),
            dy: dy_desc.raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        self.get_engine_raw(p, determinism == Some(Determinism::Deterministic))
    }

    /// Autotunes the graph-API engines on the given filter and `dy`: up to `limit` engines,
    /// the heuristic's first, each timed, fastest first (see [`Self::find_engines_raw`]).
    /// Not in the original crate.
    #[allow(clippy::too_many_arguments)]
    pub fn find_convolution_backward_data_engine<
        T1,
        F1,
        V1,
        T2,
        F2,
        V2,
        CompType,
        T3,
        F3,
        const D: usize,
        const N: usize,
    >(
        &self,
        w: &Filter<T1, F1, V1, D>,
        dy: &Tensor<T2, F2, V2, D>,
        dx_desc: &TensorDescriptor<T3, F3, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        max_workspace: Option<usize>,
        determinism: Option<Determinism>,
        limit: usize,
    ) -> Result<Vec<Engine>>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        V1: GpuBuffer<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        V2: GpuBuffer<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        Engine: SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
    {
        let p = RawProblem {
            w: w.descriptor().raw(),
            dy: dy.descriptor().raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        let (w_ptr, _gw) = w.data().device_ptr(&self.stream);
        let (dy_ptr, _gdy) = dy.data().device_ptr(&self.stream);
        // SAFETY: `Filter`/`Tensor` checked that their memory holds the described
        // element counts; the guards keep it borrowed until the call returns.
        unsafe {
            self.find_engines_raw(
                p,
                w_ptr,
                dy_ptr,
                max_workspace,
                determinism == Some(Determinism::Deterministic),
                limit,
                None,
            )
        }
    }

    /// Workspace bytes `algo` needs; `None` when it needs none.
    pub fn get_convolution_backward_data_workspace_size<
        T1,
        F1,
        T2,
        F2,
        CompType,
        T3,
        F3,
        A,
        const D: usize,
        const N: usize,
    >(
        &self,
        w_desc: &FilterDescriptor<T1, F1, D>,
        dy_desc: &TensorDescriptor<T2, F2, D>,
        dx_desc: &TensorDescriptor<T3, F3, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        algo: &A,
    ) -> Result<Option<usize>>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        A: ConvolutionBwdDataAlgo + SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
    {
        let p = RawProblem {
            w: w_desc.raw(),
            dy: dy_desc.raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        p.geometry()?;
        self.workspace_size_with(p, algo.route(), p.resolve_math(algo.math_type()))
    }

    /// `dx = alpha * dgrad(w, dy) + beta * dx`, as the original: a `None` workspace passes a
    /// null pointer and size 0. `alpha`/`beta` are handed to cuDNN in the scaling type it
    /// reads for `dx`'s data type (f64 for f64 data, f32 otherwise).
    pub fn convolution_backward_data<
        T1,
        F1,
        V1,
        T2,
        F2,
        V2,
        CompType,
        T3,
        F3,
        V3,
        A,
        W,
        const D: usize,
        const N: usize,
    >(
        &self,
        alpha: CompType,
        w: &Filter<T1, F1, V1, D>,
        dy: &Tensor<T2, F2, V2, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        algo: &A,
        work_space: Option<&mut W>,
        beta: CompType,
        dx: &mut Tensor<T3, F3, V3, D>,
    ) -> Result<()>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        V1: GpuBuffer<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        V2: GpuBuffer<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        V3: GpuBufferMut<T3>,
        A: ConvolutionBwdDataAlgo + SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
        W: GpuBufferMut<u8>,
    {
        let dx_desc = dx.descriptor().clone();
        let p = RawProblem {
            w: w.descriptor().raw(),
            dy: dy.descriptor().raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        let stream = &self.stream;
        let (w_ptr, _gw) = w.data().device_ptr(stream);
        let (dy_ptr, _gdy) = dy.data().device_ptr(stream);
        let (dx_ptr, _gdx) = dx.data_mut().device_ptr_mut(stream);
        let (ws, _gws) = match work_space {
            Some(ws) => {
                let len = ws.len();
                let (ptr, guard) = ws.device_ptr_mut(stream);
                ((ptr, len), Some(guard))
            }
            None => ((0, 0), None),
        };
        let ptrs = RawPointers {
            w: w_ptr,
            dy: dy_ptr,
            dx: dx_ptr,
            workspace: ws,
        };
        // SAFETY: the typed tensors checked their memory against their descriptors; `dx`
        // is borrowed mutably so it cannot alias `w` or `dy`; the guards keep every
        // buffer borrowed until the work is enqueued (cudarc orders later frees after it).
        unsafe {
            self.backward_data_raw(
                alpha.to_f64(),
                p,
                algo.kind(),
                algo.route(),
                algo.math_type(),
                ptrs,
                beta.to_f64(),
            )
        }
    }
}

/// Allocates `len` bytes on `stream`, mapping out-of-memory to its own error.
pub fn alloc_bytes(stream: &Arc<CudaStream>, len: usize) -> Result<CudaSlice<u8>> {
    // SAFETY: the bytes are uninitialised; every user writes before reading (cuDNN
    // writes dx and workspace; uploads fill tensors).
    unsafe { stream.alloc::<u8>(len) }.map_err(|e| match Error::from(e) {
        Error::OutOfMemory { detail, .. } => Error::OutOfMemory {
            requested_bytes: len,
            detail,
        },
        other => other,
    })
}
