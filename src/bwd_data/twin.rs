//! The NHWC twin of a depthwise NCHW problem: which problems have one, its descriptors
//! and the workspace layout of a call through it (the running is in `transposed.rs`).
//!
//! Why:
//! cuDNN's NCHW engines for depthwise f32 convolutions are several times slower than its
//! NHWC one (on the H200: 3.6x on a 3x3 256-channel layer, 3x on a 7x7 384-channel one,
//! 15x on MobileNet-V3's first depthwise layer), more than converting the layouts costs.
//! In half precision the NCHW engines are as fast as PyTorch's own kernels at stride 1,
//! but strided ones are 3-5.5x slower than the NHWC engine (on the H200, EfficientNet's and
//! MnasNet's 5x5 stride-2 layers: 0.54 ms against 0.11; PyTorch's own kernel 0.32). PyTorch
//! does not use cuDNN for most of these (its own depthwise kernel). So the default
//! choice (`DefaultAlgo`, untimed or measured) runs such a problem as its NHWC twin:
//! it converts dy to NHWC in the workspace (`cudnnTransformTensor`), runs the twin's
//! default engine into an NHWC dx in the workspace, and converts that into the caller's
//! dx, applying alpha and beta there. The filter needs no conversion: with one input
//! channel per group, KCRS and KRSC are the same bytes. The problems the depthwise kernel
//! of our own (`direct.rs`) runs (stride 1 and 2-d stride 2, among others) run with it
//! instead: the default choice asks that first. What is left here: strided layers dilated
//! in width, and strided filters wider than 11.

use crate::convolution::{AlgoKind, RawConvolutionDescriptor};
use crate::data_type::DType;
use crate::problem::RawProblem;
use crate::tensor::{Format, RawDescriptor, Role};

/// The smallest f32 dx (elements) worth converting: below, the two conversions' launches
/// cost about what the faster engine saves.
pub(crate) const MIN_ELEMENTS: usize = 1 << 16;
/// The smallest half-precision dx (elements) worth converting, for a strided problem. On
/// the H200 (`bench/dw_probe.py`), at batch 1 with dx of 0.1-1.2 million elements,
/// `conv_input_grad` through the NCHW engines took 14-28 us a call, and through NHWC
/// copies made by PyTorch 41-82 us; at training batches (dx of 3-77 million elements)
/// the NHWC route won on every strided layer.
pub(crate) const MIN_HALF_ELEMENTS: usize = 1 << 20;
/// Alignment of the buffers inside the workspace.
pub(crate) const ALIGN: usize = 256;

/// The NHWC descriptors of a problem's operands.
pub(crate) struct Twin {
    pub(crate) w: RawDescriptor,
    pub(crate) dy: RawDescriptor,
    pub(crate) dx: RawDescriptor,
}

impl Twin {
    /// The twin of `p`, when the default choice runs `p` through one (see [`qualifies`])
    /// and the support table has the twin's configuration.
    pub(crate) fn of(p: &RawProblem<'_>) -> Option<Self> {
        if !qualifies(p) {
            return None;
        }
        let twin = Self::in_format(p, Format::Nhwc)?;
        twin.problem(p.conv).validate(AlgoKind::DefaultAlgo).ok()?;
        Some(twin)
    }

    /// `p`'s operands (same shapes and types) stored in `format`.
    pub(crate) fn in_format(p: &RawProblem<'_>, format: Format) -> Option<Self> {
        let with = |d: &RawDescriptor| RawDescriptor::new(d.role(), d.dtype(), format, d.shape());
        Some(Twin {
            w: with(p.w).ok()?,
            dy: with(p.dy).ok()?,
            dx: with(p.dx).ok()?,
        })
    }

    pub(crate) fn problem<'a>(&'a self, conv: &'a RawConvolutionDescriptor) -> RawProblem<'a> {
        RawProblem {
            w: &self.w,
            dy: &self.dy,
            dx: &self.dx,
            conv,
        }
    }
}

/// dy and dx of a problem stored in one layout, described for converting them to or from
/// the other with `cudnnTransformTensor`: a 3-d problem's as 2-d ones, depth and height
/// merged (N, C, D*H, W). The merge is exact in both layouts (depth's stride is H times
/// height's in NCDHW and in NDHWC alike), and cuDNN converts 4-d tensors with its
/// dedicated kernels (`nhwcToNchwKernel`, `nchwToNhwcKernel`) where it converts 5-d ones
/// with a generic `transposeBlock_kernel`: on the H200 that took 150 us to convert a
/// 2x16x8x28x28 f64 dx that PyTorch copies in 2.3 us, and 485 us for a 64x13x4x56x56 one
/// (2026-12-06, `bench/row_probe.py --configs f64`).
pub(crate) struct Views {
    pub(crate) dy: RawDescriptor,
    pub(crate) dx: RawDescriptor,
}

