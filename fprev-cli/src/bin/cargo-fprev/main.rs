//! `cargo fprev`: point fprev's amplifier at a crate without editing it.
//!
//! `cargo fprev test` copies the workspace to a scratch directory, puts
//! `#[fprev::scramble]` on every function that accumulates (on the function's own line,
//! so every file:line stays the original's), builds the tests once, runs them
//! unscrambled, then once per seed and mode, and re-runs every test that failed alone
//! with its token. A finding fails scrambled, passes unscrambled and fails again alone:
//! an order dependence that replays. `cargo fprev replay` runs one finding again.
//! `cargo fprev scan` only reads: it lists the functions `test` would annotate and what
//! the attribute decides for each of their loops and chains.
//!
//! Exit status: 0 no findings, 2 findings, 1 an error (not a cargo project, tests that do
//! not build, nothing to annotate, every test failing unscrambled).

mod annotate;
mod blame;
mod chains;
mod confirm;
mod diff;
// The findings report, its merge and renderers, and what they read (the process reports
// of `assert_reproducible!` campaigns): one campaign system, shared by both binaries of
// this package.
#[path = "../../escape.rs"]
mod escape;
#[path = "../../findings.rs"]
mod findings;
#[path = "../../findings_render.rs"]
mod findings_render;
#[path = "../../reports.rs"]
mod reports;
#[path = "../../stage_stats.rs"]
mod stage_stats;
// The limits `fprev` uses (input caps, durations), shared by both binaries of this
// package; cargo-fprev uses some of them.
#[allow(dead_code)]
#[path = "../../limits.rs"]
mod limits;
mod rounds;
mod runner;
mod scan;
mod workspace;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use fprev::scramble::ReplayToken;

use confirm::{blame_search, run_alone};
use runner::{TestBinary, TestOutcome};

/// An error for the user: printed as `cargo fprev: <text>`, exit status 1.
#[derive(Debug)]
pub struct CargoFprevError(pub String);

#[derive(Parser)]
#[command(
    name = "cargo-fprev",
    bin_name = "cargo fprev",
    version,
    about = "Run a crate's tests under scrambled float reductions, without editing it"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Annotate a copy, run its tests unscrambled and under every seed and mode, report
    /// the failures that replay. Exit 0: none; 2: findings; 1: error.
    Test(TestArgs),
    /// Run one test of the annotated copy with a token (as a finding's `replay` says).
    Replay(ReplayArgs),
    /// Find the smallest set of reductions whose reordering alone fails a test (delta
    /// debugging over the sites its failing run reached).
    Blame(ReplayArgs),
    /// List the functions `test` would annotate, with file:line, and what `#[scramble]`
    /// decides for each of their loops and chains (scrambled, or left alone and why).
    /// Reads the sources only: no copy, no build.
    Scan(ScanArgs),
    /// Count accumulation chains: annotate a copy with `#[fprev::accumulator]`, run its
    /// tests with `FPREV_CHAINS=1`, print the merged report (original file:line).
    Chains(chains::ChainsArgs),
    /// Join the findings.json of several shards or runs into one.
    Merge(MergeArgs),
}

/// Which functions: the packages, and the lines a diff touches.
#[derive(Args, Clone)]
struct SourceArgs {
    /// Annotate only this package (repeatable; default: every workspace member).
    #[arg(short = 'p', long = "package")]
    packages: Vec<String>,
    /// Path to the workspace's Cargo.toml (default: the current directory's).
    #[arg(long)]
    manifest_path: Option<PathBuf>,
    /// Annotate only the functions a unified diff (`git diff` output) touches.
    #[arg(long)]
    in_diff: Option<PathBuf>,
    /// Largest input file read (`--in-diff`; bytes, or with K, M, G, T): a larger file, a
    /// device or an endless pipe is an error after this many bytes.
    #[arg(long, value_parser = limits::bytes, default_value = "64M")]
    max_input_bytes: u64,
}

