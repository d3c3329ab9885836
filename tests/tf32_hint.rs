//! A Tensor Core that reads f32 inputs as TF32 (their low 13 bits dropped), revealed
//! with f32 values: the refusal names the cause and the fix (`--dtype tf32`), where a
//! plain unexplained adder gets none.

use fprev::float::{Tf32, Tf32Rounding};
use fprev::fused::BlockFma;
use fprev::RevealError;

fn tf32_sum(model: BlockFma) -> impl Fn(&[f32]) -> f32 {
    move |x: &[f32]| {
        let cut: Vec<f32> = x
            .iter()
            .map(|v| Tf32::from_f32(*v, Tf32Rounding::TowardZero).to_f32())
            .collect();
        model.sum(&cut)
    }
}

#[test]
fn f32_answers_explained_only_by_tf32_operands_say_so() {
    for model in [
        BlockFma::A100_TF32,
        BlockFma::H100_TF32,
        BlockFma::B200_TF32,
    ] {
        let err = fprev::reveal(32, tf32_sum(model)).expect_err("f32 models cannot explain it");
        assert!(
            matches!(
                err,
                RevealError::FusedUnverified {
                    reads_tf32: true,
                    ..
                }
            ),
            "{model:?}: {err}"
        );
        let text = err.to_string();
        assert!(
            text.contains("the target reads TF32 operands: try `--dtype tf32`"),
            "{text}"
        );
    }
}

#[test]
fn an_adder_no_model_explains_gets_no_tf32_hint() {
    // the H100 adder with each result nudged by one unit in the last place: no model,
    // with or without a TF32 cut, reproduces it
    let model = BlockFma::H100;
    let odd = move |x: &[f32]| {
        let s = model.sum(x);
        if s != 0.0 && s.is_finite() {
            f32::from_bits(s.to_bits() ^ 1)
        } else {
            s
        }
    };
    match fprev::reveal(32, odd) {
        Err(e @ RevealError::FusedUnverified { .. }) => {
            assert!(!e.to_string().contains("TF32"), "{e}");
            assert!(matches!(
                e,
                RevealError::FusedUnverified {
                    reads_tf32: false,
                    ..
                }
            ));
        }
        Err(_) => {} // refused earlier, another typed error: no hint either way
        Ok(t) => panic!("a nudged adder was answered with {t}"),
    }
}
