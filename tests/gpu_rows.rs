//! GPU tests: every row of the support table, run through the typed API on cuDNN and
//! compared with the CPU reference's direct loop; alpha/beta semantics; determinism.
//!
//! They need a CUDA GPU with cuDNN 9, so they are `#[ignore]`d with that reason (cargo
//! prints it) and run with `--ignored` by `bench/gpu_run.sh` on the GPU machine.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use cudnn_rs::convolution::support::SUPPORT_LINES;
use cudnn_rs::convolution::{AlgoKind, BwdDataGeometry, ConvParams};
use cudnn_rs::reference::{convolution_backward_data_naive, RefElement};
use cudnn_rs::*;
use half::{bf16, f16};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const REASON: &str = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)";

/// The CPU reference on NCHW operands: `out = alpha * dgrad(w, dy) + beta * out`.
fn naive_nchw<T: RefElement>(
    geo: &BwdDataGeometry,
    alpha: f64,
    w: &[T],
    dy: &[T],
    beta: f64,
    out: &mut [T],
) {
    let f = Format::Nchw;
    convolution_backward_data_naive(geo, f, f, f, alpha, w, dy, beta, out).unwrap();
}

/// The largest difference of `got` from `want`, relative to `want`'s largest magnitude
/// (a NaN in `got` is passed over: check finiteness apart).
fn max_rel_err(got: &[f32], want: &[f32]) -> f32 {
    let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    got.iter()
        .zip(want)
        .map(|(g, r)| (g - r).abs())
        .fold(0.0f32, f32::max)
        / scale
}

fn context() -> CudnnContext {
    match CudnnContext::new(0) {
        Ok(ctx) => ctx,
        Err(e) => panic!("GPU test run without a usable GPU/cuDNN: {e}"),
    }
}

/// Tolerance relative to max |reference| for a dtype (TF32 may be used for f32 rows;
/// f16 compute accumulates in half precision).
fn tolerance<T: DataType, C: DataType>() -> f64 {
    if C::DTYPE == DType::F16 {
        return 5e-2;
    }
    match T::DTYPE {
        DType::F64 => 1e-10,
        DType::F32 => 5e-3,
        DType::F16 => 2e-2,
        DType::BF16 => 6e-2,
        _ => 0.0,
    }
}

struct Shape {
    name: &'static str,
    n: usize,
    c: usize,
    k: usize,
    x: usize,
    kernel: usize,
    pad: i64,
    stride: i64,
    dilation: i64,
    groups: i64,
}

const SHAPES: &[Shape] = &[
    Shape {
        name: "3x3 s1 p1",
        n: 2,
        c: 8,
        k: 8,
        x: 9,
        kernel: 3,
        pad: 1,
        stride: 1,
        dilation: 1,
        groups: 1,
    },
    Shape {
        name: "1x1",
        n: 1,
        c: 16,
        k: 8,
        x: 7,
        kernel: 1,
        pad: 0,
        stride: 1,
        dilation: 1,
        groups: 1,
    },
    Shape {
        name: "3x3 s2 p1",
        n: 2,
        c: 8,
        k: 16,
        x: 11,
        kernel: 3,
        pad: 1,
        stride: 2,
        dilation: 1,
        groups: 1,
    },
    Shape {
        name: "3x3 d2 p2 g2",
        n: 1,
        c: 8,
        k: 8,
        x: 10,
        kernel: 3,
        pad: 2,
        stride: 1,
        dilation: 2,
        groups: 2,
    },
    Shape {
        name: "5x5 p2",
        n: 2,
        c: 4,
        k: 8,
        x: 13,
        kernel: 5,
        pad: 2,
        stride: 1,
        dilation: 1,
        groups: 1,
    },
];

struct Outcome {
    ran: usize,
    refused: Vec<String>,
}

fn upload<T: DeviceRepr>(stream: &Arc<CudaStream>, data: &[T]) -> CudaSlice<T> {
    stream.clone_htod(data).expect("upload")
}

