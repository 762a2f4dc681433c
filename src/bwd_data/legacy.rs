//! The legacy API, `cudnnConvolutionBackwardData` and its heuristic, find and workspace
//! query: one checked call per C function, with the support table applied to what cuDNN
//! answers.

use std::ffi::{c_int, c_void};

use cudarc::driver::{sys::CUdeviceptr, CudaSlice};

use super::support;
use crate::context::{alloc_bytes, CudnnContext};
use crate::convolution::{BestHeuristic, BwdDataAlgo, Route};
use crate::data_type::Scaling;
use crate::determinism::Determinism;
use crate::error::{CudnnError, Error, Result};
use crate::math_type::MathType;
use crate::memory::GpuBufferMut;
use crate::problem::{ProblemKey, RawPointers, RawProblem};
use crate::raw_descriptor::check;
use crate::sys::BwdDataAlgoPerf;

impl CudnnContext {
    /// cuDNN's heuristic: every entry it returns is read; entries that failed, that the
    /// support table does not list for this configuration, or (with
    /// `deterministic_only`) that are not deterministic are skipped; the first left wins.
    /// Asked once per problem: the answer is kept (the heuristic times nothing).
    pub fn get_algorithm_raw(
        &self,
        p: RawProblem<'_>,
        deterministic_only: bool,
    ) -> Result<BestHeuristic> {
        p.validate(crate::convolution::AlgoKind::BestHeuristic)?;
        let math = p.conv.effective_math_type(p.dx.dtype());
        // (The route part of the key is the same for every entry of this cache.)
        let key = (
            ProblemKey::new(&p, Route::Default, math),
            deterministic_only,
        );
        if let Some(best) = self.heuristics.borrow_mut().get(&key) {
            return Ok(*best);
        }
        let best = self.ask_heuristic(&p, math, deterministic_only)?;
        self.heuristics.borrow_mut().insert(key, best);
        Ok(best)
    }

    /// [`Self::get_algorithm_raw`], asking cuDNN.
    fn ask_heuristic(
        &self,
        p: &RawProblem<'_>,
        math: MathType,
        deterministic_only: bool,
    ) -> Result<BestHeuristic> {
        self.bind()?;
        let api = &self.lib.api;
        let (w, dy, dx, conv) = (p.w.raw()?, p.dy.raw()?, p.dx.raw()?, p.conv.raw_with(math)?);
        let mut perfs = [BwdDataAlgoPerf::default(); 8];
        let mut returned: c_int = 0;
        // SAFETY: descriptors are live; `perfs` has room for the 8 entries requested.
        let status = unsafe {
            (api.cudnnGetConvolutionBackwardDataAlgorithm_v7)(
                self.as_raw(),
                w,
                dy,
                conv,
                dx,
                perfs.len() as c_int,
                &raw mut returned,
                perfs.as_mut_ptr(),
            )
        };
        check(
            status,
            &format!("asking the heuristic for {}", p.describe()),
        )?;
        let returned = usize::try_from(returned).unwrap_or(0).min(perfs.len());
        Self::pick(p, &perfs[..returned], deterministic_only)
            .into_iter()
            .next()
            .ok_or_else(|| self.none_usable(p, deterministic_only))
    }

    pub(crate) fn pick(
        p: &RawProblem<'_>,
        perfs: &[BwdDataAlgoPerf],
        deterministic_only: bool,
    ) -> Vec<BestHeuristic> {
        perfs
            .iter()
            .filter(|perf| perf.status == 0)
            .filter_map(|perf| {
                let algo = BwdDataAlgo::from_raw(perf.algo)?;
                let determinism = Determinism::from_raw(perf.determinism)
                    .unwrap_or(Determinism::NonDeterministic);
                let math = MathType::from_raw(perf.math_type).unwrap_or(MathType::Default);
                Some(BestHeuristic::new(
                    algo,
                    perf.time,
                    perf.memory,
                    determinism,
                    math,
                ))
            })
            .filter(|b| support::is_supported(&p.row(b.algo().kind())))
            .filter(|b| p.conv.admits_math_type(b.math_type()))
            .filter(|b| !deterministic_only || b.determinism() == Determinism::Deterministic)
            .collect()
    }

