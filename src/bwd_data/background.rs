//! Building cuDNN's run-time-compiled engines off the caller's thread, for the measured
//! default's first sight of a problem.
//!
//! Some of cuDNN's engines are compiled when their plan is built (the behaviour note
//! `RUNTIME_COMPILATION`): on the H100 its NCHW depthwise engine for half-precision data
//! took 0.17-0.74 s a shape (`bench/rtc_probe.py`), all of it on the thread that built the
//! plan, and cuDNN keeps nothing of it for another handle or plan. For the
//! problems where the measured default would time that engine against the others and the
//! depthwise kernel of our own runs them too (`direct::deferred`), a first sight
//! instead runs the kernel and hands the problem to one builder thread per process, which
//! builds those engines' plans on a cuDNN handle of its own. A later call of the problem
//! that finds them built takes them into its context (a plan runs on whichever handle
//! executes it, on that handle's stream: on cuDNN 9.19 a plan built on another handle in
//! another thread ran on the caller's stream, behind work queued there before it) and
//! measures the problem as any other, now without compiling.
//!
//! The builder ignores other threads' CUDA-graph captures (its thread's capture mode is
//! thread-local): what it does is never part of one, and in the default global mode
//! CUDA refuses a module load on any thread while another captures.
//!
//! At process exit the builder stops: an exit handler, registered once cuDNN is loaded
//! (so it runs before cuDNN's own), waits for the build in progress (at most
//! `EXIT_WAIT`) and drops the rest, so that cuDNN is not torn down under it.
//!
//! `CUDNN_RS_BACKGROUND=0` in the environment turns this off (the plans are then built on
//! the caller's thread at the first sight, as before); so does a cuDNN older than 9.8,
//! the release from which cuDNN describes plans as built for a device rather than a
//! handle (checked on 9.19 only).

use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cudarc::driver::CudaContext;

use super::graph::{self, Built, Pending};
use crate::context::CudnnContext;
use crate::convolution::{ConvParams, RawConvolutionDescriptor};
use crate::data_type::DType;
use crate::error::Result;
use crate::math_type::MathType;
use crate::problem::RawProblem;
use crate::tensor::{Format, RawDescriptor, Role};

/// The oldest cuDNN whose plans this module builds on another handle (and the
/// measurements' heuristics asked beside, `beside::candidates_beside`).
pub(crate) const OLDEST: (usize, usize) = (9, 8);

