//! The operands of one backward-data call as the Python layer holds them: the three
//! tensors' cores and the convolution.

use std::sync::Arc;

use pyo3::prelude::*;

use super::args::{filter_arg, tensor_arg};
use super::conv::PyConvolutionDescriptor;
use super::descs::Descs;
use super::storage::TensorCore;

/// The operands of a call.
pub(crate) struct Operands<'a> {
    pub w: &'a Arc<TensorCore>,
    pub dy: &'a Arc<TensorCore>,
    pub dx: &'a Arc<TensorCore>,
    pub conv: Arc<crate::convolution::RawConvolutionDescriptor>,
}

impl<'a> Operands<'a> {
    pub(crate) fn new(
        w: &'a Arc<TensorCore>,
        dy: &'a Arc<TensorCore>,
        dx: &'a Arc<TensorCore>,
        conv: Arc<crate::convolution::RawConvolutionDescriptor>,
    ) -> Self {
        Self { w, dy, dx, conv }
    }

    pub(crate) fn descs(&self) -> Descs<'_> {
        Descs {
            w: &self.w.desc,
            dy: &self.dy.desc,
            dx: &self.dx.desc,
            conv: &self.conv,
        }
    }
}

/// The operands of a call, each checked to be a `Filter` / `Tensor` (a TypeError that
/// says how to make one otherwise).
pub(crate) fn operands<'a>(
    w: &'a Bound<'_, PyAny>,
    dy: &'a Bound<'_, PyAny>,
    dx: &'a Bound<'_, PyAny>,
    conv: &PyConvolutionDescriptor,
) -> PyResult<Operands<'a>> {
    Ok(Operands {
        w: &filter_arg(w, "w")?.core,
        dy: &tensor_arg(dy, "dy")?.core,
        dx: &tensor_arg(dx, "dx")?.core,
        conv: conv.raw(),
    })
}
