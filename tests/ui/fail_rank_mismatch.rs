// 4-d tensors with a 3-d convolution (D/N mismatch).
use cudarc::driver::CudaSlice;
use cudnn_rs::*;

#[allow(dead_code)]
fn run(ctx: &CudnnContext) -> Result<()> {
    let conv = ConvolutionDescriptor::<f32, 3>::new([1, 1, 1], [1, 1, 1], [1, 1, 1], 1, ConvolutionMode::CrossCorrelation, MathType::Default)?;
    let w: Filter<f32, NCHW, CudaSlice<f32>, 4> = unimplemented!();
    let dy: Tensor<f32, NCHW, CudaSlice<f32>, 4> = unimplemented!();
    let mut dx: Tensor<f32, NCHW, CudaSlice<f32>, 4> = unimplemented!();
    ctx.convolution_backward_data(1.0, &w, &dy, &conv, &DataAlgo0, None::<&mut CudaSlice<u8>>, 0.0, &mut dx)?;
    Ok(())
}

fn main() {}
