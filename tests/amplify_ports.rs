//! The ports of Defour's programs behave as in his Table II: the stencil never moves,
//! loop-order scrambling moves the accumulations, and tokens replay parallel programs.

#![cfg(not(feature = "off"))]

#[path = "../examples/ports/mod.rs"]
mod ports;

use fprev::amplify::{amplify, AmplifyConfig, Stage};

fn quick() -> AmplifyConfig {
    AmplifyConfig::default().runs(4).max_threads(3).seed(0xab1e)
}

#[test]
fn stencil_is_reproducible_under_every_stage() {
    let n = 12;
    let grid = ports::inputs(n * n * n, 12);
    fprev::assert_reproducible!(&quick(), || ports::stencil(&grid, n));
}

#[test]
fn accumulating_ports_move_under_loop_order_and_replay() {
    let m = ports::csr(300, 9);
    let x = ports::inputs(300, 5);
    let (a, b) = (ports::inputs(24 * 24, 3), ports::inputs(24 * 24, 4));
    let cfg = quick().stages(&[Stage::LoopOrder]);
    let spmv = amplify(&cfg, || ports::spmv(&m, &x));
    let sgemm = amplify(&cfg, || ports::sgemm(&a, &b, 24));
    for report in [&spmv, &sgemm] {
        assert!(report.stages[0].differing().count() > 0, "{report}");
    }
    // SpMV's scrambled loops run inside rayon tasks; its tokens still replay the bits.
    let run = spmv.stages[0].differing().next().unwrap();
    let replay = amplify(&AmplifyConfig::default().seed(run.token.seed), || {
        ports::spmv(&m, &x)
    });
    assert_eq!(replay.stages[0].runs[0].hash, run.hash, "{}", run.token);
}

#[test]
fn histogram_moves_when_blocks_are_scrambled() {
    let points = ports::inputs(1 << 12, 2);
    let report = amplify(&quick().stages(&[Stage::Schedule]), || {
        ports::histogram(&points, 64)
    });
    assert!(report.stages[0].differing().count() > 0, "{report}");
}
