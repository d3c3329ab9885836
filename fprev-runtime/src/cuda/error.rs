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
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// This build of fprev has no GPU backend.
    #[error("fprev was not compiled with cuda: rebuild with `--features cuda`")]
    NotCompiled,
    /// No usable device: no driver library, no GPU, or no device with that ordinal.
    #[error("no CUDA device: {reason}")]
    NoDevice {
        /// What was missing.
        reason: String,
    },
    /// The driver is there but a CUDA library the operation needs is not.
    #[error(
        "CUDA library {library} not found: install it or add its directory to LD_LIBRARY_PATH"
    )]
    MissingLibrary {
        /// `cublas` or `nvrtc`.
        library: &'static str,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error in {during}: {message}")]
    Driver {
        /// What fprev was doing.
        during: &'static str,
        /// The driver's error.
        message: String,
    },
    /// A cuBLAS call failed.
    #[error("cuBLAS error in {during}: {message}")]
    Blas {
        /// What fprev was doing.
        during: &'static str,
        /// cuBLAS's status.
        message: String,
    },
    /// NVRTC rejected a kernel.
    #[error("NVRTC could not compile the kernels: {log}")]
    Compile {
        /// The compiler log.
        log: String,
    },
    /// A shape or launch configuration the backend cannot run.
    #[error("invalid CUDA configuration: {0}")]
    InvalidConfig(String),
    /// An input of the wrong length.
    #[error("input has {got} values, the target sums {want}")]
    WrongLength {
        /// Expected length.
        want: usize,
        /// Given length.
        got: usize,
    },
}
