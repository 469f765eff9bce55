// vispec::draft_top_k's CUDA kernel (kernels/draft_top_k.h): one block per row of V values. Each thread mixes its
// values as cfg_mix's kernel does (the same _rn steps, so the same mixed bits) and watches them; the block finds the
// row's maximum and its softmax's sum (float32, a tree where the reference's ATen softmax sums in its own order:
// within a rounding), then K passes each pick the largest log-prob not yet picked (equal values by lowest index).
// A pass recomputes each log-prob from the logits rather than storing the row: K is a tree's width (10 at the
// paper defaults), and two reads of a row in cache cost less than a row of scratch.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/block_row.cuh"
#include "kernels/launch.cuh"

namespace vispec::kernels::cuda {

namespace {

constexpr int kThreads = 256;

struct Row {
  const float* cond;
  const float* uncond;  // nullptr: not guided
  float scale, temperature;

  __device__ float mixed(int64_t i) const {
    const float c = cond[i];
    if (!uncond) return c;
    const float u = uncond[i];
    return __fadd_rn(u, __fmul_rn(__fsub_rn(c, u), scale));
  }
  // The softmax's argument: mixed / temperature (none at 1, and at 0 where the log-softmax is taken).
  __device__ float scaled(int64_t i) const {
    const float m = mixed(i);
    return temperature > 0.f && temperature != 1.f ? __fdiv_rn(m, temperature) : m;
  }
};

// (value, index) ordered as the output is: a larger value first, then a lower index.
__device__ __forceinline__ bool before(float v, int64_t i, float w, int64_t j) { return v > w || (v == w && i < j); }

__global__ void draft_top_k_kernel(const float* __restrict__ logits, float* __restrict__ values,
                                   int64_t* __restrict__ indices, bool* __restrict__ nonfinite, int64_t rows, int64_t V,
                                   int64_t K, bool guided, float scale, float temperature) {
  __shared__ float scratch[kThreads / 32];
  __shared__ float pick_value[kThreads / 32];
  __shared__ int64_t pick_index[kThreads / 32];
  wait_for_previous();
  start_next();
  const int64_t r = blockIdx.x;
  const Row row{logits + r * V, guided ? logits + (rows + r) * V : nullptr, scale, temperature};
  int bad = 0;
  float top = -INFINITY;
  for (int64_t i = threadIdx.x; i < V; i += kThreads) {
    const float x = row.scaled(i);
    bad |= !isfinite(row.mixed(i));
    top = fmaxf(top, x);
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) *nonfinite = true;
  top = block_reduce<kThreads>(top, Max{}, scratch);
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < V; i += kThreads) sum = __fadd_rn(sum, expf(__fsub_rn(row.scaled(i), top)));
  sum = block_reduce<kThreads>(sum, Sum{}, scratch);
  const float log_sum = logf(sum);
  const auto log_prob = [&](int64_t i) {
    const float shifted = __fsub_rn(row.scaled(i), top);
    return temperature > 0.f ? logf(__fdiv_rn(expf(shifted), sum)) : __fsub_rn(shifted, log_sum);
  };
  float last_value = INFINITY;
  int64_t last_index = -1;
  for (int64_t k = 0; k < K; ++k) {
    float best = -INFINITY;
    int64_t best_index = V;  // none yet: after every real index
    for (int64_t i = threadIdx.x; i < V; i += kThreads) {
      const float lp = log_prob(i);
      if (before(last_value, last_index, lp, i) && before(lp, i, best, best_index)) best = lp, best_index = i;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      const float other = __shfl_xor_sync(0xffffffffu, best, offset);
      const int64_t other_index = __shfl_xor_sync(0xffffffffu, best_index, offset);
      if (before(other, other_index, best, best_index)) best = other, best_index = other_index;
    }
    if (threadIdx.x % 32 == 0) pick_value[threadIdx.x / 32] = best, pick_index[threadIdx.x / 32] = best_index;
    __syncthreads();
    best = pick_value[0], best_index = pick_index[0];
    for (int w = 1; w < kThreads / 32; ++w)
      if (before(pick_value[w], pick_index[w], best, best_index)) best = pick_value[w], best_index = pick_index[w];
    __syncthreads();
    if (threadIdx.x == 0) {
      values[r * K + k] = best;
      indices[r * K + k] = best_index < V ? best_index : 0;  // a row of NaN (the flag is set) picks nothing
    }
    last_value = best, last_index = best_index;
  }
}

}  // namespace

int draft_top_k(const float* logits, float* values, int64_t* indices, bool* nonfinite, int64_t rows, int64_t V,
                int64_t K, bool guided, float scale, float temperature, CUstream_st* stream) {
  if (rows == 0) return 0;
  if (rows > 0x7fffffff) return int(cudaErrorInvalidValue);
  return launch_kernel(draft_top_k_kernel, unsigned(rows), kThreads, stream, logits, values, indices, nonfinite, rows,
                       V, K, guided, scale, temperature);
}

}  // namespace vispec::kernels::cuda
