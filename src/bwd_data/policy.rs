//! The default-choice policy: what `DefaultAlgo` (and so the one-call API) runs for a
//! problem, untimed or (benchmarking on) measured once and kept, and the saved algorithm
//! cache that carries measurements to another process.

use cudarc::driver::CudaSlice;

use super::graph;
use crate::context::CudnnContext;
use crate::convolution::{Engine, EngineConfig, Route};
use crate::error::{Error, Result};
use crate::math_type::MathType;
use crate::memory::GpuBuffer;
use crate::problem::{ProblemKey, RawProblem};

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
        let mut engines = self.engines.borrow_mut();
        engines.measured.insert(key, engine);
        // A captured or resolved call of this problem may have run another choice.
        engines.resolved.clear();
        self.graphs.borrow_mut().clear();
        true
    }

    /// The engine configuration `DefaultAlgo` runs for the problem with math type `math`:
    /// the measured one when benchmarking is on, else the untimed choice; each made once
    /// per problem and kept.
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
            let best = self.measure_default(p, math)?;
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
        let w: CudaSlice<u8> = self.stream.alloc_zeros(p.w.nbytes().max(1))?;
        let dy: CudaSlice<u8> = self.stream.alloc_zeros(p.dy.nbytes().max(1))?;
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

    /// The engine [`crate::DefaultAlgo`] runs for the problem (choosing it now if this
    /// context has not yet; with benchmarking on, that measures), with its workspace size
    /// for aligned addresses and, when measured, its time. For a problem the default runs
    /// with the depthwise kernel of our own (`bwd_data/direct.rs`), the engine cuDNN would
    /// run it with (as with `CUDNN_RS_DIRECT=0`).
    pub fn default_engine_raw(&self, p: RawProblem<'_>) -> Result<Engine> {
        p.validate(crate::convolution::AlgoKind::DefaultAlgo)?;
        let math = p.conv.effective_math_type(p.dx.dtype());
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
