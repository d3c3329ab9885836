//! Targets and runs of fprev's NVRTC kernels: the shared-memory tree and atomicAdd
//! reductions (one probe per grid row), the scrambled atomic amplifier, and the prelude
//! self-check.

use std::collections::HashSet;

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use super::{check_len, drv, fill_rows, guarded, DeviceContext, Kernels, MAX_BATCH_ELEMS};
use crate::black_box::ProbeBatch;
use crate::cuda::{
    AtomicKernel, CudaError, GpuAmplifyConfig, LaunchPlan, LaunchScramble, ReductionConfig,
    ReductionKernel as Kind, Variability,
};

pub(crate) struct ReductionRunner {
    dev: DeviceContext,
    k: Kernels,
    cfg: ReductionConfig,
    rows: usize,
    x: CudaSlice<f32>,
    partial: CudaSlice<f32>,
    out: CudaSlice<f32>,
    perm: CudaSlice<u32>,
    host: Vec<f32>,
    host_out: Vec<f32>,
    scramble: Option<LaunchScramble>,
    launches: u64,
}

/// Grid and block of a 1-D launch over `rows` probes.
fn launch_config(blocks: usize, rows: usize, threads: usize, shared: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks as u32, rows as u32, 1),
        block_dim: (threads as u32, 1, 1),
        shared_mem_bytes: shared as u32,
    }
}

impl ReductionRunner {
    pub fn new(dev: &DeviceContext, cfg: ReductionConfig) -> Result<ReductionRunner, CudaError> {
        let rows = cfg.rows.min((MAX_BATCH_ELEMS / cfg.n).max(1));
        let k = dev.kernels()?;
        let stream = dev.stream();
        guarded("allocating the reduction buffers", || {
            Ok(ReductionRunner {
                x: stream
                    .alloc_zeros::<f32>(rows * cfg.n)
                    .map_err(drv("allocating x"))?,
                partial: stream
                    .alloc_zeros::<f32>(rows * cfg.blocks)
                    .map_err(drv("allocating partials"))?,
                out: stream
                    .alloc_zeros::<f32>(rows)
                    .map_err(drv("allocating out"))?,
                perm: stream
                    .alloc_zeros::<u32>(cfg.blocks)
                    .map_err(drv("allocating the block permutation"))?,
                host: vec![0.0; rows * cfg.n],
                host_out: vec![0.0; rows],
                scramble: cfg.scramble.map(LaunchScramble::new),
                launches: 0,
                dev: dev.clone(),
                k,
                cfg,
                rows,
            })
        })
    }

    pub fn launches(&self) -> u64 {
        self.launches
    }

    /// One launch over the first `used` rows of `self.host`.
    fn run(&mut self, used: usize) -> Result<(), CudaError> {
        guarded("running the reduction", || {
            let stream = self.dev.stream();
            let ReductionConfig {
                n,
                kind,
                threads,
                blocks,
                ..
            } = self.cfg;
            let plan = match &mut self.scramble {
                Some(s) => s.next_launch(blocks),
                None => LaunchPlan::identity(blocks),
            };
            self.launches += 1;
            stream
                .memcpy_htod(&self.host[..used * n], &mut self.x)
                .map_err(drv("uploading x"))?;
            stream
                .memcpy_htod(&plan.block_perm, &mut self.perm)
                .map_err(drv("uploading the block permutation"))?;
            let n32 = n as u32;
            match kind {
                Kind::SharedTree => {
                    let parts = blocks as u32;
                    let mut b = stream.launch_builder(&self.k.tree_partial);
                    b.arg(&self.x)
                        .arg(&n32)
                        .arg(&mut self.partial)
                        .arg(&self.perm)
                        .arg(&plan.thread_seed)
                        .arg(&plan.flags);
                    // SAFETY: argument types and buffer sizes match the kernel.
                    unsafe { b.launch(launch_config(blocks, used, threads, threads * 4)) }
                        .map_err(drv("launching fprev_tree_partial"))?;
                    let mut b = stream.launch_builder(&self.k.tree_final);
                    b.arg(&self.partial).arg(&parts).arg(&mut self.out);
                    // SAFETY: as above.
                    unsafe { b.launch(launch_config(used, 1, threads, threads * 4)) }
                        .map_err(drv("launching fprev_tree_final"))?;
                }
                _ => {
                    stream
                        .memset_zeros(&mut self.out)
                        .map_err(drv("zeroing the result"))?;
                    let (null, bins) = (0u64, 1u32);
                    let mut b = stream.launch_builder(&self.k.global_sum);
                    b.arg(&self.x)
                        .arg(&null)
                        .arg(&n32)
                        .arg(&bins)
                        .arg(&mut self.out)
                        .arg(&self.perm)
                        .arg(&plan.thread_seed)
                        .arg(&plan.flags);
                    // SAFETY: argument types and buffer sizes match the kernel.
                    unsafe { b.launch(launch_config(blocks, used, threads, 0)) }
                        .map_err(drv("launching fprev_global_sum"))?;
                }
            }
            stream
                .memcpy_dtoh(&self.out.slice(0..used), &mut self.host_out[..used])
                .map_err(drv("downloading the sums"))?;
            stream
                .synchronize()
                .map_err(drv("waiting for the reduction"))
        })
    }

