//! cuDNN statuses as [`CudnnError`], and the crate-wide [`Error`].

use std::fmt;

macro_rules! cudnn_statuses {
    ($($(#[$doc:meta])* $variant:ident = $code:literal => $name:literal,)*) => {
        /// A non-success `cudnnStatus_t`, one variant per status cuDNN 9 defines. The
        /// original crate's names are kept where cuDNN 9 still has the status (cuDNN 9
        /// folded `ALLOC_FAILED`, `ARCH_MISMATCH`, `MAPPING_ERROR`,
        /// `RUNTIME_PREREQUISITE_MISSING` and `VERSION_MISMATCH` into finer codes, which
        /// carry those names here).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum CudnnError {
            $($(#[$doc])* $variant,)*
            /// A status code this crate does not know (a newer cuDNN).
            Unknown(u32),
        }

        impl CudnnError {
            /// Every known status, for tests and documentation.
            pub const ALL: &'static [CudnnError] = &[$(CudnnError::$variant,)*];

            /// The raw status code.
            pub const fn code(self) -> u32 {
                match self {
                    $(CudnnError::$variant => $code,)*
                    CudnnError::Unknown(c) => c,
                }
            }

            /// cuDNN's name for the status, e.g. `"CUDNN_STATUS_NOT_SUPPORTED"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(CudnnError::$variant => $name,)*
                    CudnnError::Unknown(_) => "CUDNN_STATUS_UNKNOWN",
                }
            }

            /// Maps a raw status; `None` for success.
            pub const fn from_code(code: u32) -> Option<Self> {
                match code {
                    0 => None,
                    $($code => Some(CudnnError::$variant),)*
                    other => Some(CudnnError::Unknown(other)),
                }
            }
        }
    };
}

cudnn_statuses! {
    NotInitialized = 1001 => "CUDNN_STATUS_NOT_INITIALIZED",
    /// Formerly `CUDNN_STATUS_VERSION_MISMATCH`.
    VersionMismatch = 1002 => "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH",
    SerializationVersionMismatch = 1003 => "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH",
    Deprecated = 1004 => "CUDNN_STATUS_DEPRECATED",
    LicenseError = 1005 => "CUDNN_STATUS_LICENSE_ERROR",
    RuntimeInProgress = 1006 => "CUDNN_STATUS_RUNTIME_IN_PROGRESS",
    RuntimeFpOverflow = 1007 => "CUDNN_STATUS_RUNTIME_FP_OVERFLOW",
    SublibraryLoadingFailed = 1008 => "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED",
    BadParam = 2000 => "CUDNN_STATUS_BAD_PARAM",
    InvalidValue = 2001 => "CUDNN_STATUS_INVALID_VALUE",
    BadParamNullPointer = 2002 => "CUDNN_STATUS_BAD_PARAM_NULL_POINTER",
    BadParamMisalignedPointer = 2003 => "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER",
    BadParamNotFinalized = 2004 => "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED",
    BadParamOutOfBound = 2005 => "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND",
    BadParamSizeInsufficient = 2006 => "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT",
    BadParamStreamMismatch = 2007 => "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH",
    BadParamShapeMismatch = 2008 => "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH",
    BadParamDuplicatedEntries = 2009 => "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES",
    BadParamAttributeType = 2010 => "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE",
    BadParamCudaGraphMismatch = 2011 => "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH",
    BadParamDescriptorType = 2012 => "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE",
    NotSupported = 3000 => "CUDNN_STATUS_NOT_SUPPORTED",
    NotSupportedGraphPattern = 3001 => "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN",
    NotSupportedShape = 3002 => "CUDNN_STATUS_NOT_SUPPORTED_SHAPE",
    NotSupportedDataType = 3003 => "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE",
    NotSupportedLayout = 3004 => "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT",
    NotSupportedIncompatibleCudaDriver = 3005 => "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER",
    NotSupportedIncompatibleCudart = 3006 => "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART",
    /// Formerly `CUDNN_STATUS_ARCH_MISMATCH`.
    ArchMismatch = 3007 => "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH",
    /// Formerly `CUDNN_STATUS_RUNTIME_PREREQUISITE_MISSING`.
    RuntimePrerequisiteMissing = 3008 => "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING",
    NotSupportedSublibraryUnavailable = 3009 => "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE",
    NotSupportedSharedMemoryInsufficient = 3010 => "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT",
    NotSupportedPadding = 3011 => "CUDNN_STATUS_NOT_SUPPORTED_PADDING",
    NotSupportedBadLaunchParam = 3012 => "CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM",
    NotSupportedCudaGraphNativeApi = 3013 => "CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API",
    InternalError = 4000 => "CUDNN_STATUS_INTERNAL_ERROR",
    InternalErrorCompilationFailed = 4001 => "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED",
    InternalErrorUnexpectedValue = 4002 => "CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE",
    /// Formerly `CUDNN_STATUS_ALLOC_FAILED`.
    AllocFailed = 4003 => "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
    InternalErrorDeviceAllocationFailed = 4004 => "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
    InternalErrorBadLaunchParam = 4005 => "CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM",
    InternalErrorTextureCreationFailed = 4006 => "CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED",
    ExecutionFailed = 5000 => "CUDNN_STATUS_EXECUTION_FAILED",
    /// Formerly `CUDNN_STATUS_MAPPING_ERROR`.
    MappingError = 5001 => "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER",
    ExecutionFailedCublas = 5002 => "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS",
    ExecutionFailedCudart = 5003 => "CUDNN_STATUS_EXECUTION_FAILED_CUDART",
    ExecutionFailedCurand = 5004 => "CUDNN_STATUS_EXECUTION_FAILED_CURAND",
}

impl CudnnError {
    /// The status family (`NOT_SUPPORTED` for every `NOT_SUPPORTED_*` code, ...), as
    /// cuDNN 9 groups them by thousands.
    pub const fn category(self) -> CudnnError {
        match self.code() / 1000 {
            2 => CudnnError::BadParam,
            3 => CudnnError::NotSupported,
            4 => CudnnError::InternalError,
            5 => CudnnError::ExecutionFailed,
            _ => self,
        }
    }

    /// Whether cuDNN said the configuration is not supported (any `NOT_SUPPORTED*`).
    pub const fn is_not_supported(self) -> bool {
        self.code() / 1000 == 3
    }
}

impl fmt::Display for CudnnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CudnnError::Unknown(code) => write!(f, "unknown cuDNN status {code}"),
            other => f.write_str(other.name()),
        }
    }
}

