//! The default-choice policy: what `DefaultAlgo` (and so the one-call API) runs for a
//! problem, untimed or (benchmarking on) measured once and kept, and the saved algorithm
//! cache that carries measurements to another process.

use cudarc::driver::{sys, CudaSlice};

use super::graph;
use crate::cache::BoundedCache;
use crate::context::{alloc_bytes, next_measured_epoch, CudnnContext};
use crate::convolution::{Engine, EngineConfig, Route};
use crate::data_type::DType;
use crate::error::{Error, Result};
use crate::math_type::MathType;
use crate::memory::{GpuBuffer, GpuBufferMut};
use crate::problem::{ProblemKey, RawProblem};

/// The measured default choices of every context in the process, by CUDA device: a
/// context with benchmarking on measures only problems no context on its device has
/// measured (or loaded) yet, as PyTorch's benchmark mode measures once per problem and
/// process. A program making a handle per call (`cd.Handle(benchmark=True)`) so measures
/// each problem once, not every call.
static SHARED_MEASURED: std::sync::Mutex<Vec<(usize, BoundedCache<ProblemKey, Engine>)>> =
    std::sync::Mutex::new(Vec::new());

/// The shared measured choices of device `ordinal`, made empty where there are none yet.
fn with_shared_measured<T>(
    ordinal: usize,
    f: impl FnOnce(&mut BoundedCache<ProblemKey, Engine>) -> T,
) -> T {
    let mut all = SHARED_MEASURED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let at = all
        .iter()
        .position(|(o, _)| *o == ordinal)
        .unwrap_or_else(|| {
            all.push((ordinal, BoundedCache::default()));
            all.len() - 1
        });
    f(&mut all[at].1)
}

/// The bytes [`CudnnContext::scratch_operand`] writes from the host; the rest of an
/// operand repeats them.
const SCRATCH_PERIOD: usize = 1 << 16;

/// `len` bytes of elements of `dtype` for [`CudnnContext::scratch_operand`], the same in
/// every process: of a floating type random signs and mantissas at magnitudes from 2^-6
/// to 2^-5, so that every product and any sum of up to 2^25 of them (a filter's taps
/// times its channels) stays normal and finite even in f16; random bytes of an integer
/// type. (xorshift64: the values need no statistical quality, only to vary.)
fn scratch_pattern(dtype: DType, len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let size = dtype.size();
    let mut out = Vec::with_capacity(len);
    while out.len() + size <= len {
        let r = next();
        let sign = r >> 63;
        // Exponent fields of 2^-6 (the mantissa takes the magnitude up to 2^-5).
        let bits: u64 = match dtype {
            DType::F32 => sign << 31 | (127 - 6) << 23 | (r & 0x7F_FFFF),
            DType::F64 => sign << 63 | (1023 - 6) << 52 | (r & 0xF_FFFF_FFFF_FFFF),
            DType::F16 => sign << 15 | (15 - 6) << 10 | (r & 0x3FF),
            DType::BF16 => sign << 15 | (127 - 6) << 7 | (r & 0x7F),
            DType::I8 | DType::U8 | DType::I32 | DType::I64 => r,
        };
        out.extend_from_slice(&bits.to_le_bytes()[..size]);
    }
    out.resize(len, 0);
    out
}

impl CudnnContext {
    /// Writes what this context measured to `path`: the finds' results (typed finds
    /// included) and the measured default choices, so that another process (Rust or
    /// Python, same cuDNN and GPU) loads them instead of measuring again (the file format
    /// of [`crate::find_cache`]).
    pub fn save_algorithm_cache(&self, path: &std::path::Path) -> Result<()> {
        let text = crate::find_cache::save_text(
            &self.environment(),
            &self.finds,
            &self.measured_choices(),
        );
        std::fs::write(path, text)
            .map_err(|e| Error::InvalidArgument(format!("writing {}: {e}", path.display())))
    }

