// Data-parallel training's communication over MPI (train/data_parallel.h): gradients summed with a reduction
// to rank 0 and a broadcast back, so every rank gets rank 0's bits (an all-reduce may round differently on
// different ranks, and ranks whose parameters drift apart are no longer one model). Tensors on a GPU are
// summed through host memory.
#pragma once

#include "scheduler/mpi_session.h"
#include "train/data_parallel.h"

namespace vispec {

class MpiDataParallel : public DataParallel {
 public:
  explicit MpiDataParallel(const MpiSession& session) : session_(session) {}
  int rank() const override { return session_.rank(); }
  int size() const override { return session_.size(); }
  void sum(torch::Tensor& tensor) override;
  void barrier() override { session_.barrier(); }

 private:
  const MpiSession& session_;
};

}  // namespace vispec
