//! Reductions into many places at once: `acc[j] += x[i][j]` inside `for i`, a scatter sum
//! `hist[bin[i]] += w[i]`, the per-cluster sums of a k-means step. Each element is a sum
//! over the loop of its own terms, which a vectorised or parallel build reorders
//! (per-thread partials over blocks of `i`, combined in a tree), while the elements stay
//! apart. So each element is its own [`RunningReduction`] at the same site: the same shape
//! for every element (one seed, one platform), its terms in the order the loop gives
//! them, its value written back after the loop.
//!
//! Elements are told apart by the values of the place's indices (`(j,)`, `(label[i], j)`),
//! not by address: the write-back after the loop indexes the place again with them, so
//! no pointer outlives the borrow it came from.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ops::{Add, AddAssign, Sub, SubAssign};

use super::super::call_site::CallSite;
use super::RunningReduction;

/// A fast hasher for small index keys (one multiply per word): the keys are indices of
/// the program's own arrays, so there is no adversary to defend against.
#[derive(Default)]
struct IndexHasher(u64);

impl IndexHasher {
    #[inline(always)]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for IndexHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.add(u64::from(*b));
        }
    }
    #[inline(always)]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    #[inline(always)]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    #[inline(always)]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Not public API. One execution of a keyed reduction site: a reduction per element of a
/// place (`acc[j]`), keyed by the values of its indices `K`; off (the code runs as
/// written) unless reductions are scrambled and the element type `T` is a float.
///
/// ```
/// use fprev_runtime::scramble::private::KeyedReduction;
/// use fprev_runtime::scramble::{with_config, CallSite, ScrambleConfig, Shuffle, SiteKind};
///
/// static SITES: [CallSite; 1] = [CallSite::with_kind(
///     "doc::column_sums#reduction0", file!(), line!(), 0, None, SiteKind::Reduction,
/// )];
/// let x = [[1.0, 1e16], [0.5, 1.0], [2.0, -1e16]];
/// let column_sums = || {
///     let mut acc = [0.0f64; 2];
///     let mut r = KeyedReduction::begin_in(&SITES, 0);
///     for row in &x {
///         for j in 0..2 {
///             r.add_assign_at((j,), &mut acc[j], row[j]);
///         }
///     }
///     r.write(|(j,), v| acc[j] = v);
///     acc
/// };
/// // Off, exactly the loop as written.
/// assert_eq!(with_config(&ScrambleConfig::off(), column_sums), [3.5, 0.0]);
/// // On, each column is a reordering of its own terms: `1e16 + 1.0 - 1e16` is 0 or 1
/// // depending on the order, `1 + 0.5 + 2` is 3.5 in every order.
/// let scrambled = ScrambleConfig::off().shuffle(Some(Shuffle::FisherYates)).shapes(true);
/// let on = with_config(&scrambled.seed(7), column_sums);
/// assert!(on[0] == 3.5 && (on[1] == 0.0 || on[1] == 1.0));
/// ```
pub struct KeyedReduction<K, T> {
    /// The site, when on.
    site: Option<&'static CallSite>,
    /// Where each key's element is in `elements`.
    index: HashMap<K, usize, BuildHasherDefault<IndexHasher>>,
    /// The elements in the order they were first added to.
    elements: Vec<(K, RunningReduction<T>)>,
    /// Where the next term most likely goes: the element after the last one added to.
    /// Loops such as `acc[j] += x[i][j]` visit the elements in the same order on every
    /// pass, so one comparison of keys replaces the hash lookup for nearly every term.
    next: usize,
}

impl<K: Copy + Eq + Hash, T> KeyedReduction<K, T> {
    /// Starts a keyed reduction at site `index` of a function's site table (before the
    /// loop that owns it). Off unless reductions are scrambled and `T` is a float.
    #[inline]
    pub fn begin_in<const N: usize>(sites: &'static [CallSite; N], index: usize) -> Self {
        let site = if RunningReduction::<T>::would_be_on() {
            Some(&sites[index])
        } else {
            None
        };
        KeyedReduction {
            site,
            index: HashMap::default(),
            elements: Vec::new(),
            next: 0,
        }
    }

