//! The fast CPU path against the naive oracle on randomized problems: shapes, groups
//! (depthwise included), stride, padding, dilation, 2-d and 3-d, both modes, a memory
//! format per operand, every element type, and alpha/beta blending.

use std::fmt::Debug;

use cudnn_rs::convolution::geometry::{BwdDataGeometry, ConvParams};
use cudnn_rs::convolution::ConvolutionMode;
use cudnn_rs::reference::{convolution_backward_data, convolution_backward_data_naive, RefElement};
use cudnn_rs::tensor::Format;
use half::{bf16, f16};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const CASES: usize = 400;

#[derive(Debug, Clone)]
struct Case {
    geo: BwdDataGeometry,
    w_format: Format,
    dy_format: Format,
    dx_format: Format,
    alpha: f64,
    beta: f64,
}

fn pick<T: Copy>(rng: &mut StdRng, items: &[T]) -> T {
    items[rng.random_range(0..items.len())]
}

fn random_case(rng: &mut StdRng, index: usize) -> Case {
    let dims = if rng.random_bool(0.25) { 3 } else { 2 };
    // Every fourth case is depthwise; some have enough channels per group to be cut into
    // several blocks by the fast path.
    let groups = if index % 4 == 0 {
        rng.random_range(1..=6)
    } else {
        rng.random_range(1..=3)
    };
    let (in_per_group, out_per_group) = if index % 4 == 0 {
        (1, rng.random_range(1..=2))
    } else if index % 7 == 0 {
        (rng.random_range(8..=16), rng.random_range(1..=4))
    } else {
        (rng.random_range(1..=4), rng.random_range(1..=4))
    };
    let batch = rng.random_range(1..=3);
    // Every fifth case is 1x1, stride 1, unpadded: the fast path's direct GEMM.
    let direct = index % 5 == 1;
    let mut kernel = Vec::new();
    let mut padding = Vec::new();
    let mut stride = Vec::new();
    let mut dilation = Vec::new();
    let mut x = Vec::new();
    for _ in 0..dims {
        let k: usize = if direct { 1 } else { rng.random_range(1..=3) };
        let d: usize = if direct { 1 } else { rng.random_range(1..=2) };
        let p: usize = if direct { 0 } else { rng.random_range(0..=2) };
        let s: usize = if direct { 1 } else { rng.random_range(1..=3) };
        let span = d * (k - 1) + 1;
        let low = span.saturating_sub(2 * p).max(1);
        let extent = if dims == 3 { 5 } else { 12 };
        x.push(rng.random_range(low..=low + extent));
        kernel.push(k);
        padding.push(p as i64);
        stride.push(s as i64);
        dilation.push(d as i64);
    }
    let mode = pick(
        rng,
        &[
            ConvolutionMode::Convolution,
            ConvolutionMode::CrossCorrelation,
        ],
    );
    let params = ConvParams::new(&padding, &stride, &dilation, groups as i64, mode)
        .expect("generated parameters are valid");
    let y: Vec<usize> = (0..dims)
        .map(|i| {
            params
                .output_size(i, x[i], kernel[i])
                .expect("extent chosen to fit the kernel")
        })
        .collect();
    let c = in_per_group * groups;
    let k = out_per_group * groups;
    let shape = |a: usize, b: usize, s: &[usize]| [&[a, b][..], s].concat();
    let geo = BwdDataGeometry::new(
        &shape(k, in_per_group, &kernel),
        &shape(batch, k, &y),
        &shape(batch, c, &x),
        &params,
    )
    .expect("generated geometry is consistent");
    let formats = [Format::Nchw, Format::Nhwc];
    let (any_alpha, any_beta) = (rng.random_range(-2.0..2.0), rng.random_range(-2.0..2.0));
    Case {
        geo,
        w_format: pick(rng, &formats),
        dy_format: pick(rng, &formats),
        dx_format: pick(rng, &formats),
        alpha: pick(rng, &[1.0, 0.5, -1.25, any_alpha]),
        beta: pick(rng, &[0.0, 0.0, 1.0, 0.25, any_beta]),
    }
}

/// A value in +-[0.1, 1): never zero, so every term of every sum matters.
fn nonzero(rng: &mut StdRng) -> f64 {
    let magnitude = rng.random_range(0.1..1.0);
    if rng.random_bool(0.5) {
        magnitude
    } else {
        -magnitude
    }
}

fn fill<T: RefElement>(rng: &mut StdRng, len: usize) -> Vec<T> {
    (0..len).map(|_| T::round_from_f64(nonzero(rng))).collect()
}

