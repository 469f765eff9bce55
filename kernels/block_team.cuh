// The team of kernels/team.h on a CUDA block of team::kLanes threads: each thread is a lane, the scratch is
// shared memory the kernel declares, and a barrier before and after each() and one() makes every lane see what
// any wrote. Its members are __host__ __device__ only so that the bodies' __host__ __device__ templates may call
// them; they run on the device alone.
#pragma once

#include <cuda_runtime.h>

#include "kernels/launch.cuh"
#include "kernels/sort_order.h"
#include "kernels/team.h"

namespace vispec::kernels {

struct BlockTeam {
  double* partial;
  double* base;
  int64_t* counts;
  template <class F>
  __host__ __device__ void each(const F& f) {
#if defined(__CUDA_ARCH__)
    __syncthreads();
    f(int(threadIdx.x));
    __syncthreads();
#endif
  }
  template <class F>
  __host__ __device__ void one(const F& f) {
#if defined(__CUDA_ARCH__)
    __syncthreads();
    if (threadIdx.x == 0) f();
    __syncthreads();
#endif
  }
  template <class F>
  __host__ __device__ void top(const double* v, int64_t n, int64_t top, bool ranks, const F& f) {
    order::top_by_counting(*this, v, n, top, ranks, f);
  }
};

namespace cuda {

// Body::run(team, args, row) on one block of team::kLanes threads per row, the team's scratch in shared memory.
template <class Body, class Args>
__global__ void __launch_bounds__(team::kLanes) team_rows_kernel(const Args args) {
  __shared__ double partial[team::kLanes], base[team::kLanes];
  __shared__ int64_t counts[team::kLanes];
  BlockTeam team{partial, base, counts};
  wait_for_previous();
  start_next();
  Body::run(team, args, int64_t(blockIdx.x));
}

// Launches team_rows_kernel over `rows` rows (none: nothing launched); returns the launch's cudaError_t as an int.
template <class Body, class Args>
int launch_team_rows(const Args& args, int64_t rows, CUstream_st* stream) {
  if (rows == 0) return 0;
  return launch_kernel(team_rows_kernel<Body, Args>, unsigned(rows), team::kLanes, stream, args);
}

}  // namespace cuda

}  // namespace vispec::kernels
