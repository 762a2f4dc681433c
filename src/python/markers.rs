//! Marker classes mirroring the Rust marker types: data types, formats, algorithms, and
//! the enums.

use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};
use pyo3::PyClassInitializer;

use crate::convolution::{
    AlgoKind, BestHeuristic, BwdDataAlgo, ConvolutionMode, Engine, SelectedAlgo,
};
use crate::data_type::DType;
use crate::determinism::Determinism;
use crate::math_type::MathType;
use crate::tensor::Format;

// ---------------------------------------------------------------- data types

/// Base class of the data-type markers (`f32`, `f16`, ...).
#[pyclass(subclass, frozen, name = "DType", module = "cudnn_rs")]
pub(crate) struct PyDType {
    pub dtype: DType,
}

#[pymethods]
impl PyDType {
    /// Short name: "f32", "bf16", ...
    #[getter]
    fn name(&self) -> &'static str {
        self.dtype.name()
    }
    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.dtype.size()
    }
    fn __repr__(&self) -> String {
        format!("cudnn_rs.{}", self.dtype.name())
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyDType>()
            .is_ok_and(|o| o.get().dtype == self.dtype)
    }
    fn __hash__(&self) -> u64 {
        self.dtype as u64 + 0x5eed
    }
}

macro_rules! dtype_classes {
    ($($cls:ident => $name:literal, $dt:ident;)*) => {
        $(
            #[doc = concat!("The `", $name, "` data-type marker.")]
            #[pyclass(extends = PyDType, frozen, name = $name, module = "cudnn_rs")]
            pub(crate) struct $cls;

            #[pymethods]
            impl $cls {
                #[new]
                fn new() -> PyClassInitializer<Self> {
                    PyClassInitializer::from(PyDType { dtype: DType::$dt }).add_subclass($cls)
                }
                /// Pickling and copying: a marker is made again by its class.
                fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, pyo3::types::PyType>, ()) {
                    (slf.get_type(), ())
                }
            }
        )*

        fn dtype_instance(py: Python<'_>, dtype: DType) -> PyResult<Py<PyDType>> {
            let obj: Bound<'_, PyAny> = match dtype {
                $(DType::$dt => Bound::new(
                    py,
                    PyClassInitializer::from(PyDType { dtype }).add_subclass($cls),
                )?.into_any(),)*
            };
            Ok(obj.cast_into::<PyDType>()?.unbind())
        }

        pub(crate) fn register_dtypes(m: &Bound<'_, PyModule>) -> PyResult<()> {
            m.add_class::<PyDType>()?;
            $(m.add_class::<$cls>()?;)*
            for d in DType::ALL {
                m.add(d.name(), dtype_singleton(m.py(), d)?)?;
            }
            Ok(())
        }
    };
}

dtype_classes! {
    PyF32 => "F32", F32;
    PyF64 => "F64", F64;
    PyF16 => "F16", F16;
    PyBF16 => "BF16", BF16;
    PyI8 => "I8", I8;
    PyU8 => "U8", U8;
    PyI32 => "I32", I32;
    PyI64 => "I64", I64;
}

static DTYPE_SINGLETONS: pyo3::sync::PyOnceLock<Vec<Py<PyDType>>> = pyo3::sync::PyOnceLock::new();

