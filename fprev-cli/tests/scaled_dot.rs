//! `fprev reveal --exec ... --op scaled-dot`: block-scaled dots (NVFP4, MXFP4, MXFP8)
//! revealed through the independent responder `tests/python/scaled_dot.py` (plain Python
//! fractions, none of fprev's code), the tree and the arithmetic against what the
//! responder was told; and the options' typed refusals.

mod common;

use common::{fprev, stderr, stdout};
use fprev::float::ElementType;
use fprev::fused::{AccumulatorJoin, BlockScaledFma, ScaledAlignment};

/// The responder's flags for a model.
fn flags(m: &BlockScaledFma) -> String {
    let fmt = match m.element {
        ElementType::E4M3 => "e4m3",
        ElementType::E5M2 => "e5m2",
        e => e.name(),
    };
    let align = match m.alignment {
        ScaledAlignment::TermExponent => "term",
        ScaledAlignment::ScaleExponents => "scales",
        _ => "operands",
    };
    format!(
        "--fmt {fmt} --scale {} --block {} --k {} --group {} --align {align} --frac {} --out {} --c {}",
        m.scale.name(),
        m.block,
        m.k,
        m.group,
        m.frac,
        if m.frac_out.is_some() { "trunc" } else { "rn" },
        if m.accumulator == AccumulatorJoin::Aligned {
            "aligned"
        } else {
            "late"
        }
    )
}

fn reveal(m: &BlockScaledFma, k: usize, format: &str) -> std::process::Output {
    reveal_as(m, k, format, "text")
}

/// [`reveal`] with `protocol` (`text` or `binary`; the responder told which).
fn reveal_as(m: &BlockScaledFma, k: usize, format: &str, protocol: &str) -> std::process::Output {
    let binary = if protocol == "binary" {
        format!(" --binary {k}")
    } else {
        String::new()
    };
    let exec = format!("python3 tests/python/scaled_dot.py {}{binary}", flags(m));
    let (k, block) = (k.to_string(), m.block.to_string());
    fprev(&[
        "reveal",
        "--protocol",
        protocol,
        "--exec",
        &exec,
        "--op",
        "scaled-dot",
        "--n",
        &k,
        "--dtype",
        m.element.name(),
        "--block",
        &block,
        "--scale-dtype",
        m.scale.name(),
        "--acc-dtype",
        "f32",
        "--format",
        format,
    ])
}

/// The `(lo-hi consistent)` range on the summary's alignment line.
fn frac_range(summary: &str) -> (u32, u32) {
    let line = summary
        .lines()
        .find(|l| l.starts_with("alignment:"))
        .expect("an alignment line");
    let inside = line.split('(').nth(1).expect("a range");
    let range = inside.split(' ').next().expect("lo-hi");
    let (lo, hi) = range.split_once('-').expect("lo-hi");
    (lo.parse().expect("lo"), hi.parse().expect("hi"))
}