#[derive(Args)]
struct ScanArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Print one JSON document (schema: docs/cargo-fprev.md) instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Clone)]
struct CopyArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// The fprev checkout the copy depends on (default: the one this tool was built from).
    #[arg(long)]
    fprev_path: Option<PathBuf>,
    /// Where the annotated copy and its build live (default: a folder per workspace under
    /// the system's temporary directory, reused by later calls).
    #[arg(long)]
    scratch: Option<PathBuf>,
    /// Where the copy is built (default: `target` in the scratch folder; `chains` builds
    /// in `DIR/fprev-chains`). Copies of several workspaces can share one, and so one
    /// build of fprev and the common dependencies.
    #[arg(long)]
    target_dir: Option<PathBuf>,
    /// Bytes of each test run's output kept in its log (bytes, or with K, M, G, T; half
    /// for standard output, half for standard error): the rest is counted and noted,
    /// never held, so a test that prints gigabytes costs no more memory.
    #[arg(long, value_parser = limits::bytes, default_value = "64M")]
    max_log_bytes: u64,
    /// Features to build the tests with (passed to cargo).
    #[arg(long)]
    features: Option<String>,
    /// Build the tests with every feature.
    #[arg(long)]
    all_features: bool,
}

#[derive(Args)]
struct TestArgs {
    #[command(flatten)]
    copy: CopyArgs,
    /// Seeds per mode (with --time, the most seeds; default then: no cap).
    #[arg(long)]
    seeds: Option<u64>,
    /// Stop starting new seeds after this long (`90s`, `10m`, `2h`): a nightly campaign.
    #[arg(long)]
    time: Option<String>,
    /// Run only shard k of N of the seeds (1-based: seeds k, k+N, k+2N, ...), so N
    /// machines split one campaign; `cargo fprev merge` joins their findings.json.
    #[arg(long)]
    shard: Option<String>,
    /// The first seed is this plus one (a nightly passes the date, say).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Scrambling modes, comma-separated: shapes, fisher-yates, sattolo.
    #[arg(long, default_value = "shapes", value_delimiter = ',')]
    modes: Vec<String>,
    /// Where findings.json, findings.md, junit.xml and the run logs go.
    #[arg(long, default_value = "fprev.out")]
    out: PathBuf,
    /// A findings report whose findings are replayed first, each reported as still
    /// failing or fixed (default: OUT/findings.json when an earlier run left one;
    /// `none` replays nothing).
    #[arg(long)]
    previous: Option<PathBuf>,
    /// A scrambled run longer than this many times its unscrambled time is stopped; a
    /// test that does so alone too is a finding of kind `timeout`.
    #[arg(long, default_value_t = 5.0)]
    timeout_factor: f64,
    /// Blame every finding on its smallest set of sites (`cargo fprev blame`'s search).
    #[arg(long)]
    blame: bool,
    /// Scrambled runs at once after the first seed (default: one per core, at most 4,
    /// each with an equal share of the cores as test threads; 1 when the test arguments
    /// or RUST_TEST_THREADS set the thread count).
    #[arg(long)]
    jobs: Option<usize>,
    /// Arguments for the test binaries (a filter, --test-threads ...).
    #[arg(last = true)]
    test_args: Vec<String>,
}

#[derive(Args)]
struct MergeArgs {
    /// findings.json files of shards or nights, and FPREV_REPORT files of
    /// `assert_reproducible!` campaigns.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Where the merged findings.json goes.
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    /// Print the table as Markdown.
    #[arg(long)]
    markdown: bool,
    /// Also write the merged report as JUnit XML.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Largest input file read (bytes, or with K, M, G, T): a larger file, a device or
    /// an endless pipe is an error after this many bytes.
    #[arg(long, value_parser = limits::bytes, default_value = "64M")]
    max_input_bytes: u64,
}

#[derive(Args)]
struct ReplayArgs {
    #[command(flatten)]
    copy: CopyArgs,
    /// The scrambling mode of the finding.
    #[arg(long, default_value = "shapes")]
    mode: String,
    /// The test target that holds the test (as a finding's `replay` names it for a
    /// `harness = false` target, which lists no tests by name).
    #[arg(long)]
    target: Option<String>,
    /// The finding's token (v3-...).
    token: String,
    /// The test's full name, as libtest prints it.
    test: String,
}

const MODES: [&str; 3] = ["shapes", "fisher-yates", "sattolo"];

/// Set by SIGINT/SIGTERM: the campaign stops starting runs and writes what it found.
/// A terminal's Ctrl-C reaches the running test binary too (same process group), so
/// nothing keeps running.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

