//! The shape arithmetic of one backward-data problem, checked once and shared by the GPU
//! path, the CPU reference and the Python layer.

use crate::convolution::ConvolutionMode;
use crate::error::{Error, Result};

/// Spatial extents are stored as `[depth, height, width]`; a 2-d problem has depth 1,
/// kernel depth 1, padding 0, stride 1 and dilation 1 in that slot.
pub type Spatial = [usize; 3];

/// A validated backward-data problem: `dx` (N, C, spatial x) from `w` (K, C/groups,
/// kernel) and `dy` (N, K, spatial y).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BwdDataGeometry {
    /// Number of spatial dimensions (2 or 3).
    pub spatial_dims: usize,
    /// N.
    pub batch: usize,
    /// C: channels of `dx` (the forward input).
    pub in_channels: usize,
    /// K: channels of `dy` (the forward output) = filters.
    pub out_channels: usize,
    pub groups: usize,
    /// Spatial extent of `dx`.
    pub x: Spatial,
    /// Spatial extent of `dy`.
    pub y: Spatial,
    /// Filter extent.
    pub kernel: Spatial,
    pub padding: Spatial,
    pub stride: Spatial,
    pub dilation: Spatial,
    pub mode: ConvolutionMode,
}

/// Convolution parameters as given by the caller (before any shape is known).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConvParams {
    pub padding: Vec<usize>,
    pub stride: Vec<usize>,
    pub dilation: Vec<usize>,
    pub groups: usize,
    pub mode: ConvolutionMode,
}

impl ConvParams {
    /// Checks and converts the caller's values: 2 or 3 spatial dims, padding >= 0,
    /// stride >= 1, dilation >= 1, groups >= 1, each fitting cuDNN's `int`.
    pub fn new(
        padding: &[i64],
        stride: &[i64],
        dilation: &[i64],
        groups: i64,
        mode: ConvolutionMode,
    ) -> Result<Self> {
        let n = padding.len();
        if !(2..=3).contains(&n) {
            return Err(Error::InvalidArgument(format!(
                "a convolution has 2 or 3 spatial dimensions, padding has {n}"
            )));
        }
        if stride.len() != n || dilation.len() != n {
            return Err(Error::InvalidArgument(format!(
                "padding, stride and dilation must have the same length, got {}, {} and {}",
                n,
                stride.len(),
                dilation.len()
            )));
        }
        let conv = |name: &str, vals: &[i64], min: i64| -> Result<Vec<usize>> {
            vals.iter()
                .map(|&v| {
                    if v < min || v > i64::from(i32::MAX) {
                        Err(Error::InvalidArgument(format!(
                            "{name} must be in [{min}, {}], got {vals:?}",
                            i32::MAX
                        )))
                    } else {
                        Ok(v as usize)
                    }
                })
                .collect()
        };
        let padding = conv("padding", padding, 0)?;
        let stride = conv("stride", stride, 1)?;
        let dilation = conv("dilation", dilation, 1)?;
        if groups < 1 || groups > i64::from(i32::MAX) {
            return Err(Error::InvalidArgument(format!(
                "groups must be a positive int, got {groups}"
            )));
        }
        Ok(Self {
            padding,
            stride,
            dilation,
            groups: groups as usize,
            mode,
        })
    }

    /// Number of spatial dimensions.
    pub fn spatial_dims(&self) -> usize {
        self.padding.len()
    }

    /// Forward output size along one spatial dim, `None` when the kernel does not fit.
    pub fn output_size(&self, dim: usize, input: usize, kernel: usize) -> Option<usize> {
        let span = self.dilation[dim].checked_mul(kernel.checked_sub(1)?)?;
        let padded = input.checked_add(2 * self.padding[dim])?;
        let room = padded.checked_sub(span)?.checked_sub(1)?;
        Some(room / self.stride[dim] + 1)
    }
}

/// Largest element count cuDNN's legacy API indexes with 32-bit ints.
pub const MAX_ELEMENTS: usize = i32::MAX as usize;

