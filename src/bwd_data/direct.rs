//! Depthwise problems stored NCHW (2-d and 3-d) run by a kernel of our own
//! (`src/kernels/depthwise_dgrad.cu`) instead of cuDNN: which problems and the kernel's
//! arguments (loading and launching it is in `kernel.rs`).
//!
//! Why, measured on the H200 (`bench/direct_probe.py`, `bench/dw_sweep.py`):
//! - every cuDNN engine is slower than PyTorch's own depthwise kernels on dilated
//!   depthwise layers (LR-ASPP's 5x5 dilation-2 layers: the default took 1.8-2.0x
//!   PyTorch's time), on 3-d depthwise layers (MViT's pooling, X3D's kind: 1.4-2.0x at
//!   stride 1, up to 1.15x strided), on filters other than 3x3, 5x5 and 7x7 (9x9 to 31x31:
//!   1.4-1.95x; 1x7, 7x1, 1x3, 3x1: 1.05-2.4x), and on f32 layers with two filters per
//!   channel (3.4x; 2-8x with 3 to 64, see [`MAX_NCHW_MULTIPLIER`]);
//! - on 3-d depthwise layers of filters other than 3x3x3 (1x3x3 to 1x7x7, 1x1x1, 5x3x3,
//!   3x5x5, 3x1x1) cuDNN runs a grouped engine of 0.46-0.67x PyTorch's time and 1.5-3.7x
//!   the kernel's (`bench/direct_probe.py --other-3d`), whose first call took 0.7-2.7 ms
//!   (19 ms on a 1x1x1 layer drawn at random), the kernel's 0.1-0.8 ms; on a small 5x5x5
//!   layer at stride 3 in half precision its engine took 15.5x PyTorch's time, the kernel
//!   0.96x;
//! - on 2-d strided layers cuDNN's best (the NHWC twin, `twin.rs`) is compiled at run time,
//!   0.2-0.7 s on a shape's first call, and takes 2-3x the kernel's time.
//!
//! The kernel computes four outputs of a row per thread from values held in registers
//! (eight on large 2-d 3x3, 5x5 and 7x7 layers at stride 1, see [`WIDE_TX`]):
//! 0.33-0.58x PyTorch's time on the stride-1 layers above, 0.21-0.29x (f32) on 2-d
//! stride-2 ones, 0.12-0.46x on 3-d ones strided 2 in height and width (MViT's pooling;
//! 0.38-0.95x at other strides), 0.37-1.02x on the other strided 2-d ones (stride 3,
//! 3x5, 9x9, even filters; cuDNN's best 0.81-1.83x, compiled for 0.17-0.42 s on a
//! shape's first call), and less than cuDNN's on the other
//! NCHW depthwise layers in f32. Half-precision undilated square 2-d layers at stride 1
//! with one filter per channel from [`HALF_CUDNN_ELEMENTS`] elements of dx are the
//! exception: cuDNN's NCHW engine is faster there (see [`preferred`]). Channels-last
//! 3x3, 5x5 and 7x7 layers at stride 1 run with entry points of their own, which load
//! four channels at a time (see [`runs`]; small layers and float16 3x3 and 5x5 ones stay
//! with cuDNN, see [`preferred`]); other channels-last problems of filters cuDNN's NHWC
//! engines run slowly run with the kernel on NCHW copies of dy and dx ([`via_nchw`],
//! [`Via`]).
//!
//! The kernel is shipped compiled (`scripts/gen_ptx.py`), one image per entry point,
//! each loaded on its first call (`kernel.rs`): cubins for compute capability 8.x and
//! 9.x, PTX for other GPUs (the driver compiles that on first use). A GPU or driver that
//! loads none of them runs these problems through cuDNN as before, and so does
//! every problem with `CUDNN_RS_DIRECT=0` in the environment (`CUDNN_RS_DIRECT=all`: every
//! problem the kernel runs, to measure it against cuDNN).

use std::sync::OnceLock;

use cudarc::driver::CudaFunction;

use super::twin::Views;
use crate::convolution::ConvolutionMode;
use crate::data_type::DType;
use crate::problem::RawProblem;
use crate::tensor::Format;

/// Outputs a thread computes (the kernel's `TX`) ...
const TX: u64 = 4;
/// ... and in the `s1x8` entry points (2-d 3x3, 5x5 and 7x7 at stride 1), which problems
/// of at least [`WIDE_ITEMS`] work items of [`TX`] outputs run (in f32 only 5x5 and 7x7
/// rows up to [`WIDE_F32_MAX_WIDTH`] wide). On the H200 (`bench/dw_sweep.py`, NCHW, batch
/// 32, 0.3-2.4 million work items) they took 0.72-0.85x the four-output entries' time on
/// 5x5 and 7x7 layers in f16 and bf16, 0.87-0.99x on 3x3 in half precision, and in f32
/// 0.82-0.94x on 5x5 and 7x7 rows 7-28 wide, but 0.99x 56 wide, 1.21x on a 5x5 layer 64
/// wide (`bench/zoo.py`, LR-ASPP) and 1.6-1.8x on 3x3; at batch 1 (20 000-50 000 items,
/// too few threads to fill the GPU) up to 1.8x.
const WIDE_TX: u64 = 8;
/// See [`WIDE_TX`].
const WIDE_F32_MAX_WIDTH: usize = 32;
/// See [`WIDE_TX`].
const WIDE_ITEMS: u64 = 1 << 18;
/// Threads per block (the kernel's launch bound).
pub(crate) const BLOCK: u32 = 256;
/// The most filters a block of the channels-last entry points stages (the kernel's
/// `NHWC_SLOTS`): its channels times the filters per channel.
const NHWC_SLOTS: usize = 128;
/// The smallest dx (elements) of a channels-last 3x3 or 5x5 layer the default runs with
/// the kernel, and of a 7x7 one: smaller ones stay with cuDNN's NHWC engine, which took
/// less GPU time a call there. On the H200 (`bench/nhwc_small.py`, f32 and bf16, 20 calls
/// between two events) cuDNN's took 0.0033-0.0059 ms at batch 1 against the kernel's
/// 0.0065-0.0118, 0.0050 against 0.0072 on a 3x3 layer of 0.8 million elements, and
/// 0.0150-0.0166 against 0.0150-0.0162 on a 7x7 layer of 0.6 million; the kernel won from
/// 1.2 million (7x7, 0.78-0.96x) and 4.2 million (3x3 and 5x5, 0.81-0.95x). cuDNN compiles
/// that engine on a shape's first call (0.15-0.27 s).
const NHWC_ELEMENTS: usize = 1 << 22;
/// See [`NHWC_ELEMENTS`].
const NHWC_7X7_ELEMENTS: usize = 1 << 20;
/// The blocks a channels-last launch aims at: each block takes chunks of work items this
/// many blocks apart, reusing the weights it staged.
const NHWC_BLOCKS: u64 = 2048;
/// The most filters per channel of a channels-last problem (natively, or on NCHW copies;
/// f64 on copies takes [`MAX_NCHW_MULTIPLIER`], see [`via_nchw`]): the kernel loops over
/// them per output, and one and two were measured.
const MAX_MULTIPLIER: usize = 2;
/// The most filters per channel of an NCHW problem (see [`MAX_MULTIPLIER`]). On the H100
/// (`bench/direct_probe.py --multiplier`, nine layers of 3 to 64 filters a channel, f32,
/// f16 and bf16, batch 1 to 32) the kernel took 0.16-0.98x PyTorch's time against
/// cuDNN's 0.20-8.0x; the exception is a 5x5 layer of 16 channels and 24 filters each in
/// half precision, 1.07-1.11x PyTorch's time at batch 1 and 32, where cuDNN's tensor-core
/// engine took 0.56-0.58x at batch 1 and 1.22x at batch 32.
const MAX_NCHW_MULTIPLIER: usize = 64;
/// The smallest half-precision dx (elements) of an undilated 2-d layer with one filter per
/// channel that stays with cuDNN (see the module documentation): at 0.3 million elements
/// the kernel took 0.005 ms against cuDNN's 0.008, at 6.4 million 0.036 against 0.022.
const HALF_CUDNN_ELEMENTS: usize = 1 << 20;
/// The largest plane (dx's height times width) of a 7x7 layer among those
/// ([`HALF_CUDNN_ELEMENTS`]) that the measured default still runs with the kernel: cuDNN's
/// engine, compiled at run time (0.3-0.6 s on a shape's first call), is no faster there.
/// On the H200 (`bench/dw_sweep.py`, NCHW, batch 32, f16 and bf16) it took 1.02x the
/// kernel's time a call on 14x14 planes (384 channels) and 1.27x on 7x7 (768), but 0.79x
/// on 28x28 (192) and 0.93-0.96x on 56x56 (96).
const HALF_7X7_KERNEL_PLANE: usize = 400;
/// The bound on padding, dilation and stride (see [`runs`]).
const MAX_GEOMETRY: usize = 1 << 16;
/// The widest 2-d filter of an entry point taking the filter's height at run time (the
/// kernel source's `dw_dgrad_kw<KW>_s1_*`, odd widths 1 to 31).
const MAX_BAND_WIDTH: usize = 31;

