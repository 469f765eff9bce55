// EAGLE-2's draft model (docs/algorithms.md "EAGLE-2 and LANTERN"), sized from the target it drafts for.
//
//   feature_t  = the target's last hidden state at position t AFTER its final norm (HF hidden_states[-1]; our
//                distillation data stores it before the norm, so callers apply target->norm first)
//   x          = fc([embed(token_t); feature_t])          embedding first, then feature; fc has a bias
//   x          = x + attention(x)                          no input norm on this layer (EAGLE's layer 0)
//   x          = x + feed_forward(ffn_norm(x))
//   prediction = x                                         no final norm: target->image_logits(prediction) = logits
// Pair t is (feature_t, token_t), where token_t is the token sampled from feature_t's logits; its
// prediction is feature_{t+1}. The frozen parts (token embedding, final norm, output head) stay in the
// target and are passed in, so a head file holds only what EAGLE trains.
//
// RoPE: pair t sits at the grid cell of token_t (LlamaGen's drafter uses the target's 2D table shifted by
// one position for the same reason), so the table has no condition rows.
#pragma once

#include <torch/torch.h>

#include <string>

#include "models/gpt/gpt.h"
#include "models/model_config.h"
#include "models/checkpoints/safetensors.h"

namespace vispec {

class EagleDrafterImpl : public torch::nn::Module {
 public:
  // own_embedding: the drafter has an input token table of its own (a head of EAGLE's or LANTERN's whose file
  // carries embed_tokens, models/checkpoints/eagle_repo_names.h), of the target's table's size; else it embeds tokens
  // with the target's, which is what vispec's trainer trains against.
  explicit EagleDrafterImpl(const GptConfig& target, bool own_embedding = false);
  // The input embedding of image tokens [..., D]: the drafter's own table where it has one, else the target's.
  torch::Tensor embed(const torch::Tensor& codes, GptImpl& target);

  // features [B, T, D] (post-norm), token_embeddings [B, T, D], cells [B, T] grid cells (raster index),
  // block_mask [T, T] or [B, T, T]. With a cache the block is appended to it (see KvCache); without, the T
  // pairs attend among themselves only. Returns predictions [B, T, D].
  torch::Tensor forward(const torch::Tensor& features, const torch::Tensor& token_embeddings,
                        const torch::Tensor& cells, const torch::Tensor& block_mask, KvCache* cache = nullptr);
  // Static (its lengths on the device, KvLengths) where asked.
  KvCache make_cache(int64_t batch, int64_t extra = 0, bool static_lengths = false) const;

  torch::nn::Linear fc{nullptr};
  torch::nn::Embedding embed_tokens{nullptr};  // only with own_embedding
  Attention attention{nullptr};
  RMSNorm ffn_norm{nullptr};
  FeedForward feed_forward{nullptr};
  torch::Tensor rope_table;  // [grid^2, Dh/2, 2], not a parameter

 private:
  GptConfig config_;
};
TORCH_MODULE(EagleDrafter);

// Reads a head file written by `vispec train eagle-head` (checked against the target by its metadata), or a
// drafter of the EAGLE or LANTERN repositories (models/checkpoints/eagle_repo_names.h, checked by names and shapes).
EagleDrafter load_eagle_drafter(const std::string& path, const ModelConfig& target);

}  // namespace vispec
