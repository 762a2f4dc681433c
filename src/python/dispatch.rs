//! From Python's run-time data types, formats, ranks and algorithm to the generic Rust
//! instance of that support-table row. The arms are expanded from the table itself
//! (`with_bwd_data_support_table!`), so Python reaches exactly what the Rust types admit.

use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;

use super::descs::Descs;
use crate::bwd_data::support::{with_bwd_data_support_table, SupportConfig};
use crate::context::CudnnContext;
#[allow(unused_imports)] // the table may name any algorithm; not every one is listed now
use crate::convolution::{
    AlgoKind, BestEngine, BestHeuristic, ConvolutionBwdDataAlgo, ConvolutionDescriptor, DataAlgo0,
    DataAlgo1, DefaultAlgo, Engine, Fft, FftTiling, Filter, FilterDescriptor,
    RawConvolutionDescriptor, SelectedAlgo, SupportedConvBwdData, Winograd, WinogradNonFused,
};
use crate::data_type::DataType;
use crate::error::{Error, Result};
use crate::memory::BorrowedDeviceBuffer;
use crate::reference::RefElement;
use crate::tensor::{SupportedType, Tensor, TensorDescriptor, TensorFormat, NCHW, NHWC};
use half::{bf16, f16};

/// Device addresses of one GPU call.
pub(crate) struct GpuPtrs {
    pub w: CUdeviceptr,
    pub dy: CUdeviceptr,
    pub dx: CUdeviceptr,
    pub workspace: (CUdeviceptr, usize),
}

/// Host bytes of one CPU call.
pub(crate) struct HostBufs<'a> {
    pub w: &'a [u8],
    pub dy: &'a [u8],
    pub dx: &'a mut [u8],
}

fn gpu_typed<T1, F1, T2, F2, C, T3, F3, A, const D: usize, const N: usize>(
    ctx: &CudnnContext,
    algo: &A,
    alpha: f64,
    descs: &Descs<'_>,
    ptrs: &GpuPtrs,
    beta: f64,
) -> Result<()>
where
    T1: DataType,
    F1: SupportedType<T1>,
    T2: DataType,
    F2: SupportedType<T2>,
    C: DataType,
    T3: DataType,
    F3: SupportedType<T3>,
    A: ConvolutionBwdDataAlgo + SupportedConvBwdData<T1, F1, T2, F2, C, T3, F3, D, N>,
{
    let w_desc = FilterDescriptor::<T1, F1, D>::from_raw(Arc::clone(descs.w))?;
    let dy_desc = TensorDescriptor::<T2, F2, D>::from_raw(Arc::clone(descs.dy))?;
    let dx_desc = TensorDescriptor::<T3, F3, D>::from_raw(Arc::clone(descs.dx))?;
    let conv = ConvolutionDescriptor::<C, N>::from_raw(Arc::clone(descs.conv))?;
    // SAFETY: the Python layer holds the storages' locks (and with them the memory) for
    // the whole call; each address was allocated for the element count of its descriptor.
    let (w_buf, dy_buf, dx_buf, mut ws) = unsafe {
        (
            BorrowedDeviceBuffer::<T1>::new(ptrs.w, w_desc.len(), None)?,
            BorrowedDeviceBuffer::<T2>::new(ptrs.dy, dy_desc.len(), None)?,
            BorrowedDeviceBuffer::<T3>::new(ptrs.dx, dx_desc.len(), None)?,
            if ptrs.workspace.1 > 0 {
                Some(BorrowedDeviceBuffer::<u8>::new(
                    ptrs.workspace.0,
                    ptrs.workspace.1,
                    None,
                )?)
            } else {
                None
            },
        )
    };
    let w = Filter::with_descriptor(w_buf, w_desc)?;
    let dy = Tensor::with_descriptor(dy_buf, dy_desc)?;
    let mut dx = Tensor::with_descriptor(dx_buf, dx_desc)?;
    ctx.convolution_backward_data(
        C::from_f64(alpha),
        &w,
        &dy,
        &conv,
        algo,
        ws.as_mut(),
        C::from_f64(beta),
        &mut dx,
    )
}

fn cast<T: bytemuck::Pod>(bytes: &[u8], n: usize) -> Result<&[T]> {
    bytemuck::try_cast_slice::<u8, T>(bytes)
        .ok()
        .and_then(|s| s.get(..n))
        .ok_or_else(|| Error::Shape("host storage does not hold the described elements".into()))
}

