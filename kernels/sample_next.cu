// vispec::sample_next's CUDA kernel (kernels/sample_next.h): one block per row; every threshold (the k-th
// largest logit, top-p's floor) found by bisection over the row, so no sort. Its sums are float trees where the
// CPU reference (kernels/sample_next.cpp) sums in order: a token may differ where a uniform falls within a
// rounding of a boundary, which the kernel check's uniforms avoid.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/block_row.cuh"
#include "kernels/launch.cuh"

namespace vispec::kernels::cuda {

namespace {

// --- sample_next: one block per row; every threshold found by bisection over the row, so no sort -------------

constexpr int kSampleThreads = 256;

// Orders floats as unsigned integers: a < b exactly when key(a) < key(b) (no NaN reaches here).
__device__ __forceinline__ unsigned key_of(float x) {
  const unsigned bits = __float_as_uint(x);
  return bits & 0x80000000u ? ~bits : bits | 0x80000000u;
}

__global__ void sample_next_kernel(const float* __restrict__ logits, const double* __restrict__ u,
                                   int64_t* __restrict__ tokens, bool* __restrict__ nonfinite, int64_t V,
                                   float temperature, int64_t top_k, float bottom) {
  __shared__ float fscratch[kSampleThreads / 32];
  __shared__ unsigned long long uscratch[kSampleThreads / 32];
  __shared__ double prefix[kSampleThreads + 1];
  wait_for_previous();
  start_next();
  const int64_t row = blockIdx.x;
  const float* l = logits + row * V;
  // Non-finite logits, and the argmax (the first index of the largest value; a NaN counts as the largest).
  int bad = 0;
  unsigned long long best = 0;  // (key << 32) | (~index): the max is the largest key, then the lowest index
  for (int64_t i = threadIdx.x; i < V; i += kSampleThreads) {
    const float x = l[i];
    bad |= !isfinite(x);
    const unsigned k = isnan(x) ? 0xFFFFFFFFu : key_of(x);
    const unsigned long long c = (static_cast<unsigned long long>(k) << 32) | (0xFFFFFFFFu - unsigned(i));
    best = c > best ? c : best;
  }
  bad = __syncthreads_or(bad);
  if (bad && threadIdx.x == 0) *nonfinite = true;
  if (temperature <= 0.f) {
    best = block_reduce<kSampleThreads>(
        best, [](unsigned long long a, unsigned long long b) { return a > b ? a : b; }, uscratch);
    if (threadIdx.x == 0) tokens[row] = int64_t(0xFFFFFFFFu - unsigned(best & 0xFFFFFFFFu));
    return;
  }
  const float dropped = -INFINITY;
  auto value = [&](int64_t i) { return __fdiv_rn(l[i], temperature); };
  // top-k: the k-th largest key, bit by bit from the top: the largest key with at least k values at or above it.
  unsigned kth = 0;
  if (top_k > 0 && top_k < V) {
    for (int bit = 31; bit >= 0; --bit) {
      const unsigned candidate = kth | (1u << bit);
      long long count = 0;
      for (int64_t i = threadIdx.x; i < V; i += kSampleThreads) count += key_of(value(i)) >= candidate;
      if (block_reduce<kSampleThreads>(count, Sum{}, reinterpret_cast<long long*>(uscratch)) >= top_k) kth = candidate;
    }
  }
  auto kept = [&](int64_t i) { return key_of(value(i)) >= kth; };
  float top = dropped;
  for (int64_t i = threadIdx.x; i < V; i += kSampleThreads)
    if (kept(i)) top = fmaxf(top, value(i));
  top = block_reduce<kSampleThreads>(top, Max{}, fscratch);
  // top-p: the smallest key x whose mass at or below it exceeds 1 - p; every value below x is dropped.
  unsigned floor_key = kth;
  if (bottom > 0.f) {
    float mass = 0.f;
    for (int64_t i = threadIdx.x; i < V; i += kSampleThreads)
      if (kept(i)) mass += expf(value(i) - top);
    mass = block_reduce<kSampleThreads>(mass, Sum{}, fscratch);
    unsigned lo = kth, hi = key_of(top);
    while (lo < hi) {
      const unsigned mid = lo + (hi - lo) / 2;
      float below = 0.f;
      for (int64_t i = threadIdx.x; i < V; i += kSampleThreads) {
        const unsigned k = key_of(value(i));
        if (k >= kth && k <= mid) below += expf(value(i) - top);
      }
      if (__fdiv_rn(block_reduce<kSampleThreads>(below, Sum{}, fscratch), mass) > bottom) hi = mid;
      else lo = mid + 1;
    }
    floor_key = lo;
  }
  auto in_play = [&](int64_t i) { return key_of(value(i)) >= floor_key; };
  float mass = 0.f;
  for (int64_t i = threadIdx.x; i < V; i += kSampleThreads)
    if (in_play(i)) mass += expf(value(i) - top);
  mass = block_reduce<kSampleThreads>(mass, Sum{}, fscratch);
  auto prob = [&](int64_t i) { return in_play(i) ? __fdiv_rn(expf(value(i) - top), mass) : 0.f; };
  const int64_t token = block_draw<kSampleThreads>(prob, V, u[row], prefix);
  if (threadIdx.x == 0) tokens[row] = token;
}

}  // namespace

int sample_next(const float* logits, const double* u, int64_t* tokens, bool* nonfinite, int64_t B, int64_t V,
                double temperature, int64_t top_k, double top_p, CUstream_st* stream) {
  if (B == 0) return 0;
  const float t = temperature <= 0 ? 0.f : float(temperature > 1e-5 ? temperature : 1e-5);
  return launch_kernel(sample_next_kernel, unsigned(B), kSampleThreads, stream, logits, u, tokens, nonfinite, V, t,
                       top_k, top_p < 1.0 ? float(1.0 - top_p) : 0.f);
}

}  // namespace vispec::kernels::cuda
