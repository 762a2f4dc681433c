//! Backward-data algorithms as marker types, and what cuDNN's heuristic or measurement
//! returns: the six algorithms of the legacy API, and engines of cuDNN's graph (backend)
//! API (`Engine`, `BestEngine`).

use cudarc::cudnn::sys::cudnnConvolutionBwdDataAlgo_t;

use crate::determinism::Determinism;
use crate::math_type::MathType;
use crate::private::Sealed;

/// Run-time name of a backward-data algorithm (the six of `cudnnConvolutionBwdDataAlgo_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BwdDataAlgo {
    Algo0,
    Algo1,
    Fft,
    FftTiling,
    Winograd,
    WinogradNonFused,
}

impl BwdDataAlgo {
    pub const ALL: [BwdDataAlgo; 6] = [
        BwdDataAlgo::Algo0,
        BwdDataAlgo::Algo1,
        BwdDataAlgo::Fft,
        BwdDataAlgo::FftTiling,
        BwdDataAlgo::Winograd,
        BwdDataAlgo::WinogradNonFused,
    ];

    /// What cuDNN reports for the algorithm: `Algo0` sums partial products with
    /// atomics, so its results can differ from run to run; the others are
    /// deterministic. The CPU device reports the same, so that its answers (and the
    /// `deterministic` filters) match a GPU's.
    pub const fn determinism(self) -> Determinism {
        match self {
            BwdDataAlgo::Algo0 => Determinism::NonDeterministic,
            BwdDataAlgo::Algo1
            | BwdDataAlgo::Fft
            | BwdDataAlgo::FftTiling
            | BwdDataAlgo::Winograd
            | BwdDataAlgo::WinogradNonFused => Determinism::Deterministic,
        }
    }

    pub const fn into_raw(self) -> cudnnConvolutionBwdDataAlgo_t {
        use cudnnConvolutionBwdDataAlgo_t as R;
        match self {
            BwdDataAlgo::Algo0 => R::CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
            BwdDataAlgo::Algo1 => R::CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
            BwdDataAlgo::Fft => R::CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
            BwdDataAlgo::FftTiling => R::CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
            BwdDataAlgo::Winograd => R::CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD,
            BwdDataAlgo::WinogradNonFused => R::CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
        }
    }

    /// Maps a raw value cuDNN wrote; `None` for values outside the six algorithms.
    pub const fn from_raw(raw: u32) -> Option<Self> {
        match raw {
            0 => Some(BwdDataAlgo::Algo0),
            1 => Some(BwdDataAlgo::Algo1),
            2 => Some(BwdDataAlgo::Fft),
            3 => Some(BwdDataAlgo::FftTiling),
            4 => Some(BwdDataAlgo::Winograd),
            5 => Some(BwdDataAlgo::WinogradNonFused),
            _ => None,
        }
    }

    /// The marker type's name (`"DataAlgo0"`, ...).
    pub const fn name(self) -> &'static str {
        self.kind().name()
    }

    /// The support-table algorithm this raw algorithm is.
    pub const fn kind(self) -> AlgoKind {
        match self {
            BwdDataAlgo::Algo0 => AlgoKind::DataAlgo0,
            BwdDataAlgo::Algo1 => AlgoKind::DataAlgo1,
            BwdDataAlgo::Fft => AlgoKind::Fft,
            BwdDataAlgo::FftTiling => AlgoKind::FftTiling,
            BwdDataAlgo::Winograd => AlgoKind::Winograd,
            BwdDataAlgo::WinogradNonFused => AlgoKind::WinogradNonFused,
        }
    }
}

/// The algorithm column of the support table: one per marker type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AlgoKind {
    DataAlgo0,
    DataAlgo1,
    Fft,
    FftTiling,
    Winograd,
    WinogradNonFused,
    /// Whatever cuDNN's heuristic (or measurement) picked; admitted wherever any
    /// algorithm is.
    BestHeuristic,
    /// One engine of cuDNN's graph API, as `get_/find_convolution_backward_data_engine`
    /// return it.
    Engine,
    /// The graph API's heuristic choice of engine for the problem, made once per problem.
    BestEngine,
    /// The library's default choice (what the one-call API runs): untimed and the same in
    /// every process for a problem, cuDNN and GPU, or, on a context with benchmarking on,
    /// the fastest engine measured once per problem. Admitted on every configuration.
    DefaultAlgo,
}