/// The module-level instance for `dtype` (`cudnn_rs.f32`, ...).
pub(crate) fn dtype_singleton(py: Python<'_>, dtype: DType) -> PyResult<Bound<'_, PyDType>> {
    let all = DTYPE_SINGLETONS.get_or_try_init(py, || {
        DType::ALL
            .iter()
            .map(|&d| dtype_instance(py, d))
            .collect::<PyResult<Vec<_>>>()
    })?;
    let idx = DType::ALL.iter().position(|&d| d == dtype).unwrap_or(0);
    Ok(all[idx].bind(py).clone())
}

/// Reads a data type from a marker instance, a marker class or a name ("f32",
/// "float32").
pub(crate) fn extract_dtype(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = obj.cast::<PyDType>() {
        return Ok(d.get().dtype);
    }
    if let Ok(t) = obj.cast::<PyType>() {
        if t.is_subclass_of::<PyDType>()? {
            return extract_dtype(&t.call0()?);
        }
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let s = s.to_cow()?;
        if let Some(d) = DType::from_name(&s).or_else(|| dtype_from_numpy_name(&s)) {
            return Ok(d);
        }
    }
    // A NumPy type or dtype (np.float32, np.dtype("float32")): name ours.
    let hint = obj
        .getattr("__name__")
        .or_else(|_| obj.getattr("name"))
        .ok()
        .and_then(|n| n.extract::<String>().ok())
        .and_then(|n| dtype_from_numpy_name(&n))
        .map(|d| format!("; use cudnn_rs.{}", d.name()))
        .unwrap_or_default();
    let names = DType::ALL
        .iter()
        .map(|d| format!("cudnn_rs.{}", d.name()))
        .collect::<Vec<_>>()
        .join(", ");
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "expected a cudnn_rs data type ({names}, or a name such as \"f32\" or \"float32\"), got {}{hint}",
        super::describe::describe(obj)
    )))
}

/// Maps a NumPy dtype name to ours.
pub(crate) fn dtype_from_numpy_name(name: &str) -> Option<DType> {
    Some(match name {
        "float32" => DType::F32,
        "float64" => DType::F64,
        "float16" => DType::F16,
        "bfloat16" => DType::BF16,
        "int8" => DType::I8,
        "uint8" => DType::U8,
        "int32" => DType::I32,
        "int64" => DType::I64,
        _ => return None,
    })
}

/// The NumPy dtype name for ours (bf16 needs ml_dtypes).
pub(crate) fn numpy_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::F16 => "float16",
        DType::BF16 => "bfloat16",
        DType::I8 => "int8",
        DType::U8 => "uint8",
        DType::I32 => "int32",
        DType::I64 => "int64",
    }
}

// ---------------------------------------------------------------- formats

/// Base class of the memory-format markers. The classes themselves (`NCHW`, `NHWC`, ...)
/// are the markers: pass `format=cudnn_rs.NHWC`.
#[pyclass(subclass, frozen, name = "Format", module = "cudnn_rs")]
pub(crate) struct PyFormat {
    pub format: Format,
}

#[pymethods]
impl PyFormat {
    /// The format's name (each marker class overrides it).
    #[classattr]
    fn name() -> &'static str {
        "Format"
    }
    fn __repr__(&self) -> String {
        format!("cudnn_rs.{}()", self.format.name())
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyFormat>()
            .is_ok_and(|o| o.get().format == self.format)
    }
    fn __hash__(&self) -> u64 {
        self.format as u64 + 0xf0
    }
}

macro_rules! format_classes {
    ($($cls:ident => $name:literal, $fmt:ident;)*) => {
        $(
            #[doc = concat!("The `", $name, "` memory-format marker.")]
            #[pyclass(extends = PyFormat, frozen, name = $name, module = "cudnn_rs")]
            pub(crate) struct $cls;

            #[pymethods]
            impl $cls {
                #[new]
                fn new() -> PyClassInitializer<Self> {
                    PyClassInitializer::from(PyFormat { format: Format::$fmt }).add_subclass($cls)
                }
                /// The format's name.
                #[classattr]
                fn name() -> &'static str {
                    $name
                }
            }
        )*

        /// The marker class for `format`.
        pub(crate) fn format_class(py: Python<'_>, format: Format) -> Bound<'_, PyType> {
            match format {
                $(Format::$fmt => py.get_type::<$cls>(),)*
            }
        }

        pub(crate) fn register_formats(m: &Bound<'_, PyModule>) -> PyResult<()> {
            m.add_class::<PyFormat>()?;
            $(m.add_class::<$cls>()?;)*
            Ok(())
        }
    };
}

