//! Why the GPU backend could not do something: typed, never a panic.

/// A GPU backend failure.
///
/// Without the `cuda` feature every entry point returns [`CudaError::NotCompiled`]; with
/// it, a machine without an NVIDIA driver gives [`CudaError::NoDevice`].
///
/// ```
/// let e = fprev::cuda::CudaError::NoDevice { reason: "libcuda.so not found".into() };
/// assert_eq!(e.to_string(), "no CUDA device: libcuda.so not found");
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CudaError {
    /// This build of fprev has no GPU backend.
    NotCompiled,
    /// No usable device: no driver library, no GPU, or no device with that ordinal.
    NoDevice {
        /// What was missing.
        reason: String,
    },
    /// The driver is there but a CUDA library the operation needs is not.
    MissingLibrary {
        /// `cublas` or `nvrtc`.
        library: &'static str,
    },
    /// A CUDA driver call failed.
    Driver {
        /// What fprev was doing.
        during: &'static str,
        /// The driver's error.
        message: String,
    },
    /// A cuBLAS call failed.
    Blas {
        /// What fprev was doing.
        during: &'static str,
        /// cuBLAS's status.
        message: String,
    },
    /// NVRTC rejected a kernel.
    Compile {
        /// The compiler log.
        log: String,
    },
    /// A shape or launch configuration the backend cannot run.
    InvalidConfig(String),
    /// An input of the wrong length.
    WrongLength {
        /// Expected length.
        want: usize,
        /// Given length.
        got: usize,
    },
}

impl std::fmt::Display for CudaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CudaError::NotCompiled => {
                f.write_str("fprev was not compiled with cuda: rebuild with `--features cuda`")
            }
            CudaError::NoDevice { reason } => write!(f, "no CUDA device: {reason}"),
            CudaError::MissingLibrary { library } => write!(
                f,
                "CUDA library {library} not found: install it or add its directory to LD_LIBRARY_PATH"
            ),
            CudaError::Driver { during, message } => {
                write!(f, "CUDA driver error in {during}: {message}")
            }
            CudaError::Blas { during, message } => write!(f, "cuBLAS error in {during}: {message}"),
            CudaError::Compile { log } => write!(f, "NVRTC could not compile the kernels: {log}"),
            CudaError::InvalidConfig(s) => write!(f, "invalid CUDA configuration: {s}"),
            CudaError::WrongLength { want, got } => {
                write!(f, "input has {got} values, the target sums {want}")
            }
        }
    }
}

impl std::error::Error for CudaError {}
