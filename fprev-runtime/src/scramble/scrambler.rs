//! The scrambled order of one invocation of a declared loop or rayon source.

use super::call_site::CallSite;
use super::rng::{self, ScrambleRng};
use super::session::state;
use super::state::{decode_shuffle, seed};
use super::Shuffle;

/// The random order of one invocation of a scrambled site (a declared loop or a rayon
/// source); its stream is keyed by (run seed, thread context, site, invocation within
/// that context), as `#[fprev::scramble]` documents.
#[derive(Debug)]
pub struct Scrambler {
    pub(crate) seed: u64,
    pub(crate) key: (u64, u64),
    pub(crate) shuffle: Shuffle,
    pub(crate) site: &'static CallSite,
}

impl Scrambler {
    /// The scrambler of the next invocation of `site` if `level_bit` is on, else `None`.
    #[cold]
    #[inline(never)]
    pub(crate) fn begin(site: &'static CallSite, level_bit: u8) -> Option<Scrambler> {
        let st = state();
        if st & level_bit == 0 || !site.enabled() {
            return None;
        }
        site.mark_reached();
        let shuffle = site.shuffle.unwrap_or(decode_shuffle(st));
        if shuffle == Shuffle::Identity && !super::entropy::is_recording() {
            // The order as written, without collecting the items.
            return None;
        }
        Some(Scrambler {
            seed: seed(),
            key: super::context::next_key(site.id()),
            shuffle,
            site,
        })
    }

    fn rng(&self, len: usize) -> ScrambleRng {
        let (key, invocation) = self.key;
        // Inside rayon tasks the invocation is 0: key by length so that entries of
        // different lengths still differ.
        rng::stream(self.seed, key, invocation ^ (len as u64).rotate_left(40))
    }

    /// `iter` in scrambled order, or as is: one iterator type either way, so the loop
    /// body is written once.
    pub fn maybe_shuffled<I: IntoIterator>(
        this: Option<Scrambler>,
        items: I,
    ) -> rayon::iter::Either<I::IntoIter, std::vec::IntoIter<I::Item>> {
        match this {
            None => rayon::iter::Either::Left(items.into_iter()),
            Some(s) => rayon::iter::Either::Right(s.shuffled(items)),
        }
    }

    /// Collects `items` and returns them in scrambled order (recorded when
    /// [`entropy`](super::entropy) recording is on).
    pub fn shuffled<I: IntoIterator>(self, items: I) -> std::vec::IntoIter<I::Item> {
        self.shuffle_vec(items.into_iter().collect()).into_iter()
    }

    /// Returns `v` in scrambled order (recorded when recording is on).
    pub fn shuffle_vec<T>(self, mut v: Vec<T>) -> Vec<T> {
        let mut rng = self.rng(v.len());
        if super::entropy::is_recording() {
            let mut order: Vec<usize> = (0..v.len()).collect();
            rng::shuffle_with(self.shuffle, v.len(), &mut rng, |i, j| {
                v.swap(i, j);
                order.swap(i, j);
            });
            super::entropy::record(self.site.describe(), &order);
        } else {
            rng::shuffle(self.shuffle, &mut v, &mut rng);
        }
        v
    }
}
