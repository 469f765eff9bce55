// Data-parallel training: the ranks a trainer runs on under mpirun or srun, as the training loop sees them.
// Every rank holds the whole model and draws the same global batch of (seed, step); rank r trains on its
// contiguous share of the batch's rows (BatchShard), its loss weighted by the share's size, the gradients are
// summed over ranks, and every rank takes the same optimizer step, so the ranks stay identical and the loss
// curve is that of one process on the whole batch, up to the order of float additions. Rank 0 alone logs,
// evaluates and writes checkpoints, which hold nothing rank-specific: a run resumes at any rank count.
// The communication itself (MPI; NCCL on GPUs) lives above train/, behind this interface.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace vispec {

struct BatchShard {
  int64_t first = 0, count = 0, global = 0;  // rows [first, first + count) of a global batch of `global`
  torch::Tensor rows(const torch::Tensor& batch) const { return batch.narrow(0, first, count); }
  double weight() const { return global ? double(count) / double(global) : 0.0; }
};

class DataParallel {
 public:
  virtual ~DataParallel() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Sums a contiguous float32 tensor over the ranks, in place; every rank ends with the same bits.
  virtual void sum(torch::Tensor& tensor) = 0;
  virtual void barrier() = 0;

  // Rank r's rows of a global batch: shares differ by at most one row (a rank may get none).
  BatchShard shard(int64_t global_batch) const {
    const int64_t n = size(), r = rank();
    const int64_t first = global_batch * r / n, end = global_batch * (r + 1) / n;
    return {first, end - first, global_batch};
  }
};

// A world of one: the plain single-process run.
class SingleProcess : public DataParallel {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void sum(torch::Tensor&) override {}
  void barrier() override {}
};

}  // namespace vispec
