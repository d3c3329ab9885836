//! The flags several `fprev` subcommands share, each defined and parsed once: the float
//! types (`--dtype`, `--acc-dtype`) with the accumulator rule and the wire type they
//! imply, `--algorithm`, the value lists of `--values` / `--sizes`, and the waits of a
//! program (`--timeout`, `--startup-timeout`, `--grace`).

use std::time::Duration;

use crate::collectives;
use crate::console::CommandFailure;
use crate::{exec, limits};

/// `--dtype` and `--acc-dtype`: the float types fprev sends and accumulates in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DtypeArg {
    F32,
    F64,
    F16,
    Bf16,
    /// OCP FP8 E4M3 (operands; accumulated in f32 unless --acc-dtype says otherwise).
    F8e4m3,
    /// OCP FP8 E5M2.
    F8e5m2,
    /// AMD MI300's FP8 E4M3FNUZ (bias 8, largest 240, no negative zero, NaN at 0x80).
    #[value(name = "e4m3fnuz")]
    E4m3fnuz,
    /// AMD MI300's FP8 E5M2FNUZ (bias 16, largest 57344, no infinities or negative zero).
    #[value(name = "e5m2fnuz")]
    E5m2fnuz,
    /// NVIDIA's TF32 (f32's range, 10 fraction bits), sent as 4-byte f32 values; an
    /// operand type, accumulated in f32 unless --acc-dtype says otherwise.
    Tf32,
    /// OCP MX FP4 E2M1 (±{0, 0.5, 1, 1.5, 2, 3, 4, 6}), an operand type: the elements of
    /// --op scaled-dot, or --op dot operands.
    #[value(name = "e2m1")]
    E2m1,
    /// OCP MX FP6 E3M2 (largest 28), an operand type.
    #[value(name = "e3m2")]
    E3m2,
    /// OCP MX FP6 E2M3 (largest 7.5), an operand type.
    #[value(name = "e2m3")]
    E2m3,
}

/// The name of a float type as `--dtype` spells it.
pub fn dtype_name(d: DtypeArg) -> &'static str {
    match d {
        DtypeArg::F32 => "f32",
        DtypeArg::F64 => "f64",
        DtypeArg::F16 => "f16",
        DtypeArg::Bf16 => "bf16",
        DtypeArg::F8e4m3 => "f8e4m3",
        DtypeArg::F8e5m2 => "f8e5m2",
        DtypeArg::E4m3fnuz => "e4m3fnuz",
        DtypeArg::E5m2fnuz => "e5m2fnuz",
        DtypeArg::Tf32 => "tf32",
        DtypeArg::E2m1 => "e2m1",
        DtypeArg::E3m2 => "e3m2",
        DtypeArg::E2m3 => "e2m3",
    }
}

/// The accumulator type of values of `dtype` and an `--acc-dtype` of `acc`: `acc`, or
/// f32 for FP8, FP6, FP4 and TF32 values, or `dtype`; never narrower than the values,
/// never an operand-only type.
pub fn accumulator(dtype: DtypeArg, acc: Option<DtypeArg>) -> Result<DtypeArg, CommandFailure> {
    let operand_only = |d: DtypeArg| {
        matches!(
            d,
            DtypeArg::F8e4m3
                | DtypeArg::F8e5m2
                | DtypeArg::E4m3fnuz
                | DtypeArg::E5m2fnuz
                | DtypeArg::Tf32
                | DtypeArg::E2m1
                | DtypeArg::E3m2
                | DtypeArg::E2m3
        )
    };
    let acc = acc.unwrap_or(if operand_only(dtype) {
        DtypeArg::F32
    } else {
        dtype
    });
    if operand_only(acc) {
        return Err(CommandFailure::Message(format!(
            "--acc-dtype {}: FP8, FP6, FP4 and TF32 are operand types; accumulate in f16, \
             bf16, f32 or f64",
            dtype_name(acc)
        )));
    }
    let bits = |d: DtypeArg| match d {
        DtypeArg::F64 => 53,
        DtypeArg::F32 => 24,
        DtypeArg::F16 | DtypeArg::Tf32 => 11,
        DtypeArg::Bf16 => 8,
        DtypeArg::F8e4m3 | DtypeArg::E4m3fnuz => 4,
        DtypeArg::F8e5m2 | DtypeArg::E5m2fnuz | DtypeArg::E3m2 => 3,
        DtypeArg::E2m1 => 2,
        DtypeArg::E2m3 => 4,
    };
    let range = |d: DtypeArg| match d {
        DtypeArg::F64 => 1023,
        DtypeArg::F32 | DtypeArg::Bf16 | DtypeArg::Tf32 => 127,
        DtypeArg::F16 | DtypeArg::F8e5m2 | DtypeArg::E5m2fnuz => 15,
        DtypeArg::F8e4m3 | DtypeArg::E4m3fnuz => 8,
        DtypeArg::E3m2 => 4,
        DtypeArg::E2m1 | DtypeArg::E2m3 => 2,
    };
    if bits(acc) < bits(dtype) || range(acc) < range(dtype) {
        return Err(CommandFailure::Message(format!(
            "--acc-dtype {} cannot hold every --dtype {} value exactly",
            dtype_name(acc),
            dtype_name(dtype)
        )));
    }
    Ok(acc)
}

