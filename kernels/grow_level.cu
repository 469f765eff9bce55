// vispec::grow_level's CUDA kernel (kernels/grow_level.h): kernels/grow_level_body.h with a block of team::kLanes
// threads as the team, one block per row. Its CPU reference (kernels/grow_level.cpp) runs the same body; the
// kernel check there holds the two sides together before a GPU's first tree.
#include <cuda_runtime.h>

#include "kernels/block_team.cuh"
#include "kernels/grow_level_body.h"

namespace vispec::kernels::cuda {

namespace {
struct GrowRow {
  template <class Team, class Args>
  __device__ static void run(Team& team, const Args& args, int64_t row) {
    growth::grow_row(team, args, row);
  }
};
}  // namespace

int grow_level(const growth::Args<float>& args, int64_t B, CUstream_st* stream) {
  return launch_team_rows<GrowRow>(args, B, stream);
}
int grow_level(const growth::Args<double>& args, int64_t B, CUstream_st* stream) {
  return launch_team_rows<GrowRow>(args, B, stream);
}

}  // namespace vispec::kernels::cuda
