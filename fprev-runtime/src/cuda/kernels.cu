// fprev's reduction kernels; compiled by NVRTC after prelude.cuh. 1-D grids: blockIdx.y
// selects the probe (one input row of n values per probe, one output per probe).

// Pass 1 of the deterministic reduction: each logical thread sums a grid-stride slice,
// then the block halves its shared-memory array (blockDim.x a power of two), and the
// block's partial goes to partial[probe * gridDim.x + logical block]. The result does
// not depend on scheduling, nor on scrambling: logical ids decide every operand.
extern "C" __global__ void fprev_tree_partial(const float *__restrict__ x, unsigned int n,
                                              float *__restrict__ partial, FPREV_SCRAMBLE_PARAMS) {
    FPREV_SCRAMBLE_BEGIN();
    extern __shared__ float fprev_sdata[];
    const float *row = x + (size_t)blockIdx.y * n;
    const unsigned int t = fprev_thread_idx();
    const unsigned int b = fprev_block_idx();
    const unsigned int stride = gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (unsigned int i = b * blockDim.x + t; i < n; i += stride) {
        acc += row[i];
    }
    fprev_sdata[t] = acc;
    __syncthreads();
    for (unsigned int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (t < h) {
            fprev_sdata[t] += fprev_sdata[t + h];
        }
        __syncthreads();
    }
    if (t == 0) {
        partial[(size_t)blockIdx.y * gridDim.x + b] = fprev_sdata[0];
    }
}

// Pass 2: one block per probe folds that probe's `parts` partials the same way.
extern "C" __global__ void fprev_tree_final(const float *__restrict__ partial, unsigned int parts,
                                            float *__restrict__ out) {
    extern __shared__ float fprev_sdata[];
    const float *row = partial + (size_t)blockIdx.x * parts;
    const unsigned int t = threadIdx.x;
    float acc = 0.0f;
    for (unsigned int i = t; i < parts; i += blockDim.x) {
        acc += row[i];
    }
    fprev_sdata[t] = acc;
    __syncthreads();
    for (unsigned int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (t < h) {
            fprev_sdata[t] += fprev_sdata[t + h];
        }
        __syncthreads();
    }
    if (t == 0) {
        out[blockIdx.x] = fprev_sdata[0];
    }
}

// Defour's GlobalSum (Listing 1): every element is atomicAdd-ed into res[adr[i]] (bin 0
// when adr is null), so the summation order is the order the hardware serves the
// atomics: nondeterministic. With bins > 1 it is the weighted histogram.
extern "C" __global__ void fprev_global_sum(const float *__restrict__ val,
                                            const unsigned int *__restrict__ adr, unsigned int n,
                                            unsigned int bins, float *res, FPREV_SCRAMBLE_PARAMS) {
    FPREV_SCRAMBLE_BEGIN();
    const float *row = val + (size_t)blockIdx.y * n;
    float *out = res + (size_t)blockIdx.y * bins;
    const unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = fprev_block_idx() * blockDim.x + fprev_thread_idx(); i < n; i += stride) {
        atomicAdd(&out[adr ? adr[i] : 0u], row[i]);
    }
}

// Writes the logical (block, thread) each hardware thread plays: checks the prelude
// against its Rust mirror.
extern "C" __global__ void fprev_scramble_ids(unsigned int *__restrict__ ids, FPREV_SCRAMBLE_PARAMS) {
    FPREV_SCRAMBLE_BEGIN();
    const size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    ids[2 * k] = fprev_block_idx();
    ids[2 * k + 1] = fprev_thread_idx();
}
