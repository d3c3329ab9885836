//! Reveal every registered function and compare with the orders pinned on disk.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{registered, Registration, FPREV_BLESS, FPREV_ORDERS_DIR};
use crate::tree::SumTree;

/// How [`Check::run`] treats pinned orders. Defaults come from the environment
/// ([`Check::from_env`]).
///
/// ```no_run
/// let summary = fprev::registry::Check::from_env()
///     .dir("tests/orders")
///     .bless(false)
///     .run()?;
/// println!("{summary}");
/// # Ok::<(), fprev::registry::CheckError>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Check {
    /// Where the pins live. Default: `$FPREV_ORDERS_DIR`, else
    /// `$CARGO_MANIFEST_DIR/fprev-orders`, else `./fprev-orders`.
    pub dir: PathBuf,
    /// Rewrite every pin with the order revealed now. Default: `$FPREV_BLESS == 1`, else
    /// off.
    pub bless: bool,
    /// Only check registrations whose name contains this. Default: all.
    pub filter: Option<String>,
    /// Succeed when no registration matches. Default: off, because finding none usually
    /// means the test forgot `use the_crate as _;` and would otherwise check nothing.
    pub allow_empty: bool,
}

impl Check {
    /// The configuration read from `FPREV_ORDERS_DIR`, `FPREV_BLESS` and
    /// `CARGO_MANIFEST_DIR`; a bad `FPREV_BLESS` value is reported and ignored.
    pub fn from_env() -> Check {
        let dir = match std::env::var_os(FPREV_ORDERS_DIR) {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => std::env::var_os("CARGO_MANIFEST_DIR")
                .map(PathBuf::from)
                .unwrap_or_default()
                .join("fprev-orders"),
        };
        let bless = match std::env::var(FPREV_BLESS) {
            Ok(v) if v == "1" => true,
            Ok(v) if v.is_empty() || v == "0" => false,
            Ok(v) => {
                eprintln!(
                    "fprev: {FPREV_BLESS}={v:?} is not 0 or 1; using the default (0: keep pins)"
                );
                false
            }
            Err(_) => false,
        };
        Check {
            dir,
            bless,
            filter: None,
            allow_empty: false,
        }
    }

    /// Set the pin directory.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Check {
        self.dir = dir.into();
        self
    }

    /// Rewrite pins (see [`Check::bless`]).
    pub fn bless(mut self, on: bool) -> Check {
        self.bless = on;
        self
    }

    /// Only check registrations whose name contains `part`.
    pub fn filter(mut self, part: impl Into<String>) -> Check {
        self.filter = Some(part.into());
        self
    }

    /// Accept finding no registration (see [`Check::allow_empty`]): for a crate that has
    /// none on some platforms or features.
    ///
    /// ```
    /// let summary = fprev::registry::Check::from_env()
    ///     .filter("no_function_has_this_name")
    ///     .allow_empty(true)
    ///     .run()?;
    /// assert!(summary.orders.is_empty());
    /// # Ok::<(), fprev::registry::CheckError>(())
    /// ```
    pub fn allow_empty(mut self, on: bool) -> Check {
        self.allow_empty = on;
        self
    }

    /// Check every matching registration at each of its sizes. Finding none is an error
    /// unless [`allow_empty`](Self::allow_empty) is on; every pin written is reported on
    /// stderr (past the test harness's capture, so `cargo test` shows it).
    pub fn run(&self) -> Result<CheckSummary, CheckError> {
        let regs: Vec<&Registration> = registered()
            .into_iter()
            .filter(|r| {
                self.filter
                    .as_ref()
                    .is_none_or(|f| r.name.contains(f.as_str()))
            })
            .collect();
        let mut summary = CheckSummary::default();
        if regs.is_empty() && !self.allow_empty {
            let which = match &self.filter {
                Some(f) => format!("no registered function whose name contains {f:?} is"),
                None => "no registered functions are".to_string(),
            };
            let problem = format!(
                "{which} linked into this binary, so nothing was checked: a test of a library \
                 crate's registrations needs `use the_crate as _;` (for a crate with none, \
                 call check_registered_allow_empty())"
            );
            return Err(CheckError {
                problems: vec![problem],
                summary,
            });
        }
        let mut problems = Vec::new();
        for r in regs {
            for &n in r.sizes {
                match self.check_one(r, n) {
                    Ok(c) => summary.orders.push(c),
                    Err(p) => problems.push(p),
                }
            }
        }
        if problems.is_empty() {
            Ok(summary)
        } else {
            Err(CheckError { problems, summary })
        }
    }

    fn check_one(&self, r: &Registration, n: usize) -> Result<CheckedOrder, String> {
        let what = format!("{} at n = {n}", r.name);
        let tree = r
            .reveal(n, 0)
            .map_err(|e| format!("{what}: cannot reveal the order: {e}"))?;
        let again = r
            .reveal(n, 1)
            .map_err(|e| format!("{what}: cannot reveal the order a second time: {e}"))?;
        if let Some(d) = tree.diff(&again) {
            return Err(format!(
                "{what}: nondeterministic: two revelations disagree (threads, atomics or \
                 work stealing change the order between calls)\n{d}"
            ));
        }
        let path = |suffix: &str| self.dir.join(format!("{}{suffix}", file_stem(r, n)));
        let (pin, pin_dot) = (path(".tree"), path(".dot"));
        let (actual, actual_dot) = (path(".actual.tree"), path(".actual.dot"));
        let write = |t: &SumTree, tree: &Path, dot: &Path| -> Result<(), String> {
            std::fs::create_dir_all(&self.dir)
                .and_then(|_| std::fs::write(tree, format!("{t}\n")))
                .and_then(|_| std::fs::write(dot, t.to_dot()))
                .map_err(|e| format!("{what}: cannot write {}: {e}", tree.display()))
        };
        let outcome = match std::fs::read_to_string(&pin) {
            Err(_) | Ok(_) if self.bless => {
                write(&tree, &pin, &pin_dot)?;
                announce("re-pinned", &what, &pin, &pin_dot);
                CheckOutcome::Blessed
            }
            Err(_) => {
                write(&tree, &pin, &pin_dot)?;
                announce("pinned", &what, &pin, &pin_dot);
                CheckOutcome::Pinned
            }
            Ok(text) => {
                let pinned: SumTree = text.trim().parse().map_err(|e| {
                    format!("{what}: the pin {} does not parse: {e}", pin.display())
                })?;
                if let Some(d) = pinned.diff(&tree) {
                    write(&tree, &actual, &actual_dot)?;
                    return Err(format!(
                        "{what}: the summation order changed (left: pinned, right: now)\n{d}\n  \
                         pictures: {} (pinned) and {} (now)\n  \
                         accept the new order with {FPREV_BLESS}=1 cargo test",
                        pin_dot.display(),
                        actual_dot.display(),
                    ));
                }
                let _ = std::fs::remove_file(&actual);
                let _ = std::fs::remove_file(&actual_dot);
                CheckOutcome::Matched
            }
        };
        Ok(CheckedOrder {
            name: r.name,
            n,
            tree,
            outcome,
            pin,
        })
    }
}

