//! Which scramble sites a program was compiled with, which ones ran, and which loops
//! `#[scramble]` left alone and why: amplification that says what it covered.
//!
//! ```
//! #[fprev::scramble]
//! fn prefix(v: &[f64]) -> Vec<f64> {
//!     let mut s = 0.0;
//!     let mut out = Vec::new();
//!     for x in v {
//!         s += x;
//!         out.push(s); // reads the running value: order is meaning
//!     }
//!     out
//! }
//! # let _ = prefix(&[1.0]);
//! let listed = fprev::scramble::sites();
//! assert!(listed.iter().any(|s| s.reason.is_some_and(|r| r.contains("reads `s`"))));
//! ```

use std::fmt;

use super::call_site::{CallSite, SiteKind};

/// Not public API. The sites of one annotated function, registered by generated code.
#[derive(Debug)]
pub struct FnSites {
    sites: &'static [CallSite],
    left: &'static [LeftAlone],
}

impl FnSites {
    /// Not public API.
    pub const fn new(sites: &'static [CallSite], left: &'static [LeftAlone]) -> Self {
        FnSites { sites, left }
    }
}

inventory::collect!(FnSites);

/// A loop that `#[scramble]` did not reorder, with the reason.
#[derive(Debug)]
pub struct LeftAlone {
    label: &'static str,
    file: &'static str,
    line: u32,
    reason: &'static str,
}

impl LeftAlone {
    /// Not public API. Used by generated code.
    pub const fn new(
        label: &'static str,
        file: &'static str,
        line: u32,
        reason: &'static str,
    ) -> Self {
        LeftAlone {
            label,
            file,
            line,
            reason,
        }
    }
}

/// One line of [`sites`]: a scramble site and how often it ran scrambled, or a loop left
/// alone and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteReport {
    /// What the site reorders; `None` for a loop left alone.
    pub kind: Option<SiteKind>,
    /// `module::function#kindN`.
    pub label: &'static str,
    /// Source file.
    pub file: &'static str,
    /// Source line.
    pub line: u32,
    /// Scrambled executions in this process (0 for a loop left alone).
    pub reached: u64,
    /// Why a loop was left alone ("order-carrying: reads `s`, line 12").
    pub reason: Option<&'static str>,
}

impl fmt::Display for SiteReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.reason) {
            (Some(kind), _) => write!(
                f,
                "{:<18} {:>8}x  {} ({}:{})",
                kind.name(),
                self.reached,
                self.label,
                self.file,
                self.line
            ),
            (None, reason) => write!(
                f,
                "{:<18} {:>9}  {} ({}:{}): {}",
                "left alone",
                "",
                self.label,
                self.file,
                self.line,
                reason.unwrap_or("")
            ),
        }
    }
}

/// Every scramble site compiled into this program (reductions, declared loops, rayon
/// chains) with its scrambled executions so far, then every loop left alone with its
/// reason, in source order per file.
pub fn sites() -> Vec<SiteReport> {
    let mut out = Vec::new();
    for f in inventory::iter::<FnSites> {
        for s in f.sites {
            let (file, line) = s.location();
            out.push(SiteReport {
                kind: Some(s.kind()),
                label: s.label(),
                file,
                line,
                reached: s.reached(),
                reason: None,
            });
        }
        for l in f.left {
            out.push(SiteReport {
                kind: None,
                label: l.label,
                file: l.file,
                line: l.line,
                reached: 0,
                reason: Some(l.reason),
            });
        }
    }
    out.sort_by(|a, b| {
        (a.kind.is_none(), a.file, a.line, a.label).cmp(&(
            b.kind.is_none(),
            b.file,
            b.line,
            b.label,
        ))
    });
    out.dedup();
    out
}

/// How much of the compiled scramble sites a process reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coverage {
    /// Sites compiled in.
    pub compiled: usize,
    /// Sites that ran scrambled at least once.
    pub reached: usize,
    /// Loops left alone.
    pub left_alone: usize,
}

impl Coverage {
    /// The coverage of this process so far.
    ///
    /// ```
    /// let c = fprev::scramble::Coverage::now();
    /// assert!(c.reached <= c.compiled);
    /// ```
    pub fn now() -> Coverage {
        let all = sites();
        Coverage {
            compiled: all.iter().filter(|s| s.kind.is_some()).count(),
            reached: all
                .iter()
                .filter(|s| s.kind.is_some() && s.reached > 0)
                .count(),
            left_alone: all.iter().filter(|s| s.kind.is_none()).count(),
        }
    }
}

impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} scramble site(s) reached, {} loop(s) left alone (fprev::scramble::sites() lists them)",
            self.reached, self.compiled, self.left_alone
        )
    }
}
