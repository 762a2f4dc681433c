// NCHWVectC8x32 holds i8 only, not u8.
use cudarc::driver::CudaSlice;
use cudnn_rs::*;

#[allow(dead_code)]
fn run(ctx: &CudnnContext) -> Result<()> {
    let _t = TensorDescriptor::<u8, NCHWVectC8x32, 4>::new([1, 32, 2, 2], NCHWVectC8x32)?;
    Ok(())
}

fn main() {}
