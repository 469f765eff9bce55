// The tree walk's CUDA kernel: kernels/tree_walk_body.h with a block of walk::kLanes threads as the team, one
// block per row. Its CPU reference (kernels/tree_walk_cpu.cpp) runs the same body, so the two agree bit for
// bit; kernels/kernel_check.cpp holds them together before a GPU's first walk.
#include <cuda_runtime.h>

#include "kernels/fused_ops_cuda.h"
#include "kernels/block_team.cuh"
#include "kernels/launch.cuh"
#include "kernels/tree_walk_body.h"

namespace vispec::kernels::cuda {

namespace {

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
