//! The exact allreduce across MPI ranks: the same bits whatever the algorithm, the rank
//! count or which rank holds which value, checked against `fprev::exact::sum`, and its
//! cost next to a plain `MPI_Allreduce(MPI_SUM)`.
//!
//! ```text
//! cargo build --release --features mpi --example exact_allreduce
//! mpirun --oversubscribe -np 8 target/release/examples/exact_allreduce check 4096 7 f64 0
//! mpirun --oversubscribe -np 8 target/release/examples/exact_allreduce bench 1048576 5
//! ```
//!
//! `check COUNT SEED DTYPE ROTATION [SPREAD]`: every rank draws its `COUNT` values (rank
//! `r` holds the values of slot `(r + ROTATION) % P`, drawn from `SEED` over
//! 2^-SPREAD..2^SPREAD, default 40), sums them with
//! [`exact_allreduce_sum`] and with `MPI_SUM`, and rank 0 prints one line:
//! `exact <digest> plain <digest> matches-exact-sum <true|false>`, the digests hashing
//! the result bits. Add `--mca coll_tuned_use_dynamic_rules 1 --mca
//! coll_tuned_allreduce_algorithm N` to pin Open MPI's algorithm.
//!
//! `scramble COUNT TOKEN`: process `p` holds the values of slot `p` (seed 7), and both
//! sums run on the world with its ranks permuted from `TOKEN` (a replay token or a
//! number; `none`: the world as it is), as [`fprev::mpi::scrambled`] does. World rank
//! 0 prints `token <token> exact <digest> plain <digest>`: the plain digest changes with
//! the placement, the exact one does not.
//!
//! `bench COUNT REPS`: median seconds of each, f64, on rank 0.

use std::time::Instant;

use fprev::mpi::rsmpi::collective::SystemOperation;
use fprev::mpi::rsmpi::traits::{Communicator, CommunicatorCollectives};
use fprev::mpi::{exact_allreduce_sum, MpiFloat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The values of `slot`: spread over 2^-spread..2^spread with both signs, so that the
/// order of a plain sum changes its bits. Past a spread of about 50 some elements' values
/// no longer share one exact window and take the accumulator-image path.
fn values(seed: u64, slot: u64, count: usize, spread: i32) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(slot);
    (0..count)
        .map(|_| rng.random_range(-1.0..1.0) * 2f64.powi(rng.random_range(-spread..=spread)))
        .collect()
}

/// FNV-1a over the results' bits.
fn digest(bits: impl Iterator<Item = u64>) -> u64 {
    bits.fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn check<T: MpiFloat>(
    world: &impl Communicator,
    count: usize,
    seed: u64,
    rotation: u64,
    spread: i32,
) -> Result<(), Box<dyn std::error::Error>> {
    let ranks = world.size() as u64;
    let slot = (world.rank() as u64 + rotation) % ranks;
    let mine: Vec<T> = values(seed, slot, count, spread)
        .into_iter()
        .map(T::from_f64_round)
        .collect();
    let mut exact = mine.clone();
    exact_allreduce_sum(world, &mut exact)?;
    let mut plain = vec![T::ZERO; count];
    world.all_reduce_into(&mine[..], &mut plain[..], SystemOperation::sum());
    if world.rank() == 0 {
        // every slot's values, element by element, summed by fprev::exact on one process
        let all: Vec<Vec<f64>> = (0..ranks)
            .map(|s| {
                values(seed, s, count, spread)
                    .into_iter()
                    .map(|v| T::from_f64_round(v).to_f64())
                    .collect()
            })
            .collect();
        let matches = (0..count).all(|e| {
            let column: Vec<f64> = all.iter().map(|v| v[e]).collect();
            let expected = if T::FORMAT.precision == 53 {
                fprev::exact::sum(&column)
            } else {
                let narrow: Vec<f32> = column.iter().map(|&v| v as f32).collect();
                f64::from(fprev::exact::sum_f32(&narrow))
            };
            expected.to_bits() == exact[e].to_f64().to_bits()
        });
        println!(
            "exact {:016x} plain {:016x} matches-exact-sum {matches}",
            digest(exact.iter().map(|v| v.to_f64().to_bits())),
            digest(plain.iter().map(|v| v.to_f64().to_bits())),
        );
    }
    Ok(())
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn bench(
    world: &impl Communicator,
    count: usize,
    reps: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let mine = values(1, world.rank() as u64, count, 40);
    let (mut exact_times, mut plain_times) = (Vec::new(), Vec::new());
    for _ in 0..reps.max(1) {
        let mut exact = mine.clone();
        world.barrier();
        let t = Instant::now();
        exact_allreduce_sum(world, &mut exact)?;
        world.barrier();
        exact_times.push(t.elapsed().as_secs_f64());
        let mut plain = vec![0.0; count];
        world.barrier();
        let t = Instant::now();
        world.all_reduce_into(&mine[..], &mut plain[..], SystemOperation::sum());
        world.barrier();
        plain_times.push(t.elapsed().as_secs_f64());
    }
    if world.rank() == 0 {
        let (e, p) = (median(exact_times), median(plain_times));
        println!(
            "ranks {} count {count}: exact_allreduce_sum {e:.6} s, MPI_Allreduce(MPI_SUM) {p:.6} s, ratio {:.1}",
            world.size(),
            e / p
        );
    }
    Ok(())
}

fn scramble(
    world: &impl Communicator,
    count: usize,
    token: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let mine = values(7, world.rank() as u64, count, 40);
    let mut exact = mine.clone();
    let mut plain = vec![0.0f64; count];
    let shown = if token == "none" {
        exact_allreduce_sum(world, &mut exact)?;
        world.all_reduce_into(&mine[..], &mut plain[..], SystemOperation::sum());
        "none".to_string()
    } else {
        let seed = token.parse::<fprev::ReplayToken>()?.seed;
        let s = fprev::mpi::scrambled(world, seed);
        exact_allreduce_sum(s.comm(), &mut exact)?;
        s.comm()
            .all_reduce_into(&mine[..], &mut plain[..], SystemOperation::sum());
        s.token().to_string()
    };
    if world.rank() == 0 {
        println!(
            "token {shown} exact {:016x} plain {:016x}",
            digest(exact.iter().map(|v| v.to_bits())),
            digest(plain.iter().map(|v| v.to_bits())),
        );
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |k: usize, default: &str| args.get(k).cloned().unwrap_or_else(|| default.into());
    let universe = fprev::mpi::rsmpi::initialize().ok_or("MPI is already initialized")?;
    let world = universe.world();
    let count: usize = arg(1, "4096").parse()?;
    match arg(0, "check").as_str() {
        "check" => {
            let seed: u64 = arg(2, "7").parse()?;
            let rotation: u64 = arg(4, "0").parse()?;
            let spread: i32 = arg(5, "40").parse()?;
            match arg(3, "f64").as_str() {
                "f32" => check::<f32>(&world, count, seed, rotation, spread),
                _ => check::<f64>(&world, count, seed, rotation, spread),
            }
        }
        "bench" => bench(&world, count, arg(2, "5").parse()?),
        "scramble" => scramble(&world, count, &arg(2, "none")),
        other => Err(format!("{other}: check, scramble or bench").into()),
    }
}
