//! `FPREV_*` variables reach both configurations; a bad value falls back to the default.
//! One test per binary: it sets process-wide variables.

use fprev::amplify::{AmplifyConfig, Stage};
use fprev::scramble::{ReplayToken, ScrambleConfig, Shuffle};

#[test]
fn environment_overrides_and_bad_values() {
    let token: ReplayToken = "v3-4000000000000abc".parse().unwrap();
    std::env::set_var("FPREV_SEED", token.to_string());
    std::env::set_var("FPREV_SCRAMBLE", "sattolo");
    std::env::set_var("FPREV_RUNS", "7");
    std::env::set_var("FPREV_STAGES", "repeat,loops");
    std::env::set_var("FPREV_THREADS", "zero");
    let s = ScrambleConfig::from_env();
    assert_eq!((s.shuffle, s.seed), (Some(Shuffle::Sattolo), token.seed));
    let a = AmplifyConfig::from_env();
    assert_eq!(a.runs, 7);
    assert_eq!(a.stages, vec![Stage::Repeat, Stage::LoopOrder]);
    assert_eq!(a.shuffle, Shuffle::Sattolo);
    assert_eq!(a.seed, Some(token.seed));
    assert_eq!(
        a.max_threads,
        AmplifyConfig::default().max_threads,
        "bad value keeps the default"
    );
    std::env::set_var("FPREV_SCRAMBLE", "sometimes");
    assert_eq!(
        ScrambleConfig::from_env().shuffle,
        None,
        "bad value keeps the default (off)"
    );
    // A seed that is not spelled exactly is refused (and reported), not read as another
    // seed: an extra digit, a sign or a space.
    let v = fprev::scramble::ALGORITHM_VERSION;
    for bad in [
        format!("v{v}-0000000000000abc0"),
        "+42".to_string(),
        " 42".to_string(),
        "42 ".to_string(),
    ] {
        std::env::set_var("FPREV_SEED", &bad);
        assert_eq!(AmplifyConfig::from_env().seed, None, "{bad:?}");
    }
}
