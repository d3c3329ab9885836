//! Trees of well-known library orders, built directly (no probing), for comparing a
//! revealed tree against them and for proving a guessed order cheaply.

use super::SumTree;

/// Binary inner nodes appended in post-order, flat, as [`SumTree::from_canonical_pairs`] takes them.
struct Nodes {
    n: usize,
    kids: Vec<u32>,
}

/// A finished subtree: its id and its smallest leaf, carried along by the builders so
/// that ordering children canonically reads no memory (a table of smallest leaves made
/// every addition wait on the store of the one before).
#[derive(Clone, Copy)]
struct Sub {
    id: u32,
    least: u32,
}

fn leaf(i: usize) -> Sub {
    Sub {
        id: i as u32,
        least: i as u32,
    }
}

impl Nodes {
    fn new(n: usize) -> Nodes {
        Nodes {
            n,
            kids: Vec::with_capacity(2 * n),
        }
    }

    #[inline]
    fn add(&mut self, a: Sub, b: Sub) -> Sub {
        let (a, b) = if a.least <= b.least { (a, b) } else { (b, a) };
        self.kids.extend([a.id, b.id]);
        Sub {
            id: (self.n + self.kids.len() / 2 - 1) as u32,
            least: a.least,
        }
    }

    /// The tree; the builders add nodes in canonical post-order (each subtree right after
    /// the subtrees of smaller leaves), so no renumbering is needed.
    fn finish(self) -> SumTree {
        SumTree::from_canonical_pairs(self.n, self.kids)
    }

    fn chain(&mut self, leaves: impl IntoIterator<Item = usize>) -> Option<Sub> {
        leaves.into_iter().fold(None, |acc, i| {
            Some(acc.map_or(leaf(i), |s| self.add(s, leaf(i))))
        })
    }
}

impl SumTree {
    /// One accumulator from the last input to the first: `x[n-1] + x[n-2]`, then `x[n-3]`, ...
    ///
    /// ```
    /// assert_eq!(fprev::SumTree::reverse(4).to_string(), "(0+(1+(2+3)))");
    /// ```
    pub fn reverse(n: usize) -> SumTree {
        let mut b = Nodes::new(n);
        b.chain((0..n).rev());
        b.finish()
    }

    /// NumPy's pairwise sum of a contiguous array, the order of
    /// [`orders::numpy_pairwise`](crate::orders::numpy_pairwise): under 8 values in order;
    /// up to 128 values in 8 strided lanes combined as `((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7))`
    /// with the remainder added after; above 128, halves rounded down to a multiple of 8.
    ///
    /// ```
    /// use fprev::{orders, SumTree};
    /// let x: Vec<f32> = (0..300).map(|i| 1.0 / (i as f32 + 1.0)).collect();
    /// assert_eq!(SumTree::numpy_pairwise(300).replay(&x), orders::numpy_pairwise(&x));
    /// ```
    pub fn numpy_pairwise(n: usize) -> SumTree {
        let mut b = Nodes::new(n);
        // Post-order over the halving recursion (depth log2(n / 128): a plain stack).
        enum HalvingStep {
            Visit(usize, usize),
            Join,
        }
        let mut todo = vec![HalvingStep::Visit(0, n)];
        let mut done: Vec<Sub> = Vec::new();
        while let Some(step) = todo.pop() {
            match step {
                HalvingStep::Visit(lo, len) if len < 8 => {
                    if let Some(s) = b.chain(lo..lo + len) {
                        done.push(s);
                    }
                }
                HalvingStep::Visit(lo, len) if len <= 128 => {
                    let full = len - len % 8;
                    // lanes built and joined in post-order: ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7))
                    let lane = |b: &mut Nodes, k: usize| {
                        b.chain((lo + k..lo + full).step_by(8)).unwrap_or(leaf(0))
                    };
                    let quad = |b: &mut Nodes, k: usize| {
                        let (l0, l1) = (lane(b, k), lane(b, k + 1));
                        let low = b.add(l0, l1);
                        let (l2, l3) = (lane(b, k + 2), lane(b, k + 3));
                        let high = b.add(l2, l3);
                        b.add(low, high)
                    };
                    let lo4 = quad(&mut b, 0);
                    let hi4 = quad(&mut b, 4);
                    let mut res = b.add(lo4, hi4);
                    for i in lo + full..lo + len {
                        res = b.add(res, leaf(i));
                    }
                    done.push(res);
                }
                HalvingStep::Visit(lo, len) => {
                    let half = len / 2 - (len / 2) % 8;
                    todo.push(HalvingStep::Join);
                    todo.push(HalvingStep::Visit(lo + half, len - half));
                    todo.push(HalvingStep::Visit(lo, half));
                }
                HalvingStep::Join => {
                    let right = done.pop().unwrap_or(leaf(0));
                    let left = done.pop().unwrap_or(leaf(0));
                    done.push(b.add(left, right));
                }
            }
        }
        b.finish()
    }

