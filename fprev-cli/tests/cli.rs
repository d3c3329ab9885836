//! The `fprev` binary, run as users run it.

use std::path::PathBuf;
use std::process::{Command, Output};

use fprev::SumTree;

mod common;
use common::{fprev, stderr, stdout};

fn tmp(name: &str) -> PathBuf {
    common::scratch("cli", name)
}

#[test]
fn targets_lists_every_builtin() {
    let o = fprev(&["targets"]);
    assert!(o.status.success());
    for name in [
        "iter-sum",
        "ndarray-sum",
        "matrixmultiply-gemm",
        "nalgebra-matmul",
        "rayon-sum",
    ] {
        assert!(stdout(&o).contains(name), "{name} missing");
    }
}

#[test]
fn text_format_prints_only_the_tree() {
    let o = fprev(&["reveal", "iter-sum", "--n", "8"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "(((((((0+1)+2)+3)+4)+5)+6)+7)\n");
    let o = fprev(&["reveal", "unrolled4", "--n", "8", "--dtype", "f16"]);
    assert_eq!(stdout(&o), "(((0+4)+(1+5))+((2+6)+(3+7)))\n");
}

#[test]
fn other_formats() {
    let o = fprev(&["reveal", "ndarray-sum", "--n", "64", "--format", "svg"]);
    let svg = stdout(&o);
    assert!(
        svg.starts_with("<svg") && svg.contains("ndarray-sum"),
        "{}",
        stderr(&o)
    );
    let o = fprev(&["reveal", "iter-sum", "--n", "4", "--format", "json"]);
    let t = SumTree::from_json(stdout(&o).trim()).expect("json tree");
    assert_eq!(t, SumTree::sequential(4));
    let o = fprev(&[
        "reveal",
        "iter-sum",
        "--n",
        "4",
        "--format",
        "dot",
        "--algorithm",
        "basic",
    ]);
    assert!(stdout(&o).contains("digraph"));
}

#[test]
fn matrix_targets_report_every_element() {
    let o = fprev(&[
        "reveal",
        "matrixmultiply-gemm",
        "--n",
        "300",
        "--rows",
        "5",
        "--cols",
        "7",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("all 5 x 7 elements share one order"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let o = fprev(&["reveal", "no-such-target", "--n", "8"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("fprev targets"));
    let o = fprev(&["reveal", "iter-sum", "--n", "8", "--dtype", "f16"]);
    assert!(stderr(&o).contains("supports --dtype f32, f64"));
    let o = fprev(&["reveal", "iter-sum", "--n", "0"]);
    assert_eq!(o.status.code(), Some(2));
}

/// numpy.sum on float32, n = 32, as the FPRev paper publishes it: eight lanes, lane k
/// summing a[k], a[k+8], a[k+16], a[k+24] in order, the lanes combined pairwise.
#[test]
#[ignore = "needs python3 with numpy (see README)"]
fn numpy_sum_float32_order() {
    let lane = |k: usize| format!("((({k}+{})+{})+{})", k + 8, k + 16, k + 24);
    let pair = |a: String, b: String| format!("({a}+{b})");
    let l: Vec<String> = (0..8).map(lane).collect();
    let expected = pair(
        pair(
            pair(l[0].clone(), l[1].clone()),
            pair(l[2].clone(), l[3].clone()),
        ),
        pair(
            pair(l[4].clone(), l[5].clone()),
            pair(l[6].clone(), l[7].clone()),
        ),
    );
    let expected: SumTree = expected.parse().expect("expected tree");
    let o = fprev(&[
        "reveal",
        "--exec",
        "python3 tests/python/numpy_sum.py float32",
        "--n",
        "32",
        "--dtype",
        "f32",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got: SumTree = stdout(&o)
        .trim()
        .parse()
        .expect("stdout is one canonical tree");
    assert_eq!(got, expected);
}

#[test]
#[ignore = "needs python3 (see README)"]
fn exec_text_and_binary_protocols() {
    let o = fprev(&[
        "reveal",
        "--exec",
        "python3 tests/python/sum_lines.py",
        "--n",
        "20",
        "--dtype",
        "f64",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim().parse::<SumTree>().ok(),
        Some(SumTree::sequential(20))
    );
    let o = fprev(&[
        "reveal",
        "--exec",
        "python3 tests/python/binary_sum.py 20",
        "--n",
        "20",
        "--protocol",
        "binary",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim().parse::<SumTree>().ok(),
        Some(SumTree::sequential(20))
    );
}

#[test]
#[ignore = "needs python3 (see README)"]
fn exec_delta_protocols() {
    // lines: the vector once, then `P i a j b` per probe, answered by a Python loop
    let o = fprev(&[
        "reveal",
        "--exec",
        "python3 tests/python/delta_sum.py",
        "--n",
        "40",
        "--dtype",
        "f64",
        "--protocol",
        "delta",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim().parse::<SumTree>().ok(),
        Some(SumTree::sequential(40))
    );
    let o = fprev(&[
        "reveal",
        "--exec",
        "python3 tests/python/delta_binary_sum.py 33",
        "--n",
        "33",
        "--protocol",
        "delta-binary",
        "--no-guess",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim().parse::<SumTree>().ok(),
        Some(SumTree::sequential(33))
    );
}

/// What `fprev --protocol delta` writes: the vector once, then two positions per probe.
#[test]
#[ignore = "needs python3 (see README)"]
fn exec_delta_sends_the_vector_once_per_batch() {
    let log = tmp("delta.log");
    // `tee` keeps what fprev sent; the responder sums the vector it keeps
    let responder = format!("tee {} | python3 tests/python/delta_sum.py", log.display());
    let o = fprev(&[
        "reveal",
        "--exec",
        &responder,
        "--n",
        "24",
        "--dtype",
        "f64",
        "--protocol",
        "delta",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim().parse::<SumTree>().ok(),
        Some(SumTree::sequential(24))
    );
    let sent = std::fs::read_to_string(&log).expect("the responder's input");
    let lines: Vec<&str> = sent.lines().collect();
    let vectors = lines.iter().filter(|l| l.starts_with("B ")).count();
    let probes: Vec<&&str> = lines.iter().filter(|l| l.starts_with("P ")).collect();
    assert!(
        vectors >= 1 && vectors < probes.len(),
        "{vectors} vectors, {} probes",
        probes.len()
    );
    assert!(
        lines[0].starts_with("B ") && lines[0].split(' ').count() == 25,
        "{}",
        lines[0]
    );
    for p in &probes {
        let f: Vec<&str> = p.split(' ').collect();
        assert_eq!(f.len(), 5, "{p}");
        let (a, b): (f64, f64) = (f[2].parse().unwrap(), f[4].parse().unwrap());
        assert_eq!(a, -b, "{p}");
    }
}

#[test]
#[ignore = "needs python3 (see README)"]
fn exec_hint_and_no_guess() {
    let cmd = "python3 tests/python/sum_lines.py";
    // `fprev reveal` of the f64 sum of 20 lines, with extra flags.
    let reveal = |extra: &[&str]| {
        let mut args = vec!["reveal", "--exec", cmd, "--n", "20", "--dtype", "f64"];
        args.extend_from_slice(extra);
        fprev(&args)
    };
    // A known order is recognized and proved by default.
    let o = reveal(&[]);
    assert!(
        stderr(&o).contains("recognized the sequential order"),
        "{}",
        stderr(&o)
    );
    // --no-guess searches; a hint (text, or a file holding text or JSON) is proved first.
    let o = reveal(&["--no-guess"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("recognized"), "{}", stderr(&o));
    let file = tmp("hint.json");
    std::fs::write(&file, SumTree::sequential(20).to_json()).unwrap();
    for hint in [
        SumTree::sequential(20).to_string(),
        file.display().to_string(),
    ] {
        let o = reveal(&["--no-guess", "--hint", &hint]);
        assert!(
            stderr(&o).contains("recognized the hint order"),
            "{}",
            stderr(&o)
        );
        assert_eq!(
            stdout(&o).trim().parse::<SumTree>().ok(),
            Some(SumTree::sequential(20))
        );
    }
    // A hint of the wrong size is a clear error.
    let o = fprev(&["reveal", "--exec", cmd, "--n", "20", "--hint", "((0+1)+2)"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("a hint has 3 leaves"), "{}", stderr(&o));
}

#[test]
#[ignore = "needs python3 (see README)"]
fn exec_failures_name_the_probe() {
    // Python may take seconds to start on a loaded machine: only the stall waits briefly.
    for (mode, says, timeout) in [
        ("exit", "exited", "30"),
        ("garbage", "not one number", "30"),
        ("stall", "no answer", "3"),
    ] {
        let cmd = format!("python3 tests/python/misbehave.py {mode} 3");
        let o = fprev(&["reveal", "--exec", &cmd, "--n", "12", "--timeout", timeout]);
        assert_eq!(o.status.code(), Some(2), "{mode}");
        let e = stderr(&o);
        assert!(
            e.contains("on probe (+M at") && e.contains(says),
            "{mode}: {e}"
        );
        assert!(stdout(&o).is_empty());
    }
}

/// A responder that needs seconds to start (imports, device initialisation) gets the
/// start-up allowance for its first answer, and the per-answer timeout after; a start
/// beyond the allowance names the flag that raises it.
#[test]
#[ignore = "needs python3 (see README)"]
fn a_slow_start_has_its_own_allowance() {
    let cmd = "python3 tests/python/misbehave.py slowstart 6";
    let o = fprev(&[
        "reveal",
        "--exec",
        cmd,
        "--n",
        "8",
        "--dtype",
        "f64",
        "--timeout",
        "3",
        "--startup-timeout",
        "60",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), SumTree::sequential(8).to_string());
    let o = fprev(&[
        "reveal",
        "--exec",
        cmd,
        "--n",
        "8",
        "--dtype",
        "f64",
        "--timeout",
        "3",
        "--startup-timeout",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("its first: start-up included") && e.contains("raise --startup-timeout"),
        "{e}"
    );
}

#[test]
fn exec_of_a_program_that_exits_names_it() {
    let o = fprev(&["reveal", "--exec", "true", "--n", "8"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("exited"), "{}", stderr(&o));
}

#[test]
fn diff_reports_the_smallest_differing_subtree() {
    let (a, b) = (tmp("a.txt"), tmp("b.json"));
    std::fs::write(&a, "((((0+1)+2)+3)+(4+5))\n").expect("write");
    let other: SumTree = "(((0+(1+2))+3)+(4+5))".parse().expect("tree");
    std::fs::write(&b, other.to_json()).expect("write");
    let o = fprev(&[
        "diff",
        a.to_str().unwrap_or_default(),
        b.to_str().unwrap_or_default(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("{0,1,2}"), "{}", stdout(&o));
    assert!(stdout(&o).contains("((0+1)+2)") && stdout(&o).contains("(0+(1+2))"));
    let o = fprev(&[
        "diff",
        a.to_str().unwrap_or_default(),
        a.to_str().unwrap_or_default(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let o = fprev(&["diff", a.to_str().unwrap_or_default(), "/nonexistent/tree"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn demo_prints_trees_and_writes_pictures() {
    let out = tmp("demo");
    let o = fprev(&["demo", "--out", out.to_str().unwrap_or_default()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("== 1.") && text.contains("all elements share one order"),
        "{text}"
    );
    assert!(out.join("ndarray_sum_32.svg").exists() && out.join("sgemm_k600.svg").exists());
}

#[test]
fn huge_work_is_refused_before_probing_unless_yes() {
    let o = fprev(&["reveal", "iter-sum", "-n", "10000000"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("refusing to start") && e.contains("--yes") && e.contains("days"),
        "{e}"
    );
    let o = fprev(&["reveal", "-n", "10000000", "--exec", "true"]);
    assert!(stderr(&o).contains("refusing to start"), "{}", stderr(&o));
}

#[test]
fn options_a_target_ignores_draw_a_warning() {
    let o = fprev(&[
        "reveal",
        "iter-sum",
        "-n",
        "8",
        "--threads",
        "2",
        "--accept-flat",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "(((((((0+1)+2)+3)+4)+5)+6)+7)\n");
    let e = stderr(&o);
    assert!(
        e.contains("warning: --threads does not apply to iter-sum"),
        "{e}"
    );
    let o = fprev(&["reveal", "rayon-sum", "-n", "8", "--threads", "2"]);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

/// Every replay line of the demo's amplifier section runs as printed and prints the same
/// value (f64 `Debug` text, which round-trips, so the same bits) for its run.
#[test]
fn demo_replay_lines_run_as_printed_and_reproduce_the_bits() {
    let out = tmp("demo-replay");
    let o = fprev(&[
        "demo",
        "--only",
        "scramble",
        "--out",
        out.to_str().unwrap_or_default(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(command) = line.trim().strip_prefix("replay: ") else {
            continue;
        };
        let value = lines[i - 1]
            .split(" = ")
            .nth(1)
            .and_then(|v| v.split_whitespace().next())
            .expect("the line above a replay line names the value");
        let again = Command::new("sh")
            .args(["-c", command])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("run the replay command");
        let replayed = stdout(&again);
        assert!(again.status.success(), "{command}: {}", stderr(&again));
        assert!(
            replayed.contains("replayed the single run")
                && replayed.contains(&format!("element 0 = {value} ")),
            "{command} should print {value}:\n{replayed}"
        );
        checked += 1;
        if checked == 2 {
            break;
        }
    }
    assert_eq!(checked, 2, "the demo printed no replay lines:\n{text}");
}

#[test]
fn demo_honours_fprev_seed() {
    let o = Command::new(env!("CARGO_BIN_EXE_fprev"))
        .args(["demo", "--only", "scramble", "--out"])
        .arg(tmp("demo-seed"))
        .env("FPREV_SEED", "v3-00000000000000ff")
        .output()
        .expect("run fprev");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("campaign v3-00000000000000ff"),
        "{}",
        stdout(&o)
    );
    let o = fprev(&["demo", "--only", "no-such-section"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("scramble"), "{}", stderr(&o));
}

// ---- Hostile input (issue 19): every case a typed error or the right result, in bounded
// memory, and no process left behind.

/// `fprev args...` under `ulimit -v` of `kib` KiB (address space: a 16 GB allocation fails
/// and aborts there, where it would only overcommit without the limit).
fn fprev_limited(kib: u64, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_fprev"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run fprev under ulimit")
}

/// 1 GiB of address space: fprev's threads and binary fit; none of the sizes below would.
const LIMIT_KIB: u64 = 1 << 20;

/// A text-protocol peer in sh and awk: sums each line left to right in f64 (one awk per
/// line, since mawk reads ahead of what it has answered).
const AWK_SUM: &str = "while read -r l; do echo \"$l\" | \
    awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf \"%.17g\\n\", s }'; done";

fn refused(o: &Output, says: &str) {
    assert_eq!(o.status.code(), Some(2), "{says}: {}", stderr(o));
    assert!(stderr(o).contains(says), "{says}: {}", stderr(o));
    assert!(stdout(o).is_empty());
}

/// Whether process `pid` still runs (a zombie waiting for its reaper does not).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

#[test]
fn one_value_calls_the_program_and_zero_is_refused() {
    refused(
        &fprev(&["reveal", "--exec", "exit 3", "--n", "1"]),
        "exited",
    );
    let o = fprev(&["reveal", "--exec", "cat", "--n", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "0\n");
    // one value, no additions: no note about adders (it printed "fewer than 0 bits")
    assert!(!stderr(&o).contains("fraction bits"), "{}", stderr(&o));
    refused(
        &fprev(&["reveal", "--exec", "echo nan", "--n", "1"]),
        "must return it",
    );
    refused(
        &fprev(&["reveal", "--exec", "cat", "--n", "0"]),
        "nothing to sum",
    );
}

#[test]
fn sizes_are_refused_before_allocating() {
    refused(
        &fprev_limited(LIMIT_KIB, &["reveal", "--exec", "cat", "--n", "100000000"]),
        "--max-memory",
    );
    let shapes: [&[&str]; 3] = [
        &["--n", "4", "--rows", "18446744073709551615"],
        &["--n", "100000"],
        &["--n", "4000000000", "--rows", "1", "--cols", "1"],
    ];
    for shape in shapes {
        let mut args = vec!["reveal", "matrixmultiply-gemm"];
        args.extend_from_slice(shape);
        let o = fprev_limited(LIMIT_KIB, &args);
        assert_eq!(o.status.code(), Some(2), "{shape:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("--max-memory") || e.contains("more summands"),
            "{e}"
        );
    }
    refused(
        &fprev(&["reveal", "iter-sum", "--n", "4096", "--max-memory", "1K"]),
        "over the memory budget of 1024 bytes",
    );
    refused(
        &fprev(&["reveal", "iter-sum", "--n", "8", "--max-memory", "lots"]),
        "not a byte count",
    );
}

#[test]
fn durations_are_range_checked() {
    refused(
        &fprev(&["reveal", "--exec", "cat", "--n", "4", "--timeout", "1e20"]),
        "--timeout 100000000000000000000 is out of range",
    );
    refused(
        &fprev(&["reveal", "--exec", "cat", "--n", "4", "--grace=-1"]),
        "--grace -1 is out of range",
    );
}

#[test]
fn a_claimed_leaf_count_is_not_allocated() {
    let b = tmp("small.txt");
    std::fs::write(&b, "(0+1)").expect("write");
    for (leaves, says) in [
        (2_147_483_647u64, "leaves is too many"),
        (1_000_000_000, "must name 999999999 children"),
    ] {
        let a = tmp(&format!("huge-{leaves}.json"));
        let json = format!(r#"{{"format":"fprev-sum-tree/1","leaves":{leaves},"nodes":[]}}"#);
        assert!(json.len() <= 62);
        std::fs::write(&a, json).expect("write");
        let started = std::time::Instant::now();
        let o = fprev_limited(
            LIMIT_KIB,
            &["diff", a.to_str().expect("path"), b.to_str().expect("path")],
        );
        refused(&o, says);
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}

#[test]
fn an_endless_answer_line_is_an_error_in_bounded_memory() {
    let o = fprev_limited(
        LIMIT_KIB,
        &["reveal", "--exec", "tr '\\0' '1' < /dev/zero", "--n", "4"],
    );
    refused(&o, "longer than 4096 bytes");
}

#[test]
fn probes_are_encoded_lazily_for_a_peer_that_never_reads() {
    // Before: the first row's 50 000 probes of 50 000 values were encoded at once (about
    // 5 GB of text) for a program that reads nothing. Now at most 64 MB are in flight.
    let o = fprev_limited(
        LIMIT_KIB,
        &[
            "reveal",
            "--exec",
            "sleep 60",
            "--n",
            "50000",
            "--no-guess",
            "--timeout",
            "2",
            "--grace",
            "0",
        ],
    );
    refused(&o, "stopped reading its input");
}

#[test]
fn forked_processes_do_not_outlive_fprev() {
    let pids = tmp("forked.pid");
    let _ = std::fs::remove_file(&pids);
    // the direct child fails at once; what it started in the background must still go
    let cmd = format!(
        "sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {}; exit 3",
        pids.display()
    );
    let o = fprev(&["reveal", "--exec", &cmd, "--n", "4", "--grace", "0.2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let pid = std::fs::read_to_string(&pids).expect("the peer wrote its child's pid");
    assert!(!running(&pid), "sleep {pid} outlived fprev");
    // a peer that answers, then leaves a background process behind
    let cmd = format!(
        "sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {}; {AWK_SUM}",
        pids.display()
    );
    let o = fprev(&[
        "reveal", "--exec", &cmd, "--n", "8", "--dtype", "f64", "--grace", "0.2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "(((((((0+1)+2)+3)+4)+5)+6)+7)\n");
    let pid = std::fs::read_to_string(&pids).expect("the peer wrote its child's pid");
    assert!(!running(&pid), "sleep {pid} outlived fprev");
}

#[test]
fn a_peer_finishes_its_work_after_its_input_closes() {
    // Before: SIGKILL 1 ms after stdin closed, so the file was never written.
    let done = tmp("peer-done.txt");
    let _ = std::fs::remove_file(&done);
    let cmd = format!("{AWK_SUM}; sleep 0.3; echo done > {}", done.display());
    let o = fprev(&["reveal", "--exec", &cmd, "--n", "16", "--dtype", "f64"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&done).expect("the peer wrote its file at exit"),
        "done\n"
    );
}

#[test]
fn exec_diagnostics_say_what_was_observed() {
    let cases: [(&str, &str); 5] = [
        (
            "while read l; do echo x; done",
            "answered \"x\" to a random check input",
        ),
        ("while read l; do echo 0; done", "every answer was 0"),
        ("while read l; do echo -0; done", "every answer was -0"),
        // writes without reading
        ("yes 1", "every answer was 1"),
        ("sh -c 'exec >&-; sleep 30'", "closed its output"),
    ];
    for (cmd, says) in cases {
        let o = fprev(&[
            "reveal",
            "--exec",
            cmd,
            "--n",
            "16",
            "--timeout",
            "2",
            "--grace",
            "0",
        ]);
        refused(&o, says);
        assert!(!stderr(&o).contains("stalled"), "{}", stderr(&o));
    }
    let o = fprev(&["reveal", "--exec", "cat", "--n", "4", "--hint", "0"]);
    refused(&o, "a hint has 1 leaf");
}

#[test]
fn summary_format_describes_large_trees_in_words() {
    let o = fprev(&["reveal", "unrolled4", "-n", "1024", "--format", "summary"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        "4 lanes, stride 4, 256 in order; lanes combined pairwise\n\
         additions: binary, each rounded to nearest in f32 (no fused nodes)"
    );
}

/// Built-in targets, the element reveals of matrix products among them, state their
/// arithmetic under the tree as `--exec` programs do: binary additions rounded in the
/// accumulator's format (f32 for the f16 operands of matrixmultiply-f16).
#[test]
fn summary_format_states_the_arithmetic_of_builtin_and_element_targets() {
    for (args, acc) in [
        (&["iter-sum", "-n", "64", "--dtype", "f64"][..], "f64"),
        (&["ndarray-dot", "-n", "40"][..], "f32"),
        (
            &[
                "matrixmultiply-gemm",
                "-n",
                "33",
                "--rows",
                "5",
                "--cols",
                "3",
            ][..],
            "f32",
        ),
        (
            &[
                "matrixmultiply-f16",
                "-n",
                "16",
                "--rows",
                "4",
                "--cols",
                "4",
                "--dtype",
                "f16",
                "--acc-dtype",
                "f32",
            ][..],
            "f32",
        ),
    ] {
        let mut all = vec!["reveal"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--format", "summary"]);
        let o = fprev(&all);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let out = stdout(&o);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{args:?}: {out}");
        assert_eq!(
            lines[1],
            format!("additions: binary, each rounded to nearest in {acc} (no fused nodes)"),
            "{args:?}"
        );
    }
}

#[test]
#[ignore = "needs python3 with numpy (see README)"]
fn numpy_sum_float16_with_float32_accumulation() {
    for n in ["32", "1024", "4096"] {
        let promoted = fprev(&[
            "reveal",
            "--exec",
            "python3 tests/python/numpy_sum.py float16 float32",
            "--n",
            n,
            "--dtype",
            "f16",
            "--acc-dtype",
            "f32",
        ]);
        assert!(promoted.status.success(), "n = {n}: {}", stderr(&promoted));
        let f32_order = fprev(&[
            "reveal",
            "--exec",
            "python3 tests/python/numpy_sum.py float32",
            "--n",
            n,
            "--dtype",
            "f32",
        ]);
        assert!(f32_order.status.success(), "{}", stderr(&f32_order));
        let a: SumTree = stdout(&promoted).trim().parse().expect("a tree");
        let b: SumTree = stdout(&f32_order).trim().parse().expect("a tree");
        assert_eq!(a, b, "n = {n}");
    }
}

#[test]
#[ignore = "needs python3 (see README)"]
fn fp8_dot_through_op_dot_reveals_a_block_fma_preset() {
    let model = fprev::fused::BlockFma::H100_FP8;
    for dtype in ["f8e4m3", "f8e5m2"] {
        let o = fprev(&[
            "reveal",
            "--exec",
            "python3 tests/python/blockfma_dot.py 32 13 13",
            "--n",
            "64",
            "--dtype",
            dtype,
            "--op",
            "dot",
        ]);
        assert!(o.status.success(), "{dtype}: {}", stderr(&o));
        let got: SumTree = stdout(&o).trim().parse().expect("a tree");
        assert_eq!(got, model.tree(64), "{dtype}");
        assert!(stderr(&o).contains("block-FMA model"), "{}", stderr(&o));
    }
}

/// Tensor Cores as the published models describe them, answered by a Python responder
/// written from the papers (tests/python/tensor_core_dot.py, not from fprev's code):
/// one instruction and chained instructions of each generation, and FP8 GEMM dots with
/// fast and chunked accumulation. Each is revealed as the preset's tree with the
/// preset's own constants as the measured arithmetic.
#[test]
#[ignore = "needs python3 (see README)"]
fn independent_tensor_core_models_reveal_with_their_published_arithmetic() {
    use fprev::fused::BlockFma;
    // (preset, operand dtype, responder flags, n, arithmetic the report must state)
    let cases: [(BlockFma, &str, &str, usize, &str); 12] = [
        (
            BlockFma::V100,
            "f16",
            "--fmt f16 --nfma 4 --frac 23 --out f32",
            4,
            "23 fraction bits kept in alignment (23-23",
        ),
        (
            BlockFma::V100,
            "f16",
            "--fmt f16 --nfma 4 --frac 23 --out f32",
            16,
            "23 fraction bits kept in alignment (23-23",
        ),
        (
            BlockFma::A100,
            "bf16",
            "--fmt bf16 --nfma 8 --frac 24 --out f32",
            32,
            "24 fraction bits kept in alignment (24-24",
        ),
        (
            BlockFma::H100,
            "f16",
            "--fmt f16 --nfma 16 --frac 25 --out f32",
            16,
            "25 fraction bits kept in alignment (25-25",
        ),
        (
            BlockFma::B200,
            "bf16",
            "--fmt bf16 --nfma 16 --frac 25 --out f32",
            64,
            "25 fraction bits kept in alignment (25-25",
        ),
        (
            BlockFma::ADA_FP8,
            "f8e4m3",
            "--fmt e4m3 --nfma 16 --frac 13 --out e8m13",
            16,
            "results truncated to 13 fraction bits",
        ),
        (
            BlockFma::H100_FP8,
            "f8e5m2",
            "--fmt e5m2 --nfma 32 --frac 13 --out e8m13",
            128,
            "13 fraction bits kept in alignment (13-13",
        ),
        (
            BlockFma::H100_FP8_SLOW,
            "f8e4m3",
            "--fmt e4m3 --nfma 32 --frac 13 --out e8m13 --chunk 128",
            256,
            "13 fraction bits kept in alignment (13-13",
        ),
        // TF32: one `mma.m16n8k8` (two 4-product halves) on Ampere, one `wgmma` (k = 8)
        // and four chained on Hopper, two `tcgen05.mma` on Blackwell
        (
            BlockFma::A100_TF32,
            "tf32",
            "--fmt tf32 --nfma 4 --frac 24 --out f32",
            8,
            "24 fraction bits kept in alignment (24-24",
        ),
        (
            BlockFma::H100_TF32,
            "tf32",
            "--fmt tf32 --nfma 8 --frac 25 --out f32",
            8,
            "25 fraction bits kept in alignment (25-25",
        ),
        (
            BlockFma::H100_TF32,
            "tf32",
            "--fmt tf32 --nfma 8 --frac 25 --out f32",
            32,
            "25 fraction bits kept in alignment (25-25",
        ),
        (
            BlockFma::B200_TF32,
            "tf32",
            "--fmt tf32 --nfma 8 --frac 25 --out f32",
            16,
            "results truncated to 23 fraction bits",
        ),
    ];
    for (model, dtype, flags, n, says) in cases {
        let started = std::time::Instant::now();
        let o = reveal_tensor_core_dot(flags, dtype, n, &["--acc-dtype", "f32"]);
        let err = stderr(&o);
        assert!(o.status.success(), "{flags} n = {n}: {err}");
        let got: SumTree = stdout(&o).trim().parse().expect("a tree");
        assert_eq!(got, model.tree(n), "{flags} n = {n}");
        assert!(
            err.contains("products aligned by their operands' exponent sum") && err.contains(says),
            "{flags} n = {n}: {err}"
        );
        println!("{flags} n = {n}: {:.1?}\n{err}", started.elapsed());
    }
}

/// FP8 GEMM dots beyond one mask's reach (E4M3 products swamp at most 256 units in
/// f32), answered by the independent responder: revealed through a windowed prefix and
/// a proof of the chain it shows, the preset's tree with its published constants.
#[test]
#[ignore = "needs python3 (see README)"]
fn independent_fp8_gemm_dots_beyond_one_masks_reach_reveal_through_exec() {
    use fprev::fused::BlockFma;
    for (model, flags, says) in [
        (
            BlockFma::H100_FP8,
            "--fmt e4m3 --nfma 32 --frac 13 --out e8m13",
            "no promotion within 1024",
        ),
        (
            BlockFma::H100_FP8_SLOW,
            "--fmt e4m3 --nfma 32 --frac 13 --out e8m13 --chunk 128",
            "promotion interval 128 (128-128 consistent)",
        ),
    ] {
        let n = 1024;
        let started = std::time::Instant::now();
        let o = reveal_tensor_core_dot(flags, "f8e4m3", n, &["--acc-dtype", "f32"]);
        let err = stderr(&o);
        assert!(o.status.success(), "{flags} n = {n}: {err}");
        let got: SumTree = stdout(&o).trim().parse().expect("a tree");
        assert_eq!(got, model.tree(n), "{flags} n = {n}");
        for part in [
            "windowed prefix",
            "products aligned by their operands' exponent sum",
            "13 fraction bits kept in alignment (13-13",
            "block size 32 (32-32",
            says,
        ] {
            assert!(err.contains(part), "{flags} n = {n}: no {part:?} in {err}");
        }
        println!("{flags} n = {n}: {:.1?}\n{err}", started.elapsed());
    }
}

/// `fprev reveal --op dot` of the independent responder run with `flags`, `extra`
/// appended to the arguments.
fn reveal_tensor_core_dot(
    flags: &str,
    dtype: &str,
    n: impl std::fmt::Display,
    extra: &[&str],
) -> Output {
    let exec = format!("python3 tests/python/tensor_core_dot.py {flags}");
    let n = n.to_string();
    let mut args = vec![
        "reveal", "--exec", &exec, "--n", &n, "--dtype", dtype, "--op", "dot",
    ];
    args.extend_from_slice(extra);
    fprev(&args)
}

/// AMD CDNA1/CDNA2 matrix cores through the independent responder (`--c pairwise`,
/// `--ftz` for CDNA2): one instruction's k and 4 chained come back as the presets'
/// trees (`fprev::fused::PairwiseGroups`), binary additions rounded in f32.
#[test]
#[ignore = "needs python3 (see README)"]
fn cdna1_and_cdna2_pairwise_groups_reveal_through_exec() {
    use fprev::fused::PairwiseGroups;
    for (flags, dtype, model) in [
        (
            "--fmt f16 --nfma 4 --c pairwise",
            "f16",
            PairwiseGroups::CDNA1_F16,
        ),
        (
            "--fmt bf16 --nfma 2 --c pairwise",
            "bf16",
            PairwiseGroups::CDNA1_BF16,
        ),
        (
            "--fmt f16 --nfma 4 --c pairwise --ftz",
            "f16",
            PairwiseGroups::CDNA2_F16,
        ),
        (
            "--fmt bf16 --nfma 4 --c pairwise --ftz",
            "bf16",
            PairwiseGroups::CDNA2_BF16_1K,
        ),
    ] {
        for n in [model.group, 4 * model.group + 1] {
            let n_text = n.to_string();
            let o = reveal_tensor_core_dot(
                flags,
                dtype,
                &n_text,
                &["--acc-dtype", "f32", "--format", "summary"],
            );
            assert!(o.status.success(), "{flags} n = {n}: {}", stderr(&o));
            assert_eq!(
                stdout(&o),
                format!(
                    "{}\nadditions: binary, each rounded to nearest in f32 (no fused nodes)\n",
                    model.tree(n).describe()
                ),
                "{flags} n = {n}"
            );
            let o = reveal_tensor_core_dot(flags, dtype, &n_text, &["--acc-dtype", "f32"]);
            assert!(o.status.success(), "{flags} n = {n}: {}", stderr(&o));
            assert_eq!(
                stdout(&o).trim(),
                model.tree(n).to_string(),
                "{flags} n = {n}"
            );
        }
    }
}

/// AMD CDNA3's FP8 instructions through the independent responder (`--c amd-fp8`, on
/// both FNUZ formats): one instruction (k = 16) comes back as one 16-way node and 2 and
/// 4 chained as chains of 17-way nodes, each with the published arithmetic measured:
/// 24 bits in alignment, interleaved halves, the round-down join cutting `c` to 24 bits
/// (its smallest consistent width; the group sum's 31 lies in a wider range).
#[test]
#[ignore = "needs python3 (see README)"]
fn cdna3_fp8_groups_reveal_through_exec_with_their_arithmetic() {
    use fprev::fused::BlockFma;
    let model = BlockFma::CDNA3_FP8;
    for (dtype, fmt, n) in [
        ("e4m3fnuz", "e4m3fnuz", 16),
        ("e4m3fnuz", "e4m3fnuz", 64),
        ("e5m2fnuz", "e5m2fnuz", 32),
    ] {
        let flags = format!("--fmt {fmt} --nfma 16 --frac 24 --out f32 --c amd-fp8");
        let o = reveal_tensor_core_dot(&flags, dtype, n, &["--acc-dtype", "f32"]);
        assert!(o.status.success(), "{dtype} n = {n}: {}", stderr(&o));
        assert_eq!(
            stdout(&o).trim(),
            model.tree(n).to_string(),
            "{dtype} n = {n}"
        );
        let o = reveal_tensor_core_dot(
            &flags,
            dtype,
            n,
            &["--acc-dtype", "f32", "--format", "summary"],
        );
        assert!(o.status.success(), "{dtype} n = {n}: {}", stderr(&o));
        let out = stdout(&o);
        for line in [
            "24 fraction bits kept (24-24 consistent)",
            "products: fused in two interleaved halves (even and odd k), the half sums cut \
             toward minus infinity to 24 bits below the larger of their exponents and added",
            "block results: rounded to nearest",
            "products per block: 16 (16",
        ] {
            assert!(out.contains(line), "{dtype} n = {n}: no {line:?} in {out}");
        }
        if n > 16 {
            for line in ["the sum and c cut toward minus infinity to ", "and 24 (24-"] {
                assert!(out.contains(line), "{dtype} n = {n}: no {line:?} in {out}");
            }
        }
    }
}

/// Hopper's and Blackwell's FP8 `mma.sync.m16n8k32` into f16, as the toolbox's hardware
/// vectors showed it (`BlockFma::HOPPER_FP8_F16`): through the independent responder
/// (`--c f16-last`) the probes find the two interleaved groups (k mod 4 in {0, 1}, then
/// {2, 3}) of one instruction and of two chained, untold.
#[test]
#[ignore = "needs python3 (see README)"]
fn hopper_fp8_into_f16_reveals_its_interleaved_groups_through_exec() {
    use fprev::fused::BlockFma;
    for (dtype, fmt, n) in [("f8e4m3", "e4m3", 32usize), ("f8e5m2", "e5m2", 64)] {
        let flags = format!("--fmt {fmt} --nfma 16 --frac 25 --out f16 --c f16-last");
        let o = reveal_tensor_core_dot(&flags, dtype, n, &["--acc-dtype", "f16"]);
        assert!(o.status.success(), "{dtype} n = {n}: {}", stderr(&o));
        let order = BlockFma::mma_k32_f16_order(n);
        let mut text = String::new();
        for (i, inst) in order.chunks(32).enumerate() {
            let group = |g: &[usize]| g.iter().map(|k| k.to_string()).collect::<Vec<_>>();
            let node = format!(
                "(({})+{})",
                group(&inst[..16]).join("+"),
                group(&inst[16..]).join("+")
            );
            text = if i == 0 {
                node
            } else {
                format!("({text}+{node})")
            };
        }
        assert_eq!(stdout(&o).trim(), text, "{dtype} n = {n}");
    }
}

/// AMD MI300's FNUZ FP8 formats as `--dtype`: the probes spread over both operands as
/// for the OCP formats, and the FP8 block model comes back with its widths.
#[test]
#[ignore = "needs python3 (see README)"]
fn fnuz_dtypes_reveal_fp8_dots() {
    for dtype in ["e4m3fnuz", "e5m2fnuz"] {
        let flags = format!("--fmt {dtype} --nfma 32 --frac 13 --out e8m13");
        let o = reveal_tensor_core_dot(&flags, dtype, 64, &["--format", "summary"]);
        assert!(o.status.success(), "{dtype}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(
            out.contains("13 fraction bits kept (13-13 consistent)")
                && out.contains("products per block: 32 (32-32 consistent)"),
            "{dtype}: {out}"
        );
    }
}

/// `--format summary` states the measured arithmetic on stdout after the tree in words:
/// the promotion interval of a chunked FP8 GEMM, `c` aligned in a chain, `c` added late,
/// and a single instruction, where neither is seen, with its open-ended block size.
#[test]
#[ignore = "needs python3 (see README)"]
fn summary_format_states_block_size_c_and_promotion() {
    let cases: [(&str, &str, usize, &[&str]); 6] = [
        // one Hopper `wgmma` with an f16 result: one node, rounded to nearest
        (
            "--fmt f16 --nfma 16 --frac 25 --out f16",
            "f16",
            16,
            &[
                "one fused add of 16",
                "block results: rounded to nearest",
                "products per block: 16 (16 or more consistent)",
            ],
        ),
        // AMD CDNA3: blocks of 8 joined to c with the round-down alignment, fp16 and xf32
        (
            "--fmt f16 --nfma 8 --frac 24 --out f32 --c amd",
            "f16",
            32,
            &[
                "24 fraction bits kept (24-24 consistent)",
                "block results: rounded to nearest",
                "products per block: 8 (8-8 consistent)",
                "running value (c): aligned with each block's products after they are \
                 summed, the sum and c cut toward minus infinity to ",
                "and 24 (24-24 consistent) fraction bits below the larger exponent",
            ],
        ),
        (
            "--fmt tf32 --nfma 4 --frac 24 --out f32 --c amd",
            "tf32",
            16,
            &[
                "24 fraction bits kept (24-24 consistent)",
                "products per block: 4 (4-4 consistent)",
                "cut toward minus infinity to ",
                "and 24 (24-24 consistent) fraction bits",
            ],
        ),
        (
            "--fmt e4m3 --nfma 32 --frac 13 --out e8m13 --chunk 128",
            "f8e4m3",
            256,
            &[
                "alignment: by the operands' exponent sum, 13 fraction bits kept (13-13 consistent)",
                "block results: truncated to 13 fraction bits",
                "products per block: 32 (32-32 consistent)",
                "running value (c): aligned and cut with each block's products",
                "promotion interval (products): 128 (128-128 consistent), chains added with round to nearest",
            ],
        ),
        (
            "--fmt f16 --nfma 8 --frac 24 --out f32 --c late",
            "f16",
            32,
            &[
                "24 fraction bits kept (24-24 consistent)",
                "block results: truncated to 23 fraction bits (23-23 consistent)",
                "products per block: 8 (8-8 consistent)",
                "running value (c): added after each block, with round to nearest",
                "promotion interval (products): none within 32 (every 8 or more consistent)",
            ],
        ),
        (
            "--fmt f16 --nfma 16 --frac 25 --out f32",
            "f16",
            16,
            &[
                "one fused add of 16",
                "25 fraction bits kept (25-25 consistent)",
                "products per block: 16 (16 or more consistent)",
                "running value (c): not seen (one block, nothing runs before it)",
                "promotion interval (products): none within 16 (every 16 or more consistent)",
            ],
        ),
    ];
    for (flags, dtype, n, lines) in cases {
        let acc = if flags.ends_with("--out f16") {
            "f16"
        } else {
            "f32"
        };
        let o = reveal_tensor_core_dot(
            flags,
            dtype,
            n,
            &["--acc-dtype", acc, "--format", "summary"],
        );
        assert!(o.status.success(), "{flags}: {}", stderr(&o));
        let out = stdout(&o);
        for line in lines {
            assert!(out.contains(line), "{flags}: {line:?} missing from\n{out}");
        }
    }
}

#[test]
fn acc_dtype_and_op_are_checked() {
    let exec = ["reveal", "--exec", "cat", "--n"];
    let cases: [(&[&str], &str); 8] = [
        (
            &["reveal", "iter-sum", "--n", "8", "--acc-dtype", "f64"],
            "--acc-dtype",
        ),
        (
            &["8", "--dtype", "f32", "--acc-dtype", "f16"],
            "cannot hold",
        ),
        (
            &["8", "--dtype", "f8e4m3", "--acc-dtype", "f8e5m2"],
            "operand type",
        ),
        (
            &["8", "--dtype", "tf32", "--acc-dtype", "tf32"],
            "operand type",
        ),
        (
            &["8", "--dtype", "tf32", "--acc-dtype", "bf16"],
            "cannot hold",
        ),
        // the built-in with f16 operands and f32 accumulation names the missing flag
        (
            &["reveal", "matrixmultiply-f16", "--n", "8", "--dtype", "f16"],
            "--acc-dtype f32",
        ),
        // FP8 values in one operand cannot swamp a sum: the error says so
        (&["64", "--dtype", "f8e4m3"], "too many for"),
        (
            &["8", "--op", "dot", "--protocol", "delta"],
            "sends both operands whole",
        ),
    ];
    for (args, says) in cases {
        let args: Vec<&str> = if args[0] == "reveal" {
            args.to_vec()
        } else {
            exec.iter().chain(args).copied().collect()
        };
        refused(&fprev(&args), says);
    }
    // past the products' reach, with --op dot already given: the window is tried (here
    // on a program that adds a and b rather than their products) and the refusal says
    // what was tried, without suggesting --op dot again
    let o = fprev(&[
        "reveal", "--exec", AWK_SUM, "--n", "512", "--dtype", "f8e4m3", "--op", "dot",
    ]);
    refused(&o, "windows were tried and failed: the first 256 products");
    assert!(!stderr(&o).contains("--op dot"), "{}", stderr(&o));
    // and takes both flags
    let o = fprev(&[
        "reveal",
        "matrixmultiply-f16",
        "--n",
        "8",
        "--rows",
        "2",
        "--cols",
        "2",
        "--dtype",
        "f16",
        "--acc-dtype",
        "f32",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `fprev args...` with standard output sent to `stdout` and standard error to
/// `stderr_to` (a pipe when none).
fn fprev_to(
    args: &[&str],
    stdout: std::process::Stdio,
    stderr_to: Option<std::fs::File>,
) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fprev"));
    cmd.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(stdout);
    if let Some(f) = stderr_to {
        cmd.stderr(f);
    }
    cmd.output().expect("run fprev")
}

fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full")
}

/// The commands that print to standard output, each printing something.
/// Each test passes its own `tag`: tests run in parallel, and one rewriting a file another
/// is reading would hand that one an empty tree.
fn printing_commands(tag: &str) -> Vec<Vec<String>> {
    let (a, b) = (tmp(&format!("{tag}-a.txt")), tmp(&format!("{tag}-b.txt")));
    std::fs::write(&a, "((0+1)+2)\n").expect("write");
    std::fs::write(&b, "(0+(1+2))\n").expect("write");
    let s = |p: &PathBuf| p.to_str().unwrap_or_default().to_string();
    let demo = tmp(&format!("{tag}-demo"));
    [
        vec!["targets".to_string()],
        vec!["diff".into(), s(&a), s(&a)],
        vec!["diff".into(), s(&a), s(&b)],
        vec!["reveal".into(), "unrolled4".into(), "-n".into(), "8".into()],
        vec![
            "reveal".into(),
            "--exec".into(),
            "cat".into(),
            "-n".into(),
            "1".into(),
        ],
        vec![
            "demo".into(),
            "--only".into(),
            "loops".into(),
            "--out".into(),
            s(&demo),
        ],
    ]
    .into()
}

#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    // Before: println! panicked ("failed printing to stdout"), exit status 101.
    for args in printing_commands("full-stdout") {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = fprev_to(&args, dev_full().into(), None);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("fprev: cannot write to standard output: No space left on device"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
        // and with standard error full too: no panic, nothing to say
        let o = fprev_to(&args, dev_full().into(), Some(dev_full()));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_closed_pipe_on_stdout_ends_quietly() {
    // Before: println! panicked on the broken pipe (exit status 101); now fprev stops
    // quietly with status 0, as `| head -1` expects.
    for args in printing_commands("closed-pipe") {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let o = fprev_to(&args, writer.into(), None);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
        assert!(
            !stderr(&o).contains("standard output"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// Polls `f` every 10 ms, at most `tries` times, until it gives a value.
fn poll<T>(tries: u32, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    for _ in 0..tries {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    None
}

/// Starts `fprev reveal --exec <peer>` (the peer never answers) with the default action
/// for SIGINT and SIGHUP (a test runner started in the background ignores them, and
/// fprev would inherit that), and waits for the peer to write `pid_file`.
fn fprev_with_peer(peer: &str, pid_file: &std::path::Path) -> (std::process::Child, String) {
    use std::os::unix::process::CommandExt;
    let _ = std::fs::remove_file(pid_file);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fprev"));
    cmd.args(["reveal", "--exec", peer, "--n", "4", "--timeout", "300"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: signal(2) only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("run fprev");
    let pid = poll(3000, || {
        std::fs::read_to_string(pid_file)
            .ok()
            .filter(|s| s.ends_with('\n'))
    });
    let Some(pid) = pid else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the peer did not start");
    };
    (child, pid)
}

/// Waits (bounded) for `child` to end.
fn ended(child: &mut std::process::Child) -> std::process::ExitStatus {
    match poll(3000, || child.try_wait().ok().flatten()) {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fprev did not end");
        }
    }
}

#[test]
fn a_signalled_fprev_ends_the_peers_background_children() {
    use std::os::unix::process::ExitStatusExt;
    // Before: the peer died of a broken pipe and its background sleep kept running.
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let pids = tmp(&format!("signalled-{signal}.pid"));
        let peer = format!(
            "sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {0}.tmp && mv {0}.tmp {0}; \
             exec sleep 300",
            pids.display()
        );
        let (mut child, pid) = fprev_with_peer(&peer, &pids);
        let fprev_pid = i32::try_from(child.id()).expect("pid");
        // SAFETY: kill(2) of the child this test started.
        assert_eq!(unsafe { libc::kill(fprev_pid, signal) }, 0);
        let status = ended(&mut child);
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        assert!(
            poll(1000, || (!running(&pid)).then_some(())).is_some(),
            "signal {signal}: the peer's background sleep {} outlived fprev",
            pid.trim()
        );
    }
}

#[test]
fn a_killed_fprev_takes_its_direct_peer_along() {
    // SIGKILL cannot be handled: the kernel's parent-death signal ends the direct peer.
    let pids = tmp("killed.pid");
    let peer = format!(
        "echo $$ > {0}.tmp && mv {0}.tmp {0}; exec sleep 300",
        pids.display()
    );
    let (mut child, pid) = fprev_with_peer(&peer, &pids);
    child.kill().expect("SIGKILL");
    let _ = ended(&mut child);
    assert!(
        poll(1000, || (!running(&pid)).then_some(())).is_some(),
        "the peer {} outlived a SIGKILLed fprev",
        pid.trim()
    );
}

#[test]
fn tree_files_are_read_within_a_bound() {
    // `diff` (and `--hint`, through the same reader) read files: a device that never
    // ends is refused after a bounded read, in bounded memory, as `campaign merge`
    // refuses one.
    let o = fprev_limited(LIMIT_KIB, &["diff", "/dev/zero", "/dev/zero"]);
    refused(&o, "/dev/zero: larger than 256 MiB: not a tree file");
}

/// Without the `mpi` feature the MPI targets exist and say how to get them.
#[cfg(not(feature = "mpi"))]
#[test]
fn mpi_targets_name_the_missing_feature() {
    let o = fprev(&["reveal", "mpi-allreduce", "--ranks", "4"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("`mpi` feature") && e.contains("--features mpi"),
        "{e}"
    );
    // arguments are still checked first
    let o = fprev(&[
        "reveal",
        "mpi-reduce",
        "--ranks",
        "4",
        "--algorithm",
        "ring",
    ]);
    assert!(stderr(&o).contains("binomial"), "{}", stderr(&o));
}