/// NVFP4 (blocks of 16, UE4M3), MXFP4 (32, UE8M0) and MXFP8 (E4M3 and E5M2, 32, UE8M0)
/// at one instruction's k and 2 to 4 chained: the model's block tree, its group size,
/// and an alignment range that holds its width.
#[test]
#[ignore = "needs python3 (see README)"]
fn independent_block_scaled_models_reveal_through_exec() {
    let e5m2 = BlockScaledFma {
        element: ElementType::E5M2,
        ..BlockScaledFma::B200_MXF8
    };
    let cases = [
        (BlockScaledFma::B200_NVFP4, 64),
        (BlockScaledFma::B200_NVFP4, 256),
        (BlockScaledFma::B200_MXF4, 64),
        (BlockScaledFma::B200_MXF4, 192),
        (BlockScaledFma::B200_MXF8, 32),
        (BlockScaledFma::B200_MXF8, 128),
        (e5m2, 64),
    ];
    for (m, k) in cases {
        let started = std::time::Instant::now();
        let o = reveal(&m, k, "text");
        assert!(
            o.status.success(),
            "{} k = {k}: {}",
            m.describe(),
            stderr(&o)
        );
        let blocks = k / m.block;
        assert_eq!(
            stdout(&o).trim(),
            m.tree(blocks).to_string(),
            "{} k = {k}",
            m.describe()
        );
        let o = reveal(&m, k, "summary");
        assert!(
            o.status.success(),
            "{} k = {k}: {}",
            m.describe(),
            stderr(&o)
        );
        let out = stdout(&o);
        let (lo, hi) = frac_range(&out);
        assert!(
            lo <= m.frac && m.frac <= hi,
            "{} k = {k}: {out}",
            m.describe()
        );
        let groups: Vec<usize> = out
            .lines()
            .find_map(|l| l.strip_prefix("products summed exactly before alignment: groups of "))
            .expect("a groups line")
            .split(" (")
            .next()
            .expect("the sizes")
            .split(", ")
            .map(|g| g.parse().expect("a group size"))
            .collect();
        assert!(groups.contains(&m.group), "{} k = {k}: {out}", m.describe());
        println!(
            "{} k = {k}: {:.1?}\n{out}{}",
            m.describe(),
            started.elapsed(),
            stderr(&o)
        );
    }
}

#[test]
fn scaled_dot_options_are_checked_before_anything_runs() {
    let base = [
        "reveal",
        "--exec",
        "cat",
        "--op",
        "scaled-dot",
        "--n",
        "64",
        "--dtype",
        "e2m1",
    ];
    let o = fprev(&[&base[..], &["--scale-dtype", "ue4m3"]].concat());
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--block"), "{}", stderr(&o));
    let o = fprev(&[&base[..], &["--block", "16"]].concat());
    assert!(stderr(&o).contains("--scale-dtype"), "{}", stderr(&o));
    let o = fprev(&[&base[..], &["--block", "24", "--scale-dtype", "ue4m3"]].concat());
    assert!(stderr(&o).contains("multiple"), "{}", stderr(&o));
    let o = fprev(&[&base[..], &["--block", "16", "--scale-dtype", "e4m3"]].concat());
    assert!(stderr(&o).contains("ue8m0 or ue4m3"), "{}", stderr(&o));
    // the binary protocol is spoken (below); the delta ones are not
    let o = fprev(
        &[
            &base[..],
            &[
                "--block",
                "16",
                "--scale-dtype",
                "ue4m3",
                "--protocol",
                "delta",
            ],
        ]
        .concat(),
    );
    assert!(
        stderr(&o).contains("text or the binary protocol"),
        "{}",
        stderr(&o)
    );
}

/// The binary protocol (one code byte per value, 4 bytes of f32 back) reveals what the
/// text protocol does: NVFP4, MXFP4 and both MXFP8 element types.
#[test]
#[ignore = "needs python3 (see README)"]
fn the_binary_protocol_reveals_what_the_text_protocol_does() {
    let e5m2 = BlockScaledFma {
        element: ElementType::E5M2,
        ..BlockScaledFma::B200_MXF8
    };
    for (m, k) in [
        (BlockScaledFma::B200_NVFP4, 64),
        (BlockScaledFma::B200_MXF4, 64),
        (BlockScaledFma::B200_MXF8, 64),
        (e5m2, 64),
    ] {
        let text = reveal_as(&m, k, "text", "text");
        let binary = reveal_as(&m, k, "text", "binary");
        assert!(
            binary.status.success(),
            "{} k = {k}: {}",
            m.describe(),
            stderr(&binary)
        );
        assert_eq!(stdout(&binary), stdout(&text), "{} k = {k}", m.describe());
        assert_eq!(
            stdout(&binary).trim(),
            m.tree(k / m.block).to_string(),
            "{} k = {k}",
            m.describe()
        );
    }
}
