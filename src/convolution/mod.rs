//! Convolution: filters, descriptors, algorithms and the support table.

pub mod convolution_algo;
pub mod convolution_descriptor;
pub mod convolution_mode;
pub mod filter;
pub mod geometry;

/// THE support table, at home in [`crate::bwd_data::support`]; re-exported at its old path.
pub use crate::bwd_data::support;
pub use crate::bwd_data::support::{SupportRow, SupportedConvBwdData};
pub use convolution_algo::{
    AlgoKind, BestEngine, BestHeuristic, BwdDataAlgo, ConvolutionBwdDataAlgo, DataAlgo0, DataAlgo1,
    DefaultAlgo, Engine, EngineConfig, Fft, FftTiling, Route, SelectedAlgo, Winograd,
    WinogradNonFused,
};
pub use convolution_descriptor::{ConvolutionDescriptor, RawConvolutionDescriptor};
pub use convolution_mode::ConvolutionMode;
pub use filter::{Filter, FilterDescriptor};
pub use geometry::{BwdDataGeometry, ConvParams};
