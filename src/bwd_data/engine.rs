//! The graph-API (backend) path of the context: operation graphs and plans built once
//! and kept, the engine heuristics (`BestEngine`, `get_convolution_backward_data_engine`),
//! engine autotuning, and running a plan. The descriptors themselves are built by
//! [`super::graph`].

use cudarc::cudnn::sys::cudnnBackendHeurMode_t as HeurMode;
use cudarc::driver::{sys::CUdeviceptr, CudaEvent, CudaSlice};

use super::graph::{self, tracing, GraphKey, OpGraph, Plan};
use crate::context::{alloc_bytes, CudnnContext};
use crate::convolution::{Engine, EngineConfig, Route};
use crate::error::{CudnnError, Error, Result};
use crate::math_type::MathType;
use crate::memory::GpuBufferMut;
use crate::problem::{ProblemKey, RawPointers, RawProblem};

/// Calls timed back to back per trial when measuring engines: at most this many ...
const CALLS_PER_TRIAL: usize = 5;
/// ... enough for a trial to last this many milliseconds by one call's time. A single
/// call of a small problem is within the timer's noise, and some engines run their first
/// calls far slower than they settle at; calls of a millisecond and more are neither, and
/// more of them only add to a first sight. (On the H200, trials of 5 ms made first sights
/// of 0.4-1 ms calls 17 calls per configuration long.)
const TRIAL_MS: f32 = 1.0;
/// How many of the fastest plans a timing re-times ([`CudnnContext::refine`]) ...
const REFINE_TOP: usize = 3;
/// ... if they are within this factor of the fastest ...
const REFINE_SPREAD: f32 = 1.15;
/// ... in trials of this many milliseconds of calls (at least one call) ...
const REFINE_TRIAL_MS: f32 = 0.25;
/// ... or, where the fastest call is shorter than [`SCREEN_MS`], of this many (at least
/// [`CALLS_PER_TRIAL`] calls) ...
const REFINE_SHORT_TRIAL_MS: f32 = 0.1;
/// ... and at most this many calls. On the H200 the refine's trials of 0.25 ms (up to 30
/// calls of a short plan) spread more from one round to the next (median 1.2% a plan,
/// 156 plans) than the five-call trials of replayed plans did (0.7%, 304 plans): what
/// varies is the run, not the call, and the longer trials cost rows of short calls 2-2.5
/// ms of a 4-12 ms first sight. (Calls of 0.1 ms and more keep trials of 0.25 ms: with
/// one call a trial in two rounds, the 3-d half-precision layers, whose closest plans lie
/// within 2%, picked 2.4-3.5% slower ones in two runs on the H200.)
const REFINE_MAX_CALLS: usize = 50;
/// The measured tier times the other knob settings of the engines whose first setting came
/// within this factor of the fastest (see [`CudnnContext::time_engines`]).
const STAGE_SPREAD: f32 = 1.1;
/// A plan whose first trial of several calls comes out more than this many times the
/// fastest so far gets no more trials: trials of several calls of a replayed plan
/// differed by 0.7% in the median on the H200 (2.4% at the 90th percentile), and the
/// refine stage re-times the close ones. Replaying every trace of the broad suite
/// (`bench/schedule_sim.py --trial-spread 1.15`, 426 first sights of 2026-12-01 to
/// 12-02) moved one pick, by 1.0%, and spared 13% of the trials' time.
const TRIAL_SPREAD: f32 = REFINE_SPREAD;
/// A plan whose lone sizing call (the one after its warm-up) is slower than the fastest
/// so far by more than this factor is not a contender: it gets no trials. Far outside
/// [`TRIAL_SPREAD`], which rules on trials: a lone call of a short plan can take twice
/// its trials' time (see [`another_trial`]).
const CONTENDER_SPREAD: f32 = 2.0;
/// In a staged timing, a configuration this many times slower than the fastest so far
/// ends the first stage: the heuristics rank the rest lower still. On the H200
/// (`bench/first_sight.py`, 142 problems) no configuration ranked after such a one was
/// the fastest, and the generic engines there took up to 170 ms a call, 40% of all the
/// first sights' time.
const TAIL_SPREAD: f32 = 10.0;
/// In a staged timing, a configuration whose trials come out this many times slower
/// than the fastest so far also ends the first stage. Replaying the H200's traces of the
/// broad suite (`bench/schedule_sim.py --tail-spread`, 138 first sights): at 4 no pick
/// changed and the trials took 14% less time; at 3 one pick was 1% slower.
const STAGE_END_SPREAD: f32 = 4.0;
/// In a staged timing's second stage, a knob setting this many times slower than the
/// fastest rules out the engine's settings ranked after it: the heuristics rank an
/// engine's settings by speed well (on the stem, 17 settings of one engine came out in
/// rank order from 0.45 to 5.7 ms). In the same replay (`--setting-tail-spread`): at 3
/// no pick changed; at 2 four did.
const SETTING_END_SPREAD: f32 = 3.0;
/// In a staged timing, engines only the fallback list names are timed only until this
/// many engines the ranking heuristic (mode A) names have been (some it names do not
/// build, or do not fit the math type). In the same replay
/// (`--fallback-min-engines`) no pick changed; the one fallback-only engine that was ever
/// the fastest (grouped f32 NCHW) won where five were timed; on the stem, one such
/// engine took 32 ms for its one call.
const FALLBACK_MIN_RANKED: usize = 6;
/// In a staged timing's second stage (other knob settings of engines already close to
/// the fastest), a setting whose single call after its warm-up takes this many times the
/// fastest is no contender and gets no trials ...
const SETTING_SPREAD: f32 = 1.3;
/// ... when that call is long enough (in milliseconds) for one call to tell: a shorter one
/// is within the timer's and the launch's noise.
const SETTING_SCREEN_MS: f32 = 0.05;
/// A configuration whose one timed call after its warm-up lasts this many milliseconds is
/// timed by that call alone: the refine stage ([`CudnnContext::refine`]) times the close
/// ones again. On the H200 a call this long came within 1-9% of its best trial, and
/// replaying three sessions' traces of the broad suite (`bench/schedule_sim.py --screen
/// --screen-ms 0.1`, 345 first sights) changed no pick by more than 1% while the trials
/// took 12-24% less time; the stem's trials had spent 9-11 calls on each configuration.
const SCREEN_MS: f32 = 0.1;
/// Once the fastest call so far lasts [`SCREEN_MS`], a configuration whose warm-up call
/// takes this many times the fastest gets no timed call. In the same replay no pick
/// changed at 1.5 (`--warm-cut 1.5 --warm-cut-ms 0.1`), but only because of the order
/// the engines came in: in six traces of the H200, the fastest configurations' warm-ups
/// took up to 2.12x their best call (engine 50 on a 5x3 f32 layer, timed first there).
/// At 2.5 the replayed trials took 1-3% longer than at 1.5.
const WARM_CUT_SPREAD: f32 = 2.5;
/// In a staged timing's second stage, once the fastest call lasts [`SCREEN_MS`], an
/// engine's settings after this many other ones are ruled out. In three sessions' traces
/// of the broad suite on the H200 (345 first sights), on every row whose calls lasted
/// that long a configuration within 1% of the fastest was among its engine's first four
/// settings; the winners ranked deeper were all shorter calls. In the replay
/// (`bench/schedule_sim.py --setting-limit 3 --setting-limit-ms 0.1`) no pick changed,
/// and the stem's trials took a third less.
const LONG_CALL_SETTINGS: usize = 3;
/// In a staged timing, once the fastest call lasts [`SCREEN_MS`], the first stage ends
/// when this many engines the ranking heuristic (mode A) lists have been timed (the
/// fallback-only engines end there too, see [`FALLBACK_MIN_RANKED`]). In the same three
/// sessions' traces the fastest configuration's engine was always among the first six
/// engines timed; on the stem in TF32 the ninth was cuDNN's generic engine, 18 ms for its
/// one warm-up call (`find_trace_2026-12-02e.txt.gz`). In the replay
/// (`--first-stage-engines 6 --first-stage-ms 0.1`) no pick changed; at 5 the grouped
/// f32 NCHW row lost its fastest engine (1.6-1.8x), a fallback-only one timed after five
/// ranked.
const LONG_CALL_RANKED: usize = 6;
/// A staged timing takes the first this many configurations in list order (mode A's
/// ranking, then the fallback list) that give a time, whatever its stages rule out (but
/// for further settings of an engine found [`SETTING_END_SPREAD`] times slower than the
/// fastest): the plans PyTorch's benchmark mode times (`torch.backends.cudnn.benchmark_limit`,
/// 10 by default: the first ten plans of mode A's and the fallback list that build) are
/// then all among ours. The stages' cuts were fitted to the broad suite's traces; on
/// layers drawn at random on the H200 (`bench/random_layers.py --measured`, seeds 9 and
/// 11) they left out what PyTorch's benchmark mode found: a 7x7 stride-2 TF32
/// channels-last layer ended its first stage at cuDNN's generic engine (engine 0, ranked
/// third and 33 times slower) and never reached the engines ranked after it, five times
/// faster (1.54x PyTorch's time a call); a dilated grouped TF32 layer, one configuration
/// ranked by mode A, ended it at the same engine from the fallback list (1.97x); a 5x5
/// bf16 layer took one setting of six engines and missed another setting of one of them
/// 18% faster (1.15x), a 3x3x3 f16 one likewise (1.29x). With the floor those rows came
/// out at 0.53x, 0.99x, 0.99x and 0.98x PyTorch's time, and the first sights of the 140
/// layers took 10-17% longer (0.72-0.77x PyTorch's benchmark mode in geometric mean).
const PEER_FLOOR: usize = 10;
/// cuDNN's generic engine (engine 0, which its heuristics list for nearly every problem):
/// a staged timing takes it under [`PEER_FLOOR`] only. It wins only on small, odd
/// problems, where the heuristics rank it high: in the H200's and H100's find traces of
/// 2026-12-01 to 12-05 (530 problems that timed it) it was the fastest 58 times, each time
/// among the first nine configurations timed, while the 34 times it came after the first
/// ten it took 3.2-920x the fastest, 0.04-102 ms a call (417 ms in all; on a 3x3x3 f16
/// layer 68 ms of a first sight of 86, where PyTorch's benchmark mode took 10).
const GENERIC_ENGINE: i64 = 0;
/// A plan whose host time to issue one call is at least this fraction of the call's time
/// on the GPU is timed replayed (see [`Runner`]): issued directly, back-to-back calls would
/// wait on the host. A one-kernel plan that issues faster keeps the GPU busy, and is
/// timed directly (instantiating a capture costs 0.2-1.5 ms). Plans of several kernels
/// are replayed whatever the host's time, since the GPU also idles between the kernels of
/// a direct call (on the H200 the grouped f32 NCHW row's engine 1 took 0.33 ms issued
/// directly and 0.227 ms replayed; in a run where only host-bound calls were replayed,
/// the row picked a 0.49 ms engine).
const HOST_BOUND: f32 = 0.5;
/// In a held timing ([`holds`]), each configuration's first look after its warm-up:
/// this many calls, each timed on its own (one where the warm-up lasted [`SCREEN_MS`]) ...
const HELD_FIRST: usize = 2;
/// ... and where the fastest of them is within [`TRIAL_SPREAD`] of the fastest so far
/// (and shorter than [`SCREEN_MS`]), this many more; its time is the fastest call. A call
/// timed held is the GPU's time alone, so a single one tells what a trial of several
/// did: the trials of unheld calls needed five calls each to average out the host's
/// launches (on short calls, 10-20 us of a 5-20 us call).
const HELD_MORE: usize = 3;
/// In a held timing, each round of the refine times every close plan's calls one by one:
/// this many a plan where calls are shorter than [`SCREEN_MS`], else one.
const REFINE_HELD_CALLS: usize = 2;
/// The events a timing holds: a start and one after each run of calls (a held refine's
/// round is the longest batch).
const EVENTS: usize = 1 + REFINE_TOP * REFINE_HELD_CALLS;
const _: () = assert!(HELD_FIRST < EVENTS && HELD_MORE < EVENTS);
/// A hold lasts this many times the host's time to issue the calls it holds ...
const HOLD_SLACK: f32 = 1.25;
/// ... plus this many milliseconds (the events' records) ...
const HOLD_PAD_MS: f32 = 0.005;
/// ... the host's time taken as this many milliseconds a call where none was measured.
const HOLD_UNKNOWN_MS: f32 = 0.02;
/// A configuration's warm-up call is held too, for this many times a later call's host
/// time where no warm-up's was measured yet: the first call of a plan takes the host
/// longer to issue (on the H100, 1.4-6 times the calls after it in the traces of
/// 2026-12-07, its variant pack being built).
const WARM_ISSUE: f32 = 3.0;
/// A warm-up the host took longer to issue than its hold, but no more than this many
/// times the hold, sizes the next warm-up's hold; a longer one was a kernel's first load
/// (1-1.3 ms on the H100), which the next configuration does not repeat.
const WARM_LATE_UPDATE: f32 = 4.0;