fn catch_interrupts() {
    let handler = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

fn main() -> ExitCode {
    // `cargo fprev ...` runs `cargo-fprev fprev ...`.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "fprev") {
        args.remove(1);
    }
    let cli = Cli::parse_from(args);
    let result = match cli.command {
        // --out is handed to test processes that run in the copy: made absolute here,
        // against the directory the user ran cargo fprev in
        Cmd::Test(mut a) => absolute(&a.out).and_then(|out| {
            a.out = out;
            rounds::test(&a)
        }),
        Cmd::Replay(a) => replay(&a),
        Cmd::Blame(a) => blame_cmd(&a),
        Cmd::Scan(a) => scan(&a),
        Cmd::Chains(a) => chains::chains(&a),
        Cmd::Merge(a) => merge(&a),
    };
    match result {
        Ok(code) => code,
        // an interrupt makes the build or a run fail: say what happened, not the failure
        Err(CargoFprevError(_)) if interrupted() => {
            eprintln!("cargo fprev: interrupted");
            ExitCode::from(130)
        }
        Err(CargoFprevError(msg)) => {
            eprintln!("cargo fprev: {msg}");
            ExitCode::from(1)
        }
    }
}

/// `path` against the current directory (an absolute path stays as it is).
fn absolute(path: &Path) -> Result<PathBuf, CargoFprevError> {
    std::path::absolute(path).map_err(|e| CargoFprevError(format!("{}: {e}", path.display())))
}

/// The annotated copy, ready to build.
struct Prepared {
    root: PathBuf,
    tree: PathBuf,
    target_dir: PathBuf,
    packages: Vec<String>,
    annotated: Vec<(String, usize, String)>,
    /// Held until the command ends: one cargo fprev at a time per scratch folder.
    _lock: Option<workspace::ScratchLock>,
}

/// The workspace, its selected packages and the lines a diff touches: what the
/// commands read functions from.
struct Selection {
    root: PathBuf,
    packages: Vec<workspace::Package>,
    changed: Option<diff::Changed>,
}

fn select(a: &SourceArgs) -> Result<Selection, CargoFprevError> {
    let ws = workspace::locate(a.manifest_path.as_deref())?;
    for p in &a.packages {
        if !ws.members.iter().any(|m| &m.name == p) {
            let names: Vec<&str> = ws.members.iter().map(|m| m.name.as_str()).collect();
            return Err(CargoFprevError(format!(
                "no package `{p}` in the workspace (members: {})",
                names.join(", ")
            )));
        }
    }
    let changed = match &a.in_diff {
        Some(path) => {
            let text = limits::read_capped_text(path, a.max_input_bytes, "--max-input-bytes")
                .map_err(|e| CargoFprevError(format!("--in-diff {e}")))?;
            Some(
                diff::Changed::parse(&text)
                    .map_err(|e| CargoFprevError(format!("--in-diff {}: {e}", path.display())))?,
            )
        }
        None => None,
    };
    let packages = ws
        .members
        .into_iter()
        .filter(|m| a.packages.is_empty() || a.packages.contains(&m.name))
        .collect();
    Ok(Selection {
        root: ws.root,
        packages,
        changed,
    })
}

impl Selection {
    /// The packages whose functions are annotated: proc-macro ones are left out, with a
    /// note.
    fn annotated_packages(&self) -> impl Iterator<Item = &workspace::Package> {
        self.packages.iter().filter(|p| {
            if p.proc_macro {
                eprintln!(
                    "cargo fprev: note: {} is a proc-macro package (its code runs in the \
                     compiler): left as it is",
                    p.name
                );
            }
            !p.proc_macro
        })
    }

    /// The Rust sources of `p`, in path order: (path relative to the root, its text
    /// with `/` separators, the source). Unreadable files are skipped.
    fn sources(&self, p: &workspace::Package) -> Vec<(PathBuf, String, String)> {
        let mut out = Vec::new();
        for dir in &p.src_dirs {
            let mut files = Vec::new();
            rust_files(&self.root.join(dir), &mut files);
            files.sort();
            for file in files {
                let rel = file.strip_prefix(&self.root).unwrap_or(&file).to_path_buf();
                let Ok(src) = std::fs::read_to_string(&file) else {
                    continue;
                };
                let rel_text = rel.to_string_lossy().replace('\\', "/");
                out.push((rel, rel_text, src));
            }
        }
        out
    }

