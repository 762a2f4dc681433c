//! Convolution parameters (padding, stride, dilation, groups, mode, math type) and the
//! compute type, mirrored by a cuDNN descriptor made on first GPU use.

use std::ffi::c_int;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::convolution::geometry::ConvParams;
use crate::convolution::ConvolutionMode;
use crate::data_type::{DType, DataType};
use crate::error::{Error, Result};
use crate::math_type::MathType;
use crate::raw_descriptor::{check, Kind, LazyDescriptor};

/// The run-time content of a convolution descriptor.
#[derive(Debug)]
pub struct RawConvolutionDescriptor {
    params: ConvParams,
    comp: DType,
    math_type: MathType,
    /// One cuDNN descriptor per math type used so far: the descriptor's own, and the
    /// ones heuristic results ask for (cuDNN reports each algorithm with the math type
    /// to run it with).
    lazy: [LazyDescriptor; 4],
}

impl RawConvolutionDescriptor {
    /// Checks the parameters (see [`ConvParams::new`]) and the compute type (a float
    /// type, or `i32` for the integer paths).
    pub fn new(params: ConvParams, comp: DType, math_type: MathType) -> Result<Self> {
        if !(comp.is_float() || comp == DType::I32) {
            // A type, not a shape: an unsupported configuration, as for the data types.
            return Err(Error::Unsupported(crate::error::UnsupportedConfiguration {
                requested: format!("compute type {comp} (a convolution descriptor's compute type)"),
                nearest: vec!["compute type f32, f64, f16, bf16 or i32".into()],
            }));
        }
        Ok(Self {
            params,
            comp,
            math_type,
            lazy: Default::default(),
        })
    }

    pub fn params(&self) -> &ConvParams {
        &self.params
    }
    pub fn comp(&self) -> DType {
        self.comp
    }
    pub fn math_type(&self) -> MathType {
        self.math_type
    }
    pub fn spatial_dims(&self) -> usize {
        self.params.spatial_dims()
    }

    /// A copy with another math type (a fresh cuDNN descriptor will be made for it).
    pub fn with_math_type(&self, math_type: MathType) -> Self {
        Self {
            params: self.params.clone(),
            comp: self.comp,
            math_type,
            lazy: Default::default(),
        }
    }

    /// The math type calls run with when nothing else is asked for: the descriptor's,
    /// except that `Default` on f16/bf16 data means tensor cores (`TensorOp`), as in the
    /// frameworks: cuDNN's default math lets f32 use TF32 on tensor cores but keeps half
    /// types off them.
    pub fn effective_math_type(&self, data: DType) -> MathType {
        match (self.math_type, data) {
            (MathType::Default, DType::F16 | DType::BF16) => MathType::TensorOp,
            (m, _) => m,
        }
    }

    /// Whether a heuristic result computed with `math` may run under this descriptor:
    /// `Fma` forbids tensor cores, so only `Fma` results are admitted then.
    pub fn admits_math_type(&self, math: MathType) -> bool {
        self.math_type != MathType::Fma || math == MathType::Fma
    }

    /// The cuDNN descriptor with math type `math`, made on first use.
    pub(crate) fn raw_with(&self, math: MathType) -> Result<*mut std::ffi::c_void> {
        let slot = MathType::ALL.iter().position(|m| *m == math).unwrap_or(0);
        self.lazy[slot].get(Kind::Convolution, |lib, ptr| {
            let to_c = |v: &[usize]| -> Vec<c_int> { v.iter().map(|&x| x as c_int).collect() };
            let (pad, stride, dil) = (
                to_c(&self.params.padding),
                to_c(&self.params.stride),
                to_c(&self.params.dilation),
            );
            let api = &lib.api;
            // SAFETY: `ptr` is a live convolution descriptor; the three arrays hold
            // `pad.len()` ints each and outlive the call.
            let status = unsafe {
                (api.cudnnSetConvolutionNdDescriptor)(
                    ptr,
                    pad.len() as c_int,
                    pad.as_ptr(),
                    stride.as_ptr(),
                    dil.as_ptr(),
                    self.params.mode.into_raw() as u32,
                    self.comp.raw() as u32,
                )
            };
            check(status, "setting convolution parameters")?;
            // SAFETY: as above; groups was checked to fit an int.
            let status =
                unsafe { (api.cudnnSetConvolutionGroupCount)(ptr, self.params.groups as c_int) };
            check(status, "setting the group count")?;
            // SAFETY: as above.
            let status = unsafe { (api.cudnnSetConvolutionMathType)(ptr, math.into_raw() as u32) };
            check(status, "setting the math type")
        })
    }
}

