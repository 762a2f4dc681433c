//! The fast path: backward data as GEMM + col2im, spread over rayon.
//!
//! For one image `n` and group `g`, the gradient columns are
//! `col[(c, tap), o] = sum_k w[k, c, tap] * dy[n, k, o]`, a GEMM of the transposed filter
//! block with `dy`; col2im then adds each column entry into the `dx` position that
//! `(o, tap)` read in the forward pass.
//!
//! Work is split into blocks of `dx` channels of one image and group. Blocks write
//! disjoint `dx` channels, so they run in parallel without locks; each block walks `dy`
//! in tiles of output rows small enough that its column buffer stays in cache between
//! the GEMM that writes it and the col2im that reads it. A 1x1, stride-1, unpadded
//! convolution needs no col2im: the GEMM writes the gradient directly.

use std::borrow::Cow;

use rayon::prelude::*;

use super::layout::{Plain, Problem};
use super::sealed::Accum;
use super::RefElement;
use crate::convolution::geometry::BwdDataGeometry;
use crate::error::{Error, Result};
use crate::tensor::Format;

/// Blocks per rayon thread: enough slack for work stealing to even out the last ones.
const BLOCKS_PER_THREAD: usize = 3;
/// Fewest GEMM rows ((channel, tap) pairs) per block: thinner GEMMs cost more in packing
/// than the extra parallelism gains.
const MIN_BLOCK_ROWS: usize = 16;
/// Most GEMM rows per block, so that a tile of columns stays in a core's L2 between the
/// GEMM that writes it and the col2im that reads it.
const MAX_BLOCK_ROWS: usize = 256;
/// Output positions per GEMM tile: wide enough to amortise the GEMM's packing of the
/// filter block, rounded up to whole output rows.
const TILE_COLUMNS: usize = 512;

/// `dx = alpha * dgrad(w, dy) + beta * dx`, computed with a GEMM and col2im over rayon's
/// thread pool (size it with `RAYON_NUM_THREADS`).
///
/// Same contract and errors as
/// [`convolution_backward_data_naive`](super::convolution_backward_data_naive), but it
/// accumulates as cuDNN does: in `f32` for `f32`, `f16` and `bf16`, in `f64` for `f64`, so
/// results differ from the oracle by accumulation rounding only. `beta == 0` overwrites
/// `dx` without reading it.
pub fn convolution_backward_data<T: RefElement>(
    geo: &BwdDataGeometry,
    w_format: Format,
    dy_format: Format,
    dx_format: Format,
    alpha: f64,
    w: &[T],
    dy: &[T],
    beta: f64,
    dx: &mut [T],
) -> Result<()> {
    let p = Problem::new(
        geo,
        w_format,
        dy_format,
        dx_format,
        w.len(),
        dy.len(),
        dx.len(),
    )?;
    let plan = Plan::new(&p, rayon::current_num_threads());
    execute(&p, &plan, alpha, w, dy, beta, dx)
}

