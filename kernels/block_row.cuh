// What a CUDA block of kThreads threads does over one row, written once for the kernels that take a row a block
// (sample_next, softmax_draw, draft_top_k): reductions every thread gets the result of, and the float64
// inverse-CDF draw.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace vispec::kernels::cuda {

struct Sum {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// The block's reduction of one value per thread by op (warp shuffles, then the warps' results in order);
// scratch: kThreads / 32 values in shared memory.
template <int kThreads, typename T, typename Op>
__device__ T block_reduce(T value, Op op, T* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  T all = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) all = op(all, scratch[w]);
  __syncthreads();
  return all;
}

// The first index of a row of V whose float64 CDF of prob(i) exceeds u times the total (V - 1 if none), in every
// thread: each thread sums its contiguous chunk in float64, thread 0 scans the chunks, and the thread whose chunk
// holds the target walks it. prefix: kThreads + 1 doubles in shared memory. The sums' order differs from a
// sequential CDF's only within a rounding: a token may differ where u falls within one of a boundary.
template <int kThreads, typename Prob>
__device__ int64_t block_draw(const Prob& prob, int64_t V, double u, double* prefix) {
  __shared__ unsigned long long found;
  const int64_t chunk = (V + kThreads - 1) / kThreads;
  const int64_t begin = threadIdx.x * chunk, end = begin + chunk < V ? begin + chunk : V;
  double own = 0;
  for (int64_t i = begin; i < end; ++i) own += double(prob(i));
  prefix[threadIdx.x + 1] = own;
  if (threadIdx.x == 0) found = static_cast<unsigned long long>(V - 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    prefix[0] = 0;
    for (int t = 1; t <= kThreads; ++t) prefix[t] += prefix[t - 1];
  }
  __syncthreads();
  const double target = u * prefix[kThreads];
  if (prefix[threadIdx.x] <= target && target < prefix[threadIdx.x + 1]) {
    double cdf = prefix[threadIdx.x];
    for (int64_t i = begin; i < end; ++i)
      if ((cdf += double(prob(i))) > target) {
        atomicMin(&found, static_cast<unsigned long long>(i));
        break;
      }
  }
  __syncthreads();
  const int64_t token = int64_t(found);
  __syncthreads();  // every thread has read it before another call may write it
  return token;
}

}  // namespace vispec::kernels::cuda
