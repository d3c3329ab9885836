//! placeholder
pub struct AmplifyConfig; pub struct AmplifyReport; pub trait Floats {} pub enum Stage {} pub fn amplify() {}