/// The fast path for a checked problem and a chosen cut (tests pick their own cuts).
fn execute<T: RefElement>(
    p: &Problem,
    plan: &Plan,
    alpha: f64,
    w: &[T],
    dy: &[T],
    beta: f64,
    dx: &mut [T],
) -> Result<()> {
    let filter = pack_filter(p, w);
    let dy = widen(dy);
    let scale = Scale::<T::Accum>::new(alpha, beta);
    let inputs = Inputs {
        p,
        plan,
        filter: &filter,
        dy: &dy,
    };

    match p.dx_layout {
        Plain::Nchw => split_blocks(p, plan, dx)?
            .into_par_iter()
            .try_for_each(|(block, out)| {
                if !scale.read_old {
                    if let Some(out) = T::as_accum_slice_mut(out) {
                        // dx is its own accumulator and its old contents are not needed:
                        // accumulate in place and skip the scratch.
                        inputs.block_gradient(block, out)?;
                        if !scale.unit_alpha {
                            for o in out.iter_mut() {
                                *o = scale.alpha * *o;
                            }
                        }
                        return Ok(());
                    }
                }
                let mut grad = vec![T::Accum::ZERO; out.len()];
                inputs.block_gradient(block, &mut grad)?;
                for (o, &g) in out.iter_mut().zip(&grad) {
                    *o = scale.apply(g, *o);
                }
                Ok(())
            }),
        Plain::Nhwc => {
            // Blocks are channel ranges, which are strided in NHWC: compute in NCHW order,
            // then transpose while blending, one (n, d, h) row of dx at a time.
            let mut staged = vec![T::Accum::ZERO; dx.len()];
            split_blocks(p, plan, &mut staged)?
                .into_par_iter()
                .try_for_each(|(block, out)| inputs.block_gradient(block, out))?;
            let (channels, width, x_size) = (p.in_channels, p.x[2], p.x_size);
            let rows_per_image = p.x[0] * p.x[1];
            dx.par_chunks_mut(width * channels)
                .enumerate()
                .for_each(|(row, out)| {
                    let (n, r) = (row / rows_per_image, row % rows_per_image);
                    for c in 0..channels {
                        let start = (n * channels + c) * x_size + r * width;
                        let src = &staged[start..start + width];
                        for (o, &g) in out[c..].iter_mut().step_by(channels).zip(src) {
                            *o = scale.apply(g, *o);
                        }
                    }
                });
            Ok(())
        }
    }
}

/// The final blend, in the accumulator type, as cuDNN applies its float/double scaling
/// factors.
#[derive(Clone, Copy)]
struct Scale<A> {
    alpha: A,
    beta: A,
    /// `false` when `beta == 0`: `dx` may hold NaN and must not be read.
    read_old: bool,
    /// `alpha == 1`, when the gradient needs no scaling.
    unit_alpha: bool,
}

impl<A: Accum> Scale<A> {
    // Exact comparisons on purpose: only an exact 1 may skip the scaling, only an exact
    // 0 may skip reading dx (as cuDNN does).
    #[allow(clippy::float_cmp)]
    fn new(alpha: f64, beta: f64) -> Self {
        Scale {
            alpha: A::from_scale(alpha),
            beta: A::from_scale(beta),
            read_old: beta != 0.0,
            unit_alpha: alpha == 1.0,
        }
    }

    #[inline]
    fn apply<T: RefElement<Accum = A>>(self, grad: A, old: T) -> T {
        if self.read_old {
            T::from_accum(self.alpha * grad + self.beta * old.to_accum())
        } else {
            T::from_accum(self.alpha * grad)
        }
    }
}

/// How the work is cut: channels per block, output rows per GEMM tile.
#[derive(Debug, Clone, Copy)]
struct Plan {
    /// 1x1 kernel, stride 1, no padding: the GEMM output is the gradient itself.
    direct: bool,
    block_channels: usize,
    tile_rows: usize,
    /// Threads each GEMM may use: more than one only when there are fewer blocks than
    /// threads (a single image, few channels), where the blocks alone would leave cores
    /// idle.
    gemm_threads: usize,
}

impl Plan {
    fn new(p: &Problem, threads: usize) -> Self {
        let direct = p.kernel == [1; 3] && p.stride == [1; 3] && p.padding == [0; 3];
        let threads = threads.max(1);
        let cg = p.in_per_group;
        let jobs = p.batch * p.groups;
        let wanted_blocks = (BLOCKS_PER_THREAD * threads).div_ceil(jobs).clamp(1, cg);
        let block_channels = cg
            .div_ceil(wanted_blocks)
            .min(MAX_BLOCK_ROWS / p.taps)
            .max(MIN_BLOCK_ROWS.div_ceil(p.taps))
            .clamp(1, cg);
        let tile_rows = TILE_COLUMNS.div_ceil(p.y[2]).clamp(1, p.y[0] * p.y[1]);
        let blocks = jobs.saturating_mul(cg.div_ceil(block_channels));
        Plan {
            direct,
            block_channels,
            tile_rows,
            gemm_threads: (threads / blocks).max(1),
        }
    }

