// Static forwards: any decoder's cached forward (a drafter's step, a verify chain of gamma + 1, SJD's window, a
// tree of total_tokens, SSD's and MuLo-SD's rows) as a static step, replayed as a CUDA graph where one runs.
//
// A graph replays fixed addresses, so the caches a decoder makes per decode must keep their keys and values
// from one decode to the next: make_cache() hands out a copy of a pooled static cache (the copy shares the
// pool's device tensors; its host bookkeeping is its own, reset), and forward() copies the block's inputs (tokens,
// positions, mask) into buffers of the pooled cache's that never move, runs the forward through StepGraphs keyed
// by (rows, block width, length bucket), and returns copies of the outputs, so a caller may keep them past the
// next forward. A pooled cache in use (a copy of it alive) is never handed out twice.
// A forward here opens a pending block; one that extends it (EAGLE's drafter trees, which run eagerly on a
// static cache of their own) or restricts the committed entries (ZipAR) is not replayed, and models whose rows
// end in an end-of-line token cannot have a static cache: those decoders ask for a dynamic cache
// (CfgModel::make_cache with static_steps false, or a model whose rows end so) or make their own.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "models/gpt.h"
#include "models/step_graph.h"

namespace vispec {

class StaticForwards {
 public:
  // A reset static cache of `rows` rows of `gpt`, from the pool.
  KvCache make_cache(const Gpt& gpt, int64_t rows, int64_t extra);
  // Whether `cache` is one of this pool's.
  bool owns(const KvCache& cache) const;
  // run(tokens, positions, mask) -> the forward's outputs, as a static step of the pooled cache that `cache`
  // copies: its inputs copied into static buffers, the step run (or replayed), its outputs copied out.
  using Forward = std::function<GptOutput(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>;
  GptOutput forward(KvCache& cache, const torch::Tensor& tokens, const torch::Tensor& positions,
                    const torch::Tensor& block_mask, const Forward& run);

 private:
  // The buffers and graphs of one block shape (width, mask rank) on one pooled cache.
  struct Block {
    torch::Tensor tokens, positions, mask;  // inputs, [B, T] and the mask's shape (undefined: causal)
    torch::Tensor logits, hidden;          // outputs of the last forward
    std::unique_ptr<StepGraphs> graphs;
  };
  struct Pooled {
    KvCache cache;
    std::map<std::vector<int64_t>, std::unique_ptr<Block>> blocks;  // by (T, the mask's shape)
  };
  Pooled* pooled_of(const KvCache& cache) const;  // the pooled cache `cache` copies, or null
  std::vector<std::unique_ptr<Pooled>> pool_;
};

}  // namespace vispec