    /// Whether the function is one to annotate (with --in-diff: one the diff touches).
    fn keeps(&self, file: &str, f: &annotate::Annotated) -> bool {
        self.changed
            .as_ref()
            .is_none_or(|c| c.touches(file, f.line, f.end_line))
    }

    /// The error for a selection in which no function accumulates.
    fn nothing_found(&self) -> CargoFprevError {
        CargoFprevError(if self.changed.is_some() {
            "the diff touches no function that accumulates floats: nothing to scramble".into()
        } else {
            "no function that accumulates floats was found in the selected packages \
             (looked for +=, -=, x = x + .., .sum(), .fold() outside test code)"
                .into()
        })
    }
}

/// The note for a file read item by item.
fn note_partial(rel: &Path, e: &syn::Error) {
    eprintln!(
        "cargo fprev: note: {} does not parse as a whole ({}:{}: {e}); \
         read item by item, the items that do not parse left as they are",
        rel.display(),
        e.span().start().line,
        e.span().start().column + 1
    );
}

/// The note for a file that does not lex.
fn note_unparsed(rel: &Path, e: &syn::Error) {
    eprintln!(
        "cargo fprev: note: {}:{}:{} does not parse ({e}); left as it is",
        rel.display(),
        e.span().start().line,
        e.span().start().column + 1
    );
}

/// Copies the workspace (when `write`) and puts `attribute` on its accumulating
/// functions. Each attribute has a copy and a target folder of its own, so that `test`
/// and `chains` alternate without rebuilding each other's copy. Not one target folder:
/// cargo names a workspace member's artifacts from its path relative to its workspace
/// root, which is the same in both copies, so each build would overwrite the other's
/// test binaries.
fn prepare(
    a: &CopyArgs,
    write: bool,
    attribute: annotate::Attribute,
) -> Result<Prepared, CargoFprevError> {
    runner::set_log_cap(a.max_log_bytes);
    let sel = select(&a.source)?;
    let scratch = workspace::scratch_dir(&sel.root, a.scratch.as_deref());
    let lock = if write {
        Some(workspace::ScratchLock::take(&scratch)?)
    } else {
        None
    };
    let base = scratch.join(match attribute {
        annotate::Attribute::Scramble => "tree",
        annotate::Attribute::Accumulator => "tree-chains",
    });
    let tree = workspace::copy_root(&base, &sel.root);
    // The copy is prepared in `staging`, then only the files whose bytes changed are
    // written into `tree`: cargo keeps every build of an unchanged copy (it compares
    // times), so a second call builds nothing.
    let staging = scratch.join(match attribute {
        annotate::Attribute::Scramble => "staging",
        annotate::Attribute::Accumulator => "staging-chains",
    });
    let fprev = workspace::fprev_path(a.fprev_path.as_deref())?;
    if write {
        let files = workspace::files(&sel.root)?;
        workspace::mirror_surroundings(&base, &sel.root)?;
        workspace::copy(&sel.root, &files, &staging)?;
        workspace::point_outside_paths(&sel.root, &files, &staging, &fprev)?;
    }
    let mut annotated = Vec::new();
    let mut packages = Vec::new();
    for p in sel.annotated_packages() {
        packages.push(p.name.clone());
        let mut found = 0;
        for (rel, rel_text, src) in sel.sources(p) {
            match annotate::annotate_where(&src, attribute, |f| sel.keeps(&rel_text, f)) {
                Ok(r) => {
                    if let Some(e) = &r.partial {
                        note_partial(&rel, e);
                    }
                    if let (true, Some(text)) = (write, &r.text) {
                        std::fs::write(staging.join(&rel), text).map_err(|e| {
                            CargoFprevError(format!(
                                "cannot write the copy of {}: {e}",
                                rel.display()
                            ))
                        })?;
                    }
                    for f in r.annotated {
                        annotated.push((rel.display().to_string(), f.line, f.name));
                        found += 1;
                    }
                }
                Err(e) => note_unparsed(&rel, &e),
            }
        }
        if write && found > 0 {
            workspace::add_dependency(&staging.join(&p.dir).join("Cargo.toml"), &fprev)?;
        }
    }
    if write {
        workspace::optimize_runtime(&staging.join("Cargo.toml"))?;
        workspace::sync(&staging, &tree)?;
    }
    if annotated.is_empty() {
        return Err(sel.nothing_found());
    }
    Ok(Prepared {
        root: sel.root.clone(),
        tree,
        target_dir: match (attribute, &a.target_dir) {
            (annotate::Attribute::Scramble, Some(dir)) => dir.clone(),
            (annotate::Attribute::Scramble, None) => scratch.join("target"),
            (annotate::Attribute::Accumulator, Some(dir)) => dir.join("fprev-chains"),
            (annotate::Attribute::Accumulator, None) => scratch.join("target-chains"),
        },
        packages,
        annotated,
        _lock: lock,
    })
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn cargo_args(a: &CopyArgs) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(f) = &a.features {
        v.push("--features".into());
        v.push(f.clone());
    }
    if a.all_features {
        v.push("--all-features".into());
    }
    v
}

