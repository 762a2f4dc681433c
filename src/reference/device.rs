//! The CPU device: the same typed backward-data call as `CudnnContext`, over host memory,
//! bound by the same support table.

use crate::convolution::BwdDataGeometry;
use crate::convolution::{
    BestHeuristic, ConvolutionBwdDataAlgo, ConvolutionDescriptor, Filter, SupportedConvBwdData,
};
use crate::data_type::{DType, DataType};
use crate::error::{Error, Result};
use crate::memory::{HostBuffer, HostBufferMut};
use crate::problem::RawProblem;
use crate::tensor::{SupportedType, Tensor};

use half::{bf16, f16};

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

/// The CPU device's call on raw host bytes, for a problem the caller validated
/// ([`RawProblem::validate`], which returned `geo`): the table is not consulted again.
/// Every table row has one data type for all operands, and every algorithm computes the
/// same result here, so the element type of `dx` picks the instance.
pub fn backward_data_bytes(
    geo: &BwdDataGeometry,
    problem: &RawProblem<'_>,
    alpha: f64,
    w: &[u8],
    dy: &[u8],
    beta: f64,
    dx: &mut [u8],
) -> Result<()> {
    fn typed<T: RefElement + bytemuck::Pod>(
        geo: &BwdDataGeometry,
        p: &RawProblem<'_>,
        alpha: f64,
        (w, dy, dx): (&[u8], &[u8], &mut [u8]),
        beta: f64,
    ) -> Result<()> {
        let w = elements::<T>(w, p.w.len())?;
        let dy = elements::<T>(dy, p.dy.len())?;
        let dx = bytemuck::try_cast_slice_mut::<u8, T>(dx)
            .ok()
            .and_then(|s| s.get_mut(..p.dx.len()))
            .ok_or_else(too_short)?;
        super::convolution_backward_data(
            geo,
            p.w.format(),
            p.dy.format(),
            p.dx.format(),
            alpha,
            w,
            dy,
            beta,
            dx,
        )
    }
    let dtypes = [problem.w.dtype(), problem.dy.dtype(), problem.dx.dtype()];
    let bufs = (w, dy, dx);
    match dtypes {
        [DType::F32, DType::F32, DType::F32] => typed::<f32>(geo, problem, alpha, bufs, beta),
        [DType::F64, DType::F64, DType::F64] => typed::<f64>(geo, problem, alpha, bufs, beta),
        [DType::F16, DType::F16, DType::F16] => typed::<f16>(geo, problem, alpha, bufs, beta),
        [DType::BF16, DType::BF16, DType::BF16] => typed::<bf16>(geo, problem, alpha, bufs, beta),
        other => Err(Error::InvalidArgument(format!(
            "the CPU device computes with one floating-point type for all operands, got {other:?}"
        ))),
    }
}

fn too_short() -> Error {
    Error::Shape("host storage does not hold the described elements".into())
}

fn elements<T: bytemuck::Pod>(bytes: &[u8], n: usize) -> Result<&[T]> {
    bytemuck::try_cast_slice::<u8, T>(bytes)
        .ok()
        .and_then(|s| s.get(..n))
        .ok_or_else(too_short)
}

/// The legacy algorithms the CPU device offers for the problem (what a find lists), in
/// the table's order: those the support table lists for its configuration (all compute
/// the same here) or, with `deterministic`, those of them cuDNN reports deterministic
/// (`DataAlgo0`, with atomics, is not); a `NOT_SUPPORTED` cuDNN error where that leaves
/// none, as a GPU answers.
pub fn algorithms(
    problem: &RawProblem<'_>,
    deterministic: bool,
) -> Result<Vec<crate::convolution::BwdDataAlgo>> {
    use crate::convolution::AlgoKind;
    problem.validate(AlgoKind::BestHeuristic)?;
    let row = problem.row(AlgoKind::BestHeuristic);
    let listed: Vec<_> = crate::bwd_data::support::SUPPORT_LINES
        .iter()
        .find(|l| l.config == row.config())
        .into_iter()
        .flat_map(|l| l.algos.iter().filter_map(|a| a.fixed()))
        .collect();
    let kept: Vec<_> = listed
        .iter()
        .copied()
        .filter(|a| !deterministic || a.determinism() == crate::Determinism::Deterministic)
        .collect();
    if !kept.is_empty() {
        return Ok(kept);
    }
    Err(if listed.is_empty() {
        Error::Unsupported(crate::error::UnsupportedConfiguration {
            requested: row.to_string(),
            nearest: vec![],
        })
    } else {
        Error::cudnn(
            crate::error::CudnnError::NotSupported,
            format!(
                "the CPU device offers no deterministic algorithm in the support table for {}",
                problem.describe()
            ),
        )
    })
}

/// What the CPU device answers to "which algorithm": `DataAlgo1` where the table lists
/// it for the configuration, else the first of [`algorithms`] (all compute the same
/// here), needing no workspace, with the determinism cuDNN reports for it.
pub fn heuristic(problem: &RawProblem<'_>, deterministic: bool) -> Result<BestHeuristic> {
    let algos = algorithms(problem, deterministic)?;
    let algo = algos
        .iter()
        .copied()
        .find(|a| *a == crate::convolution::BwdDataAlgo::Algo1)
        .or(algos.first().copied())
        .unwrap_or(crate::convolution::BwdDataAlgo::Algo1);
    Ok(BestHeuristic::new(
        algo,
        -1.0,
        0,
        algo.determinism(),
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

    #[test]
    fn the_byte_level_call_matches_the_typed_one() {
        let w = Filter::<f32, NCHW, Vec<f32>, 4>::new(vec![2.0], [1, 1, 1, 1], NCHW).unwrap();
        let dy =
            Tensor::<f32, NCHW, Vec<f32>, 4>::new(vec![1.0, 2.0, 3.0, 4.0], [1, 1, 2, 2], NCHW)
                .unwrap();
        let conv = ConvolutionDescriptor::<f32, 2>::new(
            [0, 0],
            [1, 1],
            [1, 1],
            1,
            ConvolutionMode::CrossCorrelation,
            MathType::Default,
        )
        .unwrap();
        let mut typed =
            Tensor::<f32, NCHW, Vec<f32>, 4>::new(vec![1.0; 4], [1, 1, 2, 2], NCHW).unwrap();
        convolution_backward_data(0.5, &w, &dy, &conv, &DataAlgo0, 1.0, &mut typed).unwrap();
        let dx_desc = typed.descriptor().clone();
        let p = RawProblem {
            w: w.descriptor().raw(),
            dy: dy.descriptor().raw(),
            dx: dx_desc.raw(),
            conv: conv.raw(),
        };
        let geo = p.validate(crate::convolution::AlgoKind::DataAlgo0).unwrap();
        let mut dx = vec![1.0f32; 4];
        backward_data_bytes(
            &geo,
            &p,
            0.5,
            bytemuck::cast_slice(w.data()),
            bytemuck::cast_slice(dy.data()),
            1.0,
            bytemuck::cast_slice_mut(&mut dx),
        )
        .unwrap();
        assert_eq!(&dx, typed.data());
        // Too few bytes for dx: an error, not a panic.
        let mut short = vec![0u8; 8];
        let r = backward_data_bytes(
            &geo,
            &p,
            1.0,
            bytemuck::cast_slice(w.data()),
            bytemuck::cast_slice(dy.data()),
            0.0,
            &mut short,
        );
        assert!(r.is_err());
    }
}
