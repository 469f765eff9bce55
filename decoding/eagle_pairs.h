// The bookkeeping the EAGLE tree decoders share (EAGLE-2 and ADT-Tree in eagle2.cpp, EAGLE-1/LANTERN++/Cool-SD
// in eagle1.cpp), so that their files hold only what differs: how a tree is drafted and walked.
//   EaglePairs  what the drafter reads between trees: per row, the (feature, token) pairs it has not read
//               yet. A feature is the target's post-norm state at a committed position (both CFG streams),
//               the token the one committed after it; EAGLE drafts from the newest pair's output.
//   EagleRows   per row: committed tokens, the root (newest token, not in the target's cache yet) and its
//               raster index, done flags and statistics; the prefill and, after each walk, the commit of
//               the accepted path.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "decoding/cfg_model.h"
#include "decoding/decoder.h"
#include "decoding/draft_tree.h"
#include "decoding/phase_clock.h"
#include "decoding/verify.h"
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
  // After a verification forward with hidden states [R, T, D] (pre-norm): every row b committed the block
  // entries paths[b] (the root first; empty: the row is finished) holding path_tokens[b] (the root's
  // excluded) and then sampled next[b]. One gather for all rows.
  void queue(const torch::Tensor& hidden, const std::vector<std::vector<int64_t>>& paths,
             const std::vector<std::vector<int64_t>>& path_tokens, const std::vector<int64_t>& next);
  // Row b is finished: nothing more to read.
  void finish(int64_t b) { tokens_[size_t(b)].clear(); }

 private:
  Gpt target_;
  EagleDrafter drafter_;
  int64_t B_, R_;
  std::vector<std::vector<int64_t>> tokens_;  // per row, the tokens of the waiting pairs
  torch::Tensor features_;                    // [R, P, D] their post-norm features (row r's first n_r valid)
};

class EagleRows {
 public:
  // Runs the target's prefill into `cache`, samples every row's first token (kSample at raster index 0) and
  // queues the first pairs.
  EagleRows(CfgModel& target, EagleDrafter drafter, const SamplingParams& params, const DecodeRequest& request,
            KvCache& cache);

  std::vector<int64_t> active() const;
  // The walk of every row's tree (decoding/verify.h) from the verification forward's guided logits [B, T, V]
  // (argmax match at T = 0), brought to the host in ONE read: every active row's accepted tokens and sampled
  // token committed, its statistics counted, its root moved on (end_walk). lengths: each row's draft length
  // (Cool-SD); levels: the deepest node's depth; node_q / q_slot: the drafter's q at the nodes (EAGLE-1's
  // draws without replacement; undefined: one-hot drafts). Returns the paths (root first) for keep_paths().
  std::vector<std::vector<int64_t>> walk(const std::vector<int64_t>& active, const std::vector<DraftTree>& trees,
                                         const TreeTables& tables, const torch::Tensor& logits,
                                         const SamplingParams& params, const ChainRule& rule,
                                         const std::vector<int64_t>& lengths, int64_t levels,
                                         const torch::Tensor& node_q = {}, const torch::Tensor& q_slot = {});
  // After row b's walk ended at raster index `index`: by a sampled token (`sampled`) or a full raster.
  void end_walk(int64_t b, int64_t index, bool sampled);
  // Keeps every active, unfinished row's accepted path (root first) in the target cache and queues its pairs
  // from the verification forward's hidden states [R, T, D].
  void keep_paths(const std::vector<int64_t>& active, const std::vector<DraftTree>& trees,
                  const std::vector<std::vector<int64_t>>& paths, const torch::Tensor& hidden);
  DecodeResult result();
  const torch::Tensor& sample_ids() const { return sample_ids_; }  // [B] int64 on the target's device

  torch::Tensor tokens;                    // [B, N] committed tokens
  std::vector<int64_t> roots, root_index;  // per row: the newest token and its raster index
  std::vector<SampleStats> stats;
  EaglePairs pairs;
  PhaseClock clock;                        // the decode's phases (started before the prefill)

 private:
  CfgModel& target_;
  KvCache& cache_;
  std::vector<char> done_;
  uint64_t seed_;
  torch::Tensor sample_ids_;  // [B] int64 on the target's device
};

}  // namespace vispec
