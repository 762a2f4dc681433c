//! Memory formats as zero-sized marker types, and which element types each admits.

use cudarc::cudnn::sys::{cudnnDataType_t, cudnnTensorFormat_t};

use crate::data_type::{DType, DataType};
use crate::private::Sealed;

/// Run-time twin of the [`TensorFormat`] markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// Channels before spatial dims: N, C, (D,) H, W. For filters: K, C, (T,) R, S.
    Nchw,
    /// Channels last: N, (D,) H, W, C. For filters: K, (T,) R, S, C.
    Nhwc,
    /// NCHW with channels packed in groups of 4 (`i8`/`u8` only).
    NchwVectC8x4,
    /// NCHW with channels packed in groups of 32 (`i8` only).
    NchwVectC8x32,
}

impl Format {
    /// Every format, in declaration order.
    pub const ALL: [Format; 4] = [
        Format::Nchw,
        Format::Nhwc,
        Format::NchwVectC8x4,
        Format::NchwVectC8x32,
    ];

    /// The marker's name, as in Rust and Python (`"NCHW"`, `"NHWC"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Format::Nchw => "NCHW",
            Format::Nhwc => "NHWC",
            Format::NchwVectC8x4 => "NCHWVectC8x4",
            Format::NchwVectC8x32 => "NCHWVectC8x32",
        }
    }

    /// Parses a name as returned by [`Format::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The cuDNN tensor format.
    pub const fn raw(self) -> cudnnTensorFormat_t {
        match self {
            Format::Nchw => cudnnTensorFormat_t::CUDNN_TENSOR_NCHW,
            Format::Nhwc => cudnnTensorFormat_t::CUDNN_TENSOR_NHWC,
            Format::NchwVectC8x4 | Format::NchwVectC8x32 => {
                cudnnTensorFormat_t::CUDNN_TENSOR_NCHW_VECT_C
            }
        }
    }

    /// Channel vector width (1 for the plain formats).
    pub const fn vector_width(self) -> usize {
        match self {
            Format::Nchw | Format::Nhwc => 1,
            Format::NchwVectC8x4 => 4,
            Format::NchwVectC8x32 => 32,
        }
    }

    /// The cuDNN data type describing `dtype` stored in this format, or `None` when the
    /// format does not admit it (the run-time twin of [`SupportedType`]).
    pub const fn data_type(self, dtype: DType) -> Option<cudnnDataType_t> {
        match (self, dtype) {
            (Format::Nchw | Format::Nhwc, d) => Some(d.raw()),
            (Format::NchwVectC8x4, DType::I8) => Some(cudnnDataType_t::CUDNN_DATA_INT8x4),
            (Format::NchwVectC8x4, DType::U8) => Some(cudnnDataType_t::CUDNN_DATA_UINT8x4),
            (Format::NchwVectC8x32, DType::I8) => Some(cudnnDataType_t::CUDNN_DATA_INT8x32),
            _ => None,
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A memory format marker. Sealed.
pub trait TensorFormat: Sealed + Copy + Default + Send + Sync + std::fmt::Debug + 'static {
    /// The run-time twin.
    const FORMAT: Format;

    /// The cuDNN tensor format.
    fn into_raw() -> cudnnTensorFormat_t {
        Self::FORMAT.raw()
    }
}

/// Says that format `Self` can hold elements of type `T`, and which cuDNN data type
/// describes them (the vectorised formats use cuDNN's packed `x4`/`x32` types).
pub trait SupportedType<T: DataType>: TensorFormat {
    /// cuDNN data type of a `T` tensor in this format.
    fn data_type() -> cudnnDataType_t;
}

macro_rules! format_marker {
    ($(#[$doc:meta])* $name:ident => $fmt:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name;
        impl Sealed for $name {}
        impl TensorFormat for $name {
            const FORMAT: Format = Format::$fmt;
        }
    };
}

format_marker!(
    /// Channels before spatial dimensions (NCHW / NCDHW; filters KCRS / KCTRS).
    NCHW => Nchw
);
format_marker!(
    /// Channels last (NHWC / NDHWC; filters KRSC / KTRSC).
    NHWC => Nhwc
);
format_marker!(
    /// NCHW with channels vectorised by 4 (`i8`, `u8`).
    NCHWVectC8x4 => NchwVectC8x4
);
format_marker!(
    /// NCHW with channels vectorised by 32 (`i8`).
    NCHWVectC8x32 => NchwVectC8x32
);

macro_rules! supported {
    ($fmt:ty: $($ty:ty => $raw:ident),* $(,)?) => {$(
        impl SupportedType<$ty> for $fmt {
            fn data_type() -> cudnnDataType_t {
                cudnnDataType_t::$raw
            }
        }
    )*};
}

supported!(NCHW: f32 => CUDNN_DATA_FLOAT, f64 => CUDNN_DATA_DOUBLE, half::f16 => CUDNN_DATA_HALF,
    half::bf16 => CUDNN_DATA_BFLOAT16, i8 => CUDNN_DATA_INT8, u8 => CUDNN_DATA_UINT8,
    i32 => CUDNN_DATA_INT32, i64 => CUDNN_DATA_INT64);
supported!(NHWC: f32 => CUDNN_DATA_FLOAT, f64 => CUDNN_DATA_DOUBLE, half::f16 => CUDNN_DATA_HALF,
    half::bf16 => CUDNN_DATA_BFLOAT16, i8 => CUDNN_DATA_INT8, u8 => CUDNN_DATA_UINT8,
    i32 => CUDNN_DATA_INT32, i64 => CUDNN_DATA_INT64);
supported!(NCHWVectC8x4: i8 => CUDNN_DATA_INT8x4, u8 => CUDNN_DATA_UINT8x4);
supported!(NCHWVectC8x32: i8 => CUDNN_DATA_INT8x32);

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: DataType, F: SupportedType<T>>() {
        assert_eq!(F::FORMAT.data_type(T::DTYPE), Some(F::data_type()));
    }

    #[test]
    fn runtime_twin_agrees_with_trait_impls() {
        check::<f32, NCHW>();
        check::<half::bf16, NHWC>();
        check::<i64, NHWC>();
        check::<i8, NCHWVectC8x4>();
        check::<u8, NCHWVectC8x4>();
        check::<i8, NCHWVectC8x32>();
        assert_eq!(Format::NchwVectC8x32.data_type(DType::U8), None);
        assert_eq!(Format::NchwVectC8x4.data_type(DType::F32), None);
    }

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
        assert_eq!(Format::from_name("nchw"), None);
    }
}