impl AlgoKind {
    pub const ALL: [AlgoKind; 10] = [
        AlgoKind::DataAlgo0,
        AlgoKind::DataAlgo1,
        AlgoKind::Fft,
        AlgoKind::FftTiling,
        AlgoKind::Winograd,
        AlgoKind::WinogradNonFused,
        AlgoKind::BestHeuristic,
        AlgoKind::Engine,
        AlgoKind::BestEngine,
        AlgoKind::DefaultAlgo,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            AlgoKind::DataAlgo0 => "DataAlgo0",
            AlgoKind::DataAlgo1 => "DataAlgo1",
            AlgoKind::Fft => "Fft",
            AlgoKind::FftTiling => "FftTiling",
            AlgoKind::Winograd => "Winograd",
            AlgoKind::WinogradNonFused => "WinogradNonFused",
            AlgoKind::BestHeuristic => "BestHeuristic",
            AlgoKind::Engine => "Engine",
            AlgoKind::BestEngine => "BestEngine",
            AlgoKind::DefaultAlgo => "DefaultAlgo",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether the kind runs through the graph API.
    pub const fn is_engine(self) -> bool {
        matches!(
            self,
            AlgoKind::Engine | AlgoKind::BestEngine | AlgoKind::DefaultAlgo
        )
    }

    /// The fixed cuDNN algorithm, `None` for `BestHeuristic` and the engines.
    pub const fn fixed(self) -> Option<BwdDataAlgo> {
        match self {
            AlgoKind::DataAlgo0 => Some(BwdDataAlgo::Algo0),
            AlgoKind::DataAlgo1 => Some(BwdDataAlgo::Algo1),
            AlgoKind::Fft => Some(BwdDataAlgo::Fft),
            AlgoKind::FftTiling => Some(BwdDataAlgo::FftTiling),
            AlgoKind::Winograd => Some(BwdDataAlgo::Winograd),
            AlgoKind::WinogradNonFused => Some(BwdDataAlgo::WinogradNonFused),
            AlgoKind::BestHeuristic
            | AlgoKind::Engine
            | AlgoKind::BestEngine
            | AlgoKind::DefaultAlgo => None,
        }
    }
}

/// The most knob choices an [`EngineConfig`] holds (cuDNN 9's engines set fewer).
pub const MAX_KNOBS: usize = 24;

/// A graph-API engine configuration: the engine's global index and its knob choices
/// (`(knob type, value)` as cuDNN numbers them). Enough to build the same execution plan
/// again for any problem the engine accepts.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct EngineConfig {
    index: i64,
    len: u8,
    kinds: [u8; MAX_KNOBS],
    values: [i64; MAX_KNOBS],
}

impl EngineConfig {
    /// `None` when the index is negative, there are more than [`MAX_KNOBS`] knobs, or a
    /// knob type is out of cuDNN's range.
    pub fn new(index: i64, knobs: &[(u32, i64)]) -> Option<Self> {
        if index < 0 || knobs.len() > MAX_KNOBS {
            return None;
        }
        let mut kinds = [0u8; MAX_KNOBS];
        let mut values = [0i64; MAX_KNOBS];
        for (i, &(k, v)) in knobs.iter().enumerate() {
            kinds[i] = u8::try_from(k).ok()?;
            values[i] = v;
        }
        Some(Self {
            index,
            len: u8::try_from(knobs.len()).ok()?,
            kinds,
            values,
        })
    }

    /// The engine's global index.
    pub fn index(&self) -> i64 {
        self.index
    }

    /// The knob choices, `(knob type, value)`.
    pub fn knobs(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        let n = usize::from(self.len);
        self.kinds[..n]
            .iter()
            .zip(&self.values[..n])
            .map(|(&k, &v)| (u32::from(k), v))
    }
}

