#include "models/eagle_drafter.h"

#include "core/check.h"
#include "models/head_file.h"
#include "models/load.h"
#include "models/rope_2d.h"

namespace vispec {

EagleDrafterImpl::EagleDrafterImpl(const GptConfig& target) : config_(target) {
  const int64_t d = target.dim;
  fc = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(2 * d, d).bias(true)));
  attention = register_module("attention", Attention(target));
  ffn_norm = register_module("ffn_norm", RMSNorm(d, target.norm_eps));
  feed_forward = register_module("feed_forward", FeedForward(target));
  rope_table = rope_2d_table(target.grid_size, target.head_dim(), target.rope_base, /*cls_token_num=*/0);
  for (auto& p : named_parameters()) {
    if (p.key().find("norm") == std::string::npos && p.key().find("bias") == std::string::npos)
      torch::nn::init::normal_(p.value(), 0.0, 0.02);
  }
  torch::NoGradGuard no_grad;
  fc->bias.zero_();
}

torch::Tensor EagleDrafterImpl::forward(const torch::Tensor& features, const torch::Tensor& token_embeddings,
                                        const torch::Tensor& cells, const torch::Tensor& block_mask, KvCache* cache) {
  const int64_t B = features.size(0), T = features.size(1);
  auto x = fc(torch::cat({token_embeddings, features}, -1));
  if (rope_table.device() != x.device()) rope_table = rope_table.to(x.device());  // once, after a model move
  auto rope = rope_table.index_select(0, cells.reshape(-1)).view({B, T, -1, 2});
  AttentionMask mask = AttentionMask::causal_block();  // teacher forcing without a block mask
  if (cache) {
    mask = cache->begin_block(T, block_mask);
  } else if (block_mask.defined()) {
    mask.dense = block_mask.dim() == 2 ? block_mask.view({1, 1, T, T}) : block_mask.unsqueeze(1);
  }
  x = x + attention(x, rope, mask, cache, 0);
  return x + feed_forward(ffn_norm(x));
}

KvCache EagleDrafterImpl::make_cache(int64_t batch, int64_t extra) const {
  const auto& w = fc->weight;
  return KvCache(1, batch, config_.kv_heads(), config_.image_tokens() + extra, config_.head_dim(), w.scalar_type(),
                 w.device());
}

EagleDrafter load_eagle_drafter(const std::string& path, const ModelConfig& target) {
  Metadata metadata;
  const auto tensors = read_safetensors(path, &metadata);
  check_head_file(metadata, path, "eagle_head", target);
  EagleDrafter drafter(target.gpt);
  load_state_dict(*drafter, tensors, path);
  return drafter;
}

}  // namespace vispec