impl BwdDataGeometry {
    /// Builds and checks the problem from logical shapes: `w` = (K, C/groups, kernel...),
    /// `dy` = (N, K, y...), `dx` = (N, C, x...), all in NCHW order whatever the memory
    /// format.
    pub fn new(w: &[usize], dy: &[usize], dx: &[usize], conv: &ConvParams) -> Result<Self> {
        let nd = conv.spatial_dims();
        let rank = nd + 2;
        for (name, shape) in [("filter", w), ("dy", dy), ("dx", dx)] {
            if shape.len() != rank {
                return Err(Error::Shape(format!(
                    "{name} has rank {} but a {nd}-d convolution needs rank {rank} (shape {shape:?})",
                    shape.len()
                )));
            }
            if shape.contains(&0) {
                return Err(Error::Shape(format!(
                    "{name} has a zero-sized dimension: {shape:?}"
                )));
            }
            let count = shape
                .iter()
                .try_fold(1usize, |acc, &d| acc.checked_mul(d))
                .filter(|&c| c <= MAX_ELEMENTS);
            if count.is_none() {
                return Err(Error::Shape(format!(
                    "{name} {shape:?} has more than {MAX_ELEMENTS} elements, cuDNN's limit"
                )));
            }
        }
        let (k, c_per_group) = (w[0], w[1]);
        let (n, c) = (dx[0], dx[1]);
        let g = conv.groups;
        if dy[0] != n {
            return Err(Error::Shape(format!(
                "batch of dy ({}) differs from batch of dx ({n})",
                dy[0]
            )));
        }
        if dy[1] != k {
            return Err(Error::Shape(format!(
                "dy has {} channels but the filter has {k} output maps",
                dy[1]
            )));
        }
        if c % g != 0 || k % g != 0 {
            return Err(Error::Shape(format!(
                "groups ({g}) must divide dx channels ({c}) and filter output maps ({k})"
            )));
        }
        if c_per_group * g != c {
            return Err(Error::Shape(format!(
                "filter has {c_per_group} input maps per group; dx has {c} channels in {g} groups, so {} were expected",
                c / g
            )));
        }
        let mut geo = BwdDataGeometry {
            spatial_dims: nd,
            batch: n,
            in_channels: c,
            out_channels: k,
            groups: g,
            x: [1; 3],
            y: [1; 3],
            kernel: [1; 3],
            padding: [0; 3],
            stride: [1; 3],
            dilation: [1; 3],
            mode: conv.mode,
        };
        let off = 3 - nd;
        for i in 0..nd {
            let (xi, ki, yi) = (dx[2 + i], w[2 + i], dy[2 + i]);
            let expected = conv.output_size(i, xi, ki).ok_or_else(|| {
                Error::Shape(format!(
                    "filter extent {ki} (dilation {}) does not fit input extent {xi} with padding {} in spatial dim {i}",
                    conv.dilation[i], conv.padding[i]
                ))
            })?;
            if expected != yi {
                return Err(Error::Shape(format!(
                    "dy spatial dim {i} is {yi}, but dx {:?}, filter {:?}, padding {:?}, stride {:?}, dilation {:?} give {expected}",
                    &dx[2..],
                    &w[2..],
                    conv.padding,
                    conv.stride,
                    conv.dilation
                )));
            }
            geo.x[off + i] = xi;
            geo.y[off + i] = yi;
            geo.kernel[off + i] = ki;
            geo.padding[off + i] = conv.padding[i];
            geo.stride[off + i] = conv.stride[i];
            geo.dilation[off + i] = conv.dilation[i];
        }
        Ok(geo)
    }

    /// Channels of `dx` per group (= filter's second dim).
    pub fn in_per_group(&self) -> usize {
        self.in_channels / self.groups
    }

    /// Filter maps per group.
    pub fn out_per_group(&self) -> usize {
        self.out_channels / self.groups
    }

    /// Element counts of (`w`, `dy`, `dx`).
    pub fn element_counts(&self) -> (usize, usize, usize) {
        let prod = |s: &Spatial| s.iter().product::<usize>();
        (
            self.out_channels * self.in_per_group() * prod(&self.kernel),
            self.batch * self.out_channels * prod(&self.y),
            self.batch * self.in_channels * prod(&self.x),
        )
    }

