//! `fprev campaign merge`: the merge of `cargo fprev merge` under its older name. Joins
//! `FPREV_REPORT` files (process reports of `assert_reproducible!` campaigns, one per
//! line) and findings reports into one findings report (`docs/findings.schema.json`).

use std::path::PathBuf;

use crate::console::{write_out, CommandFailure};
use crate::findings_merge;

#[derive(clap::Subcommand)]
pub(crate) enum CampaignCmd {
    /// Join shard reports (FPREV_REPORT files, findings.json) into one findings report
    /// and print its table: the same merge as `cargo fprev merge`.
    Merge {
        /// Report files (FPREV_REPORT's JSON Lines, or findings.json).
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// Write the merged report (JSON, schema fprev-findings) to this file.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Print the table as Markdown.
        #[arg(long)]
        markdown: bool,
        /// Also write the merged report as JUnit XML, for CI dashboards.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Largest input file read (bytes, or with K, M, G, T): a larger file, a device
        /// or an endless pipe is an error after this many bytes.
        #[arg(long, value_parser = crate::limits::bytes, default_value = "64M")]
        max_input_bytes: u64,
    },
}

/// Runs `fprev campaign merge`: the reports merged, written, and their table printed.
pub(crate) fn run(cmd: &CampaignCmd) -> Result<(), CommandFailure> {
    let CampaignCmd::Merge {
        reports,
        output,
        markdown,
        junit,
        max_input_bytes,
    } = cmd;
    let merged = findings_merge::merge_files(
        reports,
        output.as_deref(),
        junit.as_deref(),
        *max_input_bytes,
    )
    .map_err(CommandFailure::Message)?;
    write_out(&if *markdown {
        merged.to_markdown()
    } else {
        merged.to_console()
    })
}
