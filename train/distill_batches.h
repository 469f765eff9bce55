// Training batches from a distillation dataset (io/distill_schema.h), streamed through its index.h5.
//
// Units are the shuffling grain: each epoch permutes the training units (keyed by seed and epoch), cuts the
// permutation into windows of about `window_rows` rows, reads one window at a time (one read per unit
// through the index's virtual datasets) and shuffles rows inside it. The next window is read in a
// background thread while the current one trains. So memory is one or two windows whatever the dataset
// size, no unit file is opened to learn lengths (the index has them), and batch(step) is a pure function of
// (seed, step): a resumed run sees exactly the batches an uninterrupted one would.
//
// Data-parallel: a rank reads only the rows of each window that its share of the window's batches uses
// (train/data_parallel.h), one HDF5 read per dataset, so N ranks together read a window once.
//
// Null conditions for CFG: a row takes the uncond stream's hidden states with probability null_fraction
// (the target's states for the same tokens under the null condition), as LlamaGen's 10% class dropout.
#pragma once

#include <torch/torch.h>

#include <future>
#include <memory>
#include <vector>

#include "io/distill_reader.h"
#include "models/model_config.h"
#include "train/data_parallel.h"

namespace vispec {

struct HeadBatch {
  torch::Tensor hidden;  // [B, T, D] float32, pre-norm, one stream per row
  torch::Tensor tokens;  // [B, T] int64
};

// Throws one line naming the index and the field where the dataset does not fit the target (model name,
// hidden_dim, grid_size, vocabulary range is checked per batch by the embedding).
void check_dataset_fits(const DistillReader& reader, const ModelConfig& target);

// Unit indices (into reader.units()) held out for evaluation: the last `count` units (0 = 2%, at least 1).
struct UnitSplit {
  std::vector<size_t> train, heldout;
};
UnitSplit split_units(const DistillReader& reader, int64_t heldout_units);

// The held-out rows, cond stream, in batches of `batch_size`, at most `max_rows` rows.
std::vector<HeadBatch> heldout_batches(const DistillReader& reader, const std::vector<size_t>& units,
                                       int64_t batch_size, int64_t max_rows);

class DistillBatches {
 public:
  // shard: this rank's rows of every global batch of batch_size (default: all of them).
  DistillBatches(std::shared_ptr<const DistillReader> reader, std::vector<size_t> units, int64_t batch_size,
                 int64_t window_rows, double null_fraction, uint64_t seed, BatchShard shard = {});
  ~DistillBatches();

  HeadBatch batch(int64_t step);  // this rank's shard.count rows of global batch `step`
  int64_t rows() const { return rows_; }
  int64_t rows_read() const { return rows_read_; }  // by the windows batch() has used so far

 private:
  struct Window {
    int64_t epoch = 0, first_step = 0, steps = 0;
    std::vector<size_t> units;
    uint64_t key = 0;  // seeds the row shuffle
  };
  struct Loaded {
    size_t window = SIZE_MAX;
    torch::Tensor hidden;  // [M, S, T, D]: the window's rows this rank uses, in file order
    torch::Tensor tokens;  // [M, T]
    torch::Tensor slots;   // [steps * shard.count]: row of `hidden` for each of this rank's batch slots
  };
  size_t window_of(int64_t step);  // plans epochs as far as needed
  void plan_epoch(int64_t epoch);
  Loaded load(const Window& w, size_t window) const;

  std::shared_ptr<const DistillReader> reader_;
  std::vector<size_t> units_;
  std::vector<int64_t> offsets_;  // first row of every unit of the index
  int64_t batch_size_, window_rows_, rows_ = 0, rows_read_ = 0;
  BatchShard shard_;
  double null_fraction_;
  uint64_t seed_;
  std::vector<Window> windows_;
  Loaded current_;
  std::future<Loaded> next_;
  size_t next_window_ = SIZE_MAX;
};

}  // namespace vispec