/// Problems handed to the builder and not yet built (every context's).
static OUTSTANDING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Waits until the builder thread has built every problem handed to it so far (by any
/// context), at most `timeout`; whether it has. Each problem's next call then takes in
/// what was built.
pub fn wait_idle(timeout: std::time::Duration) -> bool {
    graph::wait_until(timeout, || {
        OUTSTANDING.load(std::sync::atomic::Ordering::Acquire) == 0
    })
}

/// How long the exit handler waits for the build in progress.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Held by the builder while it builds; set `true` by the exit handler, after which it
/// builds nothing more.
static WORK: Mutex<bool> = Mutex::new(false);

/// The exit handler: see the module documentation.
extern "C" fn stop_builder() {
    let started = std::time::Instant::now();
    loop {
        match WORK.try_lock() {
            Ok(mut stopped) => {
                *stopped = true;
                return;
            }
            Err(std::sync::TryLockError::Poisoned(p)) => {
                *p.into_inner() = true;
                return;
            }
            Err(std::sync::TryLockError::WouldBlock) if started.elapsed() < EXIT_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(std::sync::TryLockError::WouldBlock) => return,
        }
    }
}

/// One tensor of a problem, as plain data.
type TensorSpec = (Role, DType, Format, Vec<usize>);

/// A problem as plain data, for another thread to describe again (the builder here, and
/// the heuristics asked beside a measurement, see [`super::beside::candidates_beside`]).
pub(crate) struct Spec {
    /// w, dy, dx.
    tensors: [TensorSpec; 3],
    params: ConvParams,
    comp: DType,
    math_type: MathType,
}

impl Spec {
    pub(crate) fn of(p: &RawProblem<'_>) -> Self {
        let t = |d: &RawDescriptor| (d.role(), d.dtype(), d.format(), d.shape().to_vec());
        Self {
            tensors: [t(p.w), t(p.dy), t(p.dx)],
            params: p.conv.params().clone(),
            comp: p.conv.comp(),
            math_type: p.conv.math_type(),
        }
    }

    /// The problem's operation graph on `cx`'s handle (alpha 1, beta 0, `align`-byte
    /// aligned), and the math type its calls resolve to.
    pub(crate) fn graph(&self, cx: &CudnnContext, align: i64) -> Result<graph::OpGraph> {
        Ok(self.graph_and_math(cx, align)?.0)
    }

    fn graph_and_math(&self, cx: &CudnnContext, align: i64) -> Result<(graph::OpGraph, MathType)> {
        let [w, dy, dx] = self
            .tensors
            .each_ref()
            .map(|(role, dtype, format, shape)| RawDescriptor::new(*role, *dtype, *format, shape));
        let (w, dy, dx) = (w?, dy?, dx?);
        let conv = RawConvolutionDescriptor::new(self.params.clone(), self.comp, self.math_type)?;
        let p = RawProblem {
            w: &w,
            dy: &dy,
            dx: &dx,
            conv: &conv,
        };
        let graph = graph::build_graph(cx.lib, cx.as_raw(), &p, 1.0, 0.0, align)?;
        Ok((graph, conv.effective_math_type(dx.dtype())))
    }
}

/// Makes the calling thread's CUDA-graph capture mode thread-local: what it does is never
/// part of another thread's capture, and in the default global mode CUDA refuses a module
/// load on any thread while another captures.
pub(crate) fn capture_mode_thread_local() {
    let mut mode = cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    // SAFETY: exchanges this thread's capture mode (one enum written back).
    let _ = unsafe { cudarc::driver::sys::cuThreadExchangeStreamCaptureMode(&raw mut mode) };
}

struct Job {
    ctx: Arc<CudaContext>,
    spec: Spec,
    pending: Arc<Pending>,
}

/// Whether `ctx`'s measured default hands problems to the builder.
pub(crate) fn enabled(ctx: &CudnnContext) -> bool {
    static ENV: OnceLock<bool> = OnceLock::new();
    let env = *ENV.get_or_init(|| crate::switched_on("CUDNN_RS_BACKGROUND"));
    let (major, minor, _) = ctx.version();
    env && (major, minor) >= OLDEST
}

/// Hands problem `p` (of `ctx`'s device) to the builder; `None` when no builder thread
/// could be started.
pub(crate) fn submit(ctx: &CudnnContext, p: &RawProblem<'_>) -> Option<Arc<Pending>> {
    static QUEUE: OnceLock<Option<Mutex<mpsc::Sender<Job>>>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        // SAFETY: registers a function of no arguments that touches only this module's
        // statics; cuDNN is loaded by now (the caller's context has a handle), so the
        // handler runs before cuDNN's own.
        if unsafe { libc::atexit(stop_builder) } != 0 {
            // Without the handler exit could tear cuDNN down under a build: no builder.
            return None;
        }
        std::thread::Builder::new()
            .name("cudnn_rs-builder".into())
            .spawn(move || builder(&rx))
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let pending = Arc::new(Pending::default());
    let job = Job {
        ctx: Arc::clone(&ctx.ctx),
        spec: Spec::of(p),
        pending: Arc::clone(&pending),
    };
    OUTSTANDING.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    let sent = queue.as_ref().is_some_and(|q| {
        q.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(job)
            .is_ok()
    });
    if !sent {
        OUTSTANDING.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        return None;
    }
    Some(pending)
}

/// The builder thread: one cuDNN context per CUDA context it has served, kept for the
/// process's life; each job's result stored for the caller's thread to take.
fn builder(rx: &mpsc::Receiver<Job>) {
    capture_mode_thread_local();
    let mut contexts: Vec<CudnnContext> = Vec::new();
    while let Ok(job) = rx.recv() {
        let stopped = WORK.lock().unwrap_or_else(PoisonError::into_inner);
        if *stopped {
            // The process is exiting: its contexts are left to it.
            std::mem::forget(contexts);
            return;
        }
        // A job whose context is gone (its problems' `Pending`s with it: a handle made
        // for one call) is no one's to take in: skipped, so that a program making a
        // measuring handle per call does not queue a build per call.
        if Arc::strong_count(&job.pending) > 1 {
            let result = build(&mut contexts, &job);
            job.pending.fill(result);
        }
        drop(stopped);
        OUTSTANDING.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Builds a job's graph and the plans of its candidates that compile at run time.
fn build(contexts: &mut Vec<CudnnContext>, job: &Job) -> Result<Built> {
    let same = |c: &CudnnContext| c.ctx.cu_ctx() == job.ctx.cu_ctx();
    let cx = if let Some(at) = contexts.iter().position(same) {
        &contexts[at]
    } else {
        contexts.push(CudnnContext::with_stream(job.ctx.default_stream())?);
        &contexts[contexts.len() - 1]
    };
    cx.bind()?;
    // The math type the default route's calls resolve to: which engines may run.
    let (graph, math) = job.spec.graph_and_math(cx, 16)?;
    let accept = move |n: &graph::Notes| n.runtime_compiled && n.fit_default(math, false);
    let mut plans = Vec::new();
    for c in graph::candidates(cx.lib, &graph, graph::Sources::Instant)? {
        // An engine that refuses to build is left to the caller's measurement.
        if let Ok(Some(plan)) = graph::build_plan(
            cx.lib,
            cx.as_raw(),
            &graph,
            c.config,
            c.desc.as_ref(),
            accept,
        ) {
            plans.push(plan);
        }
    }
    Ok(Built { graph, plans })
}