    /// Whether terms go to the elements' reductions (true) or the code runs as written.
    #[inline(always)]
    #[allow(clippy::redundant_pattern_matching)] // `is_some` would be a call unoptimized
    pub fn on(&self) -> bool {
        matches!(self.site, Some(_))
    }

    /// The reduction of element `key`, started with `init` (the element's value before
    /// the loop) when the key is new; `None` when that reduction is off (its site is left
    /// out by `FPREV_SITES`), so the term goes to the place as written.
    #[inline]
    fn element(&mut self, key: K, init: &T) -> Option<&mut RunningReduction<T>> {
        let site = self.site?;
        let guess = if self.next < self.elements.len() {
            self.next
        } else {
            0
        };
        let at = match self.elements.get(guess) {
            Some((k, _)) if *k == key => guess,
            _ => self.look_up(site, key, init)?,
        };
        // `at` indexes `elements`, so `+ 1` never wraps (and has no overflow check in
        // a caller's profile that checks overflow)
        self.next = at.wrapping_add(1);
        let r = &mut self.elements[at].1;
        if r.on() {
            Some(r)
        } else {
            None
        }
    }

    /// Where element `key` is, started with `init` when the key is new: the path of a
    /// term that does not go to the element after the last one (out of line, so the
    /// guess stays small enough to inline; a scatter sum takes it for most terms).
    ///
    /// `None` when the first element starts off: every element of a site draws the same
    /// shape, so they would all be off (the identity order, a site `FPREV_SITES` leaves
    /// out), and the whole reduction turns off rather than look each term's element up
    /// only to add the term to its place as written.
    #[inline(never)]
    fn look_up(&mut self, site: &'static CallSite, key: K, init: &T) -> Option<usize> {
        if let Some(&at) = self.index.get(&key) {
            return Some(at);
        }
        let r = RunningReduction::begin_element(site, init);
        if self.elements.is_empty() && !r.on() {
            self.site = None;
            return None;
        }
        let at = self.elements.len();
        self.elements.push((key, r));
        self.index.insert(key, at);
        Some(at)
    }

    /// `place += e` for the element `key`: the term goes to the element's reduction when
    /// on, to `place` through the same `AddAssign` otherwise.
    #[inline]
    pub fn add_assign_at<R>(&mut self, key: K, place: &mut T, e: R)
    where
        T: AddAssign<R>,
    {
        if self.on() {
            if let Some(r) = self.element(key, place) {
                r.add_assign(e);
                return;
            }
        }
        *place += e;
    }

    /// `place -= e`, as [`add_assign_at`](Self::add_assign_at).
    #[inline]
    pub fn sub_assign_at<R>(&mut self, key: K, place: &mut T, e: R)
    where
        T: SubAssign<R>,
    {
        if self.on() {
            if let Some(r) = self.element(key, place) {
                r.sub_assign(e);
                return;
            }
        }
        *place -= e;
    }

    /// `place = place + e` as `place = r.add_right_to(key, place, e)`: `acc + e` when
    /// off, `acc` unchanged with the term pushed when on.
    #[inline]
    pub fn add_right_to<R>(&mut self, key: K, acc: T, e: R) -> T
    where
        T: Add<R, Output = T>,
    {
        if self.on() {
            if let Some(r) = self.element(key, &acc) {
                r.add_right(e);
                return acc;
            }
        }
        acc + e
    }

    /// `place = e + place`, as [`add_right_to`](Self::add_right_to).
    #[inline]
    pub fn add_left_to<R>(&mut self, key: K, e: R, acc: T) -> T
    where
        R: Add<T, Output = T>,
    {
        if self.on() {
            if let Some(r) = self.element(key, &acc) {
                r.add_left(e);
                return acc;
            }
        }
        e + acc
    }

    /// `place = place - e`, as [`add_right_to`](Self::add_right_to).
    #[inline]
    pub fn sub_right_to<R>(&mut self, key: K, acc: T, e: R) -> T
    where
        T: Sub<R, Output = T>,
    {
        if self.on() {
            if let Some(r) = self.element(key, &acc) {
                r.sub_right(e);
                return acc;
            }
        }
        acc - e
    }

