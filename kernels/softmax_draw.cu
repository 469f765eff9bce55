// vispec::softmax_draw's CUDA kernel (kernels/softmax_draw.h): one block per row. The block finds the row's maximum
// and its softmax's sum (float32, a tree where the reference's ATen softmax sums in its own order: within a
// rounding), writes the probabilities, then draws as sample_next's kernel does (kernels/block_row.cuh's float64
// chunked draw). A token may differ from the reference's where u falls within a rounding of a CDF boundary.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/block_row.cuh"
#include "kernels/launch.cuh"

namespace vispec::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void softmax_draw_kernel(const float* __restrict__ logits, const double* __restrict__ u, int64_t u_stride,
                                    float* __restrict__ probs, int64_t* __restrict__ tokens,
                                    bool* __restrict__ nonfinite, int64_t V, float temperature) {
  __shared__ float scratch[kThreads / 32];
  __shared__ double prefix[kThreads + 1];
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
  top = block_reduce<kThreads>(top, Max{}, scratch);
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < V; i += kThreads) sum = __fadd_rn(sum, expf(__fsub_rn(scaled(i), top)));
  sum = block_reduce<kThreads>(sum, Sum{}, scratch);
  for (int64_t i = threadIdx.x; i < V; i += kThreads) p[i] = __fdiv_rn(expf(__fsub_rn(scaled(i), top)), sum);
  __syncthreads();  // the draw reads other threads' probabilities
  const int64_t token = block_draw<kThreads>([&](int64_t i) { return p[i]; }, V, u[row * u_stride], prefix);
  if (threadIdx.x == 0) tokens[row] = token;
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
