#include "models/drafters/eagle_drafter.h"

#include "core/check.h"
#include "models/checkpoints/eagle_repo_names.h"
#include "models/checkpoints/head_file.h"
#include "models/checkpoints/load.h"
#include "models/gpt/rope_2d.h"

namespace vispec {

EagleDrafterImpl::EagleDrafterImpl(const GptConfig& target, bool own_embedding) : config_(target) {
  const int64_t d = target.dim;
  fc = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(2 * d, d).bias(true)));
  if (own_embedding) embed_tokens = register_module("embed_tokens", torch::nn::Embedding(target.token_table_size(), d));
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

torch::Tensor EagleDrafterImpl::embed(const torch::Tensor& codes, GptImpl& target) {
  if (!embed_tokens) return target.embed_image(codes);
  return embed_tokens(config_.image_token_offset ? codes + config_.image_token_offset : codes);
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

KvCache EagleDrafterImpl::make_cache(int64_t batch, int64_t extra, bool static_lengths) const {
  const auto& w = fc->weight;
  return KvCache(1, batch, config_.kv_heads(), config_.image_tokens() + extra, config_.head_dim(), w.scalar_type(),
                 w.device(), KvLengths{static_lengths});
}

EagleDrafter load_eagle_drafter(const std::string& path, const ModelConfig& target) {
  Metadata metadata;
  const bool safetensors = path.size() >= 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0;
  auto tensors = safetensors ? read_safetensors(path, &metadata) : read_weights(path);
  if (!metadata.count("kind")) {
    VISPEC_CHECK(is_eagle_repo_drafter(tensors), path,
                 ": neither a vispec eagle_head file (its metadata names no "
                 "kind) nor an EAGLE or LANTERN drafter (it has no layers.0.self_attn.q_proj.weight)");
    tensors = eagle_repo_tensors(tensors, target.gpt.fused_qkv, path);
    VISPEC_CHECK(!tensors.count("embed_tokens.weight") || target.gpt.image_input == ImageInput::token_table, path,
                 ": embed_tokens: a drafter's own token table, for a target that embeds image tokens through an "
                 "aligner (Janus): vispec's drafter of it embeds with the target's");
    EagleDrafter drafter(target.gpt, /*own_embedding=*/tensors.count("embed_tokens.weight") > 0);
    load_state_dict(*drafter, tensors, path);
    return drafter;
  }
  check_head_file(metadata, path, "eagle_head", target);  // a file of neither kind: says what it lacks
  EagleDrafter drafter(target.gpt);
  load_state_dict(*drafter, tensors, path);
  return drafter;
}

}  // namespace vispec
