// The tree layout's CUDA kernel: kernels/tree_layout_body.h with a block of team::kLanes threads as the team,
// one block per row. Its CPU reference (kernels/tree_layout_cpu.cpp) runs the same body; kernels/kernel_check.cpp
// holds the two together before a GPU's first layout.
#include <cuda_runtime.h>

#include "kernels/block_team.cuh"
#include "kernels/fused_ops_cuda.h"
#include "kernels/launch.cuh"
#include "kernels/tree_layout_body.h"

namespace vispec::kernels::cuda {

namespace {

__global__ void __launch_bounds__(team::kLanes) tree_layout_kernel(const layout::Args args) {
  __shared__ int64_t counts[team::kLanes];
  BlockTeam team{nullptr, nullptr, counts};
  wait_for_previous();
  start_next();
  layout::lay_out_row(team, args, int64_t(blockIdx.x));
}

}  // namespace

int tree_layout(const layout::Args& args, int64_t B, CUstream_st* stream) {
  if (B == 0) return 0;
  return launch_kernel(tree_layout_kernel, unsigned(B), team::kLanes, stream, args);
}

}  // namespace vispec::kernels::cuda
