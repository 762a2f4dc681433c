//! THE support table for backward-data convolution.
//!
//! One macro table below produces:
//! - the `SupportedConvBwdData` impls (an unsupported combination does not compile),
//! - [`support_rows`], the run-time rows the Python layer and the CPU device check,
//! - the Python layer's dispatch to the generic instance of each row,
//! - the documentation table and the stub overloads (rendered by the `xtask` crate,
//!   outside the shipped library: `cargo run -p xtask -- stubs readme`).
//!
//! Each line is one configuration (filter type and format, `dy` type and format, compute
//! type, `dx` type and format, tensor rank D, spatial rank N) with the algorithms cuDNN
//! runs for it. `BestHeuristic` (the legacy heuristic's pick) is listed on every line that
//! has a legacy algorithm: it is the union of those, which the original crate meant but
//! did not do (it left out the NHWC-filter lines). `Engine` and `BestEngine` are the graph
//! (backend) API (see `crate::bwd_data::graph`), listed wherever it ran.
//!
//! Provenance: every line below was executed on an H200 with cuDNN 9.14 (system) and
//! 9.19 (pip wheel) by `examples/gpu_sweep.rs` (all six algorithms and the graph API's
//! heuristic engine x f32/f64/f16/bf16 x
//! compute types x the eight (filter, dy, dx) format combinations x 2-d/3-d x ten shapes,
//! fresh random inputs, poisoned output, compared with the CPU reference); the results are
//! in `tests/data/sweep_*.csv` and `bench/support_from_sweep.py` derives the lines from
//! them. A pair is listed when, in both builds, it matched the reference on at least one
//! shape and never gave a wrong result.
//!
//! Shape-dependent limits (cuDNN answers `NOT_SUPPORTED` for other shapes; see
//! [`algorithm_limits`], which the error message quotes):
//! - `Fft`: stride 1 and dilation 1 only.
//! - `FftTiling`: dilation 1 only (3-d: stride 1 too); f64 2-d: 1x1 filters only.
//! - `WinogradNonFused`: 3x3 and 5x5 filters (true half: 3x3), stride 1, dilation 1.
//! - `DataAlgo0`, `DataAlgo1`: every shape swept.
//!
//! Removed from the original crate's rows, with the measurement:
//! - `Winograd` (fused) for f32 NCHW dx and f32 NHWC dx: `NOT_SUPPORTED` for every shape in
//!   both builds, 3x3 stride 1 included (cuDNN 9 no longer runs fused Winograd here).
//!
//! Added: every f16/bf16 line, `DataAlgo1` for 3-d f64, and the mixed-format
//! (NCHW filter and dy, NHWC dx) half lines. The graph API ran every one of the 80
//! configurations (8 format combinations x 5 type/compute pairs x 2-d/3-d) on every shape
//! in both builds, 1600 runs, none wrong (`tests/data/sweep_engine_*.csv`): the lines
//! whose format combination no legacy algorithm runs (NHWC dy with an NCHW filter, NCHW
//! dy with an NHWC filter, NHWC filter and dy with NCHW dx) list only the engines. Never
//! admitted: integer types (`NOT_SUPPORTED` for backward data).

use crate::convolution::convolution_algo::AlgoKind;
use crate::data_type::{DType, DataType};
use crate::error::UnsupportedConfiguration;
use crate::tensor::Format;
#[cfg(test)]
use crate::tensor::TensorFormat;

/// Marker trait: algorithm `Self` runs backward-data with a `FilterType`/`FilterFmt`
/// filter, `OutGradType`/`OutGradFmt` output gradient `dy`, `CompType` convolution
/// descriptor and `InGradType`/`InGradFmt` input gradient `dx`, tensors of rank `D`,
/// convolution of spatial rank `N`. Implemented only by the table below.
pub trait SupportedConvBwdData<
    FilterType,
    FilterFmt,
    OutGradType,
    OutGradFmt,
    CompType,
    InGradType,
    InGradFmt,
    const D: usize,
    const N: usize,