/// Runs one (row, shape) through the typed API and compares with the direct loop.
#[allow(clippy::too_many_lines)]
fn check_row<T, F1, F2, C, F3, A, M, const D: usize, const N: usize>(
    ctx: &CudnnContext,
    make_algo: M,
    mode: ConvolutionMode,
    rng: &mut StdRng,
    outcome: &mut Outcome,
    label: &str,
) where
    T: DataType + RefElement + DeviceRepr + cudarc::driver::ValidAsZeroBits,
    F1: SupportedType<T>,
    F2: SupportedType<T>,
    C: DataType,
    F3: SupportedType<T>,
    A: ConvolutionBwdDataAlgo + SupportedConvBwdData<T, F1, T, F2, C, T, F3, D, N>,
    M: Fn(
        &CudnnContext,
        &FilterDescriptor<T, F1, D>,
        &TensorDescriptor<T, F2, D>,
        &TensorDescriptor<T, F3, D>,
        &ConvolutionDescriptor<C, N>,
    ) -> Result<A>,
{
    let stream = ctx.stream().clone();
    for s in SHAPES {
        if N == 3 && s.kernel == 5 {
            continue;
        }
        let sp = |v: usize| vec![v; N];
        let x = if N == 3 { s.x.min(7) } else { s.x };
        let params = ConvParams::new(
            &vec![s.pad; N],
            &vec![s.stride; N],
            &vec![s.dilation; N],
            s.groups,
            mode,
        )
        .unwrap();
        let y = params.output_size(0, x, s.kernel).unwrap();
        let mut w_shape = vec![s.k, s.c / s.groups as usize];
        w_shape.extend(sp(s.kernel));
        let mut dy_shape = vec![s.n, s.k];
        dy_shape.extend(sp(y));
        let mut dx_shape = vec![s.n, s.c];
        dx_shape.extend(sp(x));
        let geo = BwdDataGeometry::new(&w_shape, &dy_shape, &dx_shape, &params).unwrap();
        let (nw, ndy, ndx) = geo.element_counts();
        let rand_vec = |rng: &mut StdRng, n: usize| -> Vec<T> {
            (0..n)
                .map(|_| T::round_from_f64(rng.random_range(-1.0..1.0)))
                .collect()
        };
        let w_h = rand_vec(rng, nw);
        let dy_h = rand_vec(rng, ndy);
        let dx_old = rand_vec(rng, ndx);
        let to_arr = |v: &[usize]| -> [i32; D] {
            let mut a = [0i32; D];
            for (o, &i) in a.iter_mut().zip(v) {
                *o = i as i32;
            }
            a
        };
        let conv = ConvolutionDescriptor::<C, N>::new(
            [s.pad as i32; N],
            [s.stride as i32; N],
            [s.dilation as i32; N],
            s.groups as u32,
            mode,
            MathType::Default,
        )
        .unwrap();
        let w = Filter::<T, F1, _, D>::new(
            upload(&stream, &to_storage::<T>(&w_h, &w_shape, F1::FORMAT)),
            to_arr(&w_shape),
            F1::default(),
        )
        .unwrap();
        let dy = Tensor::<T, F2, _, D>::new(
            upload(&stream, &to_storage::<T>(&dy_h, &dy_shape, F2::FORMAT)),
            to_arr(&dy_shape),
            F2::default(),
        )
        .unwrap();
        let dx_desc = TensorDescriptor::<T, F3, D>::new(to_arr(&dx_shape), F3::default()).unwrap();
        let algo = match make_algo(ctx, w.descriptor(), dy.descriptor(), &dx_desc, &conv) {
            Ok(a) => a,
            Err(Error::Cudnn { status, context }) if status.is_not_supported() => {
                outcome
                    .refused
                    .push(format!("{label} / {}: {context}", s.name));
                continue;
            }
            Err(e) => panic!("{label} / {}: choosing the algorithm failed: {e}", s.name),
        };
        let algo = &algo;
        for (alpha, beta) in [(1.0, 0.0), (0.75, 1.0)] {
            // beta = 0: poison with NaN (must be overwritten); beta = 1: random values.
            let init: Vec<T> = if beta == 0.0 {
                vec![T::round_from_f64(f64::NAN); ndx]
            } else {
                dx_old.clone()
            };
            let mut dx = Tensor::<T, F3, _, D>::new(
                upload(&stream, &to_storage::<T>(&init, &dx_shape, F3::FORMAT)),
                to_arr(&dx_shape),
                F3::default(),
            )
            .unwrap();
            let size = match ctx.get_convolution_backward_data_workspace_size(
                w.descriptor(),
                dy.descriptor(),
                dx.descriptor(),
                &conv,
                algo,
            ) {
                Ok(sz) => sz,
                Err(Error::Cudnn { status, context }) if status.is_not_supported() => {
                    outcome
                        .refused
                        .push(format!("{label} / {}: {context}", s.name));
                    break;
                }
                Err(e) => panic!("{label} / {}: workspace query failed: {e}", s.name),
            };
            let mut ws = size.map(|n| stream.alloc_zeros::<u8>(n).unwrap());
            match ctx.convolution_backward_data(
                C::from_f64(alpha),
                &w,
                &dy,
                &conv,
                algo,
                ws.as_mut(),
                C::from_f64(beta),
                &mut dx,
            ) {
                Ok(()) => {}
                Err(Error::Cudnn { status, context }) if status.is_not_supported() => {
                    outcome
                        .refused
                        .push(format!("{label} / {}: {context}", s.name));
                    break;
                }
                Err(e) => panic!("{label} / {}: {e}", s.name),
            }
            let got_phys = stream.clone_dtoh(dx.data()).unwrap();
            let got = from_storage::<T>(&got_phys, &dx_shape, F3::FORMAT);
            let mut want = if beta == 0.0 {
                vec![T::round_from_f64(0.0); ndx]
            } else {
                dx_old.clone()
            };
            naive_nchw(&geo, alpha, &w_h, &dy_h, beta, &mut want);
            let scale = want
                .iter()
                .map(|v| v.widen_f64().abs())
                .fold(1e-30, f64::max);
            let err = got
                .iter()
                .zip(&want)
                .map(|(g, r)| (g.widen_f64() - r.widen_f64()).abs())
                .fold(
                    0.0,
                    |m, e| if e.is_nan() { f64::INFINITY } else { m.max(e) },
                )
                / scale;
            assert!(
                err <= tolerance::<T, C>(),
                "{label} / {} alpha {alpha} beta {beta}: relative error {err:e} > {:e}",
                s.name,
                tolerance::<T, C>()
            );
            outcome.ran += 1;
            if beta == 0.0 {
                // The same call twice more into the same (re-poisoned) dx: the second is
                // captured, the third replayed from the capture; both must overwrite dx
                // with the same values as the direct call (within its tolerance: the
                // non-deterministic algorithms may round differently).
                let poison = vec![T::round_from_f64(f64::NAN); ndx];
                for call in 2..=3 {
                    stream.memcpy_htod(&poison, dx.data_mut()).unwrap();
                    ctx.convolution_backward_data(
                        C::from_f64(alpha),
                        &w,
                        &dy,
                        &conv,
                        algo,
                        ws.as_mut(),
                        C::from_f64(beta),
                        &mut dx,
                    )
                    .unwrap_or_else(|e| panic!("{label} / {} call {call}: {e}", s.name));
                    let again = from_storage::<T>(
                        &stream.clone_dtoh(dx.data()).unwrap(),
                        &dx_shape,
                        F3::FORMAT,
                    );
                    let err = again
                        .iter()
                        .zip(&want)
                        .map(|(g, r)| (g.widen_f64() - r.widen_f64()).abs())
                        .fold(
                            0.0,
                            |m, e| if e.is_nan() { f64::INFINITY } else { m.max(e) },
                        )
                        / scale;
                    assert!(
                        err <= tolerance::<T, C>(),
                        "{label} / {} call {call} (replayed): relative error {err:e}",
                        s.name
                    );
                }
            }
        }
    }
}

fn to_storage<T: Copy>(logical: &[T], shape: &[usize], format: Format) -> Vec<T> {
    cudnn_rs::tensor::layout::to_physical(logical, shape, format).unwrap()
}

fn from_storage<T: Copy>(phys: &[T], shape: &[usize], format: Format) -> Vec<T> {
    cudnn_rs::tensor::layout::to_logical(phys, shape, format).unwrap()
}

/// The algorithm value of a table column: the heuristic results are asked of cuDNN for
/// the problem at hand, the markers are themselves.
macro_rules! algo_value {
    (BestHeuristic) => {
        |ctx: &CudnnContext, w, dy, dx, conv| {
            ctx.get_convolution_backward_data_algorithm(w, dy, dx, conv)
        }
    };
    (Engine) => {
        |ctx: &CudnnContext, w, dy, dx, conv| {
            ctx.get_convolution_backward_data_engine(w, dy, dx, conv, None)
        }
    };
    ($marker:ident) => {
        |_: &CudnnContext, _, _, _, _| Ok($marker)
    };
}

macro_rules! run_every_row {
    ($(
        [$wt:ident, $wf:ident], [$yt:ident, $yf:ident], $ct:ident, [$xt:ident, $xf:ident], $d:literal, $n:literal
        => [$($algo:ident),* $(,)?];
    )*) => {
        fn run_all(ctx: &CudnnContext, rng: &mut StdRng) -> Vec<(String, Outcome)> {
            let mut results = Vec::new();
            $(
                $(
                    for mode in [ConvolutionMode::CrossCorrelation, ConvolutionMode::Convolution] {
                        let label = format!("{} {}:{} {}:{} comp {} {}:{} {}-d {:?}", stringify!($algo), stringify!($wt), stringify!($wf), stringify!($yt), stringify!($yf), stringify!($ct), stringify!($xt), stringify!($xf), $n, mode);
                        let mut outcome = Outcome { ran: 0, refused: Vec::new() };
                        check_row::<$wt, $wf, $yf, $ct, $xf, $algo, _, $d, $n>(ctx, algo_value!($algo), mode, rng, &mut outcome, &label);
                        results.push((label, outcome));
                    }
                )*
            )*
            results
        }
    };
}

