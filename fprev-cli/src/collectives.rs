//! `fprev reveal mpi-allreduce` and `mpi-reduce`: the order in which an MPI library adds
//! the ranks' values, revealed by launching the ranks under `mpirun` and driving rank 0
//! through the `--exec` text protocol.
//!
//! The ranks are this same binary's hidden `mpi-rank` subcommand (`rank`, built with
//! the `mpi` feature): rank 0 reads one probe per line (one value per rank), every rank
//! contributes its value to the real collective, and rank 0 answers with the probed
//! element of the result. `--algorithm` pins Open MPI's tuned component to one algorithm
//! through its documented MCA parameters (`coll_tuned_use_dynamic_rules`,
//! `coll_tuned_allreduce_algorithm`, `coll_tuned_reduce_algorithm`).

pub mod elements;
#[cfg(feature = "mpi")]
pub mod rank;
pub mod sweep_table;

use std::path::{Path, PathBuf};

/// The collectives `fprev reveal` knows, by target name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectiveKind {
    /// `mpi-allreduce`: `MPI_Allreduce(MPI_SUM)`, rank 0's result.
    Allreduce,
    /// `mpi-reduce`: `MPI_Reduce(MPI_SUM)` to rank 0.
    Reduce,
}

impl CollectiveKind {
    /// The collective a target name runs, if it names one.
    pub fn of_target(name: &str) -> Option<CollectiveKind> {
        match name {
            "mpi-allreduce" => Some(CollectiveKind::Allreduce),
            "mpi-reduce" => Some(CollectiveKind::Reduce),
            _ => None,
        }
    }

    /// The word `mpi-rank --collective` takes.
    pub fn word(self) -> &'static str {
        match self {
            CollectiveKind::Allreduce => "allreduce",
            CollectiveKind::Reduce => "reduce",
        }
    }

    /// Open MPI's tuned algorithms for this collective: the name `--algorithm` takes
    /// and the value of the MCA parameter (`ompi_info --param coll tuned --level 9`).
    pub fn algorithms(self) -> &'static [(&'static str, u32)] {
        match self {
            CollectiveKind::Allreduce => ALLREDUCE,
            CollectiveKind::Reduce => REDUCE,
        }
    }

    /// The MCA parameter that selects this collective's algorithm.
    fn mca_parameter(self) -> &'static str {
        match self {
            CollectiveKind::Allreduce => "coll_tuned_allreduce_algorithm",
            CollectiveKind::Reduce => "coll_tuned_reduce_algorithm",
        }
    }
}

/// `coll_tuned_allreduce_algorithm` in Open MPI 4.1 (0 is its own decision rules).
const ALLREDUCE: &[(&str, u32)] = &[
    ("default", 0),
    ("basic-linear", 1),
    ("nonoverlapping", 2),
    ("recursive-doubling", 3),
    ("ring", 4),
    ("segmented-ring", 5),
    ("rabenseifner", 6),
];

/// `coll_tuned_reduce_algorithm` in Open MPI 4.1.
const REDUCE: &[(&str, u32)] = &[
    ("default", 0),
    ("linear", 1),
    ("chain", 2),
    ("pipeline", 3),
    ("binary", 4),
    ("binomial", 5),
    ("in-order-binary", 6),
    ("rabenseifner", 7),
];

/// Every collective algorithm name, for parsing `--algorithm` before the target is known
/// (`all`: every algorithm of the collective, one after the other).
pub fn known_name(name: &str) -> Option<&'static str> {
    ALLREDUCE
        .iter()
        .chain(REDUCE)
        .map(|&(n, _)| n)
        .chain(["all"])
        .find(|&n| n == name)
}

/// `--element`: one element's order, or (`all`) every element's, grouped by order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementChoice {
    /// The element numbered so.
    One(usize),
    /// Every element of the message.
    All,
}

/// Parse `--element`: a number or `all`.
pub fn parse_element(text: &str) -> Result<ElementChoice, String> {
    if text == "all" {
        return Ok(ElementChoice::All);
    }
    text.parse()
        .map(ElementChoice::One)
        .map_err(|_| format!("{text:?}: an element number (from 0) or all"))
}

/// Bytes a value of a probe costs fprev: its shortest decimal in the probe line (up to 25
/// characters and a space) and the `f64` it is read from.
const PROBE_BYTES_PER_VALUE: u64 = 34;

