//! Backward data through cuDNN's graph (backend) API: one convolution-backward-data
//! operation in an operation graph, the engines cuDNN's heuristic ranks for it, and
//! execution plans built from them.
//!
//! Why a second path beside `cudnnConvolutionBackwardData`: the legacy algorithm enum
//! cannot reach some of cuDNN 9's engines (on the H200, the fast FMA kernels for
//! channels-last f32 are among them). An engine is named by its global index and knob
//! choices ([`EngineConfig`]), so a configuration found for one problem can be built again
//! for the same problem later, or in another process.
//!
//! The scaling factors are attributes of the operation, so plans are built per
//! (problem, alpha, beta, pointer alignment); the context keeps them (`EngineCache`), and
//! `bwd_data/engine.rs` is the context's graph-API path built on this module.

use std::ffi::c_void;

use cudarc::cudnn::sys::{
    cudnnBackendAttributeName_t as Attr, cudnnBackendAttributeType_t as Ty,
    cudnnBackendBehaviorNote_t as Behavior, cudnnBackendDescriptorType_t as Kind,
    cudnnBackendHeurMode_t as HeurMode, cudnnBackendNumericalNote_t as Note,
    cudnnConvolutionMode_t,
};

use crate::backend::Desc;
use crate::cache::BoundedCache;
use crate::convolution::convolution_algo::MAX_KNOBS;
use crate::convolution::Route;
use crate::convolution::{ConvolutionMode, Engine, EngineConfig};
use crate::data_type::DType;
use crate::determinism::Determinism;
use crate::error::{CudnnError, Error, Result};
use crate::library::CudnnLibrary;
use crate::math_type::MathType;
use crate::problem::{ProblemKey, RawPointers, RawProblem};
use crate::sys::CudnnHandle;
use crate::tensor::Format;

/// Unique ids of the three tensors in the operation graph and the variant pack.
const UID_DX: i64 = 1;
const UID_W: i64 = 2;
const UID_DY: i64 = 3;

/// Heuristic results read per mode; cuDNN ranks a few dozen engines at most.
const MAX_CANDIDATES: usize = 512;
/// A walk that wants the first configuration that builds ([`ranked`] with `first`) asks a
/// heuristic for this many of its configurations, and for the whole list only once those
/// are used up: reading a heuristic's results takes time in proportion to how many are
/// read. On the H100 (`bench/random_layers.py`, seed 41, 73 layers that asked), eight
/// took 0.19-1.34 ms to read (median 0.34, 55 asks), the whole lists of 19-33 that
/// followed where none of the eight served 0.45-1.06 ms, and efficientnet_b0's 1x1
/// layers' lists of 38-40 took 1.4-3.4 ms. None of the eight served on 7 of the 73
/// layers, all f32 without TF32 (mode A ranks tensor-core configurations first there):
/// those read eight more than before.
pub(crate) const FIRST_READ: usize = 8;

/// The operation graph of one problem with its scaling factors; it keeps the descriptors
/// it was built from alive.
pub(crate) struct OpGraph {
    graph: Desc,
    _parts: Vec<Desc>,
}

/// Logical strides of a packed tensor of logical shape `shape` (N, C, spatial...) stored
/// in `format`.
fn strides(shape: &[usize], format: Format) -> Result<Vec<i64>> {
    crate::tensor::layout::dense_strides(shape, format).ok_or_else(|| {
        Error::Unsupported(crate::error::UnsupportedConfiguration {
            requested: format!("the graph API with format {format}"),
            nearest: vec!["NCHW or NHWC".into()],
        })
    })
}

fn to_i64(v: &[usize]) -> Vec<i64> {
    v.iter()
        .map(|&x| i64::try_from(x).unwrap_or(i64::MAX))
        .collect()
}

