// vispec::tree_layout's CUDA kernel (kernels/tree_layout.h): kernels/tree_layout_body.h with a block of
// team::kLanes threads as the team, one block per row. Its CPU reference (kernels/tree_layout.cpp) runs the same
// body; the kernel check there holds the two sides together before a GPU's first tree.
#include <cuda_runtime.h>

#include "kernels/block_team.cuh"
#include "kernels/tree_layout_body.h"

namespace vispec::kernels::cuda {

namespace {
struct LayOutRow {
  template <class Team, class Args>
  __device__ static void run(Team& team, const Args& args, int64_t row) {
    layout::lay_out_row(team, args, row);
  }
};
}  // namespace

int tree_layout(const layout::Args& args, int64_t B, CUstream_st* stream) {
  return launch_team_rows<LayOutRow>(args, B, stream);
}

}  // namespace vispec::kernels::cuda
