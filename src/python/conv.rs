//! `ConvolutionDescriptor`.

use std::sync::{Arc, RwLock};

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::errors::IntoPyResult;
use super::markers::{dtype_singleton, extract_dtype, PyConvolutionMode, PyDType, PyMathType};
use crate::convolution::{ConvParams, RawConvolutionDescriptor};
use crate::data_type::DType;

/// Padding, stride, dilation, groups, mode, math type and compute type of a convolution
/// (2 or 3 spatial dims). The descriptor of the forward pass serves its backward pass.
#[pyclass(frozen, name = "ConvolutionDescriptor", module = "cudnn_rs")]
pub(crate) struct PyConvolutionDescriptor {
    raw: RwLock<Arc<RawConvolutionDescriptor>>,
}

impl PyConvolutionDescriptor {
    pub(crate) fn raw(&self) -> Arc<RawConvolutionDescriptor> {
        Arc::clone(
            &self
                .raw
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// One of padding, stride or dilation as given: an int (the same for every spatial
/// dimension) or one int per spatial dimension.
enum Ints {
    One(i64),
    Each(Vec<i64>),
}

impl Ints {
    fn len(&self) -> Option<usize> {
        match self {
            Ints::One(_) => None,
            Ints::Each(v) => Some(v.len()),
        }
    }

    /// One value per spatial dimension of `n`.
    fn per_dim(self, n: usize) -> Vec<i64> {
        match self {
            Ints::One(v) => vec![v; n],
            Ints::Each(v) => v,
        }
    }
}

fn ints(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Ints> {
    if let Ok(v) = obj.extract::<i64>() {
        return Ok(Ints::One(v));
    }
    obj.extract::<Vec<i64>>().map(Ints::Each).map_err(|_| {
        let range = if what == "padding" {
            "must be in [0, 2147483647]"
        } else {
            "must be in [1, 2147483647]"
        };
        super::ints::out_of_range_item(obj, what, range).unwrap_or_else(|| {
            pyo3::exceptions::PyTypeError::new_err(format!("{what} must be a tuple of ints"))
        })
    })
}

#[pymethods]
impl PyConvolutionDescriptor {
    #[new]
    #[pyo3(signature = (padding = None, stride = None, dilation = None, groups = 1, mode = PyConvolutionMode::CrossCorrelation, math_type = PyMathType::Default, comp_type = None))]
    fn new(
        py: Python<'_>,
        padding: Option<&Bound<'_, PyAny>>,
        stride: Option<&Bound<'_, PyAny>>,
        dilation: Option<&Bound<'_, PyAny>>,
        groups: i64,
        mode: PyConvolutionMode,
        math_type: PyMathType,
        comp_type: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // Padding not given is zero (as in PyTorch's layers).
        let padding = padding
            .map(|p| ints(p, "padding"))
            .transpose()?
            .unwrap_or(Ints::One(0));
        let stride = stride.map(|s| ints(s, "stride")).transpose()?;
        let dilation = dilation.map(|d| ints(d, "dilation")).transpose()?;
        // The spatial rank: the length of padding, else of stride or dilation (an int
        // stands for the same value in every dimension).
        let n = [Some(&padding), stride.as_ref(), dilation.as_ref()]
            .into_iter()
            .flatten()
            .find_map(Ints::len)
            .ok_or_else(|| {
                pyo3::exceptions::PyTypeError::new_err(
                    "padding, stride or dilation must be a tuple of 2 or 3 ints, one per \
                     spatial dimension (the spatial rank is its length); an int beside it \
                     stands for the same value in every dimension, and padding not given is 0",
                )
            })?;
        let padding = padding.per_dim(n);
        let stride = stride.map_or_else(|| vec![1; n], |s| s.per_dim(n));
        let dilation = dilation.map_or_else(|| vec![1; n], |d| d.per_dim(n));
        let comp = comp_type
            .map(extract_dtype)
            .transpose()?
            .unwrap_or(DType::F32);
        let params =
            ConvParams::new(&padding, &stride, &dilation, groups, mode.into()).py_err(py)?;
        let raw = RawConvolutionDescriptor::new(params, comp, math_type.into()).py_err(py)?;
        Ok(Self {
            raw: RwLock::new(Arc::new(raw)),
        })
    }

    #[getter]
    fn padding<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.raw().params().padding)
    }
    #[getter]
    fn stride<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.raw().params().stride)
    }
    #[getter]
    fn dilation<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.raw().params().dilation)
    }
    #[getter]
    fn groups(&self) -> usize {
        self.raw().params().groups
    }
    #[getter]
    fn mode(&self) -> PyConvolutionMode {
        self.raw().params().mode.into()
    }
    #[getter]
    fn math_type(&self) -> PyMathType {
        self.raw().math_type().into()
    }
    /// The compute type (a data-type marker).
    #[getter]
    fn comp_type<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDType>> {
        dtype_singleton(py, self.raw().comp())
    }
    /// 2 or 3.
    #[getter]
    fn spatial_dims(&self) -> usize {
        self.raw().spatial_dims()
    }
    /// Changes the math type (tensor cores allowed or not) for later calls.
    fn set_math_type(&self, math_type: PyMathType) {
        let mut guard = self
            .raw
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *guard = Arc::new(guard.with_math_type(math_type.into()));
    }
    /// `ConvolutionDescriptor[F32, Spatial2]` at run time, as for any generic class.
    #[classmethod]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, pyo3::types::PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        cls.py()
            .import("types")?
            .getattr("GenericAlias")?
            .call1((cls, item))
    }

    fn __repr__(&self) -> String {
        let r = self.raw();
        let p = r.params();
        format!(
            "cudnn_rs.ConvolutionDescriptor(padding={:?}, stride={:?}, dilation={:?}, groups={}, mode={}, math_type={}, comp_type={})",
            p.padding,
            p.stride,
            p.dilation,
            p.groups,
            p.mode.name(),
            r.math_type().name(),
            r.comp()
        )
    }
}
