//! Tensor descriptors: element type, memory format and logical shape, checked in Rust and
//! mirrored by a cuDNN descriptor made on first GPU use.

use std::ffi::c_int;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::data_type::{DType, DataType};
use crate::error::{Error, Result};
use crate::raw_descriptor::{check, Kind, LazyDescriptor};
use crate::tensor::{Format, SupportedType};

/// Whether a descriptor describes data (tensor) or weights (filter); they are distinct
/// cuDNN objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Tensor,
    Filter,
}

/// The run-time content of a tensor or filter descriptor. Typed descriptors wrap one;
/// the Python layer holds one directly.
#[derive(Debug)]
pub struct RawDescriptor {
    role: Role,
    dtype: DType,
    format: Format,
    /// Logical shape: N, C, spatial... (filters: K, C/groups, spatial...), whatever the
    /// memory format.
    shape: Vec<usize>,
    len: usize,
    lazy: LazyDescriptor,
}

impl RawDescriptor {
    /// Checks a logical shape against cuDNN's rules: 3 to 8 dims, each positive, the
    /// element count within cuDNN's 32-bit limit, the channel count a multiple of the
    /// vector width for vectorised formats, and the format admitting the type.
    pub fn new(role: Role, dtype: DType, format: Format, shape: &[usize]) -> Result<Self> {
        let what = match role {
            Role::Tensor => "tensor",
            Role::Filter => "filter",
        };
        if format.data_type(dtype).is_none() {
            return Err(Error::InvalidArgument(format!(
                "format {format} cannot hold {dtype} elements"
            )));
        }
        if !(3..=8).contains(&shape.len()) {
            return Err(Error::Shape(format!(
                "a {what} needs 3 to 8 dimensions, got shape {shape:?}"
            )));
        }
        if shape.iter().any(|&d| d == 0 || d > i32::MAX as usize) {
            return Err(Error::Shape(format!(
                "every {what} dimension must be in [1, {}], got {shape:?}",
                i32::MAX
            )));
        }
        let len = shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .filter(|&n| n <= crate::convolution::geometry::MAX_ELEMENTS)
            .ok_or_else(|| {
                Error::Shape(format!(
                    "{what} shape {shape:?} has more than {} elements, cuDNN's limit",
                    crate::convolution::geometry::MAX_ELEMENTS
                ))
            })?;
        let width = format.vector_width();
        if shape[1] % width != 0 {
            return Err(Error::Shape(format!(
                "format {format} packs channels by {width}; {} channels is not a multiple",
                shape[1]
            )));
        }
        Ok(Self {
            role,
            dtype,
            format,
            shape: shape.to_vec(),
            len,
            lazy: LazyDescriptor::default(),
        })
    }

    pub fn role(&self) -> Role {
        self.role
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn format(&self) -> Format {
        self.format
    }
    /// Logical shape (NCHW order).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Bytes of storage.
    pub fn nbytes(&self) -> usize {
        self.len * self.dtype.size()
    }

    /// The cuDNN descriptor, made on first call.
    pub(crate) fn raw(&self) -> Result<*mut std::ffi::c_void> {
        let kind = match self.role {
            Role::Tensor => Kind::Tensor,
            Role::Filter => Kind::Filter,
        };
        self.lazy.get(kind, |lib, ptr| {
            let dims: Vec<c_int> = self.shape.iter().map(|&d| d as c_int).collect();
            let dtype = self
                .format
                .data_type(self.dtype)
                .ok_or_else(|| Error::InvalidArgument("format/type mismatch".into()))?
                as u32;
            let format = self.format.raw() as u32;
            // SAFETY: `ptr` is a live descriptor of the matching kind; `dims` holds
            // `dims.len()` ints and outlives the call.
            let status = unsafe {
                match self.role {
                    Role::Tensor => (lib.api.cudnnSetTensorNdDescriptorEx)(
                        ptr,
                        format,
                        dtype,
                        dims.len() as c_int,
                        dims.as_ptr(),
                    ),
                    Role::Filter => (lib.api.cudnnSetFilterNdDescriptor)(
                        ptr,
                        dtype,
                        format,
                        dims.len() as c_int,
                        dims.as_ptr(),
                    ),
                }
            };
            check(status, &format!("describing {self}"))
        })
    }
}

impl std::fmt::Display for RawDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(ToString::to_string).collect();
        write!(
            f,
            "{} {} {} {}",
            match self.role {
                Role::Tensor => "tensor",
                Role::Filter => "filter",
            },
            self.dtype,
            self.format,
            dims.join("x")
        )
    }
}

