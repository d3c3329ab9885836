//! The findings report as people read it: a console table, Markdown and JUnit XML, with
//! the campaigns' statistics after the findings. One renderer for every report (`cargo
//! fprev test`, `cargo fprev merge`, `fprev campaign merge`).

use std::fmt::Write as _;

use crate::escape::{cell, xml};
use crate::findings::{ScrambleSite, Status, Summary};
use crate::stage_stats;

/// A site as the table shows it.
fn site_text(s: &ScrambleSite) -> String {
    format!("{}:{} {}", s.file, s.line, s.label)
}

/// The seeds of the report, in words.
fn seeds_text(s: &Summary) -> String {
    let n: u64 = s.seed_ranges.iter().map(|r| r.count).sum();
    let shards: std::collections::BTreeSet<(u32, u32)> = s
        .seed_ranges
        .iter()
        .filter(|r| r.shard.1 > 1)
        .map(|r| r.shard)
        .collect();
    let shards: Vec<String> = shards.iter().map(|(k, n)| format!("{k}/{n}")).collect();
    match shards.len() {
        0 => format!("{n} seeds"),
        1 => format!("{n} seeds (shard {})", shards[0]),
        _ => format!("{n} seeds (shards {})", shards.join(",")),
    }
}

impl Summary {
    /// What ran, for the first line of a table: tests, seeds, modes and time, when
    /// `cargo fprev test` ran them (a merge of campaign reports has none of these).
    fn run_details(&self, markdown: bool) -> String {
        if self.seed_ranges.is_empty() && self.modes.is_empty() {
            return String::new();
        }
        let annotated = if markdown {
            format!(", {} functions annotated", self.functions_annotated)
        } else {
            String::new()
        };
        format!(
            " of {} tests, {} x {} mode(s){annotated}, {:.0} s",
            self.tests,
            seeds_text(self),
            self.modes.len(),
            self.wall_s
        )
    }

