// The CUDA kernels of EAGLE-2's trees on the device: a level's growth (kernels/tree_growth_body.h) and the
// layout (kernels/tree_layout_body.h), each with a block of team::kLanes threads as the team, one block per row.
// Their CPU references (kernels/tree_layout_cpu.cpp) run the same bodies; kernels/kernel_check.cpp holds the
// two sides together before a GPU's first tree.
#include <cuda_runtime.h>

#include "kernels/block_team.cuh"
#include "kernels/fused_ops_cuda.h"
#include "kernels/launch.cuh"
#include "kernels/tree_growth_body.h"
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

template <typename P>
__global__ void __launch_bounds__(team::kLanes) grow_level_kernel(const growth::Args<P> args) {
  __shared__ int64_t counts[team::kLanes];
  BlockTeam team{nullptr, nullptr, counts};
  wait_for_previous();
  start_next();
  growth::grow_row(team, args, int64_t(blockIdx.x));
}

template <typename P>
int launch_growth(const growth::Args<P>& args, int64_t B, CUstream_st* stream) {
  if (B == 0) return 0;
  return launch_kernel(grow_level_kernel<P>, unsigned(B), team::kLanes, stream, args);
}

}  // namespace

int grow_level(const growth::Args<float>& args, int64_t B, CUstream_st* stream) {
  return launch_growth(args, B, stream);
}
int grow_level(const growth::Args<double>& args, int64_t B, CUstream_st* stream) {
  return launch_growth(args, B, stream);
}

int tree_layout(const layout::Args& args, int64_t B, CUstream_st* stream) {
  if (B == 0) return 0;
  return launch_kernel(tree_layout_kernel, unsigned(B), team::kLanes, stream, args);
}

}  // namespace vispec::kernels::cuda
