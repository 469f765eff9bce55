// vispec::draw_without_replacement's CUDA kernel (kernels/draws.h): kernels/draws_body.h with a block of
// team::kLanes threads as the team, one block per row of q. Its CPU reference (kernels/draws.cpp) runs the same
// body, so the two agree bit for bit; the kernel check there holds them together before a GPU's first draw.
#include <cuda_runtime.h>

#include "kernels/block_team.cuh"
#include "kernels/draws_body.h"

namespace vispec::kernels::cuda {

namespace {
struct DrawRow {
  template <class Team, class Args>
  __device__ static void run(Team& team, const Args& args, int64_t row) {
    draws::draw_row(team, args, row);
  }
};
}  // namespace

int draw_without_replacement(const draws::Args<float>& args, int64_t rows, CUstream_st* stream) {
  return launch_team_rows<DrawRow>(args, rows, stream);
}
int draw_without_replacement(const draws::Args<double>& args, int64_t rows, CUstream_st* stream) {
  return launch_team_rows<DrawRow>(args, rows, stream);
}

}  // namespace vispec::kernels::cuda
