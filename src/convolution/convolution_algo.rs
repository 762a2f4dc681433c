//! Backward-data algorithms as marker types, and what cuDNN's heuristic or measurement
//! returns.

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
}

impl AlgoKind {
    pub const ALL: [AlgoKind; 7] = [
        AlgoKind::DataAlgo0,
        AlgoKind::DataAlgo1,
        AlgoKind::Fft,
        AlgoKind::FftTiling,
        AlgoKind::Winograd,
        AlgoKind::WinogradNonFused,
        AlgoKind::BestHeuristic,
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
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The fixed cuDNN algorithm, `None` for `BestHeuristic`.
    pub const fn fixed(self) -> Option<BwdDataAlgo> {
        match self {
            AlgoKind::DataAlgo0 => Some(BwdDataAlgo::Algo0),
            AlgoKind::DataAlgo1 => Some(BwdDataAlgo::Algo1),
            AlgoKind::Fft => Some(BwdDataAlgo::Fft),
            AlgoKind::FftTiling => Some(BwdDataAlgo::FftTiling),
            AlgoKind::Winograd => Some(BwdDataAlgo::Winograd),
            AlgoKind::WinogradNonFused => Some(BwdDataAlgo::WinogradNonFused),
            AlgoKind::BestHeuristic => None,
        }
    }
}

/// A backward-data algorithm usable with `CudnnContext::convolution_backward_data`.
/// Sealed.
pub trait ConvolutionBwdDataAlgo: Sealed {
    /// The raw algorithm to run (named as in the original crate).
    #[allow(clippy::wrong_self_convention)]
    fn into_raw(&self) -> cudnnConvolutionBwdDataAlgo_t {
        self.algo().into_raw()
    }

    /// The run-time algorithm to run.
    fn algo(&self) -> BwdDataAlgo;

    /// The support-table column this type is checked against.
    fn kind(&self) -> AlgoKind;

    /// The math type cuDNN said to run the algorithm with (heuristic and measured
    /// results); `None` for the fixed algorithms, which run with the descriptor's.
    fn math_type(&self) -> Option<MathType> {
        None
    }
}

macro_rules! algo_marker {
    ($(#[$doc:meta])* $name:ident => $algo:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name;
        impl Sealed for $name {}
        impl ConvolutionBwdDataAlgo for $name {
            fn algo(&self) -> BwdDataAlgo {
                BwdDataAlgo::$algo
            }
            fn kind(&self) -> AlgoKind {
                AlgoKind::$name
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
    fn algo(&self) -> BwdDataAlgo {
        self.runtime_algo
    }
    fn kind(&self) -> AlgoKind {
        AlgoKind::BestHeuristic
    }
    fn math_type(&self) -> Option<MathType> {
        Some(self.math_type)
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
            (b.algo(), b.kind()),
            (BwdDataAlgo::Fft, AlgoKind::BestHeuristic)
        );
        assert_eq!(b.workspace_size(), 128);
    }
}