format_classes! {
    PyNCHW => "NCHW", Nchw;
    PyNHWC => "NHWC", Nhwc;
    PyNCHWVectC8x4 => "NCHWVectC8x4", NchwVectC8x4;
    PyNCHWVectC8x32 => "NCHWVectC8x32", NchwVectC8x32;
}

/// Reads a format from a marker class, a marker instance or a name ("NHWC").
pub(crate) fn extract_format(obj: &Bound<'_, PyAny>) -> PyResult<Format> {
    if let Ok(f) = obj.cast::<PyFormat>() {
        return Ok(f.get().format);
    }
    if let Ok(t) = obj.cast::<PyType>() {
        if t.is_subclass_of::<PyFormat>()? {
            if let Ok(name) = t.getattr("name").and_then(|n| n.extract::<String>()) {
                if let Some(f) = Format::from_name(&name) {
                    return Ok(f);
                }
            }
        }
    }
    if let Ok(s) = obj.cast::<PyString>() {
        if let Some(f) = Format::from_name(&s.to_cow()?) {
            return Ok(f);
        }
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "expected a cudnn_rs format (cudnn_rs.NCHW, cudnn_rs.NHWC, ...), got {}",
        super::describe::describe(obj)
    )))
}

// ---------------------------------------------------------------- enums

/// Whether the filter is flipped (`Convolution`) or not (`CrossCorrelation`).
#[pyclass(
    eq,
    eq_int,
    frozen,
    hash,
    from_py_object,
    name = "ConvolutionMode",
    module = "cudnn_rs"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PyConvolutionMode {
    Convolution,
    CrossCorrelation,
}

impl From<PyConvolutionMode> for ConvolutionMode {
    fn from(m: PyConvolutionMode) -> Self {
        match m {
            PyConvolutionMode::Convolution => ConvolutionMode::Convolution,
            PyConvolutionMode::CrossCorrelation => ConvolutionMode::CrossCorrelation,
        }
    }
}

impl From<ConvolutionMode> for PyConvolutionMode {
    fn from(m: ConvolutionMode) -> Self {
        match m {
            ConvolutionMode::Convolution => PyConvolutionMode::Convolution,
            ConvolutionMode::CrossCorrelation => PyConvolutionMode::CrossCorrelation,
        }
    }
}

/// cuDNN's math mode: whether tensor cores may be used.
#[pyclass(
    eq,
    eq_int,
    frozen,
    hash,
    from_py_object,
    name = "MathType",
    module = "cudnn_rs"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PyMathType {
    Default,
    TensorOp,
    TensorOpAllowConversion,
    Fma,
}

impl From<PyMathType> for MathType {
    fn from(m: PyMathType) -> Self {
        match m {
            PyMathType::Default => MathType::Default,
            PyMathType::TensorOp => MathType::TensorOp,
            PyMathType::TensorOpAllowConversion => MathType::TensorOpAllowConversion,
            PyMathType::Fma => MathType::Fma,
        }
    }
}

impl From<MathType> for PyMathType {
    fn from(m: MathType) -> Self {
        match m {
            MathType::Default => PyMathType::Default,
            MathType::TensorOp => PyMathType::TensorOp,
            MathType::TensorOpAllowConversion => PyMathType::TensorOpAllowConversion,
            MathType::Fma => PyMathType::Fma,
        }
    }
}

/// Whether an algorithm's results are bitwise reproducible. As ints, cuDNN's
/// `cudnnDeterminism_t` values (non-deterministic 0, deterministic 1), as `ConvolutionMode`
/// and `MathType` have cuDNN's.
#[pyclass(
    eq,
    eq_int,
    frozen,
    hash,
    from_py_object,
    name = "Determinism",
    module = "cudnn_rs"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PyDeterminism {
    Deterministic = 1,
    NonDeterministic = 0,
}

impl From<Determinism> for PyDeterminism {
    fn from(d: Determinism) -> Self {
        match d {
            Determinism::Deterministic => PyDeterminism::Deterministic,
            Determinism::NonDeterministic => PyDeterminism::NonDeterministic,
        }
    }
}

