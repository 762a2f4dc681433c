//! Tensors: data in some memory plus a descriptor saying what it holds.

pub mod layout;
pub mod tensor_descriptor;
pub mod tensor_format;

pub use tensor_descriptor::{RawDescriptor, Role, TensorDescriptor};
pub use tensor_format::{
    Format, NCHWVectC8x32, NCHWVectC8x4, SupportedType, TensorFormat, NCHW, NHWC,
};

use crate::data_type::DataType;
use crate::error::{Error, Result};
use crate::memory::Elements;

/// A `D`-dimensional tensor of `T` in format `F`, stored in `V` (device memory for the
/// GPU, host memory for the CPU device).
pub struct Tensor<T, F, V, const D: usize> {
    data: V,
    descriptor: TensorDescriptor<T, F, D>,
}

pub(crate) fn check_len(expected: usize, got: usize, what: &str) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::Shape(format!(
            "{what} needs {expected} elements for its shape, its memory holds {got}"
        )))
    }
}

impl<T: DataType, F: SupportedType<T>, V: Elements<T>, const D: usize> Tensor<T, F, V, D> {
    /// Wraps `data` as a tensor of logical `shape`. Unlike the original, a length that
    /// does not match the shape is an error, not a panic.
    pub fn new(data: V, shape: [i32; D], format: F) -> Result<Self> {
        let descriptor = TensorDescriptor::new(shape, format)?;
        Self::with_descriptor(data, descriptor)
    }

    /// Wraps `data` with an existing descriptor (shared, not copied).
    pub fn with_descriptor(data: V, descriptor: TensorDescriptor<T, F, D>) -> Result<Self> {
        check_len(descriptor.len(), data.len(), "tensor")?;
        Ok(Self { data, descriptor })
    }
}

impl<T, F, V, const D: usize> Tensor<T, F, V, D> {
    pub fn data(&self) -> &V {
        &self.data
    }
    pub fn data_mut(&mut self) -> &mut V {
        &mut self.data
    }
    pub fn descriptor(&self) -> &TensorDescriptor<T, F, D> {
        &self.descriptor
    }
    /// Logical shape.
    pub fn shape(&self) -> &[usize] {
        self.descriptor.shape()
    }
    /// Gives the memory back.
    pub fn into_data(self) -> V {
        self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_mismatch_is_an_error_not_a_panic() {
        let t = Tensor::<f32, NCHW, Vec<f32>, 4>::new(vec![0.0; 24], [1, 2, 3, 4], NCHW);
        assert_eq!(t.unwrap().shape(), &[1, 2, 3, 4]);
        let bad = Tensor::<f32, NCHW, Vec<f32>, 4>::new(vec![0.0; 23], [1, 2, 3, 4], NCHW);
        assert!(matches!(bad, Err(Error::Shape(m)) if m.contains("24")));
    }
}