impl Views {
    /// `p`'s dy and dx (same types) stored in `format`, 3-d ones merged as said above.
    pub(crate) fn of(p: &RawProblem<'_>, format: Format) -> Option<Self> {
        let view = |d: &RawDescriptor| {
            let merged;
            let shape = match d.shape() {
                &[n, c, depth, h, w] => {
                    merged = [n, c, depth.checked_mul(h)?, w];
                    &merged[..]
                }
                s => s,
            };
            RawDescriptor::new(Role::Tensor, d.dtype(), format, shape).ok()
        };
        Some(Self {
            dy: view(p.dy)?,
            dx: view(p.dx)?,
        })
    }
}

/// Whether the default choice runs `p` through its NHWC twin: every operand NCHW, a 2-d
/// depthwise convolution (groups > 1, one input channel per group), f32 compute, and
/// either f32 data with dx of at least [`MIN_ELEMENTS`] elements, or f16/bf16 data, a
/// stride above 1 and dx of at least [`MIN_HALF_ELEMENTS`] elements.
pub(crate) fn qualifies(p: &RawProblem<'_>) -> bool {
    let data = p.dx.dtype();
    let same = p.w.dtype() == data && p.dy.dtype() == data && p.conv.comp() == DType::F32;
    let nchw = [p.w.format(), p.dy.format(), p.dx.format()]
        .iter()
        .all(|&f| f == Format::Nchw);
    let params = p.conv.params();
    let depthwise = params.groups > 1 && p.w.shape().get(1) == Some(&1);
    let large = match data {
        DType::F32 => p.dx.len() >= MIN_ELEMENTS,
        DType::F16 | DType::BF16 => {
            params.stride.iter().any(|&s| s > 1) && p.dx.len() >= MIN_HALF_ELEMENTS
        }
        _ => false,
    };
    same && nchw && depthwise && large && p.conv.spatial_dims() == 2
}

/// Byte offsets in the workspace: dy's twin at 0, dx's twin, then the engine's own.
pub(crate) struct Layout {
    pub dx: usize,
    pub engine: usize,
}

