// The tree walk's CUDA kernel: kernels/tree_walk_body.h with a block of walk::kLanes threads as the team, one
// block per row. Its CPU reference (kernels/tree_walk_cpu.cpp) runs the same body, so the two agree bit for
// bit; kernels/kernel_check.cpp holds them together before a GPU's first walk.
#include <cuda_runtime.h>

#include "kernels/fused_ops_cuda.h"
#include "kernels/launch.cuh"
#include "kernels/tree_walk_body.h"

namespace vispec::kernels::cuda {

namespace {

// The team of kernels/tree_walk_body.h on a CUDA block: each thread is a lane, the scratch is shared memory,
// and a barrier before and after each() and one() makes every lane see what any wrote. Its members are
// __host__ __device__ only so that the body's __host__ __device__ templates may call them; they run on the
// device alone.
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
};

template <typename P>
__global__ void __launch_bounds__(walk::kLanes) tree_walk_kernel(const walk::Args<P> args) {
  __shared__ double partial[walk::kLanes], base[walk::kLanes];
  __shared__ int64_t counts[walk::kLanes];
  BlockTeam team{partial, base, counts};
  wait_for_previous();
  start_next();
  walk::walk_row(team, args, int64_t(blockIdx.x));
}

template <typename P>
int launch(const walk::Args<P>& args, int64_t B, CUstream_st* stream) {
  if (B == 0) return 0;
  return launch_kernel(tree_walk_kernel<P>, unsigned(B), walk::kLanes, stream, args);
}

}  // namespace

int tree_walk(const walk::Args<float>& args, int64_t B, CUstream_st* stream) { return launch(args, B, stream); }
int tree_walk(const walk::Args<double>& args, int64_t B, CUstream_st* stream) { return launch(args, B, stream); }

}  // namespace vispec::kernels::cuda
