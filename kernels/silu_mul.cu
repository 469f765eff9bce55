// vispec::silu_mul's CUDA kernel (kernels/silu_mul.h): SwiGLU's gate of kernels/silu_gate.cuh, one thread per
// output value.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/launch.cuh"
#include "kernels/packed.cuh"
#include "kernels/silu_gate.cuh"

namespace vispec::kernels::cuda {

namespace {

template <typename T>
__global__ void silu_mul_kernel(const T* __restrict__ gate_up, T* __restrict__ out, int64_t rows, int64_t F) {
  wait_for_previous();
  start_next();
  const int64_t n = rows * F;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = k / F, i = k % F;
    out[k] = silu_gate<T>(to_float(gate_up[r * 2 * F + i]), to_float(gate_up[r * 2 * F + F + i]));
  }
}

}  // namespace

int silu_mul(Dtype dtype, const void* gate_up, void* out, int64_t rows, int64_t F, CUstream_st* stream) {
  if (rows * F == 0) return 0;
  return by_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    return launch_kernel(silu_mul_kernel<T>, blocks_for(rows * F, 256), 256, stream, static_cast<const T*>(gate_up),
                         static_cast<T*>(out), rows, F);
  });
}

}  // namespace vispec::kernels::cuda
