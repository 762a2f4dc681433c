//! Asking cuDNN's heuristics beside a measurement: while the measuring thread asks the
//! first heuristic (mode A) on its handle, another thread asks the rest (the fallback
//! list; mode B too, for the engine finds) with a second context of the device, for its
//! own operation graph of the problem. On the H100 the fallback list took 0.8-0.9 ms of a
//! 1x1 layer's first sight, after mode A's 2.2-2.5 ms, and the two asks overlap. The
//! configurations only the other thread's heuristics list are built with its
//! handle for its graph and run on the caller's, as the builder thread's plans do
//! ([`background`], cuDNN 9.8 on).

use super::background::{self, Spec};
use super::graph::{self, Candidate, OpGraph, Sources};
use crate::context::CudnnContext;
use crate::error::Result;
use crate::library::CudnnLibrary;
use crate::sys::CudnnHandle;
use cudarc::cudnn::sys::cudnnBackendHeurMode_t as HeurMode;

/// [`graph::candidates`], the heuristics after the first asked at the same time on another
/// thread, with the handle of `side` (another context on the same device, made there
/// where there is none yet; left in `side` afterwards) for its own operation graph of
/// problem `spec` (alpha 1, beta 0, `align`-byte aligned). Their configurations come
/// after the first heuristic's, without those it lists, marked `Candidate::beside`: their
/// plans are built with that handle for that graph ([`Beside`]). Where the other thread
/// cannot answer, they are asked here after the first, as [`graph::candidates`] does, and
/// there is no [`Beside`].
pub(crate) fn candidates_beside(
    lib: &'static CudnnLibrary,
    graph: &OpGraph,
    sources: Sources,
    cuda: &std::sync::Arc<cudarc::driver::CudaContext>,
    side: &mut Option<SideContext>,
    spec: Spec,
    align: i64,
) -> Result<(Vec<Candidate>, Option<Beside>)> {
    let (first, rest) = graph::modes(sources).split_at(1);
    let started = std::time::Instant::now();
    // The other thread borrows `side`: whatever becomes of the thread, a context there
    // stays there, with the plans built with its handle before.
    let (mut out, theirs, ours_ms) = std::thread::scope(|scope| {
        let slot = &mut *side;
        let asking = std::thread::Builder::new()
            .name("cudnn_rs-heuristics".into())
            .spawn_scoped(scope, move || ask_beside(cuda, slot, &spec, align, rest));
        let ours: Vec<Candidate> = graph::listed_by(lib, graph, first, Vec::new());
        let ours_ms = started.elapsed().as_secs_f64() * 1e3;
        let theirs = asking.ok().and_then(|a| a.join().ok().flatten());
        (ours, theirs, ours_ms)
    });
    if graph::tracing() {
        eprintln!(
            "cudnn_rs find: heuristics beside: the first {ours_ms:.3} ms, all {:.3} ms{}",
            started.elapsed().as_secs_f64() * 1e3,
            if theirs.is_some() {
                ""
            } else {
                " (the other thread gave no answer)"
            }
        );
    }
    let beside = if let (Some((their_graph, listed)), Some(cx)) = (theirs, side.as_ref()) {
        for mut c in listed {
            if !out.iter().any(|o| o.config == c.config) {
                c.beside = true;
                out.push(c);
            }
        }
        Some(Beside {
            handle: cx.as_raw(),
            graph: std::rc::Rc::new(their_graph),
        })
    } else {
        let seen = out.iter().map(|c| c.config).collect();
        out.extend(graph::listed_by(lib, graph, rest, seen));
        None
    };
    graph::add_unranked(graph, sources, &mut out)?;
    Ok((out, beside))
}

/// A measuring context's other context ([`candidates_beside`]).
type SideContext = Box<CudnnContext>;

/// The other thread's part of [`candidates_beside`]: with the context in `side` (made
/// there, on `cuda`, where there is none), its graph of `spec` and what heuristics
/// `modes` list for it.
fn ask_beside(
    cuda: &std::sync::Arc<cudarc::driver::CudaContext>,
    side: &mut Option<SideContext>,
    spec: &Spec,
    align: i64,
    modes: &'static [HeurMode],
) -> Option<(OpGraph, Vec<Candidate>)> {
    background::capture_mode_thread_local();
    if side.is_none() {
        let cx = CudnnContext::with_stream(cuda.default_stream()).ok()?;
        *side = Some(Box::new(cx));
    }
    let cx = side.as_ref()?;
    cx.bind().ok()?;
    let graph = spec.graph(cx, align).ok()?;
    let listed = graph::listed_by(cx.lib, &graph, modes, Vec::new());
    Some((graph, listed))
}

/// The handle and operation graph the configurations [`candidates_beside`] marks
/// `Candidate::beside` were listed for: their plans are built with that handle for that
/// graph, and run on any handle of the device (cuDNN 9.8 on, see
/// [`background`]). The handle is the measuring context's side context's,
/// which outlives the plans (see `CudnnContext::side`).
pub(crate) struct Beside {
    pub(crate) handle: CudnnHandle,
    pub(crate) graph: std::rc::Rc<OpGraph>,
}
