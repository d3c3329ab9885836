//! The amplifier finds order-dependent results, names the runs that differ, and their
//! tokens replay the same bits.

#![cfg(not(feature = "off"))] // needs scrambling compiled in; see scramble_off.rs

use fprev::amplify::{amplify, AmplifyConfig, Stage};
use fprev::assert_reproducible;

fn data() -> Vec<f32> {
    (0..4000)
        .map(|i| ((i * 7919 % 1013) as f32 - 506.0) * 10f32.powi(i % 7 - 3))
        .collect()
}

#[fprev::scramble]
fn ordered_sum(v: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for x in v.iter() {
        s += *x;
    }
    s
}

#[fprev::scramble]
fn exact_count(v: &[f32]) -> f64 {
    let mut n = 0.0f64;
    for x in v.iter() {
        if *x > 0.0 {
            n += 1.0;
        }
    }
    n
}

fn quick() -> AmplifyConfig {
    AmplifyConfig::default().runs(6).max_threads(3).seed(0x5eed)
}

#[test]
fn order_independent_results_pass() {
    let v = data();
    let report = assert_reproducible!(&quick(), || exact_count(&v));
    assert_eq!(report.stages.len(), 4);
    assert!(report.stages.iter().all(|s| s.distinct == 1));
}

#[test]
fn order_dependent_sum_fails_with_tokens_and_replay_commands() {
    let v = data();
    let err = std::panic::catch_unwind(|| {
        assert_reproducible!(&quick(), || ordered_sum(&v));
    })
    .expect_err("reassociating the reduction must change the sum");
    let msg = err.downcast_ref::<String>().expect("a formatted report");
    assert!(msg.contains("NOT reproducible"), "{msg}");
    assert!(msg.contains("4 vary reductions"), "{msg}");
    assert!(msg.contains("FPREV_SEED=v3-4"), "{msg}");
    assert!(
        msg.contains("cargo test order_dependent_sum_fails"),
        "{msg}"
    );
}

#[test]
fn a_differing_runs_token_replays_the_same_bits() {
    let v = data();
    let report = amplify(&quick().stages(&[Stage::LoopOrder]), || ordered_sum(&v));
    let stage = report.stage(Stage::LoopOrder).unwrap();
    assert!(stage.distinct > 1, "{report}");
    for run in stage.differing() {
        // What `FPREV_SEED=<token> cargo test` does: amplify with the token's seed.
        let token: fprev::ReplayToken = run.token.to_string().parse().unwrap();
        let replay = amplify(&AmplifyConfig::default().seed(token.seed), || {
            ordered_sum(&v)
        });
        assert_eq!(replay.stages.len(), 1);
        let again = &replay.stages[0];
        assert_eq!(again.stage, Stage::LoopOrder);
        assert_eq!(
            again.runs[0].hash, run.hash,
            "token {} replayed other bits",
            run.token
        );
        assert_eq!(again.runs[0].first_difference, run.first_difference);
    }
    // The campaign token replays every run.
    let campaign = amplify(&quick().stages(&[Stage::LoopOrder]), || ordered_sum(&v));
    assert_eq!(campaign, report);
}

#[test]
fn distribution_stage_varies_pool_size() {
    let report = amplify(&quick().stages(&[Stage::Distribution]), || {
        rayon::current_num_threads() as f64
    });
    let stage = &report.stages[0];
    assert!(stage.distinct >= 2, "{report}");
}

#[fprev::scramble]
fn row_sums(m: &[Vec<f32>]) -> Vec<f32> {
    use rayon::prelude::*;
    // `collect` keeps its order; the loop inside each task is scrambled.
    m.par_iter()
        .map(|row| {
            let mut s = 0.0f32;
            for x in row.iter() {
                s += *x;
            }
            s
        })
        .collect()
}

#[test]
fn tokens_replay_loops_entered_inside_rayon_tasks() {
    let m: Vec<Vec<f32>> = (0..64)
        .map(|r| data()[r..r + 500 + r % 5].to_vec())
        .collect();
    let report = amplify(&quick().stages(&[Stage::LoopOrder]), || row_sums(&m));
    let stage = &report.stages[0];
    assert!(stage.distinct > 1, "{report}");
    for run in stage.differing() {
        for _ in 0..3 {
            let replay = amplify(&AmplifyConfig::default().seed(run.token.seed), || {
                row_sums(&m)
            });
            assert_eq!(
                replay.stages[0].runs[0].hash, run.hash,
                "token {} replayed other bits",
                run.token
            );
        }
    }
}