/// What to launch: the collective, its ranks and message, and the rank program's options.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The collective.
    pub kind: CollectiveKind,
    /// Ranks (`--ranks`): the leaves of the tree.
    pub ranks: usize,
    /// The algorithm's name (`--algorithm`), `default` for the library's own choice.
    pub algorithm: &'static str,
    /// Elements per rank (`--count`).
    pub count: usize,
    /// The probed element (`--element`; 0 with `--element all`).
    pub element: usize,
    /// `--element all`: every element at once ([`elements`]).
    pub all_elements: bool,
    /// `f64` or `f32`.
    pub dtype: &'static str,
    /// Seed of the other elements.
    pub seed: u64,
    /// A failure for rank `ranks - 1` to stage (`die` or `hang`), for the tests of what
    /// fprev does when a rank fails.
    pub fault: Option<String>,
}

/// The most ranks one machine is asked to oversubscribe: past it the ranks' start-up
/// alone takes minutes and every probe waits on that many context switches.
pub fn max_ranks() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    (32 * cores).clamp(64, 1024)
}

impl Launch {
    /// Refuse what cannot run, before anything is started.
    pub fn check(&self) -> Result<(), String> {
        let limit = max_ranks();
        if self.ranks == 0 {
            return Err("--ranks 0: a collective needs at least one rank".into());
        }
        if self.ranks > limit {
            return Err(format!(
                "--ranks {}: more ranks than this machine can oversubscribe ({limit} at most \
                 here, 32 per core); run on a cluster with --exec and your own mpirun",
                self.ranks
            ));
        }
        if self.count == 0 {
            return Err("--count 0: the message has no element".into());
        }
        if i32::try_from(self.count).is_err() {
            return Err(format!(
                "--count {}: more elements than one MPI call can count (at most {})",
                self.count,
                i32::MAX
            ));
        }
        if self.element >= self.count {
            return Err(format!(
                "--element {} is not in a message of {} elements (--count): elements are \
                 numbered from 0",
                self.element, self.count
            ));
        }
        if !self
            .kind
            .algorithms()
            .iter()
            .any(|&(n, _)| n == self.algorithm)
        {
            let names: Vec<&str> = self.kind.algorithms().iter().map(|&(n, _)| n).collect();
            return Err(format!(
                "--algorithm {} is not an Open MPI {} algorithm; use one of: {}",
                self.algorithm,
                self.kind.word(),
                names.join(", ")
            ));
        }
        Ok(())
    }

    /// Refuse a message whose probes would need more than `budget` bytes: each probe
    /// line carries every rank's whole message, as text ([`PROBE_BYTES_PER_VALUE`] a
    /// value, counted with the values fprev keeps of it).
    pub fn check_memory(&self, budget: u64) -> Result<(), String> {
        let values = (self.count as u64).checked_mul(self.ranks as u64);
        match values.and_then(|v| v.checked_mul(PROBE_BYTES_PER_VALUE)) {
            Some(bytes) if bytes <= budget => Ok(()),
            bytes => Err(format!(
                "--count {} with --ranks {}: a probe carries {} values, about {} of memory,                  over the memory budget of {budget} bytes (raise it with --max-memory)",
                self.count,
                self.ranks,
                values.map_or("more than 2^64".to_string(), |v| v.to_string()),
                bytes.map_or("more than 2^64 bytes".to_string(), |b| format!("{b} bytes"))
            )),
        }
    }

    /// The `mpirun` command line that starts the ranks (`fprev` is this binary).
    pub fn command(&self, mpirun: &Path, fprev: &Path, as_root: bool) -> String {
        let mut words: Vec<String> = vec![quote(&mpirun.display().to_string())];
        if as_root {
            words.push("--allow-run-as-root".into());
        }
        // one machine, however many cores: every rank on it, shared-memory transport
        words.extend(["--oversubscribe", "--bind-to", "none", "-np"].map(String::from));
        words.push(self.ranks.to_string());
        let value = self
            .kind
            .algorithms()
            .iter()
            .find(|&&(n, _)| n == self.algorithm)
            .map_or(0, |&(_, v)| v);
        if value != 0 {
            for (k, v) in [
                ("coll_tuned_use_dynamic_rules", "1".to_string()),
                (self.kind.mca_parameter(), value.to_string()),
            ] {
                words.extend(["--mca".to_string(), k.to_string(), v]);
            }
        }
        words.push(quote(&fprev.display().to_string()));
        words.extend(
            [
                "mpi-rank",
                "--collective",
                self.kind.word(),
                "--count",
                &self.count.to_string(),
                "--element",
                &self.element.to_string(),
                "--dtype",
                self.dtype,
                "--seed",
                &self.seed.to_string(),
            ]
            .map(String::from),
        );
        if self.all_elements {
            words.push("--all-elements".into());
        }
        if let Some(f) = &self.fault {
            words.extend(["--fault".to_string(), quote(f)]);
        }
        words.join(" ")
    }

