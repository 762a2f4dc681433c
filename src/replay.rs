//! Replaying repeated backward-data calls as CUDA graphs.
//!
//! cuDNN 9's legacy `cudnnConvolutionBackwardData` spends tens of microseconds on the host
//! per call (it plans the call anew each time). A training or benchmark loop repeats the
//! very same call: same shapes, algorithm, math type, scalars and addresses (a training
//! step makes its calls in the same order every step, and PyTorch's caching allocator
//! hands out the same addresses each time). The second time a call is seen among the
//! recent ones, it is captured (on a private stream, in thread-local capture mode) into a
//! CUDA graph, and from then on an identical call only launches that graph on the
//! handle's stream: the same kernels on the same addresses, in stream order, for a few
//! microseconds of host time instead of cuDNN's 12-24. Anything that differs is a new
//! key; a call that cannot be captured runs directly and is not tried again. A workload
//! that cycles through more calls than the cache keeps would capture each call only to
//! drop it before its next turn: after [`WASTE_LIMIT`] such drops the context stops
//! capturing (its graphs keep replaying).
//!
//! A call issued while the caller captures the stream into a graph of its own runs
//! directly (into that graph). Set `CUDNN_RS_GRAPHS=0` to turn replay off.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

use cudarc::driver::sys;

use crate::error::Result;
use crate::problem::RawPointers;

/// What makes two calls the same call: the problem (by value), algorithm, math type,
/// addresses and scalar bits.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct CallKey<P: PartialEq> {
    pub problem: P,
    pub pointers: [u64; 3],
    pub workspace: (u64, usize),
    pub scalars: (u64, u64),
}

impl<P: PartialEq> CallKey<P> {
    pub(crate) fn same_call(&self, ptrs: &RawPointers, alpha: f64, beta: f64) -> bool {
        self.pointers == [ptrs.w, ptrs.dy, ptrs.dx]
            && self.workspace == ptrs.workspace
            && self.scalars == (alpha.to_bits(), beta.to_bits())
    }
}

struct Entry<P: PartialEq> {
    key: CallKey<P>,
    /// `None`: the call could not be captured; it runs directly.
    exec: Option<sys::CUgraphExec>,
    /// When the entry was last used (the cache's clock), for eviction.
    used: u64,
    /// Whether it ran again after its capture.
    replayed: bool,
}

/// Per-context cache of captured calls (a context is used by one thread at a time).
///
/// Every call looks itself up among the entries and the calls seen once. A key holds
/// the problem by value (768 bytes on x86-64), so scanning hundreds of keys for the
/// addresses would read hundreds of cache lines on each call; the lookups scan a
/// fingerprint of the addresses and scalars per key instead (kept in the same order,
/// eight bytes each) and compare a key in full only where its fingerprint is the call's.
pub(crate) struct GraphCache<P: PartialEq> {
    entries: Vec<Entry<P>>,
    /// The entries' fingerprints ([`fingerprint`]), in the entries' order.
    entry_prints: Vec<u64>,
    /// Calls seen once, the latest last, to notice a repeat.
    seen: VecDeque<CallKey<P>>,
    /// Their fingerprints, in the same order.
    seen_prints: VecDeque<u64>,
    /// The call being captured (a repeat just noticed), stored by [`Self::store`].
    pending: Option<CallKey<P>>,
    /// Counts the calls that found or made an entry (the entries' clock).
    clock: u64,
    /// Entries evicted without having run again after their capture.
    wasted: usize,
    /// Private stream captures run on (the handle's may be the legacy default stream,
    /// which cannot be captured).
    side: Option<sys::CUstream>,
}

/// Captured calls kept per context (a ResNet-50 training step makes 52 distinct calls,
/// a DenseNet-121 step 120).
const MAX_ENTRIES: usize = 160;
/// Calls remembered once, to notice a repeat.
const MAX_SEEN: usize = 320;
/// Entries evicted without a replay after which a context captures no more.
const WASTE_LIMIT: usize = 16;