    pub(crate) fn none_usable(&self, p: &RawProblem<'_>, deterministic_only: bool) -> Error {
        Error::cudnn(
            CudnnError::NotSupported,
            format!(
                "cuDNN {}.{}.{} offers no {}algorithm in the support table for {}",
                self.version().0,
                self.version().1,
                self.version().2,
                if deterministic_only {
                    "deterministic "
                } else {
                    ""
                },
                p.describe()
            ),
        )
    }

    /// Workspace bytes `algo` needs for the problem; `None` when it needs none.
    pub fn workspace_size_raw(
        &self,
        p: RawProblem<'_>,
        algo: BwdDataAlgo,
    ) -> Result<Option<usize>> {
        self.workspace_size_with(
            p,
            Route::Legacy(algo),
            p.conv.effective_math_type(p.dx.dtype()),
        )
    }

    pub(crate) fn query_workspace_size(
        &self,
        p: RawProblem<'_>,
        algo: BwdDataAlgo,
        math: MathType,
    ) -> Result<Option<usize>> {
        self.bind()?;
        let (w, dy, dx, conv) = (p.w.raw()?, p.dy.raw()?, p.dx.raw()?, p.conv.raw_with(math)?);
        let mut size = 0usize;
        // SAFETY: descriptors are live; cuDNN writes one size_t.
        let status = unsafe {
            (self.lib.api.cudnnGetConvolutionBackwardDataWorkspaceSize)(
                self.as_raw(),
                w,
                dy,
                conv,
                dx,
                algo.into_raw() as u32,
                &raw mut size,
            )
        };
        self.check_run(status, &p, algo, "querying the workspace size")?;
        Ok((size > 0).then_some(size))
    }

    pub(crate) fn check_run(
        &self,
        status: u32,
        p: &RawProblem<'_>,
        algo: BwdDataAlgo,
        doing: &str,
    ) -> Result<()> {
        match CudnnError::from_code(status) {
            None => Ok(()),
            Some(e) if e.is_not_supported() => Err(Error::cudnn(
                e,
                format!(
                    "{doing}: cuDNN {}.{}.{} does not run {} for {} ({}); use BestHeuristic (get_convolution_backward_data_algorithm) instead",
                    self.version().0,
                    self.version().1,
                    self.version().2,
                    algo.name(),
                    p.describe(),
                    support::algorithm_limits(algo)
                ),
            )),
            Some(e) => Err(Error::cudnn(
                e,
                format!("{doing} with {} for {}", algo.name(), p.describe()),
            )),
        }
    }

