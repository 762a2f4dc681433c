// The three context methods, `set_math_type` and `IntoResult` as the original crate spells
// them, in code whose errors are the original's `CudnnError` (`?` converts).
use cudarc::cudnn::sys::cudnnStatus_t;
use cudarc::driver::CudaSlice;
use cudnn_rs::*;

#[allow(dead_code)]
fn run(ctx: &CudnnContext) -> std::result::Result<(), CudnnError> {
    let mut conv = ConvolutionDescriptor::<f32, 2>::new([1, 1], [1, 1], [1, 1], 1, ConvolutionMode::CrossCorrelation, MathType::Default)?;
    conv.set_math_type(MathType::Fma)?;
    let w: Filter<f32, NCHW, CudaSlice<f32>, 4> = unimplemented!();
    let dy: Tensor<f32, NCHW, CudaSlice<f32>, 4> = unimplemented!();
    let mut dx: Tensor<f32, NCHW, CudaSlice<f32>, 4> = unimplemented!();
    let best = ctx.get_convolution_backward_data_algorithm(w.descriptor(), dy.descriptor(), dx.descriptor(), &conv)?;
    let size: Option<usize> = ctx.get_convolution_backward_data_workspace_size(w.descriptor(), dy.descriptor(), dx.descriptor(), &conv, &best)?;
    let _ = size;
    let mut ws: Option<CudaSlice<u8>> = None;
    ctx.convolution_backward_data(1.0, &w, &dy, &conv, &best, ws.as_mut(), 0.0, &mut dx)?;
    cudnnStatus_t::CUDNN_STATUS_SUCCESS.into_result()?;
    Ok(())
}

fn main() {}
