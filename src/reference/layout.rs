//! The checks both reference paths run before touching memory, and the strides of the
//! two plain layouts.
//!
//! `BwdDataGeometry` has public fields, so a caller can hand over one that
//! `BwdDataGeometry::new` never produced (zero groups, a `dy` extent that does not match
//! the forward formula, counts that overflow). Everything is re-derived here with checked
//! arithmetic so that such a geometry ends in an `Err`, never in a panic or an
//! out-of-bounds index.

use crate::convolution::geometry::BwdDataGeometry;
use crate::convolution::ConvolutionMode;
use crate::error::{Error, Result};
use crate::tensor::Format;

/// The layouts the reference computes with; vectorised formats are integer-only and
/// have no backward-data path in cuDNN, so the reference does not model them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plain {
    Nchw,
    Nhwc,
}

impl Plain {
    fn of(format: Format, operand: &str) -> Result<Self> {
        match format {
            Format::Nchw => Ok(Plain::Nchw),
            Format::Nhwc => Ok(Plain::Nhwc),
            other => Err(Error::InvalidArgument(format!(
                "the CPU reference handles NCHW and NHWC only, {operand} is {other}"
            ))),
        }
    }
}

/// Element strides of (outer, channel, depth, height, width); "outer" is the batch for
/// activations and the output map for filters.
pub(crate) type Strides = [usize; 5];

/// Strides of an operand with `channels` channels and `spatial` extent. Only called
/// after [`Problem::new`] proved the whole operand's element count fits `usize`.
pub(crate) fn strides(layout: Plain, channels: usize, spatial: [usize; 3]) -> Strides {
    let [d, h, w] = spatial;
    match layout {
        Plain::Nchw => [channels * d * h * w, d * h * w, h * w, w, 1],
        Plain::Nhwc => [
            d * h * w * channels,
            1,
            h * w * channels,
            w * channels,
            channels,
        ],
    }
}

/// A checked problem: every extent positive, every count representable, every slice the
/// right length. Fields mirror `BwdDataGeometry`; the derived ones are cached.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    pub batch: usize,
    pub in_channels: usize,
    pub out_channels: usize,
    pub groups: usize,
    /// Channels of `dx` per group (the filter's second dim).
    pub in_per_group: usize,
    /// Output maps per group.
    pub out_per_group: usize,
    pub x: [usize; 3],
    pub y: [usize; 3],
    pub kernel: [usize; 3],
    pub padding: [usize; 3],
    pub stride: [usize; 3],
    pub dilation: [usize; 3],
    /// `Convolution` mode: the filter is applied flipped in every spatial dim.
    pub flip: bool,
    pub w_layout: Plain,
    pub dy_layout: Plain,
    pub dx_layout: Plain,
    /// Spatial size of one `dx` plane.
    pub x_size: usize,
    /// Spatial size of one `dy` plane.
    pub y_size: usize,
    /// Filter taps (T * R * S).
    pub taps: usize,
}

fn product(values: &[usize]) -> Option<usize> {
    values.iter().try_fold(1usize, |acc, &v| acc.checked_mul(v))
}

impl Problem {
    pub(crate) fn new(
        geo: &BwdDataGeometry,
        w_format: Format,
        dy_format: Format,
        dx_format: Format,
        w_len: usize,
        dy_len: usize,
        dx_len: usize,
    ) -> Result<Self> {
        let w_layout = Plain::of(w_format, "the filter")?;
        let dy_layout = Plain::of(dy_format, "dy")?;
        let dx_layout = Plain::of(dx_format, "dx")?;

        let bad = |msg: String| Err(Error::Shape(msg));
        if !(2..=3).contains(&geo.spatial_dims) {
            return bad(format!(
                "a convolution has 2 or 3 spatial dims, the geometry says {}",
                geo.spatial_dims
            ));
        }
        if geo.spatial_dims == 2
            && (
                geo.x[0],
                geo.y[0],
                geo.kernel[0],
                geo.padding[0],
                geo.stride[0],
            ) != (1, 1, 1, 0, 1)
        {
            return bad(
                "a 2-d geometry must have depth 1, kernel depth 1, padding 0 and stride 1 \
                 in the depth slot"
                    .to_string(),
            );
        }
        let (n, c, k, g) = (geo.batch, geo.in_channels, geo.out_channels, geo.groups);
        if n == 0 || c == 0 || k == 0 || g == 0 {
            return bad(format!(
                "batch ({n}), channels ({c}), filters ({k}) and groups ({g}) must be positive"
            ));
        }
        if c % g != 0 || k % g != 0 {
            return bad(format!(
                "groups ({g}) must divide dx channels ({c}) and filter output maps ({k})"
            ));
        }
        for dim in 0..3 {
            let (xi, yi, ki) = (geo.x[dim], geo.y[dim], geo.kernel[dim]);
            let (p, s, d) = (geo.padding[dim], geo.stride[dim], geo.dilation[dim]);
            if xi == 0 || yi == 0 || ki == 0 || s == 0 || d == 0 {
                return bad(format!(
                    "spatial slot {dim}: extents, stride and dilation must be positive \
                     (x {xi}, y {yi}, kernel {ki}, stride {s}, dilation {d})"
                ));
            }
            let expected = d
                .checked_mul(ki - 1)
                .and_then(|span| span.checked_add(1))
                .and_then(|need| p.checked_mul(2)?.checked_add(xi)?.checked_sub(need))
                .map(|room| room / s + 1);
            if expected != Some(yi) {
                return bad(format!(
                    "spatial slot {dim}: dy extent {yi} does not follow from dx {xi}, kernel \
                     {ki}, padding {p}, stride {s}, dilation {d}"
                ));
            }
        }

        let overflow = || Error::Shape("the problem has more elements than fit in memory".into());
        let x_size = product(&geo.x).ok_or_else(overflow)?;
        let y_size = product(&geo.y).ok_or_else(overflow)?;
        let taps = product(&geo.kernel).ok_or_else(overflow)?;
        let in_per_group = c / g;
        let w_count = product(&[k, in_per_group, taps]).ok_or_else(overflow)?;
        let dy_count = product(&[n, k, y_size]).ok_or_else(overflow)?;
        let dx_count = product(&[n, c, x_size]).ok_or_else(overflow)?;
        for (name, have, need) in [
            ("filter", w_len, w_count),
            ("dy", dy_len, dy_count),
            ("dx", dx_len, dx_count),
        ] {
            if have != need {
                return bad(format!(
                    "{name} has {have} elements but the geometry needs {need}"
                ));
            }
        }

        Ok(Problem {
            batch: n,
            in_channels: c,
            out_channels: k,
            groups: g,
            in_per_group,
            out_per_group: k / g,
            x: geo.x,
            y: geo.y,
            kernel: geo.kernel,
            padding: geo.padding,
            stride: geo.stride,
            dilation: geo.dilation,
            flip: geo.mode == ConvolutionMode::Convolution,
            w_layout,
            dy_layout,
            dx_layout,
            x_size,
            y_size,
            taps,
        })
    }

