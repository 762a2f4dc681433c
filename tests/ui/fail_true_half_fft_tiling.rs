// True half (f16 compute) is not admitted for FftTiling (cuDNN 9 refuses it).
use cudarc::driver::CudaSlice;
use cudnn_rs::*;

#[allow(dead_code)]
fn run(ctx: &CudnnContext) -> Result<()> {
    let conv = ConvolutionDescriptor::<half::f16, 2>::new([1, 1], [1, 1], [1, 1], 1, ConvolutionMode::CrossCorrelation, MathType::Default)?;
    let w: Filter<half::f16, NCHW, CudaSlice<half::f16>, 4> = unimplemented!();
    let dy: Tensor<half::f16, NCHW, CudaSlice<half::f16>, 4> = unimplemented!();
    let mut dx: Tensor<half::f16, NCHW, CudaSlice<half::f16>, 4> = unimplemented!();
    ctx.convolution_backward_data(half::f16::ONE, &w, &dy, &conv, &FftTiling, None::<&mut CudaSlice<u8>>, half::f16::ZERO, &mut dx)?;
    Ok(())
}

fn main() {}