fn cast_mut<T: bytemuck::Pod>(bytes: &mut [u8], n: usize) -> Result<&mut [T]> {
    bytemuck::try_cast_slice_mut::<u8, T>(bytes)
        .ok()
        .and_then(|s| s.get_mut(..n))
        .ok_or_else(|| Error::Shape("host storage does not hold the described elements".into()))
}

fn cpu_typed<T, F1, F2, C, F3, A, const D: usize, const N: usize>(
    algo: &A,
    alpha: f64,
    descs: &Descs<'_>,
    bufs: HostBufs<'_>,
    beta: f64,
) -> Result<()>
where
    T: DataType + RefElement + bytemuck::Pod,
    F1: SupportedType<T>,
    F2: SupportedType<T>,
    C: DataType,
    F3: SupportedType<T>,
    A: ConvolutionBwdDataAlgo + SupportedConvBwdData<T, F1, T, F2, C, T, F3, D, N>,
{
    let w_desc = FilterDescriptor::<T, F1, D>::from_raw(Arc::clone(descs.w))?;
    let dy_desc = TensorDescriptor::<T, F2, D>::from_raw(Arc::clone(descs.dy))?;
    let dx_desc = TensorDescriptor::<T, F3, D>::from_raw(Arc::clone(descs.dx))?;
    let conv = ConvolutionDescriptor::<C, N>::from_raw(Arc::clone(descs.conv))?;
    let w = Filter::with_descriptor(cast::<T>(bufs.w, w_desc.len())?, w_desc)?;
    let dy = Tensor::with_descriptor(cast::<T>(bufs.dy, dy_desc.len())?, dy_desc)?;
    let n = dx_desc.len();
    let mut dx = Tensor::with_descriptor(cast_mut::<T>(bufs.dx, n)?, dx_desc)?;
    crate::reference::device::convolution_backward_data(
        C::from_f64(alpha),
        &w,
        &dy,
        &conv,
        algo,
        C::from_f64(beta),
        &mut dx,
    )
}

/// Why no arm matched: a rank that does not fit the descriptor (a shape error), else the
/// support table's refusal with its nearest rows.
fn unsupported(descs: &Descs<'_>, kind: AlgoKind) -> Error {
    match descs.problem().validate(kind) {
        Err(e) => e,
        Ok(_) => Error::InvalidArgument(format!(
            "{} has no run-time dispatch arm (support table and dispatch disagree)",
            kind.name()
        )),
    }
}

macro_rules! config_of {
    ($wt:ident, $wf:ident, $yt:ident, $yf:ident, $ct:ident, $xt:ident, $xf:ident, $d:literal, $n:literal) => {
        SupportConfig {
            filter: (<$wt as DataType>::DTYPE, <$wf as TensorFormat>::FORMAT),
            dy: (<$yt as DataType>::DTYPE, <$yf as TensorFormat>::FORMAT),
            comp: <$ct as DataType>::DTYPE,
            dx: (<$xt as DataType>::DTYPE, <$xf as TensorFormat>::FORMAT),
            tensor_dims: $d,
            conv_dims: $n,
        }
    };
}

/// The value of a table column for a call: the record for heuristic and measured
/// results, the marker itself otherwise.
macro_rules! selected_value {
    (BestHeuristic, $sel:expr) => {
        match $sel {
            SelectedAlgo::Heuristic(best) => Some(*best),
            _ => None,
        }
    };
    (Engine, $sel:expr) => {
        match $sel {
            SelectedAlgo::Engine(engine) => Some(*engine),
            _ => None,
        }
    };
    ($marker:ident, $sel:expr) => {
        Some($marker)
    };
}

