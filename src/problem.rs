//! The one backward-data problem: its operands' descriptors and convolution
//! ([`RawProblem`]), where its memory lives ([`RawPointers`]) and the by-value key every
//! per-context cache uses (`ProblemKey`). Shared by the legacy path, the graph-API path,
//! CUDA-graph replay and the CPU device.

use cudarc::driver::sys::CUdeviceptr;

use crate::bwd_data::support::{self, SupportRow};
use crate::convolution::{BwdDataGeometry, RawConvolutionDescriptor, Route};
use crate::error::{Error, Result};
use crate::math_type::MathType;
use crate::tensor::{Format, RawDescriptor, Role};

/// The three operand descriptors and the convolution of one backward-data problem, in
/// run-time form.
#[derive(Clone, Copy)]
pub struct RawProblem<'a> {
    pub w: &'a RawDescriptor,
    pub dy: &'a RawDescriptor,
    pub dx: &'a RawDescriptor,
    pub conv: &'a RawConvolutionDescriptor,
}

impl<'a> RawProblem<'a> {
    /// This problem with `w` as its filter.
    pub(crate) fn with_filter<'b>(&self, w: &'b RawDescriptor) -> RawProblem<'b>
    where
        'a: 'b,
    {
        RawProblem {
            w,
            dy: self.dy,
            dx: self.dx,
            conv: self.conv,
        }
    }

    /// The filter described in `dy`'s memory format, where it is stored in the other of
    /// NCHW and NHWC and its bytes are the same in both (one input channel per group, as
    /// in a depthwise filter, or every spatial extent 1, as in a 1x1 filter), and the
    /// default choice runs that configuration; `None` otherwise. Such a filter imported
    /// without a format from a channels-last model reads as NCHW (its strides fit both
    /// layouts), and on depthwise layers cuDNN ran that mix of layouts with transposes
    /// around slower kernels; PyTorch describes a channels-last model's filters as
    /// channels-last. The default choice (and its measured tier) runs the problem with the
    /// filter so described: the same bytes, so the same result.
    pub(crate) fn filter_in_dy_format(&self) -> Option<RawDescriptor> {
        let (from, to) = (self.w.format(), self.dy.format());
        let plain = |f: Format| matches!(f, Format::Nchw | Format::Nhwc);
        if from == to || !plain(from) || !plain(to) {
            return None;
        }
        let shape = self.w.shape();
        let same_bytes = shape.get(1) == Some(&1) || shape.iter().skip(2).all(|&d| d == 1);
        if !same_bytes {
            return None;
        }
        let w = RawDescriptor::new(Role::Filter, self.w.dtype(), to, shape).ok()?;
        let row = self
            .with_filter(&w)
            .row(crate::convolution::AlgoKind::DefaultAlgo);
        support::is_supported(&row).then_some(w)
    }
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

/// Up to eight extents (shapes, paddings, strides, dilations; `i64` for a tensor's
/// element strides), stored inline so that a key is built on the call path without
/// allocating. Problems are validated to rank 4 or 5 (2 or 3 spatial dimensions)
/// before a key is made.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Dims<T = usize> {
    len: usize,
    v: [T; 8],
}

impl<T: Copy + Default> Dims<T> {
    /// The first eight of `values` (a shape has at most eight).
    pub(crate) fn of(values: &[T]) -> Self {
        let mut v = [T::default(); 8];
        for (slot, x) in v.iter_mut().zip(values) {
            *slot = *x;
        }
        Self {
            len: values.len(),
            v,
        }
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        &self.v[..self.len.min(8)]
    }
}

/// Everything a workspace size depends on, by value (descriptors may be dropped and
/// their addresses reused, so their identity is no key). Allocation-free: every
/// per-context cache looks calls up by it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ProblemKey {
    operands: [(crate::data_type::DType, crate::tensor::Format, Dims); 3],
    padding: Dims,
    stride: Dims,
    dilation: Dims,
    groups: usize,
    mode: crate::convolution::ConvolutionMode,
    comp: crate::data_type::DType,
    math: MathType,
    route: Route,
}

impl ProblemKey {
    pub(crate) fn matches(&self, p: &RawProblem<'_>, route: Route, math: MathType) -> bool {
        *self == Self::new(p, route, math)
    }

    pub(crate) fn new(p: &RawProblem<'_>, route: Route, math: MathType) -> Self {
        let op = |d: &RawDescriptor| (d.dtype(), d.format(), Dims::of(d.shape()));
        let c = p.conv.params();
        Self {
            operands: [op(p.w), op(p.dy), op(p.dx)],
            padding: Dims::of(&c.padding),
            stride: Dims::of(&c.stride),
            dilation: Dims::of(&c.dilation),
            groups: c.groups,
            mode: c.mode,
            comp: p.conv.comp(),
            math,
            route,
        }
    }
}

