//! Float types that probes are made of (stub; replaced by the engine commit).
pub trait ProbeFloat: Copy + Send + Sync + 'static {}
impl ProbeFloat for f32 {}
impl ProbeFloat for f64 {}
