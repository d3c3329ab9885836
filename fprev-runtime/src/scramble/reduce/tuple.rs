//! Tuple folds: `.fold((0.0, 0.0, 0.0), |(a, b, c), (x, y, z)| (a + x, b + y, c + z))` is
//! several independent sums carried in one accumulator. Each float component is its own
//! reduction at the fold's site (the same shape for each, one platform); a component
//! that is not a float (a count) is carried through the closure as written.
//!
//! The macro checked that the closure's `i`-th result is `a_i + e_i`, `e_i + a_i` or
//! `a_i - e_i` with no `e_i` reading any accumulator: so with `-0.0` in component `i`,
//! the closure's `i`-th result is exactly that item's term (`e_i`, or `-e_i`).

use super::super::call_site::CallSite;
use super::RunningReduction;

/// Not public API. A tuple whose components the scrambled tuple fold reduces apart.
pub trait TupleFold: Sized {
    /// `items.fold(init, f)` with each float component a reduction at `site`.
    fn fold_components<A, I: Iterator<Item = A>, F: FnMut(Self, A) -> Self>(
        site: &'static CallSite,
        init: Self,
        items: I,
        f: F,
    ) -> Self;
}

/// One component: its reduction when on, else its running value.
struct Component<T> {
    r: RunningReduction<T>,
    running: Option<T>,
}

impl<T> Component<T> {
    fn begin(site: &'static CallSite, init: T) -> Self {
        let mut r = RunningReduction::<T>::begin(site);
        if r.on() {
            r.push(init);
            Component { r, running: None }
        } else {
            Component {
                r,
                running: Some(init),
            }
        }
    }

    /// What goes into the closure: `-0.0` when on (the result is the term), the running
    /// value otherwise.
    fn input(&mut self) -> T {
        match self.running.take() {
            Some(v) => v,
            None => self.r.neg_zero(),
        }
    }

    /// What came out of the closure: a term when on, the new running value otherwise.
    fn output(&mut self, v: T) {
        if self.r.on() {
            self.r.push(v);
        } else {
            self.running = Some(v);
        }
    }

    fn finish(self) -> T {
        match self.running {
            Some(v) => v,
            None => match self.r.finish() {
                Some(v) => v,
                None => unreachable!("fprev: a tuple fold's component has its initial value"),
            },
        }
    }
}

macro_rules! tuple_fold {
    ($($t:ident $c:ident $i:tt),+) => {
        impl<$($t),+> TupleFold for ($($t,)+) {
            fn fold_components<A, I: Iterator<Item = A>, F: FnMut(Self, A) -> Self>(
                site: &'static CallSite,
                init: Self,
                items: I,
                mut f: F,
            ) -> Self {
                if !($(RunningReduction::<$t>::would_be_on())||+) {
                    return items.fold(init, f);
                }
                $(let mut $c = Component::<$t>::begin(site, init.$i);)+
                for item in items {
                    let out = f(($($c.input(),)+), item);
                    $($c.output(out.$i);)+
                }
                ($($c.finish(),)+)
            }
        }
    };
}

tuple_fold!(T0 c0 0, T1 c1 1);
tuple_fold!(T0 c0 0, T1 c1 1, T2 c2 2);
tuple_fold!(T0 c0 0, T1 c1 1, T2 c2 2, T3 c3 3);

/// Not public API. An iterator whose `fold` over a tuple accumulator is a reduction per
/// float component when reductions are scrambled (an inherent method, so it wins over
/// `Iterator`'s).
pub struct ReduceTuples<I> {
    iter: I,
    site: &'static CallSite,
}

impl<I: Iterator> ReduceTuples<I> {
    /// Not public API.
    pub fn new(iter: I, site: &'static CallSite) -> Self {
        ReduceTuples { iter, site }
    }

    /// `iter.fold(init, f)`, each float component of the tuple `B` reassociated.
    pub fn fold<B: TupleFold, F: FnMut(B, I::Item) -> B>(self, init: B, f: F) -> B {
        B::fold_components(self.site, init, self.iter, f)
    }
}

impl<I: Iterator> Iterator for ReduceTuples<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        self.iter.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.iter.size_hint()
    }
}
