//! The cuDNN entry points this crate calls, resolved from a library that `library.rs`
//! located and opened. This is the only place raw cuDNN symbols are looked up.
//!
//! Why not cudarc's `cudnn::sys`: in cudarc 0.19 its loader only tries fixed names and
//! panics when none loads, and it cannot be pointed at a path (the pip wheel's
//! `libcudnn.so.9`). Its enum types are still used for the values we pass in; values
//! cuDNN writes back (statuses, algorithms in perf results) are read as plain integers,
//! since cuDNN 9 may return codes a Rust enum does not list.

use std::ffi::{c_char, c_int, c_void};

/// Opaque cuDNN handle.
pub type CudnnHandle = *mut c_void;
/// Opaque tensor descriptor.
pub type TensorDesc = *mut c_void;
/// Opaque filter descriptor.
pub type FilterDesc = *mut c_void;
/// Opaque convolution descriptor.
pub type ConvDesc = *mut c_void;
/// `cudaStream_t` / `CUstream`.
pub type Stream = *mut c_void;
/// `cudnnStatus_t`, read as an integer.
pub type Status = u32;
/// Opaque graph (backend) API descriptor, `cudnnBackendDescriptor_t`.
pub type BackendDesc = *mut c_void;

/// `cudnnConvolutionBwdDataAlgoPerf_t` with every enum field read as an integer.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct BwdDataAlgoPerf {
    pub algo: u32,
    pub status: u32,
    pub time: f32,
    pub memory: usize,
    pub determinism: u32,
    pub math_type: u32,
    pub reserved: [c_int; 3],
}

macro_rules! cudnn_api {
    ($($name:ident: fn($($arg:ty),* $(,)?) $(-> $ret:ty)?;)*) => {
        /// Function pointers into one loaded cuDNN.
        #[allow(non_snake_case)]
        pub struct CudnnApi {
            $(pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl CudnnApi {
            /// Resolves every symbol; the first missing one is the error.
            ///
            /// # Safety
            /// `lib` must be a cuDNN library whose exported symbols of these names have
            /// these C signatures (cuDNN 8.x/9.x do), and must outlive the returned table.
            pub unsafe fn load(lib: &libloading::Library) -> Result<Self, String> {
                Ok(Self {$(
                    // SAFETY: the caller guarantees the symbol has this signature; the
                    // pointer is copied out and stays valid while `lib` is loaded.
                    $name: unsafe {
                        *lib.get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                            concat!(stringify!($name), "\0").as_bytes(),
                        )
                        .map_err(|e| format!("missing symbol {}: {e}", stringify!($name)))?
                    },
                )*})
            }
        }
    };
}

cudnn_api! {
    cudnnGetVersion: fn() -> usize;
    cudnnGetCudartVersion: fn() -> usize;
    cudnnGetErrorString: fn(Status) -> *const c_char;
    cudnnCreate: fn(*mut CudnnHandle) -> Status;
    cudnnDestroy: fn(CudnnHandle) -> Status;
    cudnnSetStream: fn(CudnnHandle, Stream) -> Status;
    cudnnCreateTensorDescriptor: fn(*mut TensorDesc) -> Status;
    cudnnSetTensorNdDescriptorEx: fn(TensorDesc, u32, u32, c_int, *const c_int) -> Status;
    cudnnDestroyTensorDescriptor: fn(TensorDesc) -> Status;
    cudnnCreateFilterDescriptor: fn(*mut FilterDesc) -> Status;
    cudnnSetFilterNdDescriptor: fn(FilterDesc, u32, u32, c_int, *const c_int) -> Status;
    cudnnDestroyFilterDescriptor: fn(FilterDesc) -> Status;
    cudnnCreateConvolutionDescriptor: fn(*mut ConvDesc) -> Status;
    cudnnSetConvolutionNdDescriptor: fn(ConvDesc, c_int, *const c_int, *const c_int, *const c_int, u32, u32) -> Status;
    cudnnSetConvolutionGroupCount: fn(ConvDesc, c_int) -> Status;
    cudnnSetConvolutionMathType: fn(ConvDesc, u32) -> Status;
    cudnnDestroyConvolutionDescriptor: fn(ConvDesc) -> Status;
    cudnnGetConvolutionBackwardDataAlgorithmMaxCount: fn(CudnnHandle, *mut c_int) -> Status;
    cudnnGetConvolutionBackwardDataAlgorithm_v7: fn(
        CudnnHandle, FilterDesc, TensorDesc, ConvDesc, TensorDesc, c_int, *mut c_int, *mut BwdDataAlgoPerf,
    ) -> Status;
    cudnnFindConvolutionBackwardDataAlgorithmEx: fn(
        CudnnHandle, FilterDesc, *const c_void, TensorDesc, *const c_void, ConvDesc, TensorDesc, *mut c_void,
        c_int, *mut c_int, *mut BwdDataAlgoPerf, *mut c_void, usize,
    ) -> Status;
    cudnnGetConvolutionBackwardDataWorkspaceSize: fn(
        CudnnHandle, FilterDesc, TensorDesc, ConvDesc, TensorDesc, u32, *mut usize,
    ) -> Status;
    cudnnTransformTensor: fn(
        CudnnHandle, *const c_void, TensorDesc, *const c_void, *const c_void, TensorDesc, *mut c_void,
    ) -> Status;
    cudnnConvolutionBackwardData: fn(
        CudnnHandle, *const c_void, FilterDesc, *const c_void, TensorDesc, *const c_void, ConvDesc, u32,
        *mut c_void, usize, *const c_void, TensorDesc, *mut c_void,
    ) -> Status;
    // The graph (backend) API; enum arguments as their integer values.
    cudnnBackendCreateDescriptor: fn(u32, *mut BackendDesc) -> Status;
    cudnnBackendDestroyDescriptor: fn(BackendDesc) -> Status;
    cudnnBackendFinalize: fn(BackendDesc) -> Status;
    cudnnBackendSetAttribute: fn(BackendDesc, u32, u32, i64, *const c_void) -> Status;
    cudnnBackendGetAttribute: fn(BackendDesc, u32, u32, i64, *mut i64, *mut c_void) -> Status;
    cudnnBackendExecute: fn(CudnnHandle, BackendDesc, BackendDesc) -> Status;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_struct_matches_cudnn_layout() {
        // cudnnConvolutionBwdDataAlgoPerf_t: 3 enums, float, size_t, 2 enums, int[3].
        assert_eq!(
            std::mem::size_of::<BwdDataAlgoPerf>(),
            std::mem::size_of::<cudarc::cudnn::sys::cudnnConvolutionBwdDataAlgoPerfStruct>()
        );
        assert_eq!(std::mem::offset_of!(BwdDataAlgoPerf, memory), 16);
    }
}
