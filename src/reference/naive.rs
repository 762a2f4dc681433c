//! The oracle: backward data as the literal transpose of the forward loop.
//!
//! Forward cross-correlation reads `x[n, c, o*stride - pad + r*dilation]` for every output
//! `y[n, k, o]`; its gradient therefore sends `w[k, c, r] * dy[n, k, o]` back to exactly
//! that `x` position. This file does that and nothing cleverer, in `f64`, so that it can
//! be checked by reading and trusted to judge the fast path and the GPU.

use super::layout::Problem;
use super::RefElement;
use crate::convolution::geometry::BwdDataGeometry;
use crate::error::Result;
use crate::tensor::Format;

/// `dx = alpha * dgrad(w, dy) + beta * dx`, by direct loops accumulated in `f64` and
/// rounded to `T` once. `beta == 0` overwrites `dx` without reading it.
///
/// Each operand has its own memory format (NCHW or NHWC; filters KCRS or KRSC). Errors:
/// [`Error::Shape`](crate::error::Error::Shape) when a slice length does not match the
/// geometry (or the geometry is inconsistent),
/// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) for vectorised
/// formats.
pub fn convolution_backward_data_naive<T: RefElement>(
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
    let (ws, ys, xs) = (p.w_strides(), p.dy_strides(), p.dx_strides());
    // Indexed like dx itself, so the final blend is element by element.
    let mut grad = vec![0.0f64; dx.len()];

    for n in 0..p.batch {
        for k in 0..p.out_channels {
            let group = k / p.out_per_group;
            for od in 0..p.y[0] {
                for oh in 0..p.y[1] {
                    for ow in 0..p.y[2] {
                        let dy_at = n * ys[0] + k * ys[1] + od * ys[2] + oh * ys[3] + ow * ys[4];
                        let g = dy[dy_at].widen_f64();
                        for cl in 0..p.in_per_group {
                            let c = group * p.in_per_group + cl;
                            for kt in 0..p.kernel[0] {
                                let Some(id) = p.input_pos(0, od, kt) else {
                                    continue;
                                };
                                for kr in 0..p.kernel[1] {
                                    let Some(ih) = p.input_pos(1, oh, kr) else {
                                        continue;
                                    };
                                    for ks in 0..p.kernel[2] {
                                        let Some(iw) = p.input_pos(2, ow, ks) else {
                                            continue;
                                        };
                                        let w_at = k * ws[0]
                                            + cl * ws[1]
                                            + p.stored_tap(0, kt) * ws[2]
                                            + p.stored_tap(1, kr) * ws[3]
                                            + p.stored_tap(2, ks) * ws[4];
                                        let dx_at = n * xs[0]
                                            + c * xs[1]
                                            + id * xs[2]
                                            + ih * xs[3]
                                            + iw * xs[4];
                                        grad[dx_at] += w[w_at].widen_f64() * g;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    for (out, g) in dx.iter_mut().zip(grad) {
        let old = if beta == 0.0 {
            0.0
        } else {
            beta * out.widen_f64()
        };
        *out = T::round_from_f64(alpha * g + old);
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
    use crate::error::Error;
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

    /// dx 1x1x3x3, kernel 2x2, stride 2, padding 1, dilation 2: the forward output is
    /// (3 + 2 - 2*1 - 1)/2 + 1 = 2 per dim. Output row oh with tap r reads x row
    /// 2*oh - 1 + 2*r: (0,0) -> -1 and (1,1) -> 3 fall in the padding, (0,1) and (1,0)
    /// both hit row 1; columns likewise. So every contribution lands on x[1, 1] and the
    /// other eight dx values are 0.
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

    #[test]
    fn stride_padding_dilation_cross_correlation() {
        let g = strided_dilated(ConvolutionMode::CrossCorrelation);
        let w = [1.0f64, 2.0, 3.0, 4.0]; // w[r][s]
        let dy = [10.0f64, 20.0, 30.0, 40.0]; // dy[oh][ow]
        let mut dx = [f64::NAN; 9];
        convolution_backward_data_naive(&g, NCHW, NCHW, NCHW, 1.0, &w, &dy, 0.0, &mut dx).unwrap();
        // w[1,1]*dy[0,0] + w[1,0]*dy[0,1] + w[0,1]*dy[1,0] + w[0,0]*dy[1,1]
        let centre = 4.0 * 10.0 + 3.0 * 20.0 + 2.0 * 30.0 + 1.0 * 40.0;
        assert_eq!(dx, [0.0, 0.0, 0.0, 0.0, centre, 0.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn convolution_mode_flips_the_kernel() {
        let g = strided_dilated(ConvolutionMode::Convolution);
        let w = [1.0f64, 2.0, 3.0, 4.0];
        let dy = [10.0f64, 20.0, 30.0, 40.0];
        let mut dx = [f64::NAN; 9];
        convolution_backward_data_naive(&g, NCHW, NCHW, NCHW, 1.0, &w, &dy, 0.0, &mut dx).unwrap();
        // Flipped: logical tap (r, s) uses w[1-r][1-s], so the pairing reverses.
        let centre = 1.0 * 10.0 + 2.0 * 20.0 + 3.0 * 30.0 + 4.0 * 40.0;
        assert_eq!(dx[4], centre);
        assert_eq!(dx.iter().filter(|&&v| v == 0.0).count(), 8);
    }

    /// dx 1x1x3x3, kernel 2x2, stride 1, no padding: dy is 2x2 and every dx pixel
    /// collects w[i - oh][j - ow] * dy[oh][ow] over valid (oh, ow).
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

    #[test]
    fn full_correlation_of_a_2x2_kernel() {
        let w = [1.0f32, 2.0, 3.0, 4.0];
        let dy = [1.0f32, 10.0, 100.0, 1000.0];
        let mut dx = [0.0f32; 9];
        convolution_backward_data_naive(&plain_2x2(), NCHW, NCHW, NCHW, 1.0, &w, &dy, 0.0, &mut dx)
            .unwrap();
        let expected = [
            1.0,                         // w00*dy00
            2.0 + 10.0,                  // w01*dy00 + w00*dy01
            20.0,                        // w01*dy01
            3.0 + 100.0,                 // w10*dy00 + w00*dy10
            4.0 + 30.0 + 200.0 + 1000.0, // w11*dy00 + w10*dy01 + w01*dy10 + w00*dy11
            40.0 + 2000.0,               // w11*dy01 + w01*dy11
            300.0,                       // w10*dy10
            400.0 + 3000.0,              // w11*dy10 + w10*dy11
            4000.0,                      // w11*dy11
        ];
        assert_eq!(dx, expected);
    }

    #[test]
    fn alpha_scales_and_beta_blends() {
        let w = [1.0f32, 2.0, 3.0, 4.0];
        let dy = [1.0f32, 10.0, 100.0, 1000.0];
        let mut dx = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
        convolution_backward_data_naive(&plain_2x2(), NCHW, NCHW, NCHW, 0.5, &w, &dy, 1.0, &mut dx)
            .unwrap();
        // 0.5 * the gradient above + the old value.
        assert_eq!(dx[0], 0.5 * 1.0 + 1.0);
        assert_eq!(dx[4], 0.5 * 1234.0 + 5.0);
        assert_eq!(dx[8], 0.5 * 4000.0 + 9.0);
        let mut dx2 = [2.0f32; 9];
        convolution_backward_data_naive(
            &plain_2x2(),
            NCHW,
            NCHW,
            NCHW,
            0.0,
            &w,
            &dy,
            -3.0,
            &mut dx2,
        )
        .unwrap();
        assert_eq!(dx2, [-6.0; 9]);
    }

    #[test]
    fn beta_zero_overwrites_nan() {
        let w = [f16::from_f32(1.0); 4];
        let dy = [f16::from_f32(1.0); 4];
        let mut dx = [f16::NAN; 9];
        convolution_backward_data_naive(&plain_2x2(), NCHW, NCHW, NCHW, 1.0, &w, &dy, 0.0, &mut dx)
            .unwrap();
        let counts: Vec<f32> = dx.iter().map(|v| v.to_f32()).collect();
        assert_eq!(counts, [1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0]);
    }

    /// Two groups of one channel each, 1x1 kernel: each dx channel sees only its own
    /// group's filter and dy channel.
    #[test]
    fn groups_keep_channels_apart_in_both_layouts() {
        let g = geo(
            &[2, 1, 1, 1],
            &[1, 2, 1, 2],
            &[1, 2, 1, 2],
            &[0, 0],
            &[1, 1],
            &[1, 1],
            2,
            ConvolutionMode::CrossCorrelation,
        );
        let w = [2.0f64, 3.0];
        // NCHW dy: channel 0 = [1, 2], channel 1 = [5, 7].
        let dy_nchw = [1.0f64, 2.0, 5.0, 7.0];
        let mut dx = [0.0f64; 4];
        convolution_backward_data_naive(&g, NCHW, NCHW, NCHW, 1.0, &w, &dy_nchw, 0.0, &mut dx)
            .unwrap();
        assert_eq!(dx, [2.0, 4.0, 15.0, 21.0]);
        // The same tensors channels-last: positions outer, channels inner.
        let dy_nhwc = [1.0f64, 5.0, 2.0, 7.0];
        let mut dx_nhwc = [0.0f64; 4];
        convolution_backward_data_naive(&g, NHWC, NHWC, NHWC, 1.0, &w, &dy_nhwc, 0.0, &mut dx_nhwc)
            .unwrap();
        assert_eq!(dx_nhwc, [2.0, 15.0, 4.0, 21.0]);
    }

    /// C = 2, K = 1, 1x2 kernel, NHWC filter (K, R, S, C) against NCHW filter (K, C, R, S).
    #[test]
    fn filter_layouts_agree() {
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
        // w[c][s]: c0 = [1, 2], c1 = [3, 4]
        let w_kcrs = [1.0f32, 2.0, 3.0, 4.0];
        let w_krsc = [1.0f32, 3.0, 2.0, 4.0];
        let dy = [10.0f32];
        let mut a = [0.0f32; 4];
        let mut b = [0.0f32; 4];
        convolution_backward_data_naive(&g, NCHW, NCHW, NCHW, 1.0, &w_kcrs, &dy, 0.0, &mut a)
            .unwrap();
        convolution_backward_data_naive(&g, NHWC, NCHW, NCHW, 1.0, &w_krsc, &dy, 0.0, &mut b)
            .unwrap();
        assert_eq!(a, [10.0, 20.0, 30.0, 40.0]);
        assert_eq!(a, b);
    }

    /// 3-d: dx 1x1x2x1x1, kernel depth 2, so both depth positions get one tap each.
    #[test]
    fn three_d_uses_the_depth_slot() {
        let g = geo(
            &[1, 1, 2, 1, 1],
            &[1, 1, 1, 1, 1],
            &[1, 1, 2, 1, 1],
            &[0, 0, 0],
            &[1, 1, 1],
            &[1, 1, 1],
            1,
            ConvolutionMode::Convolution,
        );
        let w = [bf16::from_f32(2.0), bf16::from_f32(3.0)];
        let dy = [bf16::from_f32(5.0)];
        let mut dx = [bf16::ZERO; 2];
        convolution_backward_data_naive(&g, NCHW, NCHW, NCHW, 1.0, &w, &dy, 0.0, &mut dx).unwrap();
        // Convolution mode: depth 0 meets w[1] = 3, depth 1 meets w[0] = 2.
        assert_eq!([dx[0].to_f32(), dx[1].to_f32()], [15.0, 10.0]);
    }

    #[test]
    fn length_mismatch_and_vector_formats_are_errors() {
        let g = plain_2x2();
        let mut dx = [0.0f32; 9];
        let short = convolution_backward_data_naive(
            &g,
            NCHW,
            NCHW,
            NCHW,
            1.0,
            &[0.0f32; 3],
            &[0.0; 4],
            0.0,
            &mut dx,
        );
        assert!(matches!(short, Err(Error::Shape(_))));
        let vect = convolution_backward_data_naive(
            &g,
            Format::NchwVectC8x32,
            NCHW,
            NCHW,
            1.0,
            &[0.0f32; 4],
            &[0.0; 4],
            0.0,
            &mut dx,
        );
        assert!(matches!(vect, Err(Error::InvalidArgument(_))));
    }
}
