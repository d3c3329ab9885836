// fprev kernel-scrambling prelude, algorithm "fprev-cuda-scramble-v2".
//
// Defour-style index interposer for 1-D kernels: the host uploads, per launch, a
// permutation of block ids (physical blockIdx.x -> logical block), and at the start of
// each block thread 0 draws a Fisher-Yates permutation of the thread ids into shared
// memory. Kernels use fprev_block_idx() / fprev_thread_idx() where they would use
// blockIdx.x / threadIdx.x, so which hardware block or lane does which piece of work
// (and so the order of atomics) changes from launch to launch, reproducibly per seed.
//
// Usage (host side: fprev::cuda::LaunchScramble fills the three parameters):
//
//   extern "C" __global__ void k(const float* x, unsigned n, FPREV_SCRAMBLE_PARAMS) {
//       FPREV_SCRAMBLE_BEGIN();   // every thread of the block must reach it
//       unsigned i = fprev_block_idx() * blockDim.x + fprev_thread_idx();
//       ...
//   }
//
// The thread permutation's generator is SplitMix64 keyed by
//   thread_seed ^ (logical_block * 0xD1B54A32D192ED03)
// with bounded draws j = umulhi64(next(), i + 1), i = n-1 down to 1; the Rust mirror is
// fprev::cuda::device_thread_permutation and must change together with this file.

#ifndef FPREV_MAX_BLOCK_THREADS
#define FPREV_MAX_BLOCK_THREADS 1024
#endif

// Bit 0 of fprev_flags: scramble thread ids (otherwise the identity).
#define FPREV_SCRAMBLE_THREADS 1u

#define FPREV_SCRAMBLE_PARAMS                                                             \
    const unsigned int *__restrict__ fprev_block_perm, unsigned long long fprev_thread_seed, \
        unsigned int fprev_flags

#define FPREV_SCRAMBLE_BEGIN() fprev_scramble_begin(fprev_block_perm, fprev_thread_seed, fprev_flags)

__shared__ unsigned int fprev_thread_perm_[FPREV_MAX_BLOCK_THREADS];
__shared__ unsigned int fprev_logical_block_;

__device__ __forceinline__ unsigned long long fprev_splitmix64(unsigned long long *state) {
    unsigned long long z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__device__ void fprev_scramble_begin(const unsigned int *__restrict__ block_perm,
                                     unsigned long long thread_seed, unsigned int flags) {
    if (threadIdx.x == 0) {
        const unsigned int threads = blockDim.x;
        const unsigned int block = block_perm ? block_perm[blockIdx.x] : blockIdx.x;
        fprev_logical_block_ = block;
        for (unsigned int i = 0; i < threads; ++i) {
            fprev_thread_perm_[i] = i;
        }
        if (flags & FPREV_SCRAMBLE_THREADS) {
            unsigned long long state = thread_seed ^ ((unsigned long long)block * 0xD1B54A32D192ED03ull);
            for (unsigned int i = threads - 1; i > 0; --i) {
                const unsigned int j =
                    (unsigned int)__umul64hi(fprev_splitmix64(&state), (unsigned long long)i + 1ull);
                const unsigned int t = fprev_thread_perm_[i];
                fprev_thread_perm_[i] = fprev_thread_perm_[j];
                fprev_thread_perm_[j] = t;
            }
        }
    }
    __syncthreads();
}

// The logical block this hardware block plays in this launch.
__device__ __forceinline__ unsigned int fprev_block_idx() { return fprev_logical_block_; }

// The logical thread this hardware thread plays in its block.
__device__ __forceinline__ unsigned int fprev_thread_idx() { return fprev_thread_perm_[threadIdx.x]; }