    /// Logical shapes (`w`, `dy`, `dx`) in NCHW order with `spatial_dims` spatial dims.
    pub fn shapes(&self) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
        let sp = |s: &Spatial| s[3 - self.spatial_dims..].to_vec();
        let mut w = vec![self.out_channels, self.in_per_group()];
        w.extend(sp(&self.kernel));
        let mut dy = vec![self.batch, self.out_channels];
        dy.extend(sp(&self.y));
        let mut dx = vec![self.batch, self.in_channels];
        dx.extend(sp(&self.x));
        (w, dy, dx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(p: &[i64], s: &[i64], d: &[i64], g: i64) -> ConvParams {
        ConvParams::new(p, s, d, g, ConvolutionMode::CrossCorrelation).unwrap()
    }

    #[test]
    fn rejects_bad_parameters() {
        let m = ConvolutionMode::Convolution;
        assert!(ConvParams::new(&[-1, 0], &[1, 1], &[1, 1], 1, m).is_err());
        assert!(ConvParams::new(&[0, 0], &[0, 1], &[1, 1], 1, m).is_err());
        assert!(ConvParams::new(&[0, 0], &[1, 1], &[1, -2], 1, m).is_err());
        assert!(ConvParams::new(&[0, 0], &[1, 1], &[1, 1], 0, m).is_err());
        assert!(ConvParams::new(&[0], &[1], &[1], 1, m).is_err());
        assert!(ConvParams::new(&[0, 0], &[1, 1, 1], &[1, 1], 1, m).is_err());
        assert!(ConvParams::new(&[0, 0], &[1, 1], &[1, 1], 1 << 40, m).is_err());
        assert!(ConvParams::new(&[0, 0, 0], &[1, 1, 1], &[1, 1, 1], 1, m).is_ok());
    }

    #[test]
    fn output_size_follows_the_forward_formula() {
        // (x + 2p - d(k-1) - 1)/s + 1 worked by hand: (7 + 2 - 2*2 - 1)/2 + 1 = 3
        let c = params(&[1, 0], &[2, 1], &[2, 1], 1);
        assert_eq!(c.output_size(0, 7, 3), Some(3));
        // kernel larger than padded input
        assert_eq!(c.output_size(1, 2, 3), None);
    }

    #[test]
    fn geometry_accepts_consistent_shapes_and_names_the_mismatch() {
        let c = params(&[1, 1], &[1, 1], &[1, 1], 2);
        let g = BwdDataGeometry::new(&[4, 3, 3, 3], &[2, 4, 5, 6], &[2, 6, 5, 6], &c).unwrap();
        assert_eq!((g.in_per_group(), g.out_per_group()), (3, 2));
        assert_eq!(g.x, [1, 5, 6]);
        assert_eq!(g.element_counts(), (4 * 3 * 9, 2 * 4 * 30, 2 * 6 * 30));
        let (w, dy, dx) = g.shapes();
        assert_eq!(
            (w, dy, dx),
            (vec![4, 3, 3, 3], vec![2, 4, 5, 6], vec![2, 6, 5, 6])
        );

        let bad_spatial = BwdDataGeometry::new(&[4, 3, 3, 3], &[2, 4, 4, 6], &[2, 6, 5, 6], &c);
        assert!(matches!(bad_spatial, Err(Error::Shape(m)) if m.contains("spatial dim 0")));
        let bad_groups = BwdDataGeometry::new(&[4, 2, 3, 3], &[2, 4, 5, 6], &[2, 6, 5, 6], &c);
        assert!(matches!(bad_groups, Err(Error::Shape(_))));
        let bad_rank = BwdDataGeometry::new(&[4, 3, 3, 3, 1], &[2, 4, 5, 6], &[2, 6, 5, 6], &c);
        assert!(matches!(bad_rank, Err(Error::Shape(m)) if m.contains("rank")));
        let zero = BwdDataGeometry::new(&[4, 3, 3, 3], &[0, 4, 5, 6], &[0, 6, 5, 6], &c);
        assert!(zero.is_err());
        let huge = BwdDataGeometry::new(
            &[4, 3, 3, 3],
            &[70_000, 4, 100, 100],
            &[70_000, 6, 100, 100],
            &c,
        );
        assert!(matches!(huge, Err(Error::Shape(m)) if m.contains("elements")));
    }
}