    pub fn call(&mut self, x: &[f32]) -> Result<f32, CudaError> {
        let n = self.cfg.n;
        check_len(n, x.len())?;
        self.host[..n].copy_from_slice(x);
        self.run(1)?;
        Ok(self.host_out[0])
    }

    pub fn probe_batch(
        &mut self,
        batch: &ProbeBatch<'_, f32>,
        out: &mut [f32],
    ) -> Result<(), CudaError> {
        let n = self.cfg.n;
        check_len(n, batch.background.len())?;
        for (probes, out) in batch
            .probes
            .chunks(self.rows)
            .zip(out.chunks_mut(self.rows))
        {
            fill_rows(&mut self.host[..probes.len() * n], n, batch, probes);
            self.run(probes.len())?;
            out.copy_from_slice(&self.host_out[..probes.len()]);
        }
        Ok(())
    }
}

/// The amplifier's seeded input: `n` values and, for each, the bin it is added to; the
/// number of bins. Checks the configuration first.
fn amplifier_inputs(cfg: &GpuAmplifyConfig) -> Result<(usize, Vec<f32>, Vec<u32>), CudaError> {
    let bins = match cfg.kernel {
        AtomicKernel::GlobalSum => 1,
        AtomicKernel::Histogram { bins } => bins,
    };
    let check = ReductionConfig::new(cfg.n, Kind::AtomicAdd)
        .threads(cfg.threads)
        .blocks(cfg.blocks);
    check.validate()?;
    if cfg.runs == 0 || bins == 0 || bins > u32::MAX as usize || cfg.n > MAX_BATCH_ELEMS {
        return Err(CudaError::InvalidConfig(format!(
            "amplify needs runs >= 1, 1..2^32 bins and n <= {MAX_BATCH_ELEMS} (runs {}, bins {bins}, n {})",
            cfg.runs, cfg.n
        )));
    }
    // Values spread over 2^-8..2^8 so that the order of the additions shows in the bits.
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let values: Vec<f32> = (0..cfg.n)
        .map(|_| {
            crate::random::unit_f32(&mut rng) * 2f32.powi(crate::random::range_i32(&mut rng, -8, 9))
        })
        .collect();
    let addresses: Vec<u32> = (0..cfg.n)
        .map(|_| crate::random::below_u32(&mut rng, bins as u32))
        .collect();
    Ok((bins, values, addresses))
}

