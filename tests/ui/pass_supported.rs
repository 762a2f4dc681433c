// Rows of the table compile: f32 NCHW DataAlgo0, bf16 NHWC DataAlgo1, 3-d f64 FftTiling, f16 true-half NCHW, BestHeuristic on NHWC.
use cudarc::driver::CudaSlice;
use cudnn_rs::*;

#[allow(dead_code)]
fn run(ctx: &CudnnContext) -> Result<()> {
    let conv2 = ConvolutionDescriptor::<f32, 2>::new([1, 1], [1, 1], [1, 1], 1, ConvolutionMode::CrossCorrelation, MathType::Default)?;
    let w: Filter<f32, NCHW, CudaSlice<f32>, 4> = unimplemented!();
    let dy: Tensor<f32, NCHW, CudaSlice<f32>, 4> = unimplemented!();
    let mut dx: Tensor<f32, NCHW, CudaSlice<f32>, 4> = unimplemented!();
    ctx.convolution_backward_data(1.0, &w, &dy, &conv2, &DataAlgo0, None::<&mut CudaSlice<u8>>, 0.0, &mut dx)?;

    let wb: Filter<half::bf16, NHWC, CudaSlice<half::bf16>, 4> = unimplemented!();
    let dyb: Tensor<half::bf16, NHWC, CudaSlice<half::bf16>, 4> = unimplemented!();
    let mut dxb: Tensor<half::bf16, NHWC, CudaSlice<half::bf16>, 4> = unimplemented!();
    ctx.convolution_backward_data(1.0, &wb, &dyb, &conv2, &DataAlgo1, None::<&mut CudaSlice<u8>>, 0.0, &mut dxb)?;
    let best = ctx.get_convolution_backward_data_algorithm(wb.descriptor(), dyb.descriptor(), dxb.descriptor(), &conv2)?;
    ctx.convolution_backward_data(1.0, &wb, &dyb, &conv2, &best, None::<&mut CudaSlice<u8>>, 0.0, &mut dxb)?;

    let conv3 = ConvolutionDescriptor::<f64, 3>::new([0; 3], [1; 3], [1; 3], 1, ConvolutionMode::Convolution, MathType::Default)?;
    let w3: Filter<f64, NCHW, CudaSlice<f64>, 5> = unimplemented!();
    let dy3: Tensor<f64, NCHW, CudaSlice<f64>, 5> = unimplemented!();
    let mut dx3: Tensor<f64, NCHW, CudaSlice<f64>, 5> = unimplemented!();
    ctx.convolution_backward_data(1.0, &w3, &dy3, &conv3, &FftTiling, None::<&mut CudaSlice<u8>>, 0.0, &mut dx3)?;

    let convh = ConvolutionDescriptor::<half::f16, 2>::new([1, 1], [1, 1], [1, 1], 1, ConvolutionMode::CrossCorrelation, MathType::TensorOp)?;
    let wh: Filter<half::f16, NCHW, CudaSlice<half::f16>, 4> = unimplemented!();
    let dyh: Tensor<half::f16, NCHW, CudaSlice<half::f16>, 4> = unimplemented!();
    let mut dxh: Tensor<half::f16, NCHW, CudaSlice<half::f16>, 4> = unimplemented!();
    ctx.convolution_backward_data(half::f16::ONE, &wh, &dyh, &convh, &WinogradNonFused, None::<&mut CudaSlice<u8>>, half::f16::ZERO, &mut dxh)?;
    Ok(())
}

fn main() {}
