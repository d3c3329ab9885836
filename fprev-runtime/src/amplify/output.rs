//! What a computation under test returns: anything that yields floats.

/// A result the amplifier can compare bit for bit: it lists its floats, widened to `f64`
/// (exact for `f32`, `f16` and `bf16`, so distinct results stay distinct).
///
/// ```
/// use fprev_runtime::amplify::Floats;
///
/// let mut out = Vec::new();
/// (1.5f32, vec![2.0f64, 3.0]).push_floats(&mut out);
/// assert_eq!(out, [1.5, 2.0, 3.0]);
/// ```
pub trait Floats {
    /// Appends this result's floats to `out`.
    fn push_floats(&self, out: &mut Vec<f64>);
}

macro_rules! scalar {
    ($($t:ty => $conv:expr),*) => {$(
        impl Floats for $t {
            fn push_floats(&self, out: &mut Vec<f64>) {
                out.push($conv(*self));
            }
        }
    )*};
}

scalar!(
    f64 => |x| x,
    f32 => f64::from,
    half::f16 => half::f16::to_f64,
    half::bf16 => half::bf16::to_f64
);

impl<T: Floats> Floats for [T] {
    fn push_floats(&self, out: &mut Vec<f64>) {
        self.iter().for_each(|x| x.push_floats(out));
    }
}

/// ndarray arrays of any dimension, in logical (row-major) order; with the `ndarray`
/// feature (on with the facade's default `cli` feature).
#[cfg(feature = "ndarray")]
impl<S, D> Floats for ndarray::ArrayBase<S, D>
where
    S: ndarray::Data,
    S::Elem: Floats,
    D: ndarray::Dimension,
{
    fn push_floats(&self, out: &mut Vec<f64>) {
        self.iter().for_each(|x| x.push_floats(out));
    }
}

impl<T: Floats, const N: usize> Floats for [T; N] {
    fn push_floats(&self, out: &mut Vec<f64>) {
        self[..].push_floats(out);
    }
}

impl<T: Floats> Floats for Vec<T> {
    fn push_floats(&self, out: &mut Vec<f64>) {
        self[..].push_floats(out);
    }
}

impl<T: Floats + ?Sized> Floats for &T {
    fn push_floats(&self, out: &mut Vec<f64>) {
        (**self).push_floats(out);
    }
}

impl<T: Floats + ?Sized> Floats for Box<T> {
    fn push_floats(&self, out: &mut Vec<f64>) {
        (**self).push_floats(out);
    }
}

impl<A: Floats, B: Floats> Floats for (A, B) {
    fn push_floats(&self, out: &mut Vec<f64>) {
        self.0.push_floats(out);
        self.1.push_floats(out);
    }
}

impl<A: Floats, B: Floats, C: Floats> Floats for (A, B, C) {
    fn push_floats(&self, out: &mut Vec<f64>) {
        self.0.push_floats(out);
        self.1.push_floats(out);
        self.2.push_floats(out);
    }
}