impl ProblemKey {
    /// The key as one line of text (for the saved algorithm cache); the route is not
    /// written: only `DefaultAlgo`'s measured choices are saved.
    pub(crate) fn to_text(self) -> String {
        let dims = |d: &Dims| {
            d.as_slice()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("x")
        };
        let op = |(t, f, shape): &(crate::data_type::DType, crate::tensor::Format, Dims)| {
            format!("{}:{}:{}", t.name(), f.name(), dims(shape))
        };
        format!(
            "w={} dy={} dx={} pad={} stride={} dil={} groups={} mode={} comp={} math={}",
            op(&self.operands[0]),
            op(&self.operands[1]),
            op(&self.operands[2]),
            dims(&self.padding),
            dims(&self.stride),
            dims(&self.dilation),
            self.groups,
            self.mode.name(),
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
        let dims = |v: &str| -> Option<Vec<usize>> {
            let d: Vec<usize> = v
                .split('x')
                .map(|d| d.parse().ok())
                .collect::<Option<_>>()?;
            (d.len() <= 8).then_some(d)
        };
        let idims =
            |v: &str| -> Option<Vec<i64>> { v.split('x').map(|d| d.parse().ok()).collect() };
        let op = |name: &str| {
            let mut it = fields.get(name)?.split(':');
            let t = crate::data_type::DType::from_name(it.next()?)?;
            let f = crate::tensor::Format::from_name(it.next()?)?;
            Some((t, f, Dims::of(&dims(it.next()?)?)))
        };
        let mode = crate::convolution::ConvolutionMode::ALL
            .into_iter()
            .find(|m| Some(&m.name()) == fields.get("mode"))?;
        // Checked as a descriptor would be (spatial rank, signs, int range).
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
            padding: Dims::of(&params.padding),
            stride: Dims::of(&params.stride),
            dilation: Dims::of(&params.dilation),
            groups: params.groups,
            mode: params.mode,
            comp: crate::data_type::DType::from_name(fields.get("comp")?)?,
            math: MathType::ALL
                .into_iter()
                .find(|m| Some(&m.name()) == fields.get("math"))?,
            route: Route::Default,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convolution::{ConvParams, ConvolutionMode};
    use crate::data_type::DType;
    use crate::tensor::Format;

    #[test]
    fn keys_are_by_value_and_read_back_from_text() {
        let desc = |role, shape: &[usize]| {
            RawDescriptor::new(role, DType::F16, Format::Nhwc, shape).unwrap()
        };
        let (w, dy, dx) = (
            desc(Role::Filter, &[8, 4, 3, 3]),
            desc(Role::Tensor, &[2, 8, 5, 6]),
            desc(Role::Tensor, &[2, 4, 9, 11]),
        );
        let params =
            ConvParams::new(&[1, 0], &[2, 2], &[1, 1], 1, ConvolutionMode::Convolution).unwrap();
        let conv = RawConvolutionDescriptor::new(params, DType::F32, MathType::Default).unwrap();
        let p = RawProblem {
            w: &w,
            dy: &dy,
            dx: &dx,
            conv: &conv,
        };
        let key = ProblemKey::new(&p, Route::Default, MathType::TensorOp);
        assert!(key.matches(&p, Route::Default, MathType::TensorOp));
        assert!(!key.matches(&p, Route::Default, MathType::Fma));
        assert!(!key.matches(&p, Route::Engine(None), MathType::TensorOp));
        let text = key.to_text();
        assert!(text.contains("dx=f16:NHWC:2x4x9x11"), "{text}");
        assert!(ProblemKey::from_text(&text) == Some(key));
        assert!(ProblemKey::from_text("w=f16:NHWC:1x2 garbage").is_none());
        assert!(ProblemKey::from_text(&text.replace("stride=2x2", "stride=0x2")).is_none());
    }

    #[test]
    fn a_filter_of_either_layout_is_described_in_dys() {
        let desc = |role, dtype, format, shape: &[usize]| {
            RawDescriptor::new(role, dtype, format, shape).unwrap()
        };
        let conv = |groups| {
            let params = ConvParams::new(
                &[0, 0],
                &[1, 1],
                &[1, 1],
                groups,
                ConvolutionMode::CrossCorrelation,
            )
            .unwrap();
            RawConvolutionDescriptor::new(params, DType::F32, MathType::Default).unwrap()
        };
        // (filter shape, groups, filter format, dy/dx format, dtype) -> the format the
        // default choice describes the filter in, if another.
        let cases = [
            // depthwise 3x3 and 1x1 filters, channels-last dy: described NHWC
            (
                [8, 1, 3, 3],
                8,
                Format::Nchw,
                Format::Nhwc,
                DType::F16,
                Some(Format::Nhwc),
            ),
            (
                [8, 4, 1, 1],
                1,
                Format::Nchw,
                Format::Nhwc,
                DType::F32,
                Some(Format::Nhwc),
            ),
            // and the other way round
            (
                [8, 1, 3, 3],
                8,
                Format::Nhwc,
                Format::Nchw,
                DType::BF16,
                Some(Format::Nchw),
            ),
            // a 3x3 filter of four input channels: other bytes in each layout
            (
                [8, 4, 3, 3],
                1,
                Format::Nchw,
                Format::Nhwc,
                DType::F32,
                None,
            ),
            // already dy's layout
            (
                [8, 1, 3, 3],
                8,
                Format::Nhwc,
                Format::Nhwc,
                DType::F32,
                None,
            ),
        ];
        for (shape, groups, from, to, dtype, want) in cases {
            let x = [2, shape[1] * groups as usize, 5, 5];
            let y = [2, shape[0], 5 - shape[2] + 1, 5 - shape[3] + 1];
            let (w, dy, dx) = (
                desc(Role::Filter, dtype, from, &shape),
                desc(Role::Tensor, dtype, to, &y),
                desc(Role::Tensor, dtype, to, &x),
            );
            let conv = conv(groups);
            let p = RawProblem {
                w: &w,
                dy: &dy,
                dx: &dx,
                conv: &conv,
            };
            let got = p.filter_in_dy_format();
            assert_eq!(
                got.as_ref().map(RawDescriptor::format),
                want,
                "{shape:?} {from} -> {to}"
            );
            if let Some(w2) = &got {
                assert_eq!(
                    (w2.shape(), w2.dtype(), w2.role()),
                    (w.shape(), dtype, Role::Filter)
                );
                assert!(p
                    .with_filter(w2)
                    .validate(crate::convolution::AlgoKind::DefaultAlgo)
                    .is_ok());
            }
        }
    }
}