pub(crate) fn layout(p: &RawProblem<'_>) -> Layout {
    let dy = p.dy.nbytes().next_multiple_of(ALIGN);
    let dx = p.dx.nbytes().next_multiple_of(ALIGN);
    Layout {
        dx: dy,
        engine: dy + dx,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convolution::{ConvParams, ConvolutionMode};
    use crate::math_type::MathType;
    use crate::tensor::Role;

    /// A 3x3 (padding 1) problem of `stride`.
    fn problem_parts(
        dtype: DType,
        format: Format,
        x: [usize; 4],
        w: [usize; 4],
        groups: usize,
        stride: usize,
    ) -> (
        RawDescriptor,
        RawDescriptor,
        RawDescriptor,
        RawConvolutionDescriptor,
    ) {
        let params = ConvParams::new(
            &[1, 1],
            &[stride as i64; 2],
            &[1, 1],
            groups as i64,
            ConvolutionMode::CrossCorrelation,
        )
        .expect("valid parameters");
        let conv =
            RawConvolutionDescriptor::new(params, DType::F32, MathType::Default).expect("conv");
        let out = |d: usize| (d - 1) / stride + 1;
        let y = [x[0], w[0], out(x[2]), out(x[3])];
        (
            RawDescriptor::new(Role::Filter, dtype, format, &w).expect("w"),
            RawDescriptor::new(Role::Tensor, dtype, format, &y).expect("dy"),
            RawDescriptor::new(Role::Tensor, dtype, format, &x).expect("dx"),
            conv,
        )
    }

    /// A problem's four descriptors, as `problem_parts` makes them.
    type Parts = (
        RawDescriptor,
        RawDescriptor,
        RawDescriptor,
        RawConvolutionDescriptor,
    );

    fn as_problem(parts: &Parts) -> RawProblem<'_> {
        RawProblem {
            w: &parts.0,
            dy: &parts.1,
            dx: &parts.2,
            conv: &parts.3,
        }
    }

    fn qualifies_for(
        dtype: DType,
        format: Format,
        x: [usize; 4],
        w: [usize; 4],
        groups: usize,
        stride: usize,
    ) -> bool {
        qualifies(&as_problem(&problem_parts(
            dtype, format, x, w, groups, stride,
        )))
    }

    #[test]
    fn only_large_f32_nchw_depthwise_problems_take_the_twin() {
        let (x, w) = ([8, 64, 32, 32], [64, 1, 3, 3]);
        assert!(qualifies_for(DType::F32, Format::Nchw, x, w, 64, 1));
        // Channel multiplier 2 (K = 2 C): still one input channel per group.
        assert!(qualifies_for(
            DType::F32,
            Format::Nchw,
            x,
            [128, 1, 3, 3],
            64,
            1
        ));
        assert!(
            !qualifies_for(DType::F32, Format::Nhwc, x, w, 64, 1),
            "already NHWC"
        );
        assert!(
            !qualifies_for(DType::F16, Format::Nchw, x, w, 64, 1),
            "half at stride 1: NCHW engines are fine"
        );
        assert!(
            !qualifies_for(DType::F32, Format::Nchw, x, [64, 64, 3, 3], 1, 1),
            "dense"
        );
        assert!(
            !qualifies_for(DType::F32, Format::Nchw, x, [64, 2, 3, 3], 32, 1),
            "two channels a group"
        );
        assert!(
            !qualifies_for(DType::F32, Format::Nchw, [1, 64, 8, 8], w, 64, 1),
            "small"
        );
    }

    #[test]
    fn only_large_strided_half_nchw_depthwise_problems_take_the_twin() {
        // dx: 16 * 64 * 32 * 32 = 2^20 elements.
        let (x, w) = ([16, 64, 32, 32], [64, 1, 3, 3]);
        for dtype in [DType::F16, DType::BF16] {
            assert!(qualifies_for(dtype, Format::Nchw, x, w, 64, 2));
            assert!(!qualifies_for(dtype, Format::Nchw, x, w, 64, 1), "stride 1");
            assert!(
                !qualifies_for(dtype, Format::Nchw, [15, 64, 32, 32], w, 64, 2),
                "small"
            );
            assert!(
                !qualifies_for(dtype, Format::Nhwc, x, w, 64, 2),
                "already NHWC"
            );
            assert!(
                !qualifies_for(dtype, Format::Nchw, x, [64, 64, 3, 3], 1, 2),
                "dense"
            );
        }
    }

    #[test]
    fn the_twin_is_nhwc_with_the_same_shapes_and_the_layout_is_aligned() {
        let parts = problem_parts(
            DType::F32,
            Format::Nchw,
            [8, 64, 32, 33],
            [64, 1, 3, 3],
            64,
            1,
        );
        let p = as_problem(&parts);
        let twin = Twin::of(&p).expect("a twin");
        let tp = twin.problem(p.conv);
        for (a, b) in [(tp.w, p.w), (tp.dy, p.dy), (tp.dx, p.dx)] {
            assert_eq!(a.format(), Format::Nhwc);
            assert_eq!(a.shape(), b.shape());
            assert_eq!(a.nbytes(), b.nbytes());
        }
        let lay = layout(&p);
        assert_eq!(lay.dx % ALIGN, 0);
        assert_eq!(lay.engine % ALIGN, 0);
        assert!(lay.dx >= p.dy.nbytes() && lay.engine - lay.dx >= p.dx.nbytes());
    }

    #[test]
    fn conversion_views_merge_depth_into_height_and_keep_2d_shapes() {
        let params = ConvParams::new(
            &[1, 1, 1],
            &[1, 1, 1],
            &[1, 1, 1],
            16,
            ConvolutionMode::CrossCorrelation,
        )
        .expect("valid parameters");
        let conv =
            RawConvolutionDescriptor::new(params, DType::F64, MathType::Default).expect("conv");
        let t = |shape: &[usize]| {
            RawDescriptor::new(Role::Tensor, DType::F64, Format::Nhwc, shape).expect("tensor")
        };
        let w = RawDescriptor::new(Role::Filter, DType::F64, Format::Nhwc, &[16, 1, 3, 3, 3])
            .expect("w");
        let (dy, dx) = (t(&[2, 16, 8, 14, 14]), t(&[2, 16, 8, 28, 28]));
        let p = RawProblem {
            w: &w,
            dy: &dy,
            dx: &dx,
            conv: &conv,
        };
        for format in [Format::Nchw, Format::Nhwc] {
            let v = Views::of(&p, format).expect("views");
            assert_eq!(v.dy.shape(), &[2, 16, 8 * 14, 14]);
            assert_eq!(v.dx.shape(), &[2, 16, 8 * 28, 28]);
            assert_eq!((v.dy.format(), v.dx.format()), (format, format));
            // The same elements: the conversion moves all of them.
            assert_eq!((v.dy.nbytes(), v.dx.nbytes()), (dy.nbytes(), dx.nbytes()));
        }
        // 2-d: the shapes as they are.
        let parts = problem_parts(
            DType::F32,
            Format::Nhwc,
            [4, 32, 14, 14],
            [32, 1, 3, 3],
            32,
            1,
        );
        let p2 = as_problem(&parts);
        let v = Views::of(&p2, Format::Nchw).expect("views");
        assert_eq!((v.dy.shape(), v.dx.shape()), (p2.dy.shape(), p2.dx.shape()));
    }
}
