//! The one backward-data problem: its operands' descriptors and convolution
//! ([`RawProblem`]), where its memory lives ([`RawPointers`]) and the by-value key every
//! per-context cache uses ([`ProblemKey`]). Shared by the legacy path, the graph-API path,
//! CUDA-graph replay and the CPU device.

use cudarc::driver::sys::CUdeviceptr;

use crate::convolution::support::{self, SupportRow};
use crate::convolution::{BwdDataGeometry, RawConvolutionDescriptor, Route};
use crate::error::{Error, Result};
use crate::math_type::MathType;
use crate::tensor::{RawDescriptor, Role};

/// The three operand descriptors and the convolution of one backward-data problem, in
/// run-time form.
#[derive(Clone, Copy)]
pub struct RawProblem<'a> {
    pub w: &'a RawDescriptor,
    pub dy: &'a RawDescriptor,
    pub dx: &'a RawDescriptor,
    pub conv: &'a RawConvolutionDescriptor,
}

impl RawProblem<'_> {
    /// The support-table row for running `algo` on this problem.
    pub fn row(&self, algo: crate::convolution::AlgoKind) -> SupportRow {
        SupportRow {
            algo,
            filter: (self.w.dtype(), self.w.format()),
            dy: (self.dy.dtype(), self.dy.format()),
            comp: self.conv.comp(),
            dx: (self.dx.dtype(), self.dx.format()),
            tensor_dims: self.dx.shape().len(),
            conv_dims: self.conv.spatial_dims(),
        }
    }

    /// Checks roles and shapes: the geometry of the problem, or why it does not fit.
    pub fn geometry(&self) -> Result<BwdDataGeometry> {
        if self.w.role() != Role::Filter {
            return Err(Error::InvalidArgument("w must be a filter".into()));
        }
        if self.dy.role() != Role::Tensor || self.dx.role() != Role::Tensor {
            return Err(Error::InvalidArgument("dy and dx must be tensors".into()));
        }
        BwdDataGeometry::new(
            self.w.shape(),
            self.dy.shape(),
            self.dx.shape(),
            self.conv.params(),
        )
    }

    /// Support table and shapes, checked before anything runs.
    pub fn validate(&self, algo: crate::convolution::AlgoKind) -> Result<BwdDataGeometry> {
        // A rank that does not fit the descriptor is a shape error, whatever the table says.
        let nd = self.conv.spatial_dims();
        for (name, d) in [("filter", self.w), ("dy", self.dy), ("dx", self.dx)] {
            if d.shape().len() != nd + 2 {
                return Err(Error::Shape(format!(
                    "{name} has rank {} but a {nd}-d convolution needs rank {} (shape {:?})",
                    d.shape().len(),
                    nd + 2,
                    d.shape()
                )));
            }
        }
        support::check(&self.row(algo)).map_err(Error::Unsupported)?;
        self.geometry()
    }

    /// The math type a call runs with: what the algorithm record asks for (heuristic and
    /// measured results) when the descriptor admits it, else the descriptor's effective
    /// one.
    pub fn resolve_math(&self, requested: Option<MathType>) -> MathType {
        requested
            .filter(|m| self.conv.admits_math_type(*m))
            .unwrap_or_else(|| self.conv.effective_math_type(self.dx.dtype()))
    }

    pub(crate) fn describe(&self) -> String {
        let p = self.conv.params();
        format!(
            "{}, dy {}, dx {}, padding {:?}, stride {:?}, dilation {:?}, groups {}, {}",
            self.w,
            self.dy,
            self.dx,
            p.padding,
            p.stride,
            p.dilation,
            p.groups,
            p.mode.name()
        )
    }
}

/// Where the memory of one backward-data call lives.
#[derive(Clone, Copy, Debug)]
pub struct RawPointers {
    pub w: CUdeviceptr,
    pub dy: CUdeviceptr,
    pub dx: CUdeviceptr,
    /// Workspace address and size in bytes (0 and 0 for none).
    pub workspace: (CUdeviceptr, usize),
}

