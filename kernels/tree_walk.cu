// vispec::tree_walk's CUDA kernel (kernels/tree_walk.h): kernels/tree_walk_body.h with a block of walk::kLanes
// threads as the team, one block per row. Its CPU reference (kernels/tree_walk.cpp) runs the same body, so the two
// agree bit for bit; the kernel check there holds them together before a GPU's first walk.
#include <cuda_runtime.h>

#include "kernels/block_team.cuh"
#include "kernels/tree_walk_body.h"

namespace vispec::kernels::cuda {

namespace {
struct WalkRow {
  template <class Team, class Args>
  __device__ static void run(Team& team, const Args& args, int64_t row) {
    walk::walk_row(team, args, row);
  }
};
}  // namespace

int tree_walk(const walk::Args<float>& args, int64_t B, CUstream_st* stream) {
  return launch_team_rows<WalkRow>(args, B, stream);
}
int tree_walk(const walk::Args<double>& args, int64_t B, CUstream_st* stream) {
  return launch_team_rows<WalkRow>(args, B, stream);
}

}  // namespace vispec::kernels::cuda
