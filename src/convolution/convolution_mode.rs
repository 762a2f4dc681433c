//! Whether the filter is flipped (true convolution) or not (cross-correlation).

use cudarc::cudnn::sys::cudnnConvolutionMode_t;

/// cuDNN's convolution mode. Deep-learning frameworks use `CrossCorrelation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConvolutionMode {
    /// The filter is flipped in every spatial dimension.
    Convolution,
    /// The filter is applied as stored.
    CrossCorrelation,
}

impl ConvolutionMode {
    pub const ALL: [ConvolutionMode; 2] = [
        ConvolutionMode::Convolution,
        ConvolutionMode::CrossCorrelation,
    ];

    pub const fn into_raw(self) -> cudnnConvolutionMode_t {
        match self {
            ConvolutionMode::Convolution => cudnnConvolutionMode_t::CUDNN_CONVOLUTION,
            ConvolutionMode::CrossCorrelation => cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            ConvolutionMode::Convolution => "Convolution",
            ConvolutionMode::CrossCorrelation => "CrossCorrelation",
        }
    }
}
