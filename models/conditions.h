// What a batch of samples is conditioned on, in the form the GPT's condition embedder takes: class ids for a
// class-conditional model; caption features and their mask for a text-conditional one.
//
// Captions are laid out as LlamaGen's text-to-image sampler lays them out (docs/algorithms.md "Text
// conditioning"): each caption's L token features fill the LAST L of the model's cls_token_num positions
// ("left padding"), zeros fill the rest, and the mask marks the caption's positions. The mask then hides the
// padded positions' keys from every query but their own, for the whole decode (KvCache::hide_prefix_keys).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace vispec {

struct Conditions {
  torch::Tensor class_ids;     // [B] int64: class-conditional models
  torch::Tensor captions;      // [B, C, caption_dim] float32: text-conditional models, left-padded
  torch::Tensor caption_mask;  // [B, C] bool: true at a caption's own positions

  bool text() const { return captions.defined(); }
  int64_t size() const { return text() ? captions.size(0) : class_ids.size(0); }
};

Conditions class_conditions(const std::vector<int64_t>& class_ids);
// Per-caption token features [L_b, caption_dim] (L_b <= C) -> left-padded captions and mask over C positions.
Conditions caption_conditions(const std::vector<torch::Tensor>& features, int64_t C);

}  // namespace vispec