macro_rules! expand_dispatch {
    ($(
        [$wt:ident, $wf:ident], [$yt:ident, $yf:ident], $ct:ident, [$xt:ident, $xf:ident], $d:literal, $n:literal
        => [$($algo:ident),* $(,)?];
    )*) => {
        /// Runs the call on the GPU through the typed instance of its row.
        pub(crate) fn run_gpu(
            ctx: &CudnnContext,
            sel: &SelectedAlgo,
            alpha: f64,
            descs: &Descs<'_>,
            ptrs: &GpuPtrs,
            beta: f64,
        ) -> Result<()> {
            let config = descs.problem().row(sel.kind()).config();
            $(
                if config == config_of!($wt, $wf, $yt, $yf, $ct, $xt, $xf, $d, $n) {
                    $(
                        if sel.kind() == AlgoKind::$algo {
                            if let Some(algo) = selected_value!($algo, sel) {
                                return gpu_typed::<$wt, $wf, $yt, $yf, $ct, $xt, $xf, $algo, $d, $n>(
                                    ctx, &algo, alpha, descs, ptrs, beta,
                                );
                            }
                        }
                    )*
                }
            )*
            Err(unsupported(descs, sel.kind()))
        }

        /// Runs the call on the CPU device through the typed instance of its row.
        pub(crate) fn run_cpu(
            sel: &SelectedAlgo,
            alpha: f64,
            descs: &Descs<'_>,
            bufs: HostBufs<'_>,
            beta: f64,
        ) -> Result<()> {
            let config = descs.problem().row(sel.kind()).config();
            $(
                if config == config_of!($wt, $wf, $yt, $yf, $ct, $xt, $xf, $d, $n) {
                    $(
                        if sel.kind() == AlgoKind::$algo {
                            if let Some(algo) = selected_value!($algo, sel) {
                                return cpu_typed::<$wt, $wf, $yf, $ct, $xf, $algo, $d, $n>(
                                    &algo, alpha, descs, bufs, beta,
                                );
                            }
                        }
                    )*
                }
            )*
            Err(unsupported(descs, sel.kind()))
        }
    };
}

with_bwd_data_support_table!(expand_dispatch);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::RawDescriptor;

    #[test]
    fn every_table_row_has_a_dispatch_arm() {
        // A CPU call with mismatched shapes reaches the typed arm, which then reports the
        // shape error: an "no dispatch arm" error would mean table and dispatch disagree.
        for row in crate::bwd_data::support::support_rows() {
            let shape = |n: usize| vec![1usize; n];
            let w = Arc::new(
                RawDescriptor::new(
                    crate::tensor::Role::Filter,
                    row.filter.0,
                    row.filter.1,
                    &shape(row.tensor_dims),
                )
                .unwrap(),
            );
            let dy = Arc::new(
                RawDescriptor::new(
                    crate::tensor::Role::Tensor,
                    row.dy.0,
                    row.dy.1,
                    &shape(row.tensor_dims),
                )
                .unwrap(),
            );
            let dx = Arc::new(
                RawDescriptor::new(
                    crate::tensor::Role::Tensor,
                    row.dx.0,
                    row.dx.1,
                    &shape(row.tensor_dims),
                )
                .unwrap(),
            );
            let params = crate::convolution::ConvParams::new(
                &vec![0; row.conv_dims],
                &vec![1; row.conv_dims],
                &vec![1; row.conv_dims],
                1,
                crate::ConvolutionMode::CrossCorrelation,
            )
            .unwrap();
            let conv = Arc::new(
                RawConvolutionDescriptor::new(params, row.comp, crate::MathType::Default).unwrap(),
            );
            let descs = Descs {
                w: &w,
                dy: &dy,
                dx: &dx,
                conv: &conv,
            };
            let algo = row
                .algo
                .fixed()
                .unwrap_or(crate::convolution::BwdDataAlgo::Algo1);
            let sel = match row.algo {
                AlgoKind::Engine => SelectedAlgo::Engine(
                    crate::reference::device::engine_stand_in(&descs.problem()).unwrap(),
                ),
                AlgoKind::BestEngine => SelectedAlgo::BestEngine,
                AlgoKind::DefaultAlgo => SelectedAlgo::Default,
                AlgoKind::BestHeuristic => SelectedAlgo::Heuristic(BestHeuristic::new(
                    algo,
                    -1.0,
                    0,
                    crate::Determinism::Deterministic,
                    crate::MathType::Default,
                )),
                _ => SelectedAlgo::Fixed(algo),
            };
            let size = row.dx.0.size();
            let w_b = vec![0u8; size];
            let dy_b = vec![0u8; size];
            let mut dx_b = vec![0u8; size];
            let r = run_cpu(
                &sel,
                1.0,
                &descs,
                HostBufs {
                    w: &w_b,
                    dy: &dy_b,
                    dx: &mut dx_b,
                },
                0.0,
            );
            assert!(
                r.is_ok()
                    || !matches!(r, Err(Error::InvalidArgument(ref m)) if m.contains("dispatch")),
                "{row}: {r:?}"
            );
        }
    }
}
