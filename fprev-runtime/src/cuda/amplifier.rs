//! The amplifier on the GPU: an atomic kernel run many times, and how many distinct
//! results its runs gave.

use super::SCRAMBLE_ALGORITHM;

/// Which atomic kernel [`Device::amplify`](super::Device::amplify) runs.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicKernel {
    /// All elements into one result.
    GlobalSum,
    /// Elements into `bins` results by a seeded random address (a weighted histogram).
    Histogram {
        /// Number of bins.
        bins: usize,
    },
}

/// An amplifier run on the GPU. Defaults: 2^20 elements, 256 threads, 1024 blocks,
/// 100 runs, seed 0, scrambled.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuAmplifyConfig {
    /// The kernel.
    pub kernel: AtomicKernel,
    /// Elements.
    pub n: usize,
    /// Threads per block.
    pub threads: usize,
    /// Blocks.
    pub blocks: usize,
    /// Launches.
    pub runs: u64,
    /// Seed of the input data and of the scrambling.
    pub seed: u64,
    /// Scramble block and thread ids (otherwise only the hardware varies the order).
    pub scrambled: bool,
}

impl GpuAmplifyConfig {
    /// Defaults for `kernel`.
    pub fn new(kernel: AtomicKernel) -> GpuAmplifyConfig {
        GpuAmplifyConfig {
            kernel,
            n: 1 << 20,
            threads: 256,
            blocks: 1024,
            runs: 100,
            seed: 0,
            scrambled: true,
        }
    }
    /// Elements.
    pub fn n(mut self, n: usize) -> Self {
        self.n = n;
        self
    }
    /// Launches.
    pub fn runs(mut self, runs: u64) -> Self {
        self.runs = runs;
        self
    }
    /// Seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    /// Scrambled launches or hardware ids.
    pub fn scrambled(mut self, on: bool) -> Self {
        self.scrambled = on;
        self
    }
}

/// What an amplifier run saw: how many distinct results `runs` launches gave.
///
/// ```
/// let v = fprev::cuda::Variability::example();
/// println!("{}", fprev::cuda::variability_table(&[v]));
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub struct Variability {
    /// The kernel.
    pub kernel: AtomicKernel,
    /// Whether launches were scrambled.
    pub scrambled: bool,
    /// Launches.
    pub runs: u64,
    /// Distinct output bit patterns (whole result vector).
    pub distinct: usize,
    /// Largest `max - min` over runs, over all outputs.
    pub spread: f64,
    /// Result of the first run, output 0.
    pub first: f32,
    /// Replay token of the first launch that differed from the first run, if any.
    pub first_difference: Option<String>,
}

impl Variability {
    #[doc(hidden)]
    pub fn example() -> Variability {
        Variability {
            kernel: AtomicKernel::GlobalSum,
            scrambled: true,
            runs: 100,
            distinct: 37,
            spread: 0.0625,
            first: 524_288.5,
            first_difference: Some(format!("{SCRAMBLE_ALGORITHM}:0:1")),
        }
    }
}

/// The variability rows as an aligned text table.
pub fn variability_table(rows: &[Variability]) -> String {
    let mut s = format!(
        "{:<18} {:<10} {:>6} {:>9} {:>12}  {}\n",
        "kernel", "launches", "runs", "distinct", "spread", "first difference"
    );
    for v in rows {
        let kernel = match v.kernel {
            AtomicKernel::GlobalSum => "GlobalSum".to_string(),
            AtomicKernel::Histogram { bins } => format!("Histogram({bins})"),
        };
        s.push_str(&format!(
            "{:<18} {:<10} {:>6} {:>9} {:>12.6e}  {}\n",
            kernel,
            if v.scrambled { "scrambled" } else { "hardware" },
            v.runs,
            v.distinct,
            v.spread,
            v.first_difference.as_deref().unwrap_or("-")
        ));
    }
    s
}