/// What `__reduce__` of an enum member returns: a callable and its arguments.
type Reduced<'py> = (Bound<'py, PyAny>, (Bound<'py, pyo3::types::PyType>, String));

/// `enum_member.__reduce__()`: the member, read from its class by name when unpickled
/// or copied (`getattr(cudnn_rs.MathType, "Fma")`).
fn reduce_member<'py>(slf: &Bound<'py, PyAny>, name: &str) -> PyResult<Reduced<'py>> {
    let getattr = slf.py().import("builtins")?.getattr("getattr")?;
    Ok((getattr, (slf.get_type(), name.to_owned())))
}

#[pymethods]
impl PyConvolutionMode {
    /// The member's name, as `enum.Enum.name`.
    #[getter]
    #[allow(clippy::trivially_copy_pass_by_ref)] // pyo3 getters take &self
    fn name(&self) -> &'static str {
        ConvolutionMode::from(*self).name()
    }
    /// Pickling and copying (see [`reduce_member`]).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        reduce_member(slf.as_any(), slf.get().name())
    }
}

#[pymethods]
impl PyMathType {
    /// The member's name, as `enum.Enum.name`.
    #[getter]
    #[allow(clippy::trivially_copy_pass_by_ref)] // pyo3 getters take &self
    fn name(&self) -> &'static str {
        MathType::from(*self).name()
    }
    /// Pickling and copying (see [`reduce_member`]).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        reduce_member(slf.as_any(), slf.get().name())
    }
}

#[pymethods]
impl PyDeterminism {
    /// The member's name, as `enum.Enum.name`.
    #[getter]
    #[allow(clippy::trivially_copy_pass_by_ref)] // pyo3 getters take &self
    fn name(&self) -> &'static str {
        match self {
            PyDeterminism::Deterministic => "Deterministic",
            PyDeterminism::NonDeterministic => "NonDeterministic",
        }
    }
    /// Pickling and copying (see [`reduce_member`]).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        reduce_member(slf.as_any(), slf.get().name())
    }
}

// ---------------------------------------------------------------- algorithms

/// Base class of the backward-data algorithms.
#[pyclass(subclass, frozen, name = "Algorithm", module = "cudnn_rs")]
pub(crate) struct PyAlgorithm {
    pub kind: AlgoKind,
}

#[pymethods]
impl PyAlgorithm {
    /// The algorithm's name ("DataAlgo0", ..., "BestHeuristic", "Engine", "BestEngine").
    #[getter]
    fn name(&self) -> &'static str {
        self.kind.name()
    }
    fn __repr__(&self) -> String {
        format!("cudnn_rs.{}()", self.kind.name())
    }
    fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> bool {
        let (Ok(a), Ok(b)) = (selected_algo(slf.as_any()), selected_algo(other)) else {
            return false;
        };
        a.kind() == b.kind() && a.route() == b.route()
    }
    fn __hash__(slf: &Bound<'_, Self>) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        if let Ok(s) = selected_algo(slf.as_any()) {
            (s.kind(), s.route()).hash(&mut h);
        }
        h.finish()
    }
}

macro_rules! algo_classes {
    ($($cls:ident => $name:literal, $kind:ident, $doc:literal;)*) => {
        $(
            #[doc = $doc]
            #[pyclass(extends = PyAlgorithm, frozen, name = $name, module = "cudnn_rs")]
            pub(crate) struct $cls;

            #[pymethods]
            impl $cls {
                #[new]
                fn new() -> PyClassInitializer<Self> {
                    PyClassInitializer::from(PyAlgorithm { kind: AlgoKind::$kind }).add_subclass($cls)
                }
                /// Pickling and copying: a marker is made again by its class.
                fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, pyo3::types::PyType>, ()) {
                    (slf.get_type(), ())
                }
            }
        )*

        /// A fresh instance of the marker class of `algo`.
        pub(crate) fn algo_instance(py: Python<'_>, algo: BwdDataAlgo) -> PyResult<Bound<'_, PyAny>> {
            Ok(match algo.kind() {
                $(AlgoKind::$kind => Bound::new(py, PyClassInitializer::from(PyAlgorithm { kind: AlgoKind::$kind }).add_subclass($cls))?.into_any(),)*
                _ => py.None().into_bound(py),
            })
        }

        pub(crate) fn register_algos(m: &Bound<'_, PyModule>) -> PyResult<()> {
            m.add_class::<PyAlgorithm>()?;
            $(m.add_class::<$cls>()?;)*
            m.add_class::<PyBestHeuristic>()?;
            m.add_class::<PyAlgoPerf>()?;
            m.add_class::<PyEngine>()?;
            Ok(())
        }
    };
}

