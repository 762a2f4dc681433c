// A vectorised int8 format cannot hold f32.
use cudarc::driver::CudaSlice;
use cudnn_rs::*;

#[allow(dead_code)]
fn run(ctx: &CudnnContext) -> Result<()> {
    let _t = Tensor::<f32, NCHWVectC8x4, CudaSlice<f32>, 4>::new(unimplemented!(), [1, 4, 2, 2], NCHWVectC8x4)?;
    Ok(())
}

fn main() {}
