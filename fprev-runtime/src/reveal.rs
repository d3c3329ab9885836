//! Revelation algorithms (stub; replaced by the engine commit).
use crate::tree::SumTree;
#[derive(Debug)]
pub enum RevealError {}
#[derive(Clone, Copy, Debug)]
pub enum Algorithm {
    Naive,
    Basic,
    FPRev,
}
pub struct Reveal;
pub struct RevealReport;
pub fn reveal<T, F: FnMut(&[T]) -> T>(_n: usize, _f: F) -> Result<SumTree, RevealError> {
    unimplemented!()
}
