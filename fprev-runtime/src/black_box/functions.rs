//! Plain functions as targets: `FnMut` answered in sequence, `Fn + Sync` in parallel, a
//! panic turned into a [`TargetError`].

use std::panic::{catch_unwind, AssertUnwindSafe};

use rayon::prelude::*;

use super::probe::{neg, MaskGuard, ProbeBatch, ProbeSets};
use super::target_trait::{Target, TargetError};
use crate::float::ProbeFloat;

/// Runs `f`, turning a panic into a [`TargetError`] that carries its message.
pub(crate) fn caught<R>(what: &str, f: impl FnOnce() -> R) -> Result<R, TargetError> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|p| TargetError::new(format!("{what} panicked: {}", panic_message(p))))
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// A `FnMut(&[T]) -> T` as a sequential target; panics become [`TargetError`]s.
///
/// ```
/// use fprev::target::{FnTarget, Target};
/// let mut t = FnTarget(|x: &[f64]| x.iter().sum::<f64>());
/// assert_eq!(t.call(&[1.0, 2.0]).unwrap(), 3.0);
/// ```
pub struct FnTarget<F>(pub F);

impl<T: ProbeFloat, F: FnMut(&[T]) -> T> Target<T> for FnTarget<F> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        let f = &mut self.0;
        caught("the target", || f(x))
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        probe_each(&mut self.0, batch, out)
    }

    fn probe_sets(
        &mut self,
        sets: &ProbeSets<'_, T>,
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        Some(sets_each(&mut self.0, sets, 0..sets.calls(), out))
    }
}

/// Answer a batch with a plain function from one reused buffer, the whole loop under one
/// panic guard (a guard per call would cost a cheap target more than its sum); a panic
/// names the probe being answered, and the masks are restored as it unwinds.
fn probe_each<T: ProbeFloat>(
    f: &mut impl FnMut(&[T]) -> T,
    batch: &ProbeBatch<'_, T>,
    out: &mut [T],
) -> Result<(), TargetError> {
    let mut buf = batch.background.to_vec();
    let masks = (batch.mask, neg(batch.mask));
    let mut k = 0;
    caught("the target", || {
        while k < batch.probes.len() {
            let guard = MaskGuard::set(&mut buf, masks, batch.probes[k]);
            out[k] = f(guard.buf);
            drop(guard);
            k += 1;
        }
    })
    .map_err(|mut e| {
        e.probe = batch.probes.get(k).copied();
        e
    })
}

/// Answer probe sets with a plain function from one reused buffer (inputs `calls`,
/// answers into `out`, one per input).
fn sets_each<T: ProbeFloat>(
    f: &mut impl FnMut(&[T]) -> T,
    sets: &ProbeSets<'_, T>,
    calls: std::ops::Range<usize>,
    out: &mut [T],
) -> Result<(), TargetError> {
    let mut buf = sets.background.to_vec();
    let first = calls.start;
    let mut c = first;
    caught("the target", || {
        while c < calls.end {
            sets.set(c, &mut buf);
            out[c - first] = f(&buf);
            sets.restore(c, &mut buf);
            c += 1;
        }
    })
    .map_err(|mut e| {
        e.probe = sets.probes.get(sets.call(c).start).copied();
        e
    })
}

/// A thread-safe `Fn(&[T]) -> T + Sync` whose probes run in parallel on rayon, one
/// reused buffer per worker. A batch whose work, estimated from its first probe's time,
/// is under [`PARALLEL_MIN_WORK`] runs on the calling thread: waking the pool costs more
/// than such a batch, so a cheap target would run slower in parallel than alone.
///
/// ```
/// use fprev::target::{SyncFnTarget, Target};
/// let mut t = SyncFnTarget(|x: &[f32]| x.iter().sum::<f32>());
/// assert_eq!(t.call(&[1.0, 2.0]).unwrap(), 3.0);
/// ```
pub struct SyncFnTarget<F>(pub F);

