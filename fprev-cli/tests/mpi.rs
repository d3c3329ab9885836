//! `fprev reveal mpi-allreduce` / `mpi-reduce` against the real Open MPI, run as users
//! run it. Built only with the `mpi` feature (which needs MPI to build at all); without
//! it, one ignored test says how to run these.

#[cfg(not(feature = "mpi"))]
#[test]
#[ignore = "needs Open MPI and the mpi feature: cargo test -p fprev-cli --features mpi --test mpi"]
fn mpi_tests_need_the_mpi_feature() {}

#[cfg(feature = "mpi")]
mod with_mpi {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Output, Stdio};
    use std::time::Duration;

    use fprev::SumTree;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const ALLREDUCE: &[&str] = &[
        "default",
        "basic-linear",
        "nonoverlapping",
        "recursive-doubling",
        "ring",
        "segmented-ring",
        "rabenseifner",
    ];
    const REDUCE: &[&str] = &[
        "default",
        "linear",
        "chain",
        "pipeline",
        "binary",
        "binomial",
        "in-order-binary",
        "rabenseifner",
    ];

    fn fprev(args: &[&str]) -> Output {
        mpirun_on_path();
        Command::new(env!("CARGO_BIN_EXE_fprev"))
            .args(args)
            .output()
            .expect("run fprev")
    }

    /// The feature builds only against an MPI library, so a missing mpirun is a broken
    /// installation, reported as such rather than skipped.
    fn mpirun_on_path() {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("mpirun").is_file()));
        assert!(
            found,
            "the mpi feature is on but mpirun is not on PATH: install openmpi-bin"
        );
    }

    fn stderr(o: &Output) -> String {
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    fn tree(o: &Output) -> SumTree {
        assert!(o.status.success(), "{}", stderr(o));
        let text = String::from_utf8_lossy(&o.stdout);
        text.trim().parse().expect("a tree")
    }

    fn reveal(
        collective: &str,
        ranks: usize,
        algorithm: &str,
        count: usize,
        element: usize,
    ) -> SumTree {
        let (r, c, e) = (ranks.to_string(), count.to_string(), element.to_string());
        tree(&fprev(&[
            "reveal",
            collective,
            "--ranks",
            &r,
            "--algorithm",
            algorithm,
            "--count",
            &c,
            "--element",
            &e,
            "--dtype",
            "f64",
        ]))
    }

    /// Every addition adds one leaf to the running sum.
    fn is_chain(t: &SumTree) -> bool {
        (0..t.leaf_count() + t.inner_count())
            .filter(|&v| !t.is_leaf(v))
            .all(|v| {
                let c = t.children(v);
                c.len() == 2 && c.iter().any(|&k| t.is_leaf(k as usize))
            })
    }

    #[test]
    fn recursive_doubling_at_8_ranks_is_the_balanced_pairwise_tree() {
        let t = reveal("mpi-allreduce", 8, "recursive-doubling", 1, 0);
        assert_eq!(t, SumTree::pairwise(8), "{t}");
        assert_eq!(t.to_string(), "(((0+1)+(2+3))+((4+5)+(6+7)))");
    }

    #[test]
    fn linear_and_ring_orders_are_chains() {
        let linear = reveal("mpi-allreduce", 8, "basic-linear", 1, 0);
        assert_eq!(linear.to_string(), "(0+(1+(2+(3+(4+(5+(6+7)))))))");
        assert!(is_chain(&reveal("mpi-reduce", 6, "linear", 1, 0)));
        // ring: a chain per segment, each starting at another rank
        let first = reveal("mpi-allreduce", 8, "ring", 64, 0);
        assert_eq!(first, SumTree::sequential(8), "{first}");
        let later = reveal("mpi-allreduce", 8, "ring", 64, 40);
        assert!(is_chain(&later) && later != first, "{later}");
        // and not every tree is a chain: the check can fail
        assert!(!is_chain(&SumTree::pairwise(8)));
    }

    /// `--element all`: the groups' element ranges and trees, and the headline.
    fn groups(algorithm: &str, ranks: usize, count: usize) -> (String, Vec<(String, SumTree)>) {
        let (r, c) = (ranks.to_string(), count.to_string());
        let o = fprev(&[
            "reveal",
            "mpi-allreduce",
            "--ranks",
            &r,
            "--algorithm",
            algorithm,
            "--count",
            &c,
            "--element",
            "all",
            "--dtype",
            "f64",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let mut lines = text.lines();
        let headline = lines.next().expect("a headline").to_string();
        let groups = lines
            .map(|line| {
                let rest = line.strip_prefix("elements ").expect(line);
                let (elements, _) = rest.split_once(" (").expect(line);
                let (_, tree) = line.rsplit_once(": ").expect(line);
                (elements.to_string(), tree.parse().expect(line))
            })
            .collect();
        (headline, groups)
    }

    #[test]
    fn ring_gives_elements_several_orders_and_recursive_doubling_one() {
        let (headline, ring) = groups("ring", 8, 64);
        assert!(ring.len() > 1, "{headline} {ring:?}");
        assert!(headline.contains("orders among 64 elements"), "{headline}");
        // every group a chain, no two groups the same tree, element 40 as revealed alone
        assert!(ring.iter().all(|(_, t)| is_chain(t)), "{ring:?}");
        for (i, (_, a)) in ring.iter().enumerate() {
            assert!(ring[..i].iter().all(|(_, b)| a != b), "{ring:?}");
        }
        let alone = reveal("mpi-allreduce", 8, "ring", 64, 40);
        assert!(ring.iter().any(|(_, t)| *t == alone), "{alone} {ring:?}");
        let (headline, doubling) = groups("recursive-doubling", 8, 64);
        assert_eq!(headline, "all 64 elements share one order (8 ranks):");
        assert_eq!(doubling.len(), 1);
        assert_eq!(doubling[0].0, "0..63");
        assert_eq!(doubling[0].1, SumTree::pairwise(8));
    }

    /// The rank program, started as `fprev reveal` starts it, fed `inputs` directly.
    fn run_collective(
        collective: &str,
        ranks: usize,
        algorithm: &str,
        inputs: &[Vec<f64>],
    ) -> Vec<f64> {
        let (word, parameter, table) = match collective {
            "mpi-allreduce" => ("allreduce", "coll_tuned_allreduce_algorithm", ALLREDUCE),
            _ => ("reduce", "coll_tuned_reduce_algorithm", REDUCE),
        };
        let value = table.iter().position(|&a| a == algorithm).expect("known");
        let mut cmd = Command::new("mpirun");
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .args([
                "--oversubscribe",
                "--bind-to",
                "none",
                "-np",
                &ranks.to_string(),
            ]);
        if value != 0 {
            cmd.args(["--mca", "coll_tuned_use_dynamic_rules", "1"])
                .args(["--mca", parameter, &value.to_string()]);
        }
        let mut child = cmd
            .arg(env!("CARGO_BIN_EXE_fprev"))
            .args([
                "mpi-rank",
                "--collective",
                word,
                "--count",
                "64",
                "--element",
                "5",
            ])
            .args(["--dtype", "f64", "--seed", "0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start mpirun");
        let mut stdin = child.stdin.take().expect("stdin");
        let text: String = inputs
            .iter()
            .map(|x| {
                let words: Vec<String> = x.iter().map(|v| v.to_string()).collect();
                words.join(" ") + "\n"
            })
            .collect();
        stdin.write_all(text.as_bytes()).expect("send inputs");
        drop(stdin);
        let answers: Vec<f64> = BufReader::new(child.stdout.take().expect("stdout"))
            .lines()
            .map(|l| l.expect("answer").trim().parse().expect("a number"))
            .collect();
        assert!(child.wait().expect("mpirun ends").success());
        answers
    }

    #[test]
    fn every_algorithm_tree_replays_the_real_collective_bits() {
        let ranks = 8;
        let mut rng = ChaCha8Rng::seed_from_u64(33);
        // magnitudes over 2^-30..2^30: different orders round differently
        let inputs: Vec<Vec<f64>> = (0..24)
            .map(|_| {
                (0..ranks)
                    .map(|_| rng.random_range(-1.0..1.0) * 2f64.powi(rng.random_range(-30..=30)))
                    .collect()
            })
            .collect();
        for (collective, table) in [("mpi-allreduce", ALLREDUCE), ("mpi-reduce", REDUCE)] {
            for &algorithm in table {
                let t = reveal(collective, ranks, algorithm, 64, 5);
                let real = run_collective(collective, ranks, algorithm, &inputs);
                assert_eq!(real.len(), inputs.len(), "{collective} {algorithm}");
                let other = if t == SumTree::sequential(ranks) {
                    SumTree::pairwise(ranks)
                } else {
                    SumTree::sequential(ranks)
                };
                let mut told_apart = false;
                for (x, r) in inputs.iter().zip(&real) {
                    let replayed: f64 = t.replay(x);
                    assert_eq!(
                        replayed.to_bits(),
                        r.to_bits(),
                        "{collective} {algorithm}: {t} replays {replayed:e}, MPI gave {r:e} on {x:?}"
                    );
                    told_apart |= other.replay::<f64>(x).to_bits() != r.to_bits();
                }
                assert!(
                    told_apart,
                    "{collective} {algorithm}: inputs too weak to tell {t} from {other}"
                );
            }
        }
    }

    /// Processes whose command line holds `marker` (the rank programs of one test).
    fn running_with(marker: &str) -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains("mpi-rank") && text.contains(marker) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
        found
    }

    #[test]
    fn a_rank_that_dies_is_an_error_and_nothing_is_left_running() {
        let o = fprev(&[
            "reveal",
            "mpi-allreduce",
            "--ranks",
            "4",
            "--seed",
            "918273645",
            "--mpi-fault",
            "die",
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("MPI_Allreduce (default), 4 ranks"), "{e}");
        assert!(
            e.contains("before answering") || e.contains("exited"),
            "{e}"
        );
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(running_with("918273645"), Vec::<String>::new());
    }

    #[test]
    fn a_hung_rank_is_a_timeout_and_nothing_is_left_running() {
        let o = fprev(&[
            "reveal",
            "mpi-allreduce",
            "--ranks",
            "3",
            "--seed",
            "564738291",
            "--mpi-fault",
            "hang",
            "--timeout",
            "3",
            "--grace",
            "0.5",
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        // the first probe hangs: the start-up allowance is the flag to name
        assert!(
            e.contains("gave no answer") && e.contains("--startup-timeout"),
            "{e}"
        );
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(running_with("564738291"), Vec::<String>::new());
    }

    #[test]
    fn no_mpirun_on_path_says_what_to_install() {
        let o = Command::new(env!("CARGO_BIN_EXE_fprev"))
            .args(["reveal", "mpi-allreduce", "--ranks", "2"])
            .env("PATH", "/nonexistent")
            .output()
            .expect("run fprev");
        assert_eq!(o.status.code(), Some(2));
        let e = stderr(&o);
        assert!(
            e.contains("no mpirun on PATH") && e.contains("openmpi-bin"),
            "{e}"
        );
    }

    #[test]
    fn bad_arguments_are_refused_before_anything_starts() {
        for (args, needle) in [
            (&["--ranks", "0"][..], "--ranks 0"),
            (
                &["--ranks", "2", "--count", "4", "--element", "4"],
                "--element 4",
            ),
            (
                &["--ranks", "2", "--algorithm", "chain"],
                "recursive-doubling",
            ),
            (
                &["--ranks", "2", "--algorithm", "basic"],
                "names the MPI algorithm",
            ),
            (&["--ranks", "2", "--dtype", "f16"], "f64 or f32"),
            (&["--ranks", "100000"], "oversubscribe"),
            (&["-n", "4"], "--ranks"),
        ] {
            let mut all = vec!["reveal", "mpi-allreduce"];
            all.extend_from_slice(args);
            let o = fprev(&all);
            assert_eq!(o.status.code(), Some(2), "{args:?}");
            assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        }
    }

    #[test]
    fn f32_and_small_rank_counts_reveal_too() {
        let o = fprev(&["reveal", "mpi-allreduce", "--ranks", "1", "--dtype", "f32"]);
        assert_eq!(tree(&o).leaf_count(), 1);
        let o = fprev(&["reveal", "mpi-reduce", "--ranks", "4", "--dtype", "f32"]);
        assert_eq!(tree(&o).leaf_count(), 4);
    }
}