/// `cargo fprev scan`: reads the sources of the selected packages, writes nothing and
/// builds nothing.
fn scan(a: &ScanArgs) -> Result<ExitCode, CargoFprevError> {
    let sel = select(&a.source)?;
    let mut functions = Vec::new();
    for p in sel.annotated_packages() {
        for (rel, rel_text, src) in sel.sources(p) {
            match annotate::explain_where(&src, |f| sel.keeps(&rel_text, f)) {
                Ok(r) => {
                    if let Some(e) = &r.partial {
                        note_partial(&rel, e);
                    }
                    for (f, decided) in r.functions {
                        functions.push(scan::Function::new(
                            &p.name, &rel_text, f.line, &f.name, decided,
                        ));
                    }
                }
                Err(e) => note_unparsed(&rel, &e),
            }
        }
    }
    if functions.is_empty() {
        return Err(sel.nothing_found());
    }
    let text = if a.json {
        serde_json::to_string_pretty(&scan::to_json(&functions)).unwrap_or_default() + "\n"
    } else {
        scan::to_text(&functions)
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` to standard output; a reader that closed the pipe early (`| head`) is
/// no error.
fn write_stdout(text: &str) -> Result<(), CargoFprevError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CargoFprevError(format!(
            "cannot write to standard output: {e}"
        ))),
        _ => Ok(()),
    }
}

/// The environment of a run under `mode` and `token`. Persisted findings of
/// `assert_reproducible!` tests (`fprev-regressions/`) are neither replayed nor written:
/// a campaign's finding of one seed would otherwise fail every later run of its test,
/// the unscrambled one included (`--previous` replays findings across nights instead).
fn env_for(mode: &str, token: &str) -> Vec<(String, String)> {
    vec![
        ("FPREV_SCRAMBLE".into(), mode.into()),
        ("FPREV_SEED".into(), token.into()),
        ("FPREV_REGRESSIONS".into(), "off".into()),
    ]
}

/// [`env_for`] for the runs that find and confirm failures (rounds, confirmations, blame):
/// without backtraces. Symbolizing one costs a debug test binary about 0.2 s per failure,
/// which across hundreds of failing runs would cost more than the runs themselves; the
/// panic message and location are in the log, and `cargo fprev replay` runs the test
/// under the user's own RUST_BACKTRACE.
fn finding_env(mode: &str, token: &str) -> Vec<(String, String)> {
    let mut env = env_for(mode, token);
    env.push(("RUST_BACKTRACE".into(), "0".into()));
    env
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect()
}

fn write_log(dir: &Path, name: &str, text: &str) {
    let _ = std::fs::write(dir.join(format!("{}.log", sanitize(name))), text);
}

fn write_file(path: &Path, text: &str) -> Result<(), CargoFprevError> {
    std::fs::write(path, text)
        .map_err(|e| CargoFprevError(format!("cannot write {}: {e}", path.display())))
}

fn replay(a: &ReplayArgs) -> Result<ExitCode, CargoFprevError> {
    check_mode(&a.mode)?;
    let token: ReplayToken = a
        .token
        .parse()
        .map_err(|e| CargoFprevError(format!("TOKEN: {e}")))?;
    let p = prepare(&a.copy, true, annotate::Attribute::Scramble)?;
    let bins = runner::build(&p.tree, &p.target_dir, &p.packages, &cargo_args(&a.copy))?;
    if let Some(bin) = find_binary(&bins, &a.test, a.target.as_deref())? {
        let args = vec![a.test.clone(), "--exact".into(), "--nocapture".into()];
        let run = runner::run(bin, &args, &env_for(&a.mode, &token.to_string()), None)?;
        print!("{}", run.log);
        let failed = run.tests.get(&a.test) == Some(&TestOutcome::Failed) || run.crashed;
        println!(
            "cargo fprev replay: {} {} under FPREV_SCRAMBLE={} FPREV_SEED={token}",
            a.test,
            if failed { "FAILED" } else { "passed" },
            a.mode
        );
        return Ok(if failed {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        });
    }
    Err(CargoFprevError(format!(
        "no test named `{}` in the built tests of {}",
        a.test,
        p.packages.join(", ")
    )))
}

/// The built test binary that holds `test`: the one of target `target` when given (a
/// `harness = false` target lists no tests), else the one that lists it.
fn find_binary<'a>(
    bins: &'a [TestBinary],
    test: &str,
    target: Option<&str>,
) -> Result<Option<&'a TestBinary>, CargoFprevError> {
    if let Some(t) = target {
        return match bins.iter().find(|b| b.target == t) {
            Some(b) => Ok(Some(b)),
            None => Err(CargoFprevError(format!(
                "no test target `{t}` was built (targets: {})",
                bins.iter()
                    .map(|b| b.target.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        };
    }
    for bin in bins {
        if runner::lists(bin, test)? {
            return Ok(Some(bin));
        }
    }
    Ok(None)
}

fn blame_cmd(a: &ReplayArgs) -> Result<ExitCode, CargoFprevError> {
    check_mode(&a.mode)?;
    let token: ReplayToken = a
        .token
        .parse()
        .map_err(|e| CargoFprevError(format!("TOKEN: {e}")))?;
    let token = token.to_string();
    let p = prepare(&a.copy, true, annotate::Attribute::Scramble)?;
    let bins = runner::build(&p.tree, &p.target_dir, &p.packages, &cargo_args(&a.copy))?;
    let Some(bin) = find_binary(&bins, &a.test, a.target.as_deref())? else {
        return Err(CargoFprevError(format!(
            "no test named `{}` in the built tests",
            a.test
        )));
    };
    let logs = p.target_dir.join("fprev-blame");
    std::fs::create_dir_all(&logs)
        .map_err(|e| CargoFprevError(format!("cannot create {}: {e}", logs.display())))?;
    let (run, sites) = run_alone(bin, &a.test, &a.mode, &token, None, &logs, "blame-full")?;
    if run.tests.get(&a.test) != Some(&TestOutcome::Failed) && !run.crashed {
        return Err(CargoFprevError(format!(
            "{} passes under FPREV_SCRAMBLE={} FPREV_SEED={token}: nothing to blame",
            a.test, a.mode
        )));
    }
    if sites.is_empty() {
        return Err(CargoFprevError(format!(
            "{} fails, but its run reached no scramble site: the failure is not fprev's",
            a.test
        )));
    }
    let (set, runs) = blame_search(bin, &a.test, &a.mode, &token, None, &sites)?;
    println!(
        "{} fails under FPREV_SCRAMBLE={} FPREV_SEED={token} when only these {} of the {} \
         reduction site(s) it reached are scrambled ({runs} runs):",
        a.test,
        a.mode,
        set.len(),
        sites.len()
    );
    for s in &set {
        let code = std::fs::read_to_string(p.root.join(&s.file))
            .ok()
            .and_then(|t| {
                t.lines()
                    .nth(s.line as usize - 1)
                    .map(|l| l.trim().to_string())
            })
            .unwrap_or_default();
        println!("  {}:{}  {}\n      {}", s.file, s.line, s.label, code);
    }
    Ok(ExitCode::SUCCESS)
}

fn check_mode(mode: &str) -> Result<(), CargoFprevError> {
    if MODES.contains(&mode) {
        Ok(())
    } else {
        Err(CargoFprevError(format!(
            "unknown mode `{mode}` (expected {})",
            MODES.join(", ")
        )))
    }
}

/// Joins findings reports (shards, nights) and campaign process reports into one, and
/// prints its table: exit 2 when it holds findings.
fn merge(a: &MergeArgs) -> Result<ExitCode, CargoFprevError> {
    let merged = findings::merge_files(
        &a.inputs,
        a.output.as_deref(),
        a.junit.as_deref(),
        a.max_input_bytes,
    )
    .map_err(CargoFprevError)?;
    write_stdout(&if a.markdown {
        merged.to_markdown()
    } else {
        merged.to_console()
    })?;
    Ok(if merged.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}
