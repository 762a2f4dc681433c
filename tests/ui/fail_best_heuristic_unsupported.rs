// The heuristic is refused outside the table too: NHWC dy with an NCHW filter.
use cudarc::driver::CudaSlice;
use cudnn_rs::*;

#[allow(dead_code)]
fn run(ctx: &CudnnContext) -> Result<()> {
    let conv = ConvolutionDescriptor::<f32, 2>::new([1, 1], [1, 1], [1, 1], 1, ConvolutionMode::CrossCorrelation, MathType::Default)?;
    let w: Filter<f32, NCHW, CudaSlice<f32>, 4> = unimplemented!();
    let dy: Tensor<f32, NHWC, CudaSlice<f32>, 4> = unimplemented!();
    let dx: Tensor<f32, NHWC, CudaSlice<f32>, 4> = unimplemented!();
    let _best = ctx.get_convolution_backward_data_algorithm(w.descriptor(), dy.descriptor(), dx.descriptor(), &conv)?;
    Ok(())
}

fn main() {}