pub(crate) fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| crate::switched_on("CUDNN_RS_GRAPHS"))
}

/// What to do with a call.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Launch this captured graph.
    Replay(sys::CUgraphExec),
    /// Capture it now (it repeats a recent call).
    Capture,
    /// Run it directly.
    Direct,
}

impl<P: PartialEq + Clone> GraphCache<P> {
    pub(crate) fn new() -> Self {
        Self {
            entries: Vec::new(),
            entry_prints: Vec::new(),
            seen: VecDeque::new(),
            seen_prints: VecDeque::new(),
            pending: None,
            clock: 0,
            wasted: 0,
            side: None,
        }
    }

    /// Decides how to run a call; `matches` compares a cached problem with this call's.
    pub(crate) fn plan(
        &mut self,
        matches: impl Fn(&P) -> bool,
        make: impl FnOnce() -> P,
        ptrs: &RawPointers,
        alpha: f64,
        beta: f64,
    ) -> Plan {
        self.clock += 1;
        let now = self.clock;
        let print = fingerprint(ptrs, alpha, beta);
        let is_call = |k: &CallKey<P>| k.same_call(ptrs, alpha, beta) && matches(&k.problem);
        let entries = &self.entries;
        let entry = find_print(&self.entry_prints, 0, print, |i| {
            entries.get(i).is_some_and(|e| is_call(&e.key))
        });
        if let Some(e) = entry.and_then(|i| self.entries.get_mut(i)) {
            e.used = now;
            e.replayed = true;
            return e.exec.map_or(Plan::Direct, Plan::Replay);
        }
        if self.wasted >= WASTE_LIMIT {
            return Plan::Direct;
        }
        let seen = &self.seen;
        let is_seen = |i: usize| seen.get(i).is_some_and(is_call);
        let (front, back) = self.seen_prints.as_slices();
        if let Some(i) = find_print(front, 0, print, is_seen)
            .or_else(|| find_print(back, front.len(), print, is_seen))
        {
            self.seen_prints.remove(i);
            self.pending = self.seen.remove(i);
            return Plan::Capture;
        }
        self.remember(
            CallKey {
                problem: make(),
                pointers: [ptrs.w, ptrs.dy, ptrs.dx],
                workspace: ptrs.workspace,
                scalars: (alpha.to_bits(), beta.to_bits()),
            },
            print,
        );
        Plan::Direct
    }

    /// Adds a call to those seen once (the oldest one forgotten when they are too many).
    fn remember(&mut self, key: CallKey<P>, print: u64) {
        if self.seen.len() >= MAX_SEEN {
            self.seen.pop_front();
            self.seen_prints.pop_front();
        }
        self.seen_prints.push_back(print);
        self.seen.push_back(key);
    }

    /// Takes back the capture [`Self::plan`] just asked for, the call running directly
    /// instead: it counts as seen once, to be captured on its next repeat.
    pub(crate) fn forgo_capture(&mut self) {
        if let Some(key) = self.pending.take() {
            let print = fingerprint_of(&key);
            self.remember(key, print);
        }
    }