    /// Adds the measurements saved at `path` (by [`Self::save_algorithm_cache`] or
    /// Python's `save_algorithm_cache`): finds' results and measured default choices;
    /// returns how many problems were read. A file from another cuDNN version or GPU, or
    /// a malformed one, adds nothing and is an error that says why.
    pub fn load_algorithm_cache(&self, path: &std::path::Path) -> Result<usize> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::InvalidArgument(format!("reading {}: {e}", path.display())))?;
        let source = path.display().to_string();
        match crate::find_cache::load_text(&text, &self.environment(), &source)? {
            crate::find_cache::Loaded::Foreign(why) => Err(Error::InvalidArgument(why)),
            crate::find_cache::Loaded::Entries { finds, defaults } => {
                let n = finds.len() + defaults.len();
                for (key, found) in finds {
                    self.finds.insert(key, found);
                }
                for (problem, engine) in defaults {
                    self.insert_measured_choice(&problem, engine);
                }
                Ok(n)
            }
        }
    }

    /// The measured default choices this context holds, `(problem, engine)`, for saving
    /// (the problem as text, read back by [`Self::insert_measured_choice`]).
    pub fn measured_choices(&self) -> Vec<(String, Engine)> {
        self.engines
            .borrow()
            .measured
            .iter()
            .map(|(k, e)| (k.to_text(), *e))
            .collect()
    }

    /// Adds a measured default choice saved by [`Self::measured_choices`]; `false` when the
    /// problem text does not parse.
    pub fn insert_measured_choice(&self, problem: &str, engine: Engine) -> bool {
        let Some(key) = ProblemKey::from_text(problem) else {
            return false;
        };
        with_shared_measured(self.ctx.ordinal(), |shared| shared.insert(key, engine));
        let mut engines = self.engines.borrow_mut();
        engines.measured.insert(key, engine);
        // A captured or resolved call of this problem may have run another choice, here
        // and in other contexts.
        engines.resolved.clear();
        self.graphs.borrow_mut().clear();
        self.epoch.set(next_measured_epoch());
        true
    }

    /// Forgets the measured default choices: this context's, loaded ones included, and
    /// those every context on its device shares (see [`Self::set_benchmark`]), so that
    /// with benchmarking on the next call of each problem measures again. The finds'
    /// results are [`Self::algorithm_cache`]'s to clear.
    pub fn clear_measured_choices(&self) {
        with_shared_measured(self.ctx.ordinal(), BoundedCache::clear);
        let mut engines = self.engines.borrow_mut();
        engines.measured.clear();
        // Resolved and captured calls would run the forgotten choices without asking,
        // here and in other contexts.
        engines.resolved.clear();
        self.graphs.borrow_mut().clear();
        self.epoch.set(next_measured_epoch());
    }

    /// The engine configuration `DefaultAlgo` runs for the problem with math type `math`:
    /// the measured one when benchmarking is on, else the untimed choice; each made once
    /// per problem and kept. A problem is measured once per device and process: a choice
    /// another context on the device measured or loaded is taken as it is.
    pub(crate) fn default_config(
        &self,
        p: &RawProblem<'_>,
        math: MathType,
    ) -> Result<EngineConfig> {
        if self.benchmark.get() {
            let key = ProblemKey::new(p, Route::Default, math);
            if let Some(e) = self.engines.borrow_mut().measured.get(&key) {
                return Ok(e.config());
            }
            let ordinal = self.ctx.ordinal();
            let shared = with_shared_measured(ordinal, |shared| shared.get(&key).copied());
            let best = if let Some(e) = shared {
                e
            } else {
                let e = self.measure_default(p, math)?;
                with_shared_measured(ordinal, |shared| shared.insert(key, e));
                e
            };
            self.engines.borrow_mut().measured.insert(key, best);
            return Ok(best.config());
        }
        let key = ProblemKey::new(p, Route::Default, math);
        if let Some(c) = self.engines.borrow_mut().defaults.get(&key) {
            return Ok(*c);
        }
        let canonical = self.engine_graph(p, 1.0, 0.0, 16)?;
        let accept = move |n: &graph::Notes| n.fit_default(math, false);
        let best = self
            .engine_candidates(&canonical, &accept, 1, graph::Sources::Instant)?
            .first()
            .map(|plan| plan.config)
            .ok_or_else(|| self.no_engine(p, false))?;
        self.engines.borrow_mut().defaults.insert(key, best);
        Ok(best)
    }

    /// Times the candidates of the default choice on scratch operands (never the caller's
    /// memory): the engines the instant heuristic (mode A) and the fallback list rank, as
    /// PyTorch's benchmark mode takes them (its first ten in full), each knob setting of
    /// those close to the fastest (staged, see [`Self::time_engines`]); the fastest. Mode B and the engines
    /// no heuristic ranks are left to the engine find: on the H200 the configurations
    /// only mode B ranked were the fastest in none of 138 first sights of the broad
    /// suite (`bench/first_sight.py`), while asking it took up to 29 ms a problem (dilated
    /// and 5x3 layers); the unranked engines won none of three layers
    /// (`bench/candidates.py`) and made a first sight of a 3-d f16 layer 929 ms long.
    pub(crate) fn measure_default(&self, p: &RawProblem<'_>, math: MathType) -> Result<Engine> {
        let w = self.scratch_operand(p.w.nbytes(), p.w.dtype())?;
        let dy = self.scratch_operand(p.dy.nbytes(), p.dy.dtype())?;
        let (wp, _gw) = GpuBuffer::device_ptr(&w, &self.stream);
        let (dyp, _gdy) = GpuBuffer::device_ptr(&dy, &self.stream);
        let accept = move |n: &graph::Notes| n.fit_default(math, false);
        // SAFETY: both scratch buffers were allocated above with the descriptors' sizes
        // and live until the measurement returns.
        let timed = unsafe {
            self.time_engines(
                p,
                wp,
                dyp,
                None,
                &accept,
                usize::MAX,
                graph::Sources::Instant,
                true,
                Some(self.benchmark_budget.get()),
            )?
        };
        timed
            .into_iter()
            .next()
            .map(|(e, _)| e)
            .ok_or_else(|| self.no_engine(p, false))
    }

    /// A scratch operand of `bytes` bytes of `dtype` for [`Self::measure_default`], of
    /// varied small values ([`scratch_pattern`], [`SCRATCH_PERIOD`] bytes written and
    /// repeated by copies on the device), not zeros: engines run faster on zeros than on
    /// data. On the H100 a measured first sight of a 4x4x4 transposed bf16 layer (3->512,
    /// N=8) timed cuDNN's fallback engine 25 at 0.456 ms a call on zeroed operands and
    /// kept it, where it ran 0.735 ms on the caller's data (engine 46, timed at 0.55, ran
    /// 0.56); on Inception v3's 3x3 96->96 layer (TF32 channels-last, N=32) it kept
    /// engine 71, timed at 0.0425 ms on zeros, which ran 0.0472-0.0479 on data, where
    /// engine 76 ran 0.0420.
    fn scratch_operand(&self, bytes: usize, dtype: DType) -> Result<CudaSlice<u8>> {
        let bytes = bytes.max(1);
        let mut buf = alloc_bytes(&self.stream, bytes)?;
        let first = SCRATCH_PERIOD.min(bytes);
        self.stream
            .memcpy_htod(&scratch_pattern(dtype, first), &mut buf.slice_mut(..first))?;
        {
            let (ptr, _guard) = GpuBufferMut::device_ptr_mut(&mut buf, &self.stream);
            let stream = self.stream.cu_stream();
            let mut filled = first;
            while filled < bytes {
                let n = filled.min(bytes - filled);
                // SAFETY: source [0, n) and destination [filled, filled + n) lie within
                // the `bytes` allocated above and do not overlap (n <= filled); the copy
                // is ordered on this stream after the writes before it.
                unsafe {
                    sys::cuMemcpyDtoDAsync_v2(ptr + filled as u64, ptr, n, stream).result()?;
                }
                filled += n;
            }
        }
        Ok(buf)
    }

    /// The engine [`crate::DefaultAlgo`] runs for the problem (choosing it now if this
    /// context has not yet; with benchmarking on, that measures), with its workspace size
    /// for aligned addresses and, when measured, its time. For a problem the default runs
    /// with the depthwise kernel of our own (`bwd_data/direct.rs`), the engine cuDNN would
    /// run it with (as with `CUDNN_RS_DIRECT=0`).
    pub fn default_engine_raw(&self, p: RawProblem<'_>) -> Result<Engine> {
        p.validate(crate::convolution::AlgoKind::DefaultAlgo)?;
        let math = p.conv.effective_math_type(p.dx.dtype());
        // The filter as the default choice's calls describe it.
        let filter = p.filter_in_dy_format();
        let p = filter.as_ref().map_or(p, |w| p.with_filter(w));
        // A problem run through its NHWC twin reports the twin's engine; one the depthwise
        // kernel of our own runs, the engine cuDNN would run it with (through the twin
        // where the twin takes it).
        let twin = self.twin(&ProblemKey::new(&p, Route::Default, math), &p);
        let p = twin.as_ref().map_or(p, |t| t.problem(p.conv));
        let config = self.default_config(&p, math)?;
        let measured = self
            .engines
            .borrow_mut()
            .measured
            .get(&ProblemKey::new(&p, Route::Default, math))
            .filter(|e| e.config() == config && self.benchmark.get())
            .map(Engine::time);
        let plan = self.engine_plan(&p, Some(config), math, 1.0, 0.0, 16, usize::MAX)?;
        Ok(plan.engine().with_time(measured.unwrap_or(-1.0)))
    }

    /// `Route::Default` made concrete: the engine configuration the context's default
    /// choice runs; other routes as they are.
    pub(crate) fn resolve_route(
        &self,
        p: &RawProblem<'_>,
        route: Route,
        math: MathType,
    ) -> Result<Route> {
        match route {
            Route::Default => Ok(Route::Engine(Some(self.default_config(p, math)?))),
            other => Ok(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_operands_hold_varied_small_normal_values() {
        let values = |t: DType| -> Vec<f64> {
            let bytes = scratch_pattern(t, 4096);
            assert_eq!(bytes.len(), 4096);
            bytes
                .chunks_exact(t.size())
                .map(|c| match t {
                    DType::F32 => f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                    DType::F64 => f64::from_le_bytes(c.try_into().unwrap_or_default()),
                    DType::F16 => half::f16::from_le_bytes([c[0], c[1]]).to_f64(),
                    _ => half::bf16::from_le_bytes([c[0], c[1]]).to_f64(),
                })
                .collect()
        };
        for t in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            let v = values(t);
            let (lo, hi) = (2f64.powi(-6), 2f64.powi(-5));
            assert!(v.iter().all(|x| (lo..hi).contains(&x.abs())), "{t:?}");
            let negative = v.iter().filter(|x| **x < 0.0).count();
            assert!(
                negative > v.len() / 4 && negative < v.len() * 3 / 4,
                "{t:?}"
            );
            let mut distinct = v.clone();
            distinct.sort_by(f64::total_cmp);
            distinct.dedup();
            assert!(
                distinct.len() > 64,
                "{t:?}: {} distinct values",
                distinct.len()
            );
        }
        // The same bytes in every call (and process); a length not a multiple of the
        // element size is padded.
        assert_eq!(
            scratch_pattern(DType::F32, 64),
            scratch_pattern(DType::F32, 64)
        );
        assert_eq!(scratch_pattern(DType::F32, 6).len(), 6);
        let bytes = scratch_pattern(DType::I32, 4096);
        let distinct: std::collections::BTreeSet<u8> = bytes.iter().copied().collect();
        assert!(
            distinct.len() > 200,
            "random bytes: {} values",
            distinct.len()
        );
        // The largest sum the documentation allows stays finite in f16.
        let sum = 2f32.powi(25) * 2f32.powi(-5) * 2f32.powi(-5);
        assert!(half::f16::from_f32(sum).is_finite());
    }
}
