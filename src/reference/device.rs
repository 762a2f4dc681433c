//! The CPU device: the same typed backward-data call as `CudnnContext`, over host memory,
//! bound by the same support table.

use crate::convolution::{
    BestHeuristic, ConvolutionBwdDataAlgo, ConvolutionDescriptor, Filter, SupportedConvBwdData,
};
use crate::data_type::DataType;
use crate::error::Result;
use crate::memory::{HostBuffer, HostBufferMut};
use crate::problem::RawProblem;
use crate::tensor::{SupportedType, Tensor};

use super::RefElement;

/// `dx = alpha * dgrad(w, dy) + beta * dx` on the host, with `CudnnContext`'s bounds: a
/// combination the support table does not list does not compile here either. Every
/// algorithm computes the same result on the CPU (the fast path, checked against the
/// direct-loop oracle).
pub fn convolution_backward_data<
    T,
    F1,
    V1,
    F2,
    V2,
    CompType,
    F3,
    V3,
    A,
    const D: usize,
    const N: usize,
>(
    alpha: CompType,
    w: &Filter<T, F1, V1, D>,
    dy: &Tensor<T, F2, V2, D>,
    conv_desc: &ConvolutionDescriptor<CompType, N>,
    algo: &A,
    beta: CompType,
    dx: &mut Tensor<T, F3, V3, D>,
) -> Result<()>
where
    T: DataType + RefElement,
    F1: SupportedType<T>,
    V1: HostBuffer<T>,
    F2: SupportedType<T>,
    V2: HostBuffer<T>,
    CompType: DataType,
    F3: SupportedType<T>,
    V3: HostBufferMut<T>,
    A: ConvolutionBwdDataAlgo + SupportedConvBwdData<T, F1, T, F2, CompType, T, F3, D, N>,
{
    let dx_desc = dx.descriptor().clone();
    let problem = RawProblem {
        w: w.descriptor().raw(),
        dy: dy.descriptor().raw(),
        dx: dx_desc.raw(),
        conv: conv_desc.raw(),
    };
    let geo = problem.validate(algo.kind())?;
    super::convolution_backward_data(
        &geo,
        F1::FORMAT,
        F2::FORMAT,
        F3::FORMAT,
        alpha.to_f64(),
        w.data().as_host_slice(),
        dy.data().as_host_slice(),
        beta.to_f64(),
        dx.data_mut().as_host_slice_mut(),
    )
}

/// What the CPU device answers to "which algorithm": the first one the table lists for
/// the configuration (all compute the same here), needing no workspace, deterministic.
pub fn heuristic(problem: &RawProblem<'_>) -> Result<BestHeuristic> {
    let line = crate::convolution::support::SUPPORT_LINES.iter().find(|l| {
        l.config
            == problem
                .row(crate::convolution::AlgoKind::BestHeuristic)
                .config()
    });
    problem.validate(crate::convolution::AlgoKind::BestHeuristic)?;
    let algo = line
        .and_then(|l| {
            l.algos
                .iter()
                .find(|a| **a == crate::convolution::AlgoKind::DataAlgo1)
                .or(l.algos.iter().find(|a| a.fixed().is_some()))
        })
        .and_then(|a| a.fixed())
        .unwrap_or(crate::convolution::BwdDataAlgo::Algo1);
    Ok(BestHeuristic::new(
        algo,
        -1.0,
        0,
        crate::determinism::Determinism::Deterministic,
        problem.conv.math_type(),
    ))
}

/// What the CPU device answers to "which graph-API engine": a stand-in, engine 0 with no
/// knobs, needing no workspace, deterministic and without tensor cores (the reference
/// computes exactly), for configurations the table lists `Engine` for.
pub fn engine_stand_in(problem: &RawProblem<'_>) -> Result<crate::convolution::Engine> {
    problem.validate(crate::convolution::AlgoKind::Engine)?;
    let config = crate::convolution::EngineConfig::new(0, &[]).ok_or_else(|| {
        crate::error::Error::InvalidArgument("engine 0 has no configuration".into())
    })?;
    Ok(crate::convolution::Engine::new(
        config,
        -1.0,
        0,
        crate::determinism::Determinism::Deterministic,
        crate::math_type::MathType::Fma,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convolution::{ConvolutionMode, DataAlgo0};
    use crate::math_type::MathType;
    use crate::tensor::NCHW;

    #[test]
    fn typed_cpu_call_matches_a_hand_computed_case() {
        // 1x1 filter of value 2, one channel: dgrad is dy * 2; alpha 0.5, beta 1 on dx = 1.
        let w = Filter::<f32, NCHW, Vec<f32>, 4>::new(vec![2.0], [1, 1, 1, 1], NCHW).unwrap();
        let dy =
            Tensor::<f32, NCHW, Vec<f32>, 4>::new(vec![1.0, 2.0, 3.0, 4.0], [1, 1, 2, 2], NCHW)
                .unwrap();
        let mut dx =
            Tensor::<f32, NCHW, Vec<f32>, 4>::new(vec![1.0; 4], [1, 1, 2, 2], NCHW).unwrap();
        let conv = ConvolutionDescriptor::<f32, 2>::new(
            [0, 0],
            [1, 1],
            [1, 1],
            1,
            ConvolutionMode::CrossCorrelation,
            MathType::Default,
        )
        .unwrap();
        convolution_backward_data(0.5, &w, &dy, &conv, &DataAlgo0, 1.0, &mut dx).unwrap();
        assert_eq!(dx.data(), &vec![2.0, 3.0, 4.0, 5.0]);

        let bad_dy =
            Tensor::<f32, NCHW, Vec<f32>, 4>::new(vec![1.0; 9], [1, 1, 3, 3], NCHW).unwrap();
        let before = dx.data().clone();
        assert!(
            convolution_backward_data(1.0, &w, &bad_dy, &conv, &DataAlgo0, 0.0, &mut dx).is_err()
        );
        assert_eq!(dx.data(), &before);
    }
}