impl std::fmt::Debug for EngineConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::fmt::Display for EngineConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "engine {}", self.index)?;
        for (i, (k, v)) in self.knobs().enumerate() {
            write!(f, "{}k{k}={v}", if i == 0 { " [" } else { ", " })?;
        }
        if self.len > 0 {
            write!(f, "]")?;
        }
        Ok(())
    }
}

/// How a call runs: which cuDNN entry point, with which algorithm or engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
// Kept `Copy` and allocation-free: it is part of the per-call cache keys.
#[allow(clippy::large_enum_variant)]
pub enum Route {
    /// `cudnnConvolutionBackwardData` with this algorithm.
    Legacy(BwdDataAlgo),
    /// The graph API with this engine configuration, or (`None`) with the engine its
    /// heuristic picks for the problem.
    Engine(Option<EngineConfig>),
    /// The graph API with the context's default choice for the problem (see
    /// [`DefaultAlgo`]).
    Default,
}

impl Route {
    /// What the route runs, for messages.
    pub fn describe(&self) -> String {
        match self {
            Route::Legacy(a) => a.name().to_string(),
            Route::Engine(Some(c)) => format!("graph-API {c}"),
            Route::Engine(None) => "BestEngine".to_string(),
            Route::Default => "DefaultAlgo".to_string(),
        }
    }
}

/// The algorithm a call runs with, at run time: each variant carries exactly what its
/// choice needs, so the support-table column ([`Self::kind`]), the entry point
/// ([`Self::route`]) and the math type ([`Self::math_type`]) follow from it and cannot
/// disagree. Every [`ConvolutionBwdDataAlgo`] says which it is; the Python layer reads
/// one from its algorithm argument.
#[derive(Debug, Clone, Copy, PartialEq)]
// Kept `Copy`: resolved once per call, passed by value.
#[allow(clippy::large_enum_variant)]
pub enum SelectedAlgo {
    /// One of the six legacy algorithms (`DataAlgo0`, ...), run with the descriptor's
    /// math type.
    Fixed(BwdDataAlgo),
    /// A legacy algorithm cuDNN chose (heuristic or measured), run with the math type it
    /// named where the descriptor admits it.
    Heuristic(BestHeuristic),
    /// One graph-API engine configuration.
    Engine(Engine),
    /// The graph API's heuristic choice for the problem ([`BestEngine`]).
    BestEngine,
    /// The context's default choice ([`DefaultAlgo`]).
    Default,
}

impl SelectedAlgo {
    /// The support-table column the call is checked against.
    pub const fn kind(&self) -> AlgoKind {
        match self {
            SelectedAlgo::Fixed(algo) => algo.kind(),
            SelectedAlgo::Heuristic(_) => AlgoKind::BestHeuristic,
            SelectedAlgo::Engine(_) => AlgoKind::Engine,
            SelectedAlgo::BestEngine => AlgoKind::BestEngine,
            SelectedAlgo::Default => AlgoKind::DefaultAlgo,
        }
    }

    /// How the call runs.
    pub fn route(&self) -> Route {
        match self {
            SelectedAlgo::Fixed(algo) => Route::Legacy(*algo),
            SelectedAlgo::Heuristic(b) => Route::Legacy(b.algo()),
            SelectedAlgo::Engine(e) => Route::Engine(Some(e.config())),
            SelectedAlgo::BestEngine => Route::Engine(None),
            SelectedAlgo::Default => Route::Default,
        }
    }

    /// The math type the record asks for (heuristic and measured legacy results); `None`
    /// where the call runs with the descriptor's.
    pub fn math_type(&self) -> Option<MathType> {
        match self {
            SelectedAlgo::Heuristic(b) => Some(b.math_type()),
            _ => None,
        }
    }
}

/// A backward-data algorithm usable with `CudnnContext::convolution_backward_data`.
/// Sealed.
pub trait ConvolutionBwdDataAlgo: Sealed {
    /// The raw algorithm to run (named as in the original crate). Graph-API engines have
    /// no legacy algorithm: for them this is the enum's end marker,
    /// `CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT`, which names none.
    #[allow(clippy::wrong_self_convention)]
    fn into_raw(&self) -> cudnnConvolutionBwdDataAlgo_t {
        match self.route() {
            Route::Legacy(algo) => algo.into_raw(),
            Route::Engine(_) | Route::Default => {
                cudnnConvolutionBwdDataAlgo_t::CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT
            }
        }
    }

