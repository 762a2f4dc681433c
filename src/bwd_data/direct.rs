//! Depthwise problems stored NCHW (2-d and 3-d) at stride 1, run by a kernel of our own
//! (`src/kernels/depthwise_dgrad.cu`) instead of cuDNN: which problems and the kernel's
//! arguments (loading and launching it is in `kernel.rs`).
//!
//! Why:
//! on the H200 (`bench/direct_probe.py`) every cuDNN engine is slower than PyTorch's own
//! depthwise kernels on dilated depthwise layers (DeepLabV3's and LR-ASPP's 5x5 dilation-2
//! layers: the default 1.8-1.9x PyTorch's time) and on 3-d depthwise layers at stride 1
//! (MViT's pooling, X3D's kind: 1.4-2.0x), and on depthwise layers with two filters per
//! channel in f32 (4x). The kernel computes several outputs of a row per thread from
//! values held in registers, and takes 0.33-0.54x PyTorch's time on those layers, and less
//! than cuDNN's on the other stride-1 NCHW depthwise layers in f32. In half precision
//! cuDNN's NCHW engines stay faster on large undilated 2-d layers with one filter per
//! channel (3x3: 0.022 ms against 0.036 at 6.4 million dx elements), which keep them.
//!
//! The kernel is shipped compiled (`scripts/gen_ptx.py`): cubins for compute capability
//! 8.x and 9.x, PTX for other GPUs (the driver compiles that on first use). A GPU or
//! driver that loads none of them runs these problems through cuDNN as before, and so does
//! every problem with `CUDNN_RS_DIRECT=0` in the environment.

use std::sync::{Arc, OnceLock};

use cudarc::driver::{CudaFunction, CudaModule, DeviceRepr};

use crate::convolution::ConvolutionMode;
use crate::data_type::DType;
use crate::problem::RawProblem;
use crate::tensor::Format;

/// Outputs a thread computes (the kernel's `TX`).
const TX: u64 = 4;
/// Threads per block (the kernel's launch bound).
pub(crate) const BLOCK: u32 = 256;
/// The most filters per channel: the kernel loops over them per output, and one and two
/// were measured.
const MAX_MULTIPLIER: usize = 2;
/// The smallest half-precision dx (elements) of an undilated 2-d layer with one filter per
/// channel that stays with cuDNN (see the module documentation): at 0.3 million elements
/// the kernel took 0.005 ms against cuDNN's 0.008, at 6.4 million 0.036 against 0.022.
const HALF_CUDNN_ELEMENTS: usize = 1 << 20;

/// The kernel's arguments, laid out as `Params` in the kernel source.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Params {
    n: u32,
    c: u32,
    m: u32,
    d: u32,
    h: u32,
    w: u32,
    od: u32,
    oh: u32,
    ow: u32,
    pd: i32,
    ph: i32,
    pw: i32,
    dd: i32,
    dh: i32,
    dw: i32,
    flip: i32,
    alpha: f32,
    beta: f32,
    items: u32,
}

impl Params {
    /// These arguments with the call's scalars (f32, as cuDNN takes them for these types).
    pub(crate) fn scaled(&self, alpha: f64, beta: f64) -> Self {
        Params {
            alpha: alpha as f32,
            beta: beta as f32,
            ..*self
        }
    }
}

// SAFETY: `Params` is plain data with a C layout, the struct the kernel takes by value.
unsafe impl DeviceRepr for Params {}

/// How the kernel runs one problem: its entry point, arguments (alpha and beta set per
/// call) and grid, and the entry point loaded (by `CudnnContext::direct`).
#[derive(Clone, Debug)]
pub(crate) struct Direct {
    pub(crate) entry: String,
    pub(crate) params: Params,
    pub(crate) blocks: u32,
    pub(crate) function: Option<CudaFunction>,
}

