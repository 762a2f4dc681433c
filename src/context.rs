//! `CudnnContext`: a cuDNN handle bound to a CUDA device and stream, the handles pool,
//! the benchmark settings, and the per-context state the operations keep (their caches).
//! The operations themselves are methods added by `bwd_data/` (one `impl CudnnContext`
//! block per concern: legacy API, graph API, default-choice policy, typed API).

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream};

use crate::bwd_data::graph::EngineCache;
use crate::bwd_data::twin::Twin;
use crate::cache::BoundedCache;
use crate::error::{Error, Result};
use crate::find_cache::FindCache;
use crate::library::{self, CudnnLibrary};
use crate::problem::ProblemKey;
pub use crate::problem::{RawPointers, RawProblem};
use crate::raw_descriptor::check;
use crate::replay::GraphCache;
use crate::sys;

struct RawHandle(sys::CudnnHandle);

/// A cuDNN handle on one CUDA device, issuing work to one stream.
///
/// `Send` but not `Sync`: cuDNN allows a handle to be used from any thread, but by one
/// thread at a time.
pub struct CudnnContext {
    handle: RawHandle,
    pub(crate) lib: &'static CudnnLibrary,
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// Workspace sizes already asked of cuDNN, so a repeated call asks no more.
    pub(crate) workspace_sizes: std::cell::RefCell<BoundedCache<ProblemKey, Option<usize>>>,
    /// The legacy heuristic's answers (it times nothing, so a problem's answer never
    /// changes), by problem, math type and whether only deterministic ones were wanted.
    pub(crate) heuristics:
        std::cell::RefCell<BoundedCache<(ProblemKey, bool), crate::convolution::BestHeuristic>>,
    /// Whether the default choice runs a problem through its NHWC twin, and the twin
    /// (see `bwd_data::transposed`).
    pub(crate) twins: std::cell::RefCell<BoundedCache<ProblemKey, Option<std::rc::Rc<Twin>>>>,
    /// Whether the default choice runs a problem with the depthwise kernel of our own, and
    /// how (see `bwd_data::direct`).
    pub(crate) directs: std::cell::RefCell<
        BoundedCache<ProblemKey, Option<std::rc::Rc<crate::bwd_data::direct::Direct>>>,
    >,
    /// The problems the measured default runs with that kernel until the builder thread
    /// has built cuDNN's engines for them (see `bwd_data::background`), and how many such
    /// builds this context took in.
    pub(crate) deferred: std::cell::RefCell<
        std::collections::HashMap<ProblemKey, Arc<crate::bwd_data::graph::Pending>>,
    >,
    pub(crate) adopted: std::cell::Cell<usize>,
    /// That kernel's entry points on this context's device, each loaded on first use.
    pub(crate) kernels: std::cell::RefCell<crate::bwd_data::direct::Kernels>,
    /// Repeated calls captured as CUDA graphs (see `replay`).
    pub(crate) graphs: std::cell::RefCell<GraphCache<ProblemKey>>,
    /// Graph-API operation graphs, plans and the engine choices (see `bwd_data::graph`).
    pub(crate) engines: std::cell::RefCell<EngineCache>,
    /// Whether `DefaultAlgo` times engines once per problem (see [`Self::set_benchmark`]).
    pub(crate) benchmark: std::cell::Cell<bool>,
    /// How long one measurement of the default choice may take.
    pub(crate) benchmark_budget: std::cell::Cell<std::time::Duration>,
    /// The measured choices' epoch ([`MEASURED_EPOCH`]) the calls resolved
    /// or captured with benchmarking on saw: where it has moved on since, they go with
    /// this context rather than to the pool.
    pub(crate) epoch: std::cell::Cell<u64>,
    /// `(timed, left out)` of the last engine measurement.
    pub(crate) last_find: std::cell::Cell<(usize, usize)>,
    /// Where the last engine measurement's time went.
    pub(crate) last_find_timing: std::cell::Cell<FindTiming>,
    /// How many configurations the last engine measurement timed that the heuristics
    /// asked beside it listed (`bwd_data::beside::candidates_beside`).
    pub(crate) last_find_beside: std::cell::Cell<usize>,
    /// Measured algorithms and engines by problem: the cache every find goes through
    /// (typed Rust and Python), saved by [`Self::save_algorithm_cache`].
    pub(crate) finds: FindCache,
    /// A second context on the device, whose handle asks cuDNN's later heuristics while
    /// this one asks the first (see `bwd_data::beside::candidates_beside`), made at the
    /// first measurement that does. Dropped with this context once the plans built with
    /// its handle, which this context's caches keep, are gone (see `Drop`).
    pub(crate) side: std::cell::RefCell<Option<Box<CudnnContext>>>,
}

