//! Typed cuDNN convolution backward-data over `cudarc` device memory.
//!
//! A port of the Rust-CUDA `cudnn` crate's generic backward-data API: filters, tensors
//! and convolution descriptors carry their element type, memory format and rank as type
//! parameters, and an (algorithm, types, formats, ranks) combination that cuDNN does not
//! support does not compile (see [`convolution::support`]). A CPU reference device
//! ([`reference`](mod@reference)) computes the same operation on the host: it is the oracle for every
//! GPU test and the device used where there is no GPU.

mod backend;
pub mod bwd_data;
pub mod cache;
pub mod context;
pub mod convolution;
mod counters;
pub mod data_type;
pub mod determinism;
pub mod error;
pub mod find_cache;
pub mod library;
pub mod math_type;
pub mod memory;
mod pool;
pub mod problem;
pub mod reference;
pub mod sys;
pub mod tensor;

mod raw_descriptor;
mod replay;

#[cfg(feature = "python")]
mod python;

/// The graph-API objects of backward data (moved to [`bwd_data::graph`]).
pub use bwd_data::graph as engine;
pub use context::{CudnnContext, FindTiming};
pub use convolution::{
    BestEngine, BestHeuristic, ConvolutionBwdDataAlgo, ConvolutionDescriptor, ConvolutionMode,
    DataAlgo0, DataAlgo1, DefaultAlgo, Engine, EngineConfig, Fft, FftTiling, Filter,
    FilterDescriptor, SupportedConvBwdData, Winograd, WinogradNonFused,
};
pub use data_type::{DType, DataType};
pub use determinism::Determinism;
pub use error::{CudnnError, Error, IntoResult, Result};
pub use math_type::MathType;
pub use memory::{BorrowedDeviceBuffer, GpuBuffer, GpuBufferMut};
pub use pool::release_cached_memory;
pub use tensor::{
    Format, NCHWVectC8x32, NCHWVectC8x4, SupportedType, Tensor, TensorDescriptor, TensorFormat,
    NCHW, NHWC,
};

/// Whether the switch `name` in the environment leaves its feature on: anything but `0`
/// (or unset). Each caller reads it once and keeps the answer.
pub(crate) fn switched_on(name: &str) -> bool {
    std::env::var(name).map_or(true, |v| v != "0")
}

/// Keeps users from implementing the crate's marker traits for their own types.
mod private {
    pub trait Sealed {}
}

/// The README's Rust examples, compiled (and the CPU one run) as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
