// Weights read once per node (models/checkpoints/node_weights.h) over MPI: the node's first rank reads the files and
// broadcasts each tensor within the node. Tensors on a GPU travel through host memory.
#pragma once

#include "models/checkpoints/node_weights.h"
#include "scheduler/mpi_session.h"

namespace vispec {

class MpiNodeWeights : public NodeWeights {
 public:
  explicit MpiNodeWeights(const MpiSession& session) : session_(session) {}
  bool reads_files() const override { return session_.local_rank() == 0; }
  int processes() const override { return session_.local_size(); }
  void share(torch::Tensor& tensor) override;

 private:
  const MpiSession& session_;
};

}  // namespace vispec