cudnn_rs::with_bwd_data_support_table!(run_every_row);

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn every_table_row_runs_on_the_gpu_and_matches_the_reference() {
    let _ = REASON;
    let ctx = context();
    println!("cuDNN {:?} from {}", ctx.version(), ctx.library_origin());
    let seed = std::env::var("CUDNN_RS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_u64);
    let mut rng = StdRng::seed_from_u64(seed);
    let results = run_all(&ctx, &mut rng);
    let mut never_ran = Vec::new();
    for (label, o) in &results {
        println!(
            "{label}: {} checks passed, {} shapes refused",
            o.ran,
            o.refused.len()
        );
        for r in &o.refused {
            println!("    refused: {r}");
        }
        if o.ran == 0 {
            never_ran.push(label.clone());
        }
    }
    assert!(
        never_ran.is_empty(),
        "rows cuDNN refused for every shape (prune them from the table): {never_ran:#?}"
    );
    assert!(!SUPPORT_LINES.is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn heuristic_results_are_in_the_table_and_deterministic_on_request() {
    let ctx = context();
    let w = FilterDescriptor::<f32, NCHW, 4>::new([16, 8, 3, 3], NCHW).unwrap();
    let dy = TensorDescriptor::<f32, NCHW, 4>::new([4, 16, 14, 14], NCHW).unwrap();
    let dx = TensorDescriptor::<f32, NCHW, 4>::new([4, 8, 14, 14], NCHW).unwrap();
    let conv = ConvolutionDescriptor::<f32, 2>::new(
        [1, 1],
        [1, 1],
        [1, 1],
        1,
        ConvolutionMode::CrossCorrelation,
        MathType::Default,
    )
    .unwrap();
    let any = ctx
        .get_convolution_backward_data_algorithm(&w, &dy, &dx, &conv)
        .unwrap();
    let row = cudnn_rs::convolution::SupportRow {
        algo: any.algo().kind(),
        filter: (DType::F32, Format::Nchw),
        dy: (DType::F32, Format::Nchw),
        comp: DType::F32,
        dx: (DType::F32, Format::Nchw),
        tensor_dims: 4,
        conv_dims: 2,
    };
    assert!(cudnn_rs::convolution::support::is_supported(&row), "{row}");
    assert_eq!(any.kind(), AlgoKind::BestHeuristic);
    let det = ctx
        .get_convolution_backward_data_algorithm_with_determinism(
            &w,
            &dy,
            &dx,
            &conv,
            Some(Determinism::Deterministic),
        )
        .unwrap();
    assert_eq!(det.determinism(), Determinism::Deterministic);
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn data_algo1_is_bitwise_deterministic_over_ten_runs() {
    let ctx = context();
    let stream = ctx.stream().clone();
    let mut rng = StdRng::seed_from_u64(7);
    let w_h: Vec<f32> = (0..32 * 16 * 9)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let dy_h: Vec<f32> = (0..4 * 32 * 28 * 28)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let w = Filter::<f32, NCHW, _, 4>::new(upload(&stream, &w_h), [32, 16, 3, 3], NCHW).unwrap();
    let dy = Tensor::<f32, NCHW, _, 4>::new(upload(&stream, &dy_h), [4, 32, 28, 28], NCHW).unwrap();
    let conv = ConvolutionDescriptor::<f32, 2>::new(
        [1, 1],
        [1, 1],
        [1, 1],
        1,
        ConvolutionMode::CrossCorrelation,
        MathType::Default,
    )
    .unwrap();
    let mut first: Option<Vec<f32>> = None;
    for _ in 0..10 {
        let mut dx = Tensor::<f32, NCHW, _, 4>::new(
            stream.alloc_zeros::<f32>(4 * 16 * 28 * 28).unwrap(),
            [4, 16, 28, 28],
            NCHW,
        )
        .unwrap();
        let size = ctx
            .get_convolution_backward_data_workspace_size(
                w.descriptor(),
                dy.descriptor(),
                dx.descriptor(),
                &conv,
                &DataAlgo1,
            )
            .unwrap();
        let mut ws = size.map(|n| stream.alloc_zeros::<u8>(n).unwrap());
        ctx.convolution_backward_data(1.0, &w, &dy, &conv, &DataAlgo1, ws.as_mut(), 0.0, &mut dx)
            .unwrap();
        let got = stream.clone_dtoh(dx.data()).unwrap();
        let bits: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
        match &first {
            None => first = Some(got),
            Some(f) => assert_eq!(bits, f.iter().map(|v| v.to_bits()).collect::<Vec<_>>()),
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn not_supported_names_algorithm_and_shape_and_leaves_dx_untouched() {
    let ctx = context();
    let stream = ctx.stream().clone();
    // Fft in the f32 NCHW row, with a dilation cuDNN's FFT does not take.
    let w = Filter::<f32, NCHW, _, 4>::new(
        upload(&stream, &vec![0.5f32; 4 * 4 * 9]),
        [4, 4, 3, 3],
        NCHW,
    )
    .unwrap();
    let dy = Tensor::<f32, NCHW, _, 4>::new(
        upload(&stream, &vec![1.0f32; 4 * 8 * 8]),
        [1, 4, 8, 8],
        NCHW,
    )
    .unwrap();
    let poison = vec![f32::from_bits(0x7fc0_1234); 4 * 12 * 12];
    let mut dx =
        Tensor::<f32, NCHW, _, 4>::new(upload(&stream, &poison), [1, 4, 12, 12], NCHW).unwrap();
    let conv = ConvolutionDescriptor::<f32, 2>::new(
        [0, 0],
        [1, 1],
        [2, 2],
        1,
        ConvolutionMode::CrossCorrelation,
        MathType::Default,
    )
    .unwrap();
    let err = ctx
        .convolution_backward_data(
            1.0,
            &w,
            &dy,
            &conv,
            &Fft,
            None::<&mut CudaSlice<u8>>,
            0.0,
            &mut dx,
        )
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, Error::Cudnn { status, .. } if status.is_not_supported()),
        "{text}"
    );
    assert!(
        text.contains("Fft") && text.contains("BestHeuristic") && text.contains("4x4x3x3"),
        "{text}"
    );
    let after = stream.clone_dtoh(dx.data()).unwrap();
    assert!(after.iter().all(|v| v.to_bits() == 0x7fc0_1234));
    let _ = (f16::ONE, bf16::ONE);
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn repeated_calls_replayed_as_cuda_graphs_stay_correct() {
    let ctx = context();
    let stream = ctx.stream().clone();
    let mut rng = StdRng::seed_from_u64(11);
    let (w_shape, dy_shape, dx_shape) = ([8usize, 4, 3, 3], [2usize, 8, 9, 9], [2usize, 4, 9, 9]);
    let (w_h, dy_h, want) = same_3x3_problem(&mut rng, w_shape, dy_shape, dx_shape);
    let w = Filter::<f32, NCHW, _, 4>::new(upload(&stream, &w_h), [8, 4, 3, 3], NCHW).unwrap();
    let dy = Tensor::<f32, NCHW, _, 4>::new(upload(&stream, &dy_h), [2, 8, 9, 9], NCHW).unwrap();
    let mut dx = Tensor::<f32, NCHW, _, 4>::new(
        stream.alloc_zeros::<f32>(2 * 4 * 81).unwrap(),
        [2, 4, 9, 9],
        NCHW,
    )
    .unwrap();
    // FMA math: no TF32, so every replay must match the first call bit for bit.
    let conv = fma_conv(1, 1, 1, 1);
    let size = ctx
        .get_convolution_backward_data_workspace_size(
            w.descriptor(),
            dy.descriptor(),
            dx.descriptor(),
            &conv,
            &DataAlgo1,
        )
        .unwrap();
    let mut ws = size.map(|n| stream.alloc_zeros::<u8>(n).unwrap());
    let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let mut first: Option<Vec<u32>> = None;
    for i in 0..6 {
        stream
            .memcpy_htod(&vec![f32::NAN; 2 * 4 * 81], dx.data_mut())
            .unwrap();
        ctx.convolution_backward_data(1.0, &w, &dy, &conv, &DataAlgo1, ws.as_mut(), 0.0, &mut dx)
            .unwrap();
        let got = stream.clone_dtoh(dx.data()).unwrap();
        let err = got
            .iter()
            .zip(&want)
            .map(|(g, r)| (g - r).abs())
            .fold(0.0f32, f32::max)
            / scale;
        assert!(err < 1e-5, "call {i}: relative error {err}");
        let bits: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
        match &first {
            None => first = Some(bits),
            Some(f) => assert_eq!(&bits, f, "call {i} differs from the first"),
        }
    }
    // beta = 1 accumulates on each replay: three calls from zero give 3 * dgrad.
    stream
        .memcpy_htod(&vec![0.0f32; 2 * 4 * 81], dx.data_mut())
        .unwrap();
    for _ in 0..3 {
        ctx.convolution_backward_data(1.0, &w, &dy, &conv, &DataAlgo1, ws.as_mut(), 1.0, &mut dx)
            .unwrap();
    }
    let got = stream.clone_dtoh(dx.data()).unwrap();
    let err = got
        .iter()
        .zip(&want)
        .map(|(g, r)| (g - 3.0 * r).abs())
        .fold(0.0f32, f32::max)
        / scale;
    assert!(err < 1e-5, "accumulating replays: relative error {err}");
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn graph_api_engines_autotune_respect_the_math_type_and_replay_exactly() {
    let ctx = context();
    let stream = ctx.stream().clone();
    let mut rng = StdRng::seed_from_u64(13);
    let (w_shape, dy_shape, dx_shape) = (
        [16usize, 8, 3, 3],
        [4usize, 16, 12, 12],
        [4usize, 8, 12, 12],
    );
    let ndx = 4 * 8 * 144;
    let (w_h, dy_h, want) = same_3x3_problem(&mut rng, w_shape, dy_shape, dx_shape);
    let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let w = Filter::<f32, NHWC, _, 4>::new(
        upload(&stream, &to_storage(&w_h, &w_shape, Format::Nhwc)),
        [16, 8, 3, 3],
        NHWC,
    )
    .unwrap();
    let dy = Tensor::<f32, NHWC, _, 4>::new(
        upload(&stream, &to_storage(&dy_h, &dy_shape, Format::Nhwc)),
        [4, 16, 12, 12],
        NHWC,
    )
    .unwrap();
    let mut dx = Tensor::<f32, NHWC, _, 4>::new(
        stream.alloc_zeros::<f32>(ndx).unwrap(),
        [4, 8, 12, 12],
        NHWC,
    )
    .unwrap();
    // FMA math: no tensor cores (no TF32), so results are exact to f32 rounding and
    // replays must be bit for bit the first call.
    let conv = fma_conv(1, 1, 1, 1);
    let found = ctx
        .find_convolution_backward_data_engine(&w, &dy, dx.descriptor(), &conv, None, None, 8)
        .unwrap();
    assert!(!found.is_empty());
    assert!(found.windows(2).all(|p| p[0].time() <= p[1].time()));
    assert!(found
        .iter()
        .all(|e| e.time() >= 0.0 && e.math_type() == MathType::Fma));
    let det = ctx
        .get_convolution_backward_data_engine(
            w.descriptor(),
            dy.descriptor(),
            dx.descriptor(),
            &conv,
            Some(Determinism::Deterministic),
        )
        .unwrap();
    assert_eq!(det.determinism(), Determinism::Deterministic);
    // Bitwise equality between calls needs a deterministic engine (the fastest may add
    // with atomics); the fastest deterministic one is replayed.
    let fastest = found
        .iter()
        .copied()
        .find(|e| e.determinism() == Determinism::Deterministic)
        .unwrap_or(det);
    let check = |dx: &Tensor<f32, NHWC, CudaSlice<f32>, 4>, times: f32, what: &str| {
        let got = from_storage(
            &stream.clone_dtoh(dx.data()).unwrap(),
            &dx_shape,
            Format::Nhwc,
        );
        let err = got
            .iter()
            .zip(&want)
            .map(|(g, r)| (g - times * r).abs())
            .fold(0.0f32, f32::max)
            / (times * scale);
        assert!(err < 1e-5, "{what}: relative error {err}");
        got.iter().map(|v| v.to_bits()).collect::<Vec<u32>>()
    };
    for (label, algo_ws) in [
        ("fastest engine", fastest.workspace_size()),
        (
            "BestEngine",
            ctx.get_convolution_backward_data_workspace_size(
                w.descriptor(),
                dy.descriptor(),
                dx.descriptor(),
                &conv,
                &BestEngine,
            )
            .unwrap()
            .unwrap_or(0),
        ),
    ] {
        let mut ws = (algo_ws > 0).then(|| stream.alloc_zeros::<u8>(algo_ws).unwrap());
        let mut first: Option<Vec<u32>> = None;
        for i in 0..6 {
            stream
                .memcpy_htod(&vec![f32::NAN; ndx], dx.data_mut())
                .unwrap();
            let r = if label == "BestEngine" {
                ctx.convolution_backward_data(
                    1.0,
                    &w,
                    &dy,
                    &conv,
                    &BestEngine,
                    ws.as_mut(),
                    0.0,
                    &mut dx,
                )
            } else {
                ctx.convolution_backward_data(
                    1.0,
                    &w,
                    &dy,
                    &conv,
                    &fastest,
                    ws.as_mut(),
                    0.0,
                    &mut dx,
                )
            };
            r.unwrap();
            let bits = check(&dx, 1.0, &format!("{label} call {i}"));
            match &first {
                None => first = Some(bits),
                Some(f) => assert_eq!(&bits, f, "{label} call {i} differs from the first"),
            }
        }
        // beta = 1 accumulates, replayed too: three calls from zero give 3 * dgrad.
        stream
            .memcpy_htod(&vec![0.0f32; ndx], dx.data_mut())
            .unwrap();
        for _ in 0..3 {
            let r = if label == "BestEngine" {
                ctx.convolution_backward_data(
                    1.0,
                    &w,
                    &dy,
                    &conv,
                    &BestEngine,
                    ws.as_mut(),
                    1.0,
                    &mut dx,
                )
            } else {
                ctx.convolution_backward_data(
                    1.0,
                    &w,
                    &dy,
                    &conv,
                    &fastest,
                    ws.as_mut(),
                    1.0,
                    &mut dx,
                )
            };
            r.unwrap();
        }
        check(&dx, 3.0, &format!("{label} beta=1"));
    }
    // A workspace one byte short is refused before anything runs.
    if fastest.workspace_size() > 0 {
        let mut short = stream
            .alloc_zeros::<u8>(fastest.workspace_size() - 1)
            .unwrap();
        let err = ctx
            .convolution_backward_data(
                1.0,
                &w,
                &dy,
                &conv,
                &fastest,
                Some(&mut short),
                0.0,
                &mut dx,
            )
            .unwrap_err();
        assert!(err.to_string().contains("workspace"), "{err}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn engines_listed_by_the_heuristics_asked_beside_run_here_and_match_the_reference() {
    let ctx = context();
    let stream = ctx.stream().clone();
    let mut rng = StdRng::seed_from_u64(29);
    let (w_shape, dy_shape, dx_shape) = (
        [24usize, 12, 3, 3],
        [2usize, 24, 10, 10],
        [2usize, 12, 10, 10],
    );
    let ndx: usize = dx_shape.iter().product();
    let (w_h, dy_h, want) = same_3x3_problem(&mut rng, w_shape, dy_shape, dx_shape);
    let dims = |s: [usize; 4]| s.map(|d| i32::try_from(d).unwrap());
    let w = Filter::<f32, NCHW, _, 4>::new(upload(&stream, &w_h), dims(w_shape), NCHW).unwrap();
    let dy = Tensor::<f32, NCHW, _, 4>::new(upload(&stream, &dy_h), dims(dy_shape), NCHW).unwrap();
    let mut dx = Tensor::<f32, NCHW, _, 4>::new(
        stream.alloc_zeros::<f32>(ndx).unwrap(),
        dims(dx_shape),
        NCHW,
    )
    .unwrap();
    // FMA math: every engine found must agree with the loop to f32 rounding.
    let conv = fma_conv(1, 1, 1, 1);
    let found = ctx
        .find_convolution_backward_data_engine(&w, &dy, dx.descriptor(), &conv, None, None, 64)
        .unwrap();
    assert!(!found.is_empty());
    // Modes B and the fallback list, asked on the other thread, list engines mode A does
    // not: some of those timed were built there (cuDNN 9.8 on, unless switched off).
    let (major, minor, _) = ctx.version();
    let beside = std::env::var("CUDNN_RS_ASK_BESIDE").map_or(true, |v| v != "0");
    if (major, minor) >= (9, 8) && beside {
        assert!(
            ctx.last_find_beside() > 0,
            "no configuration came from beside"
        );
    } else {
        assert_eq!(ctx.last_find_beside(), 0);
    }
    for e in &found {
        let mut ws =
            (e.workspace_size() > 0).then(|| stream.alloc_zeros::<u8>(e.workspace_size()).unwrap());
        stream
            .memcpy_htod(&vec![f32::NAN; ndx], dx.data_mut())
            .unwrap();
        ctx.convolution_backward_data(1.0, &w, &dy, &conv, e, ws.as_mut(), 0.0, &mut dx)
            .unwrap();
        let got = stream.clone_dtoh(dx.data()).unwrap();
        assert!(
            got.iter().all(|v| v.is_finite()),
            "{}: not all of dx written",
            e.config()
        );
        let err = max_rel_err(&got, &want);
        assert!(err < 1e-5, "{}: relative error {err}", e.config());
    }
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn typed_finds_go_through_the_algorithm_cache_and_are_saved() {
    let ctx = context();
    let stream = ctx.stream().clone();
    let mut rng = StdRng::seed_from_u64(13);
    let w_h: Vec<f32> = (0..16 * 8 * 9)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let dy_h: Vec<f32> = (0..2 * 16 * 14 * 14)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let w = Filter::<f32, NCHW, _, 4>::new(upload(&stream, &w_h), [16, 8, 3, 3], NCHW).unwrap();
    let dy = Tensor::<f32, NCHW, _, 4>::new(upload(&stream, &dy_h), [2, 16, 14, 14], NCHW).unwrap();
    let dx = TensorDescriptor::<f32, NCHW, 4>::new([2, 8, 14, 14], NCHW).unwrap();
    let conv = ConvolutionDescriptor::<f32, 2>::new(
        [1, 1],
        [1, 1],
        [1, 1],
        1,
        ConvolutionMode::CrossCorrelation,
        MathType::Default,
    )
    .unwrap();
    assert!(ctx.algorithm_cache().is_empty());
    let first = ctx
        .find_convolution_backward_data_algorithm(&w, &dy, &dx, &conv, None, None)
        .unwrap();
    assert_eq!(ctx.algorithm_cache().len(), 1);
    // Served from the cache: the very same measurements, nothing measured again.
    let again = ctx
        .find_convolution_backward_data_algorithm(&w, &dy, &dx, &conv, None, None)
        .unwrap();
    assert_eq!(first, again);
    let engines = ctx
        .find_convolution_backward_data_engine(&w, &dy, &dx, &conv, None, None, 4)
        .unwrap();
    assert_eq!(ctx.algorithm_cache().len(), 2);
    let engines_again = ctx
        .find_convolution_backward_data_engine(&w, &dy, &dx, &conv, None, None, 4)
        .unwrap();
    assert_eq!(engines, engines_again);
    // The saved cache holds both finds, and a fresh context loads them.
    let path =
        std::env::temp_dir().join(format!("cudnn_rs_typed_finds_{}.txt", std::process::id()));
    ctx.save_algorithm_cache(&path).unwrap();
    let other = context();
    assert_eq!(other.load_algorithm_cache(&path).unwrap(), 2);
    let loaded = other
        .find_convolution_backward_data_algorithm(&w, &dy, &dx, &conv, None, None)
        .unwrap();
    assert_eq!(loaded, first);
    let _ = std::fs::remove_file(&path);
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn depthwise_f32_nchw_default_through_the_nhwc_twin_matches_the_reference() {
    // A strided depthwise layer, large enough for the default choice to run it through
    // its NHWC twin (bwd_data/twin.rs): dx has 4 * 32 * 40 * 40 elements. Stride 2 with
    // dilation 2: the kernel of our own takes no strided layer dilated in width.
    depthwise_f32_nchw_default(2, 3, 2, true);
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn depthwise_f32_nchw_default_with_the_kernel_of_our_own_matches_the_reference() {
    // The default choice runs the depthwise kernel of our own (bwd_data/direct.rs): a 3x3
    // layer and LR-ASPP's kind of 5x5 layer with dilation 2, MobileNet's kinds of strided
    // layers (padding odd and even), and stride 3 (the general strided entries).
    depthwise_f32_nchw_default(1, 3, 1, false);
    depthwise_f32_nchw_default(1, 5, 2, false);
    depthwise_f32_nchw_default(2, 3, 1, false);
    depthwise_f32_nchw_default(2, 5, 1, false);
    depthwise_f32_nchw_default(3, 3, 1, false);
    depthwise_f32_nchw_default(3, 5, 1, false);
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn depthwise_f32_nhwc_default_with_the_kernel_of_our_own_matches_the_reference() {
    // Channels-last 3x3/5x5/7x7 layers at stride 1, large enough for the default to run
    // them with the kernel's NHWC entry points (2^22 elements of dx, 7x7: 2^20): four
    // channels a load (36 channels), one (30), dilated, and with two filters a channel.
    depthwise_f32_nhwc_default(36, 3, 1, 1, [16, 96, 96]);
    depthwise_f32_nhwc_default(30, 7, 1, 1, [8, 68, 68]);
    depthwise_f32_nhwc_default(36, 5, 2, 1, [16, 96, 97]);
    depthwise_f32_nhwc_default(20, 3, 1, 2, [16, 115, 115]);
}

/// A depthwise f32 channels-last layer of `c` channels and `m` filters each, dx
/// n x c x h x w (`[n, h, w]` = `nhw`), a `k` x `k` filter with dilation `dil` padded to
/// keep the size, through the default choice with alpha and beta (and then alpha 1, beta 0
/// on a poisoned dx), against the reference, with no workspace.
fn depthwise_f32_nhwc_default(c: usize, k: usize, dil: usize, m: usize, nhw: [usize; 3]) {
    let ctx = context();
    let stream = ctx.stream().clone();
    let mut rng = StdRng::seed_from_u64(53 + (c * 100 + k * 10 + dil + m) as u64);
    let [n, h, wd] = nhw;
    let pad = dil * (k - 1) / 2;
    let (w_shape, x_shape, y_shape) = ([c * m, 1, k, k], [n, c, h, wd], [n, c * m, h, wd]);
    let len = n * c * h * wd;
    let mut random =
        |count: usize| -> Vec<f32> { (0..count).map(|_| rng.random_range(-1.0..1.0)).collect() };
    let (w_h, dy_h, dx0) = (
        random(c * m * k * k),
        random(n * c * m * h * wd),
        random(len),
    );
    let geo = depthwise_geometry([w_shape, y_shape, x_shape], pad, 1, dil, c);
    let nhwc = |alpha: f64, beta: f64, out: &mut [f32]| {
        let f = Format::Nhwc;
        convolution_backward_data_naive(&geo, f, f, f, alpha, &w_h, &dy_h, beta, out).unwrap();
    };
    let (w, dy, mut dx) = typed_operands(
        &stream,
        NHWC,
        (&w_h, w_shape),
        (&dy_h, y_shape),
        (&dx0, x_shape),
    );
    let conv = fma_conv(pad, 1, dil, c);
    let size = default_workspace(&ctx, &w, &dy, &dx, &conv);
    assert_eq!(size, 0, "the kernel's NHWC entry points need no workspace");
    for (alpha, beta) in [(1.5f32, 0.5f32), (1.0, 0.0)] {
        let start = if beta == 0.0 {
            vec![f32::NAN; len]
        } else {
            dx0.clone()
        };
        let mut want = start.clone();
        nhwc(f64::from(alpha), f64::from(beta), &mut want);
        stream.memcpy_htod(&start, dx.data_mut()).unwrap();
        ctx.convolution_backward_data(
            alpha,
            &w,
            &dy,
            &conv,
            &DefaultAlgo,
            None::<&mut CudaSlice<u8>>,
            beta,
            &mut dx,
        )
        .unwrap();
        let got = stream.clone_dtoh(dx.data()).unwrap();
        assert!(
            got.iter().all(|v| v.is_finite()),
            "c {c} k {k}: NaN left in dx"
        );
        let err = max_rel_err(&got, &want);
        assert!(
            err < 1e-5,
            "c {c} k {k} dil {dil} m {m} beta {beta}: relative error {err}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn contexts_of_one_device_share_the_kernel_module_and_outlive_each_other() {
    // The first context loads the depthwise kernel's module; a second one, made while the
    // first lives, shares it; with the first gone the second still runs it, and a third
    // made after both are gone loads it again.
    let first = context();
    depthwise_f32_nchw_default_on(&first, 1, 3, 1, false);
    let second = context();
    depthwise_f32_nchw_default_on(&second, 2, 3, 1, false);
    drop(first);
    depthwise_f32_nchw_default_on(&second, 1, 7, 1, false);
    drop(second);
    depthwise_f32_nchw_default_on(&context(), 2, 7, 1, false);
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn contexts_made_after_others_are_dropped_keep_their_event_tracking_and_run_right() {
    // An untracked context is the only kind that takes over a dropped one's CUDA context
    // object: a `new` context made after an untracked one was dropped tracks events, and
    // an untracked one made after a tracked one was dropped does not; each runs right on
    // the handle and caches the one before gave back.
    // SAFETY: this test makes no cudarc streams of the contexts and uses one stream each.
    let untracked = || unsafe { CudnnContext::new_untracked(0, false) }.unwrap();
    let a = untracked();
    assert!(!a.context().is_event_tracking());
    depthwise_f32_nchw_default_on(&a, 1, 3, 1, false);
    drop(a);
    let b = context();
    assert!(b.context().is_event_tracking());
    depthwise_f32_nchw_default_on(&b, 1, 3, 1, false);
    drop(b);
    let c = untracked();
    assert!(!c.context().is_event_tracking());
    depthwise_f32_nchw_default_on(&c, 2, 3, 1, false);
    let d = untracked();
    assert!(!d.context().is_event_tracking());
    depthwise_f32_nchw_default_on(&d, 1, 3, 1, false);
}

/// A filter, dy and dx of f32 in layout `fmt`, uploaded from host data with their logical
/// shapes.
#[allow(clippy::type_complexity)]
fn typed_operands<F: SupportedType<f32>>(
    stream: &Arc<CudaStream>,
    fmt: F,
    (w, w_shape): (&[f32], [usize; 4]),
    (dy, y_shape): (&[f32], [usize; 4]),
    (dx, x_shape): (&[f32], [usize; 4]),
) -> (
    Filter<f32, F, CudaSlice<f32>, 4>,
    Tensor<f32, F, CudaSlice<f32>, 4>,
    Tensor<f32, F, CudaSlice<f32>, 4>,
) {
    let dims = |s: [usize; 4]| s.map(|v| v as i32);
    (
        Filter::new(upload(stream, w), dims(w_shape), fmt).unwrap(),
        Tensor::new(upload(stream, dy), dims(y_shape), fmt).unwrap(),
        Tensor::new(upload(stream, dx), dims(x_shape), fmt).unwrap(),
    )
}

/// The workspace `DefaultAlgo` asks for on f32 2-d operands in layout `F` (0 for none).
fn default_workspace<F: SupportedType<f32>>(
    ctx: &CudnnContext,
    w: &Filter<f32, F, CudaSlice<f32>, 4>,
    dy: &Tensor<f32, F, CudaSlice<f32>, 4>,
    dx: &Tensor<f32, F, CudaSlice<f32>, 4>,
    conv: &ConvolutionDescriptor<f32, 2>,
) -> usize
where
    DefaultAlgo: SupportedConvBwdData<f32, F, f32, F, f32, f32, F, 4, 2>,
{
    ctx.get_convolution_backward_data_workspace_size(
        w.descriptor(),
        dy.descriptor(),
        dx.descriptor(),
        conv,
        &DefaultAlgo,
    )
    .unwrap()
    .unwrap_or(0)
}

/// The reference's geometry of a square depthwise layer of `groups` channels, from the
/// filter's, dy's and dx's shapes.
fn depthwise_geometry(
    [w, y, x]: [[usize; 4]; 3],
    pad: usize,
    stride: usize,
    dil: usize,
    groups: usize,
) -> BwdDataGeometry {
    let (p, s, d) = (pad as i64, stride as i64, dil as i64);
    let params = ConvParams::new(
        &[p, p],
        &[s, s],
        &[d, d],
        groups as i64,
        ConvolutionMode::CrossCorrelation,
    )
    .unwrap();
    BwdDataGeometry::new(&w, &y, &x, &params).unwrap()
}

/// The parameters of a dense 3x3 cross-correlation of stride 1 and padding 1 (same size).
fn same_3x3_params() -> ConvParams {
    ConvParams::new(
        &[1, 1],
        &[1, 1],
        &[1, 1],
        1,
        ConvolutionMode::CrossCorrelation,
    )
    .unwrap()
}

/// Random w and dy (uniform in [-1, 1)) for a 3x3 convolution of stride 1 and padding 1
/// with these NCHW shapes, and the reference loop's dx for them.
fn same_3x3_problem(
    rng: &mut StdRng,
    w_shape: [usize; 4],
    dy_shape: [usize; 4],
    dx_shape: [usize; 4],
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut draw = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-1.0..1.0)).collect() };
    let w_h = draw(w_shape.iter().product());
    let dy_h = draw(dy_shape.iter().product());
    let params = same_3x3_params();
    let geo = BwdDataGeometry::new(&w_shape, &dy_shape, &dx_shape, &params).unwrap();
    let mut want = vec![0.0f32; dx_shape.iter().product()];
    naive_nchw(&geo, 1.0, &w_h, &dy_h, 0.0, &mut want);
    (w_h, dy_h, want)
}

/// The f32 convolution with FMA math (no tensor cores, so exact to f32 rounding) of a
/// square kernel: `groups` channels for a depthwise layer, 1 for a dense one.
fn fma_conv(pad: usize, stride: usize, dil: usize, groups: usize) -> ConvolutionDescriptor<f32, 2> {
    ConvolutionDescriptor::<f32, 2>::new(
        [pad as i32; 2],
        [stride as i32; 2],
        [dil as i32; 2],
        groups as u32,
        ConvolutionMode::CrossCorrelation,
        MathType::Fma,
    )
    .unwrap()
}

/// [`depthwise_f32_nchw_default_on`] on a new context.
fn depthwise_f32_nchw_default(stride: usize, k: usize, dil: usize, twin: bool) {
    depthwise_f32_nchw_default_on(&context(), stride, k, dil, twin);
}

/// A depthwise f32 NCHW layer of 32 channels, dx 4 x 32 x 40 x 40, a `k` x `k` filter
/// with dilation `dil` padded to keep the size (divided by `stride`), through the default
/// choice of `ctx` with alpha and beta, against the reference; `twin`: the default choice
/// runs it through its NHWC twin (which needs a workspace for both copies), else with the
/// kernel of our own (no workspace).
fn depthwise_f32_nchw_default_on(
    ctx: &CudnnContext,
    stride: usize,
    k: usize,
    dil: usize,
    twin: bool,
) {
    let stream = ctx.stream().clone();
    let mut rng = StdRng::seed_from_u64(29 + (stride * 100 + k * 10 + dil) as u64);
    let (n, c, hw) = (4usize, 32usize, 40usize);
    let pad = dil * (k - 1) / 2;
    let out = (hw + 2 * pad - dil * (k - 1) - 1) / stride + 1;
    let (w_shape, x_shape, y_shape) = ([c, 1, k, k], [n, c, hw, hw], [n, c, out, out]);
    let len = n * c * hw * hw;
    let w_h: Vec<f32> = (0..c * k * k)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let dy_h: Vec<f32> = (0..n * c * out * out)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let dx0: Vec<f32> = (0..len).map(|_| rng.random_range(-1.0..1.0)).collect();
    let geo = depthwise_geometry([w_shape, y_shape, x_shape], pad, stride, dil, c);
    let (alpha, beta) = (1.5f32, 0.5f32);
    let mut want = dx0.clone();
    naive_nchw(
        &geo,
        f64::from(alpha),
        &w_h,
        &dy_h,
        f64::from(beta),
        &mut want,
    );
    let (w, dy, mut dx) = typed_operands(
        &stream,
        NCHW,
        (&w_h, w_shape),
        (&dy_h, y_shape),
        (&dx0, x_shape),
    );
    let conv = fma_conv(pad, stride, dil, c);
    let size = default_workspace(ctx, &w, &dy, &dx, &conv);
    if twin {
        // The twin needs room for NHWC copies of dy and dx.
        assert!(
            size >= (dy_h.len() + len) * 4,
            "workspace {size} bytes cannot hold both NHWC copies"
        );
        // Too small a workspace is refused before anything is written.
        let mut small = stream.alloc_zeros::<u8>(len * 4).unwrap();
        let refused = ctx.convolution_backward_data(
            alpha,
            &w,
            &dy,
            &conv,
            &DefaultAlgo,
            Some(&mut small),
            beta,
            &mut dx,
        );
        assert!(
            refused.is_err(),
            "a workspace of {} bytes was accepted",
            len * 4
        );
        assert_eq!(
            stream.clone_dtoh(dx.data()).unwrap(),
            dx0,
            "dx written by a refused call"
        );
    } else {
        assert_eq!(size, 0, "the kernel of our own needs no workspace");
    }
    let mut ws = (size > 0).then(|| stream.alloc_zeros::<u8>(size).unwrap());
    let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    // Several calls from the same dx0 (the repeats are replayed as a CUDA graph, or, with
    // the kernel, found in one lookup).
    for i in 0..4 {
        stream.memcpy_htod(&dx0, dx.data_mut()).unwrap();
        ctx.convolution_backward_data(
            alpha,
            &w,
            &dy,
            &conv,
            &DefaultAlgo,
            ws.as_mut(),
            beta,
            &mut dx,
        )
        .unwrap();
        let got = stream.clone_dtoh(dx.data()).unwrap();
        let err = got
            .iter()
            .zip(&want)
            .map(|(g, r)| (g - r).abs())
            .fold(0.0f32, f32::max)
            / scale;
        assert!(
            err < 1e-5,
            "stride {stride} k {k} dil {dil} call {i}: relative error {err}"
        );
    }
    // The common call (alpha 1, beta 0) on a poisoned dx, twice: the second runs what
    // the first resolved to.
    let mut plain = vec![0.0f32; len];
    naive_nchw(&geo, 1.0, &w_h, &dy_h, 0.0, &mut plain);
    let scale = plain.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    for i in 0..2 {
        stream
            .memcpy_htod(&vec![f32::NAN; len], dx.data_mut())
            .unwrap();
        ctx.convolution_backward_data(1.0, &w, &dy, &conv, &DefaultAlgo, ws.as_mut(), 0.0, &mut dx)
            .unwrap();
        let got = stream.clone_dtoh(dx.data()).unwrap();
        // f32::max passes over a NaN: a poisoned value left in dx shows here.
        assert!(got.iter().all(|v| v.is_finite()), "plain call {i} left NaN");
        let err = got
            .iter()
            .zip(&plain)
            .map(|(g, r)| (g - r).abs())
            .fold(0.0f32, f32::max)
            / scale;
        assert!(
            err < 1e-5,
            "stride {stride} k {k} dil {dil} plain call {i}: relative error {err}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn measured_default_times_on_its_own_scratch_and_leaves_dx_to_the_call() {
    // Benchmarking on, the first call of a problem times engines on scratch operands
    // (w and dy both larger than the 64 KiB the host writes, so the device copies that
    // repeat the pattern run too) and then runs the fastest: with beta = 0.5 on random dx,
    // a trial that wrote dx would show in the result; then beta = 0 on a poisoned dx.
    let ctx = context();
    ctx.set_benchmark(true);
    // Measured choices are shared by the device's contexts: none an earlier test made.
    // (The only other test here that measures, the background build's, measures a layer
    // of its own and does not clear them, so tests run in parallel leave these alone.)
    ctx.clear_measured_choices();
    let stream = ctx.stream().clone();
    let mut rng = StdRng::seed_from_u64(29);
    let (w_shape, y_shape, x_shape) = ([64, 48, 3, 3], [2, 64, 15, 15], [2, 48, 15, 15]);
    let count = |s: [usize; 4]| s.iter().product::<usize>();
    let mut random = |s: [usize; 4]| -> Vec<f32> {
        (0..count(s)).map(|_| rng.random_range(-1.0..1.0)).collect()
    };
    let (w_h, dy_h, dx0) = (random(w_shape), random(y_shape), random(x_shape));
    assert!(count(w_shape) * 4 > 1 << 16 && count(y_shape) * 4 > 1 << 16);
    let (w, dy, mut dx) = typed_operands(
        &stream,
        NCHW,
        (&w_h, w_shape),
        (&dy_h, y_shape),
        (&dx0, x_shape),
    );
    let conv = ConvolutionDescriptor::<f32, 2>::new(
        [1, 1],
        [1, 1],
        [1, 1],
        1,
        ConvolutionMode::CrossCorrelation,
        MathType::Default,
    )
    .unwrap();
    let params = same_3x3_params();
    let geo = BwdDataGeometry::new(&w_shape, &y_shape, &x_shape, &params).unwrap();
    let mut run = |ctx: &CudnnContext, alpha: f32, beta: f32| {
        let start = if beta == 0.0 {
            vec![f32::NAN; dx0.len()]
        } else {
            dx0.clone()
        };
        let mut want = start.clone();
        naive_nchw(
            &geo,
            f64::from(alpha),
            &w_h,
            &dy_h,
            f64::from(beta),
            &mut want,
        );
        stream.memcpy_htod(&start, dx.data_mut()).unwrap();
        let size = default_workspace(ctx, &w, &dy, &dx, &conv);
        let mut ws = (size > 0).then(|| stream.alloc_zeros::<u8>(size).unwrap());
        ctx.convolution_backward_data(
            alpha,
            &w,
            &dy,
            &conv,
            &DefaultAlgo,
            ws.as_mut(),
            beta,
            &mut dx,
        )
        .unwrap();
        let got = stream.clone_dtoh(dx.data()).unwrap();
        assert!(got.iter().all(|v| v.is_finite()), "beta {beta}: NaN in dx");
        let err = max_rel_err(&got, &want);
        assert!(err < 5e-3, "beta {beta}: relative error {err}");
    };
    for (alpha, beta) in [(1.5f32, 0.5f32), (1.0, 0.0)] {
        run(&ctx, alpha, beta);
    }
    let (timed, _) = ctx.last_find_report();
    assert!(timed > 1, "the first call measured {timed} configurations");
    // Measured once per device and process: another context runs the choice without
    // measuring, until the measured choices are cleared.
    let other = context();
    other.set_benchmark(true);
    run(&other, 1.0, 0.0);
    assert_eq!(other.last_find_report(), (0, 0), "measured again");
    other.clear_measured_choices();
    run(&other, 1.0, 0.0);
    let (timed, _) = other.last_find_report();
    assert!(timed > 1, "after clearing, {timed} configurations measured");
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn measured_default_runs_the_kernel_until_the_background_build_is_taken_in() {
    // A bf16 NCHW depthwise 3x3 layer of 384 channels on 14x14 (over 2^20 elements of
    // dx), which the measured default leaves to cuDNN's engines, the fastest of them
    // compiled at run time: the first call runs the kernel of our own while a builder
    // thread builds those engines; once built, a call takes them in and measures. Both
    // calls' dx (poisoned first) against the reference on the same bf16 inputs.
    // (No other test of this binary measures the layer, so its measurement is this
    // test's own: the measured choices the device's contexts share are left alone, for
    // the test that clears them.)
    let ctx = context();
    ctx.set_benchmark(true);
    let stream = ctx.stream().clone();
    let mut rng = StdRng::seed_from_u64(43);
    let c = 384;
    let (w_shape, x_shape) = ([c, 1, 3, 3], [32, c, 14, 14]);
    let count = |s: [usize; 4]| s.iter().product::<usize>();
    let mut random = |s: [usize; 4]| -> Vec<bf16> {
        (0..count(s))
            .map(|_| bf16::from_f32(rng.random_range(-1.0..1.0)))
            .collect()
    };
    let (w_h, dy_h) = (random(w_shape), random(x_shape));
    let widen = |v: &[bf16]| v.iter().map(|x| x.to_f32()).collect::<Vec<f32>>();
    let geo = depthwise_geometry([w_shape, x_shape, x_shape], 1, 1, 1, c);
    let mut want = vec![0.0f32; count(x_shape)];
    naive_nchw(&geo, 1.0, &widen(&w_h), &widen(&dy_h), 0.0, &mut want);
    let dims = |s: [usize; 4]| s.map(|v| v as i32);
    let w = Filter::new(upload(&stream, &w_h), dims(w_shape), NCHW).unwrap();
    let dy = Tensor::new(upload(&stream, &dy_h), dims(x_shape), NCHW).unwrap();
    let poison = vec![bf16::NAN; count(x_shape)];
    let mut dx = Tensor::new(upload(&stream, &poison), dims(x_shape), NCHW).unwrap();
    let conv = ConvolutionDescriptor::<f32, 2>::new(
        [1, 1],
        [1, 1],
        [1, 1],
        c as u32,
        ConvolutionMode::CrossCorrelation,
        MathType::Default,
    )
    .unwrap();
    let mut call = |what: &str| {
        stream.memcpy_htod(&poison, dx.data_mut()).unwrap();
        let size = ctx
            .get_convolution_backward_data_workspace_size(
                w.descriptor(),
                dy.descriptor(),
                dx.descriptor(),
                &conv,
                &DefaultAlgo,
            )
            .unwrap()
            .unwrap_or(0);
        let mut ws = (size > 0).then(|| stream.alloc_zeros::<u8>(size).unwrap());
        ctx.convolution_backward_data(
            1.0f32,
            &w,
            &dy,
            &conv,
            &DefaultAlgo,
            ws.as_mut(),
            0.0,
            &mut dx,
        )
        .unwrap();
        let got = widen(&stream.clone_dtoh(dx.data()).unwrap());
        assert!(got.iter().all(|v| v.is_finite()), "{what}: NaN in dx");
        let err = max_rel_err(&got, &want);
        assert!(err < 2e-2, "{what}: relative error {err}");
    };
    assert_eq!(ctx.background_builds(), (0, 0));
    call("first call");
    assert_eq!(ctx.background_builds(), (1, 0));
    assert!(ctx.wait_background_builds(std::time::Duration::from_secs(120)));
    call("call after the build");
    assert_eq!(ctx.background_builds(), (0, 1));
    let (timed, _) = ctx.last_find_report();
    assert!(timed > 0, "the call after the build measured nothing");
}

#[test]
#[ignore = "needs a CUDA GPU and cuDNN 9: run with --ignored (bench/gpu_run.sh)"]
fn device_memory_the_library_frees_is_kept_for_reuse_until_released() {
    let cuda = CudnnContext::cuda_context(0).unwrap();
    // SAFETY: this context is the test's own and only its default stream is used, so no
    // slice needs ordering by events across streams.
    unsafe { cuda.disable_event_tracking() };
    let stream = cuda.default_stream();
    let len = 64 << 20;
    cudnn_rs::release_cached_memory(Some(0)).unwrap();
    let first = cudnn_rs::context::alloc_bytes(&stream, len).unwrap();
    let address = {
        let (p, _g) = cudarc::driver::DevicePtr::device_ptr(&first, &stream);
        p
    };
    drop(first);
    stream.synchronize().unwrap();
    // Kept across the synchronisation: the next allocation of the size takes it again.
    let again = cudnn_rs::context::alloc_bytes(&stream, len).unwrap();
    let (p, g) = cudarc::driver::DevicePtr::device_ptr(&again, &stream);
    assert_eq!(p, address, "freed memory was not reused");
    drop(g);
    drop(again);
    let released = cudnn_rs::release_cached_memory(Some(0)).unwrap();
    assert!(released >= len, "released {released} bytes of {len}");
    assert_eq!(cudnn_rs::release_cached_memory(Some(0)).unwrap(), 0);
    // Allocating again after everything went back works, and the memory is usable.
    let mut fresh = cudnn_rs::context::alloc_bytes(&stream, len).unwrap();
    stream.memset_zeros(&mut fresh).unwrap();
    let host = stream.clone_dtoh(&fresh).unwrap();
    assert!(host.iter().all(|&b| b == 0));
}