    /// XLA's reduction of a 1-D array on the CPU (`jax.numpy.sum`), the order of
    /// [`orders::xla_tree_reduction`](crate::orders::xla_tree_reduction): windows of 32
    /// summed in order, the first and last short (the padding is split evenly), their
    /// sums reduced the same way until 32 or fewer are left, summed in order.
    ///
    /// ```
    /// use fprev::SumTree;
    /// assert_eq!(SumTree::xla_tree_reduction(32), SumTree::sequential(32));
    /// assert_eq!(
    ///     SumTree::xla_tree_reduction(1024).describe(),
    ///     "32 blocks of 32, combined in order; each block 32 in order"
    /// );
    /// ```
    pub fn xla_tree_reduction(n: usize) -> SumTree {
        use crate::orders::{xla_window, XLA_WINDOW};
        // values at each level: n, then one sum per window, until a window's worth
        let mut sizes = vec![n];
        while let Some(&m) = sizes.last().filter(|&&m| m > XLA_WINDOW) {
            sizes.push(m.div_ceil(XLA_WINDOW));
        }
        // item `k` of level `l`: built in post-order, each window's items right before
        // the additions that chain them (the levels are at most log32(n) deep)
        fn item(b: &mut Nodes, sizes: &[usize], l: usize, k: usize) -> Option<Sub> {
            if l == 0 {
                return Some(leaf(k));
            }
            chain(b, sizes, l - 1, xla_window(sizes[l - 1], k))
        }
        fn chain(
            b: &mut Nodes,
            sizes: &[usize],
            l: usize,
            items: std::ops::Range<usize>,
        ) -> Option<Sub> {
            items.fold(None, |acc, k| match (acc, item(b, sizes, l, k)) {
                (Some(s), Some(next)) => Some(b.add(s, next)),
                (acc, next) => acc.or(next),
            })
        }
        let top = sizes.len() - 1;
        let mut b = Nodes::new(n);
        chain(&mut b, &sizes, top, 0..sizes[top]);
        b.finish()
    }
}

#[cfg(test)]
mod tests {
    use crate::float::ProbeFloat;
    use crate::{orders, SumTree};
    use rand::{Rng, SeedableRng};

    /// A shape's name, its tree and the order as code it must equal.
    type NamedShape<T> = (&'static str, fn(usize) -> SumTree, fn(&[T]) -> T);

    fn shapes<T: ProbeFloat>() -> [NamedShape<T>; 3] {
        [
            ("numpy", SumTree::numpy_pairwise, orders::numpy_pairwise),
            ("reverse", SumTree::reverse, orders::reverse),
            (
                "xla",
                SumTree::xla_tree_reduction,
                orders::xla_tree_reduction,
            ),
        ]
    }

    #[test]
    fn shapes_replay_like_the_reference_code() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for n in (1..300).chain([1000, 1025, 1500, 3000, 4096, 8191, 8192, 10_000, 32_769]) {
            let x: Vec<f32> = (0..n)
                .map(|_| rng.random_range(-1.0f32..1.0) * 2f32.powi(rng.random_range(-20..20)))
                .collect();
            for (name, tree, order) in shapes::<f32>() {
                let t = tree(n);
                assert_eq!(t.leaf_count(), n, "{name} n={n}");
                assert_eq!(t.replay(&x).to_bits(), order(&x).to_bits(), "{name} n={n}");
            }
        }
    }

    #[test]
    fn shapes_are_what_the_revealer_finds() {
        for n in [1, 2, 7, 8, 9, 17, 33, 129, 300, 1057] {
            for (name, tree, order) in shapes::<f64>() {
                let t = crate::Reveal::new(n)
                    .known_orders(false)
                    .run(order)
                    .unwrap();
                assert_eq!(t, tree(n), "{name} n={n}");
            }
        }
    }
}