pub(crate) fn shape_from_i32<const D: usize>(shape: [i32; D]) -> Result<Vec<usize>> {
    shape
        .iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| Error::Shape(format!("negative dimension in shape {shape:?}")))
        })
        .collect()
}

/// Describes a `D`-dimensional tensor of `T` stored in format `F` (cuDNN
/// `cudnnTensorDescriptor_t`). The shape is logical: N, C, (D,) H, W for every format.
pub struct TensorDescriptor<T, F, const D: usize> {
    raw: Arc<RawDescriptor>,
    _marker: PhantomData<fn() -> (T, F)>,
}

impl<T, F, const D: usize> Clone for TensorDescriptor<T, F, D> {
    fn clone(&self) -> Self {
        Self {
            raw: Arc::clone(&self.raw),
            _marker: PhantomData,
        }
    }
}

impl<T, F, const D: usize> std::fmt::Debug for TensorDescriptor<T, F, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TensorDescriptor({})", self.raw)
    }
}

impl<T: DataType, F: SupportedType<T>, const D: usize> TensorDescriptor<T, F, D> {
    /// Creates a descriptor for logical `shape` (N, C, spatial...).
    pub fn new(shape: [i32; D], _format: F) -> Result<Self> {
        let dims = shape_from_i32(shape)?;
        let raw = RawDescriptor::new(Role::Tensor, T::DTYPE, F::FORMAT, &dims)?;
        Ok(Self {
            raw: Arc::new(raw),
            _marker: PhantomData,
        })
    }

    /// Wraps a run-time descriptor whose type, format, rank and role match `T`, `F`, `D`.
    pub fn from_raw(raw: Arc<RawDescriptor>) -> Result<Self> {
        if raw.role != Role::Tensor
            || raw.dtype != T::DTYPE
            || raw.format != F::FORMAT
            || raw.shape.len() != D
        {
            return Err(Error::InvalidArgument(format!(
                "{raw} is not a rank-{D} {} {} tensor descriptor",
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

impl<T, F, const D: usize> TensorDescriptor<T, F, D> {
    /// The run-time descriptor.
    pub fn raw(&self) -> &Arc<RawDescriptor> {
        &self.raw
    }
    /// Logical shape.
    pub fn shape(&self) -> &[usize] {
        self.raw.shape()
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.raw.len()
    }
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{NCHWVectC8x4, NCHW, NHWC};

    #[test]
    fn validates_shapes_without_cudnn() {
        let d = TensorDescriptor::<f32, NHWC, 4>::new([2, 3, 4, 5], NHWC).unwrap();
        assert_eq!(d.shape(), &[2, 3, 4, 5]);
        assert_eq!(d.len(), 120);
        assert_eq!(d.raw().nbytes(), 480);
        assert!(TensorDescriptor::<f32, NCHW, 4>::new([2, 0, 4, 5], NCHW).is_err());
        assert!(TensorDescriptor::<f32, NCHW, 4>::new([2, -3, 4, 5], NCHW).is_err());
        assert!(TensorDescriptor::<f32, NCHW, 2>::new([2, 3], NCHW).is_err());
        assert!(matches!(
            TensorDescriptor::<f32, NCHW, 4>::new([65536, 65536, 1, 1], NCHW),
            Err(Error::Shape(m)) if m.contains("limit")
        ));
        assert!(TensorDescriptor::<i8, NCHWVectC8x4, 4>::new([1, 6, 4, 4], NCHWVectC8x4).is_err());
        assert!(TensorDescriptor::<i8, NCHWVectC8x4, 4>::new([1, 8, 4, 4], NCHWVectC8x4).is_ok());
    }

    #[test]
    fn from_raw_checks_type_format_and_rank() {
        let raw = Arc::new(
            RawDescriptor::new(Role::Tensor, DType::F16, Format::Nhwc, &[1, 2, 3, 4]).unwrap(),
        );
        assert!(TensorDescriptor::<half::f16, NHWC, 4>::from_raw(Arc::clone(&raw)).is_ok());
        assert!(TensorDescriptor::<f32, NHWC, 4>::from_raw(Arc::clone(&raw)).is_err());
        assert!(TensorDescriptor::<half::f16, NCHW, 4>::from_raw(Arc::clone(&raw)).is_err());
        assert!(TensorDescriptor::<half::f16, NHWC, 5>::from_raw(raw).is_err());
        assert!(RawDescriptor::new(
            Role::Tensor,
            DType::F32,
            Format::NchwVectC8x4,
            &[1, 4, 1, 1]
        )
        .is_err());
    }
}