/// Whether the measured tier holds the stream while it issues the calls it times
/// (`CUDNN_RS_HOLD=0` turns it off): a kernel that only waits on the GPU
/// ([`CudnnContext::hold`]) runs first, for about as long as the host takes to issue the
/// calls and the events between them, so that they run back to back and each call's
/// events time the GPU's work alone. Unheld, a short call's events also time the host's
/// launch of it (a 5 us call timed alone came out at 10-20 us), which took trials of five
/// calls, warm-ups issued directly and replayed, and captures into CUDA graphs to tell
/// plans apart; held, a call of several kernels also runs them back to back, as a replay
/// does. With holds off, the timing is as it was before them.
fn holds() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| crate::switched_on("CUDNN_RS_HOLD"))
}

/// Whether a measurement asks cuDNN's heuristics after the first on another thread while
/// it asks the first (`CUDNN_RS_ASK_BESIDE=0` turns it off; see
/// [`super::beside::candidates_beside`]).
fn asks_beside() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| crate::switched_on("CUDNN_RS_ASK_BESIDE"))
}

/// How long a hold waits for the host to issue `calls` calls that take it `host_ms`
/// milliseconds each (where that was measured), in milliseconds.
fn hold_ms(calls: usize, host_ms: f32) -> f32 {
    let per_call = if host_ms.is_finite() && host_ms > 0.0 {
        host_ms
    } else {
        HOLD_UNKNOWN_MS
    };
    #[allow(clippy::cast_precision_loss)] // a handful of calls
    let calls = calls as f32;
    HOLD_PAD_MS + HOLD_SLACK * calls * per_call
}

/// The host's time to issue what a held timing holds, carried from one configuration to
/// the next (NaN until measured): a call of a configuration timed before, and a warm-up
/// (a plan's first call and its events).
#[derive(Clone, Copy, Debug)]
struct HostTimes {
    call: f32,
    warm: f32,
}

impl HostTimes {
    const UNKNOWN: Self = Self {
        call: f32::NAN,
        warm: f32::NAN,
    };

    /// How long a warm-up's hold lasts, in milliseconds: the last warm-up's host time, else
    /// [`WARM_ISSUE`] times a call's (or [`HOLD_UNKNOWN_MS`]'s).
    fn warm_hold(self) -> f32 {
        if self.warm.is_finite() && self.warm > 0.0 {
            hold_ms(1, self.warm)
        } else if self.call.is_finite() && self.call > 0.0 {
            hold_ms(1, WARM_ISSUE * self.call)
        } else {
            hold_ms(1, WARM_ISSUE * HOLD_UNKNOWN_MS)
        }
    }

    /// Takes in a warm-up the host issued in `issue_ms` under a hold of `hold_ms` (see
    /// [`WARM_LATE_UPDATE`]).
    fn warmed(&mut self, issue_ms: f32, hold_ms: f32) {
        if issue_ms.is_finite() && issue_ms <= WARM_LATE_UPDATE * hold_ms {
            self.warm = issue_ms;
        }
    }
}

/// What a held warm-up that the host issued within its hold, lasting `warm` ms on the
/// GPU, leaves to time, the fastest configuration so far taking `fastest` ms: no more
/// calls where the warm-up alone tells (it lasts [`SCREEN_MS`], the refine timing the
/// close ones again, or it is [`CONTENDER_SPREAD`] times the fastest), [`HELD_MORE`]
/// calls where it is close to the fastest ([`held_look_again`]), else [`HELD_FIRST`]
/// (and then perhaps more).
fn after_warm_up(warm: f32, fastest: f32) -> usize {
    if warm >= SCREEN_MS || warm > CONTENDER_SPREAD * fastest {
        0
    } else if held_look_again(warm, fastest) {
        HELD_MORE
    } else {
        HELD_FIRST
    }
}

/// What a held warm-up lasting `warm` ms on the GPU leaves to time, the fastest
/// configuration so far taking `fastest` ms: `None` rules the configuration out on the
/// warm-up's time ([`worth_a_call`]); else its time so far (infinity where the warm-up
/// cannot tell) and how many held calls follow. `late`: the host took longer to issue
/// the warm-up than its hold, so its time also holds what the GPU waited on the host,
/// and rules the configuration out with it, as an unheld one does (a configuration whose
/// calls the host issues that slowly, on the H100 plans taking 1-6 ms of the host's time
/// a call, costs a first sight more than its calls' GPU time tells); not ruled out, it
/// gets [`HELD_FIRST`] calls (one where the warm-up lasted [`SCREEN_MS`]). But the late
/// warm-up of a plan `compiled` at run time (built just before, as cuDNN keeps no
/// compiled plan for another) was its module's first load: it rules nothing out, and
/// [`HELD_FIRST`] calls follow. (On the H100, efficientnet_b0's 672-to-192 1x1 f16 layer
/// compiled fallback engine 78 for 335 ms, then ruled it out on that warm-up, 1.23 ms
/// against 0.015; timed, the engine was 12% faster than the others.)
fn after_held_warm_up(warm: f32, late: bool, compiled: bool, fastest: f32) -> Option<(f32, usize)> {
    if late && compiled {
        return Some((f32::INFINITY, HELD_FIRST));
    }
    if !worth_a_call(warm, fastest) {
        return None;
    }
    Some(if late {
        let calls = if warm >= SCREEN_MS { 1 } else { HELD_FIRST };
        (f32::INFINITY, calls)
    } else {
        (warm, after_warm_up(warm, fastest))
    })
}

/// Whether a configuration timed held, its fastest call so far taking `best` ms and the
/// fastest configuration so far `fastest`, gets [`HELD_MORE`] more calls: not where one
/// call tells ([`SCREEN_MS`]: the refine times the close ones again), nor once it is
/// [`TRIAL_SPREAD`] times the fastest (which also covers another knob setting's screen,
/// [`SETTING_SPREAD`] being wider).
fn held_look_again(best: f32, fastest: f32) -> bool {
    best < SCREEN_MS && best <= TRIAL_SPREAD * fastest
}