impl std::error::Error for CudnnError {}

/// Turns a raw `cudnnStatus_t` into a `Result`, as the original's `IntoResult`.
pub trait IntoResult {
    fn into_result(self) -> Result<(), CudnnError>;
}

impl IntoResult for u32 {
    fn into_result(self) -> Result<(), CudnnError> {
        match CudnnError::from_code(self) {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }
}

/// cuDNN's own status type, as the original implements it.
impl IntoResult for cudarc::cudnn::sys::cudnnStatus_t {
    fn into_result(self) -> Result<(), CudnnError> {
        (self as u32).into_result()
    }
}

/// Why a configuration is outside the support table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedConfiguration {
    /// The configuration asked for, rendered as a table row.
    pub requested: String,
    /// The nearest rows of the support table, rendered, best first.
    pub nearest: Vec<String>,
}

impl fmt::Display for UnsupportedConfiguration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unsupported backward-data configuration {}",
            self.requested
        )?;
        if !self.nearest.is_empty() {
            write!(f, "; nearest supported: {}", self.nearest.join("; "))?;
        }
        Ok(())
    }
}

/// Every failure the crate reports. Nothing a caller passes leads to a panic: it leads
/// to one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// cuDNN returned a non-success status; `context` says during what.
    Cudnn { status: CudnnError, context: String },
    /// The CUDA driver failed (no device, invalid ordinal, launch failure, ...).
    Cuda(String),
    /// Device memory could not be allocated.
    OutOfMemory {
        requested_bytes: usize,
        detail: String,
    },
    /// A shared library could not be loaded; `searched` lists where we looked.
    LibraryNotFound {
        library: String,
        searched: Vec<String>,
        hint: String,
    },
    /// Shapes that do not fit each other, the descriptor or the buffer.
    Shape(String),
    /// An invalid argument that is not a shape (negative padding, zero stride, ...).
    InvalidArgument(String),
    /// The combination is not in the support table.
    Unsupported(UnsupportedConfiguration),
    /// Operands live on different devices.
    DeviceMismatch(String),
}

impl Error {
    pub(crate) fn cudnn(status: CudnnError, context: impl Into<String>) -> Self {
        Error::Cudnn {
            status,
            context: context.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Cudnn { status, context } if context.is_empty() => write!(f, "{status}"),
            Error::Cudnn { status, context } => write!(f, "{status}: {context}"),
            Error::Cuda(msg) => write!(f, "CUDA error: {msg}"),
            Error::OutOfMemory {
                requested_bytes,
                detail,
            } => write!(
                f,
                "out of device memory allocating {requested_bytes} bytes: {detail}"
            ),
            Error::LibraryNotFound {
                library,
                searched,
                hint,
            } => write!(
                f,
                "could not load {library}; looked in: {}. {hint}",
                if searched.is_empty() {
                    "nowhere".to_string()
                } else {
                    searched.join(", ")
                }
            ),
            Error::Shape(msg) => write!(f, "shape error: {msg}"),
            Error::InvalidArgument(msg) => write!(f, "invalid argument: {msg}"),
            Error::Unsupported(u) => write!(f, "{u}"),
            Error::DeviceMismatch(msg) => write!(f, "device mismatch: {msg}"),
        }
    }
}

