//! Reordering between the logical NCHW(D) order every shape in this crate uses and the
//! physical order of a memory format, for uploading and reading back host data.

use crate::error::{Error, Result};
use crate::tensor::Format;

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
