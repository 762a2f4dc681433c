//! Host time per backward-data call on a tiny problem (1x4x8x8, 3x3), split by layer:
//! the typed Rust API, the run-time core, and cuDNN's own entry point, so that the
//! Python binding's share can be told apart (bench/perf.py measures the Python side).
//!
//! Usage: `overhead [calls]` on the GPU machine (`CUDNN_RS_GRAPHS=0` times the calls
//! without CUDA-graph replay). The "400 dx in turn" loops hand over a result at an
//! address the replay has not seen lately, as a training loop does: each call runs
//! directly and makes a variant pack; with replay off and one dx, the execute alone.

use std::time::Instant;

use cudarc::driver::CudaSlice;
use cudnn_rs::{
    BestEngine, ConvolutionDescriptor, ConvolutionMode, CudnnContext, DataAlgo1, Filter, MathType,
    Tensor, NCHW,
};

fn main() -> Result<(), cudnn_rs::Error> {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let ctx = CudnnContext::new(0)?;
    let stream = ctx.stream().clone();
    let w = Filter::<f32, NCHW, _, 4>::new(stream.clone_htod(&[0.5f32; 144])?, [4, 4, 3, 3], NCHW)?;
    let dy =
        Tensor::<f32, NCHW, _, 4>::new(stream.clone_htod(&[1.0f32; 256])?, [1, 4, 8, 8], NCHW)?;
    let mut dx =
        Tensor::<f32, NCHW, _, 4>::new(stream.alloc_zeros::<f32>(256)?, [1, 4, 8, 8], NCHW)?;
    let conv = ConvolutionDescriptor::<f32, 2>::new(
        [1, 1],
        [1, 1],
        [1, 1],
        1,
        ConvolutionMode::CrossCorrelation,
        MathType::Default,
    )?;
    let size = ctx.get_convolution_backward_data_workspace_size(
        w.descriptor(),
        dy.descriptor(),
        dx.descriptor(),
        &conv,
        &DataAlgo1,
    )?;
    let mut ws: Option<CudaSlice<u8>> = match size {
        Some(n) => Some(stream.alloc_zeros::<u8>(n)?),
        None => None,
    };
    // Three numbers per call: the loop synchronised at the end (what bench/perf.py
    // reports), the GPU time per call between events around that loop, and the host time
    // to issue 256 calls into an idle stream (no waiting on a full launch queue).
    let time = |label: &str, f: &mut dyn FnMut() -> Result<(), cudnn_rs::Error>| {
        for _ in 0..200 {
            f()?;
        }
        stream.synchronize()?;
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let (start, end) = (
            stream.context().new_event(timing)?,
            stream.context().new_event(timing)?,
        );
        start.record(&stream)?;
        let t = Instant::now();
        for _ in 0..calls {
            f()?;
        }
        end.record(&stream)?;
        stream.synchronize()?;
        let us = t.elapsed().as_secs_f64() / calls as f64 * 1e6;
        let gpu_us = f64::from(start.elapsed_ms(&end)?) * 1e3 / calls as f64;
        let t = Instant::now();
        for _ in 0..256 {
            f()?;
        }
        let issue_us = t.elapsed().as_secs_f64() / 256.0 * 1e6;
        stream.synchronize()?;
        println!(
            "{label:<40} {us:8.2} us/call  (GPU {gpu_us:6.2} us/call, issue {issue_us:6.2} us/call)"
        );
        Ok::<(), cudnn_rs::Error>(())
    };
    time("typed convolution_backward_data", &mut || {
        ctx.convolution_backward_data(1.0, &w, &dy, &conv, &DataAlgo1, ws.as_mut(), 0.0, &mut dx)
    })?;
    let best = ctx.get_convolution_backward_data_algorithm(
        w.descriptor(),
        dy.descriptor(),
        dx.descriptor(),
        &conv,
    )?;
    let best_size = ctx.get_convolution_backward_data_workspace_size(
        w.descriptor(),
        dy.descriptor(),
        dx.descriptor(),
        &conv,
        &best,
    )?;
    let mut best_ws: Option<CudaSlice<u8>> = match best_size {
        Some(n) => Some(stream.alloc_zeros::<u8>(n)?),
        None => None,
    };
    time("typed, BestHeuristic", &mut || {
        ctx.convolution_backward_data(1.0, &w, &dy, &conv, &best, best_ws.as_mut(), 0.0, &mut dx)
    })?;
    let engine_size = ctx.get_convolution_backward_data_workspace_size(
        w.descriptor(),
        dy.descriptor(),
        dx.descriptor(),
        &conv,
        &BestEngine,
    )?;
    let mut engine_ws: Option<CudaSlice<u8>> = match engine_size {
        Some(n) => Some(stream.alloc_zeros::<u8>(n)?),
        None => None,
    };
    let engine = |ws: Option<&mut CudaSlice<u8>>, out: &mut Tensor<f32, NCHW, _, 4>| {
        ctx.convolution_backward_data(1.0, &w, &dy, &conv, &BestEngine, ws, 0.0, out)
    };
    time("typed, BestEngine (graph API)", &mut || {
        engine(engine_ws.as_mut(), &mut dx)
    })?;
    // A training loop hands over new memory every call: 400 results in turn, more than
    // the replay remembers (320), so each call runs directly and makes its variant pack.
    let mut fresh = Vec::with_capacity(400);
    for _ in 0..400 {
        fresh.push(Tensor::<f32, NCHW, _, 4>::new(
            stream.alloc_zeros::<f32>(256)?,
            [1, 4, 8, 8],
            NCHW,
        )?);
    }
    let mut turn = 0usize;
    time("typed, BestEngine, 400 dx in turn", &mut || {
        turn = (turn + 1) % fresh.len();
        engine(engine_ws.as_mut(), &mut fresh[turn])
    })?;
    time("typed, DataAlgo1, 400 dx in turn", &mut || {
        turn = (turn + 1) % fresh.len();
        let out = &mut fresh[turn];
        ctx.convolution_backward_data(1.0, &w, &dy, &conv, &DataAlgo1, ws.as_mut(), 0.0, out)
    })?;
    time("workspace-size query (cached)", &mut || {
        ctx.get_convolution_backward_data_workspace_size(
            w.descriptor(),
            dy.descriptor(),
            dx.descriptor(),
            &conv,
            &DataAlgo1,
        )
        .map(|_| ())
    })?;
    // The same calls issued to a non-blocking stream instead of the legacy default
    // stream (which synchronises implicitly with every other blocking stream).
    // SAFETY: from here on each buffer is used on one stream only, so cudarc's
    // cross-stream event tracking is not needed.
    unsafe { ctx.context().disable_event_tracking() };
    let side = ctx.context().new_stream()?;
    let ctx2 = CudnnContext::with_stream(side.clone())?;
    stream.synchronize()?;
    for (label, engine) in [
        ("non-blocking stream, DataAlgo1", false),
        ("non-blocking stream, BestEngine", true),
    ] {
        let mut run = || {
            if engine {
                ctx2.convolution_backward_data(
                    1.0,
                    &w,
                    &dy,
                    &conv,
                    &BestEngine,
                    engine_ws.as_mut(),
                    0.0,
                    &mut dx,
                )
            } else {
                ctx2.convolution_backward_data(
                    1.0,
                    &w,
                    &dy,
                    &conv,
                    &DataAlgo1,
                    ws.as_mut(),
                    0.0,
                    &mut dx,
                )
            }
        };
        for _ in 0..200 {
            run()?;
        }
        side.synchronize()?;
        let t = Instant::now();
        for _ in 0..calls {
            run()?;
        }
        side.synchronize()?;
        let us = t.elapsed().as_secs_f64() / calls as f64 * 1e6;
        println!("{label:<40} {us:8.2} us/call");
    }
    Ok(())
}
