//! One data set summed by 1, 2, 4 and 8 worker processes: each worker gets its part
//! on stdin, and answers its part's plain `f64` sum and its exact accumulator's state
//! (`Accumulator::to_bytes`) on stdout. The plain total depends on the partition; the
//! exact one, merged from the states in whatever order the workers finish, does not.
//!
//! ```text
//! cargo run --release --example exact_partitions [VALUES]
//! ```

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use fprev::exact::{self, Accumulator};
use rand::{Rng, SeedableRng};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("worker") => worker(),
        first => {
            let n = match first {
                Some(v) => v
                    .parse()
                    .map_err(|_| format!("VALUES must be a count, not {v:?}"))?,
                None => 1_000_000,
            };
            coordinator(n)
        }
    }
}

/// Reads `f64`s (little-endian) until end of input; writes the plain sum, then the state.
fn worker() -> Result<(), Box<dyn std::error::Error>> {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input)?;
    let part: Vec<f64> = input
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    let mut acc = Accumulator::new();
    acc.add_slice(&part);
    let plain: f64 = part.iter().sum();
    let mut out = std::io::stdout().lock();
    out.write_all(&plain.to_le_bytes())?;
    out.write_all(&acc.to_bytes())?;
    Ok(())
}

/// One worker's answer: its index, its plain sum and its state's bytes.
type Answer = (usize, f64, Vec<u8>);

fn coordinator(n: usize) -> Result<(), Box<dyn std::error::Error>> {
    // values of both signs over 40 binades: the plain sum's rounding depends on grouping
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let data: Vec<f64> = (0..n)
        .map(|_| rng.random_range(-1.0..1.0) * 2f64.powi(rng.random_range(-20..20)))
        .collect();
    let me = std::env::current_exe()?;
    println!("{n} values, summed by worker processes (each sends its state's bytes):");
    println!(
        "{:>9}  {:>24}  {:>24}  {:>12}",
        "processes", "plain f64 sum", "exact sum", "state bytes"
    );
    let mut exact_results = Vec::new();
    for workers in [1, 2, 4, 8] {
        let (tx, rx) = mpsc::channel::<std::io::Result<Answer>>();
        let chunk = n.div_ceil(workers).max(1);
        let mut threads = Vec::new();
        for (w, part) in data.chunks(chunk).enumerate() {
            let mut child = Command::new(&me)
                .arg("worker")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()?;
            let bytes: Vec<u8> = part.iter().flat_map(|x| x.to_le_bytes()).collect();
            let tx = tx.clone();
            threads.push(std::thread::spawn(move || {
                let answer = (|| {
                    child.stdin.take().expect("piped").write_all(&bytes)?;
                    let mut out = Vec::new();
                    child.stdout.take().expect("piped").read_to_end(&mut out)?;
                    if !child.wait()?.success() || out.len() < 8 {
                        return Err(std::io::Error::other(format!("worker {w} failed")));
                    }
                    let plain = f64::from_le_bytes(out[..8].try_into().expect("8 bytes"));
                    Ok((w, plain, out[8..].to_vec()))
                })();
                let _ = tx.send(answer);
            }));
        }
        drop(tx);
        // exact states merge as they arrive; plain partial sums are added by worker index
        let mut total = Accumulator::new();
        let mut plain = Vec::new();
        let mut largest_state = 0;
        for answer in rx {
            let (w, sum, state) = answer?;
            total.merge_bytes(&state)?;
            largest_state = largest_state.max(state.len());
            plain.push((w, sum));
        }
        for t in threads {
            t.join().map_err(|_| "a worker thread panicked")?;
        }
        plain.sort_by_key(|&(w, _)| w);
        let plain_total: f64 = plain.iter().map(|&(_, s)| s).sum();
        println!(
            "{workers:>9}  {plain_total:>24.17e}  {:>24.17e}  {largest_state:>12}",
            total.finish()
        );
        exact_results.push(total.finish());
    }
    let whole = exact::sum(&data);
    let all_same = exact_results.iter().all(|r| r.to_bits() == whole.to_bits());
    println!(
        "exact sums equal exact::sum of the whole, bit for bit: {}",
        if all_same { "yes" } else { "NO" }
    );
    if !all_same {
        return Err("the exact sums differ".into());
    }
    Ok(())
}
