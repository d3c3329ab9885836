//! The chain report: every site that ran, longest chain first, with a shape guess.

use super::source::SiteSource;
use std::fmt;

/// Buckets of the chain-length histogram: bucket `b` counts chains of length in
/// `[2^b, 2^(b+1))`, the last one everything longer.
pub const HISTOGRAM_BUCKETS: usize = 16;

/// The shape of a site's chains, guessed from its counts per call.
///
/// With `A` additions per call, `max` the longest chain and `mean` the mean chain:
/// sequential when one chain per call takes (nearly) all additions (`mean >= 2A/3`);
/// tree-like when chains stay logarithmic and many (`max <= log2(A) + 2`, a chain per 4
/// additions or more, `A >= 8`); blocked or
/// strided otherwise (several long chains per call: lanes, blocks, one chain per output
/// as in a matrix product); short when a call makes fewer than 4 additions.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChainShape {
    /// One chain per call: the chain length is the trip count.
    Sequential,
    /// Several long chains per call.
    Blocked,
    /// Chains of about `log2` of the additions per call.
    TreeLike,
    /// Too few additions per call to tell.
    Short,
}

impl fmt::Display for ChainShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            ChainShape::Sequential => "sequential",
            ChainShape::Blocked => "blocked/strided",
            ChainShape::TreeLike => "tree-like",
            ChainShape::Short => "short",
        })
    }
}

/// Whether a site's summation order can change its result, which ranks it in the report.
///
/// ```
/// use fprev::chains::Order;
///
/// #[fprev::accumulator]
/// fn count_and_sum(x: &[f64]) -> (f64, f64) {
///     let mut n = 0.0;
///     let mut s = 0.0;
///     for v in x {
///         n += 1.0;
///         s += v;
///     }
///     (n, s)
/// }
///
/// count_and_sum(&[0.1, 0.2, 0.3]);
/// let report = fprev::chains::report();
/// // The reduction first; the counter, which no order can change, after it.
/// let orders: Vec<Order> = report.sites.iter().map(|s| s.order).collect();
/// assert_eq!(orders, [Order::Reorderable, Order::ExactInteger]);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Order {
    /// A reduction whose terms could be combined in another order, with another
    /// rounding: what the report is for. Listed first.
    Reorderable,
    /// Every term looked at was a whole number and their magnitudes add up to less than
    /// `2^p` (a float counter such as `i += 1.0`): every order gives the same sum.
    ExactInteger,
    /// The value is read inside the loop that builds it (a prefix sum, a running value
    /// written out): the order is the meaning, not a rounding choice.
    RunningValue,
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Order::Reorderable => "reorderable",
            Order::ExactInteger => "exact integer: order cannot change it",
            Order::RunningValue => "running value: order is meaning",
        })
    }
}

/// One site's counts.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub struct SiteChains {
    /// Where the site is and what it accumulates.
    pub source: SiteSource,
    /// Longest chain seen.
    pub max_chain: u64,
    /// Additions counted (floats only).
    pub adds: u64,
    /// Chains ended.
    pub chains: u64,
    /// Calls of the function in which the site added (its executions).
    pub executions: u64,
    /// Chains by length (see [`HISTOGRAM_BUCKETS`]).
    pub histogram: [u64; HISTOGRAM_BUCKETS],
    /// Chains cut because more places were interleaved than a place site tracks at once
    /// (16): the chain counts are then lower bounds, and the report says so.
    pub evicted: u64,
    /// The guessed shape.
    pub shape: ChainShape,
    /// Whether the order can change the result (the report's first sort key).
    pub order: Order,
}

impl SiteChains {
    /// Additions per execution.
    pub fn adds_per_execution(&self) -> f64 {
        self.adds as f64 / self.executions.max(1) as f64
    }

    /// Chains per execution.
    pub fn chains_per_execution(&self) -> f64 {
        self.chains as f64 / self.executions.max(1) as f64
    }
}