    /// Measures every algorithm cuDNN offers for the problem (`cudnnFind...Ex` on the given
    /// inputs, writing into a scratch `dx` so the caller's is untouched), fastest first;
    /// entries that failed, are not in the support table, or exceed `max_workspace` bytes
    /// are left out.
    ///
    /// # Safety
    /// `w` and `dy` must point to device memory of this context holding the elements the
    /// descriptors say, valid until this call returns.
    pub unsafe fn find_algorithms_raw(
        &self,
        p: RawProblem<'_>,
        w: CUdeviceptr,
        dy: CUdeviceptr,
        max_workspace: Option<usize>,
        deterministic_only: bool,
    ) -> Result<Vec<BestHeuristic>> {
        p.validate(crate::convolution::AlgoKind::BestHeuristic)?;
        self.bind()?;
        let mut ws_bytes = 0usize;
        for algo in BwdDataAlgo::ALL {
            if !support::is_supported(&p.row(algo.kind())) {
                continue;
            }
            if let Ok(Some(n)) = self.workspace_size_raw(p, algo) {
                if max_workspace.is_none_or(|cap| n <= cap) {
                    ws_bytes = ws_bytes.max(n);
                }
            }
        }
        let mut scratch_dx: CudaSlice<u8> = alloc_bytes(&self.stream, p.dx.nbytes())?;
        let mut workspace: CudaSlice<u8> = alloc_bytes(&self.stream, ws_bytes.max(1))?;
        let (dx_ptr, _g1) = GpuBufferMut::device_ptr_mut(&mut scratch_dx, &self.stream);
        let (ws_ptr, _g2) = GpuBufferMut::device_ptr_mut(&mut workspace, &self.stream);
        let math = p.conv.effective_math_type(p.dx.dtype());
        let (wd, dyd, dxd, conv) = (p.w.raw()?, p.dy.raw()?, p.dx.raw()?, p.conv.raw_with(math)?);
        let mut perfs = [BwdDataAlgoPerf::default(); 8];
        let mut returned: c_int = 0;
        // SAFETY: descriptors live; w/dy valid per the caller; scratch dx and workspace
        // were just allocated with the sizes passed; `perfs` has room for 8 entries.
        let status = unsafe {
            (self.lib.api.cudnnFindConvolutionBackwardDataAlgorithmEx)(
                self.as_raw(),
                wd,
                w as *const c_void,
                dyd,
                dy as *const c_void,
                conv,
                dxd,
                dx_ptr as *mut c_void,
                perfs.len() as c_int,
                &raw mut returned,
                perfs.as_mut_ptr(),
                ws_ptr as *mut c_void,
                ws_bytes,
            )
        };
        check(
            status,
            &format!("measuring algorithms for {}", p.describe()),
        )?;
        let returned = usize::try_from(returned).unwrap_or(0).min(perfs.len());
        let mut found = Self::pick(&p, &perfs[..returned], deterministic_only);
        found.retain(|b| max_workspace.is_none_or(|cap| b.workspace_size() <= cap));
        found.sort_by(|a, b| a.time().total_cmp(&b.time()));
        if found.is_empty() {
            return Err(self.none_usable(&p, deterministic_only));
        }
        Ok(found)
    }

    /// The legacy half of [`Self::execute`]: `cudnnConvolutionBackwardData` with `algo`.
    ///
    /// # Safety
    /// As [`Self::backward_data_raw`]; the problem has been validated.
    pub(crate) unsafe fn execute_legacy(
        &self,
        alpha: f64,
        p: RawProblem<'_>,
        algo: BwdDataAlgo,
        math: MathType,
        ptrs: RawPointers,
        beta: f64,
    ) -> Result<()> {
        let route = Route::Legacy(algo);
        let need = self.workspace_size_checked(p, route, math)?.unwrap_or(0);
        if need > ptrs.workspace.1 {
            return Err(Error::InvalidArgument(format!(
                "{} needs a workspace of {need} bytes for this problem, got {}",
                algo.name(),
                ptrs.workspace.1
            )));
        }
        let scaling = p.dx.dtype().scaling();
        let (alpha_s, beta_s) = (Scaling::new(scaling, alpha), Scaling::new(scaling, beta));
        let (w, dy, dx, conv) = (p.w.raw()?, p.dy.raw()?, p.dx.raw()?, p.conv.raw_with(math)?);
        let ws_ptr = if ptrs.workspace.1 == 0 {
            std::ptr::null_mut()
        } else {
            ptrs.workspace.0 as *mut c_void
        };
        let api = &self.lib.api;
        let call = || {
            // SAFETY: descriptors are live and match the memory (caller's contract); alpha
            // and beta point to host scalars of the type cuDNN reads for dx's data type and
            // live across the call.
            unsafe {
                (api.cudnnConvolutionBackwardData)(
                    self.as_raw(),
                    alpha_s.as_ptr(),
                    w,
                    ptrs.w as *const c_void,
                    dy,
                    ptrs.dy as *const c_void,
                    conv,
                    algo.into_raw() as u32,
                    ws_ptr,
                    ptrs.workspace.1,
                    beta_s.as_ptr(),
                    dx,
                    ptrs.dx as *mut c_void,
                )
            }
        };
        if crate::replay::enabled()
            // SAFETY: `call` is the call described; the addresses are this function's
            // contract.
            && unsafe { self.replay_or_capture(&p, route, math, &ptrs, alpha, beta, &call)? }
        {
            return Ok(());
        }
        let status = call();
        self.check_run(status, &p, algo, "running backward data")
    }
}
