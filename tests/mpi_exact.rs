//! `fprev::mpi::exact_allreduce_sum` under the real Open MPI: the same bits for every
//! algorithm and rank placement, equal to `fprev::exact::sum` of all the values, for
//! P = 1..8. Runs `examples/exact_allreduce.rs` (built by a plain `cargo test`) under
//! mpirun. Built only with the `mpi` feature; without it one ignored test says how.

#[cfg(not(feature = "mpi"))]
#[test]
#[ignore = "needs Open MPI and the mpi feature: cargo test --features mpi --test mpi_exact"]
fn exact_allreduce_tests_need_the_mpi_feature() {}

#[cfg(feature = "mpi")]
mod with_mpi {
    use std::collections::BTreeSet;
    use std::path::PathBuf;
    use std::process::Command;

    /// Open MPI 4.1's `coll_tuned_allreduce_algorithm` values (0: its own choice).
    const ALGORITHMS: &[u32] = &[0, 1, 2, 3, 4, 5, 6];

    /// The example program, beside this test binary's directory (`target/*/examples`).
    fn example() -> PathBuf {
        let exe = std::env::current_exe().expect("test binary path");
        let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
        let path = dir.join("examples").join("exact_allreduce");
        assert!(
            path.is_file(),
            "{} is missing: build it with `cargo build --features mpi --example \
             exact_allreduce` (a plain `cargo test --features mpi` builds it too)",
            path.display()
        );
        path
    }

    /// Rank 0's line: `exact <digest> plain <digest> matches-exact-sum <bool>`.
    fn run(
        ranks: usize,
        algorithm: u32,
        dtype: &str,
        rotation: usize,
        spread: u32,
    ) -> (String, String, bool) {
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
        if algorithm != 0 {
            cmd.args(["--mca", "coll_tuned_use_dynamic_rules", "1"])
                .args([
                    "--mca",
                    "coll_tuned_allreduce_algorithm",
                    &algorithm.to_string(),
                ]);
        }
        // 2500 elements: two full chunks of the exact allreduce and a partial one
        let o = cmd
            .arg(example())
            .args(["check", "2500", "7", dtype, &rotation.to_string()])
            .arg(spread.to_string())
            .output()
            .expect("mpirun (install openmpi-bin: the mpi feature needs it)");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "P = {ranks}, algorithm {algorithm}: {text}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let w: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(w.len(), 6, "{text}");
        (w[1].to_string(), w[3].to_string(), w[5] == "true")
    }

    #[test]
    fn exact_allreduce_gives_the_same_bits_for_every_algorithm_and_placement() {
        let mut plain_varies = false;
        for ranks in 1..=8 {
            // a spread of 2^±40 takes the window path, 2^±600 the accumulator images
            for (spread, algorithms) in [(40, ALGORITHMS), (600, &[0, 1, 4, 6])] {
                let mut exact = BTreeSet::new();
                let mut plain = BTreeSet::new();
                for &algorithm in algorithms {
                    let (e, p, matches) = run(ranks, algorithm, "f64", 0, spread);
                    assert!(
                        matches,
                        "P = {ranks}, algorithm {algorithm}: not exact::sum"
                    );
                    exact.insert(e);
                    plain.insert(p);
                }
                // the same values on other ranks
                let (e, p, matches) = run(ranks, 0, "f64", ranks - 1, spread);
                assert!(matches, "P = {ranks}, rotated: not exact::sum");
                exact.insert(e);
                plain.insert(p);
                assert_eq!(exact.len(), 1, "P = {ranks}, spread {spread}: {exact:?}");
                plain_varies |= plain.len() > 1;
            }
        }
        // the inputs are ones whose plain sums do depend on the order
        assert!(
            plain_varies,
            "MPI_SUM gave one result everywhere: the inputs test nothing"
        );
    }

    #[test]
    fn exact_allreduce_of_f32_rounds_once_to_f32() {
        for ranks in [2, 5, 8] {
            let mut exact = BTreeSet::new();
            for algorithm in [0, 1, 4, 6] {
                let (e, _, matches) = run(ranks, algorithm, "f32", algorithm as usize % ranks, 40);
                assert!(
                    matches,
                    "P = {ranks}, algorithm {algorithm}: not exact::sum_f32"
                );
                exact.insert(e);
            }
            assert_eq!(exact.len(), 1, "P = {ranks}: {exact:?}");
        }
    }

    /// World rank 0's line of `exact_allreduce scramble 4096 TOKEN` at 8 ranks:
    /// `(token, exact digest, plain digest)`.
    fn scrambled(token: &str) -> (String, String, String) {
        let o = Command::new("mpirun")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .args(["--oversubscribe", "--bind-to", "none", "-np", "8"])
            .arg(example())
            .args(["scramble", "4096", token])
            .output()
            .expect("mpirun (install openmpi-bin: the mpi feature needs it)");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "token {token}: {text}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let w: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(w.len(), 6, "{text}");
        (w[1].to_string(), w[3].to_string(), w[5].to_string())
    }

    #[test]
    fn a_scrambled_communicator_moves_plain_sums_and_not_exact_ones() {
        let mut exact = BTreeSet::new();
        let mut plain = BTreeSet::new();
        for token in ["none", "1", "2", "3", "0x2a"] {
            let (shown, e, p) = scrambled(token);
            if token != "none" {
                // the replay token names the seed, in the scramble's token format
                let seed: fprev::ReplayToken = token.parse().expect("a token");
                assert_eq!(shown, seed.to_string());
                // the same token gives the same permutation, so the same bits
                assert_eq!(scrambled(&shown), (shown.clone(), e.clone(), p.clone()));
            }
            exact.insert(e);
            plain.insert(p);
        }
        assert_eq!(exact.len(), 1, "exact_allreduce_sum moved: {exact:?}");
        assert!(
            plain.len() > 1,
            "MPI_SUM gave the same bits under every permutation: {plain:?}"
        );
    }
}