pub(super) fn classify(adds: u64, chains: u64, executions: u64, max: u64) -> ChainShape {
    let per_call = adds as f64 / executions.max(1) as f64;
    let mean = adds as f64 / chains.max(1) as f64;
    if per_call < 4.0 {
        ChainShape::Short
    } else if mean >= per_call * 2.0 / 3.0 {
        ChainShape::Sequential
    } else if per_call >= 8.0
        && (max as f64) <= per_call.log2() + 2.0
        && chains as f64 >= adds as f64 / 4.0
    {
        ChainShape::TreeLike
    } else {
        ChainShape::Blocked
    }
}

/// Every site that recorded an addition, longest chain first.
///
/// ```
/// let r = fprev::chains::report();
/// for s in &r.sites {
///     let at = &s.source;
///     println!("{} {}:{} max {}", at.function, at.file, at.line, s.max_chain);
/// }
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChainReport {
    /// The sites: reorderable reductions first, then exact integer counters and running
    /// values (see [`Order`]), each by longest chain (then by location).
    pub sites: Vec<SiteChains>,
}

impl ChainReport {
    /// The first site whose function path ends with `function` (`"dot"`,
    /// `"my_crate::dot"`).
    pub fn site(&self, function: &str) -> Option<&SiteChains> {
        self.sites.iter().find(|s| {
            s.source.function == function || s.source.function.ends_with(&format!("::{function}"))
        })
    }
}

/// `1:3 8-15:2 >=32768:1`: the non-empty buckets.
fn histogram_text(h: &[u64; HISTOGRAM_BUCKETS]) -> String {
    let parts: Vec<String> = h
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(b, c)| {
            if b + 1 == HISTOGRAM_BUCKETS {
                format!(">={}:{c}", 1u64 << b)
            } else if b == 0 {
                format!("1:{c}")
            } else {
                format!("{}-{}:{c}", 1u64 << b, (1u64 << (b + 1)) - 1)
            }
        })
        .collect();
    parts.join(" ")
}

/// Reorderable reductions first, then exact counters and running values; longest chain
/// first within each.
pub(super) fn sort(sites: &mut [SiteChains]) {
    sites.sort_by(|a, b| {
        a.order
            .cmp(&b.order)
            .then_with(|| b.max_chain.cmp(&a.max_chain))
            .then_with(|| {
                let (a, b) = (&a.source, &b.source);
                (a.file, a.line, a.column).cmp(&(b.file, b.line, b.column))
            })
    });
}

impl fmt::Display for ChainReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "fprev chains: {} accumulation site(s), reorderable reductions first, longest chain first",
            self.sites.len()
        )?;
        writeln!(
            f,
            "{:>10} {:>11} {:>12} {:>10}  {:<15}  site",
            "max chain", "adds/exec", "chains/exec", "execs", "shape"
        )?;
        for s in &self.sites {
            writeln!(
                f,
                "{:>10} {:>11.1} {:>12.1} {:>10}  {:<15}  {} {}:{}:{} `{}` ({}){} chain lengths {}",
                s.max_chain,
                s.adds_per_execution(),
                s.chains_per_execution(),
                s.executions,
                s.shape,
                s.source.function,
                s.source.file,
                s.source.line,
                s.source.column,
                s.source.expr,
                s.source.kind,
                match s.order {
                    Order::Reorderable => String::new(),
                    o => format!(" [{o}]"),
                },
                histogram_text(&s.histogram)
            )?;
            if s.evicted > 0 {
                writeln!(
                    f,
                    "{:>10} tracking overflowed: {} chain(s) cut by more than 16 interleaved places; the chains above are lower bounds",
                    "", s.evicted
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(classify(1000, 1, 1, 1000), ChainShape::Sequential);
        assert_eq!(classify(1024, 512, 1, 10), ChainShape::TreeLike);
        assert_eq!(classify(1000, 8, 1, 125), ChainShape::Blocked);
        assert_eq!(classify(6, 3, 3, 2), ChainShape::Short);
    }
}