fn tensor(
    lib: &'static CudnnLibrary,
    uid: i64,
    d: &crate::tensor::RawDescriptor,
    align: i64,
) -> Result<Desc> {
    let t = Desc::new(lib, Kind::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
    t.set_enum(
        Attr::CUDNN_ATTR_TENSOR_DATA_TYPE,
        Ty::CUDNN_TYPE_DATA_TYPE,
        d.dtype().raw() as u32,
    )?;
    t.set_i64s(Attr::CUDNN_ATTR_TENSOR_DIMENSIONS, &to_i64(d.shape()))?;
    t.set_i64s(
        Attr::CUDNN_ATTR_TENSOR_STRIDES,
        &strides(d.shape(), d.format())?,
    )?;
    t.set_i64s(Attr::CUDNN_ATTR_TENSOR_UNIQUE_ID, &[uid])?;
    t.set_i64s(Attr::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &[align])?;
    t.finalize(|| format!("building the graph-API tensor {d}"))?;
    Ok(t)
}

/// Builds the operation graph `dx = alpha * dgrad(w, dy) + beta * dx`.
pub(crate) fn build_graph(
    lib: &'static CudnnLibrary,
    handle: CudnnHandle,
    p: &RawProblem<'_>,
    alpha: f64,
    beta: f64,
    align: i64,
) -> Result<OpGraph> {
    let (w, dy, dx) = (
        tensor(lib, UID_W, p.w, align)?,
        tensor(lib, UID_DY, p.dy, align)?,
        tensor(lib, UID_DX, p.dx, align)?,
    );
    let params = p.conv.params();
    let conv = Desc::new(lib, Kind::CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)?;
    conv.set_enum(
        Attr::CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
        Ty::CUDNN_TYPE_DATA_TYPE,
        p.conv.comp().raw() as u32,
    )?;
    let mode = match params.mode {
        ConvolutionMode::Convolution => cudnnConvolutionMode_t::CUDNN_CONVOLUTION,
        ConvolutionMode::CrossCorrelation => cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
    };
    conv.set_enum(
        Attr::CUDNN_ATTR_CONVOLUTION_CONV_MODE,
        Ty::CUDNN_TYPE_CONVOLUTION_MODE,
        mode as u32,
    )?;
    conv.set_i64s(
        Attr::CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
        &[i64::try_from(params.padding.len()).unwrap_or(0)],
    )?;
    conv.set_i64s(
        Attr::CUDNN_ATTR_CONVOLUTION_DILATIONS,
        &to_i64(&params.dilation),
    )?;
    conv.set_i64s(
        Attr::CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
        &to_i64(&params.stride),
    )?;
    conv.set_i64s(
        Attr::CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
        &to_i64(&params.padding),
    )?;
    conv.set_i64s(
        Attr::CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
        &to_i64(&params.padding),
    )?;
    conv.finalize(|| "building the graph-API convolution".into())?;

    let op = Desc::new(
        lib,
        Kind::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    )?;
    if p.dx.dtype() == DType::F64 {
        // SAFETY: one double each, as CUDNN_TYPE_DOUBLE reads.
        unsafe {
            op.set_raw(
                Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                Ty::CUDNN_TYPE_DOUBLE,
                1,
                (&raw const alpha).cast(),
            )?;
            op.set_raw(
                Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                Ty::CUDNN_TYPE_DOUBLE,
                1,
                (&raw const beta).cast(),
            )?;
        }
    } else {
        #[allow(clippy::cast_possible_truncation)] // the scaling type cuDNN reads is float
        let (a, b) = (alpha as f32, beta as f32);
        // SAFETY: one float each, as CUDNN_TYPE_FLOAT reads.
        unsafe {
            op.set_raw(
                Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                Ty::CUDNN_TYPE_FLOAT,
                1,
                (&raw const a).cast(),
            )?;
            op.set_raw(
                Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                Ty::CUDNN_TYPE_FLOAT,
                1,
                (&raw const b).cast(),
            )?;
        }
    }
    op.set_descs(
        Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
        &[&conv],
    )?;
    op.set_descs(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, &[&w])?;
    op.set_descs(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, &[&dx])?;
    op.set_descs(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, &[&dy])?;
    op.finalize(|| "building the graph-API backward-data operation".into())?;

    let graph = Desc::new(lib, Kind::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
    // SAFETY: one cudnnHandle_t.
    unsafe {
        graph.set_raw(
            Attr::CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
            Ty::CUDNN_TYPE_HANDLE,
            1,
            (&raw const handle).cast(),
        )
    }?;
    graph.set_descs(Attr::CUDNN_ATTR_OPERATIONGRAPH_OPS, &[&op])?;
    graph.finalize(|| "building the graph-API operation graph".into())?;
    Ok(OpGraph {
        graph,
        _parts: vec![w, dy, dx, conv, op],
    })
}

/// What cuDNN says of an engine (one flag per note this crate acts on).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct Notes {
    pub tensor_core: bool,
    pub down_convert: bool,
    pub reduced_precision: bool,
    pub nondeterministic: bool,
    pub runtime_compiled: bool,
}

impl Notes {
    fn of(engine: &Desc) -> Result<Self> {
        let numerical = engine.get_enums(
            Attr::CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
            Ty::CUDNN_TYPE_NUMERICAL_NOTE,
        )?;
        let behavior = engine.get_enums(
            Attr::CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
            Ty::CUDNN_TYPE_BEHAVIOR_NOTE,
        )?;
        let has = |n: Note| numerical.contains(&(n as u32));
        Ok(Self {
            tensor_core: has(Note::CUDNN_NUMERICAL_NOTE_TENSOR_CORE),
            down_convert: has(Note::CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS),
            reduced_precision: has(Note::CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION),
            nondeterministic: has(Note::CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC),
            runtime_compiled: behavior
                .contains(&(Behavior::CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION as u32)),
        })
    }

    /// Whether an engine with these notes computes what a call with math type `math` and
    /// compute type `comp` asks for: `Fma` keeps tensor cores out, only
    /// `TensorOpAllowConversion` lets inputs be converted down, and a reduction in less than
    /// the compute type is only taken for half compute. Engines compiled at run time are
    /// admitted (their first plan takes longer to build): on the H200 the fastest f16, bf16
    /// and TF32 engines are among them.
    pub(crate) fn fit(self, math: MathType, comp: DType) -> bool {
        !((self.tensor_core && math == MathType::Fma)
            || (self.down_convert && math != MathType::TensorOpAllowConversion)
            || (self.reduced_precision && comp != DType::F16))
    }

    /// The default choice's filter, PyTorch's: engines that convert inputs down are left
    /// out unless `math` is `TensorOpAllowConversion`, tensor-core engines under `Fma`
    /// (f32 without TF32), and non-deterministic ones when determinism is asked for; a
    /// reduction in less than the compute type is admitted (the instant heuristic ranks
    /// such engines first for half data, and PyTorch runs them).
    pub(crate) fn fit_default(self, math: MathType, deterministic_only: bool) -> bool {
        !((self.tensor_core && math == MathType::Fma)
            || (self.down_convert && math != MathType::TensorOpAllowConversion)
            || (deterministic_only && self.nondeterministic))
    }

    fn determinism(self) -> Determinism {
        if self.nondeterministic {
            Determinism::NonDeterministic
        } else {
            Determinism::Deterministic
        }
    }

    fn math_type(self) -> MathType {
        if self.tensor_core {
            MathType::TensorOp
        } else {
            MathType::Fma
        }
    }
}

/// Whether each engine measurement prints what it timed to stderr (`CUDNN_RS_FIND_TRACE=1`):
/// each heuristic query's time and, per configuration, its heuristic, its build time and
/// the time per call of each of its timed runs. A diagnostic for tuning the measurement's
/// schedule; read once per process.
pub(crate) fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("CUDNN_RS_FIND_TRACE").is_ok_and(|v| v == "1"))
}