impl<T: ProbeFloat, F: Fn(&[T]) -> T + Sync> Target<T> for SyncFnTarget<F> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        let f = &self.0;
        caught("the target", || f(x))
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        let f = &self.0;
        let threads = rayon::current_num_threads().max(1);
        if threads == 1 || batch.probes.len() < 4 {
            return FnTargetRef(f).probe_batch(batch, out);
        }
        // the first probe alone, timed, decides how the rest run
        let (first, rest) = batch.probes.split_at(1);
        let (out_first, out) = out.split_at_mut(1);
        let started = std::time::Instant::now();
        FnTargetRef(f).probe_batch(
            &ProbeBatch {
                probes: first,
                ..*batch
            },
            out_first,
        )?;
        let rest_batch = ProbeBatch {
            probes: rest,
            ..*batch
        };
        let work = u32::try_from(rest.len())
            .ok()
            .and_then(|k| started.elapsed().checked_mul(k));
        if work.is_some_and(|w| w < PARALLEL_MIN_WORK) {
            return FnTargetRef(f).probe_batch(&rest_batch, out);
        }
        let batch = &rest_batch;
        let chunk = batch.probes.len().div_ceil(threads * 4).max(2);
        out.par_chunks_mut(chunk)
            .zip(batch.probes.par_chunks(chunk))
            .try_for_each(|(out, probes)| {
                let sub = ProbeBatch {
                    background: batch.background,
                    probes,
                    mask: batch.mask,
                };
                FnTargetRef(f).probe_batch(&sub, out)
            })
    }

    fn probe_sets(
        &mut self,
        sets: &ProbeSets<'_, T>,
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        let f = &self.0;
        let calls = sets.calls();
        let threads = rayon::current_num_threads().max(1);
        if threads == 1 || calls < 4 {
            return Some(sets_each(&mut &f, sets, 0..calls, out));
        }
        // the first input alone, timed, decides how the rest run (as for probe batches)
        let started = std::time::Instant::now();
        if let Err(e) = sets_each(&mut &f, sets, 0..1, &mut out[..1]) {
            return Some(Err(e));
        }
        let work = u32::try_from(calls - 1)
            .ok()
            .and_then(|k| started.elapsed().checked_mul(k));
        if work.is_some_and(|w| w < PARALLEL_MIN_WORK) {
            return Some(sets_each(&mut &f, sets, 1..calls, &mut out[1..]));
        }
        let chunk = (calls - 1).div_ceil(threads * 4).max(2);
        Some(
            out[1..]
                .par_chunks_mut(chunk)
                .enumerate()
                .try_for_each(|(i, out)| {
                    let start = 1 + i * chunk;
                    sets_each(&mut &f, sets, start..start + out.len(), out)
                }),
        )
    }
}

/// Estimated work below which [`SyncFnTarget`] answers a batch on the calling thread.
pub const PARALLEL_MIN_WORK: std::time::Duration = std::time::Duration::from_micros(500);

/// Sequential adapter over a shared `Fn`, used by each parallel worker.
struct FnTargetRef<'f, F>(&'f F);

