//! fprev's Tensor Core presets against D = A*B + C measured on real GPUs: the test vectors
//! of Khattak and Mikaitis' MATLAB toolbox ("Accurate Models of NVIDIA Tensor Cores",
//! arXiv:2512.07004; github.com/north-numerical-computing/MATLAB-tensor-core,
//! `model_validation/`, BSD-2-Clause, see tests/data/toolbox/LICENSE), ported by
//! `scripts/toolbox_vectors.py`. Every row of every (GPU, input format, output format)
//! case is computed with the preset that models that GPU and compared bit for bit.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use fprev::float::{ProbeFloat, Tf32, F8E4M3, F8E5M2};
use fprev::fused::BlockFma;
use fprev::half::{bf16, f16};

/// One file of vectors: which GPU measured it, in which formats.
#[derive(Clone, Copy, Debug)]
struct VectorFile {
    gpu: &'static str,
    input: &'static str,
    output: &'static str,
}

impl VectorFile {
    fn file(&self) -> String {
        format!("{}_{}_{}.txt", self.gpu, self.input, self.output).to_lowercase()
    }
}

const GPUS: [&str; 8] = ["V100", "A100", "A2", "Ada", "L40S", "H100", "H200", "B200"];

/// Every case the toolbox measured (the formats each GPU's Tensor Cores take; f16 results
/// where it wrote them).
fn all_cases() -> Vec<VectorFile> {
    let mut v = Vec::new();
    for gpu in GPUS {
        let inputs: &[&str] = match gpu {
            "V100" => &["fp16"],
            "A100" | "A2" => &["fp16", "bf16", "tf32"],
            _ => &["fp16", "bf16", "tf32", "e5m2", "e4m3"],
        };
        for &input in inputs {
            let f16_out = match input {
                "fp16" => true,
                // L40S's FP8 runs wrote no f16 results
                "e5m2" | "e4m3" => gpu != "L40S",
                _ => false,
            };
            v.push(VectorFile {
                gpu,
                input,
                output: "fp32",
            });
            if f16_out {
                v.push(VectorFile {
                    gpu,
                    input,
                    output: "fp16",
                });
            }
        }
    }
    v
}

/// The preset that models `case`'s GPU, input and output format. GPUs of one architecture
/// share a preset: A2 is an A100 (the toolbox's `A2TC.m` calls `A100TC.m`), L40S an Ada
/// (`L40STC.m` and `AdaTC.m` set the same parameters), H200 an H100 (`H200TC.m` calls
/// `H100TC.m`); Ada's fp16, bf16 and tf32 units are A100's (`AdaTC.m`: 8 products, 24
/// bits, 4 for tf32, as `A100TC.m`).
fn preset(case: VectorFile) -> &'static str {
    let arch = match case.gpu {
        "A2" | "Ada" | "L40S" => "A100",
        "H200" => "H100",
        g => g,
    };
    let ada = matches!(case.gpu, "Ada" | "L40S");
    let f16_out = case.output == "fp16";
    match (arch, case.input, f16_out) {
        ("V100", _, false) => "v100",
        ("V100", _, true) => "v100-f16",
        ("A100", "fp16" | "bf16", false) => "a100",
        ("A100", "fp16", true) => "a100-f16",
        ("A100", "tf32", _) => "a100-tf32",
        ("A100", _, false) if ada => "ada-fp8",
        ("A100", _, true) if ada => "ada-fp8-f16",
        ("H100", "fp16" | "bf16", false) => "h100",
        ("H100", "fp16", true) => "h100-f16",
        ("H100", "tf32", _) => "h100-tf32",
        ("H100", _, false) => "h100-fp8",
        ("H100", _, true) => "hopper-fp8-f16",
        ("B200", "fp16" | "bf16", false) => "b200",
        ("B200", "fp16", true) => "b200-f16",
        ("B200", "tf32", _) => "b200-tf32",
        ("B200", _, false) => "b200-fp8",
        ("B200", _, true) => "hopper-fp8-f16",
        _ => unreachable!("no preset for {case:?}"),
    }
}

/// What one case came to.
struct VectorOutcome {
    rows: usize,
    mismatches: usize,
    /// The first few mismatches, described.
    first: String,
}

fn hex_codes(s: &str, width: usize) -> Vec<u32> {
    assert_eq!(s.len() % width, 0, "{s}: not {width}-digit codes");
    (0..s.len() / width)
        .map(|i| u32::from_str_radix(&s[i * width..(i + 1) * width], 16).expect("hex code"))
        .collect()
}