impl Direct {
    /// The kernel's plan for `p`, when the default choice runs `p` with it (see
    /// [`qualifies`]).
    pub(crate) fn of(p: &RawProblem<'_>) -> Option<Self> {
        if !qualifies(p) {
            return None;
        }
        let conv = p.conv.params();
        let (x, y, w) = (p.dx.shape(), p.dy.shape(), p.w.shape());
        // 2-d problems are 3-d ones of depth 1.
        let lift = |s: &[usize], fill: usize| -> Vec<usize> {
            let mut v = vec![fill; 3 - s.len()];
            v.extend_from_slice(s);
            v
        };
        let (xs, ys, ks) = (lift(&x[2..], 1), lift(&y[2..], 1), lift(&w[2..], 1));
        let (pad, dil) = (lift(&conv.padding, 0), lift(&conv.dilation, 1));
        let u = |v: usize| u32::try_from(v).ok();
        let i = |v: usize| i32::try_from(v).ok();
        // Work items: per dx row, ceil(W / (TX dw)) spans of TX dw columns, dw threads each.
        let spans = (xs[2] as u64).div_ceil(TX * dil[2] as u64);
        let rows = (x[0] * x[1] * xs[0] * xs[1]) as u64;
        let items = rows.checked_mul(spans * dil[2] as u64)?;
        if items >= 1 << 31 {
            return None;
        }
        let params = Params {
            n: u(x[0])?,
            c: u(x[1])?,
            m: u(w[0] / x[1])?,
            d: u(xs[0])?,
            h: u(xs[1])?,
            w: u(xs[2])?,
            od: u(ys[0])?,
            oh: u(ys[1])?,
            ow: u(ys[2])?,
            pd: i(pad[0])?,
            ph: i(pad[1])?,
            pw: i(pad[2])?,
            dd: i(dil[0])?,
            dh: i(dil[1])?,
            dw: i(dil[2])?,
            flip: i32::from(conv.mode == ConvolutionMode::Convolution),
            alpha: 1.0,
            beta: 0.0,
            items: items as u32,
        };
        let dtype = match p.dx.dtype() {
            DType::F32 => "f32",
            DType::F16 => "f16",
            _ => "bf16",
        };
        Some(Direct {
            entry: format!("dw_dgrad_k{}{}{}_s1_{dtype}", ks[0], ks[1], ks[2]),
            params,
            blocks: u32::try_from(items.div_ceil(u64::from(BLOCK))).ok()?,
            function: None,
        })
    }
}

/// Whether the default choice runs `p` with the kernel: every operand NCHW (NCDHW) in
/// the same type (f32, f16 or bf16), f32 compute, a depthwise convolution (one input
/// channel per group, groups = channels > 1) with one or two filters per channel, every
/// stride 1, a 3x3, 5x5 or 7x7 filter (3x3x3 in 3-d), any padding and dilation, and each
/// operand under 2^31 elements; not a half-precision undilated 2-d problem with one
/// filter per channel and dx of at least [`HALF_CUDNN_ELEMENTS`] elements. Off with
/// `CUDNN_RS_DIRECT=0`.
pub(crate) fn qualifies(p: &RawProblem<'_>) -> bool {
    if !enabled() {
        return false;
    }
    let data = p.dx.dtype();
    let same = p.w.dtype() == data && p.dy.dtype() == data && p.conv.comp() == DType::F32;
    let typed = matches!(data, DType::F32 | DType::F16 | DType::BF16);
    let nchw = [p.w.format(), p.dy.format(), p.dx.format()]
        .iter()
        .all(|&f| f == Format::Nchw);
    let conv = p.conv.params();
    let (x, w) = (p.dx.shape(), p.w.shape());
    let channels = x.get(1).copied().unwrap_or(0);
    let depthwise = conv.groups > 1 && conv.groups == channels && w.get(1) == Some(&1);
    let multiplier = w.first().copied().unwrap_or(0) / channels.max(1);
    let filters = depthwise
        && (1..=MAX_MULTIPLIER).contains(&multiplier)
        && w.first() == Some(&(channels * multiplier));
    let kernel = matches!(&w[2.min(w.len())..], [3, 3] | [5, 5] | [7, 7] | [3, 3, 3]);
    let stride1 = conv.stride.iter().all(|&s| s == 1);
    let small = [p.w.len(), p.dy.len(), p.dx.len()]
        .iter()
        .all(|&n| n < 1 << 31);
    let cudnn_half = data != DType::F32
        && p.conv.spatial_dims() == 2
        && conv.dilation.iter().all(|&d| d == 1)
        && multiplier == 1
        && p.dx.len() >= HALF_CUDNN_ELEMENTS;
    same && typed && nchw && filters && kernel && stride1 && small && !cudnn_half
}

