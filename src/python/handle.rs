//! `Handle` (a cuDNN context on a GPU, or the CPU reference device), `Workspace`, and the
//! backward-data operations.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyList;

use super::conv::PyConvolutionDescriptor;
use super::device::{parse_device, DeviceId, GpuState, HandleInner, PyHandle};
use super::dispatch::{self, GpuPtrs, HostBufs};
use super::errors::{detach, IntoPyResult};
use super::markers::{algo_perf, best_heuristic, engine_record, selected_algo};
use super::operands::{operands, Operands};
use super::storage::TensorCore;
use super::workspace::PyWorkspace;
use crate::context::CudnnContext;
use crate::convolution::{BestHeuristic, SelectedAlgo};
use crate::error::{Error, Result};

impl PyHandle {
    pub(crate) fn check_devices(&self, cores: &[&Arc<TensorCore>]) -> Result<()> {
        for c in cores {
            if c.device != self.inner.device {
                return Err(Error::DeviceMismatch(format!(
                    "an operand lives on {} but the handle is on {}",
                    c.device, self.inner.device
                )));
            }
        }
        Ok(())
    }

    fn heuristic(&self, ops: &Operands<'_>, deterministic: bool) -> Result<BestHeuristic> {
        self.check_devices(&[ops.w, ops.dy, ops.dx])?;
        let descs = ops.descs();
        match self.inner.device {
            DeviceId::Cpu => crate::reference::device::heuristic(&descs.problem(), deterministic),
            DeviceId::Cuda(_) => self
                .inner
                .gpu()?
                .ctx
                .get_algorithm_raw(descs.problem(), deterministic),
        }
    }

    /// The shared body of every backward-data call: checks, locks, dispatch.
    fn run(
        &self,
        alpha: f64,
        ops: &Operands<'_>,
        sel: &SelectedAlgo,
        workspace: Option<&PyWorkspace>,
        beta: f64,
    ) -> Result<()> {
        self.check_devices(&[ops.w, ops.dy, ops.dx])?;
        if Arc::ptr_eq(ops.dx, ops.dy) {
            return Err(Error::Shape("dx and dy must be different tensors".into()));
        }
        let descs = ops.descs();
        // Ranks, support table and shapes are checked once, by the typed call the
        // dispatch reaches (or by the dispatch when no row matches), before cuDNN or the
        // CPU device touch any memory.
        match self.inner.device {
            DeviceId::Cpu => {
                let (w, dy) = (ops.w.read(), ops.dy.read());
                let mut dx = ops.dx.write();
                let bufs = HostBufs {
                    w: w.host_bytes()?,
                    dy: dy.host_bytes()?,
                    dx: dx.host_bytes_mut()?,
                };
                dispatch::run_cpu(sel, alpha, &descs, bufs, beta)
            }
            DeviceId::Cuda(_) => {
                let mut state = self.inner.gpu()?;
                if let Some(ws) = workspace {
                    if ws.device != self.inner.device {
                        return Err(Error::DeviceMismatch(format!(
                            "the workspace lives on {} but the handle is on {}",
                            ws.device, self.inner.device
                        )));
                    }
                }
                let state = &mut *state;
                let stream = Arc::clone(state.ctx.stream());
                let (w, dy) = (ops.w.read(), ops.dy.read());
                let mut dx = ops.dx.write();
                let mut ws_guard = workspace.map(PyWorkspace::lock);
                let (wp, _g1) = w.device_ptr(&stream)?;
                let (dyp, _g2) = dy.device_ptr(&stream)?;
                let (dxp, _g3) = dx.device_ptr_mut(&stream)?;
                let (wsp, _g4) = match ws_guard.as_deref_mut() {
                    Some(Some(slice)) => {
                        let len = slice.len();
                        let (p, g) = cudarc::driver::DevicePtrMut::device_ptr_mut(slice, &stream);
                        ((p, len), Some(g))
                    }
                    _ => ((0, 0), None),
                };
                let ptrs = GpuPtrs {
                    w: wp,
                    dy: dyp,
                    dx: dxp,
                    workspace: wsp,
                };
                dispatch::run_gpu(&state.ctx, sel, alpha, &descs, &ptrs, beta)
            }
        }
    }
}