    /// What the call runs with, as a run-time value.
    fn selected(&self) -> SelectedAlgo;

    /// How the call runs.
    fn route(&self) -> Route {
        self.selected().route()
    }

    /// The support-table column this type is checked against.
    fn kind(&self) -> AlgoKind {
        self.selected().kind()
    }

    /// The math type cuDNN said to run the algorithm with (heuristic and measured
    /// results); `None` for the fixed algorithms, which run with the descriptor's.
    fn math_type(&self) -> Option<MathType> {
        self.selected().math_type()
    }
}

macro_rules! algo_marker {
    ($(#[$doc:meta])* $name:ident => $algo:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name;
        impl Sealed for $name {}
        impl ConvolutionBwdDataAlgo for $name {
            fn selected(&self) -> SelectedAlgo {
                SelectedAlgo::Fixed(BwdDataAlgo::$algo)
            }
        }
    };
}

algo_marker!(
    /// `CUDNN_CONVOLUTION_BWD_DATA_ALGO_0`: sum of matrix products with atomics
    /// (non-deterministic).
    DataAlgo0 => Algo0
);
algo_marker!(
    /// `CUDNN_CONVOLUTION_BWD_DATA_ALGO_1`: implicit matrix product (deterministic).
    DataAlgo1 => Algo1
);
algo_marker!(
    /// `..._ALGO_FFT`: FFT, large workspace. Also a forward algorithm in the original.
    Fft => Fft
);
algo_marker!(
    /// `..._ALGO_FFT_TILING`: tiled FFT, less workspace than `Fft` for large images.
    FftTiling => FftTiling
);
algo_marker!(
    /// `..._ALGO_WINOGRAD`: fused Winograd transform.
    Winograd => Winograd
);
algo_marker!(
    /// `..._ALGO_WINOGRAD_NONFUSED`: Winograd with a larger workspace.
    WinogradNonFused => WinogradNonFused
);

/// An algorithm chosen by cuDNN (heuristic or measured), with what cuDNN said of it.
///
/// The type parameter is the raw algorithm, as in the original crate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BestHeuristic<T = cudnnConvolutionBwdDataAlgo_t> {
    algo: T,
    runtime_algo: BwdDataAlgo,
    time: f32,
    workspace_size: usize,
    determinism: Determinism,
    math_type: MathType,
}

impl BestHeuristic<cudnnConvolutionBwdDataAlgo_t> {
    /// Builds the record; `time` is in milliseconds (negative when not measured).
    pub fn new(
        algo: BwdDataAlgo,
        time: f32,
        workspace_size: usize,
        determinism: Determinism,
        math_type: MathType,
    ) -> Self {
        Self {
            algo: algo.into_raw(),
            runtime_algo: algo,
            time,
            workspace_size,
            determinism,
            math_type,
        }
    }

    /// The raw algorithm.
    pub fn raw_algo(&self) -> cudnnConvolutionBwdDataAlgo_t {
        self.algo
    }

    /// The algorithm, as a run-time value.
    pub fn algo(&self) -> BwdDataAlgo {
        self.runtime_algo
    }

    /// Milliseconds cuDNN measured (`find`), or -1 when it only guessed (heuristic).
    pub fn time(&self) -> f32 {
        self.time
    }

    /// Workspace bytes the algorithm needs.
    pub fn workspace_size(&self) -> usize {
        self.workspace_size
    }

    pub fn determinism(&self) -> Determinism {
        self.determinism
    }

    /// The math mode cuDNN will use with this algorithm.
    pub fn math_type(&self) -> MathType {
        self.math_type
    }
}

impl Sealed for BestHeuristic<cudnnConvolutionBwdDataAlgo_t> {}
impl ConvolutionBwdDataAlgo for BestHeuristic<cudnnConvolutionBwdDataAlgo_t> {
    fn selected(&self) -> SelectedAlgo {
        SelectedAlgo::Heuristic(*self)
    }
}