/// Which of the graph API's heuristics a candidate list draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Sources {
    /// The instant heuristic (mode A) and then the fallback list: what PyTorch's cuDNN
    /// path walks (benchmarking or not), and what the library's default choice walks and
    /// its measured tier times.
    Instant,
    /// Modes A and B, then the fallback list (`BestEngine`, `get_..._engine`).
    Heuristics,
    /// Every configuration modes A, B and the fallback list return (each knob setting),
    /// then every other engine of the graph with its default knobs, for autotuning: the
    /// heuristics leave out engines that are sometimes the fastest.
    Exhaustive,
}

/// The heuristic modes `sources` draws on, in the order their lists are walked.
pub(crate) fn modes(sources: Sources) -> &'static [HeurMode] {
    match sources {
        Sources::Instant => &[
            HeurMode::CUDNN_HEUR_MODE_A,
            HeurMode::CUDNN_HEUR_MODE_FALLBACK,
        ],
        Sources::Heuristics | Sources::Exhaustive => &[
            HeurMode::CUDNN_HEUR_MODE_A,
            HeurMode::CUDNN_HEUR_MODE_B,
            HeurMode::CUDNN_HEUR_MODE_FALLBACK,
        ],
    }
}

/// The engine configurations cuDNN's heuristics rank for `graph`, best first, without
/// repeats, drawn from `sources` (see [`ranked`]); exhaustive, then each engine none of
/// them ranked, with its default knobs.
pub(crate) fn candidates(
    lib: &'static CudnnLibrary,
    graph: &OpGraph,
    sources: Sources,
) -> Result<Vec<Candidate>> {
    let mut out: Vec<Candidate> = ranked(lib, graph, sources, MAX_CANDIDATES).collect();
    add_unranked(graph, sources, &mut out)?;
    Ok(out)
}

/// Exhaustive `sources`: each engine of `graph` none of `out` names, with its default
/// knobs, added to `out`.
pub(crate) fn add_unranked(
    graph: &OpGraph,
    sources: Sources,
    out: &mut Vec<Candidate>,
) -> Result<()> {
    if sources == Sources::Exhaustive {
        let engines = graph
            .graph
            .get_i64(Attr::CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT)?
            .clamp(0, 4096);
        for index in 0..engines {
            if let Some(config) = EngineConfig::new(index, &[]) {
                if !out.iter().any(|o| o.config.index() == index) {
                    out.push(Candidate {
                        config,
                        desc: None,
                        from: None,
                        beside: false,
                    });
                }
            }
        }
    }
    Ok(())
}

/// The configurations `sources`' heuristics rank (what [`candidates`] lists before the
/// unranked engines), read one at a time: a heuristic is asked only once the ones before
/// it are used up, for its first `first` configurations and then, once those are used
/// up, for all of them (see [`FIRST_READ`]); a configuration is read (engine, knobs; knobs
/// that cannot be read leave the engine alone as its identity) only when it is reached.
/// What a caller wanting the first one that builds needs, and no more: on the H200, mode
/// A lists 26-40 configurations for most layers, and reading them all took 1-2 ms of a
/// first call.
pub(crate) fn ranked<'a>(
    lib: &'static CudnnLibrary,
    graph: &'a OpGraph,
    sources: Sources,
    first: usize,
) -> Ranked<'a> {
    ranked_in(lib, graph, modes(sources), first)
}

