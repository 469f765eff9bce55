// vispec::keyed_uniforms's CUDA kernel (kernels/keyed_uniforms.h): core/philox.h's body, the one the CPU
// reference runs, so the two agree bit for bit.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/philox.h"
#include "kernels/launch.cuh"

namespace vispec::kernels::cuda {

namespace {

__global__ void keyed_uniforms_kernel(const int64_t* __restrict__ ids, const int64_t* __restrict__ positions,
                                      const int64_t* __restrict__ draws, double* __restrict__ u, int64_t B, int64_t C,
                                      uint64_t seed, uint32_t purpose) {
  wait_for_previous();
  start_next();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < B * C; i += int64_t(gridDim.x) * blockDim.x)
    u[i] = philox::keyed_uniform(seed, uint64_t(ids[i / C]), uint32_t(positions[i]), purpose,
                                 draws ? uint32_t(draws[i]) : 0u);
}

}  // namespace

int keyed_uniforms(const int64_t* ids, const int64_t* positions, const int64_t* draws, double* u, int64_t B, int64_t C,
                   uint64_t seed, uint32_t purpose, CUstream_st* stream) {
  if (B * C == 0) return 0;
  return launch_kernel(keyed_uniforms_kernel, blocks_for(B * C, 256), 256, stream, ids, positions, draws, u, B, C, seed,
                       purpose);
}

}  // namespace vispec::kernels::cuda