/// Every row of `text`: the inputs decoded by `input`, `c` (an f32) by `acc`, the GPU's
/// `d` compared with `model.dot_add` bit for bit.
fn run<I: ProbeFloat, T: ProbeFloat>(
    case: VectorFile,
    model: BlockFma,
    text: &str,
    width: usize,
    input: fn(u32) -> I,
    acc: impl Fn(f32) -> T,
) -> VectorOutcome {
    let mut out = VectorOutcome {
        rows: 0,
        mismatches: 0,
        first: String::new(),
    };
    for (line_no, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 4, "{case:?} line {}: {line}", line_no + 1);
        let a: Vec<I> = hex_codes(f[0], width).into_iter().map(input).collect();
        let b: Vec<I> = hex_codes(f[1], width).into_iter().map(input).collect();
        let c32 = f32::from_bits(u32::from_str_radix(f[2], 16).expect("c bits"));
        let want = u64::from_str_radix(f[3], 16).expect("d bits");
        let c = acc(c32);
        let got: T = if model == BlockFma::HOPPER_FP8_F16 {
            model.mma_k32_f16_dot_add(&a, &b, c)
        } else {
            model.dot_add(&a, &b, c)
        };
        let same = got.to_bits_u64() == want
            || (got.to_f64().is_nan() && T::from_bits_u64(want).to_f64().is_nan());
        if !same {
            out.mismatches += 1;
            if out.mismatches <= 3 {
                let show = |v: &[I]| -> Vec<f64> { v.iter().map(|x| x.to_f64()).collect() };
                let _ = writeln!(
                    out.first,
                    "  {} {} -> {} row {} (file line {}): a = {:?}, b = {:?}, c = {:e} \
                     (as used: {:e}); expected {:e} ({want:x}), got {:e} ({:x})",
                    case.gpu,
                    case.input,
                    case.output,
                    out.rows,
                    line_no + 1,
                    show(&a),
                    show(&b),
                    c32,
                    c.to_f64(),
                    T::from_bits_u64(want).to_f64(),
                    got.to_f64(),
                    got.to_bits_u64(),
                );
            }
        }
        out.rows += 1;
    }
    out
}

/// `case` from the file in `dir`.
fn check_case(dir: &Path, case: VectorFile) -> VectorOutcome {
    let path = dir.join(case.file());
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/toolbox_vectors.py)", path.display()));
    let model = BlockFma::preset(preset(case))
        .unwrap_or_else(|| panic!("{case:?}: no preset {}", preset(case)));
    // H100 and H200 FP8 ran as `wgmma`, D = A B + D with D zero: no C (the toolbox's
    // Validate_TC_models.m reads no c for them)
    let zero_c = matches!(case.gpu, "H100" | "H200")
        && matches!(case.input, "e4m3" | "e5m2")
        && case.output == "fp32";
    let c32 = move |c: f32| if zero_c { 0.0 } else { c };
    macro_rules! with_output {
        ($i:ty, $w:expr, $dec:expr) => {
            if case.output == "fp16" {
                // the CUDA harness converts c with __float2half (to nearest)
                run::<$i, f16>(case, model, &text, $w, $dec, move |c| f16::from_f32(c32(c)))
            } else {
                run::<$i, f32>(case, model, &text, $w, $dec, c32)
            }
        };
    }
    match case.input {
        "fp16" => with_output!(f16, 4, |x| f16::from_bits(x as u16)),
        "bf16" => with_output!(bf16, 4, |x| bf16::from_bits(x as u16)),
        "tf32" => with_output!(Tf32, 5, |x| Tf32::from_bits(x << 13)),
        "e4m3" => with_output!(F8E4M3, 2, |x| F8E4M3::from_bits_u64(u64::from(x))),
        "e5m2" => with_output!(F8E5M2, 2, |x| F8E5M2::from_bits_u64(u64::from(x))),
        other => unreachable!("input format {other}"),
    }
}

/// Every case in `dir`, each with exactly `rows` rows: a table of the outcome, and a
/// panic naming every case with a row that differs.
fn check_all(dir: &Path, rows: usize) {
    let mut table = String::new();
    let mut failures = String::new();
    let mut total = 0;
    for case in all_cases() {
        let o = check_case(dir, case);
        assert_eq!(o.rows, rows, "{case:?}: rows");
        total += o.rows;
        let _ = writeln!(
            table,
            "{:5} {:5} -> {:5} {:13} {:5} rows, {} mismatches",
            case.gpu,
            case.input,
            case.output,
            preset(case),
            o.rows,
            o.mismatches
        );
        if o.mismatches != 0 {
            let _ = writeln!(
                failures,
                "{} {} -> {}: {} of {} rows differ from the GPU\n{}",
                case.gpu, case.input, case.output, o.mismatches, o.rows, o.first
            );
        }
    }
    eprintln!("{table}{total} rows");
    assert!(failures.is_empty(), "{failures}");
}

/// The first 500 rows of every case, committed under tests/data/toolbox.
#[test]
fn presets_match_the_toolbox_hardware_vectors_bit_for_bit() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/toolbox");
    check_all(&dir, 500);
}

/// All 5000 rows of every case, from the folder `FPREV_TOOLBOX_DIR` names.
#[test]
#[ignore = "needs the full toolbox vectors: scripts/toolbox_vectors.py --all DIR, then FPREV_TOOLBOX_DIR=DIR"]
fn presets_match_all_5000_toolbox_rows_bit_for_bit() {
    let dir = std::env::var_os("FPREV_TOOLBOX_DIR")
        .expect("FPREV_TOOLBOX_DIR: the folder scripts/toolbox_vectors.py --all wrote");
    check_all(Path::new(&dir), 5000);
}
