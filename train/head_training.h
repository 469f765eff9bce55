// What the draft-head trainers (EAGLE, SSD) share: the options, the frozen target, the distillation data split
// into training units and held-out units, and the token-agreement measures reported for held-out data.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "models/gpt/gpt.h"
#include "models/model_config.h"
#include "train/distill_batches.h"
#include "train/train_loop.h"

namespace vispec {

struct HeadTrainOptions : TrainOptions {
  std::string data;            // OUT/distill/index.h5, or a run directory OUT holding one
  std::string init;            // a head file to start from (checked against the target)
  double null_fraction = 0.1;  // rows trained on the uncond stream (CFG), as the papers' 10% condition dropout
  int64_t heldout_units = 0;   // last units of the index kept for evaluation; 0 = 2% (at least 1)
  int64_t heldout_rows = 256;  // held-out samples evaluated at every checkpoint
  int64_t window_rows = 1024;  // rows shuffled together (memory: window_rows x streams x T x D floats, twice)
  // EAGLE only
  double noise_std = 0.2;     // uniform input noise (rand - 0.5) * noise_std * 512 / T, as EAGLE's training
  double ploss_weight = 0.1;  // weight of the cross-entropy against the target's distribution
  // SSD only
  int64_t horizontal = 5;  // kh
  int64_t vertical = 2;    // kv
};

struct HeadTraining {
  ModelConfig target_config;
  Gpt target{nullptr};  // frozen: eval mode, no gradients
  std::shared_ptr<DistillReader> reader;
  UnitSplit split;
  std::unique_ptr<DistillBatches> batches;
  std::vector<HeadBatch> heldout;  // cond stream, on the training device
  torch::Device device = torch::kCPU;

  // One line about the data (trainers log it once their own checks have passed, so errors stay one line).
  void log_data() const;
};

// Loads the target and the data (checked against each other), splits units, prepares the batch stream.
HeadTraining prepare_head_training(const HeadTrainOptions& o);

// Over rows of draft and target logits [N, V]: how often the target's greedy token is the draft's top-1 and in
// its top-3 (EAGLE's training-script accuracy). Returns counts; divide by N.
struct TokenAgreement {
  int64_t top1 = 0, top3 = 0, count = 0;
  void add(const torch::Tensor& draft_logits, const torch::Tensor& target_logits);
};

}  // namespace vispec
