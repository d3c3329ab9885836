//! `torch.distributed.all_reduce` on the CPU `gloo` backend, revealed through
//! `fprev reveal --exec` with the responder `tests/python/torch_allreduce.py` (rank 0
//! reads the probes, every rank contributes its value, rank 0 answers).
//!
//! Needs PyTorch, which CI does not install: the test is ignored there, and run with
//! `TORCH_PYTHON=/path/to/python cargo test -p fprev-cli --test torch -- --ignored`
//! (`python3` when `TORCH_PYTHON` is unset).

use fprev::SumTree;

mod common;
use common::{fprev, stderr, stdout};

fn python() -> String {
    std::env::var("TORCH_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The tree of gloo's allreduce at `world` ranks, one element.
fn gloo(world: usize) -> SumTree {
    let cmd = format!("{} tests/python/torch_allreduce.py {world}", python());
    let n = world.to_string();
    let o = fprev(&[
        "reveal",
        "--exec",
        &cmd,
        "--n",
        &n,
        "--dtype",
        "f64",
        "--startup-timeout",
        "300",
        "--timeout",
        "60",
    ]);
    assert!(o.status.success(), "world {world}: {}", stderr(&o));
    stdout(&o)
        .trim()
        .parse()
        .expect("stdout is one canonical tree")
}

#[test]
#[ignore = "needs PyTorch: TORCH_PYTHON=/path/to/python cargo test -p fprev-cli --test torch -- --ignored"]
fn gloo_all_reduce_adds_rank_0_last_to_a_reverse_chain() {
    // as revealed with torch 2.15 (CPU wheel): rank 0 plus the sum of the others, each
    // rank adding its value to the sum of the ranks after it
    for world in [2, 4, 8] {
        let t = gloo(world);
        assert_eq!(t, SumTree::reverse(world), "world {world}: {t}");
    }
}
