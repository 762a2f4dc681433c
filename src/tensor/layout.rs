//! THE home of axis orders: how the logical NCHW(D) order every shape in this crate
//! uses maps to the physical order of a memory format (the graph API's strides, the
//! strides of imported and exported arrays, the host reordering for uploads and
//! read-backs all come from here).

use crate::error::{Error, Result};
use crate::tensor::Format;

/// The physical order of the logical axes (N, C, spatial...) of a rank-`ndim` tensor
/// stored in `format`, outermost first: NCHW keeps the logical order, NHWC moves C
/// last. `None` for the vector formats, which split C and have no plain axis order.
pub fn axis_order(format: Format, ndim: usize) -> Option<Vec<usize>> {
    match format {
        Format::Nchw => Some((0..ndim).collect()),
        Format::Nhwc if ndim < 3 => Some((0..ndim).collect()),
        Format::Nhwc => Some(
            std::iter::once(0)
                .chain(2..ndim)
                .chain(std::iter::once(1))
                .collect(),
        ),
        Format::NchwVectC8x4 | Format::NchwVectC8x32 => None,
    }
}

/// Dense strides (in elements, in logical axis order) of a tensor of logical `shape`
/// stored in `format`; `None` for the vector formats.
pub fn dense_strides(shape: &[usize], format: Format) -> Option<Vec<i64>> {
    let order = axis_order(format, shape.len())?;
    let mut strides = vec![0i64; shape.len()];
    let mut step = 1i64;
    for &axis in order.iter().rev() {
        strides[axis] = step;
        step = step.saturating_mul(i64::try_from(shape[axis]).unwrap_or(i64::MAX));
    }
    Some(strides)
}

fn split(shape: &[usize], len: usize, format: Format) -> Result<(usize, usize, usize)> {
    if shape.len() < 3 || shape.iter().product::<usize>() != len {
        return Err(Error::Shape(format!(
            "{len} values do not fill a tensor of shape {shape:?}"
        )));
    }
    if !matches!(format, Format::Nchw | Format::Nhwc) {
        return Err(Error::InvalidArgument(format!(
            "reordering for {format} is not implemented"
        )));
    }
    Ok((shape[0], shape[1], shape[2..].iter().product()))
}

/// Logical NCHW(D) values in the physical order of `format` (NCHW or NHWC; filters use
/// the same rule with K in place of N).
pub fn to_physical<T: Copy>(logical: &[T], shape: &[usize], format: Format) -> Result<Vec<T>> {
    let (n, c, sp) = split(shape, logical.len(), format)?;
    if format == Format::Nchw {
        return Ok(logical.to_vec());
    }
    let mut out = logical.to_vec();
    for b in 0..n {
        for ch in 0..c {
            for p in 0..sp {
                out[(b * sp + p) * c + ch] = logical[(b * c + ch) * sp + p];
            }
        }
    }
    Ok(out)
}

/// The inverse of [`to_physical`].
pub fn to_logical<T: Copy>(physical: &[T], shape: &[usize], format: Format) -> Result<Vec<T>> {
    let (n, c, sp) = split(shape, physical.len(), format)?;
    if format == Format::Nchw {
        return Ok(physical.to_vec());
    }
    let mut out = physical.to_vec();
    for b in 0..n {
        for ch in 0..c {
            for p in 0..sp {
                out[(b * c + ch) * sp + p] = physical[(b * sp + p) * c + ch];
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_orders_and_dense_strides_of_both_layouts() {
        // N=2, C=3, H=4, W=5: NCHW strides (60, 20, 5, 1); NHWC memory is N, H, W, C,
        // so C steps by 1, W by C, H by W*C, N by H*W*C.
        assert_eq!(axis_order(Format::Nchw, 4), Some(vec![0, 1, 2, 3]));
        assert_eq!(axis_order(Format::Nhwc, 5), Some(vec![0, 2, 3, 4, 1]));
        assert_eq!(
            dense_strides(&[2, 3, 4, 5], Format::Nchw),
            Some(vec![60, 20, 5, 1])
        );
        assert_eq!(
            dense_strides(&[2, 3, 4, 5], Format::Nhwc),
            Some(vec![60, 1, 15, 3])
        );
        assert_eq!(
            dense_strides(&[2, 3, 4, 5, 6], Format::Nhwc),
            Some(vec![360, 1, 90, 18, 3])
        );
        assert_eq!(axis_order(Format::NchwVectC8x4, 4), None);
        assert_eq!(dense_strides(&[2, 32, 4, 4], Format::NchwVectC8x32), None);
    }

    #[test]
    fn nhwc_puts_channels_last_and_round_trips() {
        // shape (1, 2, 1, 3): logical [c0: 0 1 2, c1: 3 4 5] -> NHWC [0 3 1 4 2 5]
        let logical = [0, 1, 2, 3, 4, 5];
        let phys = to_physical(&logical, &[1, 2, 1, 3], Format::Nhwc).unwrap();
        assert_eq!(phys, vec![0, 3, 1, 4, 2, 5]);
        assert_eq!(
            to_logical(&phys, &[1, 2, 1, 3], Format::Nhwc).unwrap(),
            logical
        );
        assert!(to_physical(&logical, &[1, 2, 2, 3], Format::Nhwc).is_err());
        assert!(to_physical(&logical, &[1, 4, 1, 3], Format::NchwVectC8x4).is_err());
    }
}