    /// Records the outcome of the capture [`Self::plan`] asked for last; `false` when there
    /// was none to record (the graph is then destroyed).
    pub(crate) fn store(&mut self, exec: Option<sys::CUgraphExec>) -> bool {
        let Some(key) = self.pending.take() else {
            if let Some(exec) = exec {
                destroy_exec(exec);
            }
            return false;
        };
        if self.entries.len() >= MAX_ENTRIES {
            let oldest = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.used)
                .map_or(0, |(i, _)| i);
            let old = self.entries.swap_remove(oldest);
            self.entry_prints.swap_remove(oldest);
            if !old.replayed {
                self.wasted += 1;
            }
            if let Some(exec) = old.exec {
                destroy_exec(exec);
            }
        }
        self.entry_prints.push(fingerprint_of(&key));
        self.entries.push(Entry {
            key,
            exec,
            used: self.clock,
            replayed: false,
        });
        true
    }

    /// Forgets every captured and remembered call (the private stream stays): for when
    /// what a key runs may have changed, e.g. the default choice by benchmarking.
    pub(crate) fn clear(&mut self) {
        for e in self.entries.drain(..) {
            if let Some(exec) = e.exec {
                destroy_exec(exec);
            }
        }
        self.entry_prints.clear();
        self.seen.clear();
        self.seen_prints.clear();
        self.pending = None;
        self.wasted = 0;
    }

    /// The private capture stream, made on first use.
    pub(crate) fn side_stream(&mut self) -> Option<sys::CUstream> {
        if self.side.is_none() {
            let mut stream: sys::CUstream = std::ptr::null_mut();
            // SAFETY: cuStreamCreate writes one stream handle; the context is current.
            let r = unsafe {
                sys::cuStreamCreate(
                    &raw mut stream,
                    sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
                )
            };
            if r != sys::cudaError_enum::CUDA_SUCCESS || stream.is_null() {
                return None;
            }
            self.side = Some(stream);
        }
        self.side
    }
}

/// A call's addresses, workspace and scalars hashed into eight bytes: equal calls have
/// equal fingerprints (unequal ones rarely do, and are then told apart in full).
fn fingerprint(ptrs: &RawPointers, alpha: f64, beta: f64) -> u64 {
    hash_parts(
        [ptrs.w, ptrs.dy, ptrs.dx],
        ptrs.workspace,
        (alpha.to_bits(), beta.to_bits()),
    )
}

/// [`fingerprint`] of a stored key.
fn fingerprint_of<P: PartialEq>(key: &CallKey<P>) -> u64 {
    hash_parts(key.pointers, key.workspace, key.scalars)
}

fn hash_parts(pointers: [u64; 3], workspace: (u64, usize), scalars: (u64, u64)) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    (pointers, workspace, scalars).hash(&mut h);
    h.finish()
}

/// The index (counted from `from`, where `prints` starts) of the first fingerprint in
/// `prints` equal to `print` whose key `is_call` accepts. Scanned as a slice: the
/// fingerprints lie together, and a slice's search is several times faster than a
/// `VecDeque`'s iterator.
fn find_print(
    prints: &[u64],
    from: usize,
    print: u64,
    is_call: impl Fn(usize) -> bool,
) -> Option<usize> {
    let mut start = 0;
    while let Some(j) = prints.get(start..)?.iter().position(|&p| p == print) {
        let at = start + j;
        if is_call(from + at) {
            return Some(from + at);
        }
        start = at + 1;
    }
    None
}

/// Runs a call as a CUDA graph when it repeats: `Ok(true)` when the work was enqueued that
/// way (an earlier capture replayed, or the call captured now and launched), `Ok(false)`
/// when the caller should issue it directly. `issue` points the library at the stream it
/// is given and enqueues the call there; `restore` points the library back at its own
/// stream after a capture.
///
/// # Safety
/// `stream` must be the context's live stream and the context current; `same` and `key`
/// must identify everything of the call but its addresses and scalars (problem,
/// algorithm, math type), and the addresses in `ptrs` must be valid now; `issue` must
/// only enqueue work on the stream it is given.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn replay_or_capture<P: PartialEq + Clone>(
    cache: &RefCell<GraphCache<P>>,
    stream: *mut c_void,
    same: impl Fn(&P) -> bool,
    key: impl FnOnce() -> P,
    ptrs: &RawPointers,
    (alpha, beta): (f64, f64),
    issue: impl FnOnce(sys::CUstream) -> bool,
    restore: impl FnOnce() -> Result<()>,
) -> Result<bool> {
    let plan = cache.borrow_mut().plan(same, key, ptrs, alpha, beta);
    // Asked only where a graph would be launched (a call run directly needs no answer,
    // which saves a driver call on every call a training loop makes on new addresses).
    if plan != Plan::Direct && capturing(stream) {
        // The caller is capturing the stream into a graph of its own: the call goes
        // into that graph as it is (a graph launched into a capture would end it).
        cache.borrow_mut().forgo_capture();
        return Ok(false);
    }
    match plan {
        Plan::Replay(exec) => {
            crate::counters::bump(crate::counters::Count::Replayed);
            // SAFETY: the graph was captured in this context from a call with these very
            // addresses, shapes and scalars (its key), which the caller vouches for now.
            Ok(unsafe { launch(exec, stream) })
        }
        Plan::Direct => {
            crate::counters::bump(crate::counters::Count::Direct);
            Ok(false)
        }
        Plan::Capture => {
            crate::counters::bump(crate::counters::Count::Captured);
            let Some(side) = cache.borrow_mut().side_stream() else {
                let _ = cache.borrow_mut().store(None);
                return Ok(false);
            };
            // SAFETY: `side` is this context's live private stream; `issue` only enqueues
            // the call there (this function's contract).
            let exec = unsafe { capture(side, issue) };
            // Kept (or destroyed) by the cache whatever happens next.
            let kept = cache.borrow_mut().store(exec);
            restore()?;
            // SAFETY: as for `Plan::Replay`: captured just now from this very call, and
            // kept in the cache (nothing evicts it before this launch).
            Ok(kept && exec.is_some_and(|e| unsafe { launch(e, stream) }))
        }
    }
}