    /// A title for pictures and messages.
    pub fn describe(&self) -> String {
        let element = if self.all_elements {
            "every element".to_string()
        } else {
            format!("element {}", self.element)
        };
        format!(
            "MPI_{} ({}), {} ranks, {} x {}, {element}",
            match self.kind {
                CollectiveKind::Allreduce => "Allreduce",
                CollectiveKind::Reduce => "Reduce",
            },
            self.algorithm,
            self.ranks,
            self.count,
            self.dtype,
        )
    }
}

/// `text` as one word for `sh -c`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `mpirun` on `PATH`, checked to be Open MPI's (the MCA parameters and
/// `--oversubscribe` are its own).
pub fn find_mpirun() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let Some(mpirun) = std::env::split_paths(&path)
        .map(|dir| dir.join("mpirun"))
        .find(|p| p.is_file())
    else {
        return Err(
            "no mpirun on PATH: install Open MPI (Debian, Ubuntu: apt-get install openmpi-bin \
             libopenmpi-dev) or put its bin directory on PATH"
                .into(),
        );
    };
    let version = std::process::Command::new(&mpirun)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", mpirun.display()))?;
    let text = String::from_utf8_lossy(&version.stdout);
    if !text.contains("Open MPI") {
        let first = text.lines().next().unwrap_or("no version line");
        return Err(format!(
            "{} is not Open MPI's mpirun ({first:?}): fprev launches ranks with Open MPI's \
             options; with another MPI, write a responder and use --exec",
            mpirun.display()
        ));
    }
    Ok(mpirun)
}

/// Whether this process runs as root, where Open MPI's mpirun needs
/// `--allow-run-as-root`.
pub fn as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> Launch {
        Launch {
            kind: CollectiveKind::Allreduce,
            ranks: 8,
            algorithm: "ring",
            count: 64,
            element: 0,
            all_elements: false,
            dtype: "f64",
            seed: 3,
            fault: None,
        }
    }

    #[test]
    fn the_algorithm_becomes_open_mpi_mca_parameters() {
        let cmd = launch().command(Path::new("/usr/bin/mpirun"), Path::new("/x/fprev"), true);
        assert!(cmd.starts_with("'/usr/bin/mpirun' --allow-run-as-root --oversubscribe"));
        assert!(
            cmd.contains("--mca coll_tuned_use_dynamic_rules 1"),
            "{cmd}"
        );
        assert!(
            cmd.contains("--mca coll_tuned_allreduce_algorithm 4"),
            "{cmd}"
        );
        assert!(cmd.contains("-np 8 "), "{cmd}");
        let default = Launch {
            algorithm: "default",
            ..launch()
        };
        let cmd = default.command(Path::new("mpirun"), Path::new("fprev"), false);
        assert!(!cmd.contains("--mca") && !cmd.contains("root"), "{cmd}");
    }

    #[test]
    fn bad_launches_are_refused_naming_the_flag() {
        let cases = [
            (
                Launch {
                    ranks: 0,
                    ..launch()
                },
                "--ranks 0",
            ),
            (
                Launch {
                    ranks: 100_000,
                    ..launch()
                },
                "oversubscribe",
            ),
            (
                Launch {
                    count: 0,
                    ..launch()
                },
                "--count 0",
            ),
            (
                Launch {
                    element: 64,
                    ..launch()
                },
                "--element 64",
            ),
            (
                Launch {
                    algorithm: "chain",
                    ..launch()
                },
                "recursive-doubling",
            ),
            (
                Launch {
                    kind: CollectiveKind::Reduce,
                    algorithm: "ring",
                    ..launch()
                },
                "binomial",
            ),
        ];
        for (l, needle) in cases {
            let e = l.check().expect_err(needle);
            assert!(e.contains(needle), "{e}");
        }
        assert_eq!(launch().check(), Ok(()));
        // the largest count MPI takes, on 8 ranks: refused by the budget, named
        let huge = Launch {
            count: i32::MAX as usize,
            ranks: 8,
            ..launch()
        };
        assert_eq!(huge.check(), Ok(()));
        let e = huge.check_memory(8 << 30).expect_err("over 8 GiB");
        assert!(
            e.contains("--count 2147483647 with --ranks 8: a probe carries 17179869176 values"),
            "{e}"
        );
        assert!(e.contains("(raise it with --max-memory)"), "{e}");
        assert_eq!(launch().check_memory(8 << 30), Ok(()));
    }

    #[test]
    fn every_algorithm_name_is_known_to_the_parser() {
        for kind in [CollectiveKind::Allreduce, CollectiveKind::Reduce] {
            for &(name, _) in kind.algorithms() {
                assert_eq!(known_name(name), Some(name));
            }
        }
        assert_eq!(known_name("all"), Some("all"));
        assert_eq!(known_name("fprev"), None);
    }
}
