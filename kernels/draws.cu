// EAGLE-1's draws without replacement as a CUDA kernel: kernels/draws_body.h with a block of team::kLanes threads
// as the team, one block per row of q. Its CPU reference (kernels/draws_cpu.cpp) runs the same body, so the two
// agree bit for bit; kernels/kernel_check.cpp holds them together before a GPU's first draw.
#include <cuda_runtime.h>

#include "kernels/block_team.cuh"
#include "kernels/draws_body.h"
#include "kernels/fused_ops_cuda.h"
#include "kernels/launch.cuh"

namespace vispec::kernels::cuda {

namespace {

template <typename P>
__global__ void __launch_bounds__(team::kLanes) draws_kernel(const draws::Args<P> args) {
  __shared__ double partial[team::kLanes], base[team::kLanes];
  __shared__ int64_t counts[team::kLanes];
  BlockTeam team{partial, base, counts};
  wait_for_previous();
  start_next();
  draws::draw_row(team, args, int64_t(blockIdx.x));
}

template <typename P>
int launch(const draws::Args<P>& args, int64_t rows, CUstream_st* stream) {
  if (rows == 0) return 0;
  return launch_kernel(draws_kernel<P>, unsigned(rows), team::kLanes, stream, args);
}

}  // namespace

int draw_without_replacement(const draws::Args<float>& args, int64_t rows, CUstream_st* stream) {
  return launch(args, rows, stream);
}
int draw_without_replacement(const draws::Args<double>& args, int64_t rows, CUstream_st* stream) {
  return launch(args, rows, stream);
}

}  // namespace vispec::kernels::cuda
