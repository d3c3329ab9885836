//! What a computation under test returns: anything that yields floats.

/// A result the amplifier can compare bit for bit: it lists its floats, widened to `f64`
/// (exact for `f32`, `f16` and `bf16`, so distinct results stay distinct). Integer and
/// `bool` outputs (labels, counts, indices) are accepted too and compared exactly.
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
    half::bf16 => half::bf16::to_f64,
    bool => |b| if b { 1.0 } else { 0.0 },
    i8 => f64::from,
    i16 => f64::from,
    i32 => f64::from,
    u8 => f64::from,
    u16 => f64::from,
    u32 => f64::from
);

/// 64-bit integers (and `usize` / `isize`) are compared exactly: each is listed as two
/// floats, its high and low 32-bit halves, so results that differ in any bit differ.
///
/// ```
/// use fprev_runtime::amplify::Floats;
/// let mut out = Vec::new();
/// (1u64 << 40 | 7).push_floats(&mut out);
/// assert_eq!(out, [256.0, 7.0]);
/// ```
macro_rules! wide_int {
    ($($t:ty),*) => {$(
        impl Floats for $t {
            fn push_floats(&self, out: &mut Vec<f64>) {
                let bits = *self as u64;
                out.push(f64::from((bits >> 32) as u32));
                out.push(f64::from(bits as u32));
            }
        }
    )*};
}

wide_int!(i64, u64, usize, isize);

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