    /// The console table: one block per finding (a long test name takes its own line),
    /// with its blame, then what is not a finding, then the campaigns' statistics.
    pub fn to_console(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "fprev: {} finding(s){}; {} runs{}",
            self.findings.len(),
            if self.fixed.is_empty() {
                String::new()
            } else {
                format!(", {} fixed", self.fixed.len())
            },
            self.runs,
            self.run_details(false)
        );
        const NAME: usize = 44;
        if !self.findings.is_empty() {
            let _ = writeln!(
                s,
                "{:<NAME$} {:<7} {:<12} {:<13} {:<19} first assertion",
                "test", "kind", "mode", "status", "token"
            );
        }
        for f in &self.findings {
            let name = cell(&f.test, false);
            if name.chars().count() > NAME {
                let _ = writeln!(s, "{name}");
                let _ = write!(s, "{:<NAME$} ", "");
            } else {
                let _ = write!(s, "{name:<NAME$} ");
            }
            let _ = writeln!(
                s,
                "{:<7} {:<12} {:<13} {:<19} {}",
                f.kind,
                cell(&f.mode, false),
                f.status.as_str(),
                cell(&f.token, false),
                cell(f.at.as_deref().unwrap_or("-"), false)
            );
            if let Some(blame) = &f.blame {
                for site in blame {
                    let _ = writeln!(s, "    blame: {}", cell(&site_text(site), false));
                }
            }
            if f.replay.is_none() {
                let _ = writeln!(
                    s,
                    "    not replayable by name: {} is built with harness = false (it runs whole)",
                    cell(&f.target, false)
                );
            }
        }
        if let Some(f) = self.findings.iter().find(|f| f.replay.is_some()) {
            let _ = writeln!(s, "replay one: {}", f.replay.as_deref().unwrap_or(""));
        }
        for f in &self.fixed {
            let _ = writeln!(
                s,
                "fixed: {} ({} {}) passes now",
                cell(&f.test, false),
                cell(&f.mode, false),
                cell(&f.token, false)
            );
        }
        if !self.unscrambled_failures.is_empty() {
            let _ = writeln!(
                s,
                "failing unscrambled (not findings): {}",
                cell(&self.unscrambled_failures.join(", "), false)
            );
        }
        if !self.not_reproduced.is_empty() {
            let _ = writeln!(
                s,
                "failed scrambled, passed alone with the same token (not findings): {}",
                cell(&self.not_reproduced.join(", "), false)
            );
        }
        if let Ok(Some(view)) = self.campaigns() {
            s.push('\n');
            s.push_str(&stage_stats::table(&view, false));
        }
        s
    }

    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# fprev findings\n\n{} finding(s), {} fixed, in {} runs{}.\n",
            self.findings.len(),
            self.fixed.len(),
            self.runs,
            self.run_details(true)
        );
        if !self.findings.is_empty() || !self.fixed.is_empty() {
            s.push_str(
                "| test | kind | mode | status | token | first assertion | blame | replay |\n",
            );
            s.push_str("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
            for f in self.findings.iter().chain(&self.fixed) {
                let blame = f.blame.as_deref().map_or("-".to_string(), |b| {
                    b.iter().map(site_text).collect::<Vec<_>>().join("; ")
                });
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | `{}` | {} | {} | {} |",
                    cell(&f.test, true),
                    f.kind,
                    cell(&f.mode, true),
                    f.status.as_str(),
                    cell(&f.token, true),
                    cell(f.at.as_deref().unwrap_or("-"), true),
                    cell(&blame, true),
                    f.replay.as_deref().map_or_else(
                        || "not replayable by name (harness = false)".to_string(),
                        |r| format!("`{}`", cell(r, true))
                    )
                );
            }
        }
        if !self.unscrambled_failures.is_empty() {
            let _ = writeln!(
                s,
                "\nFailing unscrambled (not findings): {}",
                cell(&self.unscrambled_failures.join(", "), true)
            );
        }
        if !self.not_reproduced.is_empty() {
            let _ = writeln!(
                s,
                "\nFailed scrambled but passed alone with the same token (not findings): {}",
                cell(&self.not_reproduced.join(", "), true)
            );
        }
        if let Ok(Some(view)) = self.campaigns() {
            s.push_str("\n## Campaigns\n\n");
            s.push_str(&stage_stats::table(&view, true));
        }
        s
    }

    /// The report as JUnit XML: a failing test case per finding, a passing one per fixed
    /// finding, and the campaigns' test cases.
    pub fn to_junit(&self) -> String {
        let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
        let _ = writeln!(
            s,
            "  <testsuite name=\"fprev findings\" tests=\"{}\" failures=\"{}\">",
            self.findings.len() + self.fixed.len(),
            self.findings.len()
        );
        for f in self.findings.iter().chain(&self.fixed) {
            let _ = write!(
                s,
                "    <testcase classname=\"{}\" name=\"{} [{} {}]\"",
                xml(
                    if f.package.is_empty() {
                        &f.target
                    } else {
                        &f.package
                    },
                    true
                ),
                xml(&f.test, true),
                xml(&f.mode, true),
                xml(&f.token, true),
            );
            if f.status == Status::Fixed {
                s.push_str("/>\n");
                continue;
            }
            let mut text = f.message.clone();
            if let Some(blame) = &f.blame {
                for site in blame {
                    let _ = write!(text, "\nblame: {}", site_text(site));
                }
            }
            let _ = write!(
                text,
                "\nreplay: {}",
                f.replay
                    .as_deref()
                    .unwrap_or("not replayable by name (harness = false)")
            );
            let _ = writeln!(
                s,
                ">\n      <failure message=\"{} ({})\">{}</failure>\n    </testcase>",
                xml(&f.kind, true),
                f.status.as_str(),
                xml(&text, false)
            );
        }
        s.push_str("  </testsuite>\n");
        if let Ok(Some(view)) = self.campaigns() {
            s.push_str(&stage_stats::junit_suite(&view));
        }
        s.push_str("</testsuites>\n");
        s
    }
}
