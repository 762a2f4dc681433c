//! CPU implementation of `cudnnConvolutionBackwardData`: the oracle every GPU result is
//! checked against, and the "cpu" device for users without a GPU.
//!
//! Two entry points share one contract, `dx = alpha * dgrad(w, dy) + beta * dx`:
//!
//! * [`convolution_backward_data_naive`] is a direct loop over the forward definition,
//!   accumulated in `f64` and rounded once. It is slow on purpose: short enough to be
//!   checked by reading, so it can judge everything else.
//! * [`convolution_backward_data`] is the fast path (GEMM + col2im over rayon), which
//!   accumulates the way cuDNN does (`f32` for `f32`/`f16`/`bf16`, `f64` for `f64`).
//!
//! As in cuDNN, `beta == 0` overwrites `dx` without reading it, so a buffer holding NaN
//! or garbage is fine; any other `beta` blends with the old contents.

pub mod device;
mod fast;
mod layout;
mod naive;

pub use fast::convolution_backward_data;
pub use naive::convolution_backward_data_naive;

use half::{bf16, f16};

/// Keeps [`RefElement`] closed: the fast path relies on every implementor having an
/// accumulator the GEMM crate handles, which an outside type could not promise.
pub(crate) mod sealed {
    /// Marker for the element types the reference implements.
    pub trait Sealed {}

    /// The type the fast path accumulates in (`f32` or `f64`): exactly the real types
    /// the `gemm` crate multiplies, so dispatching on it can never hit the crate's panic
    /// for an unknown type.
    pub trait Accum:
        Copy
        + Send
        + Sync
        + 'static
        + std::ops::Add<Output = Self>
        + std::ops::Mul<Output = Self>
        + std::ops::AddAssign
    {
        const ZERO: Self;
        const ONE: Self;
        /// Rounds a scaling factor to the type cuDNN reads it as for this accumulator.
        fn from_scale(v: f64) -> Self;
    }

    impl Accum for f32 {
        const ZERO: Self = 0.0;
        const ONE: Self = 1.0;
        fn from_scale(v: f64) -> Self {
            v as f32
        }
    }

    impl Accum for f64 {
        const ZERO: Self = 0.0;
        const ONE: Self = 1.0;
        fn from_scale(v: f64) -> Self {
            v
        }
    }
}

/// An element type the CPU reference computes with: `f32`, `f64`, `half::f16` and
/// `half::bf16`. Sealed.
///
/// The conversions round to nearest even, so the reference rounds exactly once, at the
/// end, like a GPU kernel that accumulates in a wider type.
pub trait RefElement: Copy + Send + Sync + 'static + sealed::Sealed {
    /// What the fast path accumulates in: `f32`, or `f64` for `f64` data.
    #[doc(hidden)]
    type Accum: sealed::Accum;

    /// The value as `f32` (exact for `f16`/`bf16`, rounded for `f64`).
    fn widen_f32(self) -> f32;
    /// The value as `f64` (always exact).
    fn widen_f64(self) -> f64;
    /// The nearest value of this type.
    fn round_from_f32(v: f32) -> Self;
    /// The nearest value of this type.
    fn round_from_f64(v: f64) -> Self;

    #[doc(hidden)]
    fn to_accum(self) -> Self::Accum;
    #[doc(hidden)]
    fn from_accum(v: Self::Accum) -> Self;
    /// The slice itself when the element type is its own accumulator, so the fast path
    /// can hand caller memory to the GEMM without a copy.
    #[doc(hidden)]
    fn as_accum_slice(s: &[Self]) -> Option<&[Self::Accum]>;
    /// The mutable twin of [`RefElement::as_accum_slice`], so the fast path can
    /// accumulate straight into `dx`.
    #[doc(hidden)]
    fn as_accum_slice_mut(s: &mut [Self]) -> Option<&mut [Self::Accum]>;
    /// Widens `src` into `dst` (same length); half types override it with the `half`
    /// crate's vectorised conversion.
    #[doc(hidden)]
    fn widen_into(src: &[Self], dst: &mut [Self::Accum]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = s.to_accum();
        }
    }
}

