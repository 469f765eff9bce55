// Static forwards: any decoder's cached forward (a drafter's step, a verify chain of gamma + 1, SJD's window, a
// tree of total_tokens, SSD's and MuLo-SD's rows, an EAGLE drafter's catch-up and tree levels) as a static step,
// replayed as a CUDA graph where one runs.
//
// A graph replays fixed addresses, so the caches a decoder makes per decode must keep their keys and values
// from one decode to the next: make_cache() hands out a copy of a pooled static cache (the copy shares the
// pool's device tensors; its host bookkeeping is its own, reset), and forward() copies the block's inputs into
// buffers of the pooled cache's that never move, runs the forward through StepGraphs keyed by (rows, block
// width, length bucket), and returns the outputs' static buffers themselves: they hold a forward's outputs until
// the next forward of the same block (its inputs' shapes) on the same pooled cache overwrites them, so a caller
// that keeps an output past that forward copies it (every decoder consumes them before: a copy per output per
// forward was a kernel each, two per forward).
// A pooled cache in use (a copy of it alive) is never handed out twice. A forward may extend the pending block
// (an EAGLE drafter's tree level, its mask wider than its entries); its inputs' shapes, the mask's width among
// them, tell its graphs apart from the block's first forward.
// Models whose rows end in an end-of-line token cannot have a static cache: their decoders get a dynamic one
// (CfgModel::make_cache gives it whatever they ask).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "models/gpt/gpt.h"
#include "models/gpt/step_graph.h"

namespace vispec {

class ForwardGraphs {
 public:
  // A reset static cache of `rows` rows and `capacity` slots from the pool, made by make() (a static cache of
  // the model's) when none is free.
  KvCache make_cache(int64_t rows, int64_t capacity, const std::function<KvCache()>& make);
  // The same for a GPT's cache of `rows` rows with `extra` slots past its sequence.
  KvCache make_cache(const Gpt& gpt, int64_t rows, int64_t extra);
  // Whether `cache` is one of this pool's.
  bool owns(const KvCache& cache) const;
  // The device lengths of the pooled cache that `cache` copies, a tensor that outlives the copy (null if none).
  const torch::Tensor* pooled_lengths(const KvCache& cache) const;

  // run(inputs) -> outputs, as a static step of the pooled cache that `cache` copies, opening a block of T
  // entries per row, or extending the pending one (width: the block's once written, KvBlock::mask's W): the inputs
  // (undefined ones allowed) copied into static buffers, the step run or replayed, its outputs copied into static
  // buffers and those returned (valid until the block's next forward). per_sample[i] (where given): input i holds one
  // row per sample, which each of the cache's streams reads (the CFG's [cond; uncond] rows, cache.batch() = streams x
  // samples): its buffer has the cache's rows and its copy repeats it to every stream in one kernel, where a cat per
  // stream and a copy were two.
  using Run = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)>;
  std::vector<torch::Tensor> forward(KvCache& cache, int64_t T, int64_t width, const std::vector<torch::Tensor>& inputs,
                                     const Run& run, const std::vector<bool>& per_sample = {});
  // A GPT's forward: run(tokens, positions, block mask, committed mask) -> its logits and hidden states (the
  // committed mask, undefined or on the device, as KvBlock::committed takes it).
  using Forward =
      std::function<GptOutput(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>;
  GptOutput forward(KvCache& cache, const torch::Tensor& tokens, const torch::Tensor& positions,
                    const torch::Tensor& block_mask, const torch::Tensor& committed, const Forward& run);

 private:
  // The buffers and graphs of one block key (T and the inputs' shapes) on one pooled cache.
  struct Block {
    std::vector<torch::Tensor> inputs, outputs;
    std::unique_ptr<StepGraphs> graphs;
  };
  struct Pooled {
    KvCache cache;
    std::map<std::vector<int64_t>, std::unique_ptr<Block>> blocks;
  };
  Pooled* pooled_of(const KvCache& cache) const;  // the pooled cache `cache` copies, or null
  std::vector<std::unique_ptr<Pooled>> pool_;
};

}  // namespace vispec