algo_classes! {
    PyDataAlgo0 => "DataAlgo0", DataAlgo0, "CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: sums of matrix products with atomics (non-deterministic).";
    PyDataAlgo1 => "DataAlgo1", DataAlgo1, "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: implicit matrix product (deterministic).";
    PyFft => "Fft", Fft, "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: FFT, large workspace.";
    PyFftTiling => "FftTiling", FftTiling, "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: tiled FFT.";
    PyWinograd => "Winograd", Winograd, "CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: fused Winograd.";
    PyWinogradNonFused => "WinogradNonFused", WinogradNonFused, "CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED.";
    PyBestEngine => "BestEngine", BestEngine, "The graph API's heuristic engine for the problem, chosen on first use per problem and kept on the handle.";
    PyDefaultAlgo => "DefaultAlgo", DefaultAlgo, "The library's default choice (what the one-call API runs): made without timing, the same in every process for a problem, cuDNN and GPU; on a handle with benchmark=True, the fastest engine measured once per problem. Admitted on every configuration.";
}

/// An algorithm cuDNN chose, with what it said of it. Usable wherever an algorithm is.
#[pyclass(extends = PyAlgorithm, subclass, frozen, name = "BestHeuristic", module = "cudnn_rs")]
pub(crate) struct PyBestHeuristic {
    pub best: BestHeuristic,
}

#[pymethods]
impl PyBestHeuristic {
    /// The algorithm chosen (an instance of `DataAlgo0`, ..., `WinogradNonFused`).
    #[getter]
    fn algo<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        algo_instance(py, self.best.algo())
    }
    /// Milliseconds cuDNN measured, or -1.0 where it only estimated.
    #[getter]
    fn time(&self) -> f32 {
        self.best.time()
    }
    /// Workspace bytes the algorithm needs.
    #[getter]
    fn workspace_size(&self) -> usize {
        self.best.workspace_size()
    }
    #[getter]
    fn determinism(&self) -> PyDeterminism {
        self.best.determinism().into()
    }
    #[getter]
    fn math_type(&self) -> PyMathType {
        self.best.math_type().into()
    }
    fn __repr__(&self) -> String {
        format!(
            "cudnn_rs.BestHeuristic(algo={}, time={}, workspace_size={}, determinism={}, math_type={})",
            self.best.algo().name(),
            self.best.time(),
            self.best.workspace_size(),
            self.best.determinism().name(),
            self.best.math_type().name()
        )
    }
}

/// One measured result of `find_convolution_backward_data_algorithm`.
#[pyclass(extends = PyBestHeuristic, frozen, name = "AlgoPerf", module = "cudnn_rs")]
pub(crate) struct PyAlgoPerf;

#[pymethods]
impl PyAlgoPerf {
    fn __repr__(slf: PyRef<'_, Self>) -> String {
        slf.as_super()
            .__repr__()
            .replacen("BestHeuristic", "AlgoPerf", 1)
    }
}

