//! Summation trees (stub; replaced by the engine commit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SumTree;
#[derive(Clone, Debug)]
pub struct TreeDiff;
#[derive(Clone, Debug)]
pub struct TreeStats;
