//! Filters (weights): K output maps of C/groups input maps over the kernel extent.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::data_type::DataType;
use crate::error::{Error, Result};
use crate::memory::Elements;
use crate::tensor::tensor_descriptor::shape_from_i32;
use crate::tensor::{RawDescriptor, Role, SupportedType};

/// Describes a filter of `T` in format `F` (cuDNN `cudnnFilterDescriptor_t`). The shape
/// is logical, K, C/groups, (T,) R, S, for every format (NCHW stores KCRS, NHWC KRSC).
pub struct FilterDescriptor<T, F, const D: usize> {
    raw: Arc<RawDescriptor>,
    _marker: PhantomData<fn() -> (T, F)>,
}

impl<T, F, const D: usize> Clone for FilterDescriptor<T, F, D> {
    fn clone(&self) -> Self {
        Self {
            raw: Arc::clone(&self.raw),
            _marker: PhantomData,
        }
    }
}

impl<T, F, const D: usize> std::fmt::Debug for FilterDescriptor<T, F, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FilterDescriptor({})", self.raw)
    }
}

impl<T: DataType, F: SupportedType<T>, const D: usize> FilterDescriptor<T, F, D> {
    /// Creates a descriptor for logical `shape` (K, C/groups, kernel...).
    pub fn new(shape: [i32; D], _format: F) -> Result<Self> {
        let dims = shape_from_i32(shape)?;
        let raw = RawDescriptor::new(Role::Filter, T::DTYPE, F::FORMAT, &dims)?;
        Ok(Self {
            raw: Arc::new(raw),
            _marker: PhantomData,
        })
    }

    /// Wraps a run-time filter descriptor whose type, format and rank match.
    pub fn from_raw(raw: Arc<RawDescriptor>) -> Result<Self> {
        if raw.role() != Role::Filter
            || raw.dtype() != T::DTYPE
            || raw.format() != F::FORMAT
            || raw.shape().len() != D
        {
            return Err(Error::InvalidArgument(format!(
                "{raw} is not a rank-{D} {} {} filter descriptor",
                T::DTYPE,
                F::FORMAT
            )));
        }
        Ok(Self {
            raw,
            _marker: PhantomData,
        })
    }
}

impl<T, F, const D: usize> FilterDescriptor<T, F, D> {
    pub fn raw(&self) -> &Arc<RawDescriptor> {
        &self.raw
    }
    pub fn shape(&self) -> &[usize] {
        self.raw.shape()
    }
    pub fn len(&self) -> usize {
        self.raw.len()
    }
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

/// A filter of `T` in format `F` stored in `V`.
pub struct Filter<T, F, V, const D: usize> {
    data: V,
    descriptor: FilterDescriptor<T, F, D>,
}

impl<T: DataType, F: SupportedType<T>, V: Elements<T>, const D: usize> Filter<T, F, V, D> {
    /// Wraps `data` as a filter of logical `shape`; a length mismatch is an error.
    pub fn new(data: V, shape: [i32; D], format: F) -> Result<Self> {
        let descriptor = FilterDescriptor::new(shape, format)?;
        Self::with_descriptor(data, descriptor)
    }

    /// Wraps `data` with an existing descriptor.
    pub fn with_descriptor(data: V, descriptor: FilterDescriptor<T, F, D>) -> Result<Self> {
        crate::tensor::check_len(descriptor.len(), data.len(), "filter")?;
        Ok(Self { data, descriptor })
    }
}

impl<T, F, V, const D: usize> Filter<T, F, V, D> {
    pub fn data(&self) -> &V {
        &self.data
    }
    pub fn data_mut(&mut self) -> &mut V {
        &mut self.data
    }
    pub fn descriptor(&self) -> &FilterDescriptor<T, F, D> {
        &self.descriptor
    }
    pub fn shape(&self) -> &[usize] {
        self.descriptor.shape()
    }
    pub fn into_data(self) -> V {
        self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{NCHW, NHWC};

    #[test]
    fn filters_check_length_and_raw_role() {
        let f = Filter::<f32, NHWC, Vec<f32>, 4>::new(vec![1.0; 2 * 3 * 3 * 3], [2, 3, 3, 3], NHWC);
        assert!(f.is_ok());
        assert!(Filter::<f32, NCHW, Vec<f32>, 4>::new(vec![1.0; 5], [2, 3, 3, 3], NCHW).is_err());
        let t = Arc::new(
            RawDescriptor::new(
                Role::Tensor,
                crate::DType::F32,
                crate::Format::Nchw,
                &[2, 3, 3, 3],
            )
            .unwrap(),
        );
        assert!(FilterDescriptor::<f32, NCHW, 4>::from_raw(t).is_err());
    }
}
