//! Lists every engine cuDNN's graph-API heuristic ranks for a few ResNet-50 layers, with
//! cuDNN's notes on each, whether this crate's filter admits it for the math type, and its
//! time: the evidence for the engine filter in `src/engine.rs`.
//!
//! Usage: `engine_report` on the GPU machine.

use std::sync::Arc;

use cudnn_rs::context::RawProblem;
use cudnn_rs::convolution::{ConvParams, RawConvolutionDescriptor};
use cudnn_rs::tensor::{RawDescriptor, Role};
use cudnn_rs::{ConvolutionMode, CudnnContext, DType, Error, Format, MathType};

fn main() -> Result<(), Error> {
    let ctx = CudnnContext::new(0)?;
    println!("cuDNN {:?} from {}", ctx.version(), ctx.library_origin());
    let stream = ctx.stream().clone();
    // (name, n, c, hw, k, r, stride, pad, dtype, format, math)
    let cases = [
        (
            "tiny 1x4x8x8 3x3 f32 NCHW",
            1,
            4,
            8,
            4,
            3,
            1,
            1,
            DType::F32,
            Format::Nchw,
            MathType::Default,
        ),
        (
            "r50_c3_3x3 f16 NHWC",
            32,
            128,
            28,
            128,
            3,
            1,
            1,
            DType::F16,
            Format::Nhwc,
            MathType::Default,
        ),
        (
            "r50_c3_3x3 bf16 NHWC",
            32,
            128,
            28,
            128,
            3,
            1,
            1,
            DType::BF16,
            Format::Nhwc,
            MathType::Default,
        ),
        (
            "r50_c2_3x3 f32 NCHW tf32",
            32,
            64,
            56,
            64,
            3,
            1,
            1,
            DType::F32,
            Format::Nchw,
            MathType::Default,
        ),
        (
            "r50_c4_3x3 f32 NHWC fma",
            32,
            256,
            14,
            256,
            3,
            1,
            1,
            DType::F32,
            Format::Nhwc,
            MathType::Fma,
        ),
        (
            "r50_1x1_up f32 NCHW fma",
            32,
            256,
            56,
            64,
            1,
            1,
            0,
            DType::F32,
            Format::Nchw,
            MathType::Fma,
        ),
        (
            "r50_s2_3x3 f32 NHWC fma",
            32,
            128,
            56,
            128,
            3,
            2,
            1,
            DType::F32,
            Format::Nhwc,
            MathType::Fma,
        ),
    ];
    let only = std::env::args().nth(1).unwrap_or_default();
    for (name, n, c, hw, k, r, stride, pad, dtype, format, math) in cases {
        if !name.contains(&only) {
            continue;
        }
        let params = ConvParams::new(
            &[pad; 2],
            &[stride; 2],
            &[1, 1],
            1,
            ConvolutionMode::CrossCorrelation,
        )?;
        let y = params.output_size(0, hw, r).unwrap_or(1);
        let w = Arc::new(RawDescriptor::new(
            Role::Filter,
            dtype,
            format,
            &[k, c, r, r],
        )?);
        let dy = Arc::new(RawDescriptor::new(
            Role::Tensor,
            dtype,
            format,
            &[n, k, y, y],
        )?);
        let dx = Arc::new(RawDescriptor::new(
            Role::Tensor,
            dtype,
            format,
            &[n, c, hw, hw],
        )?);
        let comp = if dtype == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        let conv = RawConvolutionDescriptor::new(params, comp, math)?;
        let p = RawProblem {
            w: &w,
            dy: &dy,
            dx: &dx,
            conv: &conv,
        };
        let w_mem = stream.alloc_zeros::<u8>(w.nbytes())?;
        let dy_mem = stream.alloc_zeros::<u8>(dy.nbytes())?;
        let (wp, _g1) = cudarc::driver::DevicePtr::device_ptr(&w_mem, &stream);
        let (dyp, _g2) = cudarc::driver::DevicePtr::device_ptr(&dy_mem, &stream);
        println!("== {name}");
        // SAFETY: both buffers were allocated above with their descriptors' sizes.
        match unsafe { ctx.engine_report(p, wp, dyp) } {
            Ok(lines) => lines.iter().for_each(|l| println!("  {l}")),
            Err(e) => println!("  error: {e}"),
        }
    }
    Ok(())
}