/// Where an engine measurement's wall time went (see [`CudnnContext::last_find_timing`]).
/// The parts need not add up to `total`: the rest is setting up (scratch buffers, the
/// operation graph) and choosing what to time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FindTiming {
    /// The whole measurement.
    pub total: std::time::Duration,
    /// Asking cuDNN's heuristics which engine configurations to time.
    pub heuristics: std::time::Duration,
    /// Building (finalizing) the configurations' execution plans.
    pub builds: std::time::Duration,
    /// Running the plans: capturing each into a CUDA graph, warm-up calls and trials,
    /// each waited for.
    pub trials: std::time::Duration,
    /// Timing the closest few again (see [`CudnnContext::find_engines_raw`]).
    pub refine: std::time::Duration,
}

/// The default time budget of one measurement (see [`CudnnContext::set_benchmark_budget`]).
pub const DEFAULT_BENCHMARK_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

// SAFETY: cuDNN handles may move between threads; `CudnnContext` is not `Sync`, so no two
// threads use the handle at once. The `Rc`s of the engine cache, the twins and the
// depthwise kernel's plans never leave the context (a call clones one only for its own
// duration), so they move with it as a whole; the kernel module (`Arc<CudaModule>`) and
// its functions are `Send` and `Sync` in cudarc.
unsafe impl Send for CudnnContext {}

/// cuDNN handles given back by dropped contexts, for the next context on the same CUDA
/// context: creating one costs milliseconds and cuDNN keeps some memory per handle it
/// ever created, so programs that make and drop many handles reuse a few instead. Each
/// entry keeps its CUDA context retained, so the handle stays valid while pooled, and what
/// the dropped context learned about problems (see [`Learned`]), so that a program making
/// a handle per call (`cd.convolution_backward_data(cd.Handle(), ...)`) pays a problem's
/// heuristic queries and plan builds once, not every call.
struct PooledHandle {
    /// First, so that its plans, built with `handle`, are dropped while it is live.
    learned: Learned,
    handle: RawHandle,
    ctx: Arc<CudaContext>,
    /// Whether the handle was last set to the legacy default stream (the null stream).
    on_default_stream: bool,
}

/// The caches of a context whose answers depend on the problem, the cuDNN handle and the
/// device, not on the context's stream: they go to the pool with the handle their plans
/// were built with and come back with it. Those that depend on the benchmark setting as
/// well come back only to a context of the same setting.
#[derive(Default)]
struct Learned {
    workspace_sizes: BoundedCache<ProblemKey, Option<usize>>,
    heuristics: BoundedCache<(ProblemKey, bool), crate::convolution::BestHeuristic>,
    twins: BoundedCache<ProblemKey, Option<std::rc::Rc<Twin>>>,
    directs: BoundedCache<ProblemKey, Option<std::rc::Rc<crate::bwd_data::direct::Direct>>>,
    kernels: crate::bwd_data::direct::Kernels,
    engines: EngineCache,
    /// The calls captured: a key holds every address a call touches (the workspace's
    /// too), so one replays only for a call on those same live addresses.
    graphs: GraphCache<ProblemKey>,
    /// The benchmark setting the resolved and captured calls and the depthwise kernel's
    /// problems were made under, and the measured choices' epoch they saw (see
    /// [`MEASURED_EPOCH`]): a context of another setting, or one made
    /// after measured choices were forgotten or loaded, takes none of them.
    benchmark: bool,
    epoch: u64,
}

