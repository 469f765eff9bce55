// vispec::cfg_mix's CUDA kernel (kernels/cfg_mix.h): three float32 operations per value with the _rn
// intrinsics, the CPU reference's bits.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/launch.cuh"
#include "kernels/packed.cuh"

namespace vispec::kernels::cuda {

namespace {

template <typename T>
__global__ void cfg_mix_kernel(const T* __restrict__ logits, float* __restrict__ out, int64_t n, float scale) {
  wait_for_previous();
  start_next();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float c = to_float(logits[i]), u = to_float(logits[n + i]);
    out[i] = __fadd_rn(u, __fmul_rn(__fsub_rn(c, u), scale));
  }
}

}  // namespace

int cfg_mix(Dtype dtype, const void* logits, float* out, int64_t n, float scale, CUstream_st* stream) {
  if (n == 0) return 0;
  return by_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    return launch_kernel(cfg_mix_kernel<T>, blocks_for(n, 256), 256, stream, static_cast<const T*>(logits), out, n,
                         scale);
  });
}

}  // namespace vispec::kernels::cuda