/// `false` when `CUDNN_RS_DIRECT=0` is set (read once).
fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("CUDNN_RS_DIRECT").map_or(true, |v| v != "0"))
}

/// The kernel module of a context, loaded on first use.
#[derive(Default)]
pub(crate) enum Module {
    #[default]
    NotLoaded,
    Loaded(Arc<CudaModule>),
    /// No image of the kernel loads on this device.
    Unavailable,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convolution::{ConvParams, RawConvolutionDescriptor};
    use crate::math_type::MathType;
    use crate::tensor::{RawDescriptor, Role};

    /// A stride-`stride` problem with dx `x`, filter `w` (its spatial extent and
    /// dilation `dil` fix dy), padding `pad`, `groups`, all of `dtype` and `format`.
    struct Case {
        dtype: DType,
        format: Format,
        x: Vec<usize>,
        w: Vec<usize>,
        groups: usize,
        stride: usize,
        pad: usize,
        dil: usize,
        mode: ConvolutionMode,
    }

    impl Case {
        fn depthwise(x: &[usize], k: &[usize]) -> Self {
            let mut w = vec![x[1], 1];
            w.extend_from_slice(k);
            Case {
                dtype: DType::F32,
                format: Format::Nchw,
                x: x.to_vec(),
                w,
                groups: x[1],
                stride: 1,
                pad: k[0] / 2,
                dil: 1,
                mode: ConvolutionMode::CrossCorrelation,
            }
        }

        fn with(self, f: impl FnOnce(&mut Self)) -> Self {
            let mut c = self;
            f(&mut c);
            c
        }

        fn parts(&self) -> [RawDescriptor; 3] {
            let out = |(i, &x): (usize, &usize)| {
                let k = self.w[i + 2];
                (x + 2 * self.pad - self.dil * (k - 1) - 1) / self.stride + 1
            };
            let mut y = vec![self.x[0], self.w[0]];
            y.extend(self.x[2..].iter().enumerate().map(out));
            let d = |role, shape: &[usize]| {
                RawDescriptor::new(role, self.dtype, self.format, shape).expect("descriptor")
            };
            [
                d(Role::Filter, &self.w),
                d(Role::Tensor, &y),
                d(Role::Tensor, &self.x),
            ]
        }

        fn conv(&self) -> RawConvolutionDescriptor {
            let n = self.x.len() - 2;
            let params = ConvParams::new(
                &vec![self.pad as i64; n],
                &vec![self.stride as i64; n],
                &vec![self.dil as i64; n],
                self.groups as i64,
                self.mode,
            )
            .expect("valid parameters");
            RawConvolutionDescriptor::new(params, DType::F32, MathType::Default).expect("conv")
        }

        fn plan(&self) -> Option<Direct> {
            let ([w, dy, dx], conv) = (self.parts(), self.conv());
            let p = RawProblem {
                w: &w,
                dy: &dy,
                dx: &dx,
                conv: &conv,
            };
            assert_eq!(qualifies(&p), Direct::of(&p).is_some());
            Direct::of(&p)
        }
    }