/// Runs both paths on one case and checks them against each other within `tolerance`,
/// relative to the largest magnitude of the oracle's result.
fn check<T: RefElement + Debug>(rng: &mut StdRng, case: &Case, tolerance: f64) {
    let (w_len, dy_len, dx_len) = case.geo.element_counts();
    let w: Vec<T> = fill(rng, w_len);
    let dy: Vec<T> = fill(rng, dy_len);
    let poison: Vec<T> = if case.beta == 0.0 {
        vec![T::round_from_f64(f64::NAN); dx_len]
    } else {
        fill(rng, dx_len)
    };
    let mut expected = poison.clone();
    let mut got = poison;
    convolution_backward_data_naive(
        &case.geo,
        case.w_format,
        case.dy_format,
        case.dx_format,
        case.alpha,
        &w,
        &dy,
        case.beta,
        &mut expected,
    )
    .expect("oracle accepts the case");
    convolution_backward_data(
        &case.geo,
        case.w_format,
        case.dy_format,
        case.dx_format,
        case.alpha,
        &w,
        &dy,
        case.beta,
        &mut got,
    )
    .expect("fast path accepts the case");

    let scale = expected
        .iter()
        .map(|v| v.widen_f64().abs())
        .fold(f64::MIN_POSITIVE, f64::max);
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        let (g, e) = (g.widen_f64(), e.widen_f64());
        assert!(
            e.is_finite() && g.is_finite(),
            "non-finite output at {i}: fast {g}, oracle {e} for {case:?}"
        );
        assert!(
            (g - e).abs() <= tolerance * scale,
            "element {i}: fast {g}, oracle {e} (scale {scale}) for {case:?}"
        );
    }
}

#[test]
fn fast_path_matches_the_oracle_on_random_problems() {
    let mut rng = StdRng::seed_from_u64(0x00C0_FFEE);
    for index in 0..CASES {
        let case = random_case(&mut rng, index);
        match index % 4 {
            0 => check::<f64>(&mut rng, &case, 1e-12),
            1 => check::<f32>(&mut rng, &case, 1e-5),
            2 => check::<f16>(&mut rng, &case, 1e-2),
            _ => check::<bf16>(&mut rng, &case, 2e-2),
        }
    }
}

/// cuDNN's contract: with beta = 0, dx is written, never read, so NaN in it must not
/// leak into the result. Checked for both paths and every element type, in both layouts
/// (the NHWC output goes through a separate transposing blend).
#[test]
fn beta_zero_never_reads_dx() {
    fn run<T: RefElement>(geo: &BwdDataGeometry, format: Format) {
        let (w_len, dy_len, dx_len) = geo.element_counts();
        let w = vec![T::round_from_f64(0.5); w_len];
        let dy = vec![T::round_from_f64(-0.25); dy_len];
        for fast in [false, true] {
            let mut dx = vec![T::round_from_f64(f64::NAN); dx_len];
            let f = if fast {
                convolution_backward_data::<T>
            } else {
                convolution_backward_data_naive::<T>
            };
            f(geo, format, format, format, 1.0, &w, &dy, 0.0, &mut dx).expect("valid problem");
            assert!(
                dx.iter().all(|v| v.widen_f64().is_finite()),
                "NaN leaked (fast: {fast}, {format})"
            );
        }
    }
    let params = ConvParams::new(&[1, 1], &[2, 1], &[1, 2], 2, ConvolutionMode::Convolution)
        .expect("valid parameters");
    // dx 7x6, kernel 3x3: height (7 + 2 - 2 - 1)/2 + 1 = 4, width (6 + 2 - 4 - 1) + 1 = 4.
    let geo = BwdDataGeometry::new(&[4, 3, 3, 3], &[2, 4, 4, 4], &[2, 6, 7, 6], &params)
        .expect("consistent geometry");
    for format in [Format::Nchw, Format::Nhwc] {
        run::<f32>(&geo, format);
        run::<f64>(&geo, format);
        run::<f16>(&geo, format);
        run::<bf16>(&geo, format);
    }
}

/// Padding can leave dx positions that no output reads (stride 3, kernel 1); with
/// beta = 0 they must come out as exactly zero, not as the poison.
#[test]
#[allow(clippy::float_cmp)] // small integers: exact in f32
fn unreached_positions_are_zeroed() {
    let params = ConvParams::new(
        &[0, 0],
        &[3, 3],
        &[1, 1],
        1,
        ConvolutionMode::CrossCorrelation,
    )
    .expect("valid parameters");
    // dx 5x5, 1x1 kernel, stride 3: outputs at rows/cols 0 and 3 only.
    let geo = BwdDataGeometry::new(&[1, 1, 1, 1], &[1, 1, 2, 2], &[1, 1, 5, 5], &params)
        .expect("consistent geometry");
    let w = [2.0f32];
    let dy = [1.0f32, 2.0, 3.0, 4.0];
    let mut dx = [f32::NAN; 25];
    convolution_backward_data(
        &geo,
        Format::Nchw,
        Format::Nchw,
        Format::Nchw,
        1.0,
        &w,
        &dy,
        0.0,
        &mut dx,
    )
    .expect("valid problem");
    let mut expected = [0.0f32; 25];
    expected[0] = 2.0;
    expected[3] = 4.0;
    expected[15] = 6.0;
    expected[18] = 8.0;
    assert_eq!(dx, expected);
}
