//! `fprev.RevealError` and one subclass per variant of the engine's `RevealError`, with
//! the engine's messages unchanged.

use fprev_runtime::RevealError as Engine;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(fprev, RevealError, PyException, "Why a summation tree could not be revealed.\n\nThe base class of every error the engine reports; each variant of the\nRust `RevealError` is a subclass with the same message.\n\n>>> import fprev, numpy as np\n>>> try:\n...     fprev.reveal(np.max, 8)\n... except fprev.RevealError as e:\n...     print(type(e).__name__)\nOutOfRangeError");

macro_rules! variants {
    ($($name:ident => $doc:literal),* $(,)?) => {
        $(create_exception!(fprev, $name, RevealError, $doc);)*

        /// Adds the base class and every subclass to the module.
        pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            let py = m.py();
            m.add("RevealError", py.get_type::<RevealError>())?;
            $(m.add(stringify!($name), py.get_type::<$name>())?;)*
            Ok(())
        }
    };
}

variants! {
    InvalidSizeError => "`n` is zero, or otherwise unusable.",
    OutOfMemoryError => "The revelation would need more memory than its budget allows.",
    SingleInputError => "A sum of one value did not return that value.",
    ConstantAnswersError => "Every answer was the same value: the callable ignores its input.",
    DataDependentError => "Every probe lost all its units while a random input gives another sum.",
    TooLargeError => "No mask and unit of this dtype can swamp a sum of `n` units.",
    NonFiniteError => "A probe returned NaN or an infinity.",
    NotIntegerError => "A probe returned a value that is not a whole number of units.",
    OutOfRangeError => "A probe returned a count outside its valid range.",
    InconsistentError => "The probe answers cannot come from one summation tree.",
    NondeterministicError => "The same probe was answered twice differently.",
    OrderIndependentError => "Every probe kept all its units: the result does not depend on order.",
    NotPlainSummationError => "The revealed tree does not reproduce the callable's bits on random inputs.",
    WiderAccumulatorError => "The callable adds its 16-bit values in a float32 register and rounds once: reveal it with acc_dtype=\"float32\".",
    PrecisionTooLowError => "Counts could not be made exact even with windows of zeros.",
    FusedUnverifiedError => "Truncating fused nodes that no block-FMA model of them reproduces on random inputs.",
    IndistinguishableError => "The callable's fused adders keep more bits than the widest masks can swamp.",
    TargetError => "The callable failed: it returned something that is not a number, or a wrong shape.",
    NaiveError => "The naive search found no tree, or several, that match the callable.",
}

/// The exception for `e`, with the engine's message.
pub fn to_py(e: Engine) -> PyErr {
    let message = pythonic(e.to_string());
    typed(e, message)
}

/// The engine's advice in Python's words: the keyword argument, not the Rust builder.
fn pythonic(message: String) -> String {
    message.replace("use Reveal::accept_flat(true)", "pass accept_flat=True")
}

/// The exception for `e` at one size of a sweep: its message starts with that size.
pub fn to_py_at(e: Engine, size: usize) -> PyErr {
    let message = pythonic(format!("at size {size}: {e}"));
    typed(e, message)
}

/// The exception class of `e`'s variant, carrying `message`.
fn typed(e: Engine, message: String) -> PyErr {
    match e {
        Engine::InvalidSize { .. } => InvalidSizeError::new_err(message),
        Engine::OutOfMemory { .. } => OutOfMemoryError::new_err(message),
        Engine::SingleInput { .. } => SingleInputError::new_err(message),
        Engine::ConstantAnswers { .. } => ConstantAnswersError::new_err(message),
        Engine::DataDependent { .. } => DataDependentError::new_err(message),
        Engine::TooLarge { .. } => TooLargeError::new_err(message),
        Engine::NonFinite { .. } => NonFiniteError::new_err(message),
        Engine::NotInteger { .. } => NotIntegerError::new_err(message),
        Engine::OutOfRange { .. } => OutOfRangeError::new_err(message),
        Engine::Inconsistent { .. } => InconsistentError::new_err(message),
        Engine::Nondeterministic { .. } => NondeterministicError::new_err(message),
        Engine::OrderIndependent { .. } => OrderIndependentError::new_err(message),
        Engine::NotPlainSummation { .. } => NotPlainSummationError::new_err(message),
        Engine::WiderAccumulator { .. } => WiderAccumulatorError::new_err(message),
        Engine::PrecisionTooLow { .. } => PrecisionTooLowError::new_err(message),
        Engine::FusedUnverified { .. } => FusedUnverifiedError::new_err(message),
        Engine::Indistinguishable { .. } => IndistinguishableError::new_err(message),
        Engine::Target { .. } => TargetError::new_err(message),
        Engine::Naive { .. } => NaiveError::new_err(message),
        // a variant added to the engine later: the base class, same message
        _ => RevealError::new_err(message),
    }
}

/// The exception for a block-scaled reveal's refusal that is not the engine's: a
/// tree no model explains is a `FusedUnverifiedError`, several trees an
/// `IndistinguishableError`, a failing callable a `TargetError`, a bad shape a
/// `ValueError`.
pub fn scaled_to_py(e: fprev_runtime::ops::ScaledDotError) -> PyErr {
    use fprev_runtime::ops::ScaledDotError as S;
    let message = e.to_string();
    match e {
        S::Reveal(e) => to_py(e),
        S::Unexplained { .. } | S::ProductsUnexplained { .. } => {
            FusedUnverifiedError::new_err(message)
        }
        S::Ambiguous { .. } => IndistinguishableError::new_err(message),
        S::Target(_) => TargetError::new_err(message),
        S::Disagree { .. } => InconsistentError::new_err(message),
        _ => pyo3::exceptions::PyValueError::new_err(message),
    }
}