fn scalar(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<f64> {
    // Python's and NumPy's booleans convert to 0/1, but a flag passed as a scale is a
    // slip: refused with strings. NumPy's is named `bool` (2.x) or `bool_` (1.x).
    let numpy_bool = obj
        .get_type()
        .name()
        .is_ok_and(|n| n.to_str().is_ok_and(|n| n == "bool" || n == "bool_"));
    if numpy_bool
        || obj.is_instance_of::<pyo3::types::PyBool>()
        || obj.is_instance_of::<pyo3::types::PyString>()
    {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{name} must be a real number, got {}",
            obj.get_type().name()?
        )));
    }
    obj.extract::<f64>().map_err(|e| {
        // An int past a double's range is a real number that does not fit: say so, as
        // Python's own `float()` does, rather than name its type.
        if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(obj.py()) {
            return pyo3::exceptions::PyOverflowError::new_err(format!(
                "{name} is too large to convert to a 64-bit float"
            ));
        }
        pyo3::exceptions::PyTypeError::new_err(format!(
            "{name} must be a real number, got {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

#[pymethods]
impl PyHandle {
    #[new]
    #[pyo3(signature = (device = None, stream = None, *, benchmark = false))]
    fn new(
        py: Python<'_>,
        device: Option<&Bound<'_, PyAny>>,
        stream: Option<&Bound<'_, PyAny>>,
        benchmark: bool,
    ) -> PyResult<Self> {
        let device = parse_device(device)?;
        let gpu = match device {
            DeviceId::Cpu => {
                if stream.is_some_and(|s| !s.is_none()) {
                    return Err(pyo3::exceptions::PyValueError::new_err(
                        "the CPU device has no streams",
                    ));
                }
                None
            }
            DeviceId::Cuda(ordinal) => {
                // SAFETY: Python reaches the CUDA context object only through handles
                // made here (new, or a dropped one's taken over), and cudarc never makes
                // a stream of it (the library calls no `new_stream` or `fork`), so it
                // never orders the slices allocated on it by their events: it would only
                // create and destroy two events per allocation (the one-call API's dx
                // every call, workspaces, uploads). Ordering across streams is done by the
                // tensors' stream marks (`order_after`), which do not use those events.
                let ctx = detach(py, || unsafe {
                    CudnnContext::new_untracked(ordinal, benchmark)
                })?;
                Some(Mutex::new(GpuState {
                    ctx,
                    workspace: None,
                    stream_owner: None,
                }))
            }
        };
        let handle = Self {
            inner: Arc::new(HandleInner {
                device,
                gpu,
                cpu_finds: crate::find_cache::FindCache::default(),
                cpu_benchmark: std::sync::atomic::AtomicBool::new(benchmark),
            }),
        };
        if let Some(s) = stream.filter(|s| !s.is_none()) {
            handle.set_stream(py, s)?;
        }
        Ok(handle)
    }

    /// "cuda:N" or "cpu".
    #[getter]
    fn device(&self) -> String {
        self.inner.device.to_string()
    }

    /// Whether this is the CPU reference device.
    #[getter]
    fn is_cpu(&self) -> bool {
        self.inner.device == DeviceId::Cpu
    }

    /// Whether the default choice (`DefaultAlgo()`, the one-call API) measures, as
    /// PyTorch's `torch.backends.cudnn.benchmark`: when True, the first call (or workspace
    /// query) of a problem times the engines cuDNN's instant heuristic (mode A) and
    /// fallback list rank on scratch buffers (the first ten that build, in rank order, as
    /// PyTorch's benchmark mode times them, but for further settings of an engine three
    /// times slower than the fastest; beyond those, cuDNN's generic engine 0 never, and
    /// each other one's first-ranked knob setting in rank order until one is four times slower than the fastest, then the ranked settings
    /// of those within 10% of the fastest, an engine's until one is three times slower;
    /// engines only the fallback list names only while fewer than six ranked ones were
    /// timed), within `benchmark_budget_ms`,
    /// and later calls run the fastest; `save_algorithm_cache` keeps the winners. A
    /// problem is measured once per device and process, as in PyTorch: what one handle
    /// measured, every handle on the device runs (`clear_algorithm_cache()` forgets it).
    /// False (the default): the choice is made without timing, the same in every process.
    #[getter]
    fn get_benchmark(&self, py: Python<'_>) -> PyResult<bool> {
        match self.inner.device {
            DeviceId::Cpu => Ok(self
                .inner
                .cpu_benchmark
                .load(std::sync::atomic::Ordering::Relaxed)),
            DeviceId::Cuda(_) => Ok(self.inner.gpu().py_err(py)?.ctx.benchmark()),
        }
    }

    #[setter]
    fn set_benchmark(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.inner
            .cpu_benchmark
            .store(on, std::sync::atomic::Ordering::Relaxed);
        if let DeviceId::Cuda(_) = self.inner.device {
            self.inner.gpu().py_err(py)?.ctx.set_benchmark(on);
        }
        Ok(())
    }

    /// How long the measurement of one problem may take, in milliseconds (default 2000):
    /// candidates not reached by then are left out (see `last_find_report`).
    #[getter]
    fn get_benchmark_budget_ms(&self, py: Python<'_>) -> PyResult<f64> {
        match self.inner.device {
            DeviceId::Cpu => Ok(crate::context::DEFAULT_BENCHMARK_BUDGET.as_secs_f64() * 1e3),
            DeviceId::Cuda(_) => Ok(self
                .inner
                .gpu()
                .py_err(py)?
                .ctx
                .benchmark_budget()
                .as_secs_f64()
                * 1e3),
        }
    }

    #[setter]
    fn set_benchmark_budget_ms(&self, py: Python<'_>, ms: f64) -> PyResult<()> {
        let budget = super::millis("benchmark_budget_ms", ms, true)?;
        if let DeviceId::Cuda(_) = self.inner.device {
            self.inner
                .gpu()
                .py_err(py)?
                .ctx
                .set_benchmark_budget(budget);
        }
        Ok(())
    }

    /// What the last engine measurement on this handle did: `(timed, left_out)`, the
    /// engine configurations it timed and those its time budget (or `limit`) left out.
    fn last_find_report(&self, py: Python<'_>) -> PyResult<(usize, usize)> {
        match self.inner.device {
            DeviceId::Cpu => Ok((0, 0)),
            DeviceId::Cuda(_) => Ok(self.inner.gpu().py_err(py)?.ctx.last_find_report()),
        }
    }

    /// `(building, taken_in)`: how many problems the measured default
    /// (`benchmark=True`) runs with the depthwise kernel of our own while a background
    /// thread builds cuDNN's run-time-compiled engines for them, and how many such builds
    /// later calls took in (and then measured). `(0, 0)` on the CPU device.
    fn background_builds(&self, py: Python<'_>) -> PyResult<(usize, usize)> {
        match self.inner.device {
            DeviceId::Cpu => Ok((0, 0)),
            DeviceId::Cuda(_) => Ok(self.inner.gpu().py_err(py)?.ctx.background_builds()),
        }
    }

    /// Waits (without the GIL) until the background thread is done with every problem
    /// of this handle it was handed, at most `timeout_ms` milliseconds; whether it is.
    /// Each problem's next call then takes in what it built.
    #[pyo3(signature = (timeout_ms = 10000.0))]
    fn wait_background_builds(&self, py: Python<'_>, timeout_ms: f64) -> PyResult<bool> {
        let timeout = super::millis("timeout_ms", timeout_ms, false)?;
        if let DeviceId::Cpu = self.inner.device {
            return Ok(true);
        }
        let started = std::time::Instant::now();
        loop {
            let zero = std::time::Duration::ZERO;
            if self
                .inner
                .gpu()
                .py_err(py)?
                .ctx
                .wait_background_builds(zero)
            {
                return Ok(true);
            }
            if started.elapsed() >= timeout {
                return Ok(false);
            }
            py.detach(|| std::thread::sleep(std::time::Duration::from_millis(1)));
            py.check_signals()?;
        }
    }

    /// Where the last engine measurement's wall time went, in milliseconds: `total`,
    /// `heuristics` (asking what to time), `builds` (finalizing plans), `trials` (running
    /// them) and `refine` (timing the closest again). All zero before any measurement and
    /// on the CPU device.
    fn last_find_timing(
        &self,
        py: Python<'_>,
    ) -> PyResult<std::collections::HashMap<&'static str, f64>> {
        let t = match self.inner.device {
            DeviceId::Cpu => crate::FindTiming::default(),
            DeviceId::Cuda(_) => self.inner.gpu().py_err(py)?.ctx.last_find_timing(),
        };
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        Ok([
            ("total", ms(t.total)),
            ("heuristics", ms(t.heuristics)),
            ("builds", ms(t.builds)),
            ("trials", ms(t.trials)),
            ("refine", ms(t.refine)),
        ]
        .into_iter()
        .collect())
    }

    /// cuDNN version (major, minor, patch); on the CPU device, the version the crate binds.
    fn version(&self, py: Python<'_>) -> PyResult<(usize, usize, usize)> {
        match self.inner.device {
            DeviceId::Cpu => Ok(crate::library::BOUND_CUDNN_VERSION),
            DeviceId::Cuda(_) => Ok(self.inner.gpu().py_err(py)?.ctx.version()),
        }
    }

    /// CUDA runtime version cuDNN was built with (0 on the CPU device).
    fn cuda_version(&self, py: Python<'_>) -> PyResult<usize> {
        match self.inner.device {
            DeviceId::Cpu => Ok(0),
            DeviceId::Cuda(_) => Ok(self.inner.gpu().py_err(py)?.ctx.cuda_version()),
        }
    }

    /// Waits for all work issued through this handle.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let inner = Arc::clone(&self.inner);
        detach(py, move || match inner.device {
            DeviceId::Cpu => Ok(()),
            DeviceId::Cuda(_) => Ok(inner.stream()?.synchronize()?),
        })
    }

    /// Issues later work to `stream`: a raw `CUstream` (int) or an object with
    /// `__cuda_stream__` (e.g. `torch.cuda.Stream`, CuPy streams).
    /// Work issued before keeps its order: the new stream waits (an event, not a host
    /// synchronization) for what the old one had, which also covers the cached workspace.
    fn set_stream(&self, py: Python<'_>, stream: &Bound<'_, PyAny>) -> PyResult<()> {
        let raw = super::streams::raw_stream(stream)?;
        let owner = super::streams::adopt_owner(stream, raw);
        let inner = Arc::clone(&self.inner);
        detach(py, move || {
            let mut state = inner.gpu()?;
            let ctx = Arc::clone(state.ctx.context());
            let stream = super::streams::wrap_stream(&ctx, raw);
            super::streams::order_after(&stream, state.ctx.stream())?;
            state.ctx.set_stream(stream)?;
            state.stream_owner = owner;
            Ok(())
        })
    }

    /// cuDNN's heuristic choice (the CPU device answers with a table algorithm).
    #[pyo3(signature = (w, dy, dx, conv, *, deterministic = false))]
    fn get_convolution_backward_data_algorithm<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
        dy: &Bound<'py, PyAny>,
        dx: &Bound<'py, PyAny>,
        conv: &Bound<'py, PyConvolutionDescriptor>,
        deterministic: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ops = operands(w, dy, dx, conv.get())?;
        let best = py
            .detach(|| self.heuristic(&ops, deterministic))
            .py_err(py)?;
        best_heuristic(py, best)
    }

    /// Measures the algorithms on these operands, fastest first; `dx` is not modified.
    /// The result is cached per problem on the handle: the next call for the same problem
    /// (shapes, types, formats, convolution, cap, determinism) measures nothing
    /// (`use_cache=False` measures again and refreshes the entry).
    #[pyo3(signature = (w, dy, dx, conv, *, max_workspace_bytes = None, deterministic = false, use_cache = true))]
    fn find_convolution_backward_data_algorithm<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
        dy: &Bound<'py, PyAny>,
        dx: &Bound<'py, PyAny>,
        conv: &Bound<'py, PyConvolutionDescriptor>,
        max_workspace_bytes: Option<usize>,
        deterministic: bool,
        use_cache: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let ops = operands(w, dy, dx, conv.get())?;
        let found = py
            .detach(|| -> Result<Vec<BestHeuristic>> {
                self.check_devices(&[ops.w, ops.dy, ops.dx])?;
                let descs = ops.descs();
                let p = descs.problem();
                let (max_ws, det) = (max_workspace_bytes, deterministic);
                // The core's cache policy: on a GPU, the context's cache (shared with Rust
                // users of the context); the CPU device keeps its own.
                match self.inner.device {
                    DeviceId::Cpu => {
                        self.inner
                            .cpu_finds
                            .algorithms(&p, max_ws, det, use_cache, || {
                                self.find(None, &ops, max_ws, det)
                            })
                    }
                    DeviceId::Cuda(_) => {
                        let state = self.inner.gpu()?;
                        let ctx = &state.ctx;
                        ctx.algorithm_cache()
                            .algorithms(&p, max_ws, det, use_cache, || {
                                self.find(Some(ctx), &ops, max_ws, det)
                            })
                    }
                }
            })
            .py_err(py)?;
        let items = found
            .into_iter()
            .map(|b| algo_perf(py, b))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// The graph API's heuristic engine for these operands: the first of cuDNN's ranked
    /// engines that builds and fits the descriptor's math type (and, with
    /// `deterministic=True`, is deterministic). `BestEngine()` runs this engine when not
    /// asked for determinism. The CPU device answers with a stand-in (engine 0).
    #[pyo3(signature = (w, dy, dx, conv, *, deterministic = false))]
    fn get_convolution_backward_data_engine<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
        dy: &Bound<'py, PyAny>,
        dx: &Bound<'py, PyAny>,
        conv: &Bound<'py, PyConvolutionDescriptor>,
        deterministic: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.engine_query(py, w, dy, dx, conv, move |ctx, p| {
            ctx.get_engine_raw(p, deterministic)
        })
    }

    /// The engine `DefaultAlgo()` (and the one-call API) runs for these operands, chosen
    /// now if this handle has not yet (measuring, with `benchmark=True`). The CPU device
    /// answers with a stand-in (engine 0). For NCHW depthwise operands the default runs
    /// with the kernel of our own (see the README), the engine cuDNN would run them with
    /// (as with `CUDNN_RS_DIRECT=0`).
    fn get_convolution_backward_data_default<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
        dy: &Bound<'py, PyAny>,
        dx: &Bound<'py, PyAny>,
        conv: &Bound<'py, PyConvolutionDescriptor>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.engine_query(py, w, dy, dx, conv, CudnnContext::default_engine_raw)
    }

    /// Autotunes the graph API on these operands: builds up to `limit` of its engines, the
    /// heuristic's first and then every other (those fitting the math type,
    /// `deterministic` and `max_workspace_bytes`),
    /// times each (its calls held so that each call's time is the GPU's alone, the
    /// warm-up too: no more calls after a warm-up of 0.1 ms or twice the fastest, three
    /// after one within 15% of the fastest, else two, and three more for one shorter
    /// than 0.1 ms within 15% of the fastest; the up to three within 15% of the fastest
    /// again in three rounds; `CUDNN_RS_HOLD=0` times as the README says) into a scratch
    /// `dx`, and returns
    /// them fastest first; `dx` is not modified. Cached per problem on the handle like
    /// `find_convolution_backward_data_algorithm` (same `use_cache`, same cache file).
    #[pyo3(signature = (w, dy, dx, conv, *, max_workspace_bytes = None, deterministic = false, limit = None, budget_ms = 10000.0, use_cache = true))]
    #[allow(clippy::too_many_arguments)]
    fn find_convolution_backward_data_engine<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
        dy: &Bound<'py, PyAny>,
        dx: &Bound<'py, PyAny>,
        conv: &Bound<'py, PyConvolutionDescriptor>,
        max_workspace_bytes: Option<usize>,
        deterministic: bool,
        limit: Option<usize>,
        budget_ms: Option<f64>,
        use_cache: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        if limit == Some(0) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "limit must be at least 1",
            ));
        }
        let budget = budget_ms
            .map(|ms| super::millis("budget_ms", ms, true))
            .transpose()?;
        let limit = limit.unwrap_or(usize::MAX);
        let ops = operands(w, dy, dx, conv.get())?;
        let found = py
            .detach(|| -> Result<Vec<crate::convolution::Engine>> {
                self.check_devices(&[ops.w, ops.dy, ops.dx])?;
                let descs = ops.descs();
                let p = descs.problem();
                let (max_ws, det) = (max_workspace_bytes, deterministic);
                match self.inner.device {
                    DeviceId::Cpu => self.inner.cpu_finds.engines(
                        &p,
                        max_ws,
                        det,
                        limit,
                        budget,
                        use_cache,
                        || self.find_engines(None, &ops, max_ws, det, limit, budget),
                    ),
                    DeviceId::Cuda(_) => {
                        let state = self.inner.gpu()?;
                        let ctx = &state.ctx;
                        ctx.algorithm_cache().engines(
                            &p,
                            max_ws,
                            det,
                            limit,
                            budget,
                            use_cache,
                            || self.find_engines(Some(ctx), &ops, max_ws, det, limit, budget),
                        )
                    }
                }
            })
            .py_err(py)?;
        let items = found
            .into_iter()
            .map(|e| engine_record(py, e))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// Number of problems whose measured algorithms this handle has cached.
    fn algorithm_cache_size(&self, py: Python<'_>) -> PyResult<usize> {
        self.with_finds(py, crate::find_cache::FindCache::len)
    }

    /// Forgets every cached measurement: this handle's finds, and the measured default
    /// choices (`benchmark=True`), which every handle on the device shares, so that the
    /// next call of each problem measures again.
    fn clear_algorithm_cache(&self, py: Python<'_>) -> PyResult<()> {
        match self.inner.device {
            DeviceId::Cpu => self.inner.cpu_finds.clear(),
            DeviceId::Cuda(_) => {
                let state = self.inner.gpu().py_err(py)?;
                state.ctx.algorithm_cache().clear();
                state.ctx.clear_measured_choices();
            }
        }
        Ok(())
    }

    /// Writes the cached measurements to `path` (text, one problem per line), so that
    /// another process can load them instead of measuring again: the finds' results and
    /// the measured default choices (`benchmark=True`). The first line names the cuDNN
    /// version and the GPU they were measured on.
    fn save_algorithm_cache(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        let environment = self.environment(py)?;
        let text = match self.inner.device {
            DeviceId::Cuda(_) => {
                let state = self.inner.gpu().py_err(py)?;
                let ctx = &state.ctx;
                crate::find_cache::save_text(
                    &environment,
                    ctx.algorithm_cache(),
                    &ctx.measured_choices(),
                )
            }
            DeviceId::Cpu => crate::find_cache::save_text(&environment, &self.inner.cpu_finds, &[]),
        };
        std::fs::write(&path, text).map_err(|e| {
            pyo3::exceptions::PyOSError::new_err(format!("writing {}: {e}", path.display()))
        })?;
        Ok(())
    }

    /// Adds the measurements saved by `save_algorithm_cache` at `path`; returns how many
    /// problems were read. A malformed file adds nothing and raises `ShapeError`. A file
    /// measured with another cuDNN version or on another GPU adds nothing either: it
    /// returns 0 and warns (`RuntimeWarning`) naming both.
    fn load_algorithm_cache(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<usize> {
        let text = std::fs::read_to_string(&path).map_err(|e| {
            pyo3::exceptions::PyOSError::new_err(format!("reading {}: {e}", path.display()))
        })?;
        let source = path.display().to_string();
        match crate::find_cache::load_text(&text, &self.environment(py)?, &source).py_err(py)? {
            crate::find_cache::Loaded::Foreign(why) => {
                let warning = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
                let msg = std::ffi::CString::new(why).unwrap_or_default();
                PyErr::warn(py, &warning, &msg, 1)?;
                Ok(0)
            }
            crate::find_cache::Loaded::Entries { finds, defaults } => {
                let n = finds.len() + defaults.len();
                match self.inner.device {
                    DeviceId::Cpu => {
                        for (key, found) in finds {
                            self.inner.cpu_finds.insert(key, found);
                        }
                    }
                    DeviceId::Cuda(_) => {
                        let state = self.inner.gpu().py_err(py)?;
                        for (key, found) in finds {
                            state.ctx.algorithm_cache().insert(key, found);
                        }
                        for (problem, engine) in defaults {
                            state.ctx.insert_measured_choice(&problem, engine);
                        }
                    }
                }
                Ok(n)
            }
        }
    }

    /// Workspace bytes `algo` needs for these operands; `None` when none.
    fn get_convolution_backward_data_workspace_size(
        &self,
        py: Python<'_>,
        w: &Bound<'_, PyAny>,
        dy: &Bound<'_, PyAny>,
        dx: &Bound<'_, PyAny>,
        conv: &Bound<'_, PyConvolutionDescriptor>,
        algo: &Bound<'_, PyAny>,
    ) -> PyResult<Option<usize>> {
        let sel = selected_algo(algo)?;
        let ops = operands(w, dy, dx, conv.get())?;
        py.detach(|| -> Result<Option<usize>> {
            self.check_devices(&[ops.w, ops.dy, ops.dx])?;
            let descs = ops.descs();
            let p = descs.problem();
            p.validate(sel.kind())?;
            match self.inner.device {
                DeviceId::Cpu => Ok(None),
                DeviceId::Cuda(_) => self.inner.gpu()?.ctx.workspace_size_checked(
                    p,
                    sel.route(),
                    p.resolve_math(sel.math_type()),
                ),
            }
        })
        .py_err(py)
    }

    /// `dx = alpha * dgrad(w, dy) + beta * dx`, as the original. `workspace` is a
    /// `Workspace` (or None for algorithms that need none).
    #[pyo3(signature = (alpha, w, dy, conv, algo, workspace, beta, dx))]
    fn convolution_backward_data(
        &self,
        py: Python<'_>,
        alpha: &Bound<'_, PyAny>,
        w: &Bound<'_, PyAny>,
        dy: &Bound<'_, PyAny>,
        conv: &Bound<'_, PyConvolutionDescriptor>,
        algo: &Bound<'_, PyAny>,
        workspace: Option<&Bound<'_, PyWorkspace>>,
        beta: &Bound<'_, PyAny>,
        dx: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (alpha, beta) = (scalar(alpha, "alpha")?, scalar(beta, "beta")?);
        let sel = selected_algo(algo)?;
        let ops = operands(w, dy, dx, conv.get())?;
        let ws = workspace.map(Bound::get);
        py.detach(|| self.run(alpha, &ops, &sel, ws, beta))
            .py_err(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "cudnn_rs.Handle(device={:?})",
            self.inner.device.to_string()
        )
    }
}