pub(crate) fn best_heuristic(py: Python<'_>, best: BestHeuristic) -> PyResult<Bound<'_, PyAny>> {
    let init = PyClassInitializer::from(PyAlgorithm {
        kind: AlgoKind::BestHeuristic,
    })
    .add_subclass(PyBestHeuristic { best });
    Ok(Bound::new(py, init)?.into_any())
}

pub(crate) fn algo_perf(py: Python<'_>, best: BestHeuristic) -> PyResult<Bound<'_, PyAny>> {
    let init = PyClassInitializer::from(PyAlgorithm {
        kind: AlgoKind::BestHeuristic,
    })
    .add_subclass(PyBestHeuristic { best })
    .add_subclass(PyAlgoPerf);
    Ok(Bound::new(py, init)?.into_any())
}

/// One graph-API engine configuration, as `get_/find_convolution_backward_data_engine`
/// return it. Usable wherever an algorithm is (where the support table lists `Engine`).
#[pyclass(extends = PyAlgorithm, frozen, name = "Engine", module = "cudnn_rs")]
pub(crate) struct PyEngine {
    pub engine: Engine,
}

#[pymethods]
impl PyEngine {
    /// The engine's global index in cuDNN.
    #[getter]
    fn index(&self) -> i64 {
        self.engine.config().index()
    }
    /// The knob choices, `(knob type, value)` as cuDNN numbers them.
    #[getter]
    fn knobs(&self) -> Vec<(u32, i64)> {
        self.engine.config().knobs().collect()
    }
    /// Milliseconds measured (`find_convolution_backward_data_engine`), or -1.0.
    #[getter]
    fn time(&self) -> f32 {
        self.engine.time()
    }
    /// Workspace bytes the engine needs for the problem it was chosen for.
    #[getter]
    fn workspace_size(&self) -> usize {
        self.engine.workspace_size()
    }
    #[getter]
    fn determinism(&self) -> PyDeterminism {
        self.engine.determinism().into()
    }
    /// `TensorOp` when the engine runs on tensor cores (TF32 for f32 data), else `Fma`.
    #[getter]
    fn math_type(&self) -> PyMathType {
        self.engine.math_type().into()
    }
    fn __repr__(&self) -> String {
        format!(
            "cudnn_rs.Engine(index={}, knobs={:?}, time={}, workspace_size={}, determinism={}, math_type={})",
            self.engine.config().index(),
            self.engine.config().knobs().collect::<Vec<_>>(),
            self.engine.time(),
            self.engine.workspace_size(),
            self.engine.determinism().name(),
            self.engine.math_type().name()
        )
    }
}

pub(crate) fn engine_record(py: Python<'_>, engine: Engine) -> PyResult<Bound<'_, PyAny>> {
    let init = PyClassInitializer::from(PyAlgorithm {
        kind: AlgoKind::Engine,
    })
    .add_subclass(PyEngine { engine });
    Ok(Bound::new(py, init)?.into_any())
}

/// Reads an algorithm argument: an instance of a marker class, of `BestHeuristic` or of
/// `Engine`; a marker class itself is accepted too.
pub(crate) fn selected_algo(obj: &Bound<'_, PyAny>) -> PyResult<SelectedAlgo> {
    if let Ok(b) = obj.cast::<PyBestHeuristic>() {
        return Ok(SelectedAlgo::Heuristic(b.get().best));
    }
    if let Ok(e) = obj.cast::<PyEngine>() {
        return Ok(SelectedAlgo::Engine(e.get().engine));
    }
    if let Ok(a) = obj.cast::<PyAlgorithm>() {
        let kind = a.get().kind;
        if let Some(algo) = kind.fixed() {
            return Ok(SelectedAlgo::Fixed(algo));
        }
        if kind == AlgoKind::BestEngine {
            return Ok(SelectedAlgo::BestEngine);
        }
        if kind == AlgoKind::DefaultAlgo {
            return Ok(SelectedAlgo::Default);
        }
    }
    if let Ok(t) = obj.cast::<PyType>() {
        if t.is_subclass_of::<PyAlgorithm>()?
            && !t.is_subclass_of::<PyBestHeuristic>()?
            && !t.is_subclass_of::<PyEngine>()?
        {
            return selected_algo(&t.call0()?);
        }
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "expected an algorithm (cudnn_rs.DataAlgo0(), ..., cudnn_rs.DefaultAlgo(), a \
         BestHeuristic or an Engine), got {}",
        super::describe::describe(obj)
    )))
}