/// Whether a 2-d filter of `kh` x `kw` has an entry point taking its height at run time:
/// an odd width up to [`MAX_BAND_WIDTH`], a height under [`MAX_GEOMETRY`].
fn band(kh: usize, kw: usize) -> bool {
    (1..MAX_GEOMETRY).contains(&kh) && kw % 2 == 1 && kw <= MAX_BAND_WIDTH
}

/// The widest 2-d filter of a strided entry point taking the filter's height at run time
/// (the kernel source's `dw_dgrad_kw<KW>_strided_*`, widths 1 to 11).
const MAX_STRIDED_WIDTH: usize = 11;

/// Whether a 2-d filter of `kh` x `kw` has a strided entry point taking its height at run
/// time: a width up to [`MAX_STRIDED_WIDTH`], a height under [`MAX_GEOMETRY`].
fn strided_band(kh: usize, kw: usize) -> bool {
    (1..MAX_GEOMETRY).contains(&kh) && (1..=MAX_STRIDED_WIDTH).contains(&kw)
}

/// Whether a filter extent has an entry point of its own (its height fixed in it): 3x3,
/// 5x5, 7x7 and 3x3x3.
fn fixed_filter(extent: &[usize]) -> bool {
    matches!(extent, [3, 3] | [5, 5] | [7, 7] | [3, 3, 3])
}

/// The height and width of a 2-d or 3-d filter extent, for the entry points that take the
/// filter's height and depth at run time (their depth loop, like the 3x3x3 ones', takes
/// any depth, padding, dilation and stride); `None` for another rank or a depth at or
/// over [`MAX_GEOMETRY`].
fn band_extent(extent: &[usize]) -> Option<(usize, usize)> {
    match *extent {
        [kh, kw] => Some((kh, kw)),
        [kd, kh, kw] if (1..MAX_GEOMETRY).contains(&kd) => Some((kh, kw)),
        _ => None,
    }
}

/// Channels a channels-last entry point loads at a time for `c` channels with `m` filters
/// each: four where four divide `c`, else one; one with two filters a channel (dy's
/// channels of neighbouring channels are not adjacent) or `scalar`.
fn nhwc_vector(c: usize, m: usize, scalar: bool) -> usize {
    if !scalar && m == 1 && c % 4 == 0 {
        4
    } else {
        1
    }
}

/// The channels a block of a channels-last entry point takes: the most that divide `c`,
/// are a multiple of `vec` and have at most [`NHWC_SLOTS`] filters (`m` each). `None`
/// only for `vec` not dividing `c`.
fn nhwc_group(c: usize, m: usize, vec: usize) -> Option<usize> {
    (1..=c)
        .map(|groups| c / groups)
        .find(|&g| g * (c / g) == c && g % vec == 0 && g * m <= NHWC_SLOTS)
}

/// The kernel's arguments, laid out as `Params` in the kernel source (plain data with a C
/// layout: the kernel takes it by value, by address from `kernel.rs`).
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
    sd: i32,
    sh: i32,
    sw: i32,
    flip: i32,
    items: u32,
    kh: u32,
    group: u32,
    kd: u32,
    alpha: f64,
    beta: f64,
}

impl Params {
    /// These arguments with the call's scalars (the entry points of f32, f16 and bf16
    /// round them to f32, as cuDNN takes them for these types; f64's keep them).
    pub(crate) fn scaled(&self, alpha: f64, beta: f64) -> Self {
        Params {
            alpha,
            beta,
            ..*self
        }
    }
}

/// How the kernel runs one problem: its entry point, arguments (alpha and beta set per
/// call) and grid.
#[derive(Clone, Debug)]
pub(crate) struct DirectPlan {
    pub(crate) entry: String,
    pub(crate) params: Params,
    pub(crate) blocks: u32,
    /// The alignment (bytes) the entry point needs of dy and dx: channels-last entries
    /// load and store several channels at a time. Where the operands are not aligned so,
    /// a call runs [`Direct::one_channel`].
    pub(crate) align: u64,
}

/// A plan with its entry point loaded (by `CudnnContext::direct`): what a call runs.
pub(crate) struct Direct {
    pub(crate) plan: DirectPlan,
    pub(crate) function: CudaFunction,
    /// For an NHWC problem run on NCHW copies of dy and dx ([`via_nchw`]): how.
    pub(crate) via: Option<Via>,
    /// Where the plan loads several channels at a time: the plan (and its entry point)
    /// loading one, for operands not aligned to [`DirectPlan::align`].
    pub(crate) one_channel: Option<(DirectPlan, CudaFunction)>,
}

/// An NHWC problem run with the kernel on NCHW copies of dy and dx in the workspace: dy
/// converted into its copy, the kernel into dx's copy, that converted into the caller's
/// dx with alpha and beta (`kernel.rs`). The filter needs no conversion: with one input
/// channel per group, KCRS and KRSC are the same bytes.
pub(crate) struct Via {
    /// The caller's dy and dx, as stored (NHWC), described for the conversions ([`Views`]).
    pub(crate) own: Views,
    /// Their copies (NCHW), described likewise.
    pub(crate) nchw: Views,
    /// Where dx's copy starts in the workspace (dy's at 0).
    pub(crate) dx_offset: usize,
    /// The workspace bytes the call needs: both copies.
    pub(crate) workspace: usize,
}

impl Direct {
    /// The workspace bytes a call needs (`None`: none).
    pub(crate) fn workspace(&self) -> Option<usize> {
        self.via.as_ref().map(|v| v.workspace)
    }
}

impl DirectPlan {
    /// The kernel's plan for `p`, when the default choice (measured with `benchmark`) runs
    /// `p` with it (see [`qualifies`]; `None` also when a count does not fit the kernel's
    /// 32-bit arguments).
    pub(crate) fn of(p: &RawProblem<'_>, benchmark: bool) -> Option<Self> {
        if !qualifies(p, benchmark) {
            return None;
        }
        Self::plan(p, false)
    }

    /// The kernel's plan for a problem the measured default runs with it until cuDNN's
    /// engines for it are built ([`deferred`]).
    pub(crate) fn interim(p: &RawProblem<'_>) -> Option<Self> {
        if !deferred(p) {
            return None;
        }
        Self::plan(p, false)
    }

    /// For a plan loading several channels at a time (see [`DirectPlan::align`]): the
    /// plan for the same problem loading one, which runs on operands of any alignment.
    pub(crate) fn one_channel(p: &RawProblem<'_>) -> Option<Self> {
        Self::plan(p, true)
    }

    /// The kernel's plan for a problem it runs ([`runs`]); `scalar`: channels last, one
    /// channel a load.
    fn plan(p: &RawProblem<'_>, scalar: bool) -> Option<Self> {
        let conv = p.conv.params();
        let (x, y, w) = (p.dx.shape(), p.dy.shape(), p.w.shape());
        // 2-d problems are 3-d ones of depth 1.
        let lift = |s: &[usize], fill: usize| -> Vec<usize> {
            let mut v = vec![fill; 3usize.saturating_sub(s.len())];
            v.extend_from_slice(s);
            v
        };
        let (xs, ys, ks) = (lift(&x[2..], 1), lift(&y[2..], 1), lift(&w[2..], 1));
        let (pad, dil) = (lift(&conv.padding, 0), lift(&conv.dilation, 1));
        let stride = lift(&conv.stride, 1);
        let kind = Kind::of(p)?;
        let u = |v: usize| u32::try_from(v).ok();
        let i = |v: usize| i32::try_from(v).ok();
        // 3x3x3, and the square 2-d filters at stride 1 and 2, have entry points of their
        // own; other 2-d and 3-d filters, and every 2-d filter at the other strides, take
        // their height and depth at run time (`kh`, `kd`).
        let own = fixed_filter(&w[2..]) && (kind != Kind::Strided || w.len() == 5);
        // Work items: per dx row, ceil(W / (tx step)) spans of tx step columns, step
        // threads each (see `Kind::step`).
        let step = kind.step(&conv.stride, &conv.dilation) as u64;
        let rows = (x[0] * x[1] * xs[0] * xs[1]) as u64;
        let items_of = |tx: u64| rows.checked_mul((xs[2] as u64).div_ceil(tx * step) * step);
        let narrow = items_of(TX)?;
        let nhwc = p.dx.format() == Format::Nhwc;
        let multiplier = w[0] / x[1];
        // Channels last: channels a load (see `nhwc_vector`), four outputs a thread.
        let vec = if nhwc {
            nhwc_vector(x[1], multiplier, scalar)
        } else {
            1
        };
        let f32_loses =
            p.dx.dtype() == DType::F32 && (w[2..] == [3, 3] || xs[2] > WIDE_F32_MAX_WIDTH);
        // f64 has no eight-output entry points.
        let f64 = p.dx.dtype() == DType::F64;
        let wide = own
            && !nhwc
            && !f64
            && kind == Kind::Stride1
            && w.len() == 4
            && wide_rows(narrow, f32_loses);
        let items = if wide { items_of(WIDE_TX)? } else { narrow };
        if items >= 1 << 31 {
            return None;
        }
        // Channels last: the items are spans of rows, without the channels; a block
        // takes `group` channels, group / vec threads an item, for several chunks of
        // items (see the kernel).
        let (items, blocks, group) = if nhwc {
            let spans = items / x[1] as u64;
            let group = nhwc_group(x[1], multiplier, vec)?;
            let groups = (x[1] / group) as u64;
            let per_block = u64::from(BLOCK) / (group / vec) as u64;
            let chunks = spans.div_ceil(per_block);
            let per_group = chunks.min((NHWC_BLOCKS / groups).max(1));
            (spans, groups.checked_mul(per_group)?, group)
        } else {
            (items, items.div_ceil(u64::from(BLOCK)), 0)
        };
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
            sd: i(stride[0])?,
            sh: i(stride[1])?,
            sw: i(stride[2])?,
            flip: i32::from(conv.mode == ConvolutionMode::Convolution),
            items: items as u32,
            kh: u(ks[1])?,
            group: u(group)?,
            kd: u(ks[0])?,
            alpha: 1.0,
            beta: 0.0,
        };
        let dtype = match p.dx.dtype() {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::F16 => "f16",
            _ => "bf16",
        };
        let name = match kind {
            Kind::Stride1 if vec == 4 => "s1v4",
            Kind::Stride1 if wide => "s1x8",
            Kind::Stride1 => "s1",
            Kind::Stride2 => "s2",
            Kind::Strided => "strided",
        };
        let filter = match (own, nhwc) {
            (true, true) => format!("nhwc_k{}{}{}", ks[0], ks[1], ks[2]),
            (true, false) => format!("k{}{}{}", ks[0], ks[1], ks[2]),
            _ => format!("kw{}", ks[2]),
        };
        Some(DirectPlan {
            entry: format!("dw_dgrad_{filter}_{name}_{dtype}"),
            params,
            blocks: u32::try_from(blocks).ok()?,
            align: (vec * p.dx.dtype().size()) as u64,
        })
    }
}

