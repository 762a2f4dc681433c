// Fft has no f64 row.
use cudarc::driver::CudaSlice;
use cudnn_rs::*;

#[allow(dead_code)]
fn run(ctx: &CudnnContext) -> Result<()> {
    let conv = ConvolutionDescriptor::<f64, 2>::new([1, 1], [1, 1], [1, 1], 1, ConvolutionMode::CrossCorrelation, MathType::Default)?;
    let w: Filter<f64, NCHW, CudaSlice<f64>, 4> = unimplemented!();
    let dy: Tensor<f64, NCHW, CudaSlice<f64>, 4> = unimplemented!();
    let mut dx: Tensor<f64, NCHW, CudaSlice<f64>, 4> = unimplemented!();
    ctx.convolution_backward_data(1.0, &w, &dy, &conv, &Fft, None::<&mut CudaSlice<u8>>, 0.0, &mut dx)?;
    Ok(())
}

fn main() {}