/// [`ranked`] over the heuristic modes `modes`, in their order.
pub(crate) fn ranked_in<'a>(
    lib: &'static CudnnLibrary,
    graph: &'a OpGraph,
    modes: &'static [HeurMode],
    first: usize,
) -> Ranked<'a> {
    Ranked {
        lib,
        graph,
        modes: modes.iter(),
        mode: None,
        first: first.clamp(1, MAX_CANDIDATES),
        partly: false,
        pending: Vec::new().into_iter(),
        knobs: Vec::new(),
        seen: Vec::new(),
    }
}

/// Every configuration heuristics `modes` list for `graph`, in their order, without
/// those in `seen` or repeats.
pub(crate) fn listed_by(
    lib: &'static CudnnLibrary,
    graph: &OpGraph,
    modes: &'static [HeurMode],
    seen: Vec<EngineConfig>,
) -> Vec<Candidate> {
    let mut ranked = ranked_in(lib, graph, modes, MAX_CANDIDATES);
    ranked.seen = seen;
    ranked.collect()
}

/// See [`ranked`].
pub(crate) struct Ranked<'a> {
    lib: &'static CudnnLibrary,
    graph: &'a OpGraph,
    modes: std::slice::Iter<'static, HeurMode>,
    mode: Option<HeurMode>,
    /// How many configurations a heuristic is asked for first ...
    first: usize,
    /// ... and whether the current one lists more than it was asked for.
    partly: bool,
    /// The current heuristic's configurations not read yet.
    pending: std::vec::IntoIter<Desc>,
    /// Knob-choice descriptors the configurations are read into (see [`read_config`]).
    knobs: Vec<Desc>,
    seen: Vec<EngineConfig>,
}

impl Iterator for Ranked<'_> {
    type Item = Candidate;

    fn next(&mut self) -> Option<Candidate> {
        loop {
            if let (Some(cfg), Some(mode)) = (self.pending.next(), self.mode) {
                let config = read_config(self.lib, &cfg, &self.knobs)
                    .or_else(|_| read_config(self.lib, &cfg, &[]));
                let Ok(config) = config else { continue };
                if self.seen.contains(&config) {
                    continue;
                }
                self.seen.push(config);
                return Some(Candidate {
                    config,
                    desc: Some(cfg),
                    from: Some(mode),
                    beside: false,
                });
            }
            // The current heuristic's first configurations are used up: the rest of its
            // list (asked for whole; those already seen are skipped), else the next one.
            let (mode, most) = match self.mode {
                Some(mode) if self.partly => (mode, MAX_CANDIDATES),
                _ => (*self.modes.next()?, self.first),
            };
            let asked = std::time::Instant::now();
            // A mode that cannot answer for this graph adds nothing; the others still do.
            let listed = ask(self.lib, self.graph, mode, most);
            self.partly = listed
                .as_ref()
                .is_ok_and(|(_, count)| read_in_part(most, *count));
            let listed = listed.map(|(cfgs, _)| cfgs);
            if tracing() {
                eprintln!(
                    "cudnn_rs find: heuristic {mode:?}: {} configurations in {:.3} ms",
                    listed.as_ref().map_or(0, Vec::len),
                    asked.elapsed().as_secs_f64() * 1e3
                );
            }
            if self.knobs.is_empty() {
                // Without these the mode adds nothing.
                let Ok(knobs) = knob_scratch(self.lib) else {
                    self.partly = false;
                    continue;
                };
                self.knobs = knobs;
            }
            self.mode = Some(mode);
            self.pending = listed.unwrap_or_default().into_iter();
        }
    }
}

/// Whether a heuristic asked for `most` of its configurations (see [`FIRST_READ`]) that
/// lists `listed` is to be asked again for the rest; one asked for all it may hand out
/// ([`MAX_CANDIDATES`]) never is, however many it lists.
fn read_in_part(most: usize, listed: usize) -> bool {
    most < MAX_CANDIDATES && listed > most
}

/// The first `most` finalized engine configurations heuristic `mode` ranks for `graph`,
/// best first, and how many it ranks.
fn ask(
    lib: &'static CudnnLibrary,
    graph: &OpGraph,
    mode: HeurMode,
    most: usize,
) -> Result<(Vec<Desc>, usize)> {
    let heur = Desc::new(lib, Kind::CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)?;
    heur.set_descs(Attr::CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, &[&graph.graph])?;
    heur.set_enum(
        Attr::CUDNN_ATTR_ENGINEHEUR_MODE,
        Ty::CUDNN_TYPE_HEUR_MODE,
        mode as u32,
    )?;
    let asked = std::time::Instant::now();
    heur.finalize(|| format!("asking the graph-API heuristic ({mode:?})"))?;
    let finalized = asked.elapsed();
    let listed = heur.count_descs(Attr::CUDNN_ATTR_ENGINEHEUR_RESULTS)?;
    let count = listed.min(most).min(MAX_CANDIDATES);
    let counted = asked.elapsed();
    let mut cfgs = (0..count)
        .map(|_| Desc::new(lib, Kind::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR))
        .collect::<Result<Vec<_>>>()?;
    let made = asked.elapsed();
    let filled = heur.get_descs(Attr::CUDNN_ATTR_ENGINEHEUR_RESULTS, &cfgs)?;
    cfgs.truncate(filled);
    if tracing() {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let between = |a: std::time::Duration, b| ms(a.saturating_sub(b));
        eprintln!(
            "cudnn_rs find: heuristic {mode:?} finalized in {:.3} ms, counted in {:.3}, \
             descriptors made in {:.3}, read in {:.3}",
            ms(finalized),
            between(counted, finalized),
            between(made, counted),
            between(asked.elapsed(), made)
        );
    }
    Ok((cfgs, listed))
}

