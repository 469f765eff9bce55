// Data-parallel training's communication where the ranks train on GPUs: gradient sums with NCCL among the
// ranks' GPUs (no host copy), its communicator bootstrapped over MPI (rank 0's unique id broadcast to all).
// Like the MPI version (scheduler/mpi_data_parallel.h), a sum is a reduction to rank 0 and a broadcast, so
// every rank gets rank 0's bits. Host tensors (the logged losses, the start-up parameter sync) still go
// through MPI. Built where the torch package carries NCCL (VISPEC_NCCL); elsewhere GPU sums go through host
// memory over MPI.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "scheduler/mpi_session.h"
#include "train/data_parallel.h"

namespace vispec {

bool built_with_nccl();

// The ranks of a training job whose rank trains on `device` (its own GPU, from pick_device): NCCL when built
// with it and `device` is a GPU, MPI otherwise. Collective: every rank calls it.
std::shared_ptr<DataParallel> make_data_parallel(const MpiSession& session, torch::Device device);

}  // namespace vispec
