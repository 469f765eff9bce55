// The CUDA kernels of EAGLE-2's trees on the device: a level's growth (kernels/tree_growth_body.h) and the
// layout (kernels/tree_layout_body.h), each with a block of team::kLanes threads as the team, one block per row.
// Their CPU references (kernels/tree_layout_cpu.cpp) run the same bodies; kernels/kernel_check.cpp holds the
// two sides together before a GPU's first tree.
#include <cuda_runtime.h>

#include "kernels/block_team.cuh"
#include "kernels/fused_ops_cuda.h"
#include "kernels/tree_growth_body.h"
#include "kernels/tree_layout_body.h"

namespace vispec::kernels::cuda {

namespace {
struct GrowRow {
  template <class Team, class Args>
  __device__ static void run(Team& team, const Args& args, int64_t row) {
    growth::grow_row(team, args, row);
  }
};
struct LayOutRow {
  template <class Team, class Args>
  __device__ static void run(Team& team, const Args& args, int64_t row) {
    layout::lay_out_row(team, args, row);
  }
};
}  // namespace

int grow_level(const growth::Args<float>& args, int64_t B, CUstream_st* stream) {
  return launch_team_rows<GrowRow>(args, B, stream);
}
int grow_level(const growth::Args<double>& args, int64_t B, CUstream_st* stream) {
  return launch_team_rows<GrowRow>(args, B, stream);
}
int tree_layout(const layout::Args& args, int64_t B, CUstream_st* stream) {
  return launch_team_rows<LayOutRow>(args, B, stream);
}

}  // namespace vispec::kernels::cuda
