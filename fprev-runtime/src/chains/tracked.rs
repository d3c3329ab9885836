//! [`Tracked`]: a value carrying the length of the addition chain that produced it.

use std::fmt;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// A value and the number of chained additions that produced it (Defour's rule).
///
/// `+` and `-` add the operands' chain lengths plus one; `*` and `/` reset to 0; a plain
/// `T` operand counts as chain 0. Use it in generic numeric code to see how deep the
/// additions behind a result are: a sequential sum of `n` values has chain `n - 1`, a
/// pairwise one about `log2 n`.
///
/// ```
/// use fprev::Tracked;
/// let xs: Vec<Tracked<f64>> = (0..8).map(|i| Tracked::new(i as f64)).collect();
/// let seq = xs.iter().fold(Tracked::new(0.0), |a, &b| a + b);
/// assert_eq!((seq.value(), seq.chain()), (28.0, 8));
/// let pair = ((xs[0] + xs[1]) + (xs[2] + xs[3])) + ((xs[4] + xs[5]) + (xs[6] + xs[7]));
/// assert_eq!(pair.chain(), 7); // every addition counts: 1+1+1, 1+1+1, +1
/// let scaled = pair * 0.5;
/// assert_eq!(scaled.chain(), 0);
/// ```
#[derive(Clone, Copy, Default, PartialEq, PartialOrd)]
pub struct Tracked<T> {
    value: T,
    chain: u64,
}

impl<T> Tracked<T> {
    /// A fresh value (chain 0).
    pub const fn new(value: T) -> Self {
        Tracked { value, chain: 0 }
    }

    /// A value with a given chain length.
    pub const fn with_chain(value: T, chain: u64) -> Self {
        Tracked { value, chain }
    }

    /// The value.
    pub fn value(self) -> T {
        self.value
    }

    /// Additions chained into the value.
    pub fn chain(&self) -> u64 {
        self.chain
    }
}

impl<T> From<T> for Tracked<T> {
    fn from(value: T) -> Self {
        Tracked::new(value)
    }
}

impl<T: fmt::Debug> fmt::Debug for Tracked<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} (chain {})", self.value, self.chain)
    }
}

impl<T: fmt::Display> fmt::Display for Tracked<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (chain {})", self.value, self.chain)
    }
}

/// Defour's rule for `+` and `-`: the operands' chains plus this addition.
fn joined(a: u64, b: u64) -> u64 {
    a + b + 1
}

/// `a op= b` as `a = a op b`, for tracked and plain right-hand sides.
macro_rules! assign {
    ($Op:ident, $op:ident, $OpAssign:ident, $op_assign:ident) => {
        impl<T: $Op<Output = T> + Copy> $OpAssign for Tracked<T> {
            #[inline]
            fn $op_assign(&mut self, rhs: Tracked<T>) {
                *self = (*self).$op(rhs);
            }
        }
        impl<T: $Op<Output = T> + Copy> $OpAssign<T> for Tracked<T> {
            #[inline]
            fn $op_assign(&mut self, rhs: T) {
                *self = (*self).$op(rhs);
            }
        }
    };
}

macro_rules! additive {
    ($Op:ident, $op:ident, $OpAssign:ident, $op_assign:ident) => {
        impl<T: $Op<Output = T>> $Op for Tracked<T> {
            type Output = Tracked<T>;
            #[inline]
            fn $op(self, rhs: Tracked<T>) -> Tracked<T> {
                Tracked {
                    value: self.value.$op(rhs.value),
                    chain: joined(self.chain, rhs.chain),
                }
            }
        }
        impl<T: $Op<Output = T>> $Op<T> for Tracked<T> {
            type Output = Tracked<T>;
            #[inline]
            fn $op(self, rhs: T) -> Tracked<T> {
                Tracked {
                    value: self.value.$op(rhs),
                    chain: joined(self.chain, 0),
                }
            }
        }
        assign!($Op, $op, $OpAssign, $op_assign);
    };
}

macro_rules! multiplicative {
    ($Op:ident, $op:ident, $OpAssign:ident, $op_assign:ident) => {
        impl<T: $Op<Output = T>> $Op for Tracked<T> {
            type Output = Tracked<T>;
            #[inline]
            fn $op(self, rhs: Tracked<T>) -> Tracked<T> {
                Tracked::new(self.value.$op(rhs.value))
            }
        }
        impl<T: $Op<Output = T>> $Op<T> for Tracked<T> {
            type Output = Tracked<T>;
            #[inline]
            fn $op(self, rhs: T) -> Tracked<T> {
                Tracked::new(self.value.$op(rhs))
            }
        }
        assign!($Op, $op, $OpAssign, $op_assign);
    };
}

additive!(Add, add, AddAssign, add_assign);
additive!(Sub, sub, SubAssign, sub_assign);
multiplicative!(Mul, mul, MulAssign, mul_assign);
multiplicative!(Div, div, DivAssign, div_assign);

impl<T: Neg<Output = T>> Neg for Tracked<T> {
    type Output = Tracked<T>;
    #[inline]
    fn neg(self) -> Tracked<T> {
        Tracked {
            value: -self.value,
            chain: self.chain,
        }
    }
}

impl<T: Add<Output = T> + Default> std::iter::Sum for Tracked<T> {
    fn sum<I: Iterator<Item = Tracked<T>>>(iter: I) -> Self {
        iter.fold(Tracked::new(T::default()), |a, b| a + b)
    }
}

impl<'a, T: Add<Output = T> + Default + Copy> std::iter::Sum<&'a Tracked<T>> for Tracked<T> {
    fn sum<I: Iterator<Item = &'a Tracked<T>>>(iter: I) -> Self {
        iter.fold(Tracked::new(T::default()), |a, &b| a + b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defour_rule() {
        let a = Tracked::with_chain(1.0f32, 3);
        let b = Tracked::with_chain(2.0f32, 4);
        assert_eq!((a + b).chain(), 8);
        assert_eq!((a - b).chain(), 8);
        assert_eq!((a * b).chain(), 0);
        assert_eq!((a / 2.0).chain(), 0);
        assert_eq!((-a).chain(), 3);
        let mut s = Tracked::new(0.0f64);
        for i in 0..10 {
            s += i as f64;
        }
        assert_eq!((s.value(), s.chain()), (45.0, 10));
        let total: Tracked<f64> = [Tracked::new(1.0), Tracked::new(2.0)].iter().sum();
        assert_eq!(total.chain(), 2);
    }
}