/// `BestEngine`: the graph API's heuristic choice of engine for the problem (the first of
/// cuDNN's ranked engines that builds and fits the descriptor's math type), chosen on the
/// first call or workspace query for a problem and kept on the context. Admitted where the
/// support table lists `Engine`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BestEngine;

impl Sealed for BestEngine {}
impl ConvolutionBwdDataAlgo for BestEngine {
    fn selected(&self) -> SelectedAlgo {
        SelectedAlgo::BestEngine
    }
}

/// `DefaultAlgo`: the library's default choice, what the one-call API runs when given no
/// algorithm. Without benchmarking it is made without timing, as PyTorch's cuDNN path
/// makes it: the graph API's instant heuristic (mode A) and then its fallback list, with
/// engines that convert inputs down (unless the math type allows it) or use tensor cores
/// under `MathType::Fma` (or, asked for determinism, non-deterministic ones) left out;
/// the first that builds wins. The same problem gets the same engine in every process
/// for a given cuDNN and GPU. On a context with benchmarking on
/// ([`crate::CudnnContext::set_benchmark`]), the engine configurations mode A and the
/// fallback list rank (staged, within a time budget; see
/// [`crate::CudnnContext::set_benchmark`]) are timed once per problem on scratch buffers
/// and the fastest is kept. Chosen on
/// the first call or workspace query and kept on the context; admitted on every
/// configuration of the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DefaultAlgo;

impl Sealed for DefaultAlgo {}
impl ConvolutionBwdDataAlgo for DefaultAlgo {
    fn selected(&self) -> SelectedAlgo {
        SelectedAlgo::Default
    }
}

/// One graph-API engine configuration for a problem, with what cuDNN said of it and (from
/// `find_convolution_backward_data_engine`) what it measured. Usable as the algorithm of
/// any call the support table admits `Engine` for; cuDNN answers `NOT_SUPPORTED` when the
/// engine does not run another problem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Engine {
    config: EngineConfig,
    time: f32,
    workspace_size: usize,
    determinism: Determinism,
    math_type: MathType,
}

impl Engine {
    /// Builds the record; `time` is in milliseconds (negative when not measured),
    /// `math_type` is `TensorOp` for engines on tensor cores and `Fma` otherwise.
    pub fn new(
        config: EngineConfig,
        time: f32,
        workspace_size: usize,
        determinism: Determinism,
        math_type: MathType,
    ) -> Self {
        Self {
            config,
            time,
            workspace_size,
            determinism,
            math_type,
        }
    }

    pub fn config(&self) -> EngineConfig {
        self.config
    }

    /// Milliseconds measured (`find`), or -1 when only ranked (heuristic).
    pub fn time(&self) -> f32 {
        self.time
    }

    /// Workspace bytes the engine needs for the problem it was chosen for.
    pub fn workspace_size(&self) -> usize {
        self.workspace_size
    }

    pub fn determinism(&self) -> Determinism {
        self.determinism
    }

    /// `TensorOp` when the engine runs on tensor cores (TF32 for f32 data), else `Fma`.
    pub fn math_type(&self) -> MathType {
        self.math_type
    }

    /// The same engine with a measured time.
    #[must_use]
    pub fn with_time(mut self, time: f32) -> Self {
        self.time = time;
        self
    }
}