/// Captures `call` (which issues the work to the stream it is given) into a graph on
/// `side`. `None` when capture or instantiation fails; the capture is always ended.
///
/// # Safety
/// `side` must be a live stream of the current context; `call` must only enqueue work
/// on the stream it is given.
pub(crate) unsafe fn capture(
    side: sys::CUstream,
    call: impl FnOnce(sys::CUstream) -> bool,
) -> Option<sys::CUgraphExec> {
    // SAFETY: forwarded from this function's contract.
    unsafe { capture_if(side, call, None::<fn(usize) -> bool>) }
}

/// [`capture`], instantiated only where `keep` (if given) accepts the captured graph's
/// node count (instantiating costs far more than capturing; without `keep` the nodes are
/// not counted).
///
/// # Safety
/// As [`capture`].
unsafe fn capture_if(
    side: sys::CUstream,
    call: impl FnOnce(sys::CUstream) -> bool,
    keep: Option<impl FnOnce(usize) -> bool>,
) -> Option<sys::CUgraphExec> {
    let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    // SAFETY: `side` is a live stream (caller's contract).
    if unsafe { sys::cuStreamBeginCapture_v2(side, mode) } != sys::cudaError_enum::CUDA_SUCCESS {
        return None;
    }
    let issued = call(side);
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: ends the capture begun above, whatever `call` did.
    let ended = unsafe { sys::cuStreamEndCapture(side, &raw mut graph) };
    if graph.is_null() {
        return None;
    }
    let kept = || {
        keep.is_none_or(|keep| {
            let mut nodes = 0usize;
            // SAFETY: `graph` is the captured graph; with no array given, only the count
            // is written.
            let counted =
                unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &raw mut nodes) };
            counted == sys::cudaError_enum::CUDA_SUCCESS && keep(nodes)
        })
    };
    let mut exec: sys::CUgraphExec = std::ptr::null_mut();
    let ok = issued
        && ended == sys::cudaError_enum::CUDA_SUCCESS
        && kept()
        // SAFETY: `graph` is the captured graph; `exec` receives one executable graph.
        && unsafe { sys::cuGraphInstantiateWithFlags(&raw mut exec, graph, 0) }
            == sys::cudaError_enum::CUDA_SUCCESS;
    // SAFETY: the graph is no longer needed once instantiated (or on failure).
    unsafe { sys::cuGraphDestroy(graph) };
    (ok && !exec.is_null()).then_some(exec)
}

/// Whether `stream` is being captured into a CUDA graph (or cannot say, which the legacy
/// default stream answers while another stream of the device captures).
pub(crate) fn capturing(stream: *mut c_void) -> bool {
    // Read as an integer: the status is a C enum written by the driver.
    let mut status: u32 = 0;
    // SAFETY: the stream is the context's live stream; one 32-bit status is written.
    let r = unsafe { sys::cuStreamIsCapturing(stream.cast(), (&raw mut status).cast()) };
    r != sys::cudaError_enum::CUDA_SUCCESS
        || status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE as u32
}

