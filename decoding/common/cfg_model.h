// A GPT run under classifier-free guidance: the conditional and unconditional streams as ONE batch of 2B rows
// laid out [cond; uncond] (LlamaGen generate.py), the same token fed to both, logits combined as
// u + s (c - u) on raw logits. With s <= 1 only the B conditional rows run.
// Decoders talk to the target (and to AR drafters) through this, so none of them re-implements CFG.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "decoding/common/sampler.h"
#include "decoding/common/forward_graphs.h"
#include "models/gpt/gpt.h"

namespace vispec {

struct CfgOutput {
  torch::Tensor logits;  // [B, T, V] float32, guided
  torch::Tensor hidden;  // [rows, T, D] every stream (rows = 2B when guided), before the final norm
};

class CfgModel {
 public:
  CfgModel(Gpt gpt, double cfg_scale)
      : gpt_(std::move(gpt)), scale_(cfg_scale), statics_(std::make_shared<ForwardGraphs>()) {}

  bool guided() const { return scale_ > 1.0; }
  int64_t rows(int64_t batch) const { return guided() ? 2 * batch : batch; }
  const Gpt& gpt() const { return gpt_; }

  // static_steps: a pooled static cache, whose forwards are static steps replayed as CUDA graphs on a GPU
  // (decoding/common/forward_graphs.h); a model whose rows end in an end-of-line token gets a dynamic cache either
  // way.
  // The cache's commits (models/gpt/kv_cache.h) take one value per sample, which it gives to both streams' rows.
  KvCache make_cache(int64_t batch, int64_t extra = 0, bool static_steps = false) const;
  // B conditions -> outputs at the condition positions; the last predicts image token 0. The unconditional
  // rows take the null class, or uncond_embedding under their conditional row's caption mask.
  CfgOutput prefill(KvCache& cache, const Conditions& conditions);
  // Rows taking new samples while the others decode (continuous batching, decoding/common/decode_state.h): the
  // prefill of `conditions` (one per sample of `cache`'s batch, the new samples' at their rows) in a cache of its
  // own, whose rows `rows` of every stream then take their places in `cache` (KvCache::take_rows); the other
  // rows of `cache` are untouched. Returns the prefill's outputs at every row.
  CfgOutput prefill_rows(KvCache& cache, const std::vector<int64_t>& rows, const Conditions& conditions);
  // tokens, positions [B, T]; block_mask [T, T] or [B, T, T] (see Gpt::decode_block); committed: [T, C] bool
  // on the device, the committed entries each query sees (KvBlock::committed; undefined: all).
  CfgOutput decode_block(KvCache& cache, const torch::Tensor& tokens, const torch::Tensor& positions,
                         const torch::Tensor& block_mask, const torch::Tensor& committed = {});
  // The device lengths of the pooled static cache that `cache` copies: a tensor that outlives every copy, for
  // the state list of a graph (null for a dynamic cache).
  const torch::Tensor* pooled_lengths(const KvCache& cache) const { return statics_->pooled_lengths(cache); }

  // Drafters that read the target's states (EAGLE heads, SSD heads) run under the same guidance: their token
  // inputs [B, ...] fed to both streams, and the target's output head on their (normed) features
  // [rows, ..., D] giving guided logits [B, ..., V] float32.
  torch::Tensor both_streams(const torch::Tensor& x) const { return twice(x); }
  torch::Tensor output_logits(const torch::Tensor& features);

 private:
  torch::Tensor twice(const torch::Tensor& x) const { return guided() ? torch::cat({x, x}) : x; }
  CfgOutput combine(const GptOutput& out) const;

  Gpt gpt_;
  double scale_;
  std::shared_ptr<ForwardGraphs> statics_;  // shared by copies: one pool of static caches per model
};

}  // namespace vispec