    fn parallelism(&self) -> gemm::Parallelism {
        if self.gemm_threads > 1 {
            gemm::Parallelism::Rayon(self.gemm_threads)
        } else {
            gemm::Parallelism::None
        }
    }
}

/// A run of `count` dx channels, starting at `first` within `group`, of image `n`.
#[derive(Debug, Clone, Copy)]
struct Block {
    n: usize,
    group: usize,
    first: usize,
    count: usize,
}

/// Cuts `out` (dx-shaped, NCHW order) into the blocks' disjoint channel ranges, which are
/// consecutive in memory: image-major, then channel.
fn split_blocks<'a, E>(
    p: &Problem,
    plan: &Plan,
    out: &'a mut [E],
) -> Result<Vec<(Block, &'a mut [E])>> {
    let cg = p.in_per_group;
    let mut blocks = Vec::new();
    let mut rest = out;
    for n in 0..p.batch {
        for group in 0..p.groups {
            for first in (0..cg).step_by(plan.block_channels) {
                let count = plan.block_channels.min(cg - first);
                let (head, tail) = rest
                    .split_at_mut_checked(count * p.x_size)
                    .ok_or_else(|| Error::Shape("dx is shorter than its geometry".into()))?;
                blocks.push((
                    Block {
                        n,
                        group,
                        first,
                        count,
                    },
                    head,
                ));
                rest = tail;
            }
        }
    }
    Ok(blocks)
}

/// The filter as the GEMM reads it: (K, C/groups, taps) in cross-correlation order and in
/// the accumulator type. Borrowed when the caller's filter already is exactly that.
fn pack_filter<'w, T: RefElement>(p: &Problem, w: &'w [T]) -> Cow<'w, [T::Accum]> {
    if p.w_layout == Plain::Nchw && !p.flip {
        if let Some(same) = T::as_accum_slice(w) {
            return Cow::Borrowed(same);
        }
    }
    let ws = p.w_strides();
    let per_map = p.in_per_group * p.taps;
    let mut packed = vec![T::Accum::ZERO; w.len()];
    packed
        .par_chunks_mut(per_map)
        .enumerate()
        .for_each(|(k, map)| {
            let mut out = map.iter_mut();
            for c in 0..p.in_per_group {
                for t in 0..p.kernel[0] {
                    for r in 0..p.kernel[1] {
                        for s in 0..p.kernel[2] {
                            let at = k * ws[0]
                                + c * ws[1]
                                + p.stored_tap(0, t) * ws[2]
                                + p.stored_tap(1, r) * ws[3]
                                + p.stored_tap(2, s) * ws[4];
                            if let Some(o) = out.next() {
                                *o = w[at].to_accum();
                            }
                        }
                    }
                }
            }
        });
    Cow::Owned(packed)
}

/// `dy` in the accumulator type, same layout (the GEMM takes either layout's strides).
fn widen<T: RefElement>(dy: &[T]) -> Cow<'_, [T::Accum]> {
    const CHUNK: usize = 1 << 14;
    if let Some(same) = T::as_accum_slice(dy) {
        return Cow::Borrowed(same);
    }
    let mut wide = vec![T::Accum::ZERO; dy.len()];
    wide.par_chunks_mut(CHUNK)
        .zip(dy.par_chunks(CHUNK))
        .for_each(|(d, s)| T::widen_into(s, d));
    Cow::Owned(wide)
}

/// What every block reads.
struct Inputs<'a, A> {
    p: &'a Problem,
    plan: &'a Plan,
    filter: &'a [A],
    dy: &'a [A],
}