/// Whether the default choice runs `p` with the kernel (the measured default with
/// `benchmark`): the kernel runs it ([`runs`]) and it is the choice there
/// ([`preferred`]). `CUDNN_RS_DIRECT=0` in the environment: never;
/// `CUDNN_RS_DIRECT=all`: whenever the kernel runs it (to measure).
pub(crate) fn qualifies(p: &RawProblem<'_>, benchmark: bool) -> bool {
    match mode() {
        Mode::Off => false,
        Mode::Default => runs(p) && preferred(p, benchmark),
        Mode::All => runs(p),
    }
}

/// Whether the default choice runs the NHWC problem `p` with the kernel on NCHW copies of
/// dy and dx ([`Via`]; the kernel must run the NCHW problem, which the caller checks):
/// dy and dx NHWC (the filter in either layout: with one input channel per group both are
/// the same bytes), 2-d, stride 1, and a filter cuDNN's NHWC engines were measured to
/// run slowly: square from 9x9, or one column 3 or more high (7x1). Measured on the H200
/// (`bench/dw_sweep.py`, channels-last, where PyTorch runs the same cuDNN engines):
/// cuDNN took 0.75 ms on a 9x9 layer the kernel runs in 0.17 (NCHW), 1.5 ms on a 31x31
/// one (0.35), 0.23 ms on a 7x1 one (0.05); the two conversions cost about as much as
/// reading and writing dy and dx twice. Not with `CUDNN_RS_DIRECT=0`.
///
/// Also every NHWC f64 problem (2-d or 3-d, any stride; the kernel has no channels-last
/// f64 entry points): on the H100 (`bench/random_layers.py --configs f64`, 2026-12-06)
/// cuDNN's untimed choice there ran a generic engine at up to 8.5x the time of PyTorch's
/// own depthwise kernel (a 3x3x3 layer), and its channels-last depthwise engines compiled
/// for 130-285 ms on a shape's first call. With as many filters a channel as the NCHW
/// entry points take ([`MAX_NCHW_MULTIPLIER`]): on a 5x5 layer of eight filters a channel
/// (stride 2, N=16) cuDNN's NHWC f64 engine took 1.10-1.13x PyTorch's time a call, and its
/// measured tier spent 11 ms on a first call where PyTorch's own depthwise kernel runs at
/// once.
pub(crate) fn via_nchw(p: &RawProblem<'_>) -> bool {
    let nhwc = p.dy.format() == Format::Nhwc
        && p.dx.format() == Format::Nhwc
        && matches!(p.w.format(), Format::Nchw | Format::Nhwc);
    let w = p.w.shape();
    let slow =
        matches!(&w[2.min(w.len())..], &[kh, kw] if (kh == kw && kh >= 9) || (kw == 1 && kh >= 3));
    let stride1 = p.conv.params().stride.iter().all(|&s| s == 1);
    let f64 = p.dx.dtype() == DType::F64;
    let most = if f64 {
        MAX_NCHW_MULTIPLIER
    } else {
        MAX_MULTIPLIER
    };
    let few_filters = filters_per_channel(p) <= most;
    mode() != Mode::Off && nhwc && ((slow && stride1) || f64) && few_filters
}

/// Filters per dx channel of `p` (the filter's count over dx's channels, rounded down;
/// 0 for a malformed shape): a depthwise problem's channel multiplier.
fn filters_per_channel(p: &RawProblem<'_>) -> usize {
    let channels = p.dx.shape().get(1).copied().unwrap_or(0).max(1);
    p.w.shape().first().copied().unwrap_or(0) / channels
}

/// The kernel's three kinds of entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Every stride 1, any dilation: 2-d 3x3, 5x5, 7x7, 3-d 3x3x3, and other 2-d and 3-d
    /// filters of odd width up to [`MAX_BAND_WIDTH`] ([`band_extent`]).
    Stride1,
    /// Stride 2 and dilation 1 in height and width: 2-d 3x3, 5x5 and 7x7, and 3-d 3x3x3
    /// with a depth stride of 1 or 2 (any depth dilation).
    Stride2,
    /// The other strides (not all 1), width dilation 1: 3-d 3x3x3, and 2-d and 3-d
    /// filters up to [`MAX_STRIDED_WIDTH`] wide (their height and depth taken at run
    /// time).
    Strided,
}

impl Kind {
    /// The kind of entry point for `p`'s stride, dilation and filter extent, if any.
    fn of(p: &RawProblem<'_>) -> Option<Self> {
        let conv = p.conv.params();
        let w = p.w.shape();
        let extent = &w[2.min(w.len())..];
        let all = |v: &[usize], n: usize| v.iter().all(|&g| g == n);
        if all(&conv.stride, 1) {
            let band = band_extent(extent).is_some_and(|(kh, kw)| band(kh, kw));
            (fixed_filter(extent) || band).then_some(Kind::Stride1)
        } else {
            // Height and width: the last two dimensions.
            fn plane(v: &[usize]) -> &[usize] {
                &v[v.len().saturating_sub(2)..]
            }
            let depth_ok = conv.stride.len() == 2 || matches!(conv.stride.first(), Some(1 | 2));
            let stride2 = all(plane(&conv.stride), 2) && all(plane(&conv.dilation), 1);
            let filter = fixed_filter(extent);
            if filter && stride2 && depth_ok {
                Some(Kind::Stride2)
            } else {
                let taken = extent == [3, 3, 3]
                    || band_extent(extent).is_some_and(|(kh, kw)| strided_band(kh, kw));
                (taken && conv.dilation.last() == Some(&1)).then_some(Kind::Strided)
            }
        }
    }

    /// How many columns apart a work item's outputs are: the width dilation at stride 1,
    /// the width stride for the other strided problems, 1 (consecutive) at stride 2.
    fn step(self, stride: &[usize], dilation: &[usize]) -> usize {
        match self {
            Kind::Stride1 => dilation.last().copied().unwrap_or(1),
            Kind::Stride2 => 1,
            Kind::Strided => stride.last().copied().unwrap_or(1),
        }
    }
}