// SAFETY: a pooled handle is used by no thread until a context takes it back out. The
// `Rc`s of its `Learned` caches point only at one another (a call clones one only for its
// own duration, and the context they came from is gone), so they move as a whole, as a
// context's do (see `CudnnContext`'s `Send`).
unsafe impl Send for PooledHandle {}

/// Moves on whenever measured choices are forgotten or loaded (not when a problem is
/// measured for the first time): calls a context resolved with benchmarking on under an
/// earlier epoch may run a choice no longer the shared one, so no later context takes them
/// over (see [`CudnnContext::take_learned`]).
static MEASURED_EPOCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The measured choices' current epoch (see [`MEASURED_EPOCH`]).
fn measured_epoch() -> u64 {
    MEASURED_EPOCH.load(std::sync::atomic::Ordering::Acquire)
}

/// Moves the epoch on (see [`MEASURED_EPOCH`]) and returns the new one.
pub(crate) fn next_measured_epoch() -> u64 {
    MEASURED_EPOCH.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1
}

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
        let learned = self.take_learned();
        // The side context goes to the pool before this handle (the plans built with its
        // handle are gone from the caches by now), so that the next context takes this
        // one, the latest, back with what it learned.
        drop(self.side.get_mut().take());
        let mut pool = handle_pool();
        if pool.len() < HANDLE_POOL_LIMIT {
            pool.push(PooledHandle {
                learned,
                handle: RawHandle(self.handle.0),
                ctx: Arc::clone(&self.ctx),
                on_default_stream: self.stream.cu_stream().is_null(),
            });
            return;
        }
        drop(pool);
        // The plans the caches keep were built with the handle: dropped before it goes.
        drop(learned);
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

    /// A context on CUDA device `ordinal`, issuing work to the device's default stream,
    /// whose CUDA context object tracks no events (see
    /// `CudaContext::disable_event_tracking`). Where a pooled handle was made this way,
    /// its context object is taken over, so that making one is a few steps in the pool
    /// rather than the driver's retain and release of the primary context. `benchmark`:
    /// the context's [`Self::set_benchmark`] from the start, so that the calls a pooled
    /// handle resolved and captured under the same setting come with it (setting it
    /// afterwards drops those of the other setting).
    ///
    /// # Safety
    /// Nothing may rely on cudarc's events to order the context's memory across streams:
    /// the caller makes no cudarc streams of the context (`new_stream`, `fork`) and orders
    /// the memory's uses across streams itself.
    pub unsafe fn new_untracked(ordinal: usize, benchmark: bool) -> Result<Self> {
        let pooled = handle_pool()
            .iter()
            .rev()
            .find(|p| {
                p.ctx.ordinal() == ordinal && p.ctx.is_primary() && !p.ctx.is_event_tracking()
            })
            .map(|p| Arc::clone(&p.ctx));
        let ctx = if let Some(ctx) = pooled {
            ctx
        } else {
            let ctx = Self::cuda_context(ordinal)?;
            // SAFETY: the caller's contract; the object is new, no one else's.
            unsafe { ctx.disable_event_tracking() };
            ctx
        };
        Self::from_pool(ctx.default_stream(), benchmark)
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
        Self::from_pool(stream, false)
    }

    /// A context issuing work to `stream`, with benchmarking on or off from the start
    /// (see [`Self::set_benchmark`]): a pooled handle's calls resolved under the same
    /// setting come with it.
    fn from_pool(stream: Arc<CudaStream>, benchmark: bool) -> Result<Self> {
        let lib = library::cudnn()?;
        let ctx = Arc::clone(stream.context());
        ctx.bind_to_thread()?;
        let pooled = {
            let mut pool = handle_pool();
            // The latest given back: a program making a handle per call gets the same
            // one back each time, with all it learned.
            pool.iter()
                .rposition(|p| p.ctx.cu_ctx() == ctx.cu_ctx())
                .map(|i| pool.remove(i))
        };
        let mut stream_set = false;
        let (handle, learned) = if let Some(p) = pooled {
            // A handle on the null stream needs no `cudnnSetStream` to it again.
            stream_set = p.on_default_stream && stream.cu_stream().is_null();
            let mut learned = p.learned;
            if learned.benchmark != benchmark || (benchmark && learned.epoch != measured_epoch()) {
                learned.engines.resolved.clear();
                learned.directs.clear();
                learned.graphs.clear();
            }
            (p.handle.0, learned)
        } else {
            let mut handle: sys::CudnnHandle = std::ptr::null_mut();
            // SAFETY: cudnnCreate writes one handle; the device's context is current.
            let status = unsafe { (lib.api.cudnnCreate)(&raw mut handle) };
            check(status, "creating a cuDNN handle")?;
            (handle, Learned::default())
        };
        let this = Self {
            handle: RawHandle(handle),
            lib,
            ctx,
            stream,
            workspace_sizes: std::cell::RefCell::new(learned.workspace_sizes),
            heuristics: std::cell::RefCell::new(learned.heuristics),
            twins: std::cell::RefCell::new(learned.twins),
            directs: std::cell::RefCell::new(learned.directs),
            deferred: std::cell::RefCell::default(),
            adopted: std::cell::Cell::new(0),
            kernels: std::cell::RefCell::new(learned.kernels),
            graphs: std::cell::RefCell::new(learned.graphs),
            engines: std::cell::RefCell::new(learned.engines),
            benchmark: std::cell::Cell::new(benchmark),
            benchmark_budget: std::cell::Cell::new(DEFAULT_BENCHMARK_BUDGET),
            epoch: std::cell::Cell::new(measured_epoch()),
            last_find: std::cell::Cell::new((0, 0)),
            last_find_beside: std::cell::Cell::new(0),
            last_find_timing: std::cell::Cell::new(FindTiming::default()),
            finds: FindCache::default(),
            side: std::cell::RefCell::new(None),
        };
        if !stream_set {
            this.apply_stream()?;
        }
        Ok(this)
    }

    /// This context's [`Learned`] caches, taken out of it for a later context on the same
    /// handle. What could not run there is left out:
    /// - plans built with another handle (the side context's, which goes with this
    ///   context; the builder thread's), with the calls settled or resolved on them, the
    ///   captured calls and the depthwise kernel's problems, where this context measured
    ///   with such plans or ran problems with the kernel until they were built;
    /// - the measured choices, which every context on the device shares anyway (see
    ///   [`Self::default_config`]).
    ///
    /// The calls resolved or captured and the kernel's problems go with the benchmark
    /// setting they were made under, for a context of that setting (see `from_pool`).
    fn take_learned(&mut self) -> Learned {
        let mut learned = Learned {
            workspace_sizes: std::mem::take(self.workspace_sizes.get_mut()),
            heuristics: std::mem::take(self.heuristics.get_mut()),
            twins: std::mem::take(self.twins.get_mut()),
            directs: std::mem::take(self.directs.get_mut()),
            kernels: std::mem::take(self.kernels.get_mut()),
            engines: std::mem::take(self.engines.get_mut()),
            graphs: std::mem::take(self.graphs.get_mut()),
            benchmark: self.benchmark.get(),
            epoch: self.epoch.get(),
        };
        let foreign = self.side.get_mut().is_some()
            || !self.deferred.get_mut().is_empty()
            || self.adopted.get() > 0;
        if foreign {
            learned.engines.keep_own_plans();
            learned.graphs.clear();
            learned.directs.clear();
        }
        learned.engines.measured.clear();
        learned
    }

    pub(crate) fn apply_stream(&self) -> Result<()> {
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

    pub(crate) fn bind(&self) -> Result<()> {
        Ok(self.ctx.bind_to_thread()?)
    }

    /// Turns measuring on or off for [`crate::DefaultAlgo`] (and so for the one-call API),
    /// as PyTorch's `torch.backends.cudnn.benchmark`: on, the first call (or workspace
    /// query) of a problem times the engines the instant heuristic and the fallback list
    /// rank on scratch buffers (the first ten that build, in rank order, as PyTorch's
    /// benchmark mode times them, but for further settings of an engine three times
    /// slower than the fastest; beyond those, staged, cuDNN's generic engine 0 never and
    /// of the others each one's first-ranked knob
    /// setting until one is four times slower than the fastest, then the other settings
    /// of the close ones, an engine's until one is three times slower; engines only the
    /// fallback list names only while fewer than six ranked ones were timed), within
    /// [`Self::benchmark_budget`], and later calls run the fastest. Off (the default), the
    /// choice is made without timing. Measured choices are kept either way, and shared by
    /// every context on the device: as with PyTorch's benchmark mode, a problem is measured
    /// once per device and process, not once per context (a context made for each call
    /// measures only the first; [`Self::clear_measured_choices`] forgets them all).
    pub fn set_benchmark(&self, on: bool) {
        if self.benchmark.replace(on) != on {
            // Captured and resolved calls of `DefaultAlgo` ran the other setting's choice,
            // and the depthwise kernel's problems differ between the two.
            self.graphs.borrow_mut().clear();
            self.engines.borrow_mut().resolved.clear();
            self.directs.borrow_mut().clear();
            self.deferred.borrow_mut().clear();
            self.epoch.set(measured_epoch());
        }
    }

    /// `(building, taken in)`: how many problems the measured default runs with the
    /// depthwise kernel of our own while a builder thread builds cuDNN's run-time-compiled
    /// engines for them (see [`Self::set_benchmark`]), and how many such builds later calls
    /// took in (and then measured).
    pub fn background_builds(&self) -> (usize, usize) {
        (self.deferred.borrow().len(), self.adopted.get())
    }

    /// Waits until the builder thread is done with every problem of this context it was
    /// handed, at most `timeout`; whether it is. What it built is taken in by each
    /// problem's next call.
    pub fn wait_background_builds(&self, timeout: std::time::Duration) -> bool {
        crate::bwd_data::graph::wait_until(timeout, || {
            self.deferred.borrow().values().all(|p| p.is_done())
        })
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

    /// The cache of measured algorithms and engines every find on this context goes
    /// through (the typed finds, Python's `find_*`): a repeated find is answered from it.
    pub fn algorithm_cache(&self) -> &FindCache {
        &self.finds
    }

    /// What the last engine measurement did: `(timed, left_out)`, the number of engine
    /// configurations it timed and the number it did not reach within its time budget.
    pub fn last_find_report(&self) -> (usize, usize) {
        self.last_find.get()
    }

    /// Where the last engine measurement's wall time went: for choosing a
    /// [`Self::set_benchmark_budget`] and for seeing what a first sight costs.
    pub fn last_find_timing(&self) -> FindTiming {
        self.last_find_timing.get()
    }

    /// How many of the configurations the last engine measurement timed were listed by
    /// the heuristics it asked on another thread (`CUDNN_RS_ASK_BESIDE`; 0 where it asked
    /// them on this one): for tests that the plans built there run here.
    #[doc(hidden)]
    pub fn last_find_beside(&self) -> usize {
        self.last_find_beside.get()
    }
}

/// Allocates `len` bytes on `stream` from the library's pool of its device, which keeps
/// freed memory (see [`crate::release_cached_memory`]), mapping out-of-memory to its own
/// error.
pub fn alloc_bytes(stream: &Arc<CudaStream>, len: usize) -> Result<CudaSlice<u8>> {
    // SAFETY: the bytes are uninitialised; every user writes before reading (cuDNN
    // writes dx and workspace; uploads fill tensors).
    unsafe { crate::pool::alloc(stream, len) }.map_err(|e| match Error::from(e) {
        Error::OutOfMemory { detail, .. } => Error::OutOfMemory {
            requested_bytes: len,
            detail,
        },
        other => other,
    })
}