impl<A: Accum> Inputs<'_, A> {
    /// Writes the unscaled gradient of `block`'s channels into `grad` ((count, x) NCHW).
    fn block_gradient(&self, block: Block, grad: &mut [A]) -> Result<()> {
        let p = self.p;
        let kg = p.out_per_group;
        let rows = block.count * p.taps;
        let par = self.plan.parallelism();
        let ys = p.dy_strides();
        // Transposed filter block: row (c, tap) has stride 1, column k stride Cg*taps.
        let lhs = Operand {
            data: self.filter,
            offset: block.group * kg * p.in_per_group * p.taps + block.first * p.taps,
            row_stride: 1,
            col_stride: p.in_per_group * p.taps,
        };
        // dy of this image and group: row k, column = flattened output position, whose
        // stride is the width stride in both layouts.
        let dy_at = |position: usize| Operand {
            data: self.dy,
            offset: block.n * ys[0] + block.group * kg * ys[1] + position * ys[4],
            row_stride: ys[1],
            col_stride: ys[4],
        };

        if self.plan.direct {
            return matmul(rows, p.y_size, kg, grad, p.y_size, lhs, dy_at(0), par);
        }

        grad.fill(A::ZERO);
        let width = p.y[2];
        let total_rows = p.y[0] * p.y[1];
        let mut col = vec![A::ZERO; rows * self.plan.tile_rows * width];
        for first_row in (0..total_rows).step_by(self.plan.tile_rows) {
            let end_row = (first_row + self.plan.tile_rows).min(total_rows);
            let cols = (end_row - first_row) * width;
            let tile = &mut col[..rows * cols];
            matmul(
                rows,
                cols,
                kg,
                tile,
                cols,
                lhs,
                dy_at(first_row * width),
                par,
            )?;
            self.col2im(block.count, tile, cols, first_row..end_row, grad);
        }
        Ok(())
    }

    /// Adds column entries `col[(c, tap), (row - rows.start) * width + ow]` into the dx
    /// positions they came from; `row` is a flattened (depth, height) output row.
    fn col2im(
        &self,
        channels: usize,
        col: &[A],
        cols: usize,
        rows: std::ops::Range<usize>,
        grad: &mut [A],
    ) {
        let p = self.p;
        let [_, kh, kw] = p.kernel;
        let (out_h, out_w) = (p.y[1], p.y[2]);
        let (in_h, in_w) = (p.x[1], p.x[2]);
        let (stride_w, dil_w, pad_w) = (p.stride[2], p.dilation[2], p.padding[2]);
        for (c, plane) in grad.chunks_exact_mut(p.x_size).take(channels).enumerate() {
            for t in 0..p.kernel[0] {
                for r in 0..kh {
                    for s in 0..kw {
                        let tap = (t * kh + r) * kw + s;
                        let src_row = &col[(c * p.taps + tap) * cols..][..cols];
                        // Output columns whose tap s lands inside dx: ow*stride + s*dil - pad
                        // in [0, in_w).
                        let offset = s * dil_w;
                        let first_ow = pad_w.saturating_sub(offset).div_ceil(stride_w);
                        let end_ow = (in_w + pad_w)
                            .checked_sub(offset)
                            .map_or(0, |room| room.div_ceil(stride_w))
                            .min(out_w);
                        if first_ow >= end_ow {
                            continue;
                        }
                        let first_iw = first_ow * stride_w + offset - pad_w;
                        for row in rows.clone() {
                            let (od, oh) = (row / out_h, row % out_h);
                            let Some(id) = p.input_pos(0, od, t) else {
                                continue;
                            };
                            let Some(ih) = p.input_pos(1, oh, r) else {
                                continue;
                            };
                            let src = &src_row[(row - rows.start) * out_w..][first_ow..end_ow];
                            let dst = &mut plane[(id * in_h + ih) * in_w + first_iw..];
                            if stride_w == 1 {
                                for (d, &v) in dst.iter_mut().zip(src) {
                                    *d += v;
                                }
                            } else {
                                for (d, &v) in dst.chunks_mut(stride_w).zip(src) {
                                    if let Some(d) = d.first_mut() {
                                        *d += v;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A strided matrix view into a slice, starting at `offset`.
#[derive(Clone, Copy)]
struct Operand<'a, A> {
    data: &'a [A],
    offset: usize,
    row_stride: usize,
    col_stride: usize,
}

impl<A> Operand<'_, A> {
    /// Whether every element of a `rows` x `cols` view lies inside `data`.
    fn fits(&self, rows: usize, cols: usize) -> bool {
        if rows == 0 || cols == 0 {
            return true;
        }
        (rows - 1)
            .checked_mul(self.row_stride)
            .zip((cols - 1).checked_mul(self.col_stride))
            .and_then(|(a, b)| a.checked_add(b)?.checked_add(self.offset))
            .is_some_and(|last| last < self.data.len())
    }
}

/// `dst (m x n, row-major, row stride dst_stride) = lhs (m x k) * rhs (k x n)`.
fn matmul<A: Accum>(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [A],
    dst_stride: usize,
    lhs: Operand<'_, A>,
    rhs: Operand<'_, A>,
    parallelism: gemm::Parallelism,
) -> Result<()> {
    if m == 0 || n == 0 || k == 0 {
        dst.fill(A::ZERO);
        return Ok(());
    }
    let dst_view = Operand {
        data: dst,
        offset: 0,
        row_stride: dst_stride,
        col_stride: 1,
    };
    if !(dst_view.fits(m, n) && lhs.fits(m, k) && rhs.fits(k, n)) {
        return Err(Error::Shape(format!(
            "internal error: a {m}x{k} by {k}x{n} GEMM operand overruns its buffer"
        )));
    }
    let stride = |s: usize| {
        isize::try_from(s).map_err(|_| Error::Shape(format!("stride {s} overflows isize")))
    };
    let (dst_rs, lhs_rs, lhs_cs, rhs_rs, rhs_cs) = (
        stride(dst_stride)?,
        stride(lhs.row_stride)?,
        stride(lhs.col_stride)?,
        stride(rhs.row_stride)?,
        stride(rhs.col_stride)?,
    );
    let lhs_ptr = lhs.data[lhs.offset..].as_ptr();
    let rhs_ptr = rhs.data[rhs.offset..].as_ptr();
    // SAFETY: `fits` proved that every element the GEMM touches through each pointer and
    // stride pair lies inside the slice it came from (offsets already applied above);
    // `dst` is a unique borrow, so it cannot alias `lhs` or `rhs`. `A` is `f32` or `f64`
    // (the sealed `Accum`), the types `gemm` dispatches on without panicking. With
    // `read_dst = false` the GEMM only writes `dst`, so its prior contents do not matter.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            dst_rs,
            false,
            lhs_ptr,
            lhs_cs,
            lhs_rs,
            rhs_ptr,
            rhs_cs,
            rhs_rs,
            A::ZERO,
            A::ONE,
            false,
            false,
            false,
            parallelism,
        );
    }
    Ok(())
}

// Hand-worked expectations are exact in binary floating point, so tests compare exactly.
#[cfg(test)]
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;
    use crate::convolution::geometry::ConvParams;
    use crate::convolution::ConvolutionMode;
    use half::{bf16, f16};

    const NCHW: Format = Format::Nchw;
    const NHWC: Format = Format::Nhwc;

    fn geo(
        w: &[usize],
        dy: &[usize],
        dx: &[usize],
        pad: &[i64],
        stride: &[i64],
        dil: &[i64],
        groups: i64,
        mode: ConvolutionMode,
    ) -> BwdDataGeometry {
        let p = ConvParams::new(pad, stride, dil, groups, mode).unwrap();
        BwdDataGeometry::new(w, dy, dx, &p).unwrap()
    }

    fn strided_dilated(mode: ConvolutionMode) -> BwdDataGeometry {
        geo(
            &[1, 1, 2, 2],
            &[1, 1, 2, 2],
            &[1, 1, 3, 3],
            &[1, 1],
            &[2, 2],
            &[2, 2],
            1,
            mode,
        )
    }

    /// Same hand-worked case as the oracle's test: every contribution lands on x[1, 1],
    /// w[1,1]*dy00 + w[1,0]*dy01 + w[0,1]*dy10 + w[0,0]*dy11 (pairing reversed when the
    /// kernel is flipped).
    #[test]
    fn stride_padding_dilation_in_both_modes() {
        let w = [1.0f32, 2.0, 3.0, 4.0];
        let dy = [10.0f32, 20.0, 30.0, 40.0];
        for (mode, centre) in [
            (ConvolutionMode::CrossCorrelation, 40.0 + 60.0 + 60.0 + 40.0),
            (ConvolutionMode::Convolution, 10.0 + 40.0 + 90.0 + 160.0),
        ] {
            let mut dx = [f32::NAN; 9];
            convolution_backward_data(
                &strided_dilated(mode),
                NCHW,
                NCHW,
                NCHW,
                1.0,
                &w,
                &dy,
                0.0,
                &mut dx,
            )
            .unwrap();
            assert_eq!(dx, [0.0, 0.0, 0.0, 0.0, centre, 0.0, 0.0, 0.0, 0.0]);
        }
    }

    fn plain_2x2() -> BwdDataGeometry {
        geo(
            &[1, 1, 2, 2],
            &[1, 1, 2, 2],
            &[1, 1, 3, 3],
            &[0, 0],
            &[1, 1],
            &[1, 1],
            1,
            ConvolutionMode::CrossCorrelation,
        )
    }

    /// dx[i][j] = sum over valid (oh, ow) of w[i-oh][j-ow] * dy[oh][ow], with dy's digits
    /// keeping each product visible in the sum.
    const FULL_2X2: [f64; 9] = [
        1.0,
        2.0 + 10.0,
        20.0,
        3.0 + 100.0,
        4.0 + 30.0 + 200.0 + 1000.0,
        40.0 + 2000.0,
        300.0,
        400.0 + 3000.0,
        4000.0,
    ];

    #[test]
    fn full_correlation_with_alpha_and_beta() {
        let w = [1.0f64, 2.0, 3.0, 4.0];
        let dy = [1.0f64, 10.0, 100.0, 1000.0];
        let mut dx = [f64::NAN; 9];
        convolution_backward_data(&plain_2x2(), NCHW, NCHW, NCHW, 1.0, &w, &dy, 0.0, &mut dx)
            .unwrap();
        assert_eq!(dx, FULL_2X2);

        let mut dx = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
        convolution_backward_data(&plain_2x2(), NCHW, NCHW, NCHW, 2.0, &w, &dy, 1.0, &mut dx)
            .unwrap();
        for (i, v) in dx.iter().enumerate() {
            assert_eq!(*v, 2.0 * FULL_2X2[i] + (i + 1) as f64);
        }
    }

    #[test]
    fn half_types_round_once() {
        let w: Vec<f16> = [1.0f32, 2.0, 3.0, 4.0].map(f16::from_f32).to_vec();
        let dy: Vec<f16> = [1.0f32, 10.0, 100.0, 1000.0].map(f16::from_f32).to_vec();
        let mut dx = [f16::NAN; 9];
        convolution_backward_data(&plain_2x2(), NCHW, NCHW, NCHW, 1.0, &w, &dy, 0.0, &mut dx)
            .unwrap();
        // Every sum is an integer below 2^11 or a multiple of 2 below 2^12, exact in f16.
        let got: Vec<f64> = dx.iter().map(|v| v.to_f64()).collect();
        assert_eq!(got, FULL_2X2);

        let wb: Vec<bf16> = [1.0f32, 2.0, 3.0, 4.0].map(bf16::from_f32).to_vec();
        let dyb: Vec<bf16> = [1.0f32, 1.0, 1.0, 1.0].map(bf16::from_f32).to_vec();
        let mut dxb = [bf16::from_f32(1.0); 9];
        convolution_backward_data(
            &plain_2x2(),
            NCHW,
            NCHW,
            NCHW,
            1.0,
            &wb,
            &dyb,
            0.5,
            &mut dxb,
        )
        .unwrap();
        // Centre: 1 + 2 + 3 + 4 + 0.5 * 1.
        assert_eq!(dxb[4].to_f32(), 10.5);
    }

    /// Two groups of two channels, 1x1 kernel (the direct GEMM): channel c of dx only sees
    /// the two maps of its group, with NHWC dy and dx against NCHW.
    #[test]
    fn groups_and_layouts_on_the_direct_path() {
        let g = geo(
            &[4, 2, 1, 1],
            &[1, 4, 1, 1],
            &[1, 4, 1, 1],
            &[0, 0],
            &[1, 1],
            &[1, 1],
            2,
            ConvolutionMode::CrossCorrelation,
        );
        // w[k][c]: maps 0, 1 belong to group 0 (dx channels 0, 1), maps 2, 3 to group 1.
        let w = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let dy = [1.0f32, 10.0, 100.0, 1000.0];
        // dx[0] = w00*dy0 + w10*dy1 = 1 + 30; dx[1] = 2 + 40;
        // dx[2] = w2,0*dy2 + w3,0*dy3 = 500 + 7000; dx[3] = 600 + 8000.
        let expected = [31.0f32, 42.0, 7500.0, 8600.0];
        // With one spatial position the layouts coincide in memory, so compare both.
        for fmt in [NCHW, NHWC] {
            let mut dx = [f32::NAN; 4];
            convolution_backward_data(&g, fmt, fmt, fmt, 1.0, &w, &dy, 0.0, &mut dx).unwrap();
            assert_eq!(dx, expected);
        }
    }

    /// A 1x2 image with two channels through a 1x2 kernel, NHWC everywhere: checks the
    /// channels-last staging and transpose.
    #[test]
    fn nhwc_dx_is_transposed_back() {
        let g = geo(
            &[1, 2, 1, 2],
            &[1, 1, 1, 1],
            &[1, 2, 1, 2],
            &[0, 0],
            &[1, 1],
            &[1, 1],
            1,
            ConvolutionMode::CrossCorrelation,
        );
        // KRSC: w[s][c] with c0 = [1, 2] and c1 = [3, 4] along s.
        let w = [1.0f32, 3.0, 2.0, 4.0];
        let dy = [10.0f32];
        let mut dx = [f32::NAN; 4];
        convolution_backward_data(&g, NHWC, NHWC, NHWC, 1.0, &w, &dy, 0.0, &mut dx).unwrap();
        // dx[w][c] = w[c][w] * 10, stored position-major.
        assert_eq!(dx, [10.0, 30.0, 20.0, 40.0]);
    }

    #[test]
    fn errors_instead_of_panics() {
        let g = plain_2x2();
        let mut dx = [0.0f32; 9];
        let long = convolution_backward_data(
            &g,
            NCHW,
            NCHW,
            NCHW,
            1.0,
            &[0.0f32; 4],
            &[0.0; 5],
            0.0,
            &mut dx,
        );
        assert!(matches!(long, Err(Error::Shape(_))));
        let vect = convolution_backward_data(
            &g,
            NCHW,
            NCHW,
            Format::NchwVectC8x4,
            1.0,
            &[0.0f32; 4],
            &[0.0; 4],
            0.0,
            &mut dx,
        );
        assert!(matches!(vect, Err(Error::InvalidArgument(_))));
        let mut forged = g;
        forged.groups = 0;
        let zero = convolution_backward_data(
            &forged,
            NCHW,
            NCHW,
            NCHW,
            1.0,
            &[0.0f32; 4],
            &[0.0; 4],
            0.0,
            &mut dx,
        );
        assert!(zero.is_err());
    }

    fn problem(w: &[usize], dy: &[usize], dx: &[usize], pad: i64) -> Problem {
        let dims = w.len() - 2;
        let g = geo(
            w,
            dy,
            dx,
            &vec![pad; dims],
            &vec![1; dims],
            &vec![1; dims],
            1,
            ConvolutionMode::CrossCorrelation,
        );
        let (wn, yn, xn) = g.element_counts();
        Problem::new(&g, NCHW, NCHW, NCHW, wn, yn, xn).unwrap()
    }

    #[test]
    fn plan_balances_blocks_threads_and_tiles() {
        // 16 threads want 48 blocks over 2 images: 64 / 24 -> 3 channels (27 rows, above
        // the 16-row floor); a 5x5 output is one tile.
        let p = problem(&[8, 64, 3, 3], &[2, 8, 5, 5], &[2, 64, 5, 5], 1);
        let plan = Plan::new(&p, 16);
        assert_eq!(
            (plan.block_channels, plan.tile_rows, plan.gemm_threads),
            (3, 5, 1)
        );
        assert!(!plan.direct);

        // One thread, 512 channels of 3x3: capped at 256 / 9 = 28 channels per block;
        // tiles of ceil(512 / 40) = 13 rows of a 40-wide output.
        let p = problem(&[4, 512, 3, 3], &[1, 4, 40, 40], &[1, 512, 40, 40], 1);
        let plan = Plan::new(&p, 1);
        assert_eq!((plan.block_channels, plan.tile_rows), (28, 13));

        // A 1x1 with 16 channels and one image is a single block (16-row floor), so the
        // GEMM itself gets the threads.
        let p = problem(&[4, 16, 1, 1], &[1, 4, 6, 6], &[1, 16, 6, 6], 0);
        let plan = Plan::new(&p, 16);
        assert!(plan.direct);
        assert_eq!((plan.block_channels, plan.gemm_threads), (16, 16));
    }

    /// Deterministic values in +-[0.25, 1.25), enough to make any misplaced term visible.
    fn values(len: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let unit = (state >> 11) as f64 / (1u64 << 53) as f64;
                let magnitude = 0.25 + unit;
                if state & 1 == 0 {
                    magnitude
                } else {
                    -magnitude
                }
            })
            .collect()
    }

    /// Every cut (channels per block, rows per tile, direct or col2im) must give the
    /// oracle's answer, whatever the thread count would have chosen.
    #[test]
    fn every_cut_matches_the_oracle() {
        let cases = [
            // groups 2, 3x3, stride 2, padding 1, dx 7x9
            geo(
                &[4, 5, 3, 3],
                &[2, 4, 4, 5],
                &[2, 10, 7, 9],
                &[1, 1],
                &[2, 2],
                &[1, 1],
                2,
                ConvolutionMode::Convolution,
            ),
            // 1x1 stride 1: direct GEMM, and col2im when the plan says so
            geo(
                &[6, 5, 1, 1],
                &[2, 6, 3, 4],
                &[2, 5, 3, 4],
                &[0, 0],
                &[1, 1],
                &[1, 1],
                1,
                ConvolutionMode::CrossCorrelation,
            ),
            // 3-d, dilation 2 in height
            geo(
                &[3, 4, 2, 3, 2],
                &[1, 3, 3, 2, 5],
                &[1, 4, 4, 5, 4],
                &[0, 1, 1],
                &[1, 2, 1],
                &[1, 2, 1],
                1,
                ConvolutionMode::CrossCorrelation,
            ),
        ];
        for (i, g) in cases.iter().enumerate() {
            let (wn, yn, xn) = g.element_counts();
            let w = values(wn, 1 + i as u64);
            let dy = values(yn, 100 + i as u64);
            let old = values(xn, 200 + i as u64);
            for (wf, yf, xf) in [(NCHW, NCHW, NCHW), (NHWC, NHWC, NHWC), (NHWC, NCHW, NHWC)] {
                let mut expected = old.clone();
                crate::reference::convolution_backward_data_naive(
                    g,
                    wf,
                    yf,
                    xf,
                    0.75,
                    &w,
                    &dy,
                    -0.5,
                    &mut expected,
                )
                .unwrap();
                let p = Problem::new(g, wf, yf, xf, wn, yn, xn).unwrap();
                let auto = Plan::new(&p, 4);
                let total_rows = p.y[0] * p.y[1];
                for block_channels in 1..=p.in_per_group {
                    for tile_rows in [1, 2, total_rows] {
                        for direct in [false, auto.direct] {
                            let plan = Plan {
                                direct,
                                block_channels,
                                tile_rows,
                                gemm_threads: 1 + tile_rows % 2,
                            };
                            let mut got = old.clone();
                            execute(&p, &plan, 0.75, &w, &dy, -0.5, &mut got).unwrap();
                            for (a, b) in got.iter().zip(&expected) {
                                assert!((a - b).abs() < 1e-12, "{plan:?} case {i}: {a} vs {b}");
                            }
                        }
                    }
                }
            }
        }
    }
}