    #[test]
    fn stride_one_nchw_depthwise_problems_of_the_kernels_filters_take_it() {
        let x = [8, 64, 28, 28];
        let yes = |c: Case, why: &str| assert!(c.plan().is_some(), "{why}");
        let no = |c: Case, why: &str| assert!(c.plan().is_none(), "{why}");
        yes(Case::depthwise(&x, &[3, 3]), "3x3");
        yes(
            Case::depthwise(&x, &[5, 5]).with(|c| c.dil = 2),
            "5x5 dilated",
        );
        yes(Case::depthwise(&x, &[7, 7]), "7x7");
        yes(Case::depthwise(&[2, 96, 8, 14, 14], &[3, 3, 3]), "3x3x3");
        yes(
            Case::depthwise(&x, &[3, 3]).with(|c| c.w[0] = 128),
            "two filters a channel",
        );
        yes(
            Case::depthwise(&x, &[3, 3]).with(|c| c.mode = ConvolutionMode::Convolution),
            "convolution mode",
        );
        no(
            Case::depthwise(&x, &[3, 3]).with(|c| c.format = Format::Nhwc),
            "channels last",
        );
        no(
            Case::depthwise(&x, &[3, 3]).with(|c| c.stride = 2),
            "strided",
        );
        no(
            Case::depthwise(&x, &[3, 3]).with(|c| c.w[0] = 192),
            "three filters a channel",
        );
        no(Case::depthwise(&x, &[5, 3]), "5x3");
        no(Case::depthwise(&[2, 96, 8, 14, 14], &[1, 3, 3]), "1x3x3");
        no(
            Case::depthwise(&x, &[3, 3]).with(|c| {
                c.w = vec![64, 64, 3, 3];
                c.groups = 1;
            }),
            "dense",
        );
        no(
            Case::depthwise(&x, &[3, 3]).with(|c| {
                c.w = vec![64, 2, 3, 3];
                c.groups = 32;
            }),
            "two channels a group",
        );
    }

    #[test]
    fn large_undilated_2d_half_problems_with_one_filter_a_channel_stay_with_cudnn() {
        // dx: 16 * 64 * 32 * 32 = 2^20 elements; one batch less is under the bound.
        let (big, small) = ([16, 64, 32, 32], [15, 64, 32, 32]);
        for dtype in [DType::F16, DType::BF16] {
            let case = |x: &[usize]| Case::depthwise(x, &[3, 3]).with(|c| c.dtype = dtype);
            assert!(case(&big).plan().is_none(), "{dtype:?} large");
            assert!(case(&small).plan().is_some(), "{dtype:?} under the bound");
            assert!(
                case(&big).with(|c| c.dil = 2).plan().is_some(),
                "{dtype:?} dilated"
            );
            assert!(
                case(&big).with(|c| c.w[0] = 128).plan().is_some(),
                "{dtype:?} two filters a channel"
            );
            let video = Case::depthwise(&[16, 64, 4, 32, 32], &[3, 3, 3]);
            assert!(video.with(|c| c.dtype = dtype).plan().is_some(), "3-d");
        }
        assert!(Case::depthwise(&big, &[3, 3]).plan().is_some(), "f32");
    }

    #[test]
    fn a_plan_names_the_entry_point_and_covers_each_row_in_spans() {
        // 5x5, dilation 2, padding 4 (dy as large as dx), convolution mode, 2-d: a depth
        // of 1. Per row, 13 columns in spans of 4 * 2 = 8: two spans, two threads each.
        let case = Case::depthwise(&[2, 8, 10, 13], &[5, 5]).with(|c| {
            c.dil = 2;
            c.pad = 4;
            c.mode = ConvolutionMode::Convolution;
            c.dtype = DType::BF16;
        });
        let plan = case.plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_k155_s1_bf16");
        let p = plan.params;
        assert_eq!((p.n, p.c, p.m), (2, 8, 1));
        assert_eq!((p.d, p.h, p.w), (1, 10, 13));
        assert_eq!((p.od, p.oh, p.ow), (1, 10, 13));
        assert_eq!((p.pd, p.ph, p.pw), (0, 4, 4));
        assert_eq!((p.dd, p.dh, p.dw), (1, 2, 2));
        assert_eq!(p.flip, 1);
        assert_eq!(p.items, 2 * 8 * 10 * 2 * 2);
        assert_eq!(plan.blocks, (640u32).div_ceil(BLOCK));
        let video = Case::depthwise(&[1, 4, 3, 5, 6], &[3, 3, 3]).with(|c| c.w[0] = 8);
        let plan = video.plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_k333_s1_f32");
        assert_eq!((plan.params.m, plan.params.flip), (2, 0));
        assert_eq!(plan.params.items, 4 * 3 * 5 * 2);
    }
}
