//! The descriptors of one backward-data call, as the Python layer holds them.

use std::sync::Arc;

use crate::convolution::RawConvolutionDescriptor;
use crate::problem::RawProblem;
use crate::tensor::RawDescriptor;

/// Descriptors of one call.
pub(crate) struct Descs<'a> {
    pub w: &'a Arc<RawDescriptor>,
    pub dy: &'a Arc<RawDescriptor>,
    pub dx: &'a Arc<RawDescriptor>,
    pub conv: &'a Arc<RawConvolutionDescriptor>,
}

impl Descs<'_> {
    pub(crate) fn problem(&self) -> RawProblem<'_> {
        RawProblem {
            w: self.w,
            dy: self.dy,
            dx: self.dx,
            conv: self.conv,
        }
    }
}
