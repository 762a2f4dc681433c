//! Measures what cuDNN supports for backward data: every algorithm x element type x
//! compute type x (filter, dy, dx) format x rank, on a set of shapes, run on the GPU
//! with fresh random inputs and a poisoned output and compared with the CPU reference.
//! Configurations outside the support table are run too (bypassing it through
//! `probe_backward_data`), so the table can be both pruned and extended from the result.
//!
//! The graph API is swept as `Engine` (its heuristic's engine, as `BestEngine` runs it).
//!
//! Usage: `gpu_sweep OUT.csv` (on the GPU machine; `bench/gpu_run.sh` runs it). With
//! `CUDNN_RS_SWEEP=engine` only the graph API is swept, with `legacy` only the six
//! algorithms.
//! Writes one CSV row per (configuration, shape) and prints a per-configuration summary.

use std::fmt::Write as _;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use cudnn_rs::context::{RawPointers, RawProblem};
use cudnn_rs::convolution::support::{is_supported, SupportRow};
use cudnn_rs::convolution::{
    AlgoKind, BwdDataAlgo, BwdDataGeometry, ConvParams, RawConvolutionDescriptor, Route,
};
use cudnn_rs::reference::{convolution_backward_data as reference, RefElement};
use cudnn_rs::tensor::layout::{to_logical, to_physical};
use cudnn_rs::tensor::{RawDescriptor, Role};
use cudnn_rs::{ConvolutionMode, CudnnContext, DType, Error, Format, MathType};
use half::{bf16, f16};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

struct Shape {
    name: &'static str,
    n: usize,
    c: usize,
    k: usize,
    x: [usize; 3],
    kernel: usize,
    pad: i64,
    stride: i64,
    dilation: i64,
    groups: i64,
}

const fn s(
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
) -> Shape {
    Shape {
        name,
        n,
        c,
        k,
        x: [x, x, x],
        kernel,
        pad,
        stride,
        dilation,
        groups,
    }
}

const SHAPES: &[Shape] = &[
    s("3x3_s1_p1_b1", 1, 16, 16, 14, 3, 1, 1, 1, 1),
    s("3x3_s1_p1_b32", 32, 16, 32, 14, 3, 1, 1, 1, 1),
    s("1x1_p0", 4, 32, 16, 9, 1, 0, 1, 1, 1),
    s("3x3_s2_p1_odd", 2, 16, 16, 15, 3, 1, 2, 1, 1),
    s("3x3_p0", 2, 8, 8, 11, 3, 0, 1, 1, 1),
    s("5x5_p2", 2, 8, 16, 13, 5, 2, 1, 1, 1),
    s("3x3_d2_p2", 2, 8, 8, 12, 3, 2, 1, 2, 1),
    s("3x3_g2", 2, 16, 16, 10, 3, 1, 1, 1, 2),
    s("3x3_depthwise", 2, 16, 16, 10, 3, 1, 1, 1, 16),
    s("3x3_s2_p2_d2_g2_odd", 1, 8, 8, 17, 3, 2, 2, 2, 2),
];

/// Relative tolerance; f16 compute ("true half") accumulates in half precision.
fn tolerance(d: DType, comp: DType) -> f64 {
    if comp == DType::F16 {
        return 5e-2;
    }
    match d {
        DType::F64 => 1e-10,
        DType::F32 => 5e-3,
        DType::F16 => 2e-2,
        _ => 6e-2,
    }
}

struct Config {
    route: Route,
    dtype: DType,
    comp: DType,
    formats: [Format; 3],
    dims: usize,
}

impl Config {
    fn row(&self) -> SupportRow {
        SupportRow {
            algo: match self.route {
                Route::Legacy(a) => a.kind(),
                Route::Engine(_) => AlgoKind::Engine,
                Route::Default => AlgoKind::DefaultAlgo,
            },
            filter: (self.dtype, self.formats[0]),
            dy: (self.dtype, self.formats[1]),
            comp: self.comp,
            dx: (self.dtype, self.formats[2]),
            tensor_dims: self.dims + 2,
            conv_dims: self.dims,
        }
    }
}

fn upload_bytes<T: bytemuck::Pod>(
    stream: &Arc<CudaStream>,
    v: &[T],
) -> Result<CudaSlice<u8>, Error> {
    Ok(stream.clone_htod(bytemuck::cast_slice::<T, u8>(v))?)
}