/// Whether the kernel runs `p`: every operand NCHW (NCDHW) in the same type (f32, f16 or
/// bf16 with f32 compute, f64 with f64 compute), a depthwise convolution (one input
/// channel per group, groups = channels > 1) with one or two filters per channel, any
/// padding, each operand under 2^31 elements, and a stride, dilation and filter one of
/// its entry points takes ([`Kind`]). Padding, dilation and stride under [`MAX_GEOMETRY`] (the kernel's index
/// arithmetic is 32-bit), and the row step ([`Kind::step`]) at most dx's width (a larger
/// one would start threads with nothing to do).
///
/// Also channels-last dy and dx (the filter in either layout) of 2-d 3x3, 5x5 and 7x7
/// filters at stride 1, any dilation: the `nhwc` entry points, four channels a load where
/// four divide the channels. On the H200 (`bench/dw_sweep.py --layout cl`, 9 layers at
/// batch 32, from 1.2 million elements of dx) they took 0.50-0.95x the time of cuDNN's
/// NHWC engine (`dgrad2d_c1_k1_nhwc_specialized`, which PyTorch runs too) in f32 and
/// bfloat16, 0.55-0.88x on 7x7 in float16, with no run-time compilation, where cuDNN's
/// first call of a shape compiles for 0.15-0.27 s; on smaller layers cuDNN's took less
/// GPU time (see [`NHWC_ELEMENTS`]).
pub(crate) fn runs(p: &RawProblem<'_>) -> bool {
    let data = p.dx.dtype();
    // f64 data computes in f64 (the table's only f64 configuration), the others in f32.
    let same = p.w.dtype() == data && p.dy.dtype() == data && p.conv.comp() == data.compute();
    let typed = matches!(data, DType::F64 | DType::F32 | DType::F16 | DType::BF16);
    let nchw = [p.w.format(), p.dy.format(), p.dx.format()]
        .iter()
        .all(|&f| f == Format::Nchw);
    // Channels last (the filter in either layout: with one input channel per group both
    // are the same bytes): 2-d 3x3, 5x5 and 7x7 at stride 1.
    // (f64 has no channels-last entry points: it runs those on NCHW copies, `via_nchw`.)
    let nhwc = p.dy.format() == Format::Nhwc
        && p.dx.format() == Format::Nhwc
        && data != DType::F64
        && matches!(p.w.format(), Format::Nchw | Format::Nhwc)
        && Kind::of(p) == Some(Kind::Stride1)
        && matches!(
            &p.w.shape()[2.min(p.w.shape().len())..],
            [3, 3] | [5, 5] | [7, 7]
        );
    let conv = p.conv.params();
    let (x, w) = (p.dx.shape(), p.w.shape());
    let channels = x.get(1).copied().unwrap_or(0);
    let depthwise = conv.groups > 1 && conv.groups == channels && w.get(1) == Some(&1);
    let multiplier = filters_per_channel(p);
    let most = if nchw {
        MAX_NCHW_MULTIPLIER
    } else {
        MAX_MULTIPLIER
    };
    let filters = depthwise
        && (1..=most).contains(&multiplier)
        && w.first() == Some(&(channels * multiplier));
    let Some(kind) = Kind::of(p) else {
        return false;
    };
    let small = [p.w.len(), p.dy.len(), p.dx.len()]
        .iter()
        .all(|&n| n < 1 << 31);
    let geometry = [&conv.padding, &conv.dilation, &conv.stride]
        .iter()
        .all(|v| v.iter().all(|&g| g < MAX_GEOMETRY));
    let step = kind.step(&conv.stride, &conv.dilation);
    let fits = step <= x.last().copied().unwrap_or(0);
    same && typed && (nchw || nhwc) && filters && small && geometry && fits
}

/// Whether the kernel is the choice for a problem it runs (measured on the H200, see the
/// module documentation): every one but some half-precision undilated square 2-d layers
/// (3x3, 5x5, 7x7) at stride 1 with one filter per channel and dx of at least
/// [`HALF_CUDNN_ELEMENTS`] elements. There cuDNN's NCHW depthwise engine takes about 0.6x
/// the kernel's time a call, but cuDNN compiles it at run time, 0.2-1.1 s on a shape's
/// first call. The measured default (`benchmark`) leaves all of them to cuDNN (and
/// times its engines) but the 7x7 ones of small planes ([`HALF_7X7_KERNEL_PLANE`]),
/// where cuDNN's engine is no faster; the untimed default only the float16 3x3 and 5x5
/// ones, where PyTorch's default runs the same cuDNN engine (so the kernel, 1.5x slower,
/// would lose to PyTorch there) and compiles it as well. On the others PyTorch runs its
/// own kernel, with nothing to compile, which the kernel beats (0.4x its time).
/// Channels-last float16 3x3 and 5x5 layers stay with cuDNN in both tiers (see [`runs`]
/// for the measurements), and so do channels-last layers under [`NHWC_ELEMENTS`]
/// ([`NHWC_7X7_ELEMENTS`] for 7x7).
fn preferred(p: &RawProblem<'_>, benchmark: bool) -> bool {
    let extent = &p.w.shape()[2.min(p.w.shape().len())..];
    let as_pytorch = p.dx.dtype() == DType::F16 && matches!(extent, [3, 3] | [5, 5]);
    // Channels last: float16 3x3 and 5x5 stay with cuDNN, whose Hopper engine for them
    // (`sm90_xmma_depthwise_convolution_dgrad_tiling_f16`, where its heuristics pick it)
    // took 0.6-0.87x the kernel's time.
    let nhwc_f16 = p.dx.format() == Format::Nhwc && as_pytorch;
    // Channels last from NHWC_7X7_ELEMENTS / NHWC_ELEMENTS elements of dx up.
    let least = if extent == [7, 7] {
        NHWC_7X7_ELEMENTS
    } else {
        NHWC_ELEMENTS
    };
    let nhwc_small = p.dx.format() == Format::Nhwc && p.dx.len() < least;
    let cudnn = cudnn_half(p) && (as_pytorch || (benchmark && !kernel_7x7(p)));
    !cudnn && !nhwc_f16 && !nhwc_small
}

/// The half-precision NCHW problems cuDNN's run-time-compiled depthwise engine runs in
/// about 0.6x the kernel's time (see [`preferred`]): undilated square 2-d filters (3x3,
/// 5x5, 7x7) at stride 1, one filter per channel, dx of at least [`HALF_CUDNN_ELEMENTS`]
/// elements.
fn cudnn_half(p: &RawProblem<'_>) -> bool {
    let extent = &p.w.shape()[2.min(p.w.shape().len())..];
    matches!(p.dx.dtype(), DType::F16 | DType::BF16)
        && p.dx.format() == Format::Nchw
        && Kind::of(p) == Some(Kind::Stride1)
        && p.conv.spatial_dims() == 2
        && fixed_filter(extent)
        && p.conv.params().dilation.iter().all(|&d| d == 1)
        && filters_per_channel(p) == 1
        && p.dx.len() >= HALF_CUDNN_ELEMENTS
}

/// A 7x7 filter on a plane of at most [`HALF_7X7_KERNEL_PLANE`] elements, where cuDNN's
/// engine is no faster than the kernel.
fn kernel_7x7(p: &RawProblem<'_>) -> bool {
    let extent = &p.w.shape()[2.min(p.w.shape().len())..];
    let plane: usize = p.dx.shape().get(2..).map_or(0, |s| s.iter().product());
    extent == [7, 7] && plane <= HALF_7X7_KERNEL_PLANE
}

/// Whether the measured default runs `p` with the kernel only until cuDNN's engines for it
/// that compile at run time are built on the builder's thread (`bwd_data/background.rs`),
/// and then measures cuDNN's engines as it does for any problem it leaves to cuDNN: the
/// problems [`preferred`] leaves to cuDNN with benchmarking on for that engine, which the
/// kernel runs ([`runs`]). Their first sight so costs the kernel's call, not the engine's
/// compilation (0.26-0.74 s a shape on the H100, `bench/rtc_probe.py`, where PyTorch runs
/// its own kernel with nothing to compile, 0.24-0.39 ms). Not with `CUDNN_RS_DIRECT` set.
pub(crate) fn deferred(p: &RawProblem<'_>) -> bool {
    mode() == Mode::Default && deferrable(p)
}

/// [`deferred`] but for `CUDNN_RS_DIRECT`.
fn deferrable(p: &RawProblem<'_>) -> bool {
    runs(p) && cudnn_half(p) && !kernel_7x7(p)
}

/// Whether a problem of `items` work items of [`TX`] outputs runs an `s1x8` entry point
/// (where it has one; `f32_loses`: an f32 problem the eight-output entries were measured
/// slower on): see [`WIDE_TX`]. `CUDNN_RS_DIRECT_TX=8` (or `4`) in the environment: always
/// (never), to measure one against the other.
fn wide_rows(items: u64, f32_loses: bool) -> bool {
    static TX_ENV: OnceLock<Option<u64>> = OnceLock::new();
    match TX_ENV.get_or_init(|| std::env::var("CUDNN_RS_DIRECT_TX").ok()?.parse().ok()) {
        Some(8) => true,
        Some(4) => false,
        _ => items >= WIDE_ITEMS && !f32_loses,
    }
}

/// What `CUDNN_RS_DIRECT` asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `0`: the kernel runs nothing.
    Off,
    /// Unset (or anything else): the problems [`preferred`] names.
    Default,
    /// `all`: every problem it runs (for measuring it against cuDNN).
    All,
}

/// `CUDNN_RS_DIRECT`, read once.
fn mode() -> Mode {
    static MODE: OnceLock<Mode> = OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("CUDNN_RS_DIRECT").as_deref() {
        Ok("0") => Mode::Off,
        Ok("all") => Mode::All,
        _ => Mode::Default,
    })
}

