//! Whether cuDNN may use tensor cores, and with which conversions.

use cudarc::cudnn::sys::cudnnMathType_t;

/// cuDNN's math mode for a convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MathType {
    /// Tensor cores only where no precision is lost (cuDNN's default).
    #[default]
    Default,
    /// Tensor cores allowed.
    TensorOp,
    /// Tensor cores allowed, with down-conversion (f32 data computed as TF32/f16).
    TensorOpAllowConversion,
    /// No tensor cores: plain FMA arithmetic.
    Fma,
}

impl MathType {
    pub const ALL: [MathType; 4] = [
        MathType::Default,
        MathType::TensorOp,
        MathType::TensorOpAllowConversion,
        MathType::Fma,
    ];

    /// The cuDNN enum value.
    pub const fn into_raw(self) -> cudnnMathType_t {
        match self {
            MathType::Default => cudnnMathType_t::CUDNN_DEFAULT_MATH,
            MathType::TensorOp => cudnnMathType_t::CUDNN_TENSOR_OP_MATH,
            MathType::TensorOpAllowConversion => {
                cudnnMathType_t::CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
            }
            MathType::Fma => cudnnMathType_t::CUDNN_FMA_MATH,
        }
    }

    /// Maps a raw value cuDNN wrote (perf results); `None` for an unknown value.
    pub const fn from_raw(raw: u32) -> Option<Self> {
        match raw {
            0 => Some(MathType::Default),
            1 => Some(MathType::TensorOp),
            2 => Some(MathType::TensorOpAllowConversion),
            3 => Some(MathType::Fma),
            _ => None,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            MathType::Default => "Default",
            MathType::TensorOp => "TensorOp",
            MathType::TensorOpAllowConversion => "TensorOpAllowConversion",
            MathType::Fma => "Fma",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_round_trip() {
        for m in MathType::ALL {
            assert_eq!(MathType::from_raw(m.into_raw() as u32), Some(m));
        }
        assert_eq!(MathType::from_raw(9), None);
    }
}
