//! Times the CPU reference's fast path on backward-data layers of ResNet-50 (batch 4,
//! f32, NCHW) and prints one JSON object per layer, which `bench/cpu_vs_torch.py` reads
//! to run PyTorch on the same shapes.
//!
//! Usage: `RAYON_NUM_THREADS=16 cargo run --release --example cpu_bench -- [--runs N]
//! [--warmup N] [--batch N]`.

use std::time::Instant;

use cudnn_rs::convolution::geometry::{BwdDataGeometry, ConvParams};
use cudnn_rs::convolution::ConvolutionMode;
use cudnn_rs::reference::convolution_backward_data;
use cudnn_rs::tensor::Format;

/// A forward convolution `x (n, c, h, w) -> y` with a square `kernel`.
struct Layer {
    name: &'static str,
    in_channels: usize,
    out_channels: usize,
    size: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
}

const LAYERS: &[Layer] = &[
    Layer {
        name: "conv2_3x3",
        in_channels: 64,
        out_channels: 64,
        size: 56,
        kernel: 3,
        stride: 1,
        padding: 1,
    },
    Layer {
        name: "conv3_3x3",
        in_channels: 128,
        out_channels: 128,
        size: 28,
        kernel: 3,
        stride: 1,
        padding: 1,
    },
    Layer {
        name: "conv4_3x3",
        in_channels: 256,
        out_channels: 256,
        size: 14,
        kernel: 3,
        stride: 1,
        padding: 1,
    },
    Layer {
        name: "conv2_1x1_reduce",
        in_channels: 256,
        out_channels: 64,
        size: 56,
        kernel: 1,
        stride: 1,
        padding: 0,
    },
    Layer {
        name: "conv2_1x1_expand",
        in_channels: 64,
        out_channels: 256,
        size: 56,
        kernel: 1,
        stride: 1,
        padding: 0,
    },
    Layer {
        name: "conv3_3x3_s2",
        in_channels: 128,
        out_channels: 128,
        size: 56,
        kernel: 3,
        stride: 2,
        padding: 1,
    },
    Layer {
        name: "conv3_1x1_s2_down",
        in_channels: 256,
        out_channels: 512,
        size: 56,
        kernel: 1,
        stride: 2,
        padding: 0,
    },
];

struct Options {
    runs: usize,
    warmup: usize,
    batch: usize,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        runs: 10,
        warmup: 2,
        batch: 4,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .parse::<usize>()
            .map_err(|e| format!("{flag}: {e}"))?;
        match flag.as_str() {
            "--runs" => options.runs = value.max(1),
            "--warmup" => options.warmup = value,
            "--batch" => options.batch = value.max(1),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

/// Deterministic values in [-1, 1): the timing does not depend on them, only on the
/// absence of denormals and NaN.
fn values(len: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(2_654_435_761).max(1);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

fn bench(layer: &Layer, options: &Options) -> Result<String, String> {
    let params = ConvParams::new(
        &[layer.padding as i64; 2],
        &[layer.stride as i64; 2],
        &[1, 1],
        1,
        ConvolutionMode::CrossCorrelation,
    )
    .map_err(|e| e.to_string())?;
    let out = params
        .output_size(0, layer.size, layer.kernel)
        .ok_or("kernel does not fit")?;
    let (n, c, k, r) = (
        options.batch,
        layer.in_channels,
        layer.out_channels,
        layer.kernel,
    );
    let w_shape = [k, c, r, r];
    let dy_shape = [n, k, out, out];
    let dx_shape = [n, c, layer.size, layer.size];
    let geo =
        BwdDataGeometry::new(&w_shape, &dy_shape, &dx_shape, &params).map_err(|e| e.to_string())?;
    let (w_len, dy_len, dx_len) = geo.element_counts();
    let w = values(w_len, 1);
    let dy = values(dy_len, 2);
    let mut dx = vec![0.0f32; dx_len];
    let mut run = || {
        let start = Instant::now();
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
        .map_err(|e| e.to_string())?;
        Ok::<f64, String>(start.elapsed().as_secs_f64() * 1e3)
    };
    for _ in 0..options.warmup {
        run()?;
    }
    let mut times = (0..options.runs)
        .map(|_| run())
        .collect::<Result<Vec<f64>, String>>()?;
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let dims = |s: &[usize]| {
        s.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("x")
    };
    let flops = 2.0 * (n * k * out * out * c * r * r) as f64;
    Ok(format!(
        concat!(
            "{{\"name\": \"{}\", \"shape\": \"w {} dy {} dx {}\", \"batch\": {}, ",
            "\"in_channels\": {}, \"out_channels\": {}, \"size\": {}, \"kernel\": {}, ",
            "\"stride\": {}, \"padding\": {}, \"dtype\": \"f32\", \"threads\": {}, ",
            "\"runs\": {}, \"ms\": {:.3}, \"min_ms\": {:.3}, \"gflops\": {:.1}}}"
        ),
        layer.name,
        dims(&w_shape),
        dims(&dy_shape),
        dims(&dx_shape),
        n,
        c,
        k,
        layer.size,
        r,
        layer.stride,
        layer.padding,
        rayon::current_num_threads(),
        options.runs,
        median,
        times[0],
        flops / median / 1e6,
    ))
}

fn main() -> std::process::ExitCode {
    let options = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("cpu_bench: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    for layer in LAYERS {
        match bench(layer, &options) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("cpu_bench: {}: {e}", layer.name);
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
