//! The flags more than one `cargo fprev` module reads, defined once: which packages and
//! functions ([`SourceArgs`]), where and how the annotated copy is built ([`CopyArgs`]),
//! and `cargo fprev test`'s own ([`TestArgs`], read by the rounds and the seed plan).
//! The flags of one subcommand alone stay in its module (`replay`, `scan`, `merge`,
//! `chains`).

use std::path::PathBuf;

use crate::limits;

/// Which functions: the packages, and the lines a diff touches.
#[derive(clap::Args, Clone)]
pub struct SourceArgs {
    /// Annotate only this package (repeatable; default: every workspace member).
    #[arg(short = 'p', long = "package")]
    pub packages: Vec<String>,
    /// Path to the workspace's Cargo.toml (default: the current directory's).
    #[arg(long)]
    pub manifest_path: Option<PathBuf>,
    /// Annotate only the functions a unified diff (`git diff` output) touches.
    #[arg(long)]
    pub in_diff: Option<PathBuf>,
    /// Largest input file read (`--in-diff`; bytes, or with K, M, G, T): a larger file, a
    /// device or an endless pipe is an error after this many bytes.
    #[arg(long, value_parser = limits::bytes, default_value = "64M")]
    pub max_input_bytes: u64,
}

#[derive(clap::Args, Clone)]
pub struct CopyArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// The fprev checkout the copy depends on (default: the one this tool was built from).
    #[arg(long)]
    pub fprev_path: Option<PathBuf>,
    /// Where the annotated copy and its build live (default: a folder per workspace under
    /// the system's temporary directory, reused by later calls).
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// Where the copy is built (default: `target` in the scratch folder; `test`, `replay`
    /// and `chains` run the same build). Copies of several workspaces can share one, and
    /// so one build of fprev and the common dependencies.
    #[arg(long)]
    pub target_dir: Option<PathBuf>,
    /// Bytes of each test run's output kept in its log (bytes, or with K, M, G, T; half
    /// for standard output, half for standard error): the rest is counted and noted,
    /// never held, so a test that prints gigabytes costs no more memory.
    #[arg(long, value_parser = limits::bytes, default_value = "64M")]
    pub max_log_bytes: u64,
    /// Features to build the tests with (passed to cargo).
    #[arg(long)]
    pub features: Option<String>,
    /// Build the tests with every feature.
    #[arg(long)]
    pub all_features: bool,
}

// `cargo fprev test`'s flags (no doc comment: clap would read it as the subcommand's
// about, which the `Test` variant's doc gives).
#[derive(clap::Args)]
pub struct TestArgs {
    #[command(flatten)]
    pub copy: CopyArgs,
    /// Seeds per mode (with --time, the most seeds; default then: no cap).
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Stop starting new seeds after this long (`90s`, `10m`, `2h`): a nightly campaign.
    #[arg(long)]
    pub time: Option<String>,
    /// Run only shard k of N of the seeds (1-based: seeds k, k+N, k+2N, ...), so N
    /// machines split one campaign; `cargo fprev merge` joins their findings.json.
    #[arg(long)]
    pub shard: Option<String>,
    /// The first seed is this plus one (a nightly passes the date, say).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Scrambling modes, comma-separated: shapes, fisher-yates, sattolo.
    #[arg(long, default_value = "shapes", value_delimiter = ',')]
    pub modes: Vec<String>,
    /// Where findings.json, findings.md, junit.xml and the run logs go.
    #[arg(long, default_value = "fprev.out")]
    pub out: PathBuf,
    /// A findings report whose findings are replayed first, each reported as still
    /// failing or fixed (default: OUT/findings.json when an earlier run left one;
    /// `none` replays nothing).
    #[arg(long)]
    pub previous: Option<PathBuf>,
    /// A scrambled run longer than this many times its unscrambled time is stopped; a
    /// test that does so alone too is a finding of kind `timeout`.
    #[arg(long, default_value_t = 5.0)]
    pub timeout_factor: f64,
    /// Blame every finding on its smallest set of sites (`cargo fprev blame`'s search).
    #[arg(long)]
    pub blame: bool,
    /// Scrambled runs at once (default: one per core, at most 4,
    /// each with an equal share of the cores as test threads; 1 when the test arguments
    /// or RUST_TEST_THREADS set the thread count).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Arguments for the test binaries (a filter, --test-threads ...).
    #[arg(last = true)]
    pub test_args: Vec<String>,
}
