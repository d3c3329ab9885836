//! Black-box targets (stub; replaced by the engine commit).
pub trait Target<T> {}