pub(crate) fn amplify(
    dev: &DeviceContext,
    cfg: &GpuAmplifyConfig,
) -> Result<Variability, CudaError> {
    let (bins, values, addresses) = amplifier_inputs(cfg)?;
    let k = dev.kernels()?;
    guarded("running the amplifier", || {
        let stream = dev.stream();
        let val = stream
            .clone_htod(&values)
            .map_err(drv("uploading values"))?;
        let adr = stream
            .clone_htod(&addresses)
            .map_err(drv("uploading addresses"))?;
        let mut res = stream
            .alloc_zeros::<f32>(bins)
            .map_err(drv("allocating the result"))?;
        let mut perm = stream
            .alloc_zeros::<u32>(cfg.blocks)
            .map_err(drv("allocating the block permutation"))?;
        let (n32, bins32) = (cfg.n as u32, bins as u32);
        let mut scramble = LaunchScramble::new(cfg.seed);
        let mut host = vec![0.0f32; bins];
        let mut seen: HashSet<Vec<u32>> = HashSet::new();
        let mut lo = vec![f32::INFINITY; bins];
        let mut hi = vec![f32::NEG_INFINITY; bins];
        let mut first: Option<Vec<u32>> = None;
        let mut first_difference = None;
        for run in 0..cfg.runs {
            let plan = if cfg.scrambled {
                scramble.next_launch(cfg.blocks)
            } else {
                LaunchPlan::identity(cfg.blocks)
            };
            stream
                .memcpy_htod(&plan.block_perm, &mut perm)
                .map_err(drv("uploading the block permutation"))?;
            stream
                .memset_zeros(&mut res)
                .map_err(drv("zeroing the result"))?;
            let mut b = stream.launch_builder(&k.global_sum);
            b.arg(&val)
                .arg(&adr)
                .arg(&n32)
                .arg(&bins32)
                .arg(&mut res)
                .arg(&perm)
                .arg(&plan.thread_seed)
                .arg(&plan.flags);
            // SAFETY: argument types and buffer sizes match the kernel; every address
            // is below `bins`.
            unsafe { b.launch(launch_config(cfg.blocks, 1, cfg.threads, 0)) }
                .map_err(drv("launching fprev_global_sum"))?;
            stream
                .memcpy_dtoh(&res, &mut host)
                .map_err(drv("downloading the result"))?;
            stream
                .synchronize()
                .map_err(drv("waiting for the kernel"))?;
            let bits: Vec<u32> = host.iter().map(|v| v.to_bits()).collect();
            for (i, &v) in host.iter().enumerate() {
                lo[i] = lo[i].min(v);
                hi[i] = hi[i].max(v);
            }
            match &first {
                None => first = Some(bits.clone()),
                Some(f) if *f != bits && first_difference.is_none() => {
                    first_difference = Some(if cfg.scrambled {
                        scramble.token(plan.launch)
                    } else {
                        format!("hardware launch {run}")
                    });
                }
                _ => {}
            }
            seen.insert(bits);
        }
        let spread = lo
            .iter()
            .zip(&hi)
            .map(|(l, h)| (*h as f64) - (*l as f64))
            .fold(0.0, f64::max);
        Ok(Variability {
            kernel: cfg.kernel,
            scrambled: cfg.scrambled,
            runs: cfg.runs,
            distinct: seen.len(),
            spread,
            first: first.as_ref().map(|b| f32::from_bits(b[0])).unwrap_or(0.0),
            first_difference,
        })
    })
}

pub(crate) fn scramble_ids(
    dev: &DeviceContext,
    plan: &LaunchPlan,
    threads: usize,
) -> Result<Vec<(u32, u32)>, CudaError> {
    let blocks = plan.block_perm.len();
    ReductionConfig::new(blocks.max(1), Kind::SharedTree)
        .threads(threads)
        .blocks(blocks)
        .validate()?;
    let k = dev.kernels()?;
    guarded("running fprev_scramble_ids", || {
        let stream = dev.stream();
        let perm = stream
            .clone_htod(&plan.block_perm)
            .map_err(drv("uploading the block permutation"))?;
        let mut ids = stream
            .alloc_zeros::<u32>(2 * blocks * threads)
            .map_err(drv("allocating ids"))?;
        let mut b = stream.launch_builder(&k.scramble_ids);
        b.arg(&mut ids)
            .arg(&perm)
            .arg(&plan.thread_seed)
            .arg(&plan.flags);
        // SAFETY: ids holds two u32 per thread of the grid.
        unsafe { b.launch(launch_config(blocks, 1, threads, 0)) }
            .map_err(drv("launching fprev_scramble_ids"))?;
        let host = stream.clone_dtoh(&ids).map_err(drv("downloading ids"))?;
        Ok(host.chunks(2).map(|p| (p[0], p[1])).collect())
    })
}