/// Says on stderr which files a pin wrote. Written to the stderr handle, not with
/// `eprintln!`, so that the test harness's output capture does not hide it.
fn announce(verb: &str, what: &str, tree: &Path, dot: &Path) {
    let _ = writeln!(
        std::io::stderr(),
        "fprev: {verb} {what}: wrote {} and {} (commit them; FPREV_BLESS=1 rewrites them)",
        tree.display(),
        dot.display()
    );
}

fn file_stem(r: &Registration, n: usize) -> String {
    format!("{}.{}.{}.n{n}", r.name.replace("::", "."), r.op, r.dtype())
}

/// What happened to one (function, size).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckOutcome {
    /// The order matched its pin.
    Matched,
    /// No pin existed; it was written.
    Pinned,
    /// The pin was rewritten (`FPREV_BLESS=1`).
    Blessed,
}

/// One checked order.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct CheckedOrder {
    /// The function.
    pub name: &'static str,
    /// The size.
    pub n: usize,
    /// The order revealed now.
    pub tree: SumTree,
    /// What happened.
    pub outcome: CheckOutcome,
    /// The pin's path.
    pub pin: PathBuf,
}

/// Every order checked.
#[non_exhaustive]
#[derive(Clone, Debug, Default)]
pub struct CheckSummary {
    /// One entry per (function, size) that passed.
    pub orders: Vec<CheckedOrder>,
}

impl fmt::Display for CheckSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for o in &self.orders {
            let what = match o.outcome {
                CheckOutcome::Matched => "matches",
                CheckOutcome::Pinned => "pinned",
                CheckOutcome::Blessed => "re-pinned",
            };
            writeln!(f, "{} n={}: {what} {}", o.name, o.n, o.pin.display())?;
        }
        Ok(())
    }
}

/// Orders that changed, or functions that could not be revealed deterministically.
/// `Debug` prints the same text as `Display`, so `check_registered().unwrap()` reads well.
#[derive(Clone)]
pub struct CheckError {
    /// One message per failing (function, size).
    pub problems: Vec<String>,
    /// What passed.
    pub summary: CheckSummary,
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} pinned summation order(s) failed:",
            self.problems.len()
        )?;
        for p in &self.problems {
            writeln!(f, "- {p}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for CheckError {}

/// Reveal every registered function at its sizes and compare with the pins (see
/// [`Check::from_env`] for where they live). Call it from one `#[test]`:
///
/// ```no_run
/// #[test]
/// fn summation_orders() {
///     fprev::check_registered().unwrap();
/// }
/// ```
///
/// Writes missing pins (`<name>.<op>.<dtype>.n<N>.tree` and a `.dot` picture), rewrites
/// all of them with `FPREV_BLESS=1`, and fails with the structural diff when an order
/// changed (writing `<...>.actual.tree`/`.dot` next to the pin) or when two revelations
/// with different seeds disagree.
///
/// Finding no registration at all is an error (the test would check nothing; usually it
/// lacks `use the_crate as _;`): see [`check_registered_allow_empty`].
pub fn check_registered() -> Result<CheckSummary, CheckError> {
    Check::from_env().run()
}

/// [`check_registered`] for a crate that may have no registrations (on some platforms
/// or feature sets): finding none succeeds with an empty summary.
///
/// ```no_run
/// #[test]
/// fn summation_orders() {
///     let summary = fprev::check_registered_allow_empty().unwrap();
///     println!("{} order(s) checked", summary.orders.len());
/// }
/// ```
pub fn check_registered_allow_empty() -> Result<CheckSummary, CheckError> {
    Check::from_env().allow_empty(true).run()
}