impl PyHandle {
    /// An engine query on these operands: `gpu`'s answer from the cuDNN context, or, on
    /// the CPU device, the stand-in engine (after the same table and shape checks).
    fn engine_query<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
        dy: &Bound<'py, PyAny>,
        dx: &Bound<'py, PyAny>,
        conv: &Bound<'py, PyConvolutionDescriptor>,
        gpu: impl FnOnce(
                &CudnnContext,
                crate::problem::RawProblem<'_>,
            ) -> Result<crate::convolution::Engine>
            + Send,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ops = operands(w, dy, dx, conv.get())?;
        let engine = py
            .detach(|| -> Result<crate::convolution::Engine> {
                self.check_devices(&[ops.w, ops.dy, ops.dx])?;
                let descs = ops.descs();
                match self.inner.device {
                    DeviceId::Cpu => crate::reference::device::engine_stand_in(&descs.problem()),
                    DeviceId::Cuda(_) => gpu(&self.inner.gpu()?.ctx, descs.problem()),
                }
            })
            .py_err(py)?;
        engine_record(py, engine)
    }

    /// `f` on the cache this handle's finds go through: the cuDNN context's on a GPU, the
    /// handle's own on the CPU device.
    fn with_finds<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&crate::find_cache::FindCache) -> R,
    ) -> PyResult<R> {
        match self.inner.device {
            DeviceId::Cpu => Ok(f(&self.inner.cpu_finds)),
            DeviceId::Cuda(_) => Ok(f(self.inner.gpu().py_err(py)?.ctx.algorithm_cache())),
        }
    }

    /// The cuDNN version and GPU measurements on this handle depend on.
    fn environment(&self, py: Python<'_>) -> PyResult<String> {
        match self.inner.device {
            DeviceId::Cpu => Ok("CPU reference device".to_string()),
            DeviceId::Cuda(_) => Ok(self.inner.gpu().py_err(py)?.ctx.environment()),
        }
    }

    /// Times the graph API's engines on `gpu` (see `find_convolution_backward_data_engine`).
    /// The CPU device (`None`) times its one computation for the stand-in engine.
    fn find_engines(
        &self,
        gpu: Option<&CudnnContext>,
        ops: &Operands<'_>,
        max_ws: Option<usize>,
        deterministic: bool,
        limit: usize,
        budget: Option<std::time::Duration>,
    ) -> Result<Vec<crate::convolution::Engine>> {
        let descs = ops.descs();
        match gpu {
            None => {
                let engine = crate::reference::device::engine_stand_in(&descs.problem())?;
                let scratch = Arc::new(TensorCore::scratch_like(ops.dx)?);
                let timing_ops = Operands {
                    w: ops.w,
                    dy: ops.dy,
                    dx: &scratch,
                    conv: Arc::clone(&ops.conv),
                };
                let start = std::time::Instant::now();
                self.run(1.0, &timing_ops, &SelectedAlgo::Engine(engine), None, 0.0)?;
                Ok(vec![engine.with_time(start.elapsed().as_secs_f32() * 1e3)])
            }
            Some(ctx) => {
                let stream = Arc::clone(ctx.stream());
                let (w, dy) = (ops.w.read(), ops.dy.read());
                let (wp, _g1) = w.device_ptr(&stream)?;
                let (dyp, _g2) = dy.device_ptr(&stream)?;
                // SAFETY: the read locks keep both buffers alive and unwritten until the
                // measurement returns; each was allocated for its descriptor.
                unsafe {
                    ctx.find_engines_raw(
                        descs.problem(),
                        wp,
                        dyp,
                        max_ws,
                        deterministic,
                        limit,
                        budget,
                    )
                }
            }
        }
    }

    /// Measures the legacy algorithms on `gpu`; the CPU device (`None`) times its one
    /// computation for every algorithm the table lists.
    fn find(
        &self,
        gpu: Option<&CudnnContext>,
        ops: &Operands<'_>,
        max_ws: Option<usize>,
        deterministic: bool,
    ) -> Result<Vec<BestHeuristic>> {
        let descs = ops.descs();
        match gpu {
            None => {
                // Every algorithm is the same code on the CPU: time one run into scratch.
                let algos = crate::reference::device::algorithms(&descs.problem(), deterministic)?;
                let Some(&first) = algos.first() else {
                    return Ok(Vec::new());
                };
                let scratch = TensorCore::scratch_like(ops.dx)?;
                let sel = SelectedAlgo::Fixed(first);
                let scratch = Arc::new(scratch);
                let timing_ops = Operands {
                    w: ops.w,
                    dy: ops.dy,
                    dx: &scratch,
                    conv: Arc::clone(&ops.conv),
                };
                let start = std::time::Instant::now();
                self.run(1.0, &timing_ops, &sel, None, 0.0)?;
                let ms = start.elapsed().as_secs_f32() * 1e3;
                Ok(algos
                    .into_iter()
                    .map(|a| BestHeuristic::new(a, ms, 0, a.determinism(), ops.conv.math_type()))
                    .collect())
            }
            Some(ctx) => {
                let stream = Arc::clone(ctx.stream());
                let (w, dy) = (ops.w.read(), ops.dy.read());
                let (wp, _g1) = w.device_ptr(&stream)?;
                let (dyp, _g2) = dy.device_ptr(&stream)?;
                // SAFETY: the read locks keep both buffers alive and unwritten until the
                // measurement returns; each was allocated for its descriptor.
                unsafe { ctx.find_algorithms_raw(descs.problem(), wp, dyp, max_ws, deterministic) }
            }
        }
    }
}
