// What the EAGLE tree decoders share besides the decode state (DecodeState: tokens, counts, statistics, the
// walk's commit) and the walk itself (decoding/common/verify.h), so that eagle1.cpp (EAGLE-1, LANTERN++, Cool-SD)
// and eagle2.cpp (EAGLE-2, LANTERN, ADT-Tree) hold only what differs: how a tree is drafted.
//   EagleDrafterState  what the drafter reads between trees: per row, the (feature, token) pairs it has not read
//               yet. A feature is the target's post-norm state at a committed position (both CFG streams),
//               the token the one committed after it; EAGLE drafts from the newest pair's output.
// A row's newest token (the tree's root) is not in the target's cache yet: each verification forward runs it
// first, before the tree's nodes. Every drafter forward (the catch-up, each tree level) is a static step on a
// pooled static cache (decoding/common/forward_graphs.h), replayed as a CUDA graph on a GPU, and the pairs'
// device state lives in the decoder's IterationGraphs, so that a whole iteration can be one graph too: its
// device half is catch_up .. keep_paths, and its one read settles the rest.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "decoding/common/cfg_model.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/decoder.h"
#include "decoding/common/iteration_graphs.h"
#include "decoding/common/forward_graphs.h"
#include "models/drafters/eagle_drafter.h"
#include "models/gpt/gpt.h"
#include "models/gpt/step_graph.h"

namespace vispec {

class EagleDrafterState {
 public:
  // batch B samples, drafter rows R = target.rows(B) ([cond; uncond] when guided); tcache: the target's;
  // drafter_steps: the decoder's pool of the drafter's static caches, which outlives the decode; path_width:
  // the most entries an accepted path holds, root included (the walk's levels + 1), which is the width of
  // every catch-up block, so that the catch-up is one step shape whatever was accepted.
  EagleDrafterState(CfgModel& target, KvCache& tcache, EagleDrafter drafter, ForwardGraphs& drafter_steps,
                    int64_t batch, int64_t path_width);

  // The drafter's cache for this decode, `extra` slots past the image: a copy of a pooled static cache.
  KvCache drafter_cache(int64_t extra);
  // The drafter over a block of T nodes per row in `dcache`, as a static step: features [R, T, D] (each node's
  // parent's output in each stream), tokens and raster cells [B, T], mask [T, W] or [B, T, W] over the block's
  // W entries (W = pending + T: a tree level added to the pending block), one row per sample (the CFG's streams
  // read the same: the step's input copy repeats them) -> the drafter's outputs [R, T, D].
  torch::Tensor draft(KvCache& dcache, const torch::Tensor& features, const torch::Tensor& tokens,
                      const torch::Tensor& cells, const torch::Tensor& mask);

  // The decode's start: the pairs' device state, kept in `graphs`' buffers for `rows` (made by graphs.rows()).
  void prepare(DecodeState& rows, IterationGraphs& graphs);
  // Rows taking samples (DecodeState::next_iteration): the target's prefill of their conditions into their rows
  // of its cache, their first token (rows.start) and first pairs, and the drafter's cache `dcache` emptied of
  // what their last samples left in those rows.
  void start(const SamplingParams& params, const RowFill& fill, DecodeState& rows, KvCache& dcache);
  // Feeds every row's waiting pairs to the drafter as one block of path_width entries (padded; the padding is
  // not kept), keeps them in its cache `dcache`, and returns the drafter's output at each row's newest pair
  // [R, D]. Nothing is read or uploaded. The device lengths count the pairs; the host's plan counts the whole
  // block (an upper bound, the same in every iteration, which plans the tree's blocks) until the iteration's read.
  torch::Tensor catch_up(KvCache& dcache, const DecodeState& rows);
  // After a walk's commit (DecodeState::commit_tree_on_device): every row still decoding keeps its accepted path
  // (root first) in the target's cache, and its pairs wait for the drafter: the path's hidden states in the
  // verification forward [R, T, D] (pre-norm) and the tokens just committed (the path's drafts, the sampled
  // one). path: the walk's [B, <= path_width + 1] (TreeVerdict::path), from which the cache and the pairs are
  // gathered on the device: nothing is read or uploaded.
  void keep_paths(const DecodeState& rows, const torch::Tensor& path, const torch::Tensor& hidden);

  // A tree decoder's iteration key (IterationLoop::device_half): `shape` (what fixes the tree's host numbers:
  // the widest top_k, the walk's levels and each row's draft length) and the bucket of every forward in it: the
  // verification's over `tree_nodes` entries, the catch-up's and the drafter's tree blocks, whose widths (pending
  // entries once written) are `drafter_widths`.
  StepKey iteration_key(const KvCache& dcache, const StepKey& shape, int64_t tree_nodes,
                        const std::vector<int64_t>& drafter_widths) const;
  // The caches an iteration commits, the target's and `dcache`, and their pools' device lengths (IterationLoop).
  std::vector<KvCache*> caches(KvCache& dcache) const { return {&tcache_, &dcache}; }
  std::vector<const torch::Tensor*> pooled_lengths(const KvCache& dcache) const {
    return {target_.pooled_lengths(tcache_), steps_.pooled_lengths(dcache)};
  }

 private:
  CfgModel& target_;
  KvCache& tcache_;
  Gpt gpt_;  // the target's handle (a shared module): its frozen norm and embedding
  EagleDrafter drafter_;
  ForwardGraphs& steps_;
  int64_t B_, R_, W_;             // W_: path_width
  torch::Tensor waiting_device_;  // [B] int64: per row, the pairs the drafter has not read (its newest committed
                                  // tokens), a buffer of the IterationGraphs
  torch::Tensor features_;        // [R, W, D] their post-norm features (the first waiting_device_ of each valid)
};

}  // namespace vispec