/// Everything a workspace size depends on, by value (descriptors may be dropped and
/// their addresses reused, so their identity is no key).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct ProblemKey {
    operands: [(crate::data_type::DType, crate::tensor::Format, Vec<usize>); 3],
    params: crate::convolution::ConvParams,
    comp: crate::data_type::DType,
    math: MathType,
    route: Route,
}

impl ProblemKey {
    pub(crate) fn matches(&self, p: &RawProblem<'_>, route: Route, math: MathType) -> bool {
        let same = |k: &(crate::data_type::DType, crate::tensor::Format, Vec<usize>),
                    d: &RawDescriptor| {
            k.0 == d.dtype() && k.1 == d.format() && k.2 == d.shape()
        };
        self.route == route
            && same(&self.operands[0], p.w)
            && same(&self.operands[1], p.dy)
            && same(&self.operands[2], p.dx)
            && self.comp == p.conv.comp()
            && self.math == math
            && &self.params == p.conv.params()
    }

    pub(crate) fn new(p: &RawProblem<'_>, route: Route, math: MathType) -> Self {
        let op = |d: &RawDescriptor| (d.dtype(), d.format(), d.shape().to_vec());
        Self {
            operands: [op(p.w), op(p.dy), op(p.dx)],
            params: p.conv.params().clone(),
            comp: p.conv.comp(),
            math,
            route,
        }
    }
}

impl ProblemKey {
    /// The key as one line of text (for the saved algorithm cache); the route is not
    /// written: only `DefaultAlgo`'s measured choices are saved.
    pub(crate) fn to_text(&self) -> String {
        let dims = |v: &[usize]| {
            v.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("x")
        };
        let op = |(t, f, shape): &(crate::data_type::DType, crate::tensor::Format, Vec<usize>)| {
            format!("{}:{}:{}", t.name(), f.name(), dims(shape))
        };
        let c = &self.params;
        format!(
            "w={} dy={} dx={} pad={} stride={} dil={} groups={} mode={} comp={} math={}",
            op(&self.operands[0]),
            op(&self.operands[1]),
            op(&self.operands[2]),
            dims(&c.padding),
            dims(&c.stride),
            dims(&c.dilation),
            c.groups,
            c.mode.name(),
            self.comp.name(),
            self.math.name()
        )
    }

    /// Reads [`Self::to_text`] back (as a `DefaultAlgo` key); `None` for anything else.
    pub(crate) fn from_text(text: &str) -> Option<Self> {
        let mut fields = std::collections::HashMap::new();
        for part in text.split_whitespace() {
            let (k, v) = part.split_once('=')?;
            fields.insert(k, v);
        }
        let dims =
            |v: &str| -> Option<Vec<usize>> { v.split('x').map(|d| d.parse().ok()).collect() };
        let idims =
            |v: &str| -> Option<Vec<i64>> { v.split('x').map(|d| d.parse().ok()).collect() };
        let op = |name: &str| {
            let mut it = fields.get(name)?.split(':');
            let t = crate::data_type::DType::from_name(it.next()?)?;
            let f = crate::tensor::Format::from_name(it.next()?)?;
            Some((t, f, dims(it.next()?)?))
        };
        let mode = crate::convolution::ConvolutionMode::ALL
            .into_iter()
            .find(|m| Some(&m.name()) == fields.get("mode"))?;
        let params = crate::convolution::ConvParams::new(
            &idims(fields.get("pad")?)?,
            &idims(fields.get("stride")?)?,
            &idims(fields.get("dil")?)?,
            fields.get("groups")?.parse().ok()?,
            mode,
        )
        .ok()?;
        Some(Self {
            operands: [op("w")?, op("dy")?, op("dx")?],
            params,
            comp: crate::data_type::DType::from_name(fields.get("comp")?)?,
            math: MathType::ALL
                .into_iter()
                .find(|m| Some(&m.name()) == fields.get("math"))?,
            route: Route::Default,
        })
    }
}