/// The wire type of `--dtype`.
pub fn wire_of(d: DtypeArg) -> exec::Wire {
    match d {
        DtypeArg::F32 => exec::Wire::of::<f32>(),
        DtypeArg::F64 => exec::Wire::of::<f64>(),
        DtypeArg::F16 => exec::Wire::of::<fprev::half::f16>(),
        DtypeArg::Bf16 => exec::Wire::of::<fprev::half::bf16>(),
        DtypeArg::F8e4m3 => exec::Wire::of::<fprev::float::F8E4M3>(),
        DtypeArg::F8e5m2 => exec::Wire::of::<fprev::float::F8E5M2>(),
        DtypeArg::E4m3fnuz => exec::Wire::of::<fprev::float::F8E4M3Fnuz>(),
        DtypeArg::E5m2fnuz => exec::Wire::of::<fprev::float::F8E5M2Fnuz>(),
        DtypeArg::Tf32 => exec::Wire::of::<fprev::float::Tf32>(),
        DtypeArg::E2m1 => exec::Wire::of::<fprev::float::F4E2M1>(),
        DtypeArg::E3m2 => exec::Wire::of::<fprev::float::F6E3M2>(),
        DtypeArg::E2m3 => exec::Wire::of::<fprev::float::F6E2M3>(),
    }
}

/// Bytes of one value in the accumulator type `acc` (f16 and bf16: 2), for the memory
/// checks made before anything is allocated.
pub fn acc_bytes(acc: DtypeArg) -> usize {
    match acc {
        DtypeArg::F64 => 8,
        DtypeArg::F32 => 4,
        _ => 2,
    }
}

/// `--algorithm`: how fprev builds the tree, or, for `mpi-allreduce` and `mpi-reduce`,
/// which Open MPI algorithm the collective runs (fprev's own is then FPRev).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlgorithmArg {
    Fprev,
    Basic,
    /// An Open MPI tuned algorithm, by name ([`collectives::CollectiveKind::algorithms`]).
    Collective(&'static str),
}

/// Parse `--algorithm`: `fprev`, `basic`, or an MPI collective algorithm's name (which
/// one is valid depends on the target, checked once it is known).
pub fn parse_algorithm(text: &str) -> Result<AlgorithmArg, String> {
    match text {
        "fprev" => Ok(AlgorithmArg::Fprev),
        "basic" => Ok(AlgorithmArg::Basic),
        other => collectives::known_name(other)
            .map(AlgorithmArg::Collective)
            .ok_or_else(|| {
                format!(
                    "expected fprev or basic (or, for mpi-allreduce and mpi-reduce, an Open \
                     MPI algorithm: {})",
                    collectives::CollectiveKind::Allreduce
                        .algorithms()
                        .iter()
                        .chain(collectives::CollectiveKind::Reduce.algorithms())
                        .map(|&(n, _)| n)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }),
    }
}

/// The most values one sweep takes: each starts a program and reveals a tree.
const MAX_VALUES: usize = 4096;

/// `1..64`, `1,2,4,8`, `1..4,8,16`: strictly increasing, at most [`MAX_VALUES`].
pub fn parse_values(text: &str) -> Result<Vec<usize>, String> {
    let mut values: Vec<usize> = Vec::new();
    let number = |s: &str| {
        s.trim()
            .parse::<usize>()
            .map_err(|_| format!("{:?} is not a whole number", s.trim()))
    };
    for item in text.split(',') {
        let (first, last) = match item.split_once("..") {
            Some((a, b)) => (number(a)?, number(b.trim_start_matches('='))?),
            None => {
                let v = number(item)?;
                (v, v)
            }
        };
        if last < first {
            return Err(format!("{first}..{last} is empty (ranges go upwards)"));
        }
        if last - first >= MAX_VALUES || values.len() + (last - first) >= MAX_VALUES {
            return Err(format!(
                "more than {MAX_VALUES} values; sweep fewer (every value starts a program)"
            ));
        }
        for v in first..=last {
            if let Some(&before) = values.last() {
                if v <= before {
                    return Err(format!("values must increase, but {v} follows {before}"));
                }
            }
            values.push(v);
        }
    }
    Ok(values)
}

/// The waits of a program's answers (`--timeout`, `--startup-timeout`) and of its exit
/// (`--grace`), each checked: what every command that starts programs passes to them.
pub struct ProgramWaits {
    /// Each answer.
    pub answer: Duration,
    /// The first answer, which includes the program's start-up.
    pub startup: Duration,
    /// The exit after the input is closed, before the process group is terminated.
    pub grace: Duration,
}

impl ProgramWaits {
    /// The waits the flags give, in seconds; the start-up wait defaults to `timeout`.
    pub fn checked(
        timeout: f64,
        startup_timeout: Option<f64>,
        grace: f64,
    ) -> Result<ProgramWaits, CommandFailure> {
        let answer =
            limits::seconds("--timeout", timeout, false).map_err(CommandFailure::Message)?;
        let grace = limits::seconds("--grace", grace, true).map_err(CommandFailure::Message)?;
        let startup = match startup_timeout {
            Some(s) => {
                limits::seconds("--startup-timeout", s, false).map_err(CommandFailure::Message)?
            }
            None => answer,
        };
        Ok(ProgramWaits {
            answer,
            startup,
            grace,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_values;

    #[test]
    fn values_are_ranges_and_lists() {
        assert_eq!(parse_values("1..4").unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(parse_values("1..=3").unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_values("1,2,4, 8").unwrap(), vec![1, 2, 4, 8]);
        assert_eq!(parse_values("1..3,8,16").unwrap(), vec![1, 2, 3, 8, 16]);
        assert_eq!(parse_values("5").unwrap(), vec![5]);
        for (bad, says) in [
            ("", "not a whole number"),
            ("1,,2", "not a whole number"),
            ("a..3", "\"a\" is not a whole number"),
            ("4..1", "is empty"),
            ("1,3,2", "2 follows 3"),
            ("1..3,3", "3 follows 3"),
            ("0..100000", "more than 4096 values"),
            ("0..18446744073709551615", "more than 4096 values"),
            ("-1", "not a whole number"),
        ] {
            let e = parse_values(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