impl sealed::Sealed for f32 {}
impl RefElement for f32 {
    type Accum = f32;
    fn widen_f32(self) -> f32 {
        self
    }
    fn widen_f64(self) -> f64 {
        f64::from(self)
    }
    fn round_from_f32(v: f32) -> Self {
        v
    }
    fn round_from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_accum(self) -> f32 {
        self
    }
    fn from_accum(v: f32) -> Self {
        v
    }
    fn as_accum_slice(s: &[Self]) -> Option<&[f32]> {
        Some(s)
    }
    fn as_accum_slice_mut(s: &mut [Self]) -> Option<&mut [f32]> {
        Some(s)
    }
}

impl sealed::Sealed for f64 {}
impl RefElement for f64 {
    type Accum = f64;
    fn widen_f32(self) -> f32 {
        self as f32
    }
    fn widen_f64(self) -> f64 {
        self
    }
    fn round_from_f32(v: f32) -> Self {
        f64::from(v)
    }
    fn round_from_f64(v: f64) -> Self {
        v
    }
    fn to_accum(self) -> f64 {
        self
    }
    fn from_accum(v: f64) -> Self {
        v
    }
    fn as_accum_slice(s: &[Self]) -> Option<&[f64]> {
        Some(s)
    }
    fn as_accum_slice_mut(s: &mut [Self]) -> Option<&mut [f64]> {
        Some(s)
    }
}

macro_rules! impl_half_element {
    ($($ty:ty),*) => {$(
        impl sealed::Sealed for $ty {}
        impl RefElement for $ty {
            type Accum = f32;
            fn widen_f32(self) -> f32 {
                self.to_f32()
            }
            fn widen_f64(self) -> f64 {
                self.to_f64()
            }
            fn round_from_f32(v: f32) -> Self {
                <$ty>::from_f32(v)
            }
            fn round_from_f64(v: f64) -> Self {
                <$ty>::from_f64(v)
            }
            fn to_accum(self) -> f32 {
                self.to_f32()
            }
            fn from_accum(v: f32) -> Self {
                <$ty>::from_f32(v)
            }
            fn as_accum_slice(_: &[Self]) -> Option<&[f32]> {
                None
            }
            fn as_accum_slice_mut(_: &mut [Self]) -> Option<&mut [f32]> {
                None
            }
            fn widen_into(src: &[Self], dst: &mut [f32]) {
                use half::slice::HalfFloatSliceExt;
                let n = src.len().min(dst.len());
                src[..n].convert_to_f32_slice(&mut dst[..n]);
            }
        }
    )*};
}

impl_half_element!(f16, bf16);

// Hand-worked expectations are exact in binary floating point, so tests compare exactly.
#[cfg(test)]
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_to_nearest() {
        // 1 + 2^-11 lies exactly between two f16 values; ties go to even (1.0).
        assert_eq!(f16::round_from_f64(1.0 + 2f64.powi(-11)), f16::ONE);
        // 1 + 3 * 2^-11 is between 1 + 2^-10 and 1 + 2^-9; ties to even gives 1 + 2^-9.
        let v = f16::round_from_f64(1.0 + 3.0 * 2f64.powi(-11));
        assert_eq!(v.widen_f64(), 1.0 + 2f64.powi(-9));
        assert_eq!(bf16::round_from_f32(1.0).widen_f32(), 1.0);
        assert_eq!(f32::round_from_f64(0.1), 0.1f32);
        assert_eq!(f64::round_from_f32(0.5), 0.5);
        assert_eq!(0.25f64.widen_f32(), 0.25f32);
    }

    #[test]
    fn half_slices_widen_exactly() {
        let src: Vec<bf16> = [1.5f32, -2.0, 0.0078125].map(bf16::from_f32).to_vec();
        let mut dst = vec![0.0f32; 3];
        bf16::widen_into(&src, &mut dst);
        assert_eq!(dst, vec![1.5, -2.0, 0.0078125]);
        assert!(f16::as_accum_slice(&[f16::ONE]).is_none());
        assert_eq!(f32::as_accum_slice(&[2.0]), Some(&[2.0f32][..]));
    }
}
