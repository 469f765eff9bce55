// How every CUDA kernel of kernels/ is launched: with programmatic dependent launch (PDL) on sm_90 and later.
//
// A replayed decode step is some 250 to 400 short kernels in a row (a GPT-XL step at batch 1: 379, most of them
// 1 to 6 us). Between two of them the GPU drains one grid, then launches the next, whose blocks then wait a
// memory latency for their first loads: a few microseconds per kernel in which no weight streams. With PDL a
// kernel's blocks start while the kernel before it still runs; each kernel first does what needs nothing from
// its predecessor (a product's weight loads: the weights never change during a step), then waits for it
// (wait_for_previous), then lets its own successor start (start_next).
//
// The rule that keeps this exact: a kernel launched here reads nothing an earlier kernel wrote and writes
// nothing before wait_for_previous() returns; only constant inputs (weights) may be loaded before it. The wait
// returns once every kernel before it on the stream has finished and its writes are visible, so the order of
// the stream is kept; only the launch overlaps. A kernel that is not launched with PDL, or one on a GPU
// before sm_90, returns from the wait at once (its predecessor had finished before it started).
//
// VISPEC_PDL=0 in the environment launches every kernel the ordinary way (measurements side by side:
// scripts/gpu_check.sh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda_dtype.h"

namespace vispec::kernels::cuda {

__device__ __forceinline__ void wait_for_previous() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void start_next() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether kernels launched on the current device overlap their launch with the kernel before them: a device of
// compute capability 9.0 or later, and VISPEC_PDL is not 0. Asked once per device.
bool overlapped_launches();

// launch_kernel: kernel<<<grid, block, 0, stream>>>(args...), with PDL where overlapped_launches(). Returns the
// launch's cudaError_t as an int.
template <typename... Params, typename... Args>
int launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, CUstream_st* stream, Args... args) {
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = overlapped_launches() ? 1 : 0;
  return int(cudaLaunchKernelEx(&config, kernel, args...));
}

// Blocks of `threads` for a grid-stride loop over n elements: at least 1, at most 65535.
inline int blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return int(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

// launch_as(T{}) for the dtype's element type T; its result is the launch's error.
template <typename F>
int by_dtype(Dtype dtype, F&& launch_as) {
  switch (dtype) {
    case Dtype::f32: return launch_as(float{});
    case Dtype::bf16: return launch_as(__nv_bfloat16{});
    case Dtype::f16: return launch_as(__half{});
  }
  return int(cudaErrorInvalidValue);
}

}  // namespace vispec::kernels::cuda