impl<T: ProbeFloat, F: Fn(&[T]) -> T> Target<T> for FnTargetRef<'_, F> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        let f = self.0;
        caught("the target", || f(x))
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        probe_each(&mut self.0, batch, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::black_box::Probe;

    #[test]
    fn masks_restored_after_panic() {
        let bg = vec![1.0f32; 6];
        let probes = [Probe { plus: 1, minus: 4 }, Probe { plus: 2, minus: 3 }];
        let batch = ProbeBatch {
            background: &bg,
            probes: &probes,
            mask: 64.0,
        };
        let mut calls = 0;
        let mut t = FnTarget(|x: &[f32]| {
            calls += 1;
            if calls == 2 {
                panic!("boom");
            }
            x.iter().sum::<f32>()
        });
        let mut out = [0.0f32; 2];
        let e = t.probe_batch(&batch, &mut out).unwrap_err();
        assert!(e.message.contains("boom"));
        assert_eq!(e.probe, Some(probes[1]));
    }

    /// A left-to-right sum that takes at least 20 us and notes when it ran on the pool.
    fn slow_sum(x: &[f32], on_pool: &std::sync::atomic::AtomicBool) -> f32 {
        std::thread::sleep(std::time::Duration::from_micros(20));
        if rayon::current_thread_index().is_some() {
            on_pool.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        x.iter().fold(0.0f32, |a, &b| a + b)
    }

    #[test]
    fn parallel_matches_sequential() {
        let bg = vec![1.0f32; 64];
        let probes: Vec<Probe> = (1..64).map(|j| Probe { plus: 0, minus: j }).collect();
        let batch = ProbeBatch {
            background: &bg,
            probes: &probes,
            mask: (1u64 << 40) as f32,
        };
        let on_pool = std::sync::atomic::AtomicBool::new(false);
        let sum = |x: &[f32]| x.iter().fold(0.0f32, |a, &b| a + b);
        // 63 probes of at least 20 us: over PARALLEL_MIN_WORK, so the pool answers them
        let slow = |x: &[f32]| slow_sum(x, &on_pool);
        let mut want = vec![0.0f32; probes.len()];
        FnTarget(sum).probe_batch(&batch, &mut want).unwrap();
        for f in [&sum as &(dyn Fn(&[f32]) -> f32 + Sync), &slow] {
            let mut got = vec![0.0f32; probes.len()];
            SyncFnTarget(f).probe_batch(&batch, &mut got).unwrap();
            assert_eq!(got, want);
        }
        if rayon::current_num_threads() > 1 {
            assert!(
                on_pool.into_inner(),
                "a slow batch ran on the calling thread only"
            );
        }
    }

    #[test]
    fn probe_sets_answer_alike_in_parallel_and_in_sequence() {
        // 40 inputs of two probes each over 160 positions, masks 2^40 and 2^41
        let bg = vec![1.0f32; 160];
        let probes: Vec<Probe> = (0..80)
            .map(|k| Probe {
                plus: 2 * k,
                minus: 2 * k + 1,
            })
            .collect();
        let masks: Vec<f32> = (0..80).map(|k| (1u64 << (40 + k % 2)) as f32).collect();
        let ends: Vec<usize> = (1..=40).map(|c| 2 * c).collect();
        let sets = ProbeSets {
            background: &bg,
            probes: &probes,
            masks: &masks,
            ends: &ends,
        };
        let on_pool = std::sync::atomic::AtomicBool::new(false);
        let sum = |x: &[f32]| x.iter().fold(0.0f32, |a, &b| a + b);
        let slow = |x: &[f32]| slow_sum(x, &on_pool);
        let mut want = vec![0.0f32; 40];
        FnTarget(sum).probe_sets(&sets, &mut want).unwrap().unwrap();
        // a left-to-right sum loses the units before its first mask, so the answers
        // differ between inputs
        assert!(want.iter().any(|&v| v != want[0]));
        for f in [&sum as &(dyn Fn(&[f32]) -> f32 + Sync), &slow] {
            let mut got = vec![0.0f32; 40];
            SyncFnTarget(f)
                .probe_sets(&sets, &mut got)
                .unwrap()
                .unwrap();
            assert_eq!(got, want);
        }
        if rayon::current_num_threads() > 1 {
            assert!(
                on_pool.into_inner(),
                "slow probe sets ran on one thread only"
            );
        }
        // the buffer is restored between inputs: each input alone gives the same answer
        let mut x = Vec::new();
        for (c, &w) in want.iter().enumerate() {
            sets.fill(c, &mut x);
            assert_eq!(sum(&x), w, "input {c}");
        }
    }
}
