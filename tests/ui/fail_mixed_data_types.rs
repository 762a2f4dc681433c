// An f32 filter with f64 gradients is no row.
use cudarc::driver::CudaSlice;
use cudnn_rs::*;

#[allow(dead_code)]
fn run(ctx: &CudnnContext) -> Result<()> {
    let conv = ConvolutionDescriptor::<f32, 2>::new([1, 1], [1, 1], [1, 1], 1, ConvolutionMode::CrossCorrelation, MathType::Default)?;
    let w: Filter<f32, NCHW, CudaSlice<f32>, 4> = unimplemented!();
    let dy: Tensor<f64, NCHW, CudaSlice<f64>, 4> = unimplemented!();
    let mut dx: Tensor<f64, NCHW, CudaSlice<f64>, 4> = unimplemented!();
    ctx.convolution_backward_data(1.0, &w, &dy, &conv, &DataAlgo0, None::<&mut CudaSlice<u8>>, 0.0, &mut dx)?;
    Ok(())
}

fn main() {}