/// Launches a captured call on `stream`.
///
/// # Safety
/// `exec` must be a live graph of the current context; the addresses it was captured
/// with must be valid now (they are part of the key it was found under).
pub(crate) unsafe fn launch(exec: sys::CUgraphExec, stream: *mut c_void) -> bool {
    // SAFETY: as the function's contract.
    unsafe { sys::cuGraphLaunch(exec, stream.cast()) == sys::cudaError_enum::CUDA_SUCCESS }
}

/// An executable graph owned by itself (not by a cache): destroyed when dropped.
pub(crate) struct OwnedExec(sys::CUgraphExec);

impl OwnedExec {
    /// Launches the graph on `stream`.
    ///
    /// # Safety
    /// As [`launch`]: the addresses it was captured with must be valid now.
    pub(crate) unsafe fn launch(&self, stream: *mut c_void) -> bool {
        // SAFETY: a live graph of the context it was captured in; the addresses are the
        // caller's contract.
        unsafe { launch(self.0, stream) }
    }
}

impl Drop for OwnedExec {
    fn drop(&mut self) {
        destroy_exec(self.0);
    }
}

/// [`capture`], the graph owned by the result; `None` also where `keep` refuses the
/// captured graph's node count (it is then not instantiated).
///
/// # Safety
/// As [`capture`].
pub(crate) unsafe fn capture_owned(
    side: sys::CUstream,
    call: impl FnOnce(sys::CUstream) -> bool,
    keep: impl FnOnce(usize) -> bool,
) -> Option<OwnedExec> {
    // SAFETY: forwarded from this function's contract.
    unsafe { capture_if(side, call, Some(keep)) }.map(OwnedExec)
}

fn destroy_exec(exec: sys::CUgraphExec) {
    // SAFETY: each executable graph is destroyed once, when it leaves the cache.
    unsafe { sys::cuGraphExecDestroy(exec) };
}

