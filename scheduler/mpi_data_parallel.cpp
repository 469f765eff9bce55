#include "scheduler/mpi_data_parallel.h"

#include <mpi.h>

#include <algorithm>
#include <climits>

#include "core/check.h"

namespace vispec {

void MpiDataParallel::sum(torch::Tensor& tensor) {
  if (!session_.uses_mpi() || session_.size() == 1) return;
  VISPEC_ASSERT(tensor.scalar_type() == torch::kFloat32 && tensor.is_contiguous(),
                "sum of a non-contiguous or "
                "non-float32 tensor");
  auto host = tensor.device().is_cpu() ? tensor : tensor.to(torch::kCPU);
  float* data = host.data_ptr<float>();
  std::vector<float> reduced(session_.rank() == 0 ? size_t(host.numel()) : 0);
  // MPI counts are ints: chunks of at most INT_MAX elements.
  for (int64_t at = 0; at < host.numel(); at += INT_MAX) {
    const int n = int(std::min<int64_t>(INT_MAX, host.numel() - at));
    int rc = MPI_Reduce(data + at, session_.rank() == 0 ? reduced.data() + at : nullptr, n, MPI_FLOAT, MPI_SUM, 0,
                        MPI_COMM_WORLD);
    VISPEC_CHECK(rc == MPI_SUCCESS, "MPI: gradient reduction failed");
    if (session_.rank() == 0) std::copy(reduced.begin() + at, reduced.begin() + at + n, data + at);
    rc = MPI_Bcast(data + at, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    VISPEC_CHECK(rc == MPI_SUCCESS, "MPI: gradient broadcast failed");
  }
  if (!tensor.device().is_cpu()) tensor.copy_(host);
}

}  // namespace vispec