/// The kernel's entry points a context has looked up (see `kernel.rs`), by name: `None`
/// for one no image of which loads on its device.
pub(crate) type Kernels = std::collections::HashMap<String, Option<CudaFunction>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bwd_data::twin::Twin;
    use crate::convolution::{ConvParams, RawConvolutionDescriptor};
    use crate::math_type::MathType;
    use crate::tensor::{RawDescriptor, Role};
    use std::mem::offset_of;

    /// A stride-`stride` problem (3-d: of depth stride `depth_stride` if given) with dx
    /// `x`, filter `w` (its spatial extent and dilation `dil` fix dy), padding `pad`,
    /// `groups`, all of `dtype` and `format`.
    struct Case {
        dtype: DType,
        format: Format,
        x: Vec<usize>,
        w: Vec<usize>,
        groups: usize,
        stride: usize,
        depth_stride: Option<usize>,
        pad: usize,
        dil: usize,
        /// The height's dilation, where it differs from `dil`.
        dil_h: Option<usize>,
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
                depth_stride: None,
                pad: k[0] / 2,
                dil: 1,
                dil_h: None,
                mode: ConvolutionMode::CrossCorrelation,
            }
        }

        fn with(self, f: impl FnOnce(&mut Self)) -> Self {
            let mut c = self;
            f(&mut c);
            c
        }

        /// The stride of each spatial dimension.
        fn strides(&self) -> Vec<usize> {
            let mut s = vec![self.stride; self.x.len() - 2];
            if let (Some(d), 3) = (self.depth_stride, s.len()) {
                s[0] = d;
            }
            s
        }

        /// The dilation of each spatial dimension.
        fn dilations(&self) -> Vec<usize> {
            let mut d = vec![self.dil; self.x.len() - 2];
            if let (Some(h), n @ 2..) = (self.dil_h, d.len()) {
                d[n - 2] = h;
            }
            d
        }

        fn parts(&self) -> [RawDescriptor; 3] {
            let (strides, dilations) = (self.strides(), self.dilations());
            let out = |(i, &x): (usize, &usize)| {
                let k = self.w[i + 2];
                (x + 2 * self.pad - dilations[i] * (k - 1) - 1) / strides[i] + 1
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
                &self.strides().iter().map(|&s| s as i64).collect::<Vec<_>>(),
                &self
                    .dilations()
                    .iter()
                    .map(|&d| d as i64)
                    .collect::<Vec<_>>(),
                self.groups as i64,
                self.mode,
            )
            .expect("valid parameters");
            let comp = self.dtype.compute();
            RawConvolutionDescriptor::new(params, comp, MathType::Default).expect("conv")
        }

        /// The plan the default choice makes for the problem (the policy itself, not
        /// `CUDNN_RS_DIRECT`, which the test process may have set).
        fn plan(&self) -> Option<DirectPlan> {
            self.plan_in(false)
        }

        /// The same for the untimed (`benchmark` false) or the measured default.
        fn plan_in(&self, benchmark: bool) -> Option<DirectPlan> {
            self.on(|p| {
                (runs(p) && preferred(p, benchmark))
                    .then(|| DirectPlan::plan(p, false))
                    .flatten()
            })
        }

        /// `f` of the problem.
        fn on<R>(&self, f: impl FnOnce(&RawProblem<'_>) -> R) -> R {
            let ([w, dy, dx], conv) = (self.parts(), self.conv());
            f(&RawProblem {
                w: &w,
                dy: &dy,
                dx: &dx,
                conv: &conv,
            })
        }
    }

    #[test]
    fn the_measured_default_defers_the_layers_it_leaves_to_cudnns_compiled_engine() {
        let large = |k: usize| Case::depthwise(&[32, 384, 14, 14], &[k, k]);
        let bf16 = |c: Case| c.with(|c| c.dtype = DType::BF16);
        let f16 = |c: Case| c.with(|c| c.dtype = DType::F16);
        let deferred = |c: &Case| c.on(deferrable);
        // Kernel in the untimed default, cuDNN in the measured one: deferred.
        let c = bf16(large(3));
        assert!(deferred(&c) && c.plan_in(false).is_some() && c.plan_in(true).is_none());
        // cuDNN in both tiers (float16 3x3 and 5x5): deferred in the measured one.
        let c = f16(Case::depthwise(&[16, 96, 28, 28], &[5, 5]));
        assert!(deferred(&c) && c.plan_in(false).is_none() && c.plan_in(true).is_none());
        // The kernel in both tiers: 7x7 on a plane of at most 400 elements.
        let c = bf16(large(7));
        assert!(!deferred(&c) && c.plan_in(true).is_some());
        // Not cuDNN's compiled engine's: small, f32, channels last, strided, two filters
        // a channel.
        let others = [
            bf16(Case::depthwise(&[2, 16, 9, 13], &[3, 3])),
            large(3),
            bf16(large(3)).with(|c| c.format = Format::Nhwc),
            bf16(large(3)).with(|c| c.stride = 2),
            bf16(large(3)).with(|c| c.w[0] = 768),
        ];
        for c in &others {
            assert!(!deferred(c), "{:?} {:?} {:?}", c.dtype, c.format, c.x);
        }
        // Only what the measured default would leave to cuDNN and the kernel runs.
        for c in others.iter().chain([&bf16(large(3)), &bf16(large(5))]) {
            if deferred(c) {
                assert!(c.on(runs) && c.plan_in(true).is_none());
            }
        }
    }

    #[test]
    fn params_mirror_the_kernel_sources_struct() {
        // The kernel takes `Params` by value: the same fields, in the same order, each
        // four bytes but the two f64 scalars at the end. The names in the source, in
        // order, against this struct's.
        let source = include_str!("../kernels/depthwise_dgrad.cu");
        let body = source
            .split("struct Params {")
            .nth(1)
            .and_then(|rest| rest.split("};").next())
            .expect("struct Params in the kernel source");
        let mut names = Vec::new();
        for line in body.lines() {
            let code = line.split("//").next().unwrap_or("").trim();
            if let Some(fields) = code.strip_suffix(';') {
                let fields = fields.split_once(' ').map_or("", |(_, f)| f);
                names.extend(fields.split(',').map(|f| f.trim().to_string()));
            }
        }
        let rust = [
            "n", "c", "m", "d", "h", "w", "od", "oh", "ow", "pd", "ph", "pw", "dd", "dh", "dw",
            "sd", "sh", "sw", "flip", "items", "kh", "group", "kd", "alpha", "beta",
        ];
        assert_eq!(names, rust);
        // This struct's fields in that order: the first 23 four bytes apart, then the two
        // f64 scalars at the next multiple of eight (C's layout, and repr(C)'s).
        let offsets = [
            offset_of!(Params, n),
            offset_of!(Params, c),
            offset_of!(Params, m),
            offset_of!(Params, d),
            offset_of!(Params, h),
            offset_of!(Params, w),
            offset_of!(Params, od),
            offset_of!(Params, oh),
            offset_of!(Params, ow),
            offset_of!(Params, pd),
            offset_of!(Params, ph),
            offset_of!(Params, pw),
            offset_of!(Params, dd),
            offset_of!(Params, dh),
            offset_of!(Params, dw),
            offset_of!(Params, sd),
            offset_of!(Params, sh),
            offset_of!(Params, sw),
            offset_of!(Params, flip),
            offset_of!(Params, items),
            offset_of!(Params, kh),
            offset_of!(Params, group),
            offset_of!(Params, kd),
            offset_of!(Params, alpha),
            offset_of!(Params, beta),
        ];
        let mut expected: Vec<usize> = (0..23).map(|i| 4 * i).collect();
        expected.extend([96, 104]);
        assert_eq!(offsets.to_vec(), expected);
        assert_eq!(std::mem::size_of::<Params>(), 112);
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
            Case::depthwise(&x, &[3, 3]).with(|c| {
                c.format = Format::Nhwc;
                c.stride = 2;
            }),
            "channels last, strided",
        );
        // Strided: the general strided entry points (see their own test).
        yes(
            Case::depthwise(&x, &[3, 3]).with(|c| c.stride = 3),
            "2-d stride 3",
        );
        yes(
            Case::depthwise(&x, &[1, 7]).with(|c| c.stride = 2),
            "1x7 strided",
        );
        no(
            Case::depthwise(&x, &[1, 13]).with(|c| c.stride = 2),
            "1x13 strided",
        );
        // Up to MAX_NCHW_MULTIPLIER filters a channel (NCHW); channels last two.
        for m in [3, 24, 64] {
            yes(
                Case::depthwise(&x, &[3, 3]).with(|c| c.w[0] = 64 * m),
                &format!("{m} filters a channel"),
            );
        }
        yes(
            Case::depthwise(&[1, 16, 14, 14], &[5, 5]).with(|c| {
                c.w[0] = 16 * 24;
                c.stride = 2;
            }),
            "24 filters a channel, strided",
        );
        no(
            Case::depthwise(&x, &[3, 3]).with(|c| c.w[0] = 64 * 65),
            "65 filters a channel",
        );
        no(
            Case::depthwise(&[32, 64, 56, 56], &[3, 3]).with(|c| {
                c.w[0] = 192;
                c.format = Format::Nhwc;
            }),
            "channels last, three filters a channel",
        );
        // Other 2-d filters of odd width up to 31, their height taken at run time.
        for k in [
            [5, 3],
            [1, 7],
            [7, 1],
            [1, 3],
            [9, 9],
            [13, 13],
            [31, 31],
            [40, 31],
        ] {
            yes(Case::depthwise(&x, &k), &format!("{k:?}"));
        }
        no(Case::depthwise(&x, &[3, 4]), "an even width");
        no(Case::depthwise(&x, &[33, 33]), "wider than 31");
        no(
            Case::depthwise(&[2, 96, 8, 14, 14], &[3, 4, 4]),
            "3-d, an even width",
        );
        no(
            Case::depthwise(&[2, 8, 9, 9], &[3, 3]).with(|c| {
                c.dil = 10;
                c.pad = 10;
            }),
            "a width dilation over the width",
        );
        no(
            Case::depthwise(&[1, 2, 3, 3, 70_000], &[3, 3, 3]).with(|c| c.stride = 1 << 16),
            "a stride past the kernel's geometry bound",
        );
        yes(
            Case::depthwise(&[1, 2, 3, 3, 70_000], &[3, 3, 3]).with(|c| c.stride = 1 << 15),
            "a stride under it",
        );
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
    fn large_undilated_square_half_problems_with_one_filter_a_channel_stay_with_cudnn() {
        // dx: 16 * 64 * 32 * 32 = 2^20 elements; one batch less is under the bound.
        let (big, small) = ([16, 64, 32, 32], [15, 64, 32, 32]);
        for dtype in [DType::F16, DType::BF16] {
            for k in [3, 5, 7] {
                let case = |x: &[usize]| Case::depthwise(x, &[k, k]).with(|c| c.dtype = dtype);
                let what = format!("{dtype:?} {k}x{k}");
                // The measured default: cuDNN for every one of them.
                assert!(case(&big).plan_in(true).is_none(), "{what} large, measured");
                // The untimed default: cuDNN where PyTorch's default runs it too.
                let pytorch_cudnn = dtype == DType::F16 && k < 7;
                assert_eq!(case(&big).plan().is_none(), pytorch_cudnn, "{what} large");
                for benchmark in [false, true] {
                    assert!(
                        case(&small).plan_in(benchmark).is_some(),
                        "{what} under the bound"
                    );
                    assert!(
                        case(&big).with(|c| c.dil = 2).plan_in(benchmark).is_some(),
                        "{what} dilated"
                    );
                    assert!(
                        case(&big)
                            .with(|c| c.w[0] = 128)
                            .plan_in(benchmark)
                            .is_some(),
                        "{what} two filters a channel"
                    );
                }
            }
            for benchmark in [false, true] {
                let video = Case::depthwise(&[16, 64, 4, 32, 32], &[3, 3, 3]);
                let video = video.with(|c| c.dtype = dtype);
                assert!(video.plan_in(benchmark).is_some(), "3-d");
                let band = Case::depthwise(&big, &[1, 7]).with(|c| c.dtype = dtype);
                assert!(band.plan_in(benchmark).is_some(), "1x7");
            }
        }
        for benchmark in [false, true] {
            let f32 = Case::depthwise(&big, &[3, 3]);
            assert!(f32.plan_in(benchmark).is_some(), "f32");
        }
    }

    #[test]
    fn the_measured_default_keeps_large_half_7x7_layers_of_small_planes_on_the_kernel() {
        // Over the element bound, 14x14 and 28x28 planes (ConvNeXt's stages).
        let (small_plane, large_plane) = ([32, 384, 14, 14], [32, 192, 28, 28]);
        for dtype in [DType::F16, DType::BF16] {
            let case =
                |x: &[usize], k: usize| Case::depthwise(x, &[k, k]).with(|c| c.dtype = dtype);
            assert!(
                case(&small_plane, 7).plan_in(true).is_some(),
                "{dtype:?} 14x14"
            );
            assert!(
                case(&large_plane, 7).plan_in(true).is_none(),
                "{dtype:?} 28x28"
            );
            // Only 7x7: 3x3 and 5x5 layers of small planes stay with cuDNN.
            for k in [3, 5] {
                assert!(
                    case(&small_plane, k).plan_in(true).is_none(),
                    "{dtype:?} {k}x{k}"
                );
            }
            // The untimed default runs both 7x7 layers with the kernel.
            assert!(
                case(&small_plane, 7).plan().is_some(),
                "{dtype:?} 14x14 untimed"
            );
            assert!(
                case(&large_plane, 7).plan().is_some(),
                "{dtype:?} 28x28 untimed"
            );
        }
    }

    #[test]
    fn large_stride_one_squares_take_the_eight_output_entry_points() {
        // 7x7, 384 channels of 14x14, batch 32: 688 128 items of four outputs, 344 064
        // of eight (a row of 14 in two spans of 8).
        let big = Case::depthwise(&[32, 384, 14, 14], &[7, 7]).with(|c| {
            c.pad = 3;
            c.dtype = DType::F16;
        });
        let plan = big.plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_k177_s1x8_f16");
        assert_eq!(plan.params.items, 32 * 384 * 14 * 2);
        assert_eq!(plan.blocks, (32 * 384 * 14 * 2u32).div_ceil(BLOCK));
        // The threshold: 2^18 items of four outputs (batch 16) take eight; batch 15
        // (245 760 items) does not.
        let edge = |n: usize, k: usize, dtype: DType| {
            let c = Case::depthwise(&[n, 64, 32, 32], &[k, k]).with(|c| {
                c.pad = k / 2;
                c.dtype = dtype;
            });
            c.plan().expect("a plan").entry
        };
        assert_eq!(edge(16, 5, DType::F32), "dw_dgrad_k155_s1x8_f32");
        assert_eq!(edge(16, 3, DType::BF16), "dw_dgrad_k133_s1x8_bf16");
        // 3x3 in f32 stays with four outputs; so do smaller problems.
        assert_eq!(edge(16, 3, DType::F32), "dw_dgrad_k133_s1_f32");
        assert_eq!(edge(15, 7, DType::F32), "dw_dgrad_k177_s1_f32");
        // In f32, rows wider than 32 too; not in half precision.
        let wide_rows = |dtype: DType| {
            let c = Case::depthwise(&[16, 120, 64, 64], &[5, 5]).with(|c| {
                c.pad = 2;
                c.dtype = dtype;
            });
            c.plan().expect("a plan").entry
        };
        assert_eq!(wide_rows(DType::F32), "dw_dgrad_k155_s1_f32");
        assert_eq!(wide_rows(DType::BF16), "dw_dgrad_k155_s1x8_bf16");
        // Not the other filters or strides, nor 3-d.
        let band = Case::depthwise(&[32, 384, 14, 14], &[1, 7]).with(|c| c.pad = 0);
        assert_eq!(band.plan().expect("a plan").entry, "dw_dgrad_kw7_s1_f32");
        let video = Case::depthwise(&[16, 64, 8, 32, 32], &[3, 3, 3]).with(|c| c.pad = 1);
        assert_eq!(video.plan().expect("a plan").entry, "dw_dgrad_k333_s1_f32");
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
        // Other 2-d filters: the width's entry point, the height an argument.
        for (k, entry) in [
            ([1, 7], "dw_dgrad_kw7_s1_f16"),
            ([7, 1], "dw_dgrad_kw1_s1_f16"),
        ] {
            let band = Case::depthwise(&[2, 8, 10, 13], &k).with(|c| {
                c.pad = 0;
                c.dtype = DType::F16;
            });
            let plan = band.plan().expect("a plan");
            assert_eq!(plan.entry, entry);
            assert_eq!(plan.params.kh, k[0] as u32);
            assert_eq!(
                (plan.params.oh, plan.params.ow),
                (11 - k[0] as u32, 14 - k[1] as u32)
            );
        }
    }

    #[test]
    fn strided_3d_problems_take_it_with_the_width_stride_as_the_step() {
        // A 3x3x3 layer of stride 3, dx 8 x 14 x 15.
        let case = Case::depthwise(&[2, 6, 8, 14, 15], &[3, 3, 3]).with(|c| {
            c.stride = 3;
            c.dtype = DType::F16;
        });
        let plan = case.plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_k333_strided_f16");
        let q = plan.params;
        assert_eq!((q.sd, q.sh, q.sw), (3, 3, 3));
        assert_eq!((q.od, q.oh, q.ow), (3, 5, 5));
        // Per row, 15 columns in spans of 4 * 3 = 12: two spans, three threads each.
        assert_eq!(q.items, 2 * 6 * 8 * 14 * 2 * 3);
        // Height and width stride 2, depth stride 1 or 2: the stride-2 entry point, four
        // consecutive columns a work item (15 columns: four items a row).
        for depth in [1, 2] {
            let case = Case::depthwise(&[2, 6, 8, 14, 15], &[3, 3, 3]).with(|c| {
                c.stride = 2;
                c.depth_stride = Some(depth);
            });
            let plan = case.plan().expect("a plan");
            assert_eq!(plan.entry, "dw_dgrad_k333_s2_f32");
            let q = plan.params;
            assert_eq!((q.sd, q.sh, q.sw), (depth as i32, 2, 2));
            assert_eq!((q.od, q.oh, q.ow), (if depth == 1 { 8 } else { 4 }, 7, 8));
            assert_eq!(q.items, 2 * 6 * 8 * 14 * 4);
        }
        // Depth stride 3 with height and width stride 2: the general strided entry.
        let deep = Case::depthwise(&[2, 6, 8, 14, 15], &[3, 3, 3]).with(|c| {
            c.stride = 2;
            c.depth_stride = Some(3);
        });
        let plan = deep.plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_k333_strided_f32");
        // Strided with a width dilation: the kernel does not run it.
        let dilated = Case::depthwise(&[2, 6, 8, 14, 15], &[3, 3, 3]).with(|c| {
            c.stride = 2;
            c.dil = 2;
        });
        assert!(dilated.plan().is_none(), "strided and dilated");
    }

    #[test]
    fn other_3d_filters_take_the_entries_with_the_height_and_depth_arguments() {
        // 1x3x3 at stride 1, dx 8 x 14 x 15: the stride-1 entry of width 3, the height and
        // the depth (1) arguments.
        let x = [2, 6, 8, 14, 15];
        let plan = Case::depthwise(&x, &[1, 3, 3]).plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_kw3_s1_f32");
        let q = plan.params;
        assert_eq!((q.d, q.od, q.oh, q.ow, q.kh, q.kd), (8, 8, 12, 13, 3, 1));
        // Per row of 15 columns, four spans of 4; rows: N C D H.
        assert_eq!(q.items, 2 * 6 * 8 * 14 * 4);
        // Other depths, heights and widths, half precision, both tiers (cuDNN's engines
        // for these compile at run time, see the module documentation).
        for (k, entry) in [
            ([1, 1, 1], "dw_dgrad_kw1_s1_f16"),
            ([1, 5, 5], "dw_dgrad_kw5_s1_f16"),
            ([1, 7, 3], "dw_dgrad_kw3_s1_f16"),
            ([2, 3, 3], "dw_dgrad_kw3_s1_f16"),
            ([5, 5, 5], "dw_dgrad_kw5_s1_f16"),
            ([3, 1, 1], "dw_dgrad_kw1_s1_f16"),
        ] {
            let case = Case::depthwise(&x, &k).with(|c| c.dtype = DType::F16);
            for benchmark in [false, true] {
                let plan = case.plan_in(benchmark).expect("a plan");
                assert_eq!(plan.entry, entry, "{k:?}");
                assert_eq!((plan.params.kd, plan.params.kh), (k[0] as u32, k[1] as u32));
            }
        }
        // 3x3x3 keeps its own entry points (its depth fixed in them).
        let cube = Case::depthwise(&x, &[3, 3, 3]).plan().expect("a plan");
        assert_eq!(cube.entry, "dw_dgrad_k333_s1_f32");
        // Strided in height and width, depth stride 1 or 2: the strided entries (the
        // stride-2 ones take 2-d filters and 3x3x3 only).
        for depth in [1, 2] {
            let case = Case::depthwise(&x, &[1, 3, 3]).with(|c| {
                c.stride = 2;
                c.depth_stride = Some(depth);
            });
            let plan = case.plan().expect("a plan");
            assert_eq!(plan.entry, "dw_dgrad_kw3_strided_f32");
            let q = plan.params;
            assert_eq!((q.sd, q.sh, q.sw, q.kh), (depth as i32, 2, 2, 3));
            assert_eq!(q.od, if depth == 1 { 8 } else { 4 });
        }
        // A 5x5x5 filter at stride 3 (padding 2: dy 3 x 5 x 5): the strided entry of width 5.
        let deep = Case::depthwise(&x, &[5, 5, 5]).with(|c| c.stride = 3);
        let plan = deep.plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_kw5_strided_f32");
        let q = plan.params;
        assert_eq!((q.kd, q.kh, q.od, q.oh, q.ow), (5, 5, 3, 5, 5));
        // An even width at stride 1, or one wider than the strided entries: no entry point.
        assert!(Case::depthwise(&x, &[1, 4, 4]).plan().is_none(), "1x4x4");
        let wide = Case::depthwise(&x, &[3, 13, 13]).with(|c| c.stride = 2);
        assert!(wide.plan().is_none(), "3x13x13 strided");
    }

    #[test]
    fn channels_last_squares_at_stride_one_take_the_nhwc_entry_points() {
        let nhwc =
            |x: &[usize], k: &[usize]| Case::depthwise(x, k).with(|c| c.format = Format::Nhwc);
        // 64 channels, four a load: a block takes all 64, 16 threads an item, so 16
        // items of the 32 x 56 rows of ceil(56 / 4) spans; 1568 chunks of them.
        let x = [32, 64, 56, 56];
        let case = nhwc(&x, &[3, 3]);
        let plan = case.plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_nhwc_k133_s1v4_f32");
        assert_eq!(plan.params.items, 32 * 56 * 14);
        assert_eq!(plan.params.group, 64);
        assert_eq!(plan.blocks, (32 * 56 * 14u32).div_ceil(16));
        assert_eq!(plan.align, 16);
        // Its plan for operands not so aligned: one channel a load (64 threads an item),
        // in at most NHWC_BLOCKS blocks (each takes several chunks).
        let one = case.on(DirectPlan::one_channel).expect("a plan");
        assert_eq!(one.entry, "dw_dgrad_nhwc_k133_s1_f32");
        assert_eq!((one.params.group, one.align), (64, 4));
        assert_eq!(u64::from(one.blocks), NHWC_BLOCKS);
        // Blocks take the most channels dividing the count, a multiple of the load's,
        // with at most 128 filters.
        for (c, group) in [(144, 72), (132, 44), (72, 72), (960, 120)] {
            let plan = nhwc(&[128, c, 14, 14], &[7, 7]).plan().expect("a plan");
            assert_eq!(plan.params.group, group as u32, "{c} channels");
            assert!(plan.entry.ends_with("_s1v4_f32"), "{}", plan.entry);
        }
        // 33 channels: one a load, a block takes all.
        let plan = nhwc(&[64, 33, 44, 46], &[3, 3]).plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_nhwc_k133_s1_f32");
        assert_eq!((plan.params.group, plan.align), (33, 4));
        // Dilated, two filters a channel (one a load; 40 x 2 filters a block), bfloat16,
        // convolution mode.
        let odd = nhwc(&[16, 40, 81, 83], &[5, 5]).with(|c| {
            c.dil = 2;
            c.w[0] = 80;
            c.dtype = DType::BF16;
            c.mode = ConvolutionMode::Convolution;
        });
        let plan = odd.plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_nhwc_k155_s1_bf16");
        assert_eq!((plan.params.group, plan.align), (40, 2));
        // Spans of 4 x 2 columns, two threads a span (the dilation): 16 x 81 rows of
        // ceil(83 / 8) x 2.
        assert_eq!(plan.params.items, 16 * 81 * 11 * 2);
        // 100 channels, two filters each: blocks of 50 (100 filters).
        let two = nhwc(&[16, 100, 52, 52], &[3, 3]).with(|c| c.w[0] = 200);
        assert_eq!(two.plan().expect("a plan").params.group, 50);
        // The filter in either layout (one input channel per group: the same bytes).
        let [w, _, _] = Case::depthwise(&x, &[3, 3]).parts();
        let ([_, dy, dx], conv) = (case.parts(), case.conv());
        let mixed = RawProblem {
            w: &w,
            dy: &dy,
            dx: &dx,
            conv: &conv,
        };
        assert!(DirectPlan::of(&mixed, false).is_some(), "KCRS filter");
        // float16: 7x7 takes it; 3x3 and 5x5 stay with cuDNN, in both tiers.
        let f16 = |k: &[usize]| nhwc(&x, k).with(|c| c.dtype = DType::F16);
        let plan = f16(&[7, 7]).plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_nhwc_k177_s1v4_f16");
        for k in [[3, 3], [5, 5]] {
            assert!(f16(&k).plan_in(false).is_none(), "{k:?}");
            assert!(f16(&k).plan_in(true).is_none(), "{k:?} measured");
        }
        // Small layers stay with cuDNN: 3x3 and 5x5 under 2^22 elements of dx, 7x7 under
        // 2^20 (the kernel still runs them, as with CUDNN_RS_DIRECT=all).
        for (x, k, taken) in [
            ([32, 64, 45, 45], [3, 3], false),
            ([32, 64, 46, 46], [3, 3], true),
            ([32, 64, 45, 45], [5, 5], false),
            ([8, 384, 14, 14], [7, 7], false),
            ([16, 384, 14, 14], [7, 7], true),
            ([1, 256, 28, 28], [3, 3], false),
        ] {
            let case = nhwc(&x, &k);
            assert_eq!(case.plan().is_some(), taken, "{x:?} {k:?}");
            assert!(case.on(runs), "{x:?} {k:?}");
        }
        // Not taken: other filters (cuDNN, or NCHW copies from 9x9), strides, 3-d.
        for k in [[1, 7], [3, 5], [9, 9], [1, 1]] {
            assert!(nhwc(&x, &k).plan().is_none(), "{k:?}");
        }
        let strided = nhwc(&x, &[5, 5]).with(|c| c.stride = 2);
        assert!(strided.plan().is_none(), "strided");
        let deep = nhwc(&[32, 16, 8, 56, 56], &[3, 3, 3]);
        assert!(deep.plan().is_none(), "3-d");
    }

    #[test]
    fn nhwc_problems_of_filters_cudnn_runs_slowly_run_on_nchw_copies() {
        let x = [8, 64, 28, 28];
        let nhwc = |k: &[usize]| Case::depthwise(&x, k).with(|c| c.format = Format::Nhwc);
        let via = |c: &Case| {
            c.on(|p| {
                // The rule, and the kernel's plan for the NCHW copies.
                let copies = Twin::in_format(p, Format::Nchw).expect("NCHW descriptors");
                via_nchw(p) && DirectPlan::of(&copies.problem(p.conv), false).is_some()
            })
        };
        for k in [[9, 9], [13, 13], [31, 31], [11, 1], [7, 1], [3, 1]] {
            assert!(via(&nhwc(&k)), "{k:?}");
        }
        // Filters cuDNN's NHWC engines run as fast (or not measured), and ones the kernel
        // does not run.
        for k in [
            [3, 3],
            [5, 5],
            [7, 7],
            [1, 7],
            [1, 3],
            [9, 3],
            [1, 1],
            [33, 33],
        ] {
            assert!(!via(&nhwc(&k)), "{k:?}");
        }
        assert!(!via(&nhwc(&[9, 9]).with(|c| c.stride = 2)), "strided");
        assert!(
            via(&nhwc(&[9, 9]).with(|c| c.w[0] = 128)),
            "two filters a channel"
        );
        assert!(
            !via(&nhwc(&[9, 9]).with(|c| c.w[0] = 192)),
            "three filters a channel (not measured)"
        );
        assert!(
            !via(&Case::depthwise(&x, &[9, 9])),
            "NCHW runs the kernel directly"
        );
        // The filter in either layout (the same bytes for one input channel per group).
        let [w, _, _] = Case::depthwise(&x, &[9, 9]).parts();
        let [_, dy, dx] = nhwc(&[9, 9]).parts();
        let conv = nhwc(&[9, 9]).conv();
        let mixed = RawProblem {
            w: &w,
            dy: &dy,
            dx: &dx,
            conv: &conv,
        };
        assert!(via_nchw(&mixed), "an NCHW filter with NHWC gradients");
        // An NHWC problem itself is never the kernel's directly.
        assert!(nhwc(&[9, 9]).plan().is_none(), "NHWC");
    }

    #[test]
    fn f64_problems_take_the_f64_entry_points_nchw_directly_and_nhwc_on_copies() {
        let f64 = |c: Case| c.with(|c| c.dtype = DType::F64);
        let entry = |c: &Case| c.plan().map(|p| p.entry);
        // Large enough for the eight-output entry points in bf16: f64 has none.
        let x = [32, 64, 56, 56];
        assert_eq!(
            entry(&f64(Case::depthwise(&x, &[5, 5]))).as_deref(),
            Some("dw_dgrad_k155_s1_f64")
        );
        assert_eq!(
            entry(&Case::depthwise(&x, &[5, 5]).with(|c| c.dtype = DType::BF16)).as_deref(),
            Some("dw_dgrad_k155_s1x8_bf16")
        );
        assert_eq!(
            entry(&f64(Case::depthwise(&x, &[5, 5]).with(|c| c.stride = 2))).as_deref(),
            Some("dw_dgrad_k155_s2_f64")
        );
        assert_eq!(
            entry(&f64(Case::depthwise(&[2, 16, 8, 28, 28], &[3, 3, 3]))).as_deref(),
            Some("dw_dgrad_k333_s1_f64")
        );
        assert_eq!(
            entry(&f64(
                Case::depthwise(&[1, 8, 32, 32], &[3, 5]).with(|c| c.stride = 3)
            ))
            .as_deref(),
            Some("dw_dgrad_kw5_strided_f64")
        );
        // f64 data with f32 compute is not the kernel's (nor a configuration of the table).
        let mixed = f64(Case::depthwise(&x, &[3, 3]));
        let ([w, dy, dx], conv) = (mixed.parts(), {
            let c = mixed.conv();
            RawConvolutionDescriptor::new(c.params().clone(), DType::F32, MathType::Default)
                .expect("conv")
        });
        let p = RawProblem {
            w: &w,
            dy: &dy,
            dx: &dx,
            conv: &conv,
        };
        assert!(!runs(&p), "f64 data, f32 compute");
        // Channels last: never directly (no NHWC f64 entry points), on NCHW copies for
        // every filter, stride and rank the NCHW entry points take.
        let via = |c: &Case| {
            c.on(|p| {
                let copies = Twin::in_format(p, Format::Nchw).expect("NCHW descriptors");
                via_nchw(p) && DirectPlan::of(&copies.problem(p.conv), false).is_some()
            })
        };
        let nhwc = |c: Case| f64(c).with(|c| c.format = Format::Nhwc);
        for case in [
            nhwc(Case::depthwise(&x, &[3, 3])),
            nhwc(Case::depthwise(&x, &[7, 7]).with(|c| c.stride = 2)),
            nhwc(Case::depthwise(&x, &[1, 1])),
            nhwc(Case::depthwise(&[2, 16, 8, 28, 28], &[3, 3, 3]).with(|c| c.stride = 2)),
            // Eight filters a channel (the NCHW entry points take up to 64).
            nhwc(Case::depthwise(&x, &[5, 5]).with(|c| {
                c.stride = 2;
                c.w[0] = 8 * 64;
            })),
        ] {
            assert!(via(&case), "{:?} stride {}", case.w, case.stride);
            assert!(case.plan().is_none(), "NHWC f64 directly: {:?}", case.w);
        }
        // More filters a channel than the NCHW entry points take: cuDNN's.
        let many = nhwc(Case::depthwise(&x, &[5, 5]).with(|c| c.w[0] = 65 * 64));
        assert!(!via(&many), "65 filters a channel");
        // In f32 a channels-last 3x3 layer runs natively, not on copies.
        let f32_nhwc = Case::depthwise(&x, &[3, 3]).with(|c| c.format = Format::Nhwc);
        assert!(!via(&f32_nhwc));
    }

    #[test]
    fn stride_2_2d_problems_take_it_in_spans_of_four_consecutive_columns() {
        // 5x5, stride 2, padding 2, dx 14 x 15: dy 7 x 8; per row, 15 columns in spans
        // of 4, one thread each: four.
        for benchmark in [false, true] {
            // Every type, however large: cuDNN runs none of them faster (the twin
            // included).
            for dtype in [DType::F32, DType::F16, DType::BF16] {
                let case = Case::depthwise(&[2, 6, 14, 15], &[5, 5]).with(|c| {
                    c.stride = 2;
                    c.dtype = dtype;
                });
                let plan = case.plan_in(benchmark).expect("a plan");
                let q = plan.params;
                assert_eq!((q.sh, q.sw, q.oh, q.ow), (2, 2, 7, 8));
                assert_eq!(q.items, 2 * 6 * 14 * 4);
                let large = Case::depthwise(&[32, 96, 112, 112], &[3, 3]).with(|c| {
                    c.stride = 2;
                    c.dtype = dtype;
                });
                assert!(large.plan_in(benchmark).is_some(), "{dtype:?} large");
            }
        }
        let plan = Case::depthwise(&[1, 4, 9, 9], &[7, 7])
            .with(|c| {
                c.stride = 2;
                c.dtype = DType::BF16;
            })
            .plan()
            .expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_k177_s2_bf16");
        let flat = || Case::depthwise(&[2, 6, 14, 15], &[3, 3]).with(|c| c.stride = 2);
        assert!(flat().with(|c| c.dil = 2).plan().is_none(), "dilated");
        // Other filters at stride 2: the general strided entry points.
        for (k, entry) in [
            ([3, 5], "dw_dgrad_kw5_strided_f32"),
            ([9, 9], "dw_dgrad_kw9_strided_f32"),
        ] {
            let plan = flat().with(|c| c.w = vec![6, 1, k[0], k[1]]).plan();
            assert_eq!(plan.map(|p| p.entry).as_deref(), Some(entry), "{k:?}");
        }
    }

    #[test]
    fn other_strided_2d_problems_take_the_strided_entries_with_the_height_an_argument() {
        // 3x3 at stride 3, dx 14 x 15: dy 5 x 5; per row, 15 columns in spans of 4 * 3 =
        // 12: two spans, three threads each.
        let case = Case::depthwise(&[2, 6, 14, 15], &[3, 3]).with(|c| {
            c.stride = 3;
            c.dtype = DType::BF16;
        });
        let plan = case.plan().expect("a plan");
        assert_eq!(plan.entry, "dw_dgrad_kw3_strided_bf16");
        let q = plan.params;
        assert_eq!((q.sh, q.sw, q.oh, q.ow, q.kh), (3, 3, 5, 5, 3));
        assert_eq!(q.items, 2 * 6 * 14 * 2 * 3);
        // Even widths (a transposed convolution's 4x4 at stride 2), one-column filters, a
        // height dilation, the widest: each its width's entry point, in both tiers.
        for (k, stride, dil_h, entry) in [
            ([4, 4], 2, 1, "dw_dgrad_kw4_strided_f16"),
            ([2, 2], 2, 1, "dw_dgrad_kw2_strided_f16"),
            ([7, 1], 3, 1, "dw_dgrad_kw1_strided_f16"),
            ([11, 11], 3, 1, "dw_dgrad_kw11_strided_f16"),
            ([3, 3], 3, 2, "dw_dgrad_kw3_strided_f16"),
        ] {
            let case = Case::depthwise(&[2, 6, 28, 29], &k).with(|c| {
                c.stride = stride;
                c.dtype = DType::F16;
                c.pad = 1;
                c.dil_h = Some(dil_h);
            });
            for benchmark in [false, true] {
                let plan = case.plan_in(benchmark).expect("a plan");
                assert_eq!(plan.entry, entry, "{k:?}");
                assert_eq!(
                    (plan.params.kh, plan.params.dh),
                    (k[0] as u32, dil_h as i32)
                );
            }
        }
        // Wider than the widest entry, or a width dilation: cuDNN's.
        let wide = Case::depthwise(&[2, 6, 28, 29], &[13, 13]).with(|c| c.stride = 3);
        assert!(wide.plan().is_none(), "13x13 strided");
        let dilated = Case::depthwise(&[2, 6, 28, 29], &[3, 3]).with(|c| {
            c.stride = 3;
            c.dil = 2;
        });
        assert!(dilated.plan().is_none(), "width dilation");
    }
}