impl Sealed for Engine {}
impl ConvolutionBwdDataAlgo for Engine {
    fn selected(&self) -> SelectedAlgo {
        SelectedAlgo::Engine(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_round_trip_and_kinds_match_markers() {
        for a in BwdDataAlgo::ALL {
            assert_eq!(BwdDataAlgo::from_raw(a.into_raw() as u32), Some(a));
            assert_eq!(a.kind().fixed(), Some(a));
        }
        assert_eq!(BwdDataAlgo::from_raw(6), None);
        assert_eq!(DataAlgo1.kind(), AlgoKind::DataAlgo1);
        assert_eq!(DataAlgo1.route(), Route::Legacy(BwdDataAlgo::Algo1));
        assert_eq!(
            BestEngine.into_raw(),
            cudnnConvolutionBwdDataAlgo_t::CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT
        );
        assert_eq!(
            WinogradNonFused.into_raw(),
            cudnnConvolutionBwdDataAlgo_t::CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED
        );
        for k in AlgoKind::ALL {
            assert_eq!(AlgoKind::from_name(k.name()), Some(k));
        }
        let b = BestHeuristic::new(
            BwdDataAlgo::Fft,
            -1.0,
            128,
            Determinism::Deterministic,
            MathType::Fma,
        );
        assert_eq!(
            (b.route(), b.kind()),
            (Route::Legacy(BwdDataAlgo::Fft), AlgoKind::BestHeuristic)
        );
        assert_eq!(b.workspace_size(), 128);
        assert_eq!(ConvolutionBwdDataAlgo::math_type(&b), Some(MathType::Fma));
    }

    #[test]
    fn a_selection_names_one_column_and_one_route() {
        // Each variant's column and route agree: legacy kinds go to the legacy API with
        // their own algorithm, the engine kinds to the graph API.
        let best = BestHeuristic::new(
            BwdDataAlgo::Winograd,
            -1.0,
            0,
            Determinism::Deterministic,
            MathType::TensorOp,
        );
        let config = EngineConfig::new(3, &[]).unwrap();
        let engine = Engine::new(config, -1.0, 0, Determinism::Deterministic, MathType::Fma);
        let cases = [
            (
                DataAlgo0.selected(),
                AlgoKind::DataAlgo0,
                Route::Legacy(BwdDataAlgo::Algo0),
            ),
            (
                best.selected(),
                AlgoKind::BestHeuristic,
                Route::Legacy(BwdDataAlgo::Winograd),
            ),
            (
                engine.selected(),
                AlgoKind::Engine,
                Route::Engine(Some(config)),
            ),
            (
                BestEngine.selected(),
                AlgoKind::BestEngine,
                Route::Engine(None),
            ),
            (
                DefaultAlgo.selected(),
                AlgoKind::DefaultAlgo,
                Route::Default,
            ),
        ];
        for (sel, kind, route) in cases {
            assert_eq!((sel.kind(), sel.route()), (kind, route), "{sel:?}");
            assert_eq!(kind.is_engine(), !matches!(route, Route::Legacy(_)));
            if let (Some(fixed), Route::Legacy(a)) = (kind.fixed(), route) {
                assert_eq!(fixed, a);
            }
        }
        assert_eq!(best.selected().math_type(), Some(MathType::TensorOp));
        assert_eq!(DataAlgo0.selected().math_type(), None);
    }

    #[test]
    fn engine_configs_keep_their_knobs() {
        let c = EngineConfig::new(7, &[(3, 1), (12, -4)]).unwrap();
        assert_eq!(c.index(), 7);
        assert_eq!(c.knobs().collect::<Vec<_>>(), vec![(3, 1), (12, -4)]);
        assert!(std::mem::size_of::<Route>() <= 256);
        assert!(EngineConfig::new(1, &[(256, 0)]).is_none());
        assert_eq!(c.to_string(), "engine 7 [k3=1, k12=-4]");
        assert_eq!(EngineConfig::new(2, &[]).unwrap().to_string(), "engine 2");
        assert!(EngineConfig::new(-1, &[]).is_none());
        assert!(EngineConfig::new(0, &[(0, 0); MAX_KNOBS + 1]).is_none());
        assert_ne!(c, EngineConfig::new(7, &[(3, 1)]).unwrap());
        let e = Engine::new(c, -1.0, 64, Determinism::Deterministic, MathType::Fma);
        assert_eq!(
            (e.route(), e.kind(), e.with_time(0.5).time()),
            (Route::Engine(Some(c)), AlgoKind::Engine, 0.5)
        );
        assert_eq!(BestEngine.route(), Route::Engine(None));
        assert_eq!(e.selected(), SelectedAlgo::Engine(e));
        assert_eq!(ConvolutionBwdDataAlgo::math_type(&e), None);
        assert!(AlgoKind::BestEngine.is_engine() && AlgoKind::BestEngine.fixed().is_none());
    }
}