    pub(crate) fn w_strides(&self) -> Strides {
        strides(self.w_layout, self.in_per_group, self.kernel)
    }

    pub(crate) fn dy_strides(&self) -> Strides {
        strides(self.dy_layout, self.out_channels, self.y)
    }

    pub(crate) fn dx_strides(&self) -> Strides {
        strides(self.dx_layout, self.in_channels, self.x)
    }

    /// Where output position `o` meets filter tap `r` in `dx` along spatial slot `dim`,
    /// or `None` when that lands in the padding.
    pub(crate) fn input_pos(&self, dim: usize, o: usize, r: usize) -> Option<usize> {
        (o * self.stride[dim] + r * self.dilation[dim])
            .checked_sub(self.padding[dim])
            .filter(|&i| i < self.x[dim])
    }

    /// The filter tap stored for logical tap `r`: mirrored in `Convolution` mode.
    pub(crate) fn stored_tap(&self, dim: usize, r: usize) -> usize {
        if self.flip {
            self.kernel[dim] - 1 - r
        } else {
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convolution::geometry::ConvParams;

    fn geometry() -> BwdDataGeometry {
        let p =
            ConvParams::new(&[1, 1], &[1, 1], &[1, 1], 2, ConvolutionMode::Convolution).unwrap();
        BwdDataGeometry::new(&[4, 3, 3, 3], &[2, 4, 5, 6], &[2, 6, 5, 6], &p).unwrap()
    }

    #[test]
    fn strides_follow_the_layout() {
        assert_eq!(strides(Plain::Nchw, 3, [2, 4, 5]), [120, 40, 20, 5, 1]);
        assert_eq!(strides(Plain::Nhwc, 3, [2, 4, 5]), [120, 1, 60, 15, 3]);
    }

    #[test]
    fn accepts_a_consistent_problem() {
        let p = Problem::new(
            &geometry(),
            Format::Nchw,
            Format::Nhwc,
            Format::Nchw,
            108,
            240,
            360,
        )
        .unwrap();
        assert_eq!((p.in_per_group, p.out_per_group, p.taps), (3, 2, 9));
        assert!(p.flip);
        assert_eq!(p.input_pos(1, 0, 0), None);
        assert_eq!(p.input_pos(1, 0, 1), Some(0));
        assert_eq!(p.input_pos(2, 5, 2), None);
        assert_eq!(p.stored_tap(2, 0), 2);
    }

    #[test]
    fn rejects_wrong_lengths_vector_formats_and_forged_geometries() {
        let g = geometry();
        let f = Format::Nchw;
        let short = Problem::new(&g, f, f, f, 108, 240, 359);
        assert!(matches!(short, Err(Error::Shape(m)) if m.contains("dx has 359")));
        let vect = Problem::new(&g, f, Format::NchwVectC8x4, f, 108, 240, 360);
        assert!(matches!(vect, Err(Error::InvalidArgument(_))));

        let mut zero_groups = g.clone();
        zero_groups.groups = 0;
        assert!(Problem::new(&zero_groups, f, f, f, 108, 240, 360).is_err());
        let mut zero_stride = g.clone();
        zero_stride.stride[1] = 0;
        assert!(Problem::new(&zero_stride, f, f, f, 108, 240, 360).is_err());
        let mut wrong_y = g.clone();
        wrong_y.y[2] = 7;
        assert!(Problem::new(&wrong_y, f, f, f, 108, 280, 360).is_err());
        let mut huge = g.clone();
        huge.batch = usize::MAX;
        assert!(Problem::new(&huge, f, f, f, 108, 240, 360).is_err());
        let mut kernel_too_big = g;
        kernel_too_big.kernel[2] = 100;
        assert!(Problem::new(&kernel_too_big, f, f, f, 108, 240, 360).is_err());
    }
}