    /// After the loop: combines each element's terms and hands `put` its key and value
    /// (generated code writes `acc[k.0] = v`). Nothing when off.
    pub fn write(&mut self, mut put: impl FnMut(K, T)) {
        self.index.clear();
        self.next = 0;
        for (key, mut r) in self.elements.drain(..) {
            if let Some(v) = r.take_value() {
                put(key, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::call_site::SiteKind;
    use super::super::super::config::ScrambleConfig;
    use super::super::super::rng::{below, stream};
    use super::super::super::session::with_config;
    use super::super::super::Shuffle;
    use super::*;

    static SITES: [CallSite; 1] = [CallSite::with_kind(
        "keyed::tests#reduction0",
        file!(),
        line!(),
        0,
        None,
        SiteKind::Reduction,
    )];

    /// Column sums then a scatter sum into the same keys: the guessed element and the
    /// looked-up one must be the same element, whatever order the keys come in.
    fn sums(keys: &[usize], terms: &[f64], bins: usize) -> Vec<f64> {
        let mut acc = vec![0.0f64; bins];
        let mut r = KeyedReduction::begin_in(&SITES, 0);
        for (&k, &t) in keys.iter().zip(terms) {
            r.add_assign_at((k,), &mut acc[k], t);
        }
        r.write(|(k,), v| acc[k] = v);
        acc
    }

    #[test]
    fn every_term_reaches_its_own_element_in_any_key_order() {
        let seed = crate::scramble::property_seed(3);
        let mut rng = stream(seed, 11, 0);
        for round in 0..100 {
            let bins = 1 + below(&mut rng, 40);
            let sweeps = 1 + below(&mut rng, 30);
            // Sweeps over the keys in order (the guess's case), broken by random keys.
            let mut keys = Vec::new();
            for _ in 0..sweeps {
                for k in 0..bins {
                    keys.push(if below(&mut rng, 8) == 0 {
                        below(&mut rng, bins)
                    } else {
                        k
                    });
                }
            }
            // Small integers: every order sums them exactly.
            let terms: Vec<f64> = keys.iter().map(|_| below(&mut rng, 1000) as f64).collect();
            let off = with_config(&ScrambleConfig::off(), || sums(&keys, &terms, bins));
            let mut want = vec![0.0; bins];
            for (&k, &t) in keys.iter().zip(&terms) {
                want[k] += t;
            }
            assert_eq!(off, want, "seed {seed} (FPREV_SEED), round {round}: off");
            // The identity order: reached, then as written (the whole reduction off).
            let identity = ScrambleConfig::off().shuffle(Some(Shuffle::Identity));
            let reached = SITES[0].reached();
            let (got, on_after) = with_config(&identity, || {
                let mut acc = vec![0.0f64; bins];
                let mut r = KeyedReduction::begin_in(&SITES, 0);
                for (&k, &t) in keys.iter().zip(&terms) {
                    r.add_assign_at((k,), &mut acc[k], t);
                }
                let on_after = r.on();
                r.write(|(k,), v| acc[k] = v);
                (acc, on_after)
            });
            assert_eq!(
                got, want,
                "seed {seed} (FPREV_SEED), round {round}: identity"
            );
            assert!(!on_after, "round {round}: off after its first element");
            assert!(SITES[0].reached() > reached, "round {round}: reached");
            for s in 0..6 {
                let cfg = ScrambleConfig::off()
                    .shuffle(Some(Shuffle::FisherYates))
                    .shapes(true)
                    .seed(s);
                assert!(with_config(&cfg, || {
                    KeyedReduction::<(usize,), f64>::begin_in(&SITES, 0).on()
                }));
                let on = with_config(&cfg, || sums(&keys, &terms, bins));
                assert_eq!(
                    on, want,
                    "seed {seed} (FPREV_SEED), round {round}, shapes seed {s}"
                );
            }
        }
    }
}