/// Knob-choice descriptors to read a configuration's knobs into: one more than a
/// configuration may hold, to tell an overflow.
fn knob_scratch(lib: &'static CudnnLibrary) -> Result<Vec<Desc>> {
    (0..=MAX_KNOBS)
        .map(|_| Desc::new(lib, Kind::CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR))
        .collect()
}

/// One engine configuration to try: its identity and, where a heuristic ranked it, the
/// heuristic's own finalized descriptor. A plan is built from that descriptor as it is
/// (as cuDNN's frontend and PyTorch do): rebuilding it from the engine index and the
/// knob choices read back loses what the heuristic set beyond them.
pub(crate) struct Candidate {
    pub config: EngineConfig,
    pub desc: Option<Desc>,
    /// The heuristic that ranked it first (`None`: not ranked, an exhaustive search's).
    pub from: Option<HeurMode>,
    /// Listed for the other graph of `beside::candidates_beside` (`desc` is that
    /// graph's).
    pub beside: bool,
}

/// The engine index and knob choices of a finalized engine configuration, the choices
/// read into `scratch` (knob-choice descriptors, more than [`MAX_KNOBS`]). cuDNN answers a
/// count-only query for the knob choices with 0, so they are read into descriptors
/// made beforehand, as cudnn-frontend does; counting first lost every knob, which
/// made all settings of an engine one candidate.
fn read_config(lib: &'static CudnnLibrary, cfg: &Desc, scratch: &[Desc]) -> Result<EngineConfig> {
    let engine = [Desc::new(lib, Kind::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?];
    cfg.get_descs(Attr::CUDNN_ATTR_ENGINECFG_ENGINE, &engine)?;
    let index = engine[0].get_i64(Attr::CUDNN_ATTR_ENGINE_GLOBAL_INDEX)?;
    let n = cfg.get_descs(Attr::CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, scratch)?;
    if n > MAX_KNOBS {
        return Err(Error::cudnn(
            CudnnError::NotSupported,
            format!("engine {index} has more than {MAX_KNOBS} knobs"),
        ));
    }
    let mut knobs = Vec::with_capacity(n);
    for c in &scratch[..n] {
        let kind = c.get_enum(
            Attr::CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
            Ty::CUDNN_TYPE_KNOB_TYPE,
        )?;
        let value = c.get_i64(Attr::CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE)?;
        knobs.push((kind, value));
    }
    EngineConfig::new(index, &knobs)
        .ok_or_else(|| Error::cudnn(CudnnError::NotSupported, "an engine with too many knobs"))
}

/// An execution plan: one engine configuration built for one operation graph.
pub(crate) struct Plan {
    desc: Desc,
    pub workspace: usize,
    pub notes: Notes,
    pub config: EngineConfig,
    /// The variant packs of the latest calls by their addresses, most recent first (at
    /// most [`PACKS`]): a training step calls a plan for several layers of one shape, each
    /// on the same addresses every step, so most calls find theirs.
    packs: std::cell::RefCell<Vec<(PackKey, Desc)>>,
    /// The operation graph the plan was built from where that is not the graph it is
    /// kept under (a plan built on the builder's thread, see `bwd_data/background.rs`):
    /// kept alive with the plan.
    built_from: Option<std::rc::Rc<OpGraph>>,
}

/// A plan as built, before a context takes it ([`Plan::own`], [`Plan::adopt`]): what the
/// builder's thread hands to the caller's (`Send`, unlike [`Plan`]).
pub(crate) struct BuiltPlan {
    desc: Desc,
    workspace: usize,
    notes: Notes,
    config: EngineConfig,
}

type PackKey = ([u64; 3], (u64, usize));

/// Variant packs each plan keeps.
const PACKS: usize = 8;

impl Plan {
    /// A plan built elsewhere, for an operation graph of the same problem, scalars and
    /// alignment as the one it will be kept under; `graph`, the one it was built from, is
    /// kept alive with it.
    pub(crate) fn adopt(built: BuiltPlan, graph: std::rc::Rc<OpGraph>) -> Self {
        Self::of(built, Some(graph))
    }

    /// A plan built on the context's own handle for the graph it is kept under.
    pub(crate) fn own(built: BuiltPlan) -> Self {
        Self::of(built, None)
    }

    fn of(built: BuiltPlan, built_from: Option<std::rc::Rc<OpGraph>>) -> Self {
        Self {
            desc: built.desc,
            workspace: built.workspace,
            notes: built.notes,
            config: built.config,
            packs: std::cell::RefCell::new(Vec::new()),
            built_from,
        }
    }

    /// Whether the plan was built with the handle of the context keeping it (not taken
    /// over from another: the builder thread's, a side context's).
    pub(crate) fn is_own(&self) -> bool {
        self.built_from.is_none()
    }

    /// The record users see for this plan.
    pub(crate) fn engine(&self) -> Engine {
        Engine::new(
            self.config,
            -1.0,
            self.workspace,
            self.notes.determinism(),
            self.notes.math_type(),
        )
    }
}

/// Builds `config` for `graph`; `NOT_SUPPORTED` when the engine does not run it.
/// `accept` sees the engine's notes before the plan is built; a refusal is `None`. The
/// plan is no context's yet ([`Plan::own`], [`Plan::adopt`]).
pub(crate) fn build_plan(
    lib: &'static CudnnLibrary,
    handle: CudnnHandle,
    graph: &OpGraph,
    config: EngineConfig,
    from: Option<&Desc>,
    accept: impl Fn(&Notes) -> bool,
) -> Result<Option<BuiltPlan>> {
    let what = || format!("building graph-API {config}");
    if let Some(cfg) = from {
        let engine = [Desc::new(lib, Kind::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?];
        cfg.get_descs(Attr::CUDNN_ATTR_ENGINECFG_ENGINE, &engine)?;
        let notes = Notes::of(&engine[0])?;
        if !accept(&notes) {
            return Ok(None);
        }
        return plan_of(lib, handle, cfg, config, notes);
    }
    let engine = Desc::new(lib, Kind::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?;
    engine.set_descs(Attr::CUDNN_ATTR_ENGINE_OPERATION_GRAPH, &[&graph.graph])?;
    engine.set_i64s(Attr::CUDNN_ATTR_ENGINE_GLOBAL_INDEX, &[config.index()])?;
    engine.finalize(what)?;
    let notes = Notes::of(&engine)?;
    if !accept(&notes) {
        return Ok(None);
    }
    let knobs = config
        .knobs()
        .map(|(kind, value)| {
            let k = Desc::new(lib, Kind::CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR)?;
            k.set_enum(
                Attr::CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                Ty::CUDNN_TYPE_KNOB_TYPE,
                kind,
            )?;
            k.set_i64s(Attr::CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, &[value])?;
            k.finalize(what)?;
            Ok(k)
        })
        .collect::<Result<Vec<_>>>()?;
    let cfg = Desc::new(lib, Kind::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)?;
    cfg.set_descs(Attr::CUDNN_ATTR_ENGINECFG_ENGINE, &[&engine])?;
    if !knobs.is_empty() {
        let refs: Vec<&Desc> = knobs.iter().collect();
        cfg.set_descs(Attr::CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, &refs)?;
    }
    cfg.finalize(what)?;
    plan_of(lib, handle, &cfg, config, notes)
}

/// The execution plan of a finalized engine configuration.
fn plan_of(
    lib: &'static CudnnLibrary,
    handle: CudnnHandle,
    cfg: &Desc,
    config: EngineConfig,
    notes: Notes,
) -> Result<Option<BuiltPlan>> {
    let what = || format!("building graph-API {config}");
    let plan = Desc::new(lib, Kind::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)?;
    // SAFETY: one cudnnHandle_t.
    unsafe {
        plan.set_raw(
            Attr::CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
            Ty::CUDNN_TYPE_HANDLE,
            1,
            (&raw const handle).cast(),
        )
    }?;
    plan.set_descs(Attr::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, &[cfg])?;
    plan.finalize(what)?;
    crate::counters::bump(crate::counters::Count::PlanBuild);
    let workspace =
        usize::try_from(plan.get_i64(Attr::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)?).unwrap_or(0);
    Ok(Some(BuiltPlan {
        desc: plan,
        workspace,
        notes,
        config,
    }))
}

/// What the builder thread (`bwd_data/background.rs`) made of a problem: the operation
/// graph (alpha 1, beta 0, 16-byte alignment) and the plans of the engines on its
/// candidate list that compile at run time.
pub(crate) struct Built {
    pub(crate) graph: OpGraph,
    pub(crate) plans: Vec<BuiltPlan>,
}

/// A problem handed to the builder thread: its result once built.
#[derive(Default)]
pub(crate) struct Pending {
    result: std::sync::Mutex<Option<Result<Built>>>,
}

impl Pending {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Result<Built>>> {
        self.result
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Stores the builder's result.
    pub(crate) fn fill(&self, result: Result<Built>) {
        *self.slot() = Some(result);
    }

    /// The builder's result, once it has one (taken: later calls see `None`).
    pub(crate) fn take(&self) -> Option<Result<Built>> {
        self.slot().take()
    }

    /// Whether the builder is done with the problem.
    pub(crate) fn is_done(&self) -> bool {
        self.slot().is_some()
    }
}

/// Polls `done` every millisecond until it holds, at most `timeout`; whether it held (for
/// waiting on [`Pending`] results).
pub(crate) fn wait_until(timeout: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = std::time::Instant::now();
    loop {
        if done() {
            return true;
        }
        if started.elapsed() >= timeout {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The variant pack for `ptrs`, built once per set of addresses.
fn variant_pack(lib: &'static CudnnLibrary, ptrs: &RawPointers) -> Result<Desc> {
    crate::counters::bump(crate::counters::Count::VariantPack);
    let pack = Desc::new(lib, Kind::CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)?;
    pack.set_i64s(
        Attr::CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
        &[UID_W, UID_DY, UID_DX],
    )?;
    let data: [*mut c_void; 3] = [
        ptrs.w as *mut c_void,
        ptrs.dy as *mut c_void,
        ptrs.dx as *mut c_void,
    ];
    let ws: *mut c_void = if ptrs.workspace.1 == 0 {
        std::ptr::null_mut()
    } else {
        ptrs.workspace.0 as *mut c_void
    };
    // SAFETY: three device pointers, then one; cuDNN only stores the addresses.
    unsafe {
        pack.set_raw(
            Attr::CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
            Ty::CUDNN_TYPE_VOID_PTR,
            3,
            data.as_ptr().cast(),
        )?;
        pack.set_raw(
            Attr::CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
            Ty::CUDNN_TYPE_VOID_PTR,
            1,
            (&raw const ws).cast(),
        )?;
    }
    pack.finalize(|| "building the graph-API variant pack".into())?;
    Ok(pack)
}

/// Enqueues `plan` on the handle's stream with the memory of `ptrs`; returns the cuDNN
/// status.
///
/// # Safety
/// The addresses must point to device memory of the plan's context holding the elements
/// the operation graph describes (the workspace: at least `plan.workspace` bytes), `dx`
/// writable and not overlapping the inputs, all valid until the work completes.
pub(crate) unsafe fn execute(
    lib: &'static CudnnLibrary,
    handle: CudnnHandle,
    plan: &Plan,
    ptrs: &RawPointers,
) -> Result<u32> {
    let key: PackKey = ([ptrs.w, ptrs.dy, ptrs.dx], ptrs.workspace);
    let mut packs = plan.packs.borrow_mut();
    let pack = crate::cache::recent(&mut packs, key, PACKS, || variant_pack(lib, ptrs))?.ptr;
    // SAFETY: plan and pack are live descriptors (the pack is kept in the plan, and was
    // made or found for these very addresses just above); the memory is the caller's
    // contract.
    Ok(unsafe { (lib.api.cudnnBackendExecute)(handle, plan.desc.ptr, pack) })
}

/// The largest power of two up to 16 that every address is a multiple of: the byte
/// alignment the operation graph may promise.
pub(crate) fn alignment(ptrs: &RawPointers) -> i64 {
    let all = ptrs.w | ptrs.dy | ptrs.dx;
    let mut align = 16i64;
    while align > 1 && all % u64::try_from(align).unwrap_or(1) != 0 {
        align /= 2;
    }
    align
}

/// An operation graph is fixed by the problem, the scaling factors and the alignment the
/// addresses have.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct GraphKey {
    problem: ProblemKey,
    scalars: (u64, u64),
    align: i64,
}

impl GraphKey {
    pub(crate) fn new(p: &RawProblem<'_>, alpha: f64, beta: f64, align: i64) -> Self {
        Self {
            problem: ProblemKey::new(p, Route::Engine(None), MathType::Default),
            scalars: (alpha.to_bits(), beta.to_bits()),
            align,
        }
    }
}

/// A plan is the engine configuration built for one operation graph (by the graph's
/// address: the entry keeps its graph alive, so no other graph can take that address).
pub(crate) type PlanKey = (usize, EngineConfig);

/// What the graph-API path keeps per context, each cache bounded.
#[derive(Default)]
pub(crate) struct EngineCache {
    pub(crate) graphs: BoundedCache<GraphKey, std::rc::Rc<OpGraph>>,
    pub(crate) plans: BoundedCache<PlanKey, (std::rc::Rc<OpGraph>, std::rc::Rc<Plan>)>,
    /// `BestEngine`'s choice per problem and math type.
    pub(crate) choices: BoundedCache<ProblemKey, EngineConfig>,
    /// `DefaultAlgo`'s untimed choice per problem and math type.
    pub(crate) defaults: BoundedCache<ProblemKey, EngineConfig>,
    /// `DefaultAlgo`'s measured choice per problem and math type (benchmarking on).
    pub(crate) measured: BoundedCache<ProblemKey, Engine>,
    /// The plan a call settled on, per graph (by address, kept alive here), configuration
    /// asked for and heuristic fallen back on, with the workspace bytes it had (see
    /// `CudnnContext::first_plan`).
    pub(crate) settled: BoundedCache<SettledKey, Settled>,
    /// What the default choice's calls (alpha 1, beta 0) of a problem and math type
    /// resolved to (see `CudnnContext::remember_default`).
    pub(crate) resolved: BoundedCache<ProblemKey, std::rc::Rc<Resolved>>,
}

impl EngineCache {
    /// Drops the plans built with another handle than the context's own, and the
    /// settled and resolved calls that run them: for caches that outlive the handles of
    /// the other contexts (see `CudnnContext::take_learned`).
    pub(crate) fn keep_own_plans(&mut self) {
        self.plans.retain(|_, (_, plan)| plan.is_own());
        self.settled.retain(|_, (_, plan, _)| plan.is_own());
        self.resolved.retain(|_, r| match &r.runs {
            Runs::Plan { plan, .. } => plan.is_own(),
            Runs::Direct(_) => true,
        });
    }
}

/// A default-choice call (alpha 1, beta 0) resolved once: the plan the addresses'
/// alignment and the workspace led to (or the depthwise kernel of our own), and what a
/// later call of the problem must match to run that again without resolving or
/// validating anything.
pub(crate) struct Resolved {
    pub(crate) runs: Runs,
    /// The workspace bytes the call had (0: none); the plan needs at most these.
    pub(crate) workspace: usize,
    /// The alignment of the addresses the plan was built for (see [`alignment`]).
    pub(crate) align: i64,
    /// The call's key for CUDA-graph replay: the problem with the plan's configuration.
    pub(crate) replay: ProblemKey,
}

/// What a resolved call runs.
pub(crate) enum Runs {
    /// A graph-API plan, its graph kept alive with it.
    Plan {
        _graph: std::rc::Rc<OpGraph>,
        plan: std::rc::Rc<Plan>,
    },
    /// The depthwise kernel of our own (see `direct.rs`): any alignment; no workspace, or
    /// (an NHWC problem run on NCHW copies) the copies'.
    Direct(std::rc::Rc<super::direct::Direct>),
}

/// A settled plan, its graph (kept alive) and the workspace bytes the call had.
pub(crate) type Settled = (std::rc::Rc<OpGraph>, std::rc::Rc<Plan>, usize);

/// A graph's address, the configuration asked for, the heuristic to fall back on.
pub(crate) type SettledKey = (usize, EngineConfig, Sources);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heuristic_read_in_part_is_asked_once_more_for_all() {
        // Its first configurations did not cover the list: asked again, for all of them.
        assert!(read_in_part(FIRST_READ, FIRST_READ + 1));
        // They covered it: not asked again.
        assert!(!read_in_part(FIRST_READ, FIRST_READ));
        assert!(!read_in_part(FIRST_READ, 0));
        // Asked for all it may hand out: never again, even where it lists more (else the
        // walk would ask the same heuristic forever).
        assert!(!read_in_part(MAX_CANDIDATES, MAX_CANDIDATES + 1));
    }

    #[test]
    fn strides_follow_the_memory_format() {
        assert_eq!(
            strides(&[2, 3, 4, 5], Format::Nchw).unwrap(),
            vec![60, 20, 5, 1]
        );
        assert_eq!(
            strides(&[2, 3, 4, 5], Format::Nhwc).unwrap(),
            vec![60, 1, 15, 3]
        );
        assert_eq!(
            strides(&[2, 3, 4, 5, 6], Format::Nhwc).unwrap(),
            vec![360, 1, 90, 18, 3]
        );
        assert!(strides(&[2, 32, 4, 5], Format::NchwVectC8x32).is_err());
    }

    #[test]
    fn notes_filter_by_math_type_and_compute_type() {
        let tc = Notes {
            tensor_core: true,
            ..Notes::default()
        };
        assert!(tc.fit(MathType::Default, DType::F32));
        assert!(!tc.fit(MathType::Fma, DType::F32));
        let down = Notes {
            down_convert: true,
            ..Notes::default()
        };
        assert!(!down.fit(MathType::TensorOp, DType::F32));
        assert!(down.fit(MathType::TensorOpAllowConversion, DType::F32));
        let reduced = Notes {
            reduced_precision: true,
            ..Notes::default()
        };
        assert!(reduced.fit(MathType::Default, DType::F16));
        assert!(!reduced.fit(MathType::Default, DType::F32));
        let jit = Notes {
            runtime_compiled: true,
            tensor_core: true,
            ..Notes::default()
        };
        assert!(jit.fit(MathType::Default, DType::F16));
        assert!(!jit.fit(MathType::Fma, DType::F16));
        assert_eq!(Notes::default().math_type(), MathType::Fma);
        assert_eq!(
            Notes {
                nondeterministic: true,
                ..Notes::default()
            }
            .determinism(),
            Determinism::NonDeterministic
        );
    }

    #[test]
    fn alignment_is_the_largest_common_power_of_two() {
        let p = |w, dy, dx| RawPointers {
            w,
            dy,
            dx,
            workspace: (0, 0),
        };
        assert_eq!(alignment(&p(256, 512, 1024)), 16);
        assert_eq!(alignment(&p(256, 516, 1024)), 4);
        assert_eq!(alignment(&p(258, 512, 1024)), 2);
        assert_eq!(alignment(&p(257, 512, 1024)), 1);
    }
}
