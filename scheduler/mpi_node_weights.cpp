#include "scheduler/mpi_node_weights.h"

namespace vispec {

void MpiNodeWeights::share(torch::Tensor& tensor) {
  // A contiguous host tensor is broadcast in place; any other goes through a contiguous host copy.
  const bool in_place = tensor.is_cpu() && tensor.is_contiguous();
  torch::Tensor host = in_place        ? tensor
                       : reads_files() ? tensor.to(torch::kCPU).contiguous()
                                       : torch::empty(tensor.sizes(), tensor.options().device(torch::kCPU));
  session_.node_broadcast(host.data_ptr(), host.nbytes());
  if (!in_place && !reads_files()) tensor.copy_(host);
}

}  // namespace vispec