/// How a trial runs a plan: directly, or one call of it captured into a CUDA graph and
/// launched as one, as a repeated call runs (see [`crate::replay`]).
///
/// A plan of several kernels (on the H200, grouped f32 layers' engines 1 and 74 launch
/// many) runs far faster replayed than issued directly, where the GPU waits for the host
/// between launches: the grouped f32 NCHW row's engine 1 took 0.33-0.38 ms a call in
/// trials issued directly (more where the host was busier: some runs picked a one-kernel
/// engine of 0.48 ms over it), and 0.227 ms replayed, its kernels' own time
/// (`bench/settle_probe.py`). Timed as they run, the trials rank
/// the plans by what calls cost once they repeat. Calls on new addresses each time run
/// directly and pay the launches. A plan of one kernel whose calls the host issues well
/// within their GPU time ([`HOST_BOUND`]) runs alike either way, and is timed directly: a
/// capture is only instantiated (most of its cost) for plans of several kernels, where
/// the GPU also idles between a direct call's kernels, or calls the host cannot keep up
/// with.
enum Runner<'a> {
    Direct(&'a Plan),
    Graph(&'a crate::replay::OwnedExec),
}

/// One timed run of calls back to back: the GPU's time per call (by events) and the
/// host's time per call to issue them.
#[derive(Clone, Copy, Debug)]
struct Calls {
    ms: f32,
    host_ms: f32,
}

impl Calls {
    /// Whether issuing the calls kept up with the GPU only barely or not at all
    /// ([`HOST_BOUND`]): then back-to-back direct calls time the host, not the plan.
    fn host_bound(self) -> bool {
        self.host_ms >= HOST_BOUND * self.ms
    }
}

/// What [`CudnnContext::time_runs`] timed: each run that ran whole, and the host's time to
/// issue the whole batch (its runs and events), in milliseconds.
struct Timed {
    runs: Vec<Calls>,
    issue_ms: f32,
}

/// A configuration timed in a find: its engine (with its time), notes and plan, and
/// whether its trials replayed it (see [`Runner`]), with the graph they replayed while it
/// is still valid: captured on the find's workspace, it is dropped when a larger one
/// replaces that, so that the refine stage ([`CudnnContext::refine`]) launches it
/// without capturing the call again.
struct Found {
    engine: Engine,
    notes: graph::Notes,
    plan: std::rc::Rc<Plan>,
    replay: bool,
    graph: Option<crate::replay::OwnedExec>,
    /// The host's time to issue one call, in milliseconds, where the timing held the
    /// stream (NaN elsewhere): it sizes the refine's holds.
    issue_ms: f32,
}

/// Whether a configuration whose warm-up call took `warm_ms` is worth a timed call, the
/// fastest so far taking `fastest` ms: not [`TAIL_SPREAD`] times slower, nor, once calls
/// are long enough for one to tell ([`SCREEN_MS`]), [`WARM_CUT_SPREAD`] times.
fn worth_a_call(warm_ms: f32, fastest: f32) -> bool {
    let spread = if fastest >= SCREEN_MS {
        WARM_CUT_SPREAD
    } else {
        TAIL_SPREAD
    };
    warm_ms <= spread * fastest
}

/// Whether a plan gets another trial, its best time so far being `best` ms after
/// `trials` trials of several calls (with none, `best` is its lone sizing call) and the
/// fastest plan so far taking `fastest` ms: at most three; none once `best` is
/// [`CONTENDER_SPREAD`] times `fastest` (a lone call of a short plan can take twice its
/// trials' time), nor, after a trial, [`TRIAL_SPREAD`] times.
fn another_trial(best: f32, trials: usize, fastest: f32) -> bool {
    let behind = |spread: f32| best.is_finite() && best > spread * fastest;
    trials < 3 && !behind(CONTENDER_SPREAD) && !(trials > 0 && behind(TRIAL_SPREAD))
}

/// Whether a staged timing's first stage ends, `ranked` engines the ranking heuristic
/// lists having been timed and the fastest call lasting `fastest` ms
/// ([`LONG_CALL_RANKED`]).
fn long_calls_end_first_stage(ranked: usize, fastest: f32) -> bool {
    ranked >= LONG_CALL_RANKED && fastest.is_finite() && fastest >= SCREEN_MS
}

/// Whether an engine's other knob settings not yet timed are ruled out, `timed` of them
/// having been timed and the fastest call lasting `fastest` ms ([`LONG_CALL_SETTINGS`]).
fn long_calls_end_settings(timed: usize, fastest: f32) -> bool {
    timed >= LONG_CALL_SETTINGS && fastest.is_finite() && fastest >= SCREEN_MS
}

std::thread_local! {
    /// The runs of the configuration being timed, `(calls, ms per call, host ms per call)`,
    /// while tracing.
    static RUNS: std::cell::RefCell<Vec<(usize, f32, f32)>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The node count of the configuration's first capture (0: not captured), for the
    /// trace.
    static NODES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The configuration's time capturing (and instantiating) its call, for the trace.
    static PREP: std::cell::Cell<std::time::Duration> =
        const { std::cell::Cell::new(std::time::Duration::ZERO) };
}

/// Prints one traced configuration's line and forgets its runs.
fn trace_line(what: &str) {
    let runs = RUNS.with(|r| std::mem::take(&mut *r.borrow_mut()));
    let runs: Vec<String> = runs
        .iter()
        .map(|(n, ms, host)| format!("{n}x{ms:.4}h{host:.4}"))
        .collect();
    eprintln!("cudnn_rs find: {what} runs {}", runs.join(" "));
}

/// The order in which a timing takes the configurations a heuristic listed (their engine
/// indices, in the heuristic's order): all of them in order, or staged: each engine's
/// first-ranked setting, then the other settings of the engines found close to the
/// fastest (the others are ruled out, not cut). A staged schedule also takes, in list
/// order, the first [`PEER_FLOOR`] configurations that give a time, whatever the stages
/// rule out (but not settings of an engine found far slower, see [`Self::slow_engine`]),
/// and past those no configuration of [`GENERIC_ENGINE`].
struct Schedule {
    engines: Vec<i64>,
    first: Vec<bool>,
    /// The configurations handed out, then those still to come.
    queue: Vec<usize>,
    next: usize,
    staged: bool,
    second_stage: bool,
    /// Engines whose settings not yet handed out are ruled out.
    ended: Vec<i64>,
    /// The configurations before this index are taken whatever the stages rule out (the
    /// floor; it moves on by one for each of them that gives no time).
    floor: usize,
    /// Engines found far slower than the fastest: their settings not yet handed out are
    /// ruled out, under the floor too.
    slow: Vec<i64>,
}

impl Schedule {
    /// A schedule of `engines`' configurations; `staged`, the first `floor` of them that
    /// give a time are taken whatever the stages rule out.
    fn new(engines: Vec<i64>, staged: bool, floor: usize) -> Self {
        let first: Vec<bool> = engines
            .iter()
            .enumerate()
            .map(|(i, e)| !engines[..i].contains(e))
            .collect();
        let floor = if staged { floor.min(engines.len()) } else { 0 };
        let queue = (0..engines.len())
            .filter(|&i| !staged || first[i] || i < floor)
            .collect();
        Self {
            engines,
            first,
            queue,
            next: 0,
            staged,
            second_stage: !staged,
            ended: Vec::new(),
            floor,
            slow: Vec::new(),
        }
    }

    /// Whether configuration `i` is still to be taken: its engine not found far slower,
    /// and under the floor or its engine not ruled out (in a staged schedule the generic
    /// engine, [`GENERIC_ENGINE`], is ruled out past the floor).
    fn open(&self, i: usize) -> bool {
        let engine = &self.engines[i];
        let past_floor = self.staged && *engine == GENERIC_ENGINE;
        !self.slow.contains(engine)
            && (i < self.floor || !(self.ended.contains(engine) || past_floor))
    }

    /// Queues configuration `j` where the first stage's list order puts it, or, in the
    /// second stage, next (unless it is queued already).
    fn enqueue(&mut self, j: usize) {
        if self.queue.contains(&j) {
            return;
        }
        let at = if self.second_stage {
            self.next
        } else {
            // The first stage's queue is in list order.
            self.next + self.queue[self.next..].partition_point(|&q| q < j)
        };
        self.queue.insert(at, j);
    }

    /// The next configuration to time; when the first stage is done, `close` names the
    /// engines whose other settings the second stage takes.
    fn next(&mut self, close: impl FnOnce() -> Vec<i64>) -> Option<usize> {
        let mut close = Some(close);
        loop {
            if self.next == self.queue.len() && !self.second_stage {
                self.second_stage = true;
                let close = close.take().map_or_else(Vec::new, |f| f());
                let (engines, first) = (&self.engines, &self.first);
                let others: Vec<usize> = (0..engines.len())
                    .filter(|&i| {
                        !first[i] && close.contains(&engines[i]) && !self.queue.contains(&i)
                    })
                    .collect();
                self.queue.extend(others);
            }
            let i = *self.queue.get(self.next)?;
            self.next += 1;
            // Ruled out after it was queued: skip it.
            if self.open(i) {
                return Some(i);
            }
        }
    }

    /// Rules out the settings of configuration `i`'s engine not yet handed out (only in
    /// a staged schedule's second stage; not those under the floor).
    fn end_engine(&mut self, i: usize) {
        if self.staged && self.second_stage && !self.ended.contains(&self.engines[i]) {
            self.ended.push(self.engines[i]);
        }
    }

    /// Rules out the settings of configuration `i`'s engine not yet handed out, those under
    /// the floor too: the engine came out far slower than the fastest ([`SETTING_END_SPREAD`]:
    /// the heuristics rank an engine's settings by speed well). Only in a staged schedule.
    fn slow_engine(&mut self, i: usize) {
        if self.staged && !self.slow.contains(&self.engines[i]) {
            self.slow.push(self.engines[i]);
        }
    }

    /// Rules out the engines none of the configurations `ranked` marks lists (those only
    /// the fallback list names; only in a staged schedule).
    fn end_unranked(&mut self, ranked: &[bool]) {
        if !self.staged {
            return;
        }
        let listed: Vec<i64> = (self.engines.iter().zip(ranked))
            .filter_map(|(&e, &r)| r.then_some(e))
            .collect();
        for &e in &self.engines {
            if !listed.contains(&e) && !self.ended.contains(&e) {
                self.ended.push(e);
            }
        }
    }

    /// Configuration `i` gave no time (it did not build, needed more workspace than allowed
    /// or than the device had, or its calls failed). Where it was its engine's first
    /// setting in a staged schedule's first stage, the engine's next listed setting takes
    /// its place there: else the engine would never be timed at all, since only engines
    /// found close to the fastest get their other settings timed. (On the H200, eight of
    /// the fourteen configurations mode A lists for a grouped f32 layer have notes a
    /// no-TF32 call refuses, two engines' first two settings among them.) Where it was
    /// under the floor, the floor moves on to the next configuration in list order.
    fn untimed(&mut self, i: usize) {
        if !self.staged {
            return;
        }
        if i < self.floor && self.floor < self.engines.len() {
            self.floor += 1;
            self.enqueue(self.floor - 1);
        }
        if self.second_stage || !self.first.get(i).copied().unwrap_or(false) {
            return;
        }
        let engine = self.engines[i];
        let Some(j) = (i + 1..self.engines.len()).find(|&j| self.engines[j] == engine) else {
            return;
        };
        self.first[j] = true;
        self.enqueue(j);
    }

    /// Whether configuration `i` is another knob setting of an engine already timed in the
    /// first stage (only in a staged schedule).
    fn is_other_setting(&self, i: usize) -> bool {
        self.staged && !self.first[i]
    }

    /// Ends the first stage of a staged schedule now: the first settings not yet handed
    /// out are ruled out (not cut: [`Self::left`] does not count them), but for those under
    /// the floor.
    fn end_first_stage(&mut self) {
        if self.second_stage {
            return;
        }
        // Those handed out stay (the queue records them), and those under the floor.
        let (next, floor) = (self.next, self.floor);
        let mut at = 0;
        self.queue.retain(|&q| {
            at += 1;
            at <= next || q < floor
        });
    }

    /// How many configurations stopping now leaves out: what is left in the queue and,
    /// before the second stage, every other setting (that stage could have taken them).
    fn left(&self) -> usize {
        let later = if self.second_stage {
            0
        } else {
            (0..self.first.len())
                .filter(|&i| !self.first[i] && !self.queue.contains(&i) && self.open(i))
                .count()
        };
        self.queue[self.next..]
            .iter()
            .filter(|&&i| self.open(i))
            .count()
            + later
    }
}

/// Whether the refine stage replays a close plan (captured again on its addresses), the
/// fastest call taking `fastest` ms: a plan its trials replayed, and where calls are
/// shorter than [`SCREEN_MS`] every plan, those timed directly too, so that they compare
/// as repeated calls run. On the H200 a 3-d TF32 layer at batch 1 had two plans within
/// 0.5% of each other in the refine, one direct and one replayed, that ran 0.0607 and
/// 0.0666 ms a call replayed: the launches had cost the direct one 5% in the find.
/// (Longer calls are not captured again: launches weigh little there, and instantiating
/// a graph costs 0.2-1.5 ms.)
fn refine_replays(fastest: f32, replayed: bool) -> bool {
    replayed || fastest < SCREEN_MS
}

/// Calls a trial of the refine stage takes when the fastest call took `fastest` ms:
/// enough to last [`REFINE_TRIAL_MS`], or where calls are shorter than [`SCREEN_MS`],
/// [`REFINE_SHORT_TRIAL_MS`] and at least [`CALLS_PER_TRIAL`]; at most
/// [`REFINE_MAX_CALLS`].
fn refine_calls(fastest: f32) -> usize {
    if fastest >= SCREEN_MS {
        calls_lasting(REFINE_TRIAL_MS, fastest, REFINE_MAX_CALLS)
    } else {
        calls_lasting(REFINE_SHORT_TRIAL_MS, fastest, REFINE_MAX_CALLS).max(CALLS_PER_TRIAL)
    }
}

/// Calls per trial for a plan one call of which took `call_ms` (after its warm-up):
/// enough to last [`TRIAL_MS`], from one to [`CALLS_PER_TRIAL`].
fn calls_per_trial(call_ms: f32) -> usize {
    calls_lasting(TRIAL_MS, call_ms, CALLS_PER_TRIAL)
}

/// Calls of `call_ms` each enough to last `ms`, from one to `most` (`most` when the call's
/// time is no usable number).
fn calls_lasting(ms: f32, call_ms: f32, most: usize) -> usize {
    if call_ms.is_nan() || call_ms <= 0.0 {
        return most;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped
    let calls = (ms / call_ms).ceil().clamp(1.0, most as f32) as usize;
    calls
}

impl CudnnContext {
    pub(crate) fn engine_graph(
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
        let graph = std::rc::Rc::new(graph::build_graph(
            self.lib,
            self.as_raw(),
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
    pub(crate) fn engine_config_plan(
        &self,
        graph: &std::rc::Rc<OpGraph>,
        config: EngineConfig,
        from: Option<&crate::backend::Desc>,
        accept: impl Fn(&graph::Notes) -> bool,
    ) -> Result<Option<std::rc::Rc<Plan>>> {
        self.config_plan_on(graph, None, config, from, accept)
    }

    /// [`Self::engine_config_plan`]; with `beside`, `from` is a configuration listed for
    /// its graph, and the plan is built with its handle for that graph (kept alive with
    /// the plan), and kept under `graph`.
    fn config_plan_on(
        &self,
        graph: &std::rc::Rc<OpGraph>,
        beside: Option<&super::beside::Beside>,
        config: EngineConfig,
        from: Option<&crate::backend::Desc>,
        accept: impl Fn(&graph::Notes) -> bool,
    ) -> Result<Option<std::rc::Rc<Plan>>> {
        let key = (std::rc::Rc::as_ptr(graph) as usize, config);
        if let Some((_, plan)) = self.engines.borrow_mut().plans.get(&key) {
            return Ok(accept(&plan.notes).then(|| std::rc::Rc::clone(plan)));
        }
        let plan = if let Some(b) = beside {
            let built = graph::build_plan(self.lib, b.handle, &b.graph, config, from, accept)?;
            let Some(built) = built else {
                return Ok(None);
            };
            Plan::adopt(built, std::rc::Rc::clone(&b.graph))
        } else {
            let built = graph::build_plan(self.lib, self.as_raw(), graph, config, from, accept)?;
            let Some(built) = built else {
                return Ok(None);
            };
            Plan::own(built)
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
    pub(crate) fn engine_filter(
        p: &RawProblem<'_>,
        math: MathType,
        deterministic_only: bool,
    ) -> impl Fn(&graph::Notes) -> bool {
        let comp = p.conv.comp();
        move |n: &graph::Notes| n.fit(math, comp) && !(deterministic_only && n.nondeterministic)
    }

    /// The engines `sources` list for the graph that build and pass `accept`, best first;
    /// at most `limit`.
    pub(crate) fn engine_candidates(
        &self,
        graph: &std::rc::Rc<OpGraph>,
        accept: &dyn Fn(&graph::Notes) -> bool,
        limit: usize,
        sources: graph::Sources,
    ) -> Result<Vec<std::rc::Rc<Plan>>> {
        Ok(self
            .candidate_plans(graph, accept, sources)?
            .take(limit)
            .collect())
    }

    /// The plans of the engines `sources` list for the graph that build and pass
    /// `accept`, best first, each built when the iterator reaches it.
    fn candidate_plans<'a>(
        &'a self,
        graph: &'a std::rc::Rc<OpGraph>,
        accept: &'a dyn Fn(&graph::Notes) -> bool,
        sources: graph::Sources,
    ) -> Result<impl Iterator<Item = std::rc::Rc<Plan>> + 'a> {
        // Read only as far as the caller goes (most want the first plan that builds); an
        // exhaustive list is read whole, since its unranked engines come after all the
        // heuristics' configurations.
        let listed: Box<dyn Iterator<Item = graph::Candidate> + 'a> =
            if sources == graph::Sources::Exhaustive {
                Box::new(graph::candidates(self.lib, graph, sources)?.into_iter())
            } else {
                Box::new(graph::ranked(self.lib, graph, sources, graph::FIRST_READ))
            };
        // An engine the heuristic lists may still refuse to build: skipped.
        Ok(listed.filter_map(move |c| {
            self.engine_config_plan(graph, c.config, c.desc.as_ref(), accept)
                .ok()
                .flatten()
        }))
    }

    pub(crate) fn no_engine(&self, p: &RawProblem<'_>, deterministic_only: bool) -> Error {
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
    /// addresses, and kept; another graph rebuilds the same engine, or chooses again, within
    /// `max_workspace` bytes, when that engine refuses it or needs more).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn engine_plan(
        &self,
        p: &RawProblem<'_>,
        config: Option<EngineConfig>,
        math: MathType,
        alpha: f64,
        beta: f64,
        align: i64,
        max_workspace: usize,
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
                    graph::Sources::Heuristics,
                )?
                .first()
                .map(|plan| plan.config)
                .ok_or_else(|| self.no_engine(p, false))?;
            self.engines.borrow_mut().choices.insert(key, best);
            best
        };
        self.first_plan(
            p,
            &graph,
            chosen,
            None,
            &Self::engine_filter(p, math, false),
            graph::Sources::Heuristics,
            max_workspace,
        )
    }

    /// The plan of the first of `config`, then `also`, that builds for `graph` within
    /// `max_workspace` bytes; when neither does, the first engine `sources` rank for the
    /// graph that passes `accept` and fits. What it settles on is kept per graph and
    /// `config`, so that a call whose graph refuses `config` (other scalars or alignment)
    /// does not build or rank anew every time.
    #[allow(clippy::too_many_arguments)]
    fn first_plan(
        &self,
        p: &RawProblem<'_>,
        graph: &std::rc::Rc<OpGraph>,
        config: EngineConfig,
        also: Option<EngineConfig>,
        accept: &dyn Fn(&graph::Notes) -> bool,
        sources: graph::Sources,
        max_workspace: usize,
    ) -> Result<std::rc::Rc<Plan>> {
        let key = (std::rc::Rc::as_ptr(graph) as usize, config, sources);
        if let Some((_, plan, cap)) = self.engines.borrow_mut().settled.get(&key) {
            // `config` itself is what the walk below gives whenever it fits; a fallback,
            // for the same workspace.
            let same = if plan.config == config {
                plan.workspace <= max_workspace
            } else {
                *cap == max_workspace
            };
            if same {
                return Ok(std::rc::Rc::clone(plan));
            }
        }
        let fits = |plan: &std::rc::Rc<Plan>| plan.workspace <= max_workspace;
        let mut settled = std::iter::once(config)
            .chain(also)
            .filter_map(|c| {
                self.engine_config_plan(graph, c, None, |_| true)
                    .ok()
                    .flatten()
            })
            .find(fits);
        if settled.is_none() {
            settled = self.candidate_plans(graph, accept, sources)?.find(fits);
        }
        let plan = settled.ok_or_else(|| self.no_engine(p, false))?;
        self.engines.borrow_mut().settled.insert(
            key,
            (
                std::rc::Rc::clone(graph),
                std::rc::Rc::clone(&plan),
                max_workspace,
            ),
        );
        Ok(plan)
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
            graph::Sources::Heuristics,
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
    /// inputs (one warm-up run; an engine ten times slower than the fastest so far on it,
    /// 2.5 times once the fastest call lasts 0.1 ms, is not run again), writing into a
    /// scratch `dx`. Fastest first. The calls are timed held (a kernel that only waits
    /// holds the stream while the host issues them, so that each call's time is the GPU's
    /// alone), the warm-up too: after a warm-up the host issued within its hold, no more
    /// calls where it lasts 0.1 ms or twice the fastest so far, three where it is within
    /// 15% of the fastest, else two (after one the host issued late, two; one where it
    /// lasted 0.1 ms), and after two, three more where the faster is shorter than 0.1 ms
    /// and within 15% of the fastest so far;
    /// the up to three within 15% of the fastest are then timed again in three rounds of
    /// two calls each (one where calls last 0.1 ms). With `CUDNN_RS_HOLD=0`: one call,
    /// which stands as the time where it lasts 0.1 ms, else the best of three trials of up
    /// to five calls, enough to last 1 ms (one whose lone call is twice as slow as the
    /// fastest, or whose trial is 15% slower, gets no more trials), and the close ones
    /// again in trials of at least 0.25 ms, or of 0.1 ms and at least five calls where
    /// calls are shorter than 0.1 ms.
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
                graph::Sources::Exhaustive,
                false,
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
                graph::Sources::Exhaustive,
                false,
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

    /// Builds up to `limit` of the engine configurations `sources` list that pass `accept`
    /// and fit `max_workspace`, and times each on the given inputs (one warm-up, one call,
    /// then, unless that call lasts [`SCREEN_MS`], the best of up to three trials of up to
    /// five calls; the close contenders again, see [`Self::refine`]) into a scratch `dx`,
    /// until `budget` runs out; fastest first. A plan of several kernels, or one the host
    /// cannot issue well within its GPU time ([`HOST_BOUND`]), is timed as one captured
    /// call replayed, as repeated calls run (see [`Runner`]), where replay is on.
    /// The configurations are taken in their order, or, `staged`, the first
    /// [`PEER_FLOOR`] in order and the rest in two stages: first each engine's
    /// first-listed knob setting, then the other settings of the engines within
    /// [`STAGE_SPREAD`] of the fastest (a first sight stays cheap, and the settings that
    /// can win are still reached; see also [`STAGE_END_SPREAD`],
    /// [`SETTING_END_SPREAD`], [`FALLBACK_MIN_RANKED`], [`LONG_CALL_SETTINGS`] and
    /// [`LONG_CALL_RANKED`]). Records `(timed, left out by
    /// the limit or the budget)` for [`Self::last_find_report`].
    ///
    /// # Safety
    /// As [`Self::find_algorithms_raw`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn time_engines(
        &self,
        p: &RawProblem<'_>,
        w: CUdeviceptr,
        dy: CUdeviceptr,
        max_workspace: Option<usize>,
        accept: &dyn Fn(&graph::Notes) -> bool,
        limit: usize,
        sources: graph::Sources,
        staged: bool,
        budget: Option<std::time::Duration>,
    ) -> Result<Vec<(Engine, graph::Notes)>> {
        let started = std::time::Instant::now();
        let mut scratch_dx: CudaSlice<u8> = alloc_bytes(&self.stream, p.dx.nbytes().max(1))?;
        let (dx, _gdx) = GpuBufferMut::device_ptr_mut(&mut scratch_dx, &self.stream);
        let align = graph::alignment(&RawPointers {
            w,
            dy,
            dx,
            workspace: (0, 0),
        });
        let graph = self.engine_graph(p, 1.0, 0.0, align)?;
        let mut timing = crate::context::FindTiming::default();
        let asked = std::time::Instant::now();
        let (configs, beside) = self.ask_candidates(&graph, p, sources, align)?;
        timing.heuristics = asked.elapsed();
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let events = (0..EVENTS)
            .map(|_| self.ctx.new_event(flags))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        // Held (see `holds`) unless the stream is being captured or the waiting kernel
        // does not load.
        let held =
            holds() && !crate::replay::capturing(self.stream.cu_stream().cast()) && self.can_hold();
        // In a held timing, the host's times to issue what it holds.
        let mut host = HostTimes::UNKNOWN;
        let mut workspace: Option<CudaSlice<u8>> = None;
        let mut found: Vec<Found> = Vec::new();
        let mut fastest = f32::INFINITY;
        let (mut timed, mut left_out, mut timed_beside) = (0usize, 0usize, 0usize);
        let ranked: Vec<bool> = configs
            .iter()
            .map(|c| {
                c.from
                    .is_some_and(|m| m != HeurMode::CUDNN_HEUR_MODE_FALLBACK)
            })
            .collect();
        let mut schedule = Schedule::new(
            configs.iter().map(|c| c.config.index()).collect(),
            staged,
            PEER_FLOOR,
        );
        // The engines of ranked configurations timed so far (FALLBACK_MIN_RANKED).
        let mut ranked_timed: Vec<i64> = Vec::new();
        // The engine of each other knob setting timed so far (LONG_CALL_SETTINGS).
        let mut other_settings: Vec<i64> = Vec::new();
        loop {
            if found.len() >= limit || budget.is_some_and(|b| started.elapsed() > b) {
                left_out = schedule.left();
                break;
            }
            // The second stage's engines: those within STAGE_SPREAD of the fastest.
            let close = || {
                found
                    .iter()
                    .filter(|f| f.engine.time() <= STAGE_SPREAD * fastest)
                    .map(|f| f.engine.config().index())
                    .collect()
            };
            let Some(i) = schedule.next(close) else {
                break;
            };
            let c = &configs[i];
            let building = std::time::Instant::now();
            let on = if c.beside { beside.as_ref() } else { None };
            let built = self.config_plan_on(&graph, on, c.config, c.desc.as_ref(), accept);
            let build_time = building.elapsed();
            timing.builds += build_time;
            // An engine the heuristic lists may still refuse to build (or not fit the math
            // type): skip it.
            let Ok(Some(plan)) = built else {
                schedule.untimed(i);
                if tracing() {
                    let why = if built.is_ok() {
                        "notes refused"
                    } else {
                        "not built"
                    };
                    trace_line(&format!("{:?} from {:?} {why}", c.config, c.from));
                }
                continue;
            };
            if max_workspace.is_some_and(|cap| plan.workspace > cap) {
                schedule.untimed(i);
                continue;
            }
            if workspace.as_ref().map_or(0, CudaSlice::len) < plan.workspace {
                // The graphs kept so far hold the workspace's address.
                for f in &mut found {
                    f.graph = None;
                }
                workspace = None;
                // A workspace the device cannot hold rules the engine out, not the find.
                match alloc_bytes(&self.stream, plan.workspace) {
                    Ok(ws) => workspace = Some(ws),
                    Err(Error::OutOfMemory { .. }) => {
                        schedule.untimed(i);
                        continue;
                    }
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
            // A capture counts with the trials it serves.
            let running = std::time::Instant::now();
            // See `time_held` and `time_config`: what a plan's calls take (infinity when
            // they fail), and the graph its trials replayed or the host's time a call.
            let screen = schedule.is_other_setting(i);
            let (best, captured, issue_ms) = if held {
                // SAFETY: w and dy per the caller; dx and the workspace were allocated
                // above with the sizes the graph and this plan need.
                let timed = unsafe { self.time_held(&plan, &ptrs, &events, fastest, &mut host) };
                // The refine's holds: the host's time for a call of the configurations
                // timed so far.
                (timed?, None, host.call)
            } else {
                // SAFETY: as above.
                let timed = unsafe { self.time_config(&plan, &ptrs, &events, fastest, screen) };
                let (best, captured) = timed?;
                (best, captured, f32::NAN)
            };
            let config_wall = running.elapsed();
            if screen {
                let engine = c.config.index();
                other_settings.push(engine);
                let n = other_settings.iter().filter(|&&e| e == engine).count();
                if long_calls_end_settings(n, fastest.min(best)) {
                    schedule.end_engine(i);
                }
            }
            // (No-ops in an exhaustive schedule; the first in the second stage, the second
            // in the first.)
            if best.is_finite() && best >= STAGE_END_SPREAD * fastest {
                schedule.end_first_stage();
            }
            if best.is_finite() && best >= SETTING_END_SPREAD * fastest {
                schedule.slow_engine(i);
            }
            timing.trials += config_wall;
            if tracing() {
                trace_line(&format!(
                    "{:?} build {:.3} ms ws {} nodes {} prep {:.3} ms wall {:.3} ms from {:?} {} \
                     ->{best:.4}",
                    c.config,
                    build_time.as_secs_f64() * 1e3,
                    plan.workspace,
                    NODES.with(std::cell::Cell::get),
                    PREP.with(std::cell::Cell::get).as_secs_f64() * 1e3,
                    config_wall.as_secs_f64() * 1e3,
                    c.from,
                    if held {
                        "held"
                    } else if captured.is_some() {
                        "replayed"
                    } else {
                        "direct"
                    }
                ));
            }
            fastest = fastest.min(best);
            // Only plans close to the fastest reach the refine: the others' graphs go.
            for f in &mut found {
                if f.graph.is_some() && f.engine.time() > REFINE_SPREAD * fastest {
                    f.graph = None;
                }
            }
            if ranked[i] && !ranked_timed.contains(&c.config.index()) {
                ranked_timed.push(c.config.index());
                if ranked_timed.len() == FALLBACK_MIN_RANKED {
                    schedule.end_unranked(&ranked);
                }
            }
            if long_calls_end_first_stage(ranked_timed.len(), fastest) {
                schedule.end_first_stage();
            }
            if best.is_finite() {
                timed_beside += usize::from(c.beside);
                let notes = plan.notes;
                let replay = captured.is_some();
                found.push(Found {
                    engine: plan.engine().with_time(best),
                    notes,
                    plan,
                    replay,
                    graph: captured,
                    issue_ms,
                });
            } else {
                schedule.untimed(i);
            }
        }
        self.last_find.set((timed, left_out));
        self.last_find_beside.set(timed_beside);
        found.sort_by(|a, b| a.engine.time().total_cmp(&b.engine.time()));
        let refining = std::time::Instant::now();
        if budget.is_none_or(|b| started.elapsed() <= b) {
            let ws = workspace.as_mut().map(|ws| {
                let len = ws.len();
                let (ptr, guard) = GpuBufferMut::device_ptr_mut(ws, &self.stream);
                ((ptr, len), guard)
            });
            let ptrs = RawPointers {
                w,
                dy,
                dx,
                workspace: ws.as_ref().map_or((0, 0), |(p, _)| *p),
            };
            // SAFETY: w, dy and dx as above; `refine` runs no plan needing more workspace
            // than this one has, and the graphs `found` keeps were captured on these
            // addresses (those of an earlier, smaller workspace were dropped with it).
            unsafe { self.refine(&mut found, &ptrs, &events, held)? };
        }
        timing.refine = refining.elapsed();
        timing.total = started.elapsed();
        self.last_find_timing.set(timing);
        if tracing() {
            trace_line(&format!("refine: {timing:?}"));
        }
        Ok(found.into_iter().map(|f| (f.engine, f.notes)).collect())
    }

    /// The configurations `sources`' heuristics list for `graph` (see
    /// [`graph::candidates`]). Where [`asks_beside`] says, the heuristics after the first
    /// are asked at the same time on another thread ([`super::beside::candidates_beside`], with
    /// this context's side context): the configurations they list come with the other
    /// graph and context their plans are built with.
    fn ask_candidates(
        &self,
        graph: &OpGraph,
        p: &RawProblem<'_>,
        sources: graph::Sources,
        align: i64,
    ) -> Result<(Vec<graph::Candidate>, Option<super::beside::Beside>)> {
        let (major, minor, _) = self.version();
        if asks_beside()
            && (major, minor) >= super::background::OLDEST
            && !crate::replay::capturing(self.stream.cu_stream().cast())
        {
            let mut side = self.side.borrow_mut().take();
            let spec = super::background::Spec::of(p);
            let asked = super::beside::candidates_beside(
                self.lib, graph, sources, &self.ctx, &mut side, spec, align,
            );
            *self.side.borrow_mut() = side;
            return asked;
        }
        Ok((graph::candidates(self.lib, graph, sources)?, None))
    }

    /// One call of `plan` on `ptrs` captured into a CUDA graph, for trials that time it as
    /// a repeated call runs (see [`Runner`]). `None` (trials then issue it directly) with
    /// replay off (`CUDNN_RS_GRAPHS=0`), while the caller captures the stream, when the
    /// call cannot be captured, or when `keep` refuses the captured graph's node count
    /// (then it is not instantiated, which is most of a capture's cost).
    ///
    /// # Safety
    /// The addresses in `ptrs` must be valid for the plan's problem and workspace.
    unsafe fn capture_trial(
        &self,
        plan: &Plan,
        ptrs: &RawPointers,
        keep: impl FnOnce(usize) -> bool,
    ) -> Result<Option<crate::replay::OwnedExec>> {
        if !crate::replay::enabled() || crate::replay::capturing(self.stream.cu_stream().cast()) {
            return Ok(None);
        }
        let Some(side) = self.graphs.borrow_mut().side_stream() else {
            return Ok(None);
        };
        let preparing = std::time::Instant::now();
        let (lib, handle) = (self.lib, self.as_raw());
        let call = || {
            // SAFETY: the plan's problem's addresses (this function's contract).
            unsafe { graph::execute(lib, handle, plan, ptrs) }
                .unwrap_or(CudnnError::InternalError.code())
        };
        let issue = |s: cudarc::driver::sys::CUstream| self.issue_on(s, &call);
        // SAFETY: `side` is this context's live private stream; `issue` only enqueues the
        // call there.
        let exec = unsafe { crate::replay::capture_owned(side, issue, keep) };
        PREP.with(|p| p.set(p.get() + preparing.elapsed()));
        self.apply_stream()?;
        Ok(exec)
    }

    /// One configuration's time in a measurement, and the graph its trials replayed. The
    /// call is captured first; a plan of more than one kernel is instantiated and timed
    /// replayed (see [`Runner`]). Else a warm-up call and one more call are issued
    /// directly, and where the host took [`HOST_BOUND`] of that call's time to issue it,
    /// the plan is captured again and timed replayed; else directly. A warm-up that rules
    /// the plan out ([`worth_a_call`]) is its time; then see [`Self::trial_time`]
    /// (`screen`: another knob setting of an engine already timed). Infinity when a call
    /// fails.
    ///
    /// # Safety
    /// The addresses in `ptrs` must be valid for the plan's problem and workspace.
    unsafe fn time_config(
        &self,
        plan: &Plan,
        ptrs: &RawPointers,
        events: &[CudaEvent],
        fastest: f32,
        screen: bool,
    ) -> Result<(f32, Option<crate::replay::OwnedExec>)> {
        let direct = Runner::Direct(plan);
        NODES.with(|n| n.set(0));
        PREP.with(|p| p.set(std::time::Duration::ZERO));
        let keep = |nodes: usize| {
            NODES.with(|n| n.set(nodes));
            nodes > 1
        };
        // SAFETY: the caller's contract.
        let several = unsafe { self.capture_trial(plan, ptrs, keep)? };
        if let Some(graph) = several {
            // SAFETY: the caller's contract; the graph was captured on these addresses.
            let best =
                unsafe { self.time_replayed(&graph, ptrs, events, (fastest, screen), true)? };
            return Ok((best, Some(graph)));
        }
        // SAFETY: the caller's contract.
        let warm = unsafe { self.time_calls(&direct, ptrs, 1, events)? };
        if !warm.is_some_and(|w| worth_a_call(w.ms, fastest)) {
            return Ok((warm.map_or(f32::INFINITY, |c| c.ms), None));
        }
        // SAFETY: the caller's contract.
        let Some(first) = (unsafe { self.time_calls(&direct, ptrs, 1, events)? }) else {
            return Ok((f32::INFINITY, None));
        };
        if first.host_bound() {
            // SAFETY: the caller's contract.
            if let Some(graph) = unsafe { self.capture_trial(plan, ptrs, |_| true)? } {
                // The direct warm-up already passed `worth_a_call`.
                // SAFETY: the caller's contract; the graph was captured on these
                // addresses.
                let best =
                    unsafe { self.time_replayed(&graph, ptrs, events, (fastest, screen), false)? };
                return Ok((best, Some(graph)));
            }
        }
        // SAFETY: the caller's contract.
        let best =
            unsafe { self.trial_time_after(&direct, ptrs, events, (fastest, screen), first.ms)? };
        Ok((best, None))
    }

    /// A captured plan's time in a measurement: a launch of its own first (the warm-up;
    /// a graph's first launch also uploads it), then [`Self::trial_time`]. With `cut`, a
    /// warm-up that rules the plan out ([`worth_a_call`]) is its time. Infinity when a
    /// launch fails.
    ///
    /// # Safety
    /// As [`Self::time_calls`], `graph` captured on `ptrs`.
    unsafe fn time_replayed(
        &self,
        graph: &crate::replay::OwnedExec,
        ptrs: &RawPointers,
        events: &[CudaEvent],
        (fastest, screen): (f32, bool),
        cut: bool,
    ) -> Result<f32> {
        let runner = Runner::Graph(graph);
        // SAFETY: the caller's contract.
        let Some(warm) = (unsafe { self.time_calls(&runner, ptrs, 1, events)? }) else {
            return Ok(f32::INFINITY);
        };
        if cut && !worth_a_call(warm.ms, fastest) {
            return Ok(warm.ms);
        }
        // SAFETY: the caller's contract.
        unsafe { self.trial_time(&runner, ptrs, events, fastest, screen) }
    }

    /// A plan's time in a measurement, after its warm-up call: as
    /// [`Self::trial_time_after`] after one more call, which sizes the trials.
    ///
    /// # Safety
    /// As [`Self::time_calls`].
    unsafe fn trial_time(
        &self,
        plan: &Runner<'_>,
        ptrs: &RawPointers,
        events: &[CudaEvent],
        fastest: f32,
        screen: bool,
    ) -> Result<f32> {
        // SAFETY: the caller's contract.
        let Some(first) = (unsafe { self.time_calls(plan, ptrs, 1, events)? }) else {
            return Ok(f32::INFINITY);
        };
        // SAFETY: the caller's contract.
        unsafe { self.trial_time_after(plan, ptrs, events, (fastest, screen), first.ms) }
    }

    /// A plan's time in a measurement, after its warm-up call and one more call that took
    /// `first` ms: that call's time where it lasts [`SCREEN_MS`] (the refine stage times
    /// the close plans again), else the best of three trials of calls back to back, as
    /// many as [`calls_per_trial`] gives for `first` (where that is more than one, the
    /// one call counts only to rule the plan out). See [`another_trial`] for when the
    /// trials end early; with `screen`, a first call of at least [`SETTING_SCREEN_MS`]
    /// that is [`SETTING_SPREAD`] times `fastest` gets none. Infinity when a call fails.
    ///
    /// # Safety
    /// As [`Self::time_calls`].
    unsafe fn trial_time_after(
        &self,
        plan: &Runner<'_>,
        ptrs: &RawPointers,
        events: &[CudaEvent],
        (fastest, screen): (f32, bool),
        first: f32,
    ) -> Result<f32> {
        if first >= SCREEN_MS
            || (screen && first >= SETTING_SCREEN_MS && first > SETTING_SPREAD * fastest)
        {
            return Ok(first);
        }
        let calls = calls_per_trial(first);
        let mut best = if calls == 1 || !another_trial(first, 0, fastest) {
            first
        } else {
            f32::INFINITY
        };
        let mut trials = usize::from(calls == 1);
        while another_trial(best, trials, fastest) {
            // SAFETY: the caller's contract.
            let Some(run) = (unsafe { self.time_calls(plan, ptrs, calls, events)? }) else {
                return Ok(f32::INFINITY);
            };
            best = best.min(run.ms);
            trials += 1;
        }
        Ok(best)
    }

    /// The mean time per call of `calls` calls of a plan back to back, by events, and the
    /// host's time to issue them; `None` when a call fails.
    ///
    /// # Safety
    /// As [`Self::time_runs`].
    unsafe fn time_calls(
        &self,
        runner: &Runner<'_>,
        ptrs: &RawPointers,
        calls: usize,
        events: &[CudaEvent],
    ) -> Result<Option<Calls>> {
        // SAFETY: the caller's contract.
        let timed = unsafe { self.time_runs(&[(runner, calls)], ptrs, events, None)? };
        Ok(timed.runs.first().copied())
    }

    /// Runs of calls issued one after the other, each timed by events: `runs[k]` is a plan
    /// and how many of its calls to issue back to back; each run's time is the mean per
    /// call (and the host's time to issue one). With `hold`, the stream waits that many
    /// milliseconds on the GPU first ([`Self::hold`]) while the host issues the runs, so
    /// that they run back to back. One wait for the last event. The runs before the first
    /// whose call fails (all, where none does; at most one fewer than `events`), and the
    /// host's time to issue them and their events.
    ///
    /// # Safety
    /// The addresses in `ptrs` must be valid for each plan's problem and workspace, and
    /// be those a captured call was captured with.
    unsafe fn time_runs(
        &self,
        runs: &[(&Runner<'_>, usize)],
        ptrs: &RawPointers,
        events: &[CudaEvent],
        hold: Option<f32>,
    ) -> Result<Timed> {
        let runs = &runs[..runs.len().min(events.len().saturating_sub(1))];
        let mut timed = Timed {
            runs: Vec::with_capacity(runs.len()),
            issue_ms: 0.0,
        };
        let Some(first) = events.first() else {
            return Ok(timed);
        };
        if let Some(ms) = hold {
            self.hold(ms)?;
        }
        let batch = std::time::Instant::now();
        first.record(&self.stream)?;
        let mut issued = Vec::with_capacity(runs.len());
        let mut failed = false;
        for (&(runner, calls), after) in runs.iter().zip(&events[1..]) {
            let issuing = std::time::Instant::now();
            for _ in 0..calls {
                let code = match runner {
                    // SAFETY: the caller's contract.
                    Runner::Direct(plan) => unsafe {
                        graph::execute(self.lib, self.as_raw(), plan, ptrs)?
                    },
                    Runner::Graph(exec) => {
                        let stream = self.stream.cu_stream().cast();
                        // SAFETY: captured on these addresses (the caller's contract), in
                        // this context; the stream is its own.
                        let launched = unsafe { exec.launch(stream) };
                        u32::from(!launched)
                    }
                };
                if code != 0 {
                    failed = true;
                    break;
                }
            }
            if failed {
                break;
            }
            issued.push(issuing.elapsed());
            after.record(&self.stream)?;
        }
        timed.issue_ms = (batch.elapsed().as_secs_f64() * 1e3) as f32;
        // The event after the last run that ran whole.
        if issued.is_empty() {
            return Ok(timed);
        }
        events[issued.len()].synchronize()?;
        for (k, (&(_, calls), issued)) in runs.iter().zip(&issued).enumerate() {
            #[allow(clippy::cast_precision_loss)] // at most REFINE_MAX_CALLS calls
            let (ms, host_ms) = (
                events[k].elapsed_ms(&events[k + 1])? / calls as f32,
                (issued.as_secs_f64() * 1e3 / calls as f64) as f32,
            );
            if tracing() {
                RUNS.with(|r| r.borrow_mut().push((calls, ms, host_ms)));
            }
            timed.runs.push(Calls { ms, host_ms });
        }
        Ok(timed)
    }

    /// One configuration's time in a held timing ([`holds`]). Its warm-up call is held
    /// too ([`HostTimes::warm_hold`]) and timed; [`after_held_warm_up`] says whether that
    /// rules the configuration out (far slower, unless the warm-up was a run-time
    /// compiled plan's first load) and how many calls to hold next. After held calls,
    /// [`HELD_MORE`] more where [`held_look_again`] says. The time is the fastest call;
    /// `host` carries the host's times from one configuration to the next. Infinity when
    /// a call fails.
    ///
    /// # Safety
    /// The addresses in `ptrs` must be valid for the plan's problem and workspace.
    unsafe fn time_held(
        &self,
        plan: &Plan,
        ptrs: &RawPointers,
        events: &[CudaEvent],
        fastest: f32,
        host: &mut HostTimes,
    ) -> Result<f32> {
        NODES.with(|n| n.set(0));
        PREP.with(|p| p.set(std::time::Duration::ZERO));
        let direct = Runner::Direct(plan);
        let hold = host.warm_hold();
        // SAFETY: the caller's contract.
        let timed = unsafe { self.time_runs(&[(&direct, 1)], ptrs, events, Some(hold))? };
        let Some(warm) = timed.runs.first() else {
            return Ok(f32::INFINITY);
        };
        let late = timed.issue_ms > hold;
        host.warmed(timed.issue_ms, hold);
        let Some((mut best, calls)) =
            after_held_warm_up(warm.ms, late, plan.notes.runtime_compiled, fastest)
        else {
            return Ok(warm.ms);
        };
        if calls == 0 {
            return Ok(best);
        }
        // SAFETY: the caller's contract.
        let timed = unsafe { self.held_calls(&direct, calls, ptrs, events, host.call)? };
        let Some((fastest_call, issue)) = timed else {
            return Ok(f32::INFINITY);
        };
        host.call = issue;
        best = best.min(fastest_call);
        // (A close warm-up's calls were already the closer look.)
        if calls != HELD_MORE && held_look_again(best, fastest) {
            // SAFETY: the caller's contract.
            let more = unsafe { self.held_calls(&direct, HELD_MORE, ptrs, events, host.call)? };
            let Some((more, issue)) = more else {
                return Ok(f32::INFINITY);
            };
            host.call = issue;
            best = best.min(more);
        }
        Ok(best)
    }

    /// `calls` calls of `runner` held ([`Self::hold`]), each timed on its own: the fastest
    /// call's time, and the host's time a call to issue them (with their events). The
    /// hold lasts [`hold_ms`] of `issue_ms`; where the host took longer than that to issue
    /// them, the GPU may have waited on it between them, and they are timed once more,
    /// held for what the host took. `None` when a call fails.
    ///
    /// # Safety
    /// As [`Self::time_runs`].
    unsafe fn held_calls(
        &self,
        runner: &Runner<'_>,
        calls: usize,
        ptrs: &RawPointers,
        events: &[CudaEvent],
        issue_ms: f32,
    ) -> Result<Option<(f32, f32)>> {
        let runs = vec![(runner, 1); calls];
        // The fastest call, the host's time a call, and whether the hold was too short.
        let held = |issue: f32| -> Result<Option<(f32, f32, bool)>> {
            let hold = hold_ms(calls, issue);
            // SAFETY: the caller's contract.
            let timed = unsafe { self.time_runs(&runs, ptrs, events, Some(hold))? };
            if timed.runs.len() < calls {
                return Ok(None);
            }
            #[allow(clippy::cast_precision_loss)] // a handful of calls
            let per_call = timed.issue_ms / calls as f32;
            let fastest = timed
                .runs
                .iter()
                .map(|c| c.ms)
                .fold(f32::INFINITY, f32::min);
            Ok(Some((fastest, per_call, timed.issue_ms > hold)))
        };
        let Some((fastest, per_call, late)) = held(issue_ms)? else {
            return Ok(None);
        };
        if !late {
            return Ok(Some((fastest, per_call)));
        }
        Ok(held(per_call)?.map(|(fastest, per_call, _)| (fastest, per_call)))
    }

    /// Second look at the close contenders of a timing (`found`, fastest first): the up to
    /// [`REFINE_TOP`] plans within [`REFINE_SPREAD`] of the fastest are timed again in
    /// turns (so that a drift of the GPU's clock hits each alike), three trials each of
    /// [`refine_calls`] calls, replayed where [`refine_replays`] says; each keeps its best
    /// trial, and `found` is sorted again. Five calls of a short kernel cannot tell apart
    /// plans a few percent apart, nor one call of a long one; this keeps the measured
    /// choice from being the luckiest trial. `held` ([`holds`]): three rounds, each one
    /// held batch of every close plan's calls issued directly and timed one by one
    /// ([`REFINE_HELD_CALLS`] a plan where calls are shorter than [`SCREEN_MS`], else
    /// one); each keeps its fastest call.
    ///
    /// # Safety
    /// The addresses in `ptrs` must be valid for every plan in `found` (a plan needing
    /// more workspace than `ptrs` has is skipped), and the graphs `found` keeps captured
    /// on them.
    unsafe fn refine(
        &self,
        found: &mut [Found],
        ptrs: &RawPointers,
        events: &[CudaEvent],
        held: bool,
    ) -> Result<()> {
        let Some(fastest) = found.first().map(|f| f.engine.time()) else {
            return Ok(());
        };
        if fastest.is_nan() || fastest <= 0.0 {
            return Ok(());
        }
        let calls = refine_calls(fastest);
        let close = found
            .iter()
            .take(REFINE_TOP)
            .take_while(|f| f.engine.time() <= fastest * REFINE_SPREAD)
            .count();
        if close < 2 {
            return Ok(());
        }
        let mut best = [f32::INFINITY; REFINE_TOP];
        // The plans `refine_replays` names replayed: the graph their trials replayed where
        // it is still valid (captured on these addresses), else captured again on them.
        let mut captured = Vec::with_capacity(close);
        for f in found.iter_mut().take(close) {
            let fits = f.plan.workspace <= ptrs.workspace.1;
            let graph = if held || !fits || !refine_replays(fastest, f.replay) {
                None
            } else if let Some(kept) = f.graph.take() {
                Some(kept)
            } else {
                // SAFETY: the caller's contract; the workspace is large enough.
                unsafe { self.capture_trial(&f.plan, ptrs, |_| true)? }
            };
            captured.push(graph);
        }
        // Held, a round is one batch of each plan's calls, each timed on its own.
        let singles = if fastest < SCREEN_MS {
            REFINE_HELD_CALLS
        } else {
            1
        };
        for _ in 0..3 {
            if held {
                // (The workspace may have been given up, out of memory, after a time.)
                let runners: Vec<(usize, Runner<'_>)> = (found.iter().enumerate().take(close))
                    .filter(|(_, f)| f.plan.workspace <= ptrs.workspace.1)
                    .map(|(k, f)| (k, Runner::Direct(&f.plan)))
                    .collect();
                let runs: Vec<(&Runner<'_>, usize)> = (runners.iter())
                    .flat_map(|(_, r)| std::iter::repeat_n((r, 1), singles))
                    .collect();
                let hold = (runners.iter())
                    .map(|&(k, _)| hold_ms(singles, found[k].issue_ms))
                    .sum();
                // SAFETY: the caller's contract; each plan's workspace fits (above).
                let timed = unsafe { self.time_runs(&runs, ptrs, events, Some(hold))? };
                for (j, run) in timed.runs.iter().enumerate() {
                    let plan = runners.get(j / singles).map(|&(k, _)| k);
                    if let Some(b) = plan.and_then(|k| best.get_mut(k)) {
                        *b = b.min(run.ms);
                    }
                }
                continue;
            }
            for ((f, b), g) in found.iter().zip(best.iter_mut()).zip(&captured).take(close) {
                if f.plan.workspace > ptrs.workspace.1 {
                    continue; // the workspace was given up (out of memory) after its time
                }
                let runner = g.as_ref().map_or(Runner::Direct(&f.plan), Runner::Graph);
                // SAFETY: the caller's contract; the workspace is large enough (above), and
                // a graph was captured on these addresses (kept from the trials, per the
                // contract, or just above).
                if let Some(run) = unsafe { self.time_calls(&runner, ptrs, calls, events)? } {
                    *b = b.min(run.ms);
                }
            }
        }
        for (f, t) in found.iter_mut().zip(best).take(close) {
            if t.is_finite() {
                f.engine = f.engine.with_time(t);
            }
        }
        found.sort_by(|a, b| a.engine.time().total_cmp(&b.engine.time()));
        Ok(())
    }

    /// The plan the default choice `config` (made for alpha = 1, beta = 0 and aligned
    /// addresses) runs with these scalars and this alignment within `max_workspace` bytes:
    /// that configuration; where its knob setting refuses this graph (or needs more), the
    /// same engine with its default knobs; else the first engine the instant heuristic
    /// ranks for this graph that fits. Each step depends only on the problem and the
    /// workspace, so the choice stays the same in every process.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn default_plan(
        &self,
        p: &RawProblem<'_>,
        config: EngineConfig,
        math: MathType,
        alpha: f64,
        beta: f64,
        align: i64,
        max_workspace: usize,
    ) -> Result<std::rc::Rc<Plan>> {
        let graph = self.engine_graph(p, alpha, beta, align)?;
        // The engine with its default knobs, for when the setting refuses.
        let bare = EngineConfig::new(config.index(), &[]).filter(|b| *b != config);
        let accept = move |n: &graph::Notes| n.fit_default(math, false);
        self.first_plan(
            p,
            &graph,
            config,
            bare,
            &accept,
            graph::Sources::Instant,
            max_workspace,
        )
    }

    /// The graph-API half of [`Self::execute`]: `config` (`None`: `BestEngine`'s choice),
    /// or with `default`, the default choice `config` as [`Self::default_plan`] adapts it.
    ///
    /// # Safety
    /// As [`Self::backward_data_raw`]; the problem has been validated.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn execute_engine(
        &self,
        alpha: f64,
        p: RawProblem<'_>,
        config: Option<EngineConfig>,
        default: bool,
        math: MathType,
        ptrs: RawPointers,
        beta: f64,
    ) -> Result<()> {
        let align = graph::alignment(&ptrs);
        let plan = match config {
            Some(c) if default => {
                self.default_plan(&p, c, math, alpha, beta, align, ptrs.workspace.1)?
            }
            _ => self.engine_plan(&p, config, math, alpha, beta, align, ptrs.workspace.1)?,
        };
        if plan.workspace > ptrs.workspace.1 {
            return Err(Error::InvalidArgument(format!(
                "graph-API {} needs a workspace of {} bytes for this problem, got {}",
                plan.config, plan.workspace, ptrs.workspace.1
            )));
        }
        self.bind()?;
        let (lib, handle) = (self.lib, self.as_raw());
        let call = || {
            // SAFETY: the plan was built for this problem, scalars and alignment; the
            // memory is this function's contract.
            unsafe { graph::execute(lib, handle, &plan, &ptrs) }
                .unwrap_or(CudnnError::InternalError.code())
        };
        let route = Route::Engine(Some(plan.config));
        if crate::replay::enabled()
            // SAFETY: `call` is the call described; the addresses are this function's
            // contract.
            && unsafe { self.replay_or_capture(&p, route, math, &ptrs, alpha, beta, &call)? }
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
}

#[cfg(test)]
mod tests {
    use super::{held_look_again, hold_ms, Schedule};

    /// Every configuration the schedule hands out, with `close` as the engines near the
    /// fastest after the first stage.
    fn order(engines: &[i64], staged: bool, close: &[i64]) -> Vec<usize> {
        let mut s = Schedule::new(engines.to_vec(), staged, 0);
        std::iter::from_fn(|| s.next(|| close.to_vec())).collect()
    }

    #[test]
    fn a_hold_outlasts_the_hosts_issue_of_what_it_holds() {
        for (calls, host) in [(1, 0.004), (2, 0.01), (3, 0.05), (6, 0.02)] {
            #[allow(clippy::cast_precision_loss)]
            let issue = calls as f32 * host;
            let hold = hold_ms(calls, host);
            assert!(
                hold > issue && hold < 2.0 * issue + 0.05,
                "{calls} {host}: {hold}"
            );
            assert!(hold_ms(calls + 1, host) > hold);
        }
        // No usable host time: a hold all the same, alike for every such value.
        let unknown = hold_ms(2, f32::NAN);
        assert!(unknown > 0.0 && unknown < MAX_HOLD_FOR_TEST);
        for host in [0.0, -1.0, f32::INFINITY] {
            assert_eq!(hold_ms(2, host).to_bits(), unknown.to_bits());
        }
    }

    /// No hold a timing asks for comes near the kernel's cap (5 ms).
    const MAX_HOLD_FOR_TEST: f32 = 1.0;

    #[test]
    fn held_calls_look_again_only_at_short_close_configurations() {
        // The first configuration of a timing, and one close to the fastest.
        assert!(held_look_again(0.010, f32::INFINITY));
        assert!(held_look_again(0.0105, 0.010));
        assert!(held_look_again(0.009, 0.010));
        // Far behind the fastest, or long enough for one call to tell.
        assert!(!held_look_again(0.013, 0.010));
        assert!(!held_look_again(0.2, f32::INFINITY));
        assert!(!held_look_again(0.2, 0.19));
        assert!(!held_look_again(f32::INFINITY, f32::INFINITY));
    }

    #[test]
    fn a_warm_up_within_its_hold_decides_how_many_calls_follow() {
        use super::{after_warm_up, HELD_FIRST, HELD_MORE, SCREEN_MS};
        let fastest = 0.02;
        // Long enough for one call to tell, or twice the fastest: none.
        assert_eq!(after_warm_up(SCREEN_MS, f32::INFINITY), 0);
        assert_eq!(after_warm_up(0.3, 0.25), 0);
        assert_eq!(after_warm_up(0.041, fastest), 0);
        // Close to the fastest, or the first configuration: the closer look at once.
        assert_eq!(after_warm_up(0.021, fastest), HELD_MORE);
        assert_eq!(after_warm_up(0.015, fastest), HELD_MORE);
        assert_eq!(after_warm_up(0.02, f32::INFINITY), HELD_MORE);
        // Between: a first look, which may lead to the closer one.
        assert_eq!(after_warm_up(0.03, fastest), HELD_FIRST);
    }

    #[test]
    fn a_late_warm_up_rules_out_unless_its_plan_was_just_compiled() {
        use super::{after_held_warm_up, HELD_FIRST, SCREEN_MS};
        let fastest = 0.015;
        // A first load of 1.23 ms against 0.015: an engine compiled at run time is timed.
        assert_eq!(
            after_held_warm_up(1.23, true, true, fastest),
            Some((f32::INFINITY, HELD_FIRST))
        );
        // Any other late warm-up that far behind rules its configuration out ...
        assert_eq!(after_held_warm_up(1.23, true, false, fastest), None);
        // ... and on time too.
        assert_eq!(after_held_warm_up(1.23, false, true, fastest), None);
        // A late warm-up within reach: its time is not the GPU's, calls follow.
        let (best, calls) = after_held_warm_up(0.05, true, false, fastest).unwrap();
        assert!(best.is_infinite());
        assert_eq!(calls, HELD_FIRST);
        let (_, calls) = after_held_warm_up(2.0 * SCREEN_MS, true, false, SCREEN_MS).unwrap();
        assert_eq!(calls, 1);
        // On time: its time counts as a call.
        let (best, _) = after_held_warm_up(0.016, false, false, fastest).unwrap();
        assert!((best - 0.016).abs() < 1e-6);
    }

    #[test]
    fn a_warm_ups_hold_follows_the_last_warm_up_but_not_a_first_load() {
        use super::HostTimes;
        let mut host = HostTimes::UNKNOWN;
        let unknown = host.warm_hold();
        assert!(unknown > 0.0 && unknown < MAX_HOLD_FOR_TEST);
        // A call's host time measured: a warm-up's hold is sized from it.
        host.call = 0.01;
        let from_call = host.warm_hold();
        assert!(from_call > 2.0 * 0.01 && from_call < unknown, "{from_call}");
        // A warm-up issued in 0.04 ms: the next one's hold outlasts that.
        host.warmed(0.04, from_call);
        let from_warm = host.warm_hold();
        assert!(from_warm > 0.04 && from_warm < 0.1, "{from_warm}");
        // A first load (1.2 ms on the host) leaves it as it was.
        host.warmed(1.2, from_warm);
        assert_eq!(host.warm_hold().to_bits(), from_warm.to_bits());
        // A warm-up a little later than its hold is taken in.
        host.warmed(0.07, from_warm);
        assert!(host.warm_hold() > 0.07);
    }

    #[test]
    fn a_slow_warm_up_rules_a_plan_out_sooner_once_calls_are_long() {
        use super::{worth_a_call, SCREEN_MS, TAIL_SPREAD, WARM_CUT_SPREAD};
        // Short calls: only TAIL_SPREAD times the fastest rules a plan out.
        let short = SCREEN_MS / 4.0;
        assert!(worth_a_call(3.0 * short, short));
        assert!(!worth_a_call(1.01 * TAIL_SPREAD * short, short));
        // Long calls: WARM_CUT_SPREAD times does.
        let long = 4.0 * SCREEN_MS;
        assert!(worth_a_call(1.4 * long, long));
        assert!(!worth_a_call(1.01 * WARM_CUT_SPREAD * long, long));
        // Nothing timed yet: every plan gets its call.
        assert!(worth_a_call(1e6, f32::INFINITY));
        assert!(!worth_a_call(f32::NAN, long));
    }

    #[test]
    fn long_calls_bound_the_first_stage_and_an_engines_settings() {
        use super::{
            long_calls_end_first_stage, long_calls_end_settings, LONG_CALL_RANKED,
            LONG_CALL_SETTINGS, SCREEN_MS,
        };
        let (long, short) = (2.0 * SCREEN_MS, SCREEN_MS / 2.0);
        assert!(!long_calls_end_first_stage(LONG_CALL_RANKED - 1, long));
        assert!(long_calls_end_first_stage(LONG_CALL_RANKED, long));
        assert!(!long_calls_end_first_stage(LONG_CALL_RANKED + 5, short));
        assert!(!long_calls_end_first_stage(LONG_CALL_RANKED, f32::NAN));
        assert!(!long_calls_end_settings(LONG_CALL_SETTINGS - 1, long));
        assert!(long_calls_end_settings(LONG_CALL_SETTINGS, long));
        assert!(!long_calls_end_settings(LONG_CALL_SETTINGS + 5, short));
    }

    #[test]
    fn a_call_the_host_issues_in_about_its_gpu_time_is_host_bound() {
        use super::{Calls, HOST_BOUND};
        let gpu = 0.4;
        assert!(!Calls {
            ms: gpu,
            host_ms: 0.02
        }
        .host_bound());
        assert!(Calls {
            ms: gpu,
            host_ms: HOST_BOUND * gpu
        }
        .host_bound());
        // Host-bound: the GPU waited for the host, so its time is the host's.
        assert!(Calls {
            ms: 0.33,
            host_ms: 0.31
        }
        .host_bound());
    }

    #[test]
    fn a_trial_behind_the_fastest_ends_a_plans_trials() {
        use super::{another_trial, CONTENDER_SPREAD, TRIAL_SPREAD};
        let fastest = 0.01;
        // Before any trial only a lone call twice the fastest rules the plan out: a lone
        // call of a short plan is no measure of its trials.
        assert!(another_trial(f32::INFINITY, 0, fastest));
        assert!(another_trial(1.9 * fastest, 0, fastest));
        assert!(!another_trial(
            1.01 * CONTENDER_SPREAD * fastest,
            0,
            fastest
        ));
        // After a trial, TRIAL_SPREAD does.
        assert!(another_trial(1.05 * fastest, 1, fastest));
        assert!(!another_trial(1.01 * TRIAL_SPREAD * fastest, 1, fastest));
        assert!(another_trial(0.9 * fastest, 2, fastest));
        // Three at most; the first plan timed gets all three.
        assert!(!another_trial(0.5 * fastest, 3, fastest));
        assert!(another_trial(1.0, 1, f32::INFINITY));
        // A failed call (infinity) rules nothing out by itself.
        assert!(another_trial(f32::INFINITY, 1, fastest));
    }

    #[test]
    fn the_refine_replays_every_close_plan_of_short_calls() {
        use super::{refine_replays, SCREEN_MS};
        assert!(refine_replays(SCREEN_MS / 2.0, false));
        assert!(refine_replays(SCREEN_MS / 2.0, true));
        assert!(!refine_replays(SCREEN_MS, false));
        assert!(refine_replays(4.0 * SCREEN_MS, true));
    }

    #[test]
    fn the_refine_times_short_calls_in_shorter_trials() {
        use super::{refine_calls, CALLS_PER_TRIAL, REFINE_MAX_CALLS, SCREEN_MS};
        // Calls of SCREEN_MS and more: enough to last 0.25 ms.
        assert_eq!(refine_calls(0.5), 1);
        assert_eq!(refine_calls(0.2), 2);
        assert_eq!(refine_calls(SCREEN_MS), 3);
        // Shorter ones: 0.1 ms, at least CALLS_PER_TRIAL, at most REFINE_MAX_CALLS.
        assert_eq!(refine_calls(0.05), CALLS_PER_TRIAL);
        assert_eq!(refine_calls(0.008), 13);
        assert_eq!(refine_calls(1e-6), REFINE_MAX_CALLS);
        assert_eq!(refine_calls(f32::NAN), REFINE_MAX_CALLS);
    }

    #[test]
    fn trials_of_slow_calls_take_fewer_calls() {
        use super::{calls_per_trial, CALLS_PER_TRIAL};
        assert_eq!(calls_per_trial(10.0), 1);
        assert_eq!(calls_per_trial(1.0), 1);
        assert_eq!(calls_per_trial(0.4), 3);
        assert_eq!(calls_per_trial(0.3), 4);
        assert_eq!(calls_per_trial(0.2), CALLS_PER_TRIAL);
        assert_eq!(calls_per_trial(0.01), CALLS_PER_TRIAL);
        assert_eq!(calls_per_trial(0.0), CALLS_PER_TRIAL);
        assert_eq!(calls_per_trial(f32::NAN), CALLS_PER_TRIAL);
    }

    #[test]
    fn exhaustive_takes_every_configuration_in_order() {
        assert_eq!(
            order(&[67, 67, 71, 67, 71, 5], false, &[]),
            [0, 1, 2, 3, 4, 5]
        );
    }

    #[test]
    fn staged_takes_first_settings_then_the_close_engines_other_settings() {
        let engines = [67, 67, 71, 67, 71, 5, 71];
        assert_eq!(order(&engines, true, &[71]), [0, 2, 5, 4, 6]);
        assert_eq!(order(&engines, true, &[67, 71]), [0, 2, 5, 1, 3, 4, 6]);
        assert_eq!(order(&engines, true, &[]), [0, 2, 5]);
    }

    #[test]
    fn a_slow_tail_ends_the_first_stage_but_not_the_second() {
        let engines = [67, 71, 67, 5, 9, 71];
        let mut s = Schedule::new(engines.to_vec(), true, 0);
        assert_eq!(s.next(Vec::new), Some(0));
        assert_eq!(s.next(Vec::new), Some(1));
        // Engine 71 came out far slower than 67: engines 5 and 9 are ruled out, not cut.
        s.end_first_stage();
        assert_eq!(
            s.left(),
            2,
            "only the second stage's settings may still come"
        );
        assert_eq!(s.next(|| vec![67]), Some(2));
        assert!(s.is_other_setting(2));
        s.end_first_stage(); // no effect in the second stage
        assert_eq!(s.next(Vec::new), None);
        // An exhaustive schedule has no stages: every configuration comes, none screened.
        let mut all = Schedule::new(engines.to_vec(), false, 0);
        all.end_first_stage();
        let order: Vec<usize> = std::iter::from_fn(|| all.next(Vec::new)).collect();
        assert_eq!(order, [0, 1, 2, 3, 4, 5]);
        assert!(!all.is_other_setting(2));
    }

    #[test]
    fn a_cut_counts_what_the_second_stage_could_still_take() {
        let mut s = Schedule::new(vec![67, 67, 71, 71, 71], true, 0);
        assert_eq!(s.left(), 5);
        assert_eq!(s.next(Vec::new), Some(0));
        assert_eq!(s.left(), 4);
        assert_eq!(s.next(Vec::new), Some(2));
        // First stage done, second not started: the three other settings may still come.
        assert_eq!(s.left(), 3);
        assert_eq!(s.next(|| vec![71]), Some(3));
        // The second stage took 71's two others; 67's other one is ruled out, not cut.
        assert_eq!(s.left(), 1);
        assert_eq!(s.next(Vec::new), Some(4));
        assert_eq!(s.left(), 0);
        assert_eq!(s.next(Vec::new), None);
    }

    #[test]
    fn an_engine_ended_in_the_second_stage_takes_no_more_settings() {
        let engines = [67, 71, 67, 71, 67, 71];
        let mut s = Schedule::new(engines.to_vec(), true, 0);
        assert_eq!(s.next(Vec::new), Some(0));
        assert_eq!(s.next(Vec::new), Some(1));
        // First stage: ending an engine is a no-op (its first setting is all it had yet).
        s.end_engine(1);
        assert_eq!(s.next(|| vec![67, 71]), Some(2));
        // Engine 67 ended at its setting 2: its setting 4 is ruled out, not cut.
        s.end_engine(2);
        assert_eq!(s.left(), 2, "71's two other settings");
        assert_eq!(s.next(Vec::new), Some(3));
        assert_eq!(s.next(Vec::new), Some(5));
        assert_eq!(s.next(Vec::new), None);
        // Exhaustive: nothing is ruled out.
        let mut all = Schedule::new(engines.to_vec(), false, 0);
        all.end_engine(0);
        let order: Vec<usize> = std::iter::from_fn(|| all.next(Vec::new)).collect();
        assert_eq!(order, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn an_engine_whose_first_setting_gives_no_time_gets_its_next_in_the_first_stage() {
        // Engine 1's first setting (0) does not build; its next (4, listed after engine
        // 99's) takes its place in the first stage, in list order.
        let engines = vec![1, 2, 99, 2, 1, 1];
        let mut s = Schedule::new(engines.clone(), true, 0);
        assert_eq!(s.next(Vec::new), Some(0));
        s.untimed(0);
        assert!(!s.is_other_setting(4), "now a first setting, not screened");
        assert_eq!(s.next(Vec::new), Some(1));
        assert_eq!(s.next(Vec::new), Some(2));
        assert_eq!(s.next(Vec::new), Some(4));
        // Engine 1 timed at last and close: its remaining setting in the second stage.
        assert_eq!(s.next(|| vec![1]), Some(5));
        assert_eq!(s.next(Vec::new), None);
        // A setting that gave no time in the second stage promotes nothing.
        let mut late = Schedule::new(engines.clone(), true, 0);
        let first: Vec<usize> = std::iter::from_fn(|| late.next(|| vec![2]))
            .take(4)
            .collect();
        assert_eq!(first, [0, 1, 2, 3]);
        late.untimed(3);
        assert_eq!(late.next(Vec::new), None);
        // An engine's last setting giving no time, or an exhaustive schedule: no change.
        let mut last = Schedule::new(vec![7, 8], true, 0);
        assert_eq!(last.next(Vec::new), Some(0));
        last.untimed(0);
        assert_eq!(last.next(Vec::new), Some(1));
        assert_eq!(last.next(Vec::new), None);
        let mut all = Schedule::new(engines, false, 0);
        assert_eq!(all.next(Vec::new), Some(0));
        all.untimed(0);
        let order: Vec<usize> = std::iter::from_fn(|| all.next(Vec::new)).collect();
        assert_eq!(order, [1, 2, 3, 4, 5]);
    }

    #[test]
    fn the_floor_takes_the_first_configurations_whatever_the_stages_rule_out() {
        // A far slower engine ranked third (2) ends the first stage; the floor of six still
        // takes 3-5 (76's two settings among them) in list order, then only the second
        // stage's settings of close engines not taken yet.
        let engines = [25, 2, 50, 76, 76, 65, 60, 25, 76];
        let mut s = Schedule::new(engines.to_vec(), true, 6);
        assert_eq!(s.left(), 9);
        for want in 0..3 {
            assert_eq!(s.next(Vec::new), Some(want));
        }
        s.end_first_stage();
        // Under the floor: 3, 4, 5; ruled out: 60's first setting (6); the second stage
        // may still take 25's and 76's others (7, 8).
        assert_eq!(s.left(), 5);
        assert!(!s.is_other_setting(3));
        assert_eq!(s.next(Vec::new), Some(3));
        assert_eq!(s.next(Vec::new), Some(4));
        assert!(
            s.is_other_setting(4),
            "another setting under the floor is screened"
        );
        assert_eq!(s.next(Vec::new), Some(5));
        // The second stage: the close engines' settings the floor did not take.
        assert_eq!(s.next(|| vec![76, 25]), Some(7));
        assert_eq!(s.next(Vec::new), Some(8));
        assert_eq!(s.next(Vec::new), None);
        // Without the floor the first stage ends at 2: the faster engines never come.
        let mut bare = Schedule::new(engines.to_vec(), true, 0);
        for want in 0..3 {
            assert_eq!(bare.next(Vec::new), Some(want));
        }
        bare.end_first_stage();
        assert_eq!(bare.next(|| vec![25]), Some(7));
        assert_eq!(bare.next(Vec::new), None);
    }

    #[test]
    fn the_generic_engine_is_taken_under_the_floor_only() {
        // The generic engine (0) under the floor of three is taken; its setting past the
        // floor, and its first setting in a list where it comes past the floor, are not.
        let engines = [76, 0, 65, 0, 60];
        let mut s = Schedule::new(engines.to_vec(), true, 3);
        assert_eq!(
            s.left(),
            4,
            "0's setting past the floor is ruled out, not cut"
        );
        let order: Vec<usize> = std::iter::from_fn(|| s.next(|| vec![0, 76])).collect();
        assert_eq!(order, [0, 1, 2, 4]);
        let late = [76, 65, 0, 60];
        let mut s = Schedule::new(late.to_vec(), true, 2);
        let order: Vec<usize> = std::iter::from_fn(|| s.next(Vec::new)).collect();
        assert_eq!(order, [0, 1, 3]);
        // Where a configuration under the floor gives no time, the floor moves on to it.
        let mut moved = Schedule::new(late.to_vec(), true, 2);
        assert_eq!(moved.next(Vec::new), Some(0));
        moved.untimed(0);
        let order: Vec<usize> = std::iter::from_fn(|| moved.next(Vec::new)).collect();
        assert_eq!(order, [1, 2, 3]);
        // Exhaustive: every configuration comes.
        let mut all = Schedule::new(late.to_vec(), false, 2);
        let order: Vec<usize> = std::iter::from_fn(|| all.next(Vec::new)).collect();
        assert_eq!(order, [0, 1, 2, 3]);
    }

    #[test]
    fn a_far_slower_engine_loses_its_settings_under_the_floor_too() {
        let engines = [5, 9, 9, 9, 7];
        let mut s = Schedule::new(engines.to_vec(), true, 5);
        assert_eq!(s.next(Vec::new), Some(0));
        assert_eq!(s.next(Vec::new), Some(1));
        s.slow_engine(1);
        assert_eq!(s.left(), 1, "engine 9's settings 2 and 3 are ruled out");
        assert_eq!(s.next(Vec::new), Some(4));
        assert_eq!(s.next(|| vec![9]), None);
        // Exhaustive: nothing is ruled out.
        let mut all = Schedule::new(engines.to_vec(), false, 5);
        assert_eq!(all.next(Vec::new), Some(0));
        all.slow_engine(0);
        let order: Vec<usize> = std::iter::from_fn(|| all.next(Vec::new)).collect();
        assert_eq!(order, [1, 2, 3, 4]);
    }

    #[test]
    fn the_floor_moves_on_past_configurations_that_give_no_time() {
        let engines = vec![1, 2, 3, 4, 5];
        let mut s = Schedule::new(engines.clone(), true, 2);
        assert_eq!(s.next(Vec::new), Some(0));
        s.untimed(0);
        s.end_first_stage();
        // 0 gave no time: the floor now covers 1 and 2.
        assert_eq!(s.left(), 2);
        assert_eq!(s.next(Vec::new), Some(1));
        assert_eq!(s.next(Vec::new), Some(2));
        assert_eq!(s.next(Vec::new), None);
        // After a stage's end, a configuration under the floor giving no time brings back
        // the next one the end had ruled out.
        let mut back = Schedule::new(engines.clone(), true, 2);
        assert_eq!(back.next(Vec::new), Some(0));
        back.end_first_stage();
        assert_eq!(back.next(Vec::new), Some(1));
        back.untimed(1);
        assert_eq!(back.next(Vec::new), Some(2));
        assert_eq!(back.next(Vec::new), None);
        // The floor past the list's end, or an exhaustive schedule: no change.
        let mut short = Schedule::new(vec![7], true, 4);
        assert_eq!(short.next(Vec::new), Some(0));
        short.untimed(0);
        assert_eq!(short.next(Vec::new), None);
        let mut all = Schedule::new(engines, false, 2);
        all.end_first_stage();
        all.untimed(0);
        let order: Vec<usize> = std::iter::from_fn(|| all.next(Vec::new)).collect();
        assert_eq!(order, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_floor_takes_fallback_only_engines_ruled_out() {
        let engines = vec![1, 99, 2, 98];
        let ranked = [true, false, true, false];
        let mut s = Schedule::new(engines, true, 2);
        assert_eq!(s.next(Vec::new), Some(0));
        s.end_unranked(&ranked);
        assert_eq!(s.next(Vec::new), Some(1), "under the floor");
        assert_eq!(s.next(Vec::new), Some(2));
        assert_eq!(s.next(Vec::new), None, "98 is ruled out");
    }

    #[test]
    fn engines_only_the_fallback_list_names_can_be_ruled_out() {
        // Engines 1 and 2 ranked; 99 only on the fallback list; a fallback-listed other
        // setting of engine 1 (ranked[3] false, but engine 1 is ranked).
        let engines = vec![1, 2, 99, 1];
        let ranked = [true, true, false, false];
        let mut s = Schedule::new(engines.clone(), true, 0);
        assert_eq!(s.next(Vec::new), Some(0));
        s.end_unranked(&ranked);
        assert_eq!(s.left(), 2, "engine 2's first setting and engine 1's other");
        assert_eq!(s.next(Vec::new), Some(1));
        assert_eq!(s.next(|| vec![1, 99]), Some(3));
        assert_eq!(s.next(Vec::new), None);
        // Exhaustive: nothing is ruled out.
        let mut all = Schedule::new(engines, false, 0);
        all.end_unranked(&ranked);
        let order: Vec<usize> = std::iter::from_fn(|| all.next(Vec::new)).collect();
        assert_eq!(order, [0, 1, 2, 3]);
    }
}