/// Describes a convolution with `N` spatial dims computed in `CompType`.
pub struct ConvolutionDescriptor<CompType, const N: usize> {
    raw: Arc<RawConvolutionDescriptor>,
    _marker: PhantomData<fn() -> CompType>,
}

impl<C, const N: usize> Clone for ConvolutionDescriptor<C, N> {
    fn clone(&self) -> Self {
        Self {
            raw: Arc::clone(&self.raw),
            _marker: PhantomData,
        }
    }
}

impl<C, const N: usize> std::fmt::Debug for ConvolutionDescriptor<C, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ConvolutionDescriptor({:?})", self.raw)
    }
}

impl<CompType: DataType, const N: usize> ConvolutionDescriptor<CompType, N> {
    /// As the original: padding >= 0, stride >= 1, dilation >= 1, groups >= 1; N is 2
    /// or 3. Errors instead of cuDNN's `BAD_PARAM` later.
    pub fn new(
        padding: [i32; N],
        stride: [i32; N],
        dilation: [i32; N],
        groups: u32,
        mode: ConvolutionMode,
        math_type: MathType,
    ) -> Result<Self> {
        let widen = |a: [i32; N]| a.map(i64::from);
        let params = ConvParams::new(
            &widen(padding),
            &widen(stride),
            &widen(dilation),
            i64::from(groups),
            mode,
        )?;
        let raw = RawConvolutionDescriptor::new(params, CompType::DTYPE, math_type)?;
        Ok(Self {
            raw: Arc::new(raw),
            _marker: PhantomData,
        })
    }

    /// Wraps a run-time descriptor whose compute type and rank match.
    pub fn from_raw(raw: Arc<RawConvolutionDescriptor>) -> Result<Self> {
        if raw.comp != CompType::DTYPE || raw.spatial_dims() != N {
            return Err(Error::InvalidArgument(format!(
                "convolution descriptor computes in {} over {} dims, not {} over {N}",
                raw.comp,
                raw.spatial_dims(),
                CompType::DTYPE
            )));
        }
        Ok(Self {
            raw,
            _marker: PhantomData,
        })
    }
}

impl<C, const N: usize> ConvolutionDescriptor<C, N> {
    /// Changes the math type (tensor cores allowed or not). A `Result`, as the original's
    /// (which set it on the cuDNN descriptor at once); here the cuDNN descriptor is made on
    /// first use, so this never fails.
    pub fn set_math_type(&mut self, math_type: MathType) -> Result<()> {
        self.raw = Arc::new(self.raw.with_math_type(math_type));
        Ok(())
    }
    pub fn raw(&self) -> &Arc<RawConvolutionDescriptor> {
        &self.raw
    }
    pub fn math_type(&self) -> MathType {
        self.raw.math_type
    }
    pub fn params(&self) -> &ConvParams {
        &self.raw.params
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_without_cudnn() {
        let m = ConvolutionMode::CrossCorrelation;
        let ok =
            ConvolutionDescriptor::<f32, 2>::new([1, 1], [1, 1], [1, 1], 1, m, MathType::Default);
        let mut ok = ok.unwrap();
        assert_eq!(ok.set_math_type(MathType::Fma), Ok(()));
        assert_eq!(ok.math_type(), MathType::Fma);
        assert!(ConvolutionDescriptor::<f32, 2>::new(
            [-1, 1],
            [1, 1],
            [1, 1],
            1,
            m,
            MathType::Default
        )
        .is_err());
        assert!(ConvolutionDescriptor::<f32, 2>::new(
            [0, 0],
            [1, 0],
            [1, 1],
            1,
            m,
            MathType::Default
        )
        .is_err());
        assert!(ConvolutionDescriptor::<f32, 2>::new(
            [0, 0],
            [1, 1],
            [0, 1],
            1,
            m,
            MathType::Default
        )
        .is_err());
        assert!(ConvolutionDescriptor::<f32, 2>::new(
            [0, 0],
            [1, 1],
            [1, 1],
            0,
            m,
            MathType::Default
        )
        .is_err());
        assert!(ConvolutionDescriptor::<f32, 4>::new(
            [0; 4],
            [1; 4],
            [1; 4],
            1,
            m,
            MathType::Default
        )
        .is_err());
        assert!(ConvolutionDescriptor::<u8, 2>::new(
            [0; 2],
            [1; 2],
            [1; 2],
            1,
            m,
            MathType::Default
        )
        .is_err());
        let d3 =
            ConvolutionDescriptor::<f64, 3>::new([0; 3], [1; 3], [2; 3], 2, m, MathType::Default)
                .unwrap();
        assert!(ConvolutionDescriptor::<f32, 3>::from_raw(Arc::clone(d3.raw())).is_err());
        assert!(ConvolutionDescriptor::<f64, 3>::from_raw(Arc::clone(d3.raw())).is_ok());
    }
}
