//! `cargo fprev merge`: findings reports of shards or nights, and process reports of
//! `assert_reproducible!` campaigns, joined into one findings report.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli_output::{write_stdout, CargoFprevError};
use crate::{findings_merge, limits};

#[derive(clap::Args)]
pub struct MergeArgs {
    /// findings.json files of shards or nights, and FPREV_REPORT files of
    /// `assert_reproducible!` campaigns.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Where the merged findings.json goes.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Print the table as Markdown.
    #[arg(long)]
    pub markdown: bool,
    /// Also write the merged report as JUnit XML.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Largest input file read (bytes, or with K, M, G, T): a larger file, a device or
    /// an endless pipe is an error after this many bytes.
    #[arg(long, value_parser = limits::bytes, default_value = "64M")]
    pub max_input_bytes: u64,
}

/// Joins findings reports (shards, nights) and campaign process reports into one, and
/// prints its table: exit 2 when it holds findings.
pub fn merge(a: &MergeArgs) -> Result<ExitCode, CargoFprevError> {
    let merged = findings_merge::merge_files(
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
