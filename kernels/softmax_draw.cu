// vispec::softmax_draw's CUDA kernel (kernels/softmax_draw.h): one block per row. The block finds the row's maximum
// and its softmax's sum (float32, a tree where the reference's ATen softmax sums in its own order: within a
// rounding), writes the probabilities, then draws as sample_next's kernel does: each thread sums its contiguous
// chunk of probabilities in float64, thread 0 scans the chunks, and the thread whose chunk holds u times the total
// walks it. A token may differ from the reference's where u falls within a rounding of a CDF boundary.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/launch.cuh"

namespace vispec::kernels::cuda {

namespace {

constexpr int kThreads = 256;

// Block-wide reduction of one float by op; every thread gets the result.
template <typename Op>
__device__ float reduce_row(float value, Op op, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  float all = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) all = op(all, scratch[w]);
  __syncthreads();
  return all;
}

__global__ void softmax_draw_kernel(const float* __restrict__ logits, const double* __restrict__ u, int64_t u_stride,
                                    float* __restrict__ probs, int64_t* __restrict__ tokens,
                                    bool* __restrict__ nonfinite, int64_t V, float temperature) {
  __shared__ float scratch[kThreads / 32];
  __shared__ double prefix[kThreads + 1];
  __shared__ long long found;
  wait_for_previous();
  start_next();
  const int64_t row = blockIdx.x;
  const float* l = logits + row * V;
  float* p = probs + row * V;
  const auto scaled = [&](int64_t i) { return temperature != 1.f ? __fdiv_rn(l[i], temperature) : l[i]; };
  int bad = 0;
  float top = -INFINITY;
  for (int64_t i = threadIdx.x; i < V; i += kThreads) {
    bad |= !isfinite(l[i]);
    top = fmaxf(top, scaled(i));
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) *nonfinite = true;
  top = reduce_row(
      top, [](float a, float b) { return fmaxf(a, b); }, scratch);
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < V; i += kThreads) sum = __fadd_rn(sum, expf(__fsub_rn(scaled(i), top)));
  sum = reduce_row(
      sum, [](float a, float b) { return a + b; }, scratch);
  const int64_t chunk = (V + kThreads - 1) / kThreads;
  const int64_t begin = threadIdx.x * chunk, end = begin + chunk < V ? begin + chunk : V;
  double own = 0;
  for (int64_t i = begin; i < end; ++i) {
    p[i] = __fdiv_rn(expf(__fsub_rn(scaled(i), top)), sum);
    own += double(p[i]);
  }
  prefix[threadIdx.x + 1] = own;
  if (threadIdx.x == 0) found = V - 1;
  __syncthreads();
  if (threadIdx.x == 0) {
    prefix[0] = 0;
    for (int t = 1; t <= kThreads; ++t) prefix[t] += prefix[t - 1];
  }
  __syncthreads();
  const double target = u[row * u_stride] * prefix[kThreads];
  if (prefix[threadIdx.x] <= target && target < prefix[threadIdx.x + 1]) {
    double cdf = prefix[threadIdx.x];
    for (int64_t i = begin; i < end; ++i)
      if ((cdf += double(p[i])) > target) {
        atomicMin(reinterpret_cast<unsigned long long*>(&found), static_cast<unsigned long long>(i));
        break;
      }
  }
  __syncthreads();
  if (threadIdx.x == 0) tokens[row] = found;
}

}  // namespace

int softmax_draw(const float* logits, const double* u, int64_t u_stride, float* probs, int64_t* tokens, bool* nonfinite,
                 int64_t B, int64_t V, float temperature, CUstream_st* stream) {
  if (B == 0) return 0;
  if (B > 0x7fffffff) return int(cudaErrorInvalidValue);
  return launch_kernel(softmax_draw_kernel, unsigned(B), kThreads, stream, logits, u, u_stride, probs, tokens,
                       nonfinite, V, temperature);
}

}  // namespace vispec::kernels::cuda