impl<P: PartialEq + Clone> Default for GraphCache<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: PartialEq> Drop for GraphCache<P> {
    fn drop(&mut self) {
        for e in self.entries.drain(..) {
            if let Some(exec) = e.exec {
                destroy_exec(exec);
            }
        }
        if let Some(side) = self.side.take() {
            // SAFETY: the private stream is destroyed once, here.
            unsafe { sys::cuStreamDestroy_v2(side) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ptrs(i: u64) -> RawPointers {
        RawPointers {
            w: 0x1000,
            dy: 0x10_0000 + i * 0x1000,
            dx: 0x90_0000 + i * 0x1000,
            workspace: (0, 0),
        }
    }

    /// Plans the call numbered `i` (problem `i`, addresses of its own); a capture asked
    /// for is recorded as not capturable (no driver here), which leaves the entry.
    fn call(cache: &mut GraphCache<u64>, i: u64) -> Plan {
        let plan = cache.plan(|p| *p == i, || i, &ptrs(i), 1.0, 0.0);
        if plan == Plan::Capture {
            assert!(cache.store(None), "a capture asked for is recorded");
        }
        plan
    }

    #[test]
    fn a_call_seen_again_among_others_is_captured_once() {
        let mut cache = GraphCache::new();
        assert!(!cache.store(None), "no capture was asked for");
        assert_eq!(call(&mut cache, 1), Plan::Direct, "first sight");
        assert_eq!(call(&mut cache, 2), Plan::Direct, "first sight");
        assert_eq!(
            call(&mut cache, 1),
            Plan::Capture,
            "seen before, not just before"
        );
        assert_eq!(
            call(&mut cache, 1),
            Plan::Direct,
            "not capturable: runs directly"
        );
        assert_eq!(call(&mut cache, 2), Plan::Capture);
        // Other scalars or addresses are another call.
        let other = cache.plan(|p| *p == 2, || 2, &ptrs(2), 1.0, 1.0);
        assert_eq!(other, Plan::Direct);
        let moved = RawPointers { dx: 0x5, ..ptrs(2) };
        assert_eq!(
            cache.plan(|p| *p == 2, || 2, &moved, 1.0, 0.0),
            Plan::Direct
        );
    }

    /// The fingerprints stand beside their keys, in the same order.
    fn assert_prints_match(cache: &GraphCache<u64>) {
        let entries: Vec<u64> = cache
            .entries
            .iter()
            .map(|e| fingerprint_of(&e.key))
            .collect();
        assert_eq!(cache.entry_prints, entries);
        let seen: Vec<u64> = cache.seen.iter().map(fingerprint_of).collect();
        assert_eq!(cache.seen_prints.iter().copied().collect::<Vec<_>>(), seen);
    }

    #[test]
    fn calls_at_the_same_addresses_are_told_apart_by_their_problem() {
        let mut cache = GraphCache::new();
        let at = ptrs(5);
        assert_eq!(cache.plan(|p| *p == 1, || 1, &at, 1.0, 0.0), Plan::Direct);
        // Same fingerprint, another problem: not a repeat.
        assert_eq!(cache.plan(|p| *p == 2, || 2, &at, 1.0, 0.0), Plan::Direct);
        assert_eq!(cache.plan(|p| *p == 1, || 1, &at, 1.0, 0.0), Plan::Capture);
        assert!(cache.store(None));
        assert_eq!(cache.plan(|p| *p == 2, || 2, &at, 1.0, 0.0), Plan::Capture);
        assert!(cache.store(None));
        assert_prints_match(&cache);
    }

    #[test]
    fn a_capture_forgone_is_asked_for_on_the_next_repeat() {
        let mut cache = GraphCache::new();
        assert_eq!(call(&mut cache, 1), Plan::Direct);
        assert_eq!(
            cache.plan(|p| *p == 1, || 1, &ptrs(1), 1.0, 0.0),
            Plan::Capture
        );
        cache.forgo_capture();
        assert!(
            !cache.store(None),
            "nothing is pending after a forgone capture"
        );
        assert_prints_match(&cache);
        assert_eq!(
            call(&mut cache, 1),
            Plan::Capture,
            "the call still counts as seen once"
        );
        assert_eq!(
            call(&mut cache, 1),
            Plan::Direct,
            "stored as not capturable"
        );
    }

    #[test]
    fn a_cycle_longer_than_the_cache_stops_capturing() {
        let mut cache = GraphCache::new();
        let n = (MAX_ENTRIES + 40) as u64;
        let captures = |cache: &mut GraphCache<u64>| {
            (0..n).filter(|&i| call(cache, i) == Plan::Capture).count()
        };
        assert_eq!(captures(&mut cache), 0, "first round: every call new");
        // Second round: each call is captured until WASTE_LIMIT entries were evicted
        // before their next turn.
        assert_eq!(captures(&mut cache), MAX_ENTRIES + WASTE_LIMIT);
        assert_prints_match(&cache);
        assert_eq!(captures(&mut cache), 0, "capturing stopped");
        cache.clear();
        assert_eq!(captures(&mut cache), 0, "after clear: every call new again");
        assert_eq!(
            captures(&mut cache),
            MAX_ENTRIES + WASTE_LIMIT,
            "and captured"
        );
    }

    /// The policy written plainly (full keys, no fingerprints), for the randomized test
    /// below: which calls are captured, which entries stay, which calls are seen once.
    #[derive(Default)]
    struct Model {
        entries: Vec<(CallKey<u64>, u64, bool)>,
        seen: VecDeque<CallKey<u64>>,
        pending: Option<CallKey<u64>>,
        clock: u64,
        wasted: usize,
    }

    impl Model {
        fn plan(&mut self, key: &CallKey<u64>) -> Plan {
            self.clock += 1;
            if let Some(e) = self.entries.iter_mut().find(|e| e.0 == *key) {
                (e.1, e.2) = (self.clock, true);
                return Plan::Direct; // stored as not capturable (no driver here)
            }
            if self.wasted >= WASTE_LIMIT {
                return Plan::Direct;
            }
            if let Some(i) = self.seen.iter().position(|k| k == key) {
                self.pending = self.seen.remove(i);
                return Plan::Capture;
            }
            self.remember(key.clone());
            Plan::Direct
        }

        fn remember(&mut self, key: CallKey<u64>) {
            if self.seen.len() >= MAX_SEEN {
                self.seen.pop_front();
            }
            self.seen.push_back(key);
        }

        fn store(&mut self) {
            let Some(key) = self.pending.take() else {
                return;
            };
            if self.entries.len() >= MAX_ENTRIES {
                let (i, _) = self
                    .entries
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, e)| e.1)
                    .unwrap();
                if !self.entries.remove(i).2 {
                    self.wasted += 1;
                }
            }
            self.entries.push((key, self.clock, false));
        }

        fn forgo(&mut self) {
            if let Some(key) = self.pending.take() {
                self.remember(key);
            }
        }
    }

    /// Random calls (few problems sharing few addresses and scalars, so that
    /// fingerprints collide across problems, the seen list and the entries overflow and
    /// the waste limit is reached), captures stored or forgone, and clears: the cache
    /// makes the plain policy's every decision and keeps the same calls.
    #[test]
    fn random_calls_get_the_plain_policys_plans() {
        use rand::{Rng, SeedableRng};
        let fresh: u64 = rand::random();
        for seed in [1, 2, 3, fresh] {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut cache = GraphCache::new();
            let mut model = Model::default();
            // Pools of 120 to 2,400 distinct calls: steps that fit the cache and cycles
            // that do not.
            let spread = rng.random_range(20..400u64);
            for step in 0..6000 {
                if rng.random_ratio(1, 1500) {
                    cache.clear();
                    model = Model::default();
                    continue;
                }
                let problem = rng.random_range(0..3u64);
                let at = ptrs(rng.random_range(0..spread));
                let beta = if rng.random_ratio(1, 8) { 1.0 } else { 0.0 };
                let key = CallKey {
                    problem,
                    pointers: [at.w, at.dy, at.dx],
                    workspace: at.workspace,
                    scalars: (1f64.to_bits(), f64::to_bits(beta)),
                };
                let got = cache.plan(|p| *p == problem, || problem, &at, 1.0, beta);
                let want = model.plan(&key);
                assert_eq!(got, want, "seed {seed}, step {step}");
                if got == Plan::Capture {
                    if rng.random_ratio(1, 4) {
                        cache.forgo_capture();
                        model.forgo();
                    } else {
                        assert!(cache.store(None));
                        model.store();
                    }
                }
                assert_eq!(cache.wasted, model.wasted, "seed {seed}, step {step}");
            }
            assert_prints_match(&cache);
            let mut stored: Vec<_> = cache.entries.iter().map(|e| e.key.clone()).collect();
            let mut want: Vec<_> = model.entries.iter().map(|e| e.0.clone()).collect();
            let order = |k: &CallKey<u64>| (k.problem, k.pointers, k.scalars);
            stored.sort_by_key(order);
            want.sort_by_key(order);
            assert!(stored == want, "seed {seed}: the same calls stored");
            assert!(
                cache.seen.iter().eq(model.seen.iter()),
                "seed {seed}: the same calls seen once, in order"
            );
        }
    }

    #[test]
    fn a_step_that_fits_the_cache_keeps_every_call() {
        let mut cache = GraphCache::new();
        let n = 120u64;
        for round in 0..4 {
            let captured = (0..n)
                .filter(|&i| call(&mut cache, i) == Plan::Capture)
                .count();
            let want = if round == 1 { n as usize } else { 0 };
            assert_eq!(captured, want, "round {round}");
        }
        assert_eq!(cache.wasted, 0);
    }
}
