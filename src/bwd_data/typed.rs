//! The original crate's generic API: the operands' element types, formats and ranks are
//! type parameters, and the support table's trait bound admits only the combinations
//! cuDNN runs. Each method builds the run-time problem and calls the untyped core.

use crate::context::CudnnContext;
use crate::convolution::{
    BestHeuristic, ConvolutionBwdDataAlgo, ConvolutionDescriptor, Engine, Filter, FilterDescriptor,
    SupportedConvBwdData,
};
use crate::data_type::DataType;
use crate::determinism::Determinism;
use crate::error::Result;
use crate::memory::{GpuBuffer, GpuBufferMut};
use crate::problem::{RawPointers, RawProblem};
use crate::tensor::{SupportedType, Tensor, TensorDescriptor};

impl CudnnContext {
    /// cuDNN's heuristic choice for the problem: the original
    /// `get_convolution_backward_data_algorithm`, but reading every result instead of one
    /// and never failing on skipped entries. Bound: `BestHeuristic` supports the
    /// configuration. [`Self::get_convolution_backward_data_algorithm_with_determinism`]
    /// asks for a deterministic one.
    pub fn get_convolution_backward_data_algorithm<
        T1,
        F1,
        T2,
        F2,
        CompType,
        T3,
        F3,
        const D: usize,
        const N: usize,
    >(
        &self,
        w_desc: &FilterDescriptor<T1, F1, D>,
        dy_desc: &TensorDescriptor<T2, F2, D>,
        dx_desc: &TensorDescriptor<T3, F3, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
    ) -> Result<BestHeuristic>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        BestHeuristic: SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
    {
        self.get_convolution_backward_data_algorithm_with_determinism(
            w_desc, dy_desc, dx_desc, conv_desc, None,
        )
    }

