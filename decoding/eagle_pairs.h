// What an EAGLE drafter reads between trees, shared by the tree decoders that draft with it (EAGLE-2 and
// ADT-Tree in eagle2.cpp, EAGLE-1/LANTERN++/Cool-SD in eagle1.cpp): per row, the (feature, token) pairs it
// has not read yet. A feature is the target's post-norm state at a committed position (both CFG streams),
// the token the one committed after it; EAGLE drafts from the newest pair's output.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "models/eagle_drafter.h"
#include "models/gpt.h"

namespace vispec {

class EaglePairs {
 public:
  // batch B samples, rows R = B or 2B (drafter rows, [cond; uncond] when guided).
  EaglePairs(Gpt target, EagleDrafter drafter, int64_t batch, int64_t rows);

  // After the prefill: its hidden states [R, C, D] (pre-norm) and every row's first sampled token.
  void start(const torch::Tensor& prefill_hidden, const std::vector<int64_t>& first_tokens);
  // Feeds every row's waiting pairs to the drafter as one block, keeps them in its cache, and returns the
  // drafter's output at each row's newest pair [R, D]. root_index: the raster index of each row's newest token.
  torch::Tensor catch_up(KvCache& cache, const std::vector<int64_t>& root_index);
  // After a verification forward with hidden states [R, T, D] (pre-norm): row b committed the block entries
  // `path` (the root first) holding `path_tokens` (the root's excluded) and then sampled `next`.
  void queue(int64_t b, const torch::Tensor& hidden, const std::vector<int64_t>& path,
             const std::vector<int64_t>& path_tokens, int64_t next);
  // Row b is finished: nothing more to read.
  void finish(int64_t b) { tokens_[size_t(b)].clear(); }

 private:
  Gpt target_;
  EagleDrafter drafter_;
  int64_t B_, R_;
  std::vector<std::vector<int64_t>> tokens_;  // per row, the tokens of the waiting pairs
  std::vector<torch::Tensor> features_;       // per row, [R / B, P, D] their post-norm features
};

}  // namespace vispec
