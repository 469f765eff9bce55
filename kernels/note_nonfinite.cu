// vispec::note_nonfinite's CUDA kernel (kernels/note_nonfinite.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/launch.cuh"
#include "kernels/packed.cuh"

namespace vispec::kernels::cuda {

namespace {

// Every thread tests its values; a block with any non-finite one sets the flag (threads of other blocks may set it
// too: they all write true).
template <typename T>
__global__ void note_nonfinite_kernel(const T* __restrict__ x, int64_t n, bool* __restrict__ flag) {
  wait_for_previous();
  start_next();
  bool bad = false;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    bad |= !isfinite(to_float(x[i]));
  if (__syncthreads_or(bad) && threadIdx.x == 0) *flag = true;
}

}  // namespace

int note_nonfinite(Dtype dtype, const void* x, int64_t n, bool* flag, CUstream_st* stream) {
  if (n == 0) return 0;
  return by_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    return launch_kernel(note_nonfinite_kernel<T>, blocks_for(n, 256), 256, stream, static_cast<const T*>(x), n, flag);
  });
}

}  // namespace vispec::kernels::cuda