    /// [`Self::get_convolution_backward_data_algorithm`], with
    /// `Some(Determinism::Deterministic)` the first deterministic algorithm cuDNN ranks.
    pub fn get_convolution_backward_data_algorithm_with_determinism<
        T1,
        F1,
        T2,
        F2,
        CompType,
        T3,
        F3,
        const D: usize,
        const N: usize,
    >(
        &self,
        w_desc: &FilterDescriptor<T1, F1, D>,
        dy_desc: &TensorDescriptor<T2, F2, D>,
        dx_desc: &TensorDescriptor<T3, F3, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        determinism: Option<Determinism>,
    ) -> Result<BestHeuristic>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        BestHeuristic: SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
    {
        let p = RawProblem {
            w: w_desc.raw(),
            dy: dy_desc.raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        self.get_algorithm_raw(p, determinism == Some(Determinism::Deterministic))
    }

    /// Measures the algorithms on the given filter and `dy` (fastest first); `dx` is only
    /// described, a scratch buffer receives the trial results. Kept in the context's
    /// algorithm cache ([`Self::algorithm_cache`]): a repeated find measures nothing, and
    /// [`Self::save_algorithm_cache`] saves it.
    pub fn find_convolution_backward_data_algorithm<
        T1,
        F1,
        V1,
        T2,
        F2,
        V2,
        CompType,
        T3,
        F3,
        const D: usize,
        const N: usize,
    >(
        &self,
        w: &Filter<T1, F1, V1, D>,
        dy: &Tensor<T2, F2, V2, D>,
        dx_desc: &TensorDescriptor<T3, F3, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        max_workspace: Option<usize>,
        determinism: Option<Determinism>,
    ) -> Result<Vec<BestHeuristic>>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        V1: GpuBuffer<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        V2: GpuBuffer<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        BestHeuristic: SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
    {
        let p = RawProblem {
            w: w.descriptor().raw(),
            dy: dy.descriptor().raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        let (w_ptr, _gw) = w.data().device_ptr(&self.stream);
        let (dy_ptr, _gdy) = dy.data().device_ptr(&self.stream);
        let deterministic = determinism == Some(Determinism::Deterministic);
        // A repeated find is answered from the context's cache, which Python's finds
        // and `save_algorithm_cache` share.
        self.finds
            .algorithms(&p, max_workspace, deterministic, true, || {
                // SAFETY: `Filter`/`Tensor` checked that their memory holds the described
                // element counts; the guards keep it borrowed until the call returns.
                unsafe { self.find_algorithms_raw(p, w_ptr, dy_ptr, max_workspace, deterministic) }
            })
    }

    /// The graph-API heuristic's engine for the problem (what [`crate::BestEngine`] runs),
    /// optionally deterministic only. Not in the original crate.
    pub fn get_convolution_backward_data_engine<
        T1,
        F1,
        T2,
        F2,
        CompType,
        T3,
        F3,
        const D: usize,
        const N: usize,
    >(
        &self,
        w_desc: &FilterDescriptor<T1, F1, D>,
        dy_desc: &TensorDescriptor<T2, F2, D>,
        dx_desc: &TensorDescriptor<T3, F3, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        determinism: Option<Determinism>,
    ) -> Result<Engine>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        Engine: SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
    {
        let p = RawProblem {
            w: w_desc.raw(),
            dy: dy_desc.raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        self.get_engine_raw(p, determinism == Some(Determinism::Deterministic))
    }

    /// Autotunes the graph-API engines on the given filter and `dy`: up to `limit` engines,
    /// the heuristic's first, each timed, fastest first (see [`Self::find_engines_raw`]).
    /// Kept in the context's algorithm cache as the legacy find. Not in the original crate.
    #[allow(clippy::too_many_arguments)]
    pub fn find_convolution_backward_data_engine<
        T1,
        F1,
        V1,
        T2,
        F2,
        V2,
        CompType,
        T3,
        F3,
        const D: usize,
        const N: usize,
    >(
        &self,
        w: &Filter<T1, F1, V1, D>,
        dy: &Tensor<T2, F2, V2, D>,
        dx_desc: &TensorDescriptor<T3, F3, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        max_workspace: Option<usize>,
        determinism: Option<Determinism>,
        limit: usize,
    ) -> Result<Vec<Engine>>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        V1: GpuBuffer<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        V2: GpuBuffer<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        Engine: SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
    {
        let p = RawProblem {
            w: w.descriptor().raw(),
            dy: dy.descriptor().raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        let (w_ptr, _gw) = w.data().device_ptr(&self.stream);
        let (dy_ptr, _gdy) = dy.data().device_ptr(&self.stream);
        let deterministic = determinism == Some(Determinism::Deterministic);
        // Through the context's cache, as `find_convolution_backward_data_algorithm`.
        self.finds
            .engines(&p, max_workspace, deterministic, limit, None, true, || {
                // SAFETY: `Filter`/`Tensor` checked that their memory holds the described
                // element counts; the guards keep it borrowed until the call returns.
                unsafe {
                    self.find_engines_raw(
                        p,
                        w_ptr,
                        dy_ptr,
                        max_workspace,
                        deterministic,
                        limit,
                        None,
                    )
                }
            })
    }

    /// Workspace bytes `algo` needs; `None` when it needs none.
    pub fn get_convolution_backward_data_workspace_size<
        T1,
        F1,
        T2,
        F2,
        CompType,
        T3,
        F3,
        A,
        const D: usize,
        const N: usize,
    >(
        &self,
        w_desc: &FilterDescriptor<T1, F1, D>,
        dy_desc: &TensorDescriptor<T2, F2, D>,
        dx_desc: &TensorDescriptor<T3, F3, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        algo: &A,
    ) -> Result<Option<usize>>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        A: ConvolutionBwdDataAlgo + SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
    {
        let p = RawProblem {
            w: w_desc.raw(),
            dy: dy_desc.raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        self.workspace_size_selected(p, algo.selected())
    }

    /// `dx = alpha * dgrad(w, dy) + beta * dx`, as the original: a `None` workspace passes a
    /// null pointer and size 0. `alpha`/`beta` are handed to cuDNN in the scaling type it
    /// reads for `dx`'s data type (f64 for f64 data, f32 otherwise).
    pub fn convolution_backward_data<
        T1,
        F1,
        V1,
        T2,
        F2,
        V2,
        CompType,
        T3,
        F3,
        V3,
        A,
        W,
        const D: usize,
        const N: usize,
    >(
        &self,
        alpha: CompType,
        w: &Filter<T1, F1, V1, D>,
        dy: &Tensor<T2, F2, V2, D>,
        conv_desc: &ConvolutionDescriptor<CompType, N>,
        algo: &A,
        work_space: Option<&mut W>,
        beta: CompType,
        dx: &mut Tensor<T3, F3, V3, D>,
    ) -> Result<()>
    where
        T1: DataType,
        F1: SupportedType<T1>,
        V1: GpuBuffer<T1>,
        T2: DataType,
        F2: SupportedType<T2>,
        V2: GpuBuffer<T2>,
        CompType: DataType,
        T3: DataType,
        F3: SupportedType<T3>,
        V3: GpuBufferMut<T3>,
        A: ConvolutionBwdDataAlgo + SupportedConvBwdData<T1, F1, T2, F2, CompType, T3, F3, D, N>,
        W: GpuBufferMut<u8>,
    {
        let dx_desc = dx.descriptor().clone();
        let p = RawProblem {
            w: w.descriptor().raw(),
            dy: dy.descriptor().raw(),
            dx: dx_desc.raw(),
            conv: conv_desc.raw(),
        };
        let stream = &self.stream;
        let (w_ptr, _gw) = w.data().device_ptr(stream);
        let (dy_ptr, _gdy) = dy.data().device_ptr(stream);
        let (dx_ptr, _gdx) = dx.data_mut().device_ptr_mut(stream);
        let (ws, _gws) = match work_space {
            Some(ws) => {
                let len = ws.len();
                let (ptr, guard) = ws.device_ptr_mut(stream);
                ((ptr, len), Some(guard))
            }
            None => ((0, 0), None),
        };
        let ptrs = RawPointers {
            w: w_ptr,
            dy: dy_ptr,
            dx: dx_ptr,
            workspace: ws,
        };
        // SAFETY: the typed tensors checked their memory against their descriptors; `dx`
        // is borrowed mutably so it cannot alias `w` or `dy`; the guards keep every
        // buffer borrowed until the work is enqueued (cudarc orders later frees after it).
        unsafe { self.backward_data_raw(alpha.to_f64(), p, algo.selected(), ptrs, beta.to_f64()) }
    }
}
