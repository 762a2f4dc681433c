//! Element types cuDNN understands, as sealed marker traits over Rust scalars, plus
//! their runtime twin [`DType`] used wherever the type is only known at run time.

use cudarc::cudnn::sys::cudnnDataType_t;
use half::{bf16, f16};

use crate::private::Sealed;

/// Run-time name of a cuDNN element type. Mirrors the [`DataType`] implementors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    F64,
    F16,
    BF16,
    I8,
    U8,
    I32,
    I64,
}

impl DType {
    /// Every element type, in declaration order.
    pub const ALL: [DType; 8] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I8,
        DType::U8,
        DType::I32,
        DType::I64,
    ];

    /// The short name used in Rust, Python and the support table (`"f32"`, `"bf16"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::I64 => "i64",
        }
    }

    /// Parses a short name as returned by [`DType::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The compute type the library pairs with this data type where none is given (the
    /// one-call API's, the depthwise kernel's): f64 for f64 data, f32 for every other
    /// (f32 accumulation for the half types), as PyTorch computes.
    pub const fn compute(self) -> DType {
        match self {
            DType::F64 => DType::F64,
            _ => DType::F32,
        }
    }

    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
        }
    }

    /// The plain (non-vectorised) cuDNN data type.
    pub const fn raw(self) -> cudnnDataType_t {
        match self {
            DType::F32 => cudnnDataType_t::CUDNN_DATA_FLOAT,
            DType::F64 => cudnnDataType_t::CUDNN_DATA_DOUBLE,
            DType::F16 => cudnnDataType_t::CUDNN_DATA_HALF,
            DType::BF16 => cudnnDataType_t::CUDNN_DATA_BFLOAT16,
            DType::I8 => cudnnDataType_t::CUDNN_DATA_INT8,
            DType::U8 => cudnnDataType_t::CUDNN_DATA_UINT8,
            DType::I32 => cudnnDataType_t::CUDNN_DATA_INT32,
            DType::I64 => cudnnDataType_t::CUDNN_DATA_INT64,
        }
    }

    /// The type cuDNN reads the `alpha`/`beta` scaling factors as for tensors of this
    /// type: `double` for double data, `float` for everything else (half and bfloat16
    /// included).
    pub const fn scaling(self) -> ScalingKind {
        match self {
            DType::F64 => ScalingKind::F64,
            _ => ScalingKind::F32,
        }
    }

    /// Whether the type is a floating-point type.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The host type cuDNN dereferences the `alpha`/`beta` pointers as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalingKind {
    F32,
    F64,
}

/// A scaling factor laid out as cuDNN expects it behind the `alpha`/`beta` pointers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scaling {
    F32(f32),
    F64(f64),
}

impl Scaling {
    /// Converts `value` to the representation `kind` calls for.
    pub fn new(kind: ScalingKind, value: f64) -> Self {
        match kind {
            ScalingKind::F32 => Scaling::F32(value as f32),
            ScalingKind::F64 => Scaling::F64(value),
        }
    }

    /// Pointer to the value, valid for as long as `self` is borrowed.
    pub fn as_ptr(&self) -> *const std::ffi::c_void {
        match self {
            Scaling::F32(v) => std::ptr::from_ref(v).cast(),
            Scaling::F64(v) => std::ptr::from_ref(v).cast(),
        }
    }
}

/// A Rust scalar type cuDNN can hold in a tensor, filter or use as compute type.
///
/// Sealed: implemented for `f32`, `f64`, `half::f16`, `half::bf16`, `i8`, `u8`, `i32`,
/// `i64`.
pub trait DataType: Sealed + Copy + Send + Sync + std::fmt::Debug + 'static {
    /// The run-time twin of this type.
    const DTYPE: DType;

    /// The value as `f64` (exact for every implementor but `i64` beyond 2^53); used to
    /// hand `alpha`/`beta` to cuDNN in the scaling type it expects.
    fn to_f64(self) -> f64;

    /// The nearest value of this type to `v` (saturating for integers); used where the
    /// scaling factors arrive as `f64` (the Python layer).
    fn from_f64(v: f64) -> Self;

    /// The plain cuDNN data type.
    fn into_raw() -> cudnnDataType_t {
        Self::DTYPE.raw()
    }
}

macro_rules! impl_data_type {
    ($($ty:ty => $dtype:ident, |$v:ident| $to_f64:expr, |$f:ident| $from_f64:expr;)*) => {$(
        impl Sealed for $ty {}
        impl DataType for $ty {
            const DTYPE: DType = DType::$dtype;
            fn to_f64(self) -> f64 {
                let $v = self;
                $to_f64
            }
            fn from_f64($f: f64) -> Self {
                $from_f64
            }
        }
    )*};
}

impl_data_type! {
    f32 => F32, |v| f64::from(v), |f| f as f32;
    f64 => F64, |v| v, |f| f;
    f16 => F16, |v| v.to_f64(), |f| f16::from_f64(f);
    bf16 => BF16, |v| v.to_f64(), |f| bf16::from_f64(f);
    i8 => I8, |v| f64::from(v), |f| f as i8;
    u8 => U8, |v| f64::from(v), |f| f as u8;
    i32 => I32, |v| f64::from(v), |f| f as i32;
    i64 => I64, |v| v as f64, |f| f as i64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sizes_match_rust_types() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        assert_eq!(DType::F32.size(), std::mem::size_of::<f32>());
        assert_eq!(DType::F64.size(), std::mem::size_of::<f64>());
        assert_eq!(DType::F16.size(), std::mem::size_of::<f16>());
        assert_eq!(DType::BF16.size(), std::mem::size_of::<bf16>());
        assert_eq!(DType::I64.size(), std::mem::size_of::<i64>());
        assert_eq!(DType::from_name("f128"), None);
    }

    #[test]
    fn scaling_is_double_only_for_double_data() {
        assert_eq!(DType::F64.scaling(), ScalingKind::F64);
        for d in [DType::F32, DType::F16, DType::BF16, DType::I8] {
            assert_eq!(d.scaling(), ScalingKind::F32);
        }
        let s = Scaling::new(ScalingKind::F32, 0.5);
        // SAFETY: `s` is a live F32 scaling, so the pointer targets an initialised f32.
        let read = unsafe { *s.as_ptr().cast::<f32>() };
        assert!((read - 0.5).abs() < f32::EPSILON);
    }

    #[test]
    fn marker_types_map_to_cudnn_types() {
        assert_eq!(f16::into_raw(), cudnnDataType_t::CUDNN_DATA_HALF);
        assert_eq!(bf16::into_raw(), cudnnDataType_t::CUDNN_DATA_BFLOAT16);
        assert_eq!(<f64 as DataType>::DTYPE, DType::F64);
        assert!((f16::from_f32(1.5).to_f64() - 1.5).abs() < 1e-12);
    }
}