>: crate::private::Sealed
{
}

/// Invokes `$callback!` with the table. Kept as a macro so that the trait impls, the
/// run-time rows, the Python dispatch and the GPU row tests all expand from these very
/// lines. Exported (hidden) for the crate's own integration tests.
#[doc(hidden)]
#[macro_export]
macro_rules! with_bwd_data_support_table {
    ($callback:ident) => {
        $callback! {
            // filter        dy            comp  dx            D  N    algorithms
            // ---- 2-d, f32
            [f32, NCHW], [f32, NCHW], f32, [f32, NCHW], 4, 2 => [DataAlgo0, DataAlgo1, Fft, FftTiling, WinogradNonFused, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f32, NCHW], [f32, NCHW], f32, [f32, NHWC], 4, 2 => [DataAlgo0, DataAlgo1, WinogradNonFused, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f32, NHWC], [f32, NHWC], f32, [f32, NHWC], 4, 2 => [DataAlgo0, DataAlgo1, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f32, NCHW], [f32, NHWC], f32, [f32, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f32, NCHW], [f32, NHWC], f32, [f32, NHWC], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f32, NHWC], [f32, NCHW], f32, [f32, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f32, NHWC], [f32, NCHW], f32, [f32, NHWC], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f32, NHWC], [f32, NHWC], f32, [f32, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            // ---- 2-d, f64
            [f64, NCHW], [f64, NCHW], f64, [f64, NCHW], 4, 2 => [DataAlgo0, DataAlgo1, FftTiling, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f64, NCHW], [f64, NCHW], f64, [f64, NHWC], 4, 2 => [DataAlgo0, DataAlgo1, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f64, NHWC], [f64, NHWC], f64, [f64, NHWC], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f64, NCHW], [f64, NHWC], f64, [f64, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f64, NCHW], [f64, NHWC], f64, [f64, NHWC], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f64, NHWC], [f64, NCHW], f64, [f64, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f64, NHWC], [f64, NCHW], f64, [f64, NHWC], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f64, NHWC], [f64, NHWC], f64, [f64, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            // ---- 2-d, f16 storage, f32 compute ("pseudo half")
            [f16, NCHW], [f16, NCHW], f32, [f16, NCHW], 4, 2 => [DataAlgo0, DataAlgo1, Fft, FftTiling, WinogradNonFused, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NCHW], f32, [f16, NHWC], 4, 2 => [DataAlgo0, DataAlgo1, WinogradNonFused, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NHWC], f32, [f16, NHWC], 4, 2 => [DataAlgo0, DataAlgo1, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NHWC], f32, [f16, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NHWC], f32, [f16, NHWC], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NCHW], f32, [f16, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NCHW], f32, [f16, NHWC], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NHWC], f32, [f16, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            // ---- 2-d, f16 storage and f16 compute ("true half")
            [f16, NCHW], [f16, NCHW], f16, [f16, NCHW], 4, 2 => [DataAlgo0, DataAlgo1, WinogradNonFused, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NCHW], f16, [f16, NHWC], 4, 2 => [DataAlgo0, DataAlgo1, WinogradNonFused, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NHWC], f16, [f16, NHWC], 4, 2 => [DataAlgo0, DataAlgo1, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NHWC], f16, [f16, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NHWC], f16, [f16, NHWC], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NCHW], f16, [f16, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NCHW], f16, [f16, NHWC], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NHWC], f16, [f16, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            // ---- 2-d, bf16 storage, f32 compute
            [bf16, NCHW], [bf16, NCHW], f32, [bf16, NCHW], 4, 2 => [DataAlgo0, DataAlgo1, WinogradNonFused, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [bf16, NCHW], [bf16, NCHW], f32, [bf16, NHWC], 4, 2 => [DataAlgo0, DataAlgo1, WinogradNonFused, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [bf16, NHWC], [bf16, NHWC], f32, [bf16, NHWC], 4, 2 => [DataAlgo0, DataAlgo1, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [bf16, NCHW], [bf16, NHWC], f32, [bf16, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [bf16, NCHW], [bf16, NHWC], f32, [bf16, NHWC], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [bf16, NHWC], [bf16, NCHW], f32, [bf16, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [bf16, NHWC], [bf16, NCHW], f32, [bf16, NHWC], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            [bf16, NHWC], [bf16, NHWC], f32, [bf16, NCHW], 4, 2 => [Engine, BestEngine, DefaultAlgo];
            // ---- 3-d, f32
            [f32, NCHW], [f32, NCHW], f32, [f32, NCHW], 5, 3 => [DataAlgo0, DataAlgo1, FftTiling, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f32, NCHW], [f32, NCHW], f32, [f32, NHWC], 5, 3 => [DataAlgo0, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f32, NHWC], [f32, NHWC], f32, [f32, NHWC], 5, 3 => [DataAlgo1, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f32, NCHW], [f32, NHWC], f32, [f32, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f32, NCHW], [f32, NHWC], f32, [f32, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f32, NHWC], [f32, NCHW], f32, [f32, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f32, NHWC], [f32, NCHW], f32, [f32, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f32, NHWC], [f32, NHWC], f32, [f32, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            // ---- 3-d, f64
            [f64, NCHW], [f64, NCHW], f64, [f64, NCHW], 5, 3 => [DataAlgo0, DataAlgo1, FftTiling, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f64, NCHW], [f64, NCHW], f64, [f64, NHWC], 5, 3 => [DataAlgo0, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f64, NHWC], [f64, NHWC], f64, [f64, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f64, NCHW], [f64, NHWC], f64, [f64, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f64, NCHW], [f64, NHWC], f64, [f64, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f64, NHWC], [f64, NCHW], f64, [f64, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f64, NHWC], [f64, NCHW], f64, [f64, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f64, NHWC], [f64, NHWC], f64, [f64, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            // ---- 3-d, f16 storage, f32 compute ("pseudo half")
            [f16, NCHW], [f16, NCHW], f32, [f16, NCHW], 5, 3 => [DataAlgo0, DataAlgo1, FftTiling, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NCHW], f32, [f16, NHWC], 5, 3 => [DataAlgo0, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NHWC], f32, [f16, NHWC], 5, 3 => [DataAlgo1, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NHWC], f32, [f16, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NHWC], f32, [f16, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NCHW], f32, [f16, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NCHW], f32, [f16, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NHWC], f32, [f16, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            // ---- 3-d, f16 storage and f16 compute ("true half")
            [f16, NCHW], [f16, NCHW], f16, [f16, NCHW], 5, 3 => [DataAlgo1, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NCHW], f16, [f16, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NHWC], f16, [f16, NHWC], 5, 3 => [DataAlgo1, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NHWC], f16, [f16, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f16, NCHW], [f16, NHWC], f16, [f16, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NCHW], f16, [f16, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NCHW], f16, [f16, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [f16, NHWC], [f16, NHWC], f16, [f16, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            // ---- 3-d, bf16 storage, f32 compute
            [bf16, NCHW], [bf16, NCHW], f32, [bf16, NCHW], 5, 3 => [DataAlgo0, DataAlgo1, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [bf16, NCHW], [bf16, NCHW], f32, [bf16, NHWC], 5, 3 => [DataAlgo0, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [bf16, NHWC], [bf16, NHWC], f32, [bf16, NHWC], 5, 3 => [DataAlgo1, BestHeuristic, Engine, BestEngine, DefaultAlgo];
            [bf16, NCHW], [bf16, NHWC], f32, [bf16, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [bf16, NCHW], [bf16, NHWC], f32, [bf16, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [bf16, NHWC], [bf16, NCHW], f32, [bf16, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [bf16, NHWC], [bf16, NCHW], f32, [bf16, NHWC], 5, 3 => [Engine, BestEngine, DefaultAlgo];
            [bf16, NHWC], [bf16, NHWC], f32, [bf16, NCHW], 5, 3 => [Engine, BestEngine, DefaultAlgo];
        }
    };
}
#[allow(unused_imports)] // used by the Python layer's dispatch
pub(crate) use crate::with_bwd_data_support_table;

/// The shapes cuDNN 9 runs `algo` on (measured; quoted in `NOT_SUPPORTED` errors).
pub fn algorithm_limits(algo: crate::convolution::convolution_algo::BwdDataAlgo) -> &'static str {
    use crate::convolution::convolution_algo::BwdDataAlgo as A;
    match algo {
        A::Algo0 | A::Algo1 => "it ran every shape measured",
        A::Fft => "Fft runs stride 1, dilation 1 only",
        A::FftTiling => "FftTiling runs dilation 1 only (3-d: stride 1 too; f64 2-d: 1x1 filters only)",
        A::Winograd => "fused Winograd is not run by cuDNN 9 for backward data",
        A::WinogradNonFused => {
            "WinogradNonFused runs 3x3 and 5x5 filters (true half: 3x3) with stride 1 and dilation 1 only"
        }
    }
}

/// One run-time row: an (algorithm, configuration) pair the table admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SupportRow {
    pub algo: AlgoKind,
    pub filter: (DType, Format),
    pub dy: (DType, Format),
    pub comp: DType,
    pub dx: (DType, Format),
    /// Tensor rank D (4 or 5).
    pub tensor_dims: usize,
    /// Spatial rank N (2 or 3).
    pub conv_dims: usize,
}

impl SupportRow {
    /// The configuration part of the row (everything but the algorithm).
    pub fn config(&self) -> SupportConfig {
        SupportConfig {
            filter: self.filter,
            dy: self.dy,
            comp: self.comp,
            dx: self.dx,
            tensor_dims: self.tensor_dims,
            conv_dims: self.conv_dims,
        }
    }
}

impl std::fmt::Display for SupportRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} with {}", self.algo.name(), self.config())
    }
}

/// A configuration without the algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SupportConfig {
    pub filter: (DType, Format),
    pub dy: (DType, Format),
    pub comp: DType,
    pub dx: (DType, Format),
    pub tensor_dims: usize,
    pub conv_dims: usize,
}

impl std::fmt::Display for SupportConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "filter {} {}, dy {} {}, compute {}, dx {} {}, rank {} ({}-d)",
            self.filter.0,
            self.filter.1,
            self.dy.0,
            self.dy.1,
            self.comp,
            self.dx.0,
            self.dx.1,
            self.tensor_dims,
            self.conv_dims
        )
    }
}

/// One line of the table: a configuration and the algorithms it admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupportLine {
    pub config: SupportConfig,
    pub algos: &'static [AlgoKind],
}

macro_rules! expand_support_table {
    ($(
        [$wt:ident, $wf:ident], [$yt:ident, $yf:ident], $ct:ident, [$xt:ident, $xf:ident], $d:literal, $n:literal
        => [$($algo:ident),* $(,)?];
    )*) => {
        $(
            $(
                impl SupportedConvBwdData<$wt, $wf, $yt, $yf, $ct, $xt, $xf, $d, $n> for $algo {}
            )*
        )*

        /// The table's lines, in order.
        pub const SUPPORT_LINES: &[SupportLine] = &[$(
            SupportLine {
                config: SupportConfig {
                    filter: (<$wt as DataType>::DTYPE, <$wf as TensorFormat>::FORMAT),
                    dy: (<$yt as DataType>::DTYPE, <$yf as TensorFormat>::FORMAT),
                    comp: <$ct as DataType>::DTYPE,
                    dx: (<$xt as DataType>::DTYPE, <$xf as TensorFormat>::FORMAT),
                    tensor_dims: $d,
                    conv_dims: $n,
                },
                algos: &[$(AlgoKind::$algo,)*],
            },
        )*];
    };
}

mod impls {
    use super::{AlgoKind, DataType, SupportConfig, SupportLine, SupportedConvBwdData};
    #[allow(unused_imports)] // the table may name any algorithm; not every one is listed now
    use crate::convolution::convolution_algo::{
        BestEngine, DataAlgo0, DataAlgo1, DefaultAlgo, Engine, Fft, FftTiling, Winograd,
        WinogradNonFused,
    };
    use crate::tensor::{TensorFormat, NCHW, NHWC};
    use half::{bf16, f16};

    type BestHeuristic = crate::convolution::convolution_algo::BestHeuristic;

    with_bwd_data_support_table!(expand_support_table);
}

pub use impls::SUPPORT_LINES;

/// Every (algorithm, configuration) row.
pub fn support_rows() -> impl Iterator<Item = SupportRow> {
    SUPPORT_LINES.iter().flat_map(|line| {
        line.algos.iter().copied().map(move |algo| SupportRow {
            algo,
            filter: line.config.filter,
            dy: line.config.dy,
            comp: line.config.comp,
            dx: line.config.dx,
            tensor_dims: line.config.tensor_dims,
            conv_dims: line.config.conv_dims,
        })
    })
}

/// Whether the table admits `row`.
pub fn is_supported(row: &SupportRow) -> bool {
    SUPPORT_LINES
        .iter()
        .any(|line| line.config == row.config() && line.algos.contains(&row.algo))
}

/// Checks `row` against the table; the error names up to three nearest rows.
pub fn check(row: &SupportRow) -> Result<(), UnsupportedConfiguration> {
    if is_supported(row) {
        return Ok(());
    }
    let distance = |r: &SupportRow| {
        usize::from(r.algo != row.algo) * 2
            + usize::from(r.filter.0 != row.filter.0)
            + usize::from(r.filter.1 != row.filter.1)
            + usize::from(r.dy.0 != row.dy.0)
            + usize::from(r.dy.1 != row.dy.1)
            + usize::from(r.comp != row.comp)
            + usize::from(r.dx.0 != row.dx.0)
            + usize::from(r.dx.1 != row.dx.1)
            + usize::from(r.tensor_dims != row.tensor_dims) * 2
    };
    let mut rows: Vec<SupportRow> = support_rows().collect();
    rows.sort_by_key(distance);
    Err(UnsupportedConfiguration {
        requested: row.to_string(),
        nearest: rows.iter().take(3).map(ToString::to_string).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convolution::convolution_algo::{DataAlgo0, DataAlgo1, FftTiling};
    use crate::tensor::{NCHW, NHWC};
    use half::{bf16, f16};

    type Best = crate::convolution::convolution_algo::BestHeuristic;

    /// Compile-time side: the trait holds for these (a missing impl would not compile).
    #[allow(clippy::extra_unused_type_parameters)]
    fn assert_supported<
        A: SupportedConvBwdData<T1, F1, T2, F2, C, T3, F3, D, N>,
        T1: DataType,
        F1: TensorFormat,
        T2: DataType,
        F2: TensorFormat,
        C: DataType,
        T3: DataType,
        F3: TensorFormat,
        const D: usize,
        const N: usize,
    >(
        algo: AlgoKind,
    ) -> SupportRow {
        SupportRow {
            algo,
            filter: (T1::DTYPE, F1::FORMAT),
            dy: (T2::DTYPE, F2::FORMAT),
            comp: C::DTYPE,
            dx: (T3::DTYPE, F3::FORMAT),
            tensor_dims: D,
            conv_dims: N,
        }
    }

    #[test]
    fn trait_impls_and_runtime_rows_agree() {
        let typed = [
            assert_supported::<DataAlgo0, f32, NCHW, f32, NCHW, f32, f32, NCHW, 4, 2>(
                AlgoKind::DataAlgo0,
            ),
            assert_supported::<Best, f32, NHWC, f32, NHWC, f32, f32, NHWC, 4, 2>(
                AlgoKind::BestHeuristic,
            ),
            assert_supported::<DataAlgo1, bf16, NHWC, bf16, NHWC, f32, bf16, NHWC, 4, 2>(
                AlgoKind::DataAlgo1,
            ),
            assert_supported::<DataAlgo1, f16, NCHW, f16, NCHW, f16, f16, NCHW, 4, 2>(
                AlgoKind::DataAlgo1,
            ),
            assert_supported::<FftTiling, f64, NCHW, f64, NCHW, f64, f64, NCHW, 5, 3>(
                AlgoKind::FftTiling,
            ),
            assert_supported::<Best, f16, NHWC, f16, NHWC, f32, f16, NHWC, 5, 3>(
                AlgoKind::BestHeuristic,
            ),
        ];
        for row in typed {
            assert!(is_supported(&row), "{row}");
        }
    }

    #[test]
    fn best_heuristic_goes_with_the_legacy_algorithms_and_engines_go_together() {
        let rows: Vec<SupportRow> = support_rows().collect();
        let mut seen = std::collections::HashSet::new();
        for line in SUPPORT_LINES {
            assert!(seen.insert(line.config), "duplicate line {}", line.config);
            let legacy = line.algos.iter().any(|a| a.fixed().is_some());
            // BestHeuristic exactly where a legacy algorithm is; the graph API's
            // columns always together.
            assert_eq!(
                line.algos.contains(&AlgoKind::BestHeuristic),
                legacy,
                "{}",
                line.config
            );
            assert_eq!(
                line.algos.contains(&AlgoKind::Engine),
                line.algos.contains(&AlgoKind::BestEngine),
                "{}",
                line.config
            );
            assert!(legacy || line.algos.contains(&AlgoKind::Engine));
            let uniq: std::collections::HashSet<_> = line.algos.iter().collect();
            assert_eq!(uniq.len(), line.algos.len(), "{}", line.config);
            // The default choice runs every configuration.
            assert!(
                line.algos.contains(&AlgoKind::DefaultAlgo),
                "{}",
                line.config
            );
        }
        for r in &rows {
            assert_eq!(r.tensor_dims, r.conv_dims + 2, "{r}");
            assert!(is_supported(r));
        }
        // The graph API ran every configuration of the sweep: 8 format combinations x 5
        // type/compute pairs x 2 ranks.
        assert_eq!(
            SUPPORT_LINES
                .iter()
                .filter(|l| l.algos.contains(&AlgoKind::Engine))
                .count(),
            80
        );
    }

    #[test]
    fn the_default_choice_runs_each_configuration_with_the_filter_in_dys_layout() {
        // `RawProblem::filter_in_dy_format` describes a filter of either layout in dy's:
        // that configuration is in the table wherever the one given is.
        let plain = |f: Format| matches!(f, Format::Nchw | Format::Nhwc);
        let mut mixed = 0;
        for row in support_rows().filter(|r| r.algo == AlgoKind::DefaultAlgo) {
            if row.filter.1 != row.dy.1 && plain(row.filter.1) && plain(row.dy.1) {
                mixed += 1;
                let follows = SupportRow {
                    filter: (row.filter.0, row.dy.1),
                    ..row
                };
                assert!(is_supported(&follows), "{row} -> {follows}");
            }
        }
        assert!(mixed > 0, "the table has mixed-layout rows to check");
    }

    #[test]
    fn unsupported_rows_are_refused_with_nearest_rows() {
        let bad = SupportRow {
            algo: AlgoKind::Fft,
            filter: (DType::F64, Format::Nchw),
            dy: (DType::F64, Format::Nchw),
            comp: DType::F64,
            dx: (DType::F64, Format::Nchw),
            tensor_dims: 4,
            conv_dims: 2,
        };
        let err = check(&bad).unwrap_err();
        assert_eq!(err.nearest.len(), 3);
        assert!(err.requested.starts_with("Fft with filter f64 NCHW"));
        assert!(err.nearest[0].contains("f64"), "{:?}", err.nearest);
        let mixed = SupportRow {
            dy: (DType::F32, Format::Nchw),
            algo: AlgoKind::BestHeuristic,
            ..bad
        };
        assert!(check(&mixed).is_err());
    }
}