impl std::error::Error for Error {}

/// The nearest cuDNN status of an error, so that `?` works in code written against the
/// original crate's `Result<_, CudnnError>`: a cuDNN failure keeps its status; shapes and
/// other invalid arguments are `BadParam` (what cuDNN answers to them), configurations
/// outside the support table `NotSupported`, device memory `AllocFailed`, a missing
/// library `RuntimePrerequisiteMissing`, driver and device failures `ExecutionFailed`.
/// The message is lost: keep the [`Error`] where it matters.
impl From<Error> for CudnnError {
    fn from(e: Error) -> Self {
        match e {
            Error::Cudnn { status, .. } => status,
            Error::Shape(_) | Error::InvalidArgument(_) | Error::DeviceMismatch(_) => {
                CudnnError::BadParam
            }
            Error::Unsupported(_) => CudnnError::NotSupported,
            Error::OutOfMemory { .. } => CudnnError::AllocFailed,
            Error::LibraryNotFound { .. } => CudnnError::RuntimePrerequisiteMissing,
            Error::Cuda(_) => CudnnError::ExecutionFailed,
        }
    }
}

impl From<CudnnError> for Error {
    fn from(status: CudnnError) -> Self {
        Error::cudnn(status, "")
    }
}

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Self {
        use cudarc::driver::sys::cudaError_enum;
        if e.0 == cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
            Error::OutOfMemory {
                requested_bytes: 0,
                detail: format!("{e:?}"),
            }
        } else {
            Error::Cuda(format!("{e:?}"))
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_convert_to_the_nearest_cudnn_status() {
        use cudarc::cudnn::sys::cudnnStatus_t;
        let cases = [
            (
                Error::cudnn(CudnnError::ArchMismatch, "x"),
                CudnnError::ArchMismatch,
            ),
            (Error::Shape("dy".into()), CudnnError::BadParam),
            (
                Error::InvalidArgument("stride 0".into()),
                CudnnError::BadParam,
            ),
            (
                Error::DeviceMismatch("0 and 1".into()),
                CudnnError::BadParam,
            ),
            (
                Error::OutOfMemory {
                    requested_bytes: 1,
                    detail: String::new(),
                },
                CudnnError::AllocFailed,
            ),
            (Error::Cuda("launch".into()), CudnnError::ExecutionFailed),
        ];
        for (e, want) in cases {
            assert_eq!(CudnnError::from(e.clone()), want, "{e}");
        }
        // `?` from a crate call into code returning the original's error type.
        let f = || -> std::result::Result<(), CudnnError> {
            Err(Error::Shape("x".into()))?;
            Ok(())
        };
        assert_eq!(f(), Err(CudnnError::BadParam));
        assert_eq!(cudnnStatus_t::CUDNN_STATUS_SUCCESS.into_result(), Ok(()));
        assert_eq!(
            cudnnStatus_t::CUDNN_STATUS_NOT_SUPPORTED.into_result(),
            Err(CudnnError::NotSupported)
        );
    }

    #[test]
    fn codes_round_trip_and_names_are_unique() {
        let mut names = std::collections::HashSet::new();
        for &e in CudnnError::ALL {
            assert_eq!(CudnnError::from_code(e.code()), Some(e));
            assert!(e.name().starts_with("CUDNN_STATUS_"), "{}", e.name());
            assert!(names.insert(e.name()), "duplicate {}", e.name());
        }
        assert_eq!(CudnnError::from_code(0), None);
        assert_eq!(CudnnError::from_code(77), Some(CudnnError::Unknown(77)));
        assert_eq!(CudnnError::ALL.len(), 47);
    }

    #[test]
    fn families_group_by_thousands() {
        assert_eq!(
            CudnnError::NotSupportedShape.category(),
            CudnnError::NotSupported
        );
        assert!(CudnnError::NotSupportedLayout.is_not_supported());
        assert!(!CudnnError::BadParam.is_not_supported());
        assert_eq!(
            CudnnError::BadParamOutOfBound.category(),
            CudnnError::BadParam
        );
        assert_eq!(
            CudnnError::LicenseError.category(),
            CudnnError::LicenseError
        );
        assert_eq!(0u32.into_result(), Ok(()));
        assert_eq!(3000u32.into_result(), Err(CudnnError::NotSupported));
    }

    #[test]
    fn messages_carry_context() {
        let e = Error::cudnn(CudnnError::NotSupported, "DataAlgo0 on 1x1x3x3");
        assert_eq!(
            e.to_string(),
            "CUDNN_STATUS_NOT_SUPPORTED: DataAlgo0 on 1x1x3x3"
        );
        let e = Error::LibraryNotFound {
            library: "cuDNN".into(),
            searched: vec!["a".into(), "b".into()],
            hint: "set X".into(),
        };
        assert!(e.to_string().contains("a, b"));
    }
}