/// Runs one configuration on one shape: `Ok(err)` with the relative error, or the error.
fn run_case<T: RefElement + bytemuck::Pod>(
    ctx: &CudnnContext,
    cfg: &Config,
    shape: &Shape,
    mode: ConvolutionMode,
    rng: &mut StdRng,
) -> Result<f64, Error> {
    let nd = cfg.dims;
    let params = ConvParams::new(
        &vec![shape.pad; nd],
        &vec![shape.stride; nd],
        &vec![shape.dilation; nd],
        shape.groups,
        mode,
    )?;
    let x: Vec<usize> = shape.x[..nd]
        .iter()
        .map(|&v| if nd == 3 { v.min(9) } else { v })
        .collect();
    let mut w_shape = vec![shape.k, shape.c / shape.groups as usize];
    let mut dy_shape = vec![shape.n.min(if nd == 3 { 4 } else { 32 }), shape.k];
    let mut dx_shape = vec![dy_shape[0], shape.c];
    for (i, &xi) in x.iter().enumerate() {
        let y = params
            .output_size(i, xi, shape.kernel)
            .ok_or_else(|| Error::Shape("kernel does not fit".into()))?;
        w_shape.push(shape.kernel);
        dy_shape.push(y);
        dx_shape.push(xi);
    }
    let geo = BwdDataGeometry::new(&w_shape, &dy_shape, &dx_shape, &params)?;
    let (nw, ndy, ndx) = geo.element_counts();
    let rand = |rng: &mut StdRng, n: usize| -> Vec<T> {
        (0..n)
            .map(|_| T::round_from_f64(rng.random_range(-1.0..1.0)))
            .collect()
    };
    let (w_h, dy_h) = (rand(rng, nw), rand(rng, ndy));
    let w_d = Arc::new(RawDescriptor::new(
        Role::Filter,
        cfg.dtype,
        cfg.formats[0],
        &w_shape,
    )?);
    let dy_d = Arc::new(RawDescriptor::new(
        Role::Tensor,
        cfg.dtype,
        cfg.formats[1],
        &dy_shape,
    )?);
    let dx_d = Arc::new(RawDescriptor::new(
        Role::Tensor,
        cfg.dtype,
        cfg.formats[2],
        &dx_shape,
    )?);
    let conv = RawConvolutionDescriptor::new(params, cfg.comp, MathType::Default)?;
    let p = RawProblem {
        w: &w_d,
        dy: &dy_d,
        dx: &dx_d,
        conv: &conv,
    };
    let stream = ctx.stream().clone();
    let w_g = upload_bytes(&stream, &to_physical(&w_h, &w_shape, cfg.formats[0])?)?;
    let dy_g = upload_bytes(&stream, &to_physical(&dy_h, &dy_shape, cfg.formats[1])?)?;
    let poison = vec![T::round_from_f64(f64::NAN); ndx];
    let dx_g = upload_bytes(&stream, &poison)?;
    let math = p.conv.effective_math_type(cfg.dtype);
    let ws_size = ctx.workspace_size_with(p, cfg.route, math)?.unwrap_or(0);
    let ws = cudnn_rs::context::alloc_bytes(&stream, ws_size.max(1))?;
    let ptr = |s: &CudaSlice<u8>| {
        let (p, _g) = cudarc::driver::DevicePtr::device_ptr(s, &stream);
        p
    };
    let ptrs = RawPointers {
        w: ptr(&w_g),
        dy: ptr(&dy_g),
        dx: ptr(&dx_g),
        workspace: (ptr(&ws), ws_size),
    };
    // SAFETY: every buffer was allocated above for its descriptor's byte size and lives
    // until the copy back below, which synchronises the stream.
    unsafe { ctx.probe_backward_data(1.0, p, cfg.route, ptrs, 0.0)? };
    let got_bytes = stream.clone_dtoh(&dx_g)?;
    stream.synchronize()?;
    let got_phys: Vec<T> = bytemuck::cast_slice::<u8, T>(&got_bytes).to_vec();
    let got = to_logical(&got_phys, &dx_shape, cfg.formats[2])?;
    let mut want = vec![T::round_from_f64(0.0); ndx];
    reference(
        &geo,
        Format::Nchw,
        Format::Nchw,
        Format::Nchw,
        1.0,
        &w_h,
        &dy_h,
        0.0,
        &mut want,
    )?;
    let scale = want
        .iter()
        .map(|v| v.widen_f64().abs())
        .fold(1e-30, f64::max);
    let mut err = 0.0f64;
    for (g, r) in got.iter().zip(&want) {
        let e = (g.widen_f64() - r.widen_f64()).abs();
        err = if e.is_nan() {
            f64::INFINITY
        } else {
            err.max(e)
        };
    }
    Ok(err / scale)
}

fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "bwd_data_support_measured.csv".into());
    let ctx = match CudnnContext::new(0) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no GPU: {e}");
            std::process::exit(2);
        }
    };
    let (ma, mi, pa) = ctx.version();
    println!("cuDNN {ma}.{mi}.{pa} from {}", ctx.library_origin());
    let mut rng = StdRng::seed_from_u64(
        std::env::var("CUDNN_RS_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2026),
    );
    let mut csv = String::from("cudnn,algo,filter_type,filter_format,dy_type,dy_format,comp_type,dx_type,dx_format,tensor_dims,conv_dims,in_table,shape,mode,status,max_rel_err\n");
    let mut summary = String::new();
    let fmts = [Format::Nchw, Format::Nhwc];
    let mut wrong = 0usize;
    let which = std::env::var("CUDNN_RS_SWEEP").unwrap_or_default();
    // "legacy": the six algorithms; "engine": the graph API's heuristic engine; "default":
    // the library's default choice; anything else: all of them.
    let routes: Vec<Route> = BwdDataAlgo::ALL
        .into_iter()
        .map(Route::Legacy)
        .filter(|_| !matches!(which.as_str(), "engine" | "default"))
        .chain(matches!(which.as_str(), "engine" | "").then_some(Route::Engine(None)))
        .chain(matches!(which.as_str(), "default" | "").then_some(Route::Default))
        .collect();
    for dims in [2usize, 3] {
        for (dtype, comps) in [
            (DType::F32, vec![DType::F32]),
            (DType::F64, vec![DType::F64]),
            (DType::F16, vec![DType::F32, DType::F16]),
            (DType::BF16, vec![DType::F32]),
        ] {
            for comp in comps {
                for &wf in &fmts {
                    for &yf in &fmts {
                        for &xf in &fmts {
                            for &route in &routes {
                                let cfg = Config {
                                    route,
                                    dtype,
                                    comp,
                                    formats: [wf, yf, xf],
                                    dims,
                                };
                                let row = cfg.row();
                                let algo = row.algo;
                                let in_table = is_supported(&row);
                                let (mut ok, mut refused, mut bad) = (0, 0, 0);
                                for shape in SHAPES {
                                    let mode = if rng.random_bool(0.5) {
                                        ConvolutionMode::CrossCorrelation
                                    } else {
                                        ConvolutionMode::Convolution
                                    };
                                    let res = match dtype {
                                        DType::F32 => {
                                            run_case::<f32>(&ctx, &cfg, shape, mode, &mut rng)
                                        }
                                        DType::F64 => {
                                            run_case::<f64>(&ctx, &cfg, shape, mode, &mut rng)
                                        }
                                        DType::F16 => {
                                            run_case::<f16>(&ctx, &cfg, shape, mode, &mut rng)
                                        }
                                        _ => run_case::<bf16>(&ctx, &cfg, shape, mode, &mut rng),
                                    };
                                    let (status, err) = match res {
                                        Ok(e) if e <= tolerance(dtype, comp) => {
                                            ok += 1;
                                            ("accepted", e)
                                        }
                                        Ok(e) => {
                                            bad += 1;
                                            ("wrong", e)
                                        }
                                        Err(Error::Cudnn { status, .. })
                                            if status.is_not_supported() =>
                                        {
                                            refused += 1;
                                            (status.name(), f64::NAN)
                                        }
                                        Err(Error::Cudnn { status, .. }) => {
                                            bad += 1;
                                            (status.name(), f64::NAN)
                                        }
                                        Err(e) => {
                                            bad += 1;
                                            eprintln!("{row} {}: {e}", shape.name);
                                            ("error", f64::NAN)
                                        }
                                    };
                                    let _ = writeln!(
                                        csv,
                                        "{ma}.{mi}.{pa},{},{},{},{},{},{},{},{},{},{},{in_table},{},{},{status},{err:e}",
                                        algo.name(), dtype, wf, dtype, yf, comp, dtype, xf, dims + 2, dims, shape.name, mode.name()
                                    );
                                }
                                if in_table || ok > 0 {
                                    let verdict = match (ok, refused, bad) {
                                        (_, _, b) if b > 0 => "WRONG/ERROR",
                                        (0, _, _) => "REFUSED-ALL",
                                        (_, 0, _) => "all shapes",
                                        _ => "some shapes",
                                    };
                                    if bad > 0 {
                                        wrong += 1;
                                    }
                                    let _ = writeln!(summary, "{:<12} {} | table: {:<5} | ok {ok:>2} refused {refused:>2} bad {bad:>2} | {verdict}", algo.name(), row, in_table);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    if let Err(e) = std::fs::write(&out, csv) {
        eprintln!("writing {out}: {e}");
    }
    println!("{summary}");
    println!("configurations with wrong results or errors: {wrong}");
}
